"""The runtime criteria on hand-written event logs (no torch, no child process)."""

from gradlint.verify.verdicts import Analysis, Run

F = "/train.py"


def log(*events, params=((1, 1),)):
    """events: (kind, line, extra) with extra holding params/state; params: (pid, oid) pairs."""
    records = [{"type": "start", "ok": True, "file": F}]
    records += [{"type": "param", "pid": pid, "name": f"p{pid}", "oid": oid} for pid, oid in params]
    for index, (kind, line, extra) in enumerate(events, start=1):
        record = {"type": "event", "i": index, "kind": kind, "sites": [[F, line, "<module>"]], "text": kind}
        record.update(extra)
        records.append(record)
    records.append({"type": "end", "reason": "completed"})
    return Run.from_records(records)


def has(pid=1, norm=1.0):
    return {str(pid): {"norm": norm, "sum": norm, "zero": False}}


NONE = {"1": None}


def codes(run):
    return sorted((d.code, d.line) for d in Analysis(run, F).analyse())


def B(line, pid=1):
    return ("B", line, {"params": [pid], "state": has(pid)})


def S(line, oid=1, pids=(1,), state=None):
    return ("S", line, {"oid": oid, "params": list(pids), "state": state or has(pids[0])})


def Z(line, oid=1, pids=(1,)):
    return ("Z", line, {"oid": oid, "params": list(pids), "state": {str(p): None for p in pids}})


def test_missing_clear_is_gl001_on_the_backward():
    assert codes(log(B(10), S(11), B(10), S(11))) == [("GL001", 10)]


def test_piled_up_gradient_cleared_before_any_step_uses_it_is_harmless():
    # B; S; B (into the same params, e.g. another model's loss); Z; B; S
    assert codes(log(B(10), S(11), B(20), Z(30), B(10), S(11))) == []


def test_clear_between_backward_and_step_is_gl002():
    assert codes(log(B(10), Z(11), S(12, state=NONE))) == [("GL002", 11)]


def test_clear_then_a_different_backward_is_not_gl002():
    # GAN: the generator's backward wrote into D, D's clear drops it, D's own backward follows.
    assert codes(log(Z(9), B(20), Z(9), B(10), S(11))) == []


def test_closure_clears_inside_the_step_are_not_gl002():
    inside = {"in_step": True}
    z = ("Z", 9, {"oid": 1, "params": [1], "state": NONE, **inside})
    b = ("B", 10, {"params": [1], "state": has(1), **inside})
    assert codes(log(z, b, z, b, S(12))) == []


def test_step_without_backward_is_gl007():
    assert codes(log(S(5, state=NONE), B(6), Z(7), S(5, state=NONE))) == [("GL002", 7), ("GL007", 5)]


def test_scheduler_before_first_step_is_gl008():
    lr = ("L", 12, {"oid": 1, "scheduler": "sched", "state": has(1)})
    assert codes(log(B(10), lr, S(13))) == [("GL008", 12)]


def test_scheduler_told_its_epoch_is_not_gl008():
    # `sched.step(epoch)` before the first step sets the schedule's position: nothing is skipped
    lr = ("L", 12, {"oid": 1, "scheduler": "sched", "state": has(1), "positioned": True})
    assert codes(log(B(10), lr, S(13))) == []


# --- issue 12: verdicts that meet the rule contract --------------------------------------------


def test_accumulation_with_a_clear_every_iteration_is_still_gl002():
    # Z; B; Z; B; S: the loop's regular clear (it also ran with nothing to lose) drops micro-batch 1.
    assert codes(log(Z(9), B(10), Z(9), B(10), S(11))) == [("GL002", 9)]


def test_a_clear_that_only_ever_throws_away_is_a_deliberate_skip_not_gl002():
    # B; Z(skip branch); B; S: the clear at line 12 runs only to drop a bad batch.
    assert codes(log(B(10), Z(12), B(10), S(13), Z(14))) == []


def test_dropping_nan_gradients_is_not_gl002():
    nan = ("B", 10, {"params": [1], "state": {"1": {"norm": float("nan"), "sum": None, "zero": False}}})
    # the same clear site also ran quietly, so only the NaN says "nothing was meant to use them"
    assert codes(log(Z(9), B(10), S(11), Z(9), nan, Z(9), B(10), S(11))) == []
    assert codes(log(Z(9), B(10), S(11), Z(9), B(10), Z(9), B(10), S(11))) == [("GL002", 9)]


def test_clip_with_an_infinite_limit_after_the_step_only_measures():
    clip = lambda limit: ("C", 12, {"params": [1], "state": has(1), "limit": limit, "norm": 2.0})  # noqa: E731
    assert codes(log(Z(9), B(10), S(11), clip(float("inf")))) == []
    assert codes(log(Z(9), B(10), S(11), clip(1.0))) == [("GL004", 12)]


def test_parameters_are_followed_by_identity_whoever_steps_them():
    # SAM: the parameter belongs to the wrapper (oid 1); its base optimizer (oid 2) steps it.
    base_step = S(13, oid=2)
    assert codes(log(B(10), Z(11, oid=1), B(12), base_step, Z(14, oid=1))) == []
    # with no backward since the last step (by anyone), the base optimizer's step is still GL007
    assert ("GL007", 13) in codes(log(B(10), base_step, base_step))


def test_a_step_of_frozen_parameters_is_not_gl007():
    frozen = ("S", 11, {"oid": 1, "params": [1], "state": NONE, "frozen": [1]})
    assert codes(log(frozen, frozen, B(10), S(11))) == []
    unfrozen = ("S", 11, {"oid": 1, "params": [1], "state": NONE, "frozen": []})
    assert ("GL007", 11) in codes(log(unfrozen, unfrozen))


def test_a_manual_update_spread_over_several_clears_is_one_step():
    first = ("S", 12, {"oid": 0, "params": [1], "state": has(1), "manual": True, "inferred": True})
    rest = ("S", 12, {"oid": 0, "params": [2], "state": has(2), "manual": True, "inferred": True, "continued": True})
    run = log(B(10), first, rest, params=((1, 0), (2, 0)))
    assert run.steps == 1 and run.steps_by_optimizer() == {0: 1}
