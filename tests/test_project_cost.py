"""What the project index (gradlint/run/project_run.py) reads of a file: only a file that can
call one of the gradient-touching functions or methods is read for its calls."""

from __future__ import annotations

import hashlib
import textwrap

from gradlint.run import project_run

TRAINER = """\
class Trainer:
    def train(self, loss, optimizer):
        loss.backward()
        optimizer.step()
"""

# `model.train()` in a loop: a method named like the trainer's, on an object of a class this
# file never imports (it imports the module, for something else)
EVALUATE = """\
import trainer

for batch in loader:
    model.train()
    print(trainer.__name__)
"""

# the trainer's class imported: its `train` may be called here
TRAIN = """\
from trainer import Trainer

t = Trainer()
for batch in loader:
    t.train(loss, opt)
"""


def index(tmp_path, files: dict[str, str]):
    rows = []
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        rows.append((str(path), path.read_text(), hashlib.sha1(text.encode()).hexdigest(), None))
    return project_run.index_files(rows, (str(tmp_path),))


def test_a_file_that_cannot_call_them_is_not_read_for_calls(tmp_path, monkeypatch):
    read = []
    original = project_run.calls_of

    def counting(text, *args):
        read.append(text)
        return original(text, *args)

    monkeypatch.setattr(project_run, "calls_of", counting)
    _, views = index(tmp_path, {"trainer.py": TRAINER, "evaluate.py": EVALUATE, "train.py": TRAIN})
    assert EVALUATE not in read
    assert TRAIN in read
    assert str(tmp_path / "train.py") in views


def test_import_words_are_those_of_every_import_line():
    """import_words tries its pattern only at the lines that hold `import`: the same words as
    the pattern run over every line (the definition, spelled out here)."""
    from gradlint.project.scan import _WORD, IMPORT_LINE, continued_names, import_words

    def every_line(text: str) -> set[str]:
        return {word for match in IMPORT_LINE.finditer(text)
                for group in match.groups() + (continued_names(text, match),) if group
                for word in _WORD.findall(group)}

    texts = [
        "import os\nfrom a.b import (c,\n    d)\n",
        "from .utils import (\n    clip_grad_norm_,  # a comment\n    cleanup,\n)\nx = 1\n",
        "x = 1\n    import torch.nn as nn  # comment import y\n",
        "import a; import b\nreimport = 3\nprint('import z')\n",
        "from . import trainer\r\nfrom .. import util\r\nimport q\r\n",
        "def f():\n\tfrom x import y, z as w\n    return 'no import here' if importable else None\n",
        "import",
        "",
        "s = '''\nimport inside_a_string\n'''\n",
    ]
    for text in texts:
        assert import_words(text) == every_line(text), text
    assert {"d", "clip_grad_norm_", "cleanup"} <= import_words(texts[0] + texts[1])


def test_called_names_are_the_words_before_an_opening_parenthesis():
    """called_names' pattern takes each word whole (a lookahead, no backtracking into it): the
    same names as the plain definition, a word then spaces or tabs then `(`."""
    import re

    from gradlint.project.scan import called_names

    plain = re.compile(r"(?<!\w)(\w+)[ \t]*\(")
    texts = [
        "f(x)\nself.opt.step ()\n  g\t(1)\nh\n(2)\n",
        "a_b1(c(d))\n_e (f)\nx.y.z(w) + q[0](r)\n",
        "word" * 500 + " no call here\n" + "k" * 300 + "(1)\n",
        "é(1)\nnon_ascii_名前(2)\n1f(3)\n",
        "",
    ]
    for text in texts:
        assert called_names(text) == frozenset(plain.findall(text)), text


def test_call_sites_are_the_places_of_those_words():
    """The calls read backwards from each `(` (scan._call_sites): the same names at the same
    offsets as the plain definition, on texts of many parentheses or long blank runs too."""
    import re

    from gradlint.project.scan import _calls

    plain = re.compile(r"(?<!\w)(\w+)[ \t]*\(")
    texts = [
        "f(x)\nself.opt.step ()\n  g\t(1)\nh\n(2)\n",
        "a_b1(c(d))\n_e (f)\nx.y.z(w) + q[0](r)\n((()))\n",
        " " * 5000 + "(" * 5000 + "w" * 5000 + " \t (",
        "é(1)\nnon_ascii_名前(2)\n1f(3)\n(start",
    ]
    for text in texts:
        expected: dict = {}
        for match in plain.finditer(text):
            expected.setdefault(match.group(1), []).append(match.start())
        assert _calls(text) == expected, text[:40]


def test_stores_read_plain_and_annotated_assignments_of_a_name():
    """`self.attr = name` with or without an annotation (one without a `:`, so that a long line
    of `self.x:` is read in linear time) and with a comment; not a constant or a call."""
    from gradlint.project.scan import _STORE

    text = "self.a: int = a\nself.b = b  # c\nself.c: Dict[str, int] = c\nself.d = d()\nself.e = None\n"
    assert [m.groups() for m in _STORE.finditer(text)] == [("a", "a"), ("b", "b"), ("c", "c"), ("e", "None")]
    assert _STORE.findall("self.a:" * 2000) == []


def test_an_optimizer_built_on_self_is_found_only_after_a_whole_word_self():
    from gradlint.project.scan import builds_optimizer, optimizers_built

    assert builds_optimizer("class A:\n    def __init__(self):\n        self.opt = torch.optim.Adam(p)\n")
    assert builds_optimizer("x = 1;self.o=optim.SGD (p)\n")
    assert not builds_optimizer("myself.opt = torch.optim.Adam(p)\n")
    assert not builds_optimizer("self.opt = make(torch.optim.Adam)\n")
    # a rejected `myself.` does not hide a real build later on the text
    text = "myself.a = optim.Adam(p)\n        self.b = optim.SGD(q)\n"
    assert [m.group().split("=")[0].strip() for m in optimizers_built(text)] == ["self.b"]


# Texts for the scans anchored at a line's start: imports in parentheses over several lines,
# a word inside a longer one, in a string, tabs, Windows line ends, `async`, no final newline.
LINE_TEXTS = [
    "import os\nfrom a.b import (c,\n    d)\n",
    "from .utils import (\n    clip_grad_norm_,  # a comment\n    important,\n)\nimport q\n",
    "from x import (a,\nimport b\n)\n",  # a line inside an earlier match is no new one
    "from a import (b,\nfrom c import d)\n",
    "x = 1\n    import torch.nn as nn  # comment import y\n",
    "import a; import b\nreimport = 3\nprint('import z')\n",
    "from . import trainer\r\nfrom .. import util\r\nimport q\r\n",
    "def f():\n\tfrom x import y, z as w\n    return 'no import here' if importable else None\n",
    "class A(B):\n    async def f(self):\n        for x in y:\n            while z: pass\n",
    "undefined = 1\nforward(x)\nclassy = [a for a in b]\n  # for comment\ns = '''\nfor in string\n'''\n",
    "async  def g(): pass\n\tclass\tC: pass\nfor",
    "import",
    "",
]


def test_a_line_holding_the_word_many_times_is_read_once():
    """line_starts yields each line once: a long line with the word at every step is not read
    back to its start once per occurrence (quadratic in the line's length)."""
    from gradlint.project.scan import line_starts

    assert list(line_starts("x = 'import ' * 3; " * 5000, "import")) == [0]
    text = "a import\nb\nimport c import d\n  import"
    assert list(line_starts(text, "import")) == [0, 11, 29]


def test_patterns_tried_at_the_lines_holding_their_word_find_what_finditer_finds():
    """The import scans and the head scan try their `^` patterns only at lines holding their
    word (scan.matches_at_lines, scan._head_matches): the same matches as the pattern run over
    the whole text."""
    from gradlint.project.index import _FROM_IMPORT, _PLAIN_IMPORT
    from gradlint.project.scan import _HEAD, IMPORT_LINE, _head_matches, matches_at_lines

    def spans(matches):
        return [(m.span(), m.groups()) for m in matches]

    for text in LINE_TEXTS:
        for pattern in (IMPORT_LINE, _FROM_IMPORT, _PLAIN_IMPORT):
            assert spans(matches_at_lines(text, "import", pattern)) == spans(pattern.finditer(text)), text
        assert spans(_head_matches(text)) == spans(_HEAD.finditer(text)), text


def test_spellings_tried_where_their_shared_word_occurs_are_those_of_every_pattern():
    """_spellings tries each spelling only where its word (`grad`, `backward`) occurs: the same
    places as each spelling's pattern run over the whole text (the definition, spelled out)."""
    from gradlint.project.scan import _SPELLINGS, _called_name, _counts, _spellings, has_spelling

    def every_pattern(text: str) -> list[int]:
        return sorted(m.start() for literal, pattern in _SPELLINGS for m in pattern.finditer(text)
                      if _called_name(text, m.start(), literal) and _counts(text, m))

    texts = [
        "loss.backward()\nself.manual_backward(loss)\nopt.zero_grad ()\n",
        "torch.nn.utils.clip_grad_norm_(p, 1)\nclip_grad_norm(p)\nclip_grad_value_(p, 1)\ndispatch_clip_grad(p)\n",
        "p.grad = g\np.grad.data += g\np.grad == g\np.grad.zero_()\nrequires_grad = True\nwith torch.no_grad(): pass\n",
        "scaler.unscale_(opt)\nopt.step()\nscheduler.step(noise, t, x)\noptimizer.step (closure)\n",
        "grad" * 300 + "backward" * 100 + "(",
        "",
    ]
    for text in texts:
        assert _spellings(text) == every_pattern(text), text[:40]
        assert has_spelling(text) is bool(every_pattern(text)), text[:40]


def test_a_spelling_is_a_whole_name_called_not_a_tail_or_a_defined_name():
    """`ctx.save_for_backward(x)` and an autograd Function's `def backward(ctx, grad):` hold no
    backward (the analysis reads a call by its whole name); a def named as a clip is one."""
    from gradlint.project.scan import has_spelling, scan

    assert not has_spelling("ctx.save_for_backward(x)\n_apply_optimizer_in_backward(opt)\n")
    assert not has_spelling("class F(torch.autograd.Function):\n    def backward(ctx, grad):\n        return grad\n")
    assert not has_spelling("torch._amp_foreach_non_finite_check_and_unscale_(grads, inf, inv)\n")
    assert has_spelling("self.manual_backward(loss)\n") and has_spelling("backward(loss)\n")
    assert has_spelling("(loss).backward()\n") and has_spelling("x=clip_grad_norm_(p, 1)\n")
    found = scan("def op(x):\n    class F(Function):\n        def forward(ctx, x):\n"
                 "            ctx.save_for_backward(x)\n        def backward(ctx, g):\n            return g\n"
                 "    return F.apply(x)\n\ndef clip_grad_norm_(params, max_norm):\n    pass\n")
    assert found.functions == {"clip_grad_norm_"} and not found.methods


def test_a_summarised_function_whose_only_spelling_is_in_its_docstring_touches_no_gradients():
    """The string literals a summary blanks are collected in the same walk that reads the
    function's calls: an example in a docstring is no gradient spelling, a call is one."""
    from gradlint.project.index import summarize

    text = ('def documented(engine):\n    """Usage: `loss.backward(); opt.step()`."""\n    return engine\n\n'
            'def trains(loss, opt):\n    """Runs a step."""\n    loss.backward()\n    opt.step()\n')
    module = summarize("m.py", text, "d")
    assert not module.functions["documented"].gradient
    assert module.functions["trains"].gradient


def test_an_imported_name_made_portable_is_the_expression_a_parse_gives():
    import ast

    from gradlint.project.index import _dotted_node

    for dotted in ("torch", "torch.optim.Adam", "a.b"):
        assert ast.dump(_dotted_node(dotted)) == ast.dump(ast.parse(dotted, mode="eval").body)
