"""How many paths a loop may have before it is too tangled to judge: a number that grows with
the loop's size (flow.PATHS_PER_NODE), so a big HF-style Trainer loop is judged, while the work
stays bounded by the loop's size on any input."""

import pytest

from gradlint.check.engine import check_source
from gradlint.model import flow
from gradlint.options.settings import Settings


def findings(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in check_source(source, "t.py", Settings.default()).findings]


def settings_loop(settings: int, bug: bool) -> str:
    """A loop whose backward, clip and step each come in a variant per independent setting."""
    lines = ["import torch", "scaler = torch.amp.GradScaler('cpu')", "for step, (x, y) in enumerate(loader):", "    opt.zero_grad()"]
    lines += ["    loss = f(x, y)", "    scaler.scale(loss).backward()"]
    if not bug:
        lines.append("    scaler.unscale_(opt)")
    for i in range(settings):
        lines += [f"    if setting_{i}:", f"        torch.nn.utils.clip_grad_norm_(model.parameters(), {i + 1}.0)"]
        lines += [f"    if log_{i} and step % 10 == 0:", "        print(step)"]
    lines += ["    scaler.step(opt)", "    scaler.update()"]
    return "\n".join(lines) + "\n"


def test_the_limit_grows_with_the_loop(monkeypatch):
    """fixtures/gl006's HF-style Trainer: 66 paths through 39 nodes, over the old fixed 64."""
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gl006", "wrong_trainer_settings_clip_scaled_gradients.py")
    source = open(path, encoding="utf-8").read()
    counted = []
    original = flow.iteration_paths

    def counting(loop):
        found = original(loop)
        counted.append(None if found is None else len(found))
        return found

    monkeypatch.setattr(flow, "iteration_paths", counting)
    assert findings(source) == [(64, "GL006")]
    assert counted and counted[0] > flow.MAX_PATHS
    monkeypatch.setattr(flow, "PATHS_PER_NODE", 0)  # the old fixed limit: the loop was never judged
    counted.clear()
    assert findings(source) == [] and counted == [None]


def test_a_loop_of_many_independent_tests_stops_early_and_says_nothing():
    """2**40 paths: the enumeration stops at the loop's bound (its size), it does not grow
    with the paths; the loop is too tangled to judge, so no rule speaks."""
    source = settings_loop(40, bug=True)
    seen = []
    original = flow._run

    def counting(run, nodes, states):
        out = original(run, nodes, states)
        seen.append(len(out))
        return out

    flow._run = counting
    try:
        assert findings(source) == []
    finally:
        flow._run = original
    # never more states than the bound of this loop's size (its 2 + 2 x 40 nodes and a few)
    assert seen and max(seen) <= flow.PATHS_PER_NODE * 100


@pytest.mark.parametrize("exclusive, expected", [(True, 1), (False, 2)])
def test_clips_that_are_alternatives_give_one_finding(exclusive, expected):
    """One missing unscale_ before clips of which one iteration runs one (`if ...: clip_a
    else: clip_b`) is one bug: one finding, on the first, with the other as a related place.
    Two clips that both run are two calls on scaled gradients: two findings."""
    second = "    else:\n" if exclusive else "    if other:\n"
    source = (
        "import torch\nscaler = torch.amp.GradScaler('cpu')\nfor x, y in loader:\n    opt.zero_grad()\n"
        "    scaler.scale(f(x, y)).backward()\n    if hasattr(opt, 'clip_grad_norm'):\n        opt.clip_grad_norm(1.0)\n"
        + second + "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(opt)\n    scaler.update()\n"
    )
    result = check_source(source, "t.py", Settings.default())
    assert [f.code for f in result.findings] == ["GL006"] * expected
    assert result.findings[0].line == 7
    if exclusive:
        assert [r.span.line for r in result.findings[0].related] == [5, 9]


def test_a_trainer_loop_with_many_logging_ifs_is_judged(monkeypatch):
    """fixtures/gl006's Trainer-like loop with logging / evaluation / saving ifs (no gradient
    event: they add no path) around backward, clip and step settings: 89 paths, over the old
    fixed 64, so its clip before `scaler.unscale_` was never reported; the twin is silent."""
    import os

    folder = os.path.join(os.path.dirname(__file__), "..", "fixtures", "gl006")
    counted = []
    original = flow.iteration_paths

    def counting(loop):
        found = original(loop)
        counted.append(None if found is None else len(found))
        return found

    monkeypatch.setattr(flow, "iteration_paths", counting)
    for name, expected in (("wrong_trainer_loop_logging_ifs_clip_before_unscale.py", [(59, "GL006")]),
                           ("right_trainer_loop_logging_ifs_unscale_then_clip.py", [])):
        counted.clear()
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            assert findings(handle.read()) == expected, name
        assert counted == [89], name  # judged (not None), and more than the old fixed limit


@pytest.mark.parametrize("events", [300])
def test_hundreds_of_sequential_ifs_each_with_an_event_stop_at_the_bound(events):
    """A generated loop of hundreds of independent ifs, each holding a clip: 2**300 paths.  The
    enumeration must return (the loop is too tangled: nothing is said), and the states it ever
    holds stay under the bound of the loop's size, not the number of paths."""
    source = settings_loop(events, bug=True)
    seen = []
    original = flow._run

    def counting(run, nodes, states):
        out = original(run, nodes, states)
        seen.append(len(out))
        return out

    flow._run = counting
    try:
        assert findings(source) == []
    finally:
        flow._run = original
    assert max(seen, default=0) <= flow.PATHS_PER_NODE * (2 * events + 10)
