"""A check that reuses an earlier check's parses (gradlint/incremental) gives exactly a fresh check.

The language server keeps a DocumentMemo per open buffer.  Here every fixture
and rule sample is checked with a memo, then edited at random places (lines
inserted and deleted, text typed, a def renamed, an import added, a line broken
and repaired), and after every edit the memo's check must equal a check with no
memo.  The ast the memo assembles from top-level statements must equal
`ast.parse` of the text, positions included.
"""

from __future__ import annotations

import ast
import random
import warnings

import pytest

from gradlint.check import engine, screen
from gradlint.incremental import DocumentMemo
from gradlint.incremental.ast_chunks import AstChunks
from test_piecewise import EVERYTHING, SAMPLES

LINES = [
    "",
    "# a comment",
    "x = 1",
    "import torch.nn.functional as F",
    "    opt.zero_grad()",
    "    opt.step()",
    "        loss.backward()",
    "opt = torch.optim.Adam(model.parameters())",
    "def helper(loss):",
    "    pass",
    "@decorated",
    ")",
    '"""',
    "else:",
    "a = 1; b = 2",
    "from __future__ import annotations",
]
TYPED = ["x", " ", "(", ")", ":", "opt.", "zero_grad()", "#", "1", "\n", "\n    ", '"', "\\"]


def edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True) or [""]
    number = rng.randrange(len(lines))
    kind = rng.choice(["insert line", "delete line", "type", "erase", "rename def", "add import"])
    if kind == "insert line":
        lines.insert(number, rng.choice(LINES) + "\n")
    elif kind == "delete line":
        del lines[number]
    elif kind == "type":
        line = lines[number]
        at = rng.randrange(len(line) + 1)
        lines[number] = line[:at] + rng.choice(TYPED) + line[at:]
    elif kind == "erase":
        line = lines[number]
        at = rng.randrange(len(line) + 1)
        lines[number] = line[:at] + line[at + rng.randint(1, 8) :]
    elif kind == "rename def":
        defs = [i for i, line in enumerate(lines) if line.lstrip().startswith("def ")]
        if defs:
            i = rng.choice(defs)
            lines[i] = lines[i].replace("def ", "def renamed_", 1)
    else:
        lines.insert(0, rng.choice(["import torch\n", "from torch import optim\n", "import os\n"]))
    return "".join(lines)


def outcome(result) -> tuple:
    return (
        [(f.code, f.span, f.message, f.related, f.fix) for f in result.findings],
        [(f.code, f.span) for f in result.suppressed],
        [(e.kind, e.message, e.line, e.col) for e in result.errors],
    )


def fresh(text: str) -> tuple:
    return outcome(engine.check_source(text, "f.py", EVERYTHING))


@pytest.mark.parametrize("name,source", SAMPLES, ids=[name for name, _ in SAMPLES])
def test_a_check_with_a_memo_is_a_fresh_check(name, source, monkeypatch):
    memo = DocumentMemo()
    assert outcome(engine.check_source(source, "f.py", EVERYTHING, memo)) == fresh(source)
    # and again with everything reused
    assert outcome(engine.check_source(source, "f.py", EVERYTHING, memo)) == fresh(source)


@pytest.mark.parametrize("seed", range(8))
def test_random_edits_keep_every_check_exact(seed):
    rng = random.Random(seed)
    samples = [source for _, source in SAMPLES]
    for source in rng.sample(samples, 12):
        memo = DocumentMemo()
        text = source
        for _ in range(8):
            assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text), text
            text = edit(text, rng)
        assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text), text


def test_every_fixture_is_modelled_from_its_statements(monkeypatch):
    """No fixture needs the whole-parse fallback with a memo (it would hide a bug above)."""
    from test_piecewise import FIXTURES, ast_sees_every_call

    whole = []
    parse = engine._parse_screened
    monkeypatch.setattr(engine, "_parse_screened", lambda *args: whole.append(args) or parse(*args))
    for path in FIXTURES:
        source = open(path, encoding="utf-8").read()
        if not ast_sees_every_call(source):
            continue
        whole.clear()
        engine.check_source(source, path, EVERYTHING, DocumentMemo())
        assert not whole, path


def whole(text: str) -> ast.Module:
    """What a check without a memo parses (syntax newer than this Python blanked)."""
    from gradlint.parse import python_ast

    return python_ast.parse(text)


def tree_of(parse, text: str):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(parse(text), include_attributes=True)
    except SyntaxError as error:
        return ("SyntaxError", error.lineno)


def test_chunked_trees_are_the_whole_parse():
    rng = random.Random(7)
    chunks = AstChunks()
    for _, source in rng.sample(SAMPLES, 40):
        text = source
        for _ in range(10):
            assert tree_of(chunks.parse, text) == tree_of(whole, text), text
            text = edit(text, rng)


@pytest.mark.parametrize(
    "before,after",
    [
        # a future import below the first statement: the parser accepts it (the compiler does not)
        ("import os\n\nx = 1\n", "import os\n\nfrom __future__ import annotations\n"),
        # a column-0 line inside a string is no statement
        ('x = 1\ns = """\nnot code\n"""\ny = 2\n', 'x = 1\ns = """\nnot code: (\n"""\ny = 2\n'),
        # an edit that opens a string swallows the statements below
        ('x = 1\ny = 2\nz = 3\n', 'x = 1\ny = """2\nz = 3\n'),
        # and closing it gives them back
        ('x = 1\ny = """2\nz = 3\n"""\n', 'x = 1\ny = 2\nz = 3\n"""\n'),
        # two statements on a line
        ("a = 1; b = 2\nc = 3\n", "a = 1; b = 3\nc = 3\n"),
        # a decorator left without its def
        ("@d\ndef f():\n    pass\nx = 1\n", "@d\n\nx = 1\n"),
        # typing at the end of a file without a final line end
        ("x = 1\ny = 2", "x = 1\ny = 2 +"),
        ("x = 1\ny = 2 +", "x = 1\ny = 2 + 3"),
        # a line indented under the def above joins its body
        ("def f():\n    pass\n\nx = 1\n", "def f():\n    pass\n    y = 2\nx = 1\n"),
        # characters str.splitlines takes for line ends and CPython does not
        ("x = 1  # \x0c\u2028\x85\ny = 2\nz = 3\n", "x = 1  # \x0c\u2028\x85\ny = 5\nz = 3\n"),
        ("s = '\u2028'\ny = 2\nz = 3\n", "s = '\u2028'\ny = 2\nz = 4\n"),
        # carriage returns: always parsed whole
        ("x = 1\r\ny = 2\r\n", "x = 1\r\ny = 3\r\n"),
        # `else:` cut from its `if`
        ("if a:\n    x = 1\nelse:\n    x = 2\n", "if a:\n    x = 1\n\nelse:\n    x = 2\n"),
        ("if a:\n    x = 1\nelse:\n    x = 2\n", "x = 0\nelse:\n    x = 2\n"),
    ],
)
def test_edits_that_change_what_a_statement_is(before, after):
    chunks = AstChunks()
    tree_of(chunks.parse, before)
    assert tree_of(chunks.parse, after) == tree_of(whole, after)
    assert tree_of(chunks.parse, before) == tree_of(whole, before)


def long_module(functions: int = 60) -> str:
    body = "\n".join(
        f"def train_{i}(model, loader):\n"
        f"    opt = torch.optim.SGD(model.parameters(), lr=0.{i})\n"
        f"    for x, y in loader:\n"
        f"        opt.zero_grad()\n"
        f"        model(x).sum().backward()\n"
        f"        opt.step()\n"
        for i in range(functions)
    )
    return "import torch\n\n" + body


def test_an_edit_in_one_function_reparses_only_that_function():
    memo = DocumentMemo()
    text = long_module()
    engine.check_source(text, "f.py", EVERYTHING, memo)
    edited = text.replace("lr=0.31)", "lr=0.5)")
    assert edited != text
    result = engine.check_source(edited, "f.py", EVERYTHING, memo)
    assert outcome(result) == fresh(edited)
    assert memo.cst.parsed == 1  # libcst: the one function
    assert 0 < memo.ast.reparsed_lines <= 8  # CPython: its lines (and the blank line above it)


def test_an_inserted_line_reparses_what_moved_but_no_libcst_tree():
    memo = DocumentMemo()
    text = long_module()
    engine.check_source(text, "f.py", EVERYTHING, memo)
    edited = text.replace("    for x, y in loader:\n", "    for x, y in loader:\n        pass\n", 1)
    assert outcome(engine.check_source(edited, "f.py", EVERYTHING, memo)) == fresh(edited)
    assert memo.cst.parsed == 1  # libcst trees carry no line numbers: only the edited one is new


def test_the_screen_with_a_memo_is_the_screen_without():
    from gradlint.incremental import ByIdentity
    from gradlint.options.settings import Wrappers

    memo = ByIdentity()
    rng = random.Random(3)
    for _, source in SAMPLES:
        text = edit(source, rng)
        try:
            whole(text)
        except SyntaxError:
            continue
        from types import SimpleNamespace

        from gradlint.parse.file_context import FileContext

        context = FileContext("f.py", text, SimpleNamespace(ast=AstChunks()))  # parsed through chunks
        memo.next_check()
        assert screen.screen(text, Wrappers(), memo, context=context) == screen.screen(text, Wrappers()), text


def test_a_statement_nested_too_deep_for_libcst_is_refused_with_a_memo_as_without():
    """The parse guard's answer per statement comes from the memo while the statement is
    unchanged: an edit elsewhere keeps the refusal, and removing the statement lifts it."""
    deep = "x = " + " and ".join(["a"] * 1500) + "\n"
    memo = DocumentMemo()
    text = long_module(4) + deep + long_module(2)
    for _ in range(2):
        result = outcome(engine.check_source(text, "f.py", EVERYTHING, memo))
        assert result == fresh(text)
        assert [kind for kind, *_ in result[2]] == ["syntax-error"]
        text = text.replace("lr=0.1)", "lr=0.7)")
    text = text.replace(deep, "x = 1\n")
    assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text)
    assert not fresh(text)[2]


@pytest.mark.parametrize("name,source", [(n, s) for n, s in SAMPLES if "newer_syntax" in n], ids=lambda v: str(v)[:40])
def test_code_for_a_newer_python_edited_at_random(name, source):
    """On a Python older than the code, the whole parse blanks the newer syntax
    (gradlint/parse/newer_syntax.py) and a region parsed alone does not: the two must still agree."""
    rng = random.Random(name)
    chunks = AstChunks()
    memo = DocumentMemo()
    text = source
    for _ in range(25):
        assert tree_of(chunks.parse, text) == tree_of(whole, text), text
        assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text), text
        text = edit(text, rng)


HEADER = """\
import torch

model = torch.nn.Linear(2, 1)
head = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def helper(loss):
    loss.backward()


"""
CLEARS_THE_MODEL = HEADER + """\
def train(loader):
    for x, y in loader:
        model.zero_grad()
        head(model(x)).sum().backward()
        opt.step()
"""
BACKWARD_IN_A_HELPER = HEADER + """\
def train(loader):
    for x, y in loader:
        helper(head(model(x)).sum())
        opt.zero_grad()
        opt.step()
"""


@pytest.mark.parametrize(
    "source,old,new",
    [
        (CLEARS_THE_MODEL, "SGD(model.parameters()", "SGD(head.parameters() "),  # what the optimizer steps
        (CLEARS_THE_MODEL, "opt = torch", "xpt = torch"),  # the optimizer the loop steps is unknown
        (BACKWARD_IN_A_HELPER, "    loss.backward()", "    loss.detach()  "),  # the helper no longer backpropagates
        (BACKWARD_IN_A_HELPER, "def helper(loss):", "def helpex(loss):"),  # nor is it the helper called
    ],
    ids=["parameters", "optimizer", "helper body", "helper name"],
)
def test_a_loop_whose_statement_is_unchanged_sees_an_edit_elsewhere(source, old, new):
    """The train function's statement keeps its tree and its line, so its models may be reused,
    but only if every question they asked of the bindings still gets the same answer."""
    memo = DocumentMemo()
    assert outcome(engine.check_source(source, "f.py", EVERYTHING, memo)) == fresh(source)
    edited = source.replace(old, new)
    assert edited.count("\n") == source.count("\n") and edited != source
    assert fresh(edited) != fresh(source)  # the edit matters to the loop
    assert outcome(engine.check_source(edited, "f.py", EVERYTHING, memo)) == fresh(edited)
    assert outcome(engine.check_source(source, "f.py", EVERYTHING, memo)) == fresh(source)


WORDS = ["model", "head", "opt", "optimizer", "loss", "helper", "scaler", "sched", "x", "torch"]


@pytest.mark.parametrize("seed", range(4))
def test_names_swapped_in_place_keep_every_check_exact(seed):
    """Edits that keep every line where it is (so every other statement's tree and models may
    be reused): one name replaced by another, as when a variable is renamed by hand."""
    rng = random.Random(seed)
    for _, source in rng.sample(SAMPLES, 20):
        memo = DocumentMemo()
        text = source
        for _ in range(6):
            assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text), text
            spots = [(i, w) for w in WORDS for i in _occurrences(text, w)]
            if not spots:
                break
            at, word = rng.choice(spots)
            text = text[:at] + rng.choice(WORDS) + text[at + len(word) :]


def _occurrences(text: str, word: str) -> list[int]:
    import re

    return [m.start() for m in re.finditer(r"\b%s\b" % word, text)]


TRAINER = """\
class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()


trainer = Trainer(model)
for x in data:
    trainer.train_step(x)
"""


def test_a_statement_written_twice_is_two_statements_with_a_memo():
    """The same class (a step missing its clear) and the same loop driving it, written twice:
    equal texts once shared one libcst tree, whose nodes (numbered by identity) then took the
    second copy's lines, and the memo's check reported GL001 twice where a fresh check says once."""
    text = "import torch\n\nmodel = torch.nn.Linear(2, 1)\n\n\n" + TRAINER + "\n\n" + TRAINER
    memo = DocumentMemo()
    assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text)
    assert outcome(engine.check_source(text, "f.py", EVERYTHING, memo)) == fresh(text)  # all reused
    edited = text.replace("lr=0.1)", "lr=0.2)", 1)
    assert outcome(engine.check_source(edited, "f.py", EVERYTHING, memo)) == fresh(edited)
    assert [f.code for f in engine.check_source(text, "f.py", EVERYTHING).findings] == ["GL001"]
