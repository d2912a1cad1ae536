"""Issue 29: a GL006 under a CUDA GradScaler on a machine without CUDA (torch turns the scaler off)
could not be reproduced on this device, and the verdict says so and why: never "not reproduced"."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from installed import require

require("torch")

SCRIPT = """import warnings
import torch
from torch import nn

warnings.simplefilter("ignore")  # torch warns that it turns the CUDA scaler off
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for step in range(20):
    opt.zero_grad()
    scaler.scale(model(torch.randn(4, 3)).pow(2).mean()).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
"""


@pytest.mark.xdist_group("imports_torch")  # torch in this process: on one worker, not on each
@pytest.mark.parametrize("strict, code", [((), 0), (("--strict",), 2)])
def test_a_cuda_scaler_turned_off_for_lack_of_cuda_is_not_a_refutation(tmp_path, strict, code):
    import torch  # when the test runs, not at collection (seconds in every pytest worker)

    if torch.cuda.is_available():
        pytest.skip("with CUDA the scaler is on and GL006 is confirmed")
    (tmp_path / "train.py").write_text(SCRIPT)
    result = subprocess.run([sys.executable, "-m", "gradlint", "verify", *strict, "--format", "json", "train.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout)
    assert result.returncode == code
    [verdict] = report["verdicts"]
    assert (verdict["code"], verdict["line"], verdict["verdict"]) == ("GL006", 12, "not reached")
    assert verdict["evidence"].startswith(
        "could not be reproduced on this device: the GradScaler used at line 11 was disabled (torch turns a "
        "GradScaler off when CUDA is not available, as on this machine)")
