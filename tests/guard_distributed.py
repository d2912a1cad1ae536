"""Training functions run in two processes by tests/test_guard_distributed.py (gloo on CPU).

Each process installs the guard itself (a process started by torch.multiprocessing is a fresh
interpreter) and writes its reports to `out/rank{N}.json`."""

from __future__ import annotations

import contextlib
import json
import os

import torch
import torch.distributed as dist
from torch import nn

import gradlint.guard as guard
from gradlint.guard.patches import Patches
from gradlint.guard.watcher import Watcher


def _knock_out(without) -> None:
    """Leave one part of the guard out ("Patches._optimizer", "Watcher._hook"): the tests show
    that each stack's report needs it.  In this process only (a spawned rank is a new interpreter)."""
    if without:
        owner, part = without.split(".")
        setattr({"Patches": Patches, "Watcher": Watcher}[owner], part, lambda *args, **kwargs: None)


def _start(rank: int, world: int, port: int) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)


def _write(out: str, rank: int, reports: list) -> None:
    with open(os.path.join(out, f"rank{rank}.json"), "w", encoding="utf-8") as handle:
        json.dump([{"code": r.code, "line": r.line, "rank": r.rank, "text": str(r)} for r in reports], handle)


def ddp(rank: int, world: int, port: int, out: str, wrong: bool, mode: str, only_rank=None, without=None) -> None:
    """Accumulation over two micro-batches with `no_sync()` on the first; `wrong` clears after
    every micro-batch (GL002), on every rank or only on `only_rank`."""
    _start(rank, world, port)
    _knock_out(without)
    guard.install(mode=mode)
    try:
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(6):
            with model.no_sync() if step % 2 == 0 else contextlib.nullcontext():
                model(torch.randn(4, 4)).sum().backward()
            if step % 2 == 1:
                opt.step()
            if step % 2 == 1 or (wrong and only_rank in (None, rank)):
                opt.zero_grad()  # GL002 line when wrong: it also clears the first micro-batch's gradients
        _write(out, rank, guard.reports())
        # Both ranks leave together: a rank that destroys its group while the other still talks
        # to it can end in gloo's std::terminate (SIGABRT), seen under load in CI.
        dist.barrier()
    finally:
        guard.uninstall()
        dist.destroy_process_group()


def fsdp2(rank: int, world: int, port: int, out: str, wrong: bool, mode: str, only_rank=None, without=None) -> None:
    """FSDP2 (`fully_shard`): the step before the backward (GL007) when `wrong`."""
    from torch.distributed.fsdp import fully_shard

    _start(rank, world, port)
    _knock_out(without)
    guard.install(mode=mode)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        fully_shard(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            opt.zero_grad()
            if wrong:
                opt.step()  # GL007 line
            model(torch.randn(4, 4)).sum().backward()
            if not wrong:
                opt.step()
        _write(out, rank, guard.reports())
        # Both ranks leave together: a rank that destroys its group while the other still talks
        # to it can end in gloo's std::terminate (SIGABRT), seen under load in CI.
        dist.barrier()
    finally:
        guard.uninstall()
        dist.destroy_process_group()
