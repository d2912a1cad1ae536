"""What gradlint.guard's rules cost a correct step: the replay updates each parameter tensor's
record once per event, but the rules' run-time criteria settle a correct step in a few tests,
whatever the model's size.  Counted, not timed: the bound holds on a loaded machine."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import gradlint.guard as guard  # noqa: E402
from gradlint.verify.verdicts import Analysis  # noqa: E402


def _records_read(monkeypatch, depth: int, steps: int = 12) -> int:
    """How many times the criteria read a gradient's record over `steps` correct steps (clear,
    backward, clip, step, scheduler step) of a model of `depth` layers (2 tensors each)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(depth)])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)
    x = torch.randn(2, 4)
    reads = []
    grad = Analysis.grad

    def counted(self, pid):
        reads.append(pid)
        return grad(self, pid)

    monkeypatch.setattr(Analysis, "grad", counted)
    with guard.watch(mode="raise") as reports:
        for _ in range(steps):
            opt.zero_grad()
            model(x).square().mean().backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
    monkeypatch.undo()
    assert reports == []
    return len(reads)


def test_the_criteria_settle_a_correct_step_in_a_few_reads_whatever_the_model_size(monkeypatch):
    # 8 and 128 parameter tensors: before, GL002, GL004, GL005, GL006 and the stale-gradient
    # test of GL001/GL003 each read every tensor's record at every clip or step
    few, many = _records_read(monkeypatch, 4), _records_read(monkeypatch, 64)
    assert few == many, (few, many)
    assert many <= 12 * 4, many
