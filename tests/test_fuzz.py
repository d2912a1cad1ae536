"""Property-based tests (issue 13): generated programs never crash or hang gradlint.

Two sources of programs:

* hypothesmith: valid Python from the grammar, with a small training loop
  appended so that the prefilter lets them through to the full analysis;
* training loops: random sequences of clear / backward / clip / unscale /
  step / schedule calls inside random nesting of for, while, if, with, try
  and def (a def is called right after it, so loops.py inlines it).

Properties: the check never raises nor reports an internal error, and ends
within a deadline; the findings are the same with and without the screen,
with and without the cache, whole or built in pieces (files of several
top-level statements in any order), and with LF, CRLF or CR line endings; `--fix`
output parses and has no finding the file did not have before.

The default profile fits the CI budget (the module in well under a minute
on 2 cores).  GRADLINT_FUZZ=long runs many more examples:

    GRADLINT_FUZZ=long python -m pytest -q tests/test_fuzz.py
"""

from __future__ import annotations

import ast
import collections
import contextlib
import importlib.util
import os
import signal
import threading

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gradlint.check import engine  # noqa: E402
from gradlint.core.findings import INTERNAL_ERROR  # noqa: E402
from gradlint.rules.registry import all_rules  # noqa: E402
from gradlint.options.settings import Settings  # noqa: E402

LONG = os.environ.get("GRADLINT_FUZZ", "").lower() == "long"
EXAMPLES = 400 if LONG else 25
DEADLINE_S = 20 if LONG else 10  # one example, wall clock, on a loaded 2-core machine
settings.register_profile(
    "gradlint",
    max_examples=EXAMPLES,
    deadline=None,  # timing is enforced by `within` below, which also stops a real hang
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    derandomize=not LONG,  # CI: the same examples every run; long: new ones
    database=None,
)
PROFILE = settings.get_profile("gradlint")
EVERYTHING = Settings(select=frozenset(rule.code for rule in all_rules()))


@contextlib.contextmanager
def within(seconds: float):
    """Fail (instead of hanging the suite) when the body runs longer than `seconds`."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def timeout(signum, frame):
        raise TimeoutError(f"gradlint took more than {seconds} s on one example")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- generated training loops ------------------------------------------------------------

HEADER = (
    "import torch\n"
    "model = torch.nn.Linear(4, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "sched = torch.optim.lr_scheduler.StepLR(opt, 3)\n"
)
CALLS = [
    "opt.zero_grad()",
    "model.zero_grad()",
    "loss = model(x).sum()",
    "loss.backward()",
    "scaler.scale(loss).backward()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "scaler.unscale_(opt)",
    "opt.step()",
    "scaler.step(opt)",
    "scaler.update()",
    "sched.step()",
]
HEADERS = ["for x in loader:", "while running:", "if ready:", "with torch.autocast('cpu'):", "try:", "def helper():"]


def _block(draw, depth: int, indent: str) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.integers(0, 3)) == 0:
            head = draw(st.sampled_from(HEADERS))
            lines.append(indent + head)
            lines += _block(draw, depth + 1, indent + "    ")
            if head == "try:":
                lines.append(indent + draw(st.sampled_from(["except Exception:", "finally:"])))
                lines += _block(draw, depth + 1, indent + "    ")
            elif head == "if ready:" and draw(st.booleans()):
                lines.append(indent + "else:")
                lines += _block(draw, depth + 1, indent + "    ")
            elif head == "def helper():":
                lines.append(indent + "helper()")
        else:
            lines.append(indent + draw(st.sampled_from(CALLS)))
    return lines


@st.composite
def training_loops(draw) -> str:
    outer = draw(st.sampled_from(["for x in loader:", "while True:", "for epoch in range(3):"]))
    body = _block(draw, 0, "    ")
    return HEADER + outer + "\n" + "\n".join(body) + "\n"


# --- generated Python (hypothesmith) -------------------------------------------------------



def _grammar():
    import hypothesmith

    return hypothesmith.from_grammar()


# Built when the test first draws, on the worker that runs it: building the grammar's parser
# costs seconds, which every pytest worker paid at collection when it was built here.
HAS_HYPOTHESMITH = importlib.util.find_spec("hypothesmith") is not None
GRAMMAR = st.deferred(_grammar) if HAS_HYPOTHESMITH else None
needs_hypothesmith = pytest.mark.skipif(not HAS_HYPOTHESMITH, reason="hypothesmith is not installed")

TAIL = "\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"


def _valid(source: str) -> bool:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `1()` and the like: valid, and not our business
            compile(source, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


# --- properties ------------------------------------------------------------------------------


def _check(source: str):
    with within(DEADLINE_S):
        result = engine.check_source(source, "fuzz.py", EVERYTHING)
    assert not [e for e in result.errors if e.kind == INTERNAL_ERROR], result.errors
    return result


def _unscreened(source: str):
    original = engine._screen
    engine._screen = lambda context, settings, project=None: context.source  # libcst sees the whole file
    try:
        with within(DEADLINE_S):
            return engine.check_source(source, "fuzz.py", EVERYTHING)
    finally:
        engine._screen = original


@needs_hypothesmith
@settings(PROFILE)
@given(st.one_of(GRAMMAR, GRAMMAR.map(lambda code: code + TAIL)) if GRAMMAR is not None else st.nothing())
def test_generated_python_never_crashes_and_the_screen_changes_nothing(code):
    result = _check(code)
    if not result.errors:
        assert _unscreened(code).findings == result.findings


@settings(PROFILE)
@given(training_loops())
def test_generated_training_loops_never_crash_and_the_screen_changes_nothing(source):
    assert _valid(source)
    result = _check(source)
    assert not result.errors, result.errors  # valid code: no error of any kind
    assert _unscreened(source).findings == result.findings


@settings(PROFILE)
@given(training_loops(), training_loops())
def test_a_buffer_edited_from_one_generated_file_to_another_is_checked_as_fresh(before, after):
    """The language server's per-buffer memo (gradlint/incremental) between two files that share
    whatever statements the generator gave both: the second check is the fresh check's."""
    from gradlint.incremental import DocumentMemo

    memo = DocumentMemo()
    with within(DEADLINE_S):
        assert engine.check_source(before, "fuzz.py", EVERYTHING, memo) == _check(before)
        assert engine.check_source(after, "fuzz.py", EVERYTHING, memo) == _check(after)


@settings(PROFILE, max_examples=max(EXAMPLES // 3, 8))
@given(training_loops())
def test_findings_are_the_same_with_and_without_the_cache(tmp_path_factory, source):
    folder = tmp_path_factory.mktemp("fuzz")
    path = str(folder / "train.py")
    with open(path, "w") as handle:
        handle.write(source)
    tasks = [(path, EVERYTHING)]
    with within(DEADLINE_S * 3):
        uncached = engine.check_files(tasks, engine.RunOptions(jobs=1))
        cold = engine.check_files(tasks, engine.RunOptions(jobs=1, cache_dir=str(folder / "cache")))
        warm = engine.check_files(tasks, engine.RunOptions(jobs=1, cache_dir=str(folder / "cache")))
    assert uncached[0].findings == cold[0].findings == warm[0].findings


# Files of several top-level statements, in any order: optimizers assigned after the
# loops that step them, reassigned, helpers defined at the top level and called from loops.
ASSIGNMENTS = [
    "model = torch.nn.Linear(4, 1)",
    "other = torch.nn.Linear(4, 1)",
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
    "opt = torch.optim.SGD(other.parameters(), lr=0.1)",
    "scaler = torch.cuda.amp.GradScaler()",
    "sched = torch.optim.lr_scheduler.StepLR(opt, 3)",
    "accum_steps = 4",
]


@st.composite
def files_of_statements(draw) -> str:
    parts = ["import torch\n"]
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            parts.append(draw(st.sampled_from(ASSIGNMENTS)) + "\n")
        elif kind == 1:
            outer = draw(st.sampled_from(["for x in loader:", "while True:"]))
            body = _block(draw, 0, "    ") + draw(st.sampled_from([[], ["    update()"], ["    helper()"]]))
            parts.append(outer + "\n" + "\n".join(body) + "\n")
        elif kind == 2:
            name = draw(st.sampled_from(["update", "train"]))
            body = _block(draw, 1, "    ")
            parts.append(f"def {name}():\n" + "\n".join(body) + "\n")
        else:
            parts.append(draw(st.sampled_from(["train()", "update()"])) + "\n")
    return "".join(parts)


@settings(PROFILE)
@given(files_of_statements())
# found by the long profile with the second pass switched off: a helper defined below its loop
@example("import torch\nfor x in loader:\n    loss.backward()\n    update()\ndef update():\n"
         "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")
def test_a_file_built_in_pieces_has_the_findings_of_a_whole_parse(source):
    """gradlint/model/piecewise.py, with a piece per top-level statement."""
    from gradlint.parse import python_ast
    from gradlint.model import piecewise
    from gradlint.model.positions import AstTable

    assume(_valid(source))
    from pieces import pieces_of

    whole = _check(source)
    with pieces_of(1):
        in_pieces = _check(source)
        tree = python_ast.parse(source)
        model = piecewise.build_in_pieces(source, "fuzz.py", source, EVERYTHING.wrappers, AstTable(tree), piecewise.cut(tree))
    assert model is not None  # built in pieces, not by the whole-parse fallback
    assert [(f.code, f.span, f.message, f.related) for f in in_pieces.findings] == [
        (f.code, f.span, f.message, f.related) for f in whole.findings
    ]


def _codes(findings) -> collections.Counter:
    return collections.Counter(f.code for f in findings)


@settings(PROFILE)
@given(training_loops())
def test_fix_output_parses_and_never_gains_a_finding(tmp_path_factory, source):
    from gradlint.edit.fix_files import fix_file

    result = _check(source)
    assume(any(f.fix for f in result.findings))
    path = tmp_path_factory.mktemp("fix") / "train.py"
    path.write_text(source)
    before = engine.check_file(str(path), EVERYTHING)
    with within(DEADLINE_S * 3):
        after, _ = fix_file(before, EVERYTHING, unsafe=True)
    fixed = path.read_text()
    ast.parse(fixed)
    again = engine.check_source(fixed, str(path), EVERYTHING)
    assert again.findings == after.findings
    gained = _codes(again.findings) - _codes(before.findings)
    assert not gained, (source, fixed, again.findings)


@settings(PROFILE, max_examples=max(EXAMPLES // 3, 8))
@given(training_loops(), st.sampled_from(["\r\n", "\r"]))
def test_line_endings_do_not_change_the_findings(source, ending):
    lf = _check(source)
    other = _check(source.replace("\n", ending))
    assert not other.errors
    assert [(f.code, f.span) for f in other.findings] == [(f.code, f.span) for f in lf.findings]


# Found by GRADLINT_FUZZ=long: moving the inner loop's step after its backward (GL007's fix)
# puts the outer loop's clip before a backward whose gradients the step now uses, and GL005
# appeared.  A fix is now kept only when the file has strictly fewer findings and none new,
# so that fix is dropped (or another one taken) and nothing is unmasked.
UNMASKED_BY_FIX = HEADER + (
    "for x in loader:\n"
    "    opt.zero_grad()\n"
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    "    for x in loader:\n"
    "        opt.step()\n"
    "        loss.backward()\n"
)


def test_fix_of_a_step_before_backward_does_not_unmask_a_clip(tmp_path):
    from gradlint.edit.fix_files import fix_file

    path = tmp_path / "train.py"
    path.write_text(UNMASKED_BY_FIX)
    before = engine.check_file(str(path), EVERYTHING)
    assert "GL007" in [f.code for f in before.findings]
    after, fixing = fix_file(before, EVERYTHING, unsafe=True)
    assert fixing is not None
    assert not _codes(after.findings) - _codes(before.findings), after.findings


# --- mutated files through the command line (issue 34) ----------------------------------------
#
# The fixtures, damaged the ways real files are: truncated, bytes flipped, nesting driven past
# every parser's limit, odd encodings and BOMs, notebooks with broken JSON and broken cells.
# One `gradlint` process checks a directory of them with -j 1 (a native crash is then the
# death of the run, not one worker's), twice (cold and from the cache): no traceback, no
# signal death, no internal error, and each input exactly one result, its findings or one
# error.  A fixed seed per batch (GRADLINT_FUZZ=long: more inputs and a new seed each run,
# printed so that a failure can be replayed with GRADLINT_FUZZ_SEED).

import json  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MUTANTS_PER_BATCH = 300 if LONG else 100
BATCHES = 3


def _fixture_sources() -> list[bytes]:
    found = []
    for folder, _, names in sorted(os.walk(os.path.join(ROOT, "fixtures"))):
        for name in sorted(names):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as handle:
                    found.append(handle.read())
    return found


def _deep(rng: random.Random) -> str:
    n = rng.choice([150, 201, 999, 1001, 3000, 12000])
    return rng.choice([
        lambda: "x = " + "(" * n + "1" + ")" * n,
        lambda: "x = " + "[" * n + "]" * n,
        lambda: "x = " + " and ".join(["a"] * n),
        lambda: "x = " + "-" * n + "1",
        lambda: "x = a" + "[0]" * min(n, 3000),
        lambda: "x = " + "f(" * n + ")" * n,
        lambda: "x = " + "not " * n + "a",
        lambda: "\n".join(" " * i + "if a:" for i in range(min(n, 120))) + "\n" + " " * min(n, 120) + "pass",
        lambda: "x = " + "{1: " * n + "1" + "}" * n,
        lambda: "x = " + "lambda: " * n + "1",
        lambda: 'x = f"' + "{" * min(n, 300) + "a" + "}" * min(n, 300) + '"',
    ])()


def _mutate_python(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(9)
    if kind == 0:  # truncated anywhere, even inside a multi-byte character
        return data[: rng.randrange(len(data) + 1)]
    if kind == 1:  # bytes flipped
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if out:
                out[rng.randrange(len(out))] ^= rng.randint(1, 255)
        return bytes(out)
    if kind == 2:  # deep nesting beside the training loop
        lines = data.split(b"\n")
        at = rng.randrange(len(lines) + 1)
        return b"\n".join(lines[:at] + [_deep(rng).encode()] + lines[at:])
    if kind == 3:  # a BOM, and maybe a coding line that contradicts it
        return b"\xef\xbb\xbf" + rng.choice([b"", b"# coding: latin-1\n", b"# -*- coding: utf-8 -*-\n"]) + data
    if kind == 4:  # a declared codec that may fail while decoding
        codec = rng.choice([b"punycode", b"utf-7", b"idna", b"rot13", b"uu_codec", b"utf-16", b"cp1252", b"bogus", b"latin-1"])
        return b"# coding: " + codec + b"\n" + data + rng.choice([b"", b"# caf\xe9 \xff\xfe\n"])
    if kind == 5:  # UTF-16 with its BOM, as some Windows editors save
        return data.decode("utf-8", "replace").encode("utf-16")
    if kind == 6:  # line ends and separators Python and str.splitlines count differently
        separator = rng.choice([b"\r", b"\r\n", b"\x0c", "\u2028".encode(), "\x85".encode(), b"\x1c"])
        lines = data.split(b"\n")
        at = rng.randrange(len(lines))
        lines[at] = lines[at] + b"  # " + separator + b" tail"
        return (b"\r" if rng.random() < 0.3 else b"\n").join(lines)
    if kind == 7:  # NUL bytes, invalid UTF-8, lone surrogates
        junk = rng.choice([b"\x00", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xff"])
        at = rng.randrange(len(data) + 1)
        return data[:at] + junk + data[at:]
    return _mutate_python(rng, _mutate_python(rng, data))  # two of the above


def _notebook(rng: random.Random, data: bytes) -> dict:
    """The fixture as a notebook: its text split into code cells at blank lines, with markdown
    and outputs between them."""
    text = data.decode("utf-8", "replace")
    chunks = [c for c in text.split("\n\n") if c.strip()] or [text]
    cells = []
    for chunk in chunks:
        if rng.random() < 0.2:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": "# notes\n"})
        lines = chunk.splitlines(keepends=True)
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": None,
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}],
                      "source": lines if rng.random() < 0.7 else chunk})
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _mutate_notebook(rng: random.Random, data: bytes) -> bytes:
    notebook = _notebook(rng, data)
    cells = notebook["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    kind = rng.choice([0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    if kind == 0:  # a cell that does not parse
        rng.choice(code)["source"] = "for x in :\n    pass\n"
    elif kind == 1:  # a cell nested past the parsers' limits (3,000 brackets segfaulted the run)
        rng.choice(code)["source"] = (_deep(rng) if rng.random() < 0.5 else "x = " + "(" * 3000 + ")" * 3000) + "\n"
    elif kind == 2:  # an output nested deep (a RecursionError in the JSON reader)
        rng.choice(code)["outputs"] = json.loads("[" * 50 + "]" * 50)  # made deep below, in the text
    elif kind == 3:  # sources of odd types, cells of odd shapes
        cell = rng.choice(code)
        cell["source"] = rng.choice([None, 3, ["x = 1\n", 5, None], {"a": 1}, "", ["%%bash\n", "ls\n"], "  x = 1\n  y = 2\n"])
        cells.append(rng.choice([None, 3, "cell", [], {"cell_type": "code"}, {"cell_type": 7, "source": "x"}]))
    elif kind == 4:  # magics and shell lines inside the loop
        cell = rng.choice(code)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = "%matplotlib inline\n!pip install x \\\n  y\n" + source + "\nmodel?\nfiles = !ls\n"
    elif kind == 5:
        notebook["cells"] = rng.choice([None, {}, "cells", 1])
    text = json.dumps(notebook, indent=rng.choice([None, 1]))
    if kind == 2:
        depth = rng.choice([1000, 5000, 100_000])
        text = text.replace('"outputs": [[', '"outputs": ' + "[" * depth + "[[", 1).replace("]]", "]]" + "]" * depth, 1)
    raw = text.encode("utf-8")
    if kind == 6:  # truncated JSON
        raw = raw[: rng.randrange(len(raw) + 1)]
    elif kind == 7:  # bytes flipped in the JSON
        out = bytearray(raw)
        for _ in range(rng.randint(1, 6)):
            out[rng.randrange(len(out))] ^= rng.randint(1, 255)
        raw = bytes(out)
    elif kind == 8:  # a BOM, or another encoding
        raw = rng.choice([b"\xef\xbb\xbf" + raw, text.encode("utf-16"), text.encode("latin-1", "replace")])
    elif kind == 9:  # not a notebook at all
        raw = rng.choice([b"", b"[]", b"null", b"{}", b'{"cells": 1}', b"1" * 5000, b'"' + b"\\u0000" * 10 + b'"'])
    return raw


def mutants(seed: int, count: int) -> list[tuple[str, bytes]]:
    rng = random.Random(seed)
    sources = _fixture_sources()
    out = []
    for i in range(count):
        data = rng.choice(sources)
        if rng.random() < 0.3:
            out.append((f"m{i:04d}.ipynb", _mutate_notebook(rng, data)))
        else:
            out.append((f"m{i:04d}.py", _mutate_python(rng, data)))
    return out


def _seed(batch: int) -> int:
    chosen = os.environ.get("GRADLINT_FUZZ_SEED")
    if chosen:
        return int(chosen) + batch
    return (random.SystemRandom().randrange(1 << 30) if LONG else 34_000) + batch


def _run(folder, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gradlint", "-j", "1", "--output-format", "json", "--cache-dir", str(folder / ".cache"),
         "--file-timeout", "60", *args, "."],
        cwd=folder, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.parametrize("batch", range(BATCHES))
def test_mutated_files_never_crash_the_run_and_each_gets_one_result(tmp_path, batch):
    seed = _seed(batch)
    inputs = dict(mutants(seed, MUTANTS_PER_BATCH))
    for name, data in inputs.items():
        (tmp_path / name).write_bytes(data)
    for attempt in ("cold", "cached"):
        proc = _run(tmp_path)
        where = f"seed {seed} ({attempt}): GRADLINT_FUZZ_SEED={seed - batch} replays this batch"
        assert proc.returncode in (0, 1), f"{where}: exit {proc.returncode}\n{proc.stderr[-3000:]}"  # < 0: a signal
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, f"{where}\n{proc.stderr[-3000:]}"
        report = json.loads(proc.stdout or "{}")
        if attempt == "cold":
            first = report
        else:
            assert report == first, where  # the cache gives back what was found
        errors = collections.defaultdict(list)
        for error in report.get("errors", []):
            errors[os.path.basename(error["path"])].append(error)
        findings = collections.Counter(os.path.basename(f["path"]) for f in report.get("findings", []))
        assert set(errors) | set(findings) <= set(inputs), where
        for name in inputs:
            whole = [e for e in errors[name] if not e["message"].endswith("the other cells were checked")]
            assert len(whole) <= 1, (where, name, whole)
            if whole:  # one error is the file's one result
                assert whole[0]["kind"] in ("syntax-error", "read-error"), (where, name, whole)
                assert not findings[name] and errors[name] == whole, (where, name, errors[name])
        unchecked = {name for name, found in errors.items()
                     if any(not e["message"].endswith("the other cells were checked") for e in found)}
        assert report["files_not_checked"] == len(unchecked), where
        assert report["files_checked"] + report["files_not_checked"] == len(inputs), where
