"""The static checker never imports torch (nor the language server's pygls)."""

import subprocess
import sys

BUGGY = "for x in loader:\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"


def test_checking_a_file_leaves_torch_unimported(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import torch\n" + BUGGY)
    code = (
        "import sys\n"
        "import gradlint\n"
        "from gradlint.check.engine import check_file\n"
        "from gradlint.options.settings import Settings\n"
        f"result = check_file({str(path)!r}, Settings.default())\n"
        "assert [f.code for f in result.findings] == ['GL002'], result\n"
        "from gradlint.commands.cli import main\n"
        f"assert main([{str(path)!r}, '--no-cache']) == 1\n"
        "bad = [m for m in ('torch', 'pygls', 'lsprotocol') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr + proc.stdout
