"""A new rule is written in one file: this one.

GL190 (advice, a throwaway example) is defined here, with its metadata, samples, check, fix and
run-time criterion, and registered; nothing else in gradlint names it.  Each test shows that one
part of gradlint picks it up: the registry and selection, the checker, `--fix`, the generated
docs page, verify's replay and gradlint.guard's live one (issue 31: "a new rule written as an
example in a test touches one file").
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

from gradlint.check.engine import check_source
from gradlint.fix import move
from gradlint.fix.session import fix_source
from gradlint.core.events import B, S, Z
from gradlint.rules import registry
from gradlint.rules.base import RawFinding
from gradlint.rules.registry import Criterion, Invalid, Rule, claimed
from gradlint.options.settings import Settings
from gradlint.verify.verdicts import CONFIRMED, Analysis, Run, judge
from marks import expected_marks, found_marks

ROOT = Path(__file__).resolve().parent.parent
CODE = "GL190"


# --- the rule: everything a rule module holds ------------------------------------------------


def check(file):
    """A clear right after the step (advice: clear before the backward, where a reader looks)."""
    for loop in file.loops:
        events = list(loop.events)
        for step, clear in zip(events, events[1:]):
            if step.kind == S and clear.kind == Z and clear.key not in claimed(file, loop, CODE):
                yield RawFinding(CODE, f"{clear.text} runs right after {step.text}", clear, ((step, "the step"),), loop)


def fixes(raw, file):
    """Move the clear before the first backward of its loop."""
    backward = next((e for e in raw.loop.events if e.kind == B), None)
    if backward is None:
        return []
    return [move(file.context, raw.event, backward, after=False, description=f"Move {raw.event.text} before {backward.text}")]


def runtime(replay, index, event):
    """At run time: a clear whose previous event was a step."""
    if index and replay.events[index - 1].kind == "S":
        replay.detect(CODE, event, f"{replay.call(event)} ran right after {replay.call(replay.events[index - 1])}")


WRONG = "for x, y in loader:\n    f(x, y).backward()\n    opt.step()\n    opt.zero_grad()  # expect: GL190\n"
FIXED = "for x, y in loader:\n    opt.zero_grad()  # expect: GL190\n    f(x, y).backward()\n    opt.step()\n"

RULE = Rule(
    code=CODE,
    name="clear-after-step",
    summary="zero_grad() right after step() instead of before the backward.",
    rationale="An example rule for gradlint's tests: clearing before the backward reads better.",
    wrong=WRONG.replace("  # expect: GL190", ""),
    right=FIXED.replace("  # expect: GL190", ""),
    default=False,
    check=check,
    fixes=fixes,
    fix="Safe: moves the clear before the backward().",
    criterion=Criterion(on="Z", detect=runtime, reported_on="Z", followed_by="S"),
    valid=("for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n    opt.step()\n",),
    invalid=(Invalid(WRONG, fixed=FIXED),),
)


@pytest.fixture
def registered():
    registry.register(RULE)
    yield RULE
    registry.unregister(CODE)


# --- what the rest of gradlint does with it ---------------------------------------------------


def test_it_is_registered_off_by_default_and_selectable(registered):
    assert registry.rules_by_code()[CODE] is RULE
    assert CODE in registry.all_codes() and CODE not in registry.default_codes()
    assert CODE in registry.OFF_BY_DEFAULT and registry.NAMES[CODE] == "clear-after-step"
    assert registry.expand(["GL19"]) == {CODE}
    assert CODE not in Settings.default().select


def test_gone_once_unregistered(registered):
    registry.unregister(CODE)
    assert CODE not in registry.all_codes() and CODE not in registry.rules_by_code()
    registry.register(RULE)


def test_it_is_checked_on_its_own_samples(registered):
    settings = Settings(select=frozenset({CODE}))
    (sample,) = RULE.invalid
    result = check_source(sample.source, "t.py", settings)
    assert found_marks(result.findings) == expected_marks(sample.source) == [(4, CODE)]
    assert check_source(RULE.valid[0], "t.py", settings).findings == []


def test_its_fix_gives_the_pinned_text(registered):
    settings = Settings(select=frozenset({CODE}))
    (sample,) = RULE.invalid
    outcome = fix_source(sample.source, lambda text: check_source(text, "t.py", settings), unsafe=False)
    assert outcome.text == sample.fixed and outcome.result.findings == []


def test_its_docs_page_is_generated_from_its_metadata(registered):
    spec = importlib.util.spec_from_file_location("gen_rule_docs", ROOT / "scripts" / "gen_rule_docs.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    page = generator.pages()[f"{CODE}.md"]
    assert page.splitlines()[2] == f"# {CODE} clear-after-step"
    assert "[tests/test_new_rule.py](../../tests/test_new_rule.py)" in page  # the file that defines it
    for text in (RULE.summary, RULE.rationale, RULE.fix, WRONG.strip(), FIXED.strip(), "off: enable it",
                 "## At run time", "a clear whose previous event was a step"):
        assert text in page
    assert f"[{CODE}]({CODE}.md)" in generator.pages()["index.md"]


def test_verify_asks_its_criterion(registered):
    home = "/train.py"
    records = [{"type": "start", "ok": True, "file": home}, {"type": "param", "pid": 1, "name": "w", "oid": 1}]
    state = {"1": {"norm": 1.0, "sum": 1.0, "zero": False}}
    for run in range(2):
        for kind, line, extra in (("B", 2, {"state": state}), ("S", 3, {"oid": 1, "state": state}), ("Z", 4, {"oid": 1, "state": {"1": None}})):
            records.append({"type": "event", "kind": kind, "sites": [[home, line, "<module>"]], "text": kind,
                            "params": [1], **extra})
    records.append({"type": "end", "reason": "completed"})
    run = Run.from_records(records)
    assert [(d.code, d.line, d.count) for d in Analysis(run, home).analyse()] == [(CODE, 4, 2)]
    (finding,) = check_source(RULE.invalid[0].source, home, Settings(select=frozenset({CODE}))).findings
    verdicts, runtime_only = judge([finding], run, home)
    assert [v.verdict for v in verdicts] == [CONFIRMED] and runtime_only == []


def _clear_right_after_each_step(torch):
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        opt.zero_grad()  # GL190 at run time


@pytest.mark.xdist_group("imports_torch")  # torch in this process: on one worker, not on each
def test_the_guard_asks_its_criterion(registered):
    """gradlint.guard replays the user's run live with the same criteria as verify (issue 46):
    the new rule is reported inside a real run, on the user's line, once."""
    torch = pytest.importorskip("torch")
    import gradlint.guard as guard

    lines, start = inspect.getsourcelines(_clear_right_after_each_step)
    line = next(start + i for i, text in enumerate(lines) if "# GL190 at run time" in text)
    with guard.watch(mode="log") as reports:
        _clear_right_after_each_step(torch)
    assert [(r.code, r.path, r.line) for r in reports] == [(CODE, __file__, line)]
    registry.unregister(CODE)
    try:
        with guard.watch(mode="log") as reports:
            _clear_right_after_each_step(torch)
        assert reports == []  # the right loop of every other rule
    finally:
        registry.register(RULE)


def test_nothing_else_in_gradlint_names_it():
    """The one file: no table, registry entry or docs page outside this test holds the code."""
    mentions = [path for folder in ("gradlint", "scripts", "docs", "benchmarks")
                for path in (ROOT / folder).rglob("*") if path.is_file() and path.suffix in (".py", ".md", ".txt")
                and CODE in path.read_text(encoding="utf-8", errors="replace")]
    assert mentions == []


def test_a_rule_that_supersedes_it_takes_its_calls(registered):
    """Declared, not imported: GL191 says it supersedes GL190 and which calls it claims; GL190
    leaves those alone whether or not GL191 is selected."""
    taker = Rule(
        code="GL191", name="takes-the-clears", summary="An example that claims every clear.", rationale="-",
        wrong="", right="", default=False, check=lambda file: iter(()), supersedes=(CODE,),
        claims=lambda file, loop: {e.key for e in loop.events if e.kind == Z},
    )
    settings = Settings(select=frozenset({CODE}))
    assert check_source(WRONG, "t.py", settings).findings != []
    registry.register(taker)
    try:
        assert check_source(WRONG, "t.py", settings).findings == []
    finally:
        registry.unregister("GL191")
    assert check_source(WRONG, "t.py", settings).findings != []


def test_supersedes_needs_claims():
    with pytest.raises(ValueError, match="claims"):
        Rule(code="GL192", name="x", summary="", rationale="", wrong="", right="", default=False,
             check=lambda file: iter(()), supersedes=(CODE,))
