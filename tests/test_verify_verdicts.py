"""The runtime criteria on hand-written event logs (no torch, no child process)."""

from types import SimpleNamespace

from gradlint.verify.verdicts import Analysis, Run, display_path, judge

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


# --- issue 21: one bug, one verdict ---------------------------------------------------------------

def finding(code, line, related=()):
    def span(number):
        return SimpleNamespace(line=number, col=5)

    return SimpleNamespace(code=code, path=F, span=span(line), message="",
                           related=[SimpleNamespace(span=span(n), message="") for n in related])


def verdicts_of(run, *findings):
    found, runtime_only = judge(list(findings), run, F)
    return [(v.code, v.line, v.verdict) for v in found], [(d.code, d.line) for d in runtime_only], found


def test_a_clear_in_the_else_of_the_step_test_is_gl002():
    # if (i + 1) % 3 == 0: step  else: clear  -- the clear also empties what the step used
    window = [B(10), Z(21), B(10), Z(21), B(10), S(19)]
    assert codes(log(*window, *window, *window)) == [("GL002", 21)]


def test_a_clear_per_epoch_before_the_accumulating_loop_is_not_gl002():
    # 5 micro-batches, a step every 2: the epoch's clear (line 16) drops the last, partial window
    epoch = [Z(16), B(19), B(19), S(21), Z(22), B(19), B(19), S(21), Z(22), B(19)]
    assert codes(log(*epoch, *epoch, *epoch)) == []
    # the same clear, run before every micro-batch, loses every window's first micro-batch
    assert codes(log(Z(16), B(19), Z(16), B(19), S(21), Z(16), B(19), Z(16), B(19), S(21))) == [("GL002", 16)]


def test_the_iteration_a_gradient_was_written_in_counts_runs_of_its_line_not_windows():
    # the clear at line 9 drops the second and third backward passes, both of the second window
    run = log(Z(8), B(10), S(11), Z(9), B(10), B(10), Z(9), B(10), S(11))
    (detection,) = Analysis(run, F).analyse()
    assert "written by `B` at line 10 (iterations 2 and 3)" in detection.evidence


def test_the_evaluations_of_one_step_closure_are_one_run_of_its_line():
    inside = {"in_step": True}
    z = ("Z", 9, {"oid": 1, "params": [1], "state": NONE, **inside})
    b = ("B", 10, {"params": [1], "state": has(1), **inside})
    run = log(z, b, z, b, z, b, S(15), z, b, z, b, S(15))
    for event in run.events:  # the closure's events also carry the step's line below their own
        if event.raw.get("in_step"):
            event.raw["sites"].append([F, 15, "<module>"])
    found, runtime_only, full = verdicts_of(run, finding("GL003", 15))
    assert found == [("GL003", 15, "not reproduced")] and runtime_only == []
    assert full[0].evidence.startswith("line 15 ran 2 times over 2 optimizer steps")
    # a closure that never clears piles its evaluations up: the evidence counts two iterations
    piled = log(b, b, b, S(15), b, b, b, S(15))
    (detection,) = Analysis(piled, F).analyse()
    assert detection.code == "GL001" and "in iterations 1 and 2:" in detection.evidence


def test_a_detection_of_another_code_on_the_findings_call_is_the_same_bug():
    # actor: Z(25); S(26); B(27) -- GL007 on the step; the next Z(25) throws B(27) away (GL002)
    run = log(Z(25), S(26, state=NONE), B(27), Z(25), S(26, state=NONE), B(27), Z(25), S(26, state=NONE))
    assert codes(run) == [("GL002", 25), ("GL007", 26)]
    found, runtime_only, _ = verdicts_of(run, finding("GL007", 26, related=[27]))
    assert found == [("GL007", 26, "confirmed")] and runtime_only == []


def test_a_finding_of_another_code_on_the_same_call_is_confirmed_by_what_the_run_saw():
    # the only clear never ran: the run sees GL001 on the backward, the checker said GL003 on the step
    run = log(B(18), S(19), B(18), S(19), B(18), S(19))
    found, runtime_only, full = verdicts_of(run, finding("GL003", 19))
    assert found == [("GL003", 19, "confirmed")] and runtime_only == []
    assert full[0].evidence.startswith("the run saw this call's bug as GL001 at line 18")
    # a finding elsewhere does not swallow it
    found, runtime_only, _ = verdicts_of(run, finding("GL004", 30))
    assert runtime_only == [("GL001", 18)]


def test_a_clip_with_no_gradient_to_act_on_is_not_reached_with_the_clear_that_emptied_them():
    clip = ("C", 19, {"params": [1], "state": NONE, "limit": 1.0})
    run = log(B(16), Z(17), S(18, state=NONE), clip, B(16), Z(17), S(18, state=NONE), clip)
    found, _, full = verdicts_of(run, finding("GL002", 17), finding("GL004", 19))
    assert found == [("GL002", 17, "confirmed"), ("GL004", 19, "not reached")]
    assert full[1].evidence == (
        "the clip at line 19 ran 2 times but never had a gradient to act on: "
        "`Z` at line 17 had emptied them (the GL002 at line 17)"
    )
    # with a gradient there, the same path is "not reproduced"
    live = ("C", 19, {"params": [1], "state": has(1), "limit": 1.0})
    found, _, _ = verdicts_of(log(B(16), S(18), live, Z(17), B(16), S(18), live, Z(17)), finding("GL004", 19))
    assert found == [("GL004", 19, "confirmed")]


def test_optimizers_that_share_a_name_are_told_apart():
    run = Run.from_records([{"type": "names", "optimizers": {"1": "self.optimizer", "2": "self.optimizer", "3": "opt"}}])
    assert run.optimizers == {1: "self.optimizer #1", 2: "self.optimizer #2", 3: "opt"}


def test_paths_are_spelled_as_the_checker_prints_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / "lib" / "steps.py")) == "lib/steps.py"
    assert display_path("/elsewhere/steps.py") == "/elsewhere/steps.py"
    assert display_path(None) == "?"


def test_the_text_summary_counts_not_probed_as_the_json_does():
    from gradlint.verify.command import render_text

    report = {
        "file": "train.py", "static_errors": [], "verdicts": [], "runtime_only": [
            {"code": "GL001", "path": "train.py", "line": 12, "col": 9, "verdict": "runtime only",
             "evidence": "e", "times": 1}],
        "run": {"steps": 0, "summary": "the script finished", "writes": [], "unverified": None, "reason": "completed",
                "output_tail": ""},
        "summary": {"confirmed": 0, "not reproduced": 0, "not reached": 0, "not probed": 0, "runtime only": 1},
    }
    text = render_text(report, Run(), trace=False)
    assert "0 not reached, 0 not probed, 1 runtime only." in text
    assert "train.py:12:9: GL001 runtime only" in text  # a runtime-only finding has its column


def test_a_detection_goes_to_the_finding_on_its_own_call_first():
    # the run's GL004 on the clip (line 12) also names the step (line 11): the checker's GL005 on
    # the clip is that bug, the GL007 on the step is another
    clip = ("C", 12, {"params": [1], "state": has(1), "limit": 1.0, "norm": 2.0})
    run = log(B(10), S(11), clip, B(10), Z(13), S(11), clip, Z(13))
    assert ("GL004", 12) in codes(run)
    found, runtime_only, full = verdicts_of(run, finding("GL007", 11), finding("GL005", 12))
    assert ("GL005", 12, "confirmed") in found and runtime_only == []
    assert full[1].evidence.startswith("the run saw this call's bug as GL004 at line 12")


# --- issue 29: messages --------------------------------------------------------------------


def _finding(code, line, message="static message", related=()):
    return SimpleNamespace(code=code, path=F, span=SimpleNamespace(line=line, col=5), message=message,
                           related=list(related))


def test_a_gl008_verdict_names_the_schedulers_optimizer_and_its_learning_rates():
    run = log(
        ("O", 3, {"oid": 1, "params": [1], "state": NONE}), ("O", 4, {"oid": 2, "params": [2], "state": {"2": None}}),
        B(10, pid=1),
        ("L", 11, {"oid": 2, "scheduler": "sched_g", "text": "sched_g.step()", "lr_before": 0.1, "lr_after": 0.05}),
        S(12, oid=1, pids=(1,)), B(14, pid=2), S(15, oid=2, pids=(2,), state=has(2)),
        params=((1, 1), (2, 2)))
    run.optimizers = {1: "opt_d", 2: "opt_g"}
    verdicts, _ = judge([_finding("GL008", 11, "sched_g.step() runs before opt_d.step() (line 12)")], run, F)
    assert verdicts[0].verdict == "confirmed"
    assert "opt_g.step() (line 15)" in verdicts[0].message and "opt_d" not in verdicts[0].message
    assert verdicts[0].evidence == (
        "`sched_g.step()` at line 11 ran before the first opt_g.step() (line 15): opt_g's first iterations "
        "trained with lr 0.05 instead of the schedule's first 0.1, a factor of 0.5")


def test_a_gl003_verdict_cites_the_findings_own_clear():
    # two clears between the step and the next backward, neither clears p1 (another optimizer's)
    run = log(
        ("O", 3, {"oid": 1, "params": [1], "state": NONE}), ("O", 4, {"oid": 2, "params": [2], "state": {"2": None}}),
        B(10), S(11), Z(20, oid=2, pids=(2,)), Z(21, oid=2, pids=(2,)), B(10), S(11),
        params=((1, 1), (2, 2)))
    for line in (20, 21):
        verdicts, _ = judge([_finding("GL003", line)], run, F)
        assert verdicts[0].verdict == "confirmed", verdicts[0]
        assert f"`Z` at line {line} ran in between" in verdicts[0].evidence


def test_a_gl006_under_a_disabled_scaler_is_not_reached_never_not_reproduced():
    events = [B(10), ("C", 11, {"params": [1], "state": has()}), S(12)] * 3
    run = log(*events)
    verdicts, _ = judge([_finding("GL006", 11)], run, F)
    assert verdicts[0].verdict == "not reproduced"  # an enabled scaler's clean run: refuted
    run.scalers_disabled = [{"why": "its enabled argument was false at run time", "sites": [[F, 9, "<module>"]]}]
    verdicts, _ = judge([_finding("GL006", 11)], run, F)
    assert verdicts[0].verdict == "not reached"
    assert verdicts[0].evidence.startswith(
        "could not be reproduced on this device: the GradScaler used at line 9 was disabled (its enabled argument "
        "was false at run time)")


def test_a_message_of_several_lines_is_not_followed_by_a_dangling_line_number():
    from gradlint.verify.verdicts import end_reason

    run = log(B(10))
    run.end = {"reason": "exception", "message": "ValueError: first\nsecond", "file": F, "line": 8}
    assert end_reason(run, F) == "the script raised ValueError at line 8: first\nsecond"
    run.end["message"] = "ValueError: one line"
    assert end_reason(run, F) == "the script raised ValueError: one line at line 8"


def test_a_clear_of_other_parameters_between_two_updates_is_gl001_as_the_checker_reads_it():
    """`Z_g; B; S_g; Z_d; B; S_g`: the clear between the generator's two updates is the other
    network's; the generator's parameters are cleared elsewhere (at the top), so the second
    backward into used gradients is GL001, the checker's code; a clear of none of the stepped
    parameters anywhere in the run, while another network's runs, is GL003 (the wrong target)."""
    g, d = (1, 1), (2, 2)
    second_update = log(Z(9, oid=1, pids=(1,)), B(10), S(11), Z(12, oid=2, pids=(2,)), B(13), S(14),
                        params=(g, d))
    assert codes(second_update) == [("GL001", 13)]
    never_cleared = log(Z(12, oid=2, pids=(2,)), B(10), S(11), Z(12, oid=2, pids=(2,)), B(10), S(11),
                        params=(g, d))
    assert [code for code, _ in codes(never_cleared)] == ["GL003"]
    part_cleared = log(Z(9, oid=1, pids=(1, 2)), B(10, pid=2), S(11, pids=(1, 2), state=has(2)),
                       Z(12, oid=2, pids=(1,)), B(13, pid=2), S(14, pids=(1, 2), state=has(2)),
                       params=((1, 1), (2, 1)))
    assert [code for code, _ in codes(part_cleared)] == ["GL003"]  # a clear of some of them, misplaced


def test_a_finding_in_a_module_of_the_script_is_judged_at_its_own_file(tmp_path):
    """A finding stands on the misplaced call, which may be in a module the script's loop calls
    (trainer.py's clip after its step): its line is matched in that file, not in the script."""
    script, module = tmp_path / "train.py", tmp_path / "trainer.py"
    script.write_text("")
    module.write_text("")
    here, there = str(script.resolve()), str(module.resolve())

    def event(kind, line, extra):
        # the probes record the whole stack: the call in the script's loop, then the module's line
        return {"type": "event", "kind": kind, "sites": [[there, line, "train_step"], [here, 12, "<module>"]],
                "text": kind, **extra}

    records = [{"type": "start", "ok": True, "file": here}, {"type": "param", "pid": 1, "name": "p1", "oid": 1}]
    for i, (kind, line, extra) in enumerate([Z(15), B(16), S(17), ("C", 18, {"params": [1], "state": has(1)})] * 3, start=1):
        records.append({"i": i, **event(kind, line, extra)})
    records.append({"type": "end", "reason": "completed"})
    run = Run.from_records(records)
    call = SimpleNamespace(span=SimpleNamespace(line=12, col=5), message="the call", path=str(script))
    step = SimpleNamespace(span=SimpleNamespace(line=17, col=9), message="the step", path=None)
    for related in ([step, call], [step]):  # matched at its own line, not through the call's
        found = SimpleNamespace(code="GL004", path=str(module), span=SimpleNamespace(line=18, col=9), message="",
                                related=related)
        (verdict,), runtime_only = judge([found], run, here)
        assert (verdict.code, verdict.line, verdict.verdict) == ("GL004", 18, "confirmed")
        assert runtime_only == []
