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
