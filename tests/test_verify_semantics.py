"""Issue 29: the script runs as `python script.py` runs it: sys.path[0] is the script's folder (not
the working directory, as `python -m` would make it), the user's warning filters hold, and
gradlint's own folder is not on the script's path."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from installed import require

require("torch")

LOOP = """
import torch
from torch import nn
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
"""


def verify(script, cwd, env=None):
    result = subprocess.run([sys.executable, "-m", "gradlint", "verify", "--format", "json", str(script)], cwd=cwd,
                            capture_output=True, text=True, timeout=300, env=env)
    return result.returncode, json.loads(result.stdout)


def test_a_module_of_the_working_directory_is_not_importable_as_under_python_script(tmp_path):
    scripts, work = tmp_path / "scripts", tmp_path / "work"
    scripts.mkdir()
    work.mkdir()
    (work / "helpers.py").write_text("VALUE = 1\n")
    (scripts / "sibling.py").write_text("VALUE = 2\n")
    script = scripts / "train.py"
    script.write_text("import sys, sibling\nprint('path0', sys.path[0])\nimport helpers\n" + LOOP)
    plain = subprocess.run([sys.executable, str(script)], cwd=work, capture_output=True, text=True, timeout=300)
    assert "ModuleNotFoundError: No module named 'helpers'" in plain.stderr
    code, report = verify(script, work)
    assert code == 2
    assert report["run"]["end"]["message"] == "ModuleNotFoundError: No module named 'helpers'"
    assert f"path0 {scripts}" in report["run"]["output_tail"]


def test_the_users_warning_filters_hold_and_gradlints_folder_is_not_on_the_path(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import sys, warnings\nprint('gradlint' in sys.modules, sys.path)\n"
                      "warnings.warn('the user asked for errors')\n" + LOOP)
    env = dict(os.environ, PYTHONWARNINGS="error::UserWarning")
    code, report = verify(script, tmp_path, env)
    assert code == 2
    assert report["run"]["end"]["message"] == "UserWarning: the user asked for errors"
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    gradlint_dir = os.path.join(here, "gradlint", "verify")
    assert gradlint_dir not in report["run"]["output_tail"]
