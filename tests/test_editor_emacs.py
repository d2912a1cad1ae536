"""A real editor: Emacs in batch mode with eglot on `gradlint lsp`.

The configuration is docs/editors.md's eglot snippet; tests/editors/
eglot_driver.el opens a buggy file as `M-x eglot` would, waits for
flymake's diagnostics, applies the quick fix with eglot's own code-action
code and waits for the re-check.  Skipped when emacs or eglot is missing
(.ci/run installs Debian's `emacs-nox` and `elpa-eglot`; Emacs 29 has
eglot built in).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings
from lsp_snippets import BUGGY

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "editors" / "eglot_driver.el"
EMACS = shutil.which("emacs")


def eglot_available() -> bool:
    if EMACS is None:
        return False
    probe = subprocess.run(
        [EMACS, "--batch", "-q", "--eval", "(progn (require 'eglot) (princ \"ok\"))"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": "/nonexistent"},
    )
    return probe.stdout.endswith("ok")


pytestmark = pytest.mark.skipif(
    not eglot_available(), reason="emacs with eglot is not installed (apt-get install emacs-nox elpa-eglot)"
)


def readme_eglot_snippet() -> str:
    editors = (ROOT / "docs" / "editors.md").read_text()
    section = editors.split("\n## Emacs (eglot)\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```elisp\n(.*?)```", section, re.S)
    return block


def test_emacs_eglot_readme_snippet_diagnoses_and_fixes(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(BUGGY)
    (tmp_path / "init.el").write_text(readme_eglot_snippet())
    out = tmp_path / "out.json"
    bin_dir = os.path.dirname(shutil.which("gradlint") or os.path.join(os.path.dirname(sys.executable), "gradlint"))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),  # no user configuration
        "GRADLINT_FILE": "train.py",
        "GRADLINT_EMACS_OUT": str(out),
    }
    proc = subprocess.run(
        [EMACS, "--batch", "-q", "-l", str(tmp_path / "init.el"), "-l", str(DRIVER)],
        cwd=project, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"emacs wrote nothing (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, result

    (finding,) = check_source(BUGGY, "train.py", Settings.default()).findings
    (diagnostic,) = result["before"]
    assert (diagnostic["lnum"], diagnostic["col"]) == (finding.span.line - 1, finding.span.col - 1) == (7, 4)
    assert (diagnostic["end_lnum"], diagnostic["end_col"]) == (7, 4 + len("opt.zero_grad()"))
    assert diagnostic["message"].endswith(finding.message) and "GL002" in diagnostic["message"]
    assert result["applied"] == result["actions"][0] == "Move opt.zero_grad() after opt.step()"
    assert result["buffer"].endswith("    loss.backward()\n    opt.step()\n    opt.zero_grad()\n")
    assert result["after"] == []
    assert (project / "train.py").read_text() == BUGGY  # edited in the buffer, not saved
