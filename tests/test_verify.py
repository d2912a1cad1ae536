"""`gradlint verify`: the seed trace, the special fixtures, and scripts that misbehave.

Every run goes through the real CLI in a subprocess (the verifier's child
imports torch; the gradlint process must not).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from installed import require

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERIFY_FIXTURES = os.path.join(ROOT, "fixtures", "verify")
SCRIPTS = os.path.join(ROOT, "tests", "verify_scripts")


def gradlint(*args, cwd=ROOT, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "gradlint", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def verify_json(*args, cwd=ROOT):
    result = gradlint("verify", "--format", "json", *args, cwd=cwd)
    assert result.returncode in (0, 1, 2), result.stderr
    report = json.loads(result.stdout)
    assert report["exit_code"] == result.returncode
    return result.returncode, report


# --- the seed example ---------------------------------------------------------------

SEED_STATES = [
    ("optimizer", {"model.weight": "None", "model.bias": "None"}),
    ("backward", {"model.weight": "norm 3.0538  sum -3.8573", "model.bias": "norm 1.2983  sum -1.2983"}),
    ("step", {"model.weight": "norm 3.0538  sum -3.8573", "model.bias": "norm 1.2983  sum -1.2983"}),
    ("clear", {"model.weight": "None", "model.bias": "None"}),
    ("backward", {"model.weight": "norm 2.3521  sum -2.9601", "model.bias": "norm 0.8466  sum -0.8466"}),
    ("clear", {"model.weight": "zero (norm 0.0000)", "model.bias": "zero (norm 0.0000)"}),
]


def parse_trace(text: str):
    """[(kind, line, {param: state})] from `--trace` output."""
    events = []
    for line in text.splitlines():
        head = re.match(r"^  #\d+\s+line (\d+)\s+(\w+)\s", line)
        if head:
            events.append((head.group(2), int(head.group(1)), {}))
            continue
        state = re.match(r"^ {9}(\S+)\s{2,}(.+)$", line)
        if state and events:
            events[-1][2][state.group(1)] = state.group(2).strip()
    return events


def test_seed_trace_reproduces_the_known_gradient_states():
    result = gradlint("verify", "--trace", "fixtures/verify/seed_trace.py")
    assert result.returncode == 0, result.stdout + result.stderr
    events = parse_trace(result.stdout)
    assert [(kind, states) for kind, _, states in events] == SEED_STATES
    assert [line for _, line, _ in events] == [15, 18, 19, 20, 22, 23]
    assert "No static findings" in result.stdout


def test_seed_trace_json_events_carry_the_same_numbers():
    code, report = verify_json("--trace", "fixtures/verify/seed_trace.py")  # sums only when tracing
    assert code == 0
    backward = [e for e in report["events"] if e["kind"] == "B"]
    assert round(backward[0]["state"]["model.weight"]["norm"], 4) == 3.0538
    assert round(backward[1]["state"]["model.bias"]["sum"], 4) == -0.8466
    assert report["events"][-1]["state"]["model.weight"]["zero"] is True


# --- verdicts on the special fixtures ----------------------------------------------------


def test_bug_in_another_module_is_judged_where_it_stands():
    # verify reads the script with its project, as `gradlint SCRIPT` does: the helper's bug is a
    # finding on the helper's backward, and the run confirms it there
    code, report = verify_json("fixtures/verify/runtime_only_train.py")
    assert code == 1
    assert report["runtime_only"] == []
    (verdict,) = report["verdicts"]
    assert (verdict["code"], verdict["verdict"]) == ("GL001", "confirmed")
    assert verdict["path"].endswith("hidden_step.py") and verdict["line"] == 8


def test_runtime_only_bug_behind_a_module_named_at_run_time():
    code, report = verify_json("fixtures/verify/runtime_only_by_a_name_built_at_run_time.py")
    assert code == 1
    assert report["verdicts"] == []
    (only,) = report["runtime_only"]
    assert only["code"] == "GL001"
    assert only["path"].endswith("step_by_name.py") and only["line"] == 8
    assert "used gradients accumulated over backward passes at fixtures/verify/step_by_name.py:8 in iterations 1 and 2" in only["evidence"]


def test_finding_whose_bug_path_never_ran_is_not_reached_with_the_missing_line():
    # The clip ran 4 times, but the backward after it (behind a flag that is off) never did: the
    # bug's path did not run, so the run cannot refute it.
    code, report = verify_json("fixtures/verify/not_reproduced_flag_off.py")
    assert code == 0
    (verdict,) = report["verdicts"]
    assert (verdict["code"], verdict["line"], verdict["verdict"]) == ("GL005", 18, "not reached")
    assert "line 20" in verdict["evidence"] and "never ran" in verdict["evidence"]
    assert report["runtime_only"] == []


def test_confirmed_evidence_names_step_lines_and_iterations():
    code, report = verify_json("fixtures/gl001/wrong_no_zero_grad.py")
    assert code == 1
    (verdict,) = report["verdicts"]
    assert verdict["verdict"] == "confirmed"
    assert re.search(r"step 2 of \w+ at line \d+ used gradients accumulated over backward passes at line "
                     rf"{verdict['line']} in iterations 1 and 2", verdict["evidence"])


def test_clip_after_step_evidence_has_the_norms():
    code, report = verify_json(os.path.join(SCRIPTS, "clip_after_step.py"))
    assert code == 1
    (verdict,) = report["verdicts"]
    assert verdict["verdict"] == "confirmed"
    assert re.search(r"ran after `opt.step\(\)` at line 13 .*: norm [\d.]+ was clipped to 1 after the update",
                     verdict["evidence"])


# --- scripts that misbehave ----------------------------------------------------------------


def test_exception_before_the_step_is_not_reached_with_the_error_and_line():
    code, report = verify_json("fixtures/verify/raises_before_step.py")
    assert code == 2  # could not verify
    (verdict,) = report["verdicts"]
    assert verdict["verdict"] == "not reached"
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in verdict["evidence"]
    assert "at line 12" in verdict["evidence"]
    assert report["run"]["reason"] == "exception"


def test_sys_exit_is_not_reached_with_the_exit():
    code, report = verify_json("fixtures/verify/exits_before_step.py")
    assert code == 2
    (verdict,) = report["verdicts"]
    assert verdict["verdict"] == "not reached"
    assert "sys.exit(3) at line 15" in verdict["evidence"]


def test_hang_is_stopped_by_the_timeout():
    code, report = verify_json("--timeout", "2", "fixtures/verify/hangs_before_step.py")
    assert code == 2
    assert "before the first optimizer step" in report["run"]["unverified"]
    (verdict,) = report["verdicts"]
    assert verdict["verdict"] == "not reached"
    assert "timed out after 2 s" in verdict["evidence"]


def test_hard_hang_is_killed_by_the_parent():
    from gradlint.verify.runner import run_child

    run = run_child(os.path.join(SCRIPTS, "ignores_alarm.py"), timeout=1, grace=4)
    assert run.end["reason"] == "timeout" and run.end.get("killed") is True


def test_c_level_abort_does_not_take_gradlint_down():
    code, report = verify_json(os.path.join(SCRIPTS, "aborts.py"))
    assert code == 0
    assert report["run"]["reason"] == "crash"
    assert "SIGABRT" in report["run"]["summary"]
    assert report["run"]["steps"] == 1


def test_script_arguments_after_double_dash():
    code, report = verify_json(os.path.join(SCRIPTS, "reads_argv.py"), "--", "--lr", "0.1", "--batches", "2")
    assert code == 0
    assert report["run"]["reason"] == "completed" and report["run"]["steps"] == 2
    code, report = verify_json(os.path.join(SCRIPTS, "reads_argv.py"))
    assert code == 2
    assert report["run"]["reason"] == "exit" and report["run"]["end"]["code"] == 2
    assert "give the script's arguments after --" in report["run"]["unverified"]


def test_script_that_swallows_the_budget_still_stops_stepping():
    code, report = verify_json(os.path.join(SCRIPTS, "catches_everything.py"))
    assert code == 0
    assert report["run"]["steps"] == 5
    assert report["run"]["reason"] == "steps"


def test_steps_flag_bounds_the_run():
    code, report = verify_json("--steps", "2", "fixtures/gl001/wrong_no_zero_grad.py")
    assert report["run"]["steps"] == 2 and report["run"]["reason"] == "steps"
    assert report["verdicts"][0]["verdict"] == "confirmed"


def test_module_function_entry_point():
    code, report = verify_json("entry_module:train", cwd=SCRIPTS)
    assert code == 1
    (verdict,) = report["verdicts"]
    assert (verdict["code"], verdict["line"], verdict["verdict"]) == ("GL001", 13, "confirmed")


# --- usage and the torch-free parent ------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["verify", "no_such_script.py"], "no such script"),
        (["verify", "--steps", "0", "fixtures/verify/seed_trace.py"], "--steps"),
        (["verify", "--format", "xml", "fixtures/verify/seed_trace.py"], "invalid choice"),
        (["verify"], "required"),
        (["verify", "no_such_module_xyz:main"], "no module named"),
        (["verify", "tests.verify_scripts.entry_module:no_such_function"], "has no function"),
    ],
)
def test_usage_errors_exit_2(args, message):
    result = gradlint(*args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_syntax_error_cannot_run(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("for x in :\n    pass\n")
    result = gradlint("verify", str(script))
    assert result.returncode == 2
    assert "syntax error at line 1" in result.stderr


def test_without_torch_says_how_to_install_and_never_imports_it():
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'torch' else real(name, *a)\n"
        "from gradlint.commands.cli import main\n"
        "rc = main(['verify', 'fixtures/verify/seed_trace.py'])\n"
        "print('rc', rc, 'torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "rc 2 False" in result.stdout
    assert "pip install 'torch-gradlint[verify]'" in result.stderr


def test_the_gradlint_process_never_imports_torch():
    code = (
        "import sys\n"
        "from gradlint.commands.cli import main\n"
        "rc = main(['verify', '--format', 'json', 'fixtures/gl001/wrong_no_zero_grad.py'])\n"
        "print('RESULT', rc, 'torch' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "RESULT 1 False" in result.stdout


def test_probe_reads_an_assignment_from_the_same_gradient_as_the_checker():
    from gradlint.verify.probes import _statement_grad_use  # (imports torch)

    assert _statement_grad_use("p.grad = p.grad + noise") == "adds"
    assert _statement_grad_use("p.grad = g if p.grad is None else g + p.grad") == "adds"
    assert _statement_grad_use("p.grad += g") == "adds"
    assert _statement_grad_use("p.grad *= s") == "changes"
    assert _statement_grad_use("w.grad = w.grad.data.clamp(-1, 1)") == "changes"
    assert _statement_grad_use("p.grad = torch.zeros_like(p.grad)") is None
    assert _statement_grad_use("p.grad = p.grad.new_zeros(p.grad.shape)") is None
    assert _statement_grad_use("p.grad = q.grad * 2") is None
    assert _statement_grad_use("p.grad = (") is None
