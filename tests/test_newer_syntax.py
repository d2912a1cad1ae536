"""Code written for a newer Python than the one gradlint runs on.

gradlint reads a file with the running interpreter's `ast` first (the parse
guard, the screen, the position table, the fixes); syntax that `ast` cannot
read yet (PEP 695 generics and `type` aliases: 3.12, PEP 701 f-strings: 3.12,
`except*`: 3.11) is blanked for it (gradlint/parse/newer_syntax.py), and libcst
reads the file as written: the same findings, with their fixes, and no error.
nox runs this on every supported Python, the oldest included
(`nox -s tests-3.10`): there every case below is newer than the parser.
"""

from __future__ import annotations

import ast

import pytest

from gradlint.check.engine import check_source
from gradlint.parse.newer_syntax import readable
from gradlint.options.settings import Settings

# GL001 at the backward: gradients never cleared.
LOOP = """\
import torch
{head}
def train(model, opt, data):
    for x in data:
        loss = model(x).sum(){inside}
        loss.backward()
        opt.step()
"""

CASES = {
    "type alias (PEP 695)": ("type Batch = list[torch.Tensor]\n", ""),
    "generic type alias (PEP 695)": ("type Pair[T] = tuple[T, T]\n", ""),
    "generic class (PEP 695)": ("class Box[T: torch.Tensor]:\n    pass\n", ""),
    "generic function (PEP 695)": ("def first[T](items: list[T]) -> T:\n    return items[0]\n", ""),
    "nested quotes in an f-string (PEP 701)": ("", '\n        print(f"{x["name"]}: {f"{loss:.3f}"}")'),
    "except* (PEP 654)": ("def guarded():\n    try:\n        pass\n    except* ValueError:\n        pass\n", ""),
}


def source_of(head: str, inside: str) -> str:
    return LOOP.format(head=head, inside=inside)


def python_reads(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize("case", CASES)
def test_newer_syntax_keeps_its_finding(case):
    source = source_of(*CASES[case])
    result = check_source(source, "train.py", Settings.default())
    assert result.errors == []
    expected = source.splitlines().index("        loss.backward()") + 1
    (finding,) = result.findings
    assert (finding.code, finding.span.line) == ("GL001", expected)
    assert finding.fix is not None  # the fix reads statements with `ast`: the blanked text's


def test_the_cases_cover_what_this_python_cannot_read():
    """On 3.10 and 3.11 some case really is unreadable to `ast` (else the fallback is untested
    there); a case unreadable on 3.13 would be a typo, not newer syntax."""
    import sys

    unreadable = [case for case, parts in CASES.items() if not python_reads(source_of(*parts))]
    if sys.version_info < (3, 12):
        assert unreadable
    else:
        assert unreadable == []


def test_a_real_syntax_error_is_still_one():
    source = source_of("type Batch = \n", "")
    (error,) = check_source(source, "train.py", Settings.default()).errors
    assert error.kind == "syntax-error" and error.line == 2


def shape(text: str) -> list[int]:
    return [len(line) for line in text.split("\n")]


BLANKED = {
    "type X = int\nx = 1\n": "pass        \nx = 1\n",
    "if a:\n    type X = (\n        int)\n    y = 2\n": "if a:\n    pass      \n            \n    y = 2\n",
    "type Pair[T] = tuple[T, T]; z = 3\n": "pass                      ; z = 3\n",
    "class Box[T: int](Base):\n    pass\n": "class Box        (Base):\n    pass\n",
    "async def first[T, *Ts, **P](x: T) -> T:\n    return x\n": "async def first             (x: T) -> T:\n    return x\n",
    "try:\n    pass\nexcept *ValueError:\n    pass\n": "try:\n    pass\nexcept  ValueError:\n    pass\n",
    'print(f"{d["k"]}", f"{x:{"w"}>9}", 1)\n': 'print("         ", "            ", 1)\n',
    "s = f'{x!r:>{w}}'; t = f'{d['a']}'\n": "s = f'{x!r:>{w}}'; t = '         '\n",
}


@pytest.mark.parametrize("source", BLANKED)
def test_readable_blanks_only_the_newer_syntax_and_keeps_every_position(source):
    text = readable(source)
    assert text == BLANKED[source]
    assert shape(text) == shape(source)
    ast.parse(text)


@pytest.mark.parametrize(
    "source",
    [
        "x = 1\n",
        "type = 3\nprint(type(x), obj.type)\n",  # the soft keyword used as a name
        's = "type X = int"  # type X = int\n',
        "def f(x):\n    return x[0]\n",
        "x = f'{d[\"k\"]}'\n",  # another quote inside: any Python reads it
        'unclosed = "abc\n',
    ],
)
def test_readable_leaves_what_is_not_newer_syntax(source):
    assert readable(source) is None


def test_a_real_syntax_error_is_scanned_at_most_once(monkeypatch):
    """A buffer being typed often does not parse: the guard, the screen and the position
    table each ask, but the text is scanned for newer syntax once, and only when the line
    CPython stopped at has a word that starts a newer construct."""
    from gradlint.parse import newer_syntax
    from gradlint.parse.file_context import FileContext

    scanned = []
    real = newer_syntax.readable
    monkeypatch.setattr(newer_syntax, "readable", lambda source: scanned.append(source) or real(source))
    for source, scans in (("x = (1,\ny = 2\n", 0), ("def f[T](:\n    pass\n", 1)):
        context = FileContext("f.py", source)
        for _ in range(3):
            with pytest.raises(SyntaxError):
                context.tree(source)
        assert scanned.count(source) == scans, source
