"""A huge file modelled in pieces (gradlint/model/piecewise.py) gives what a whole parse gives.

The pieces are forced down to a few lines here, so that every fixture and rule
sample is cut between almost every pair of top-level statements: any binding,
helper or position that does not survive the cut shows up as a difference.
"""

from __future__ import annotations

import glob
import os

import pytest

from gradlint.check import engine
from gradlint.parse import python_ast
from gradlint.model import piecewise
from gradlint.model.bindings import Bindings
from gradlint.model.positions import AstTable
from gradlint.rules.registry import all_rules
from gradlint.options.settings import Settings, Wrappers
from pieces import pieces_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(
    p for p in glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True) if not p.endswith("__init__.py")
)
EVERYTHING = Settings(select=frozenset(rule.code for rule in all_rules()))


def findings(source: str, lines: int | None) -> list[tuple]:
    with pieces_of(lines):
        result = engine.check_source(source, "f.py", EVERYTHING)
    assert not result.errors, result.errors
    return [(f.code, f.span, f.message, f.related, f.fix) for f in result.findings]


def built(source: str, lines: int) -> piecewise._Build:
    """The piecewise build itself (raises where build_in_pieces would give up)."""
    tree = python_ast.parse(source)
    build = piecewise._Build(source, "f.py", Wrappers(), AstTable(tree))
    build.run(piecewise.cut(tree, lines), source)
    return build


def _samples() -> list[tuple[str, str]]:
    out = [(os.path.relpath(p, ROOT), open(p, encoding="utf-8").read()) for p in FIXTURES]
    for rule in all_rules():
        out += [(f"{rule.code} sample {i}", s) for i, s in enumerate(rule.samples)]
    return out


SAMPLES = _samples()


@pytest.mark.parametrize("name,source", SAMPLES, ids=[name for name, _ in SAMPLES])
def test_pieces_give_the_findings_of_a_whole_parse(name, source):
    whole = findings(source, None)
    assert findings(source, 1) == whole
    assert findings(source, 5) == whole


def ast_sees_every_call(source: str) -> bool:
    """False for code newer than this Python whose blanked text (gradlint/parse/newer_syntax.py)
    lost a parenthesis, so a call: the ast table then cannot agree with libcst's nodes."""
    import ast

    from gradlint.parse.newer_syntax import readable

    try:
        ast.parse(source)
    except SyntaxError:
        text = readable(source)
        return text is not None and text.count("(") == source.count("(")
    return True


def test_every_fixture_can_be_built_in_pieces():
    """No fixture needs the whole-parse fallback (it would hide a piecewise bug above),
    except one this Python reads only with calls blanked (a PEP 701 f-string before 3.12)."""
    for path in FIXTURES:
        source = open(path, encoding="utf-8").read()
        if ("backward" in source or "step" in source) and ast_sees_every_call(source):
            built(source, 1)  # raises on a disagreement


LATE_OPTIMIZER = """\
import torch


def train(model, loader):
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()


model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train(model, [])
"""


def test_a_loop_above_the_optimizer_is_modelled_again_with_the_whole_bindings():
    build = built(LATE_OPTIMIZER, 1)
    assert build.second_passes == 1  # `opt` was unknown when the first piece was modelled
    whole = findings(LATE_OPTIMIZER, None)
    assert [f[0] for f in whole] == ["GL001"]  # the step never clears: opt is an optimizer
    assert findings(LATE_OPTIMIZER, 1) == whole


HOOK_REDEFINED = """\
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def clear(optimizer, args, kwargs):
    optimizer.zero_grad()


opt.register_step_post_hook(clear)

for x in loader:
    model(x).sum().backward()
    opt.step()


def clear(optimizer, args, kwargs):
    pass
"""


def test_what_a_later_piece_undoes_is_undone():
    """The step hook clears while one `clear` is known; the second def makes it unknown
    (bindings.finish() computes it anew, it does not only add)."""
    whole = findings(HOOK_REDEFINED, None)
    assert [f[0] for f in whole] == ["GL001"]
    assert findings(HOOK_REDEFINED, 1) == whole
    assert built(HOOK_REDEFINED, 1).second_passes == 1


LOCAL_RECEIVER_MODELLED_AGAIN = """\
import torch
from torch import nn


class Agent:
    def __init__(self):
        self.net = nn.Linear(4, 2)

    def train_step(self):
        loss = self.net(torch.randn(8, 4)).sum()
        opt.step()
        loss.backward()
        opt.zero_grad()


def train():
    agent = Agent()
    for _ in range(3):
        agent.train_step()
    return agent


agent = train()
opt = torch.optim.SGD(agent.net.parameters(), lr=0.1)
"""


def test_a_piece_modelled_again_reads_the_scope_of_its_own_calls():
    """`train`'s piece is modelled again (`opt` is assigned below it).  Its new call
    `agent.train_step()` must still read `agent` as train's own local (an Agent), not every
    `agent` of the file (the module's, what train returns): a call of the second parse that
    the bindings never saw had no def, so the receiver's class was lost with the helper."""
    whole = findings(LOCAL_RECEIVER_MODELLED_AGAIN, None)
    assert [f[0] for f in whole] == ["GL007"]
    assert built(LOCAL_RECEIVER_MODELLED_AGAIN, 1).second_passes >= 1
    assert findings(LOCAL_RECEIVER_MODELLED_AGAIN, 1) == whole
    assert findings(LOCAL_RECEIVER_MODELLED_AGAIN, 5) == whole


def test_repeated_loops_are_modelled_once():
    loop = "for x, y in loader:\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n\n"
    source = "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + loop * 60
    build = built(source, 30)
    assert len(build.pieces) > 5
    assert build.second_passes == 0  # every loop asks the same questions, with the same answers


def test_cut_keeps_every_line_once_and_cuts_only_between_statements():
    source = (
        "import torch\n"
        "a = 1; b = 2\n"
        "@decorate\n"
        "def f(\n    x,\n):\n    return x\n"
        "x = (\n    1\n)\n"
        "# a comment\n"
        "for i in y:\n    pass\n"
    )
    tree = python_ast.parse(source)
    spans = piecewise.cut(tree, 1)
    # `b = 2` shares a line: no cut there; the decorator goes with its def, the comment with the piece above
    assert spans == [(1, 1), (2, 2), (3, 7), (8, 11), (12, -1)]
    build = piecewise._Build(source, "f.py", Wrappers(), AstTable(tree))
    text = "".join(build.piece_text(first, last if last > 0 else len(build.line_starts)) for first, last in spans)
    assert text == source


def test_cut_does_not_split_short_files():
    tree = python_ast.parse("a = 1\nb = 2\n")
    assert piecewise.cut(tree, 10) == [(1, -1)]


def test_a_piece_libcst_cannot_place_falls_back_to_a_whole_parse(monkeypatch):
    monkeypatch.setattr(AstTable, "count", lambda self, kind, first, last: -1)  # counts never agree
    tree = python_ast.parse(LATE_OPTIMIZER)
    assert piecewise.build_in_pieces(LATE_OPTIMIZER, "f.py", LATE_OPTIMIZER, Wrappers(), AstTable(tree), piecewise.cut(tree, 1)) is None
    with pieces_of(1):  # and the engine still reports what the whole parse finds
        assert [f.code for f in engine.check_source(LATE_OPTIMIZER, "f.py", EVERYTHING).findings] == ["GL001"]


def test_the_recorder_writes_down_answers_and_marks_direct_reads():
    bindings = Bindings()
    log = piecewise.Log()
    recorder = piecewise.Recorder(bindings, log)
    assert recorder.kind("opt") is None  # nothing assigned yet
    assert recorder.imports.qualify("torch.optim") == "torch.optim"
    assert log.answers == {("kind", ("opt",)): None, ("imports.qualify", ("torch.optim",)): "torch.optim"}
    assert not log.stale
    recorder.assigns  # data read directly cannot be asked again
    assert log.stale


def test_answers_are_frozen_against_later_changes():
    values = ["a"]
    answer = piecewise.frozen({"k": values, "s": {1}})
    values.append("b")
    assert answer == (("k", ("a",)), ("s", frozenset({1})))


def test_no_piece_tree_outlives_its_piece():
    """Only what the bindings keep (assigned values, defs) survives the build: no loop node."""
    import gc

    import libcst as cst

    loop = "for x, y in loader:\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
    source = "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + loop * 100
    build = built(source, 50)
    assert len(build.pieces) > 5
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) in (cst.For, cst.Module) and o is not build.config]


CHILD = r"""
import sys
from gradlint.check import engine
from gradlint.model import piecewise
from gradlint.options.settings import Settings


def peak_kb():
    # VmHWM belongs to this process image; ru_maxrss would start at the parent's peak (Linux keeps it across exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])


if sys.argv[1] == "whole":
    piecewise.PIECES_FROM = 10**9
loop = "for x, y in loader:\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
head = "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
import libcst  # before the baseline
base = peak_kb()
loops, blank = int(sys.argv[2]), sys.argv[3] == "blank"
result = engine.check_source(head + (loop + ("\n" if blank else "")) * loops, "dense.py", Settings.default())
assert not result.errors and not result.findings
print(peak_kb() - base, peak_kb())
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_parsing_in_pieces_keeps_the_peak_down():
    """Peak memory above start-up of a 10,000-line loop-dense file, built in pieces, is at
    most half a whole parse's: libcst's native parser needs memory in proportion to the text
    it parses at once (a ratio of two runs of one script; benchmarks/loop_dense.py measures
    the real figures)."""
    whole, in_pieces = peak_of("whole", 2000)[0], peak_of("pieces", 2000)[0]
    assert in_pieces < 0.5 * whole, (in_pieces, whole)


def peak_of(mode: str, loops: int, blank: bool = False) -> tuple[int, int]:
    """(growth during the check, peak of the process) in KiB, in a fresh process."""
    import subprocess
    import sys

    args = [sys.executable, "-c", CHILD, mode, str(loops), "blank" if blank else "packed"]
    proc = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    growth, peak = proc.stdout.split()[-2:]
    return int(growth), int(peak)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_the_50000_line_file_of_issue_13_stays_within_300_mb():
    """8,333 five-line loops with a blank line between them: 1.0 GB before issue 13."""
    _, peak = peak_of("pieces", 8333, blank=True)
    assert peak < 300 * 1024, peak


def test_the_loop_dense_benchmark_child_runs_on_a_file_built_in_pieces(tmp_path):
    """benchmarks/loop_dense.py's child wraps piecewise._Build.run to count pieces: it must
    keep working when run() changes its arguments (it once broke that way, unseen, since the
    benchmark is not run by the suite)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("loop_dense", os.path.join(ROOT, "benchmarks", "loop_dense.py"))
    loop_dense = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loop_dense)
    loops = piecewise.PIECES_FROM // 5 + 1  # five lines a loop: a file built in pieces
    path = tmp_path / "dense.py"
    path.write_text(loop_dense.HEADER + loop_dense.UNCLEARED_LOOP + loop_dense.LOOP * loops)
    out = loop_dense.measure("check", str(path), 1)  # the child's JSON, read
    assert out["pieces"] >= 2
    assert [code for code, _ in out["findings"]] == ["GL001"]


# A long def parsed a part of its body at a time (piecewise.def_chunks, _Build.parse_piece).
LONG_DEF = '''\
import torch


@torch.no_grad
async def train(model, opt, loader):  # a header comment
    """Doc."""
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()

        # the step
        opt.step()

    total = 0; count = (
        1)


    class Inner:
        def f(self):
            return 1
        
    while True:
        break
    # before the last one
    if total:
        pass
        # a footer of the if
    return total
'''


@pytest.mark.parametrize("name,source", SAMPLES + [("long def", LONG_DEF)], ids=[n for n, _ in SAMPLES] + ["long def"])
def test_a_def_parsed_in_chunks_is_the_tree_of_a_whole_parse(name, source):
    """Chunks of one statement each: every body statement of every def is a cut where only
    empty lines lie before it; the tree put together equals libcst's whole parse, node for
    node and in its code (a comment or an indented blank line between keeps the two together)."""
    import libcst as cst

    tree = python_ast.parse(source)
    chunks = piecewise.def_chunks(tree, source, piece_lines=1)
    build = piecewise._Build(source, "f.py", Wrappers(), AstTable(tree), chunks=chunks)
    for first, (_, parts) in chunks.items():
        last = parts[-1][1]
        whole = cst.parse_module(build.piece_text(first, last))
        together = build.parse_piece(first, last)
        assert together.deep_equals(whole) and together.code == whole.code


def test_a_long_def_has_chunks_only_where_empty_lines_part_its_statements():
    tree = python_ast.parse(LONG_DEF)
    chunks = piecewise.def_chunks(tree, LONG_DEF, piece_lines=1)
    is_async, parts = chunks[4]  # from its decorator's line
    assert is_async
    # cuts before `for` (right after the docstring, line 7), `total = 0` and `class Inner`
    # (their chunks begin with the empty lines before them, lines 13 and 16); none inside
    # `total = 0; count = (...)`, nor before `while` (an indented blank line before it), nor
    # `if` (a comment)
    assert [first for first, _ in parts] == [4, 7, 13, 16]
    assert parts[-1][1] == len(LONG_DEF.split("\n")) - 1
    assert piecewise.def_chunks(tree, LONG_DEF) == {}  # shorter than a piece


def test_a_function_of_twenty_thousand_lines_is_never_parsed_whole(monkeypatch):
    """libcst's parser holds memory in proportion to what it parses at once (a 20,000-line
    `def train():` of loops: 290 MB): such a def is parsed a piece at a time, with the same
    findings as a whole parse."""
    loop = "    for x, y in loader:\n        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n"
    source = "import torch\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\ndef train():\n" + loop * 1500
    import libcst as cst

    parsed: list[int] = []
    real = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda text, *a, **k: parsed.append(text.count("\n")) or real(text, *a, **k))
    result = engine.check_source(source, "f.py", EVERYTHING)
    assert [f.code for f in result.findings] == ["GL001"] * 1500
    assert len(parsed) > 2 and max(parsed) <= 2 * piecewise.PIECE_LINES
    monkeypatch.setattr(cst, "parse_module", real)
    with pieces_of(None):
        whole = engine.check_source(source, "f.py", EVERYTHING)
    assert [(f.code, f.span, f.message) for f in whole.findings] == [(f.code, f.span, f.message) for f in result.findings]


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_a_long_def_with_other_line_ends_is_put_together_as_a_whole_parse(end):
    import libcst as cst

    source = LONG_DEF.replace("\n", end)
    tree = python_ast.parse(source)
    chunks = piecewise.def_chunks(tree, source, piece_lines=1)
    assert [first for first, _ in chunks[4][1]] == [4, 7, 13, 16]
    build = piecewise._Build(source, "f.py", Wrappers(), AstTable(tree), chunks=chunks)
    whole = cst.parse_module(build.piece_text(4, chunks[4][1][-1][1]))
    together = build.parse_piece(4, chunks[4][1][-1][1])
    assert together.deep_equals(whole) and together.code == whole.code


def test_the_last_piece_is_modelled_on_the_complete_bindings_and_asked_nothing_again(monkeypatch):
    """Nothing comes after the last piece to change an answer: its questions are neither recorded
    nor asked again (a function of 4,000 loops at the end of a file asked 80,000 twice).  An
    earlier piece's still are: a later piece may bind what it asked about."""
    asked = []
    real = piecewise._ask_again

    def counted(bindings, key, memo):
        asked.append(key)
        return real(bindings, key, memo)

    monkeypatch.setattr(piecewise, "_ask_again", counted)
    loop = "    for b in loader:\n        loss = model(b).sum()\n        loss.backward()\n        opt.zero_grad()\n        opt.step()\n"
    source = "import torch\n\n\ndef main(model, loader, opt):\n" + loop * 20
    build = built(source, 2)
    assert len(build.pieces) == 2 and build.pieces[-1].log is None
    assert asked == []
    assert findings(source, 2) == findings(source, None)
    earlier = source + "\n\ndef other(model, loader, opt):\n" + loop
    build = built(earlier, 2)
    assert len(build.pieces) == 3 and build.pieces[1].log is not None and asked
