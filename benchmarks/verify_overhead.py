"""What `gradlint verify`'s probes cost: the same training script, plain and under verify.

    python benchmarks/verify_overhead.py [--steps 200] [--tensors 300] [--repeat 3]

The script (written to a temporary directory) builds a model with --tensors
parameter tensors (Linear layers of width --width: a weight and a bias
each), then runs --steps iterations of zero_grad / forward / backward / step
and prints how long its loop took.  It runs once as `python script.py` and
once as `gradlint verify --steps N script.py` (a budget large enough for the
whole loop), alternately, --repeat times; the figures are medians.

The ratio that matters (issue 12's target: at most 1.3) is the loop's time
under verify over its plain time: torch's import and verify's start-up are
the same fixed cost for any length of run and are printed separately.  The
ratio is taken on the loop's CPU time (torch runs on one thread here), which
other work on a shared machine disturbs far less than wall time; the wall
time ratio is printed beside it.
Not a test: timings belong here, never in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_RATIO = 1.3

SCRIPT = '''\
import time

import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)
layers = []
for _ in range({layers}):
    layers += [nn.Linear({width}, {width}), nn.Tanh()]
model = nn.Sequential(*layers)
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
x, y = torch.randn({batch}, {width}), torch.randn({batch}, {width})
start, cpu = time.perf_counter(), time.process_time()
for _ in range({steps}):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
print("LOOP_SECONDS", time.perf_counter() - start, time.process_time() - cpu, flush=True)
'''


def loop_seconds(output: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the script's training loop."""
    for line in reversed(output.splitlines()):
        if line.startswith("LOOP_SECONDS"):
            wall, cpu = line.split()[1:3]
            return float(wall), float(cpu)
    raise RuntimeError(f"the script did not report its loop time:\n{output[-2000:]}")


def run_plain(script: str) -> tuple[float, float]:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, script], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, loop_seconds(result.stdout)


def run_verify(script: str, steps: int) -> tuple[float, float, dict]:
    command = [sys.executable, "-m", "gradlint", "verify", "--format", "json", "--steps", str(steps + 1),
               "--timeout", "600", script]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise RuntimeError(f"verify failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    report = json.loads(result.stdout)
    return wall, loop_seconds(report["run"]["output_tail"]), report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tensors", type=int, default=300, help="parameter tensors (even: weight + bias per layer)")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="gradlint-verify-bench-") as tmp:
        script = os.path.join(tmp, "train_bench.py")
        with open(script, "w") as handle:
            handle.write(SCRIPT.format(layers=max(1, args.tensors // 2), width=args.width, batch=args.batch,
                                       steps=args.steps))
        plain_wall, plain_loop, plain_cpu, verify_wall, verify_loop, verify_cpu = [], [], [], [], [], []
        report = None
        for _ in range(args.repeat):
            wall, (loop, cpu) = run_plain(script)
            plain_wall.append(wall)
            plain_loop.append(loop)
            plain_cpu.append(cpu)
            wall, (loop, cpu), report = run_verify(script, args.steps)
            verify_wall.append(wall)
            verify_loop.append(loop)
            verify_cpu.append(cpu)

    median = statistics.median
    params = len(report["parameters"])
    steps = report["run"]["steps"]
    p_cpu, v_cpu = median(plain_cpu), median(verify_cpu)
    p_loop, v_loop = median(plain_loop), median(verify_loop)
    ratio = v_cpu / p_cpu
    print(f"model: {params} parameter tensors, {steps} optimizer steps seen by verify, {len(report['events'])} events")
    print(f"training loop CPU, plain:        {p_cpu:7.3f} s  ({1000 * p_cpu / args.steps:6.2f} ms/step)")
    print(f"training loop CPU, under verify: {v_cpu:7.3f} s  ({1000 * v_cpu / args.steps:6.2f} ms/step)")
    print(f"  probe cost per step:           {1000 * (v_cpu - p_cpu) / args.steps:6.2f} ms")
    print(f"training loop wall: plain {p_loop:.3f} s, verify {v_loop:.3f} s (ratio {v_loop / p_loop:.2f})")
    print(f"whole run (import, start-up, report): plain {median(plain_wall):.2f} s, verify {median(verify_wall):.2f} s")
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"ratio (loop CPU under verify / plain loop CPU, median of {args.repeat}): {ratio:.2f}  "
          f"target <= {TARGET_RATIO}  {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
