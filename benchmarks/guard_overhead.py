"""What gradlint.guard costs a training step: a small transformer and a small CNN, with and
without the guard, in the same run.

    python benchmarks/guard_overhead.py [--pairs 40] [--block 4]

Interleaved A/B: short blocks of steps with and without the guard (installed and removed
between blocks), one pair of blocks at a time, in alternating order (ABBA), so that a change of
the machine's load or clock falls on both sides of a pair alike.  The overhead is the median,
over the pairs, of the ratio of the two blocks' median step times; the step times printed are
the medians of each side.  Time is the CPU time of this process on CPU (the load of other
processes counts only through shared caches and clocks, which the pairing cancels), wall time
on CUDA.  Garbage collection runs before each block, so that a collection the guard's
allocations caused is not charged to the next plain block (or the reverse).  Memory: what the guard's own code holds after
200 steps (traced by tracemalloc, any allocation with a gradlint frame in its stack), per
parameter tensor (from two models of 16 and 256 tensors) and for the run.  The
same figures for CUDA are printed when a GPU is there.  Exit 1 when a target is missed:
overhead <= 2% of the step, memory <= 1 KB per parameter tensor.

A ratio of two step times on a loaded machine varies by a point or two from run to run, more than
the guard costs.  So the guard's own time is also measured where it can be seen: the same loop
on a copy of each model whose parameter tensors are tiny (the guard's work is per call and per
tensor, never per element, so it is unchanged, while the step shrinks to a few milliseconds),
and printed as a share of the real model's plain step.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
import tracemalloc

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gradlint.guard as guard  # noqa: E402

OVERHEAD_TARGET = 0.02
MEMORY_TARGET = 1024


class TinyTransformer(nn.Module):
    def __init__(self, vocab=1000, width=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens)))


def _transformer(device, small=False):
    vocab = 16 if small else 1000
    model = (TinyTransformer(vocab, width=8) if small else TinyTransformer()).to(device)
    tokens = torch.randint(0, vocab, (2, 4) if small else (16, 32), device=device)

    def loss():
        logits = model(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))

    return model, loss


def _cnn(device, small=False):
    a, b = (4, 4) if small else (32, 64)
    model = nn.Sequential(
        nn.Conv2d(3, a, 3, padding=1), nn.BatchNorm2d(a), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(a, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(b, b, 3, padding=1), nn.BatchNorm2d(b), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(b, 10),
    ).to(device)
    batch, side = (2, 4) if small else (32, 32)
    images = torch.randn(batch, 3, side, side, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    return model, lambda: nn.functional.cross_entropy(model(images), labels)


def _trainer(build, device, small=False):
    torch.manual_seed(0)
    model, loss = build(device, small) if small else build(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0)

    def step():
        opt.zero_grad()
        loss().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if device.type == "cuda":
            torch.cuda.synchronize()  # the step's time, not its launch's (the guard itself never syncs)

    return model, step


def _clock(device) -> float:
    """CPU time of this process on CPU (other processes' load does not count), wall time on CUDA."""
    return time.process_time() if device.type == "cpu" else time.perf_counter()


def _block(step, device, watched: bool, steps: int) -> list:
    if watched:
        guard.install(mode="raise")  # a report would stop the benchmark: the loop is right
        step()  # not timed: a run's first guarded step meets its optimizer (hooks, once per run)
    gc.collect()
    times = []
    try:
        for _ in range(steps):
            start = _clock(device)
            step()
            times.append(_clock(device) - start)
    finally:
        if watched:
            guard.uninstall()
    return times


def measure(build, device, pairs: int, block: int) -> dict:
    model, step = _trainer(build, device)
    for _ in range(10):  # warm-up: allocator, kernels, first-step state
        step()
    times = {False: [], True: []}
    ratios = []
    for pair in range(pairs):
        median = {}
        for watched in (True, False) if pair % 2 else (False, True):
            block_times = _block(step, device, watched, block)
            times[watched].extend(block_times)
            median[watched] = statistics.median(block_times)
        ratios.append(median[True] / median[False])
    return {"tensors": sum(1 for _ in model.parameters()), "plain": statistics.median(times[False]),
            "guarded": statistics.median(times[True]), "overhead": statistics.median(ratios) - 1,
            "steps": len(times[True]), "pairs": pairs}


def own_time(build, device, pairs: int = 15, block: int = 50) -> dict:
    """The guard's own time per step, from the same loop on a copy of the model with the same
    parameter tensors made tiny (the guard's work is per call and per tensor, never per element,
    so it is the same, while the step's own time, and its noise, shrinks to a few milliseconds):
    the median, over interleaved pairs of blocks, of the difference of their mean step times."""
    model, step = _trainer(build, device, small=True)
    for _ in range(10):
        step()
    differences = []
    for pair in range(pairs):
        mean = {}
        for watched in (True, False) if pair % 2 else (False, True):
            mean[watched] = statistics.fmean(_block(step, device, watched, block))
        differences.append(mean[True] - mean[False])
    return {"tensors": sum(1 for _ in model.parameters()), "cost": statistics.median(differences), "pairs": pairs}


def _mlp(depth):
    def build(device):
        model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(depth)]).to(device)
        x = torch.randn(4, 16, device=device)
        return model, lambda: model(x).square().mean()
    return build


def _held(build, device, steps: int) -> tuple[int, int, int]:
    """Bytes the guard's code holds after `steps` steps (its modules' import excluded: installed
    once before tracing), what the last half of the steps added, and the parameter tensors."""
    model, step = _trainer(build, device)
    guard.install(mode="raise")
    step()
    guard.uninstall()
    ours = [tracemalloc.Filter(True, "*gradlint*", all_frames=True)]
    tracemalloc.start(25)
    guard.install(mode="raise")
    try:
        for _ in range(steps // 2):
            step()
        half = sum(s.size for s in tracemalloc.take_snapshot().filter_traces(ours).statistics("filename"))
        for _ in range(steps - steps // 2):
            step()
        held = sum(s.size for s in tracemalloc.take_snapshot().filter_traces(ours).statistics("filename"))
    finally:
        guard.uninstall()
        tracemalloc.stop()
    return held, held - half, sum(1 for _ in model.parameters())


def memory(device, steps: int = 200, depths: tuple = (8, 128)) -> dict:
    """The guard's memory: a part that does not depend on the model (its window of recent
    events, caches of file names) and a part per parameter tensor, from two models of the same
    layers, 8 and 128 deep (tests/test_guard_memory.py asks the same of shorter runs)."""
    small, small_growth, few = _held(_mlp(depths[0]), device, steps)
    large, large_growth, many = _held(_mlp(depths[1]), device, steps)
    per_tensor = (large - small) / (many - few)
    return {"per_tensor": per_tensor, "fixed": small - per_tensor * few, "growth": max(small_growth, large_growth)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40, help="pairs of blocks (the overhead is the median of their ratios)")
    parser.add_argument("--block", type=int, default=4, help="steps per block (>= 50 steps per side in all)")
    options = parser.parse_args(argv)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    missed = False
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads")
    for device in devices:
        held = memory(device)
        ok_memory = held["per_tensor"] <= MEMORY_TARGET
        missed = not ok_memory
        print(f"{device.type:4} memory: {held['per_tensor']:.0f} B per parameter tensor {'ok' if ok_memory else 'MISSED'}, "
              f"plus {held['fixed'] / 1024:.0f} KB for the run; {held['growth']:+d} B over the last 100 of 200 steps")
        for name, build in (("transformer", _transformer), ("cnn", _cnn)):
            timing = measure(build, device, options.pairs, max(1, options.block, -(-50 // options.pairs)))
            ok_time = timing["overhead"] <= OVERHEAD_TARGET
            missed = missed or not ok_time
            print(
                f"{device.type:4} {name:11} {timing['tensors']:3} tensors  step {timing['plain'] * 1e3:8.2f} ms plain, "
                f"{timing['guarded'] * 1e3:8.2f} ms guarded ({timing['steps']} steps a side): "
                f"overhead {timing['overhead'] * 100:+.2f}% (median of {timing['pairs']} pair ratios) {'ok' if ok_time else 'MISSED'}"
            )
            own = own_time(build, device)
            assert own["tensors"] == timing["tensors"]  # the copy has the model's parameter tensors
            print(
                f"{device.type:4} {name:11} guard's own time {own['cost'] * 1e6:6.0f} us a step (median of {own['pairs']} "
                f"pair differences, same tensors made tiny): {own['cost'] / timing['plain'] * 100:+.2f}% of the plain step"
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
