"""gradlint.guard under DistributedDataParallel (with `no_sync()`) and FSDP2 (`fully_shard`), two
CPU processes on the gloo backend: one report per rank, none on a right run, and a rank that
raises ends the run (no deadlock).  Each run is a child process with a timeout, so that a hang
fails the test instead of holding the suite.  Each run costs about a minute on two loaded cores
(three interpreters import torch): the default run has one wrong run per stack, the slow set
the right runs and the raising rank."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import guard_distributed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _supports_fsdp2() -> str:
    """Why FSDP2 cannot run here, or ""."""
    if not torch.distributed.is_available():
        return "torch.distributed is not available in this build"
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError as exc:
        return f"this torch has no FSDP2 (fully_shard): {exc}"
    return ""


def _spawn(tmp_path, function: str, wrong: bool, mode: str = "log", only_rank=None, timeout=240, without=None):
    """Run `guard_distributed.<function>` on 2 ranks; the spawn's outcome and each rank's reports."""
    code = (
        "import socket, sys\n"
        f"sys.path.insert(0, {HERE!r})\n"
        "import torch.multiprocessing as mp\n"
        "import guard_distributed as gd\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()\n"
        "if __name__ == '__main__':\n"
        f"    mp.spawn(gd.{function}, args=(2, port, {str(tmp_path)!r}, {wrong!r}, {mode!r}, {only_rank!r}, {without!r}), nprocs=2)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    reports = {}
    for rank in (0, 1):
        path = tmp_path / f"rank{rank}.json"
        reports[rank] = json.loads(path.read_text()) if path.exists() else None
    return run, reports


def _line(function, text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return next(start + i for i, line in enumerate(lines) if text in line)


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_ddp_no_sync_accumulation_one_report_per_rank(tmp_path):
    run, reports = _spawn(tmp_path, "ddp", wrong=True)
    assert run.returncode == 0, run.stderr[-3000:]
    line = _line(guard_distributed.ddp, "# GL002 line")
    for rank in (0, 1):
        assert [(r["code"], r["line"], r["rank"]) for r in reports[rank]] == [("GL002", line, rank)]
        assert f"[rank {rank}]" in reports[rank][0]["text"]


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
@pytest.mark.slow
def test_ddp_right_accumulation_gets_no_report(tmp_path):
    run, reports = _spawn(tmp_path, "ddp", wrong=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert reports == {0: [], 1: []}


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
@pytest.mark.slow
def test_a_rank_that_raises_ends_the_run_without_deadlock(tmp_path):
    run, reports = _spawn(tmp_path, "ddp", wrong=True, mode="raise", only_rank=0, timeout=180)
    assert run.returncode != 0
    assert "GradlintGuardError" in run.stderr and "GL002" in run.stderr and "[rank 0]" in run.stderr


@pytest.mark.skipif(bool(_supports_fsdp2()), reason=_supports_fsdp2() or "FSDP2 runs")
def test_fsdp2_step_before_backward_one_report_per_rank(tmp_path):
    run, reports = _spawn(tmp_path, "fsdp2", wrong=True)
    assert run.returncode == 0, run.stderr[-3000:]
    line = _line(guard_distributed.fsdp2, "# GL007 line")
    for rank in (0, 1):
        assert [(r["code"], r["line"], r["rank"]) for r in reports[rank]] == [("GL007", line, rank)]


@pytest.mark.skipif(bool(_supports_fsdp2()), reason=_supports_fsdp2() or "FSDP2 runs")
@pytest.mark.slow
def test_fsdp2_right_loop_gets_no_report(tmp_path):
    run, reports = _spawn(tmp_path, "fsdp2", wrong=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert reports == {0: [], 1: []}


# The part of the guard each stack's report goes through: left out (in both ranks), the wrong run
# above gets no such report.  DDP with no_sync: the accumulate hook says which parameters the
# no_sync micro-batch's backward wrote (the clear after it then throws them away).  FSDP2: the
# optimizer step hooks (its gradients are assigned by the reduce-scatter, seen at the step).
NEEDS = {"ddp": ("Watcher._hook", "# GL002 line", "GL002"), "fsdp2": ("Patches._optimizer", "# GL007 line", "GL007")}


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
@pytest.mark.slow
@pytest.mark.parametrize("stack", sorted(NEEDS))
def test_each_distributed_stacks_report_needs_its_hook(stack, tmp_path):
    if stack == "fsdp2" and _supports_fsdp2():
        pytest.skip(_supports_fsdp2())
    without, mark, code = NEEDS[stack]
    run, reports = _spawn(tmp_path, stack, wrong=True, without=without)
    assert run.returncode == 0, run.stderr[-3000:]
    line = _line(getattr(guard_distributed, stack), mark)
    for rank in (0, 1):
        assert reports[rank] is not None and (code, line) not in [(r["code"], r["line"]) for r in reports[rank]], reports


TORCHRUN_SCRIPT = """\
import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 4)).square().mean()
    loss.backward()
    opt.step()
dist.destroy_process_group()
"""


@pytest.mark.slow  # about 30 s on two loaded cores: torchrun and two ranks import torch
def test_torchrun_runs_a_script_under_the_guard_one_report_per_rank(tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(TORCHRUN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "gradlint.guard", "--mode", "log", str(script)],
        cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    reports = [line for line in run.stderr.splitlines() if "GL001 missing-zero-grad" in line]
    assert sorted("[rank 0]" in line for line in reports) == [False, True], reports
    assert all("train_ddp.py:11:" in line for line in reports), reports
