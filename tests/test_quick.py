"""gradlint/check/quick.py answers a clean run early: only where the full CLI would print
`All checks passed!` and exit 0 (and it prints the same), without importing the full CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from gradlint.commands import cli
from gradlint.check import engine, quick

PLAIN = "import os\n\n\ndef main():\n    for name in os.listdir('.'):\n        print(name)\n"
TRAINING = "for x in data:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
WRAPPED = "for x in data:\n    run_backward(model(x))\n    apply_update(opt)\n"
# A loop whose training step is in a module beside it (the project index follows it, issue 27)
CALLER = "from trainer import Trainer\n\nt = Trainer()\nfor x in range(3):\n    t.train_step(x)\n"
PACKAGE_CALLER = "from .trainer import Trainer\n\nt = Trainer()\nfor x in range(3):\n    t.train_step(x)\n"
TRAINER = (
    "import torch\n\n\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(2, 1)\n"
    "        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)\n\n"
    "    def train_step(self, x):\n        self.model(torch.randn(4, 2)).sum().backward()\n        self.opt.step()\n"
)
WRAPPER_CONFIG = '[tool.gradlint]\nbackward-functions = ["run_backward"]\nstep-functions = ["apply_update"]\n'


def full_run(argv, capsys, monkeypatch):
    """The full CLI, the shortcut switched off: (exit code, stdout, stderr)."""
    monkeypatch.setattr(cli, "_clean_without_analysis", lambda args: False)
    code = cli.main(argv)
    out, err = capsys.readouterr()
    monkeypatch.undo()
    return code, out, err


def files(tmp_path):
    """Name -> path of every kind of file the shortcut meets."""
    def make(name, data):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(path)

    out = {
        "plain": make("plain.py", PLAIN),
        "empty": make("empty.py", ""),
        "training": make("training.py", TRAINING),
        "latin-1 coding line": make("latin.py", "# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n".encode("latin-1")),
        "not utf-8": make("bad.py", b"x = '\xff'\n"),
        "nul": make("nul.py", b"x = 1\x00\n"),
        "bom": make("bom.py", b"\xef\xbb\xbfx = 1\n"),
        "notebook": make("nb.ipynb", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'),
        "syntax error, no event": make("broken.py", "def f(:\n"),
        "wrapped, configured": make("wrapped/proj/train.py", WRAPPED),
        "under invalid toml": make("invalid/proj/plain.py", PLAIN),
        "under a table-less pyproject": make("tableless/proj/plain.py", PLAIN),
        "under build": make("build/plain.py", PLAIN),
        "caller of a module beside it": make("project/train.py", CALLER),
        "caller in a package": make("package/sub/train.py", PACKAGE_CALLER),
    }
    make("project/trainer.py", TRAINER)
    make("package/sub/trainer.py", TRAINER)
    make("package/sub/__init__.py", "")
    make("wrapped/proj/pyproject.toml", WRAPPER_CONFIG)
    make("invalid/pyproject.toml", "[project\nname = 'x'\n")
    make("tableless/pyproject.toml", "[project]\nname = 'x'\n")
    os.mkdir(tmp_path / "folder")
    out["directory"] = str(tmp_path / "folder")
    out["missing"] = str(tmp_path / "missing.py")
    return out


ARGVS = [
    ["{plain}"],
    ["check", "{plain}", "{empty}"],
    ["{plain}", "--no-cache", "--exit-zero", "--force-exclude", "--jobs", "2"],
    ["{plain}", "--isolated", "-j", "1", "--cache-dir", "{tmp}/cache"],
    ["{plain}", "--jobs", "0"],
    ["{plain}", "--jobs"],
    ["{plain}", "--select", "GL001"],
    ["{plain}", "--select", "NOPE"],
    ["{plain}", "--output-format", "json"],
    ["{plain}", "--statistics"],
    ["{plain}", "--frobnicate"],
    ["{plain}", "-"],
    ["{plain}", "{training}"],
    ["{latin-1 coding line}"],
    ["{not utf-8}"],
    ["{nul}"],
    ["{bom}"],
    ["{notebook}"],
    ["{syntax error, no event}"],
    ["{wrapped, configured}"],
    ["{wrapped, configured}", "--isolated"],
    ["{under invalid toml}"],
    ["{under invalid toml}", "--isolated"],
    ["{under a table-less pyproject}"],
    ["{directory}"],
    ["{plain}", "-q"],
    ["{plain}", "{plain}", "{empty}"],
    ["{under build}"],
    ["{under build}", "--force-exclude"],
    ["{caller of a module beside it}"],
    ["{caller in a package}"],
    ["{missing}"],
    [],
]


@pytest.mark.parametrize("template", ARGVS, ids=[" ".join(a) or "(no arguments)" for a in ARGVS])
def test_the_shortcut_answers_only_what_the_full_run_answers(template, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = files(tmp_path)
    argv = [arg.format(tmp=tmp_path, **names) for arg in template]
    shortcut = quick.clean_run(argv)
    code, out, err = full_run(argv, capsys, monkeypatch)
    if shortcut:
        assert (code, out, err) == (0, "" if "-q" in argv else quick.clean_summary(shortcut) + "\n", "")
        # The early answer writes no cache at all, and says the same.
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        assert (cli.main(argv), *capsys.readouterr()) == (code, out, err)
        assert not (tmp_path / "cache").exists()


def test_the_shortcut_is_taken_for_plain_files(tmp_path):
    names = files(tmp_path)
    assert quick.clean_run([names["plain"], names["empty"], names["under a table-less pyproject"]])
    assert quick.clean_run([names["wrapped, configured"], "--isolated"])  # no wrappers: no event spelled
    # a file with no gradient spelling is not parsed by the full run either (issue 48): its
    # syntax error is Python's and ruff's to report, and both paths call it clean
    assert quick.clean_run([names["syntax error, no event"]])
    assert not quick.clean_run([names["wrapped, configured"]])  # its pyproject.toml names gradlint
    assert not quick.clean_run([names["training"]])
    # a loop that may call a training step of a module beside it: the project index decides
    assert not quick.clean_run([names["caller of a module beside it"]])
    assert not quick.clean_run([names["caller in a package"]])


def test_a_clean_run_imports_neither_the_cli_nor_the_analysis(tmp_path):
    names = files(tmp_path)
    code = (
        "import sys\n"
        "from gradlint.commands.cli import main\n"
        f"rc = main([{names['plain']!r}, '--no-cache'])\n"
        "heavy = {'argparse', 'dataclasses', 'typing', 'tomllib', 'hashlib', 'libcst',\n"
        "         'gradlint.options.config', 'gradlint.check.engine', 'gradlint.options.settings', 'gradlint.report'}\n"
        "print(rc, sorted(heavy & set(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})
    assert proc.stdout.splitlines() == ["All checks passed! (1 file checked)", "0 []"], proc.stderr


def test_the_size_limit_is_the_engines():
    assert quick.MAX_FILE_BYTES == engine.MAX_FILE_BYTES


def test_other_subcommands_are_never_taken_for_file_names(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rules").write_text(PLAIN)  # a file named like a subcommand
    assert cli.main(["rules"]) == 0
    assert "GL001" in capsys.readouterr().out
