"""A real editor: Neovim headless, its built-in LSP client, `gradlint lsp`.

The `init.lua` is the documentation's own snippet (taken from the Neovim
section of docs/editors.md), so a snippet that stops working fails here.  tests/editors/
nvim_driver.lua plays the user: waits for the diagnostics, asks for the
code actions at the first one, applies the quick fix with the client's
workspace-edit code, and waits for the re-check.  Skipped when `nvim` is
not installed (.ci/run installs Debian's `neovim`).
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
DRIVER = Path(__file__).resolve().parent / "editors" / "nvim_driver.lua"
NVIM = shutil.which("nvim")

pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install neovim; .ci/run does)")


def nvim_version() -> tuple[int, int]:
    out = subprocess.run([NVIM, "--version"], capture_output=True, text=True, timeout=30).stdout
    major, minor = re.search(r"NVIM v(\d+)\.(\d+)", out).groups()
    return int(major), int(minor)


def readme_lua_snippets() -> dict[str, str]:
    """The Lua blocks of the Neovim section of docs/editors.md, by what they use."""
    editors = (ROOT / "docs" / "editors.md").read_text()
    section = editors.split("\n## Neovim\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```lua\n(.*?)```", section, re.S)
    by_kind = {}
    for block in blocks:
        if "vim.lsp.config(" in block:
            by_kind["0.11"] = block
        elif "nvim_create_autocmd" in block:
            by_kind["0.7"] = block
        elif "lspconfig" in block:
            by_kind["lspconfig"] = block
    return by_kind


def test_readme_has_the_neovim_snippets():
    assert set(readme_lua_snippets()) == {"0.11", "0.7", "lspconfig"}


def run_nvim(tmp_path: Path, init_lua: str) -> dict:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(BUGGY)
    (tmp_path / "init.lua").write_text(init_lua)
    out = tmp_path / "out.json"
    bin_dir = os.path.dirname(shutil.which("gradlint") or os.path.join(os.path.dirname(sys.executable), "gradlint"))
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        GRADLINT_NVIM_OUT=str(out),
        XDG_CONFIG_HOME=str(tmp_path / "config"),  # nothing of the user's own set-up
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    proc = subprocess.run(
        [NVIM, "--headless", "-i", "NONE", "-u", str(tmp_path / "init.lua"), "-c", f"luafile {DRIVER}", "train.py"],
        cwd=project, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )
    assert out.exists(), f"nvim wrote nothing (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    result = json.loads(out.read_text())
    result["file_after"] = (project / "train.py").read_text()
    return result


def expected_diagnostic():
    (finding,) = check_source(BUGGY, "train.py", Settings.default()).findings
    return finding


def check_session(result: dict) -> None:
    assert "error" not in result and not result.get("request_errors"), result
    assert result["filetype"] == "python"
    finding = expected_diagnostic()
    (diagnostic,) = result["before"]
    assert diagnostic["code"] == finding.code == "GL002"
    assert diagnostic["source"] == "gradlint"
    # LSP positions are 0-based; the span is the misplaced `opt.zero_grad()` call
    assert (diagnostic["lnum"], diagnostic["col"]) == (finding.span.line - 1, finding.span.col - 1) == (7, 4)
    assert (diagnostic["end_lnum"], diagnostic["end_col"]) == (finding.span.end_line - 1, finding.span.end_col - 1)
    assert diagnostic["end_col"] - diagnostic["col"] == len("opt.zero_grad()")
    assert diagnostic["message"].startswith(finding.message)
    titles = [action["title"] for action in result["actions"]]
    assert result["applied"] == titles[0] and titles[0].startswith("Move opt.zero_grad()"), titles
    assert any(title.startswith("Suppress GL002") for title in titles), titles
    # the quick fix moved the clear after the step, in the buffer
    assert result["buffer"][-3:] == ["    loss.backward()", "    opt.step()", "    opt.zero_grad()"]
    assert result["after"] == []  # the server re-checked the edited buffer: clean
    assert result["file_after"] == BUGGY  # nothing saved behind the user's back


@pytest.mark.parametrize("kind", ["0.7", "0.11"])
def test_neovim_readme_snippet_diagnoses_and_fixes(tmp_path, kind):
    needs = tuple(int(part) for part in kind.split("."))
    if nvim_version() < needs:
        pytest.skip(f"docs/editors.md's Neovim {kind}+ snippet needs nvim {kind}; this one is {nvim_version()}")
    check_session(run_nvim(tmp_path, readme_lua_snippets()[kind]))
