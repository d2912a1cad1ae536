"""What gradlint.guard holds per parameter tensor: at most 1 KB (issue 46's aim), measured as
benchmarks/guard_overhead.py measures it (tracemalloc, every allocation with a gradlint frame in
its stack, the slope between two models of 8 and 128 tensors).  Bytes are not timing: the bound
is absolute, and the same on a loaded machine."""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import guard_overhead  # noqa: E402


def test_a_parameter_tensor_costs_the_guard_at_most_1_kb():
    # 30 steps of clear, backward, clip, step and scheduler step: 150 events, past the first
    # trim of the window (every 64 events), so what stays is what a long run keeps
    held = guard_overhead.memory(torch.device("cpu"), steps=30, depths=(4, 64))
    assert 0 < held["per_tensor"] <= guard_overhead.MEMORY_TARGET == 1024, held
