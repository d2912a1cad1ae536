"""Messages name a call on one line, however it is written."""

import pytest

from ci_snippets import HEADER, run_cli, write
from gradlint.model.call_text import message_text, one_line


@pytest.mark.parametrize(
    "code, expected",
    [
        ("clip_grad_value_(\n    model.parameters(),\n    0.5,\n)", "clip_grad_value_(model.parameters(), 0.5)"),
        ("clip(  # noqa: GL004\n    model.parameters(), max_norm=1.0\n)", "clip(model.parameters(), max_norm=1.0)"),
        ("f(a,\n  [1,\n   2,],\n  k = 'x,  )'\n)", "f(a, [1, 2], k = 'x,  )')"),
        ("scaler.scale(loss).backward()", "scaler.scale(loss).backward()"),
        ("opt.step(\n)", "opt.step()"),
        ("f(a, b,)", "f(a, b,)"),  # one line already: as written
    ],
)
def test_one_line(code, expected):
    assert one_line(code) == expected


def test_too_long_becomes_func_and_ellipsis():
    code = "torch.nn.utils.clip_grad_norm_(\n    model.parameters(), max_norm=config.training.max_gradient_norm_value\n)"
    assert message_text(code, "torch.nn.utils.clip_grad_norm_") == "torch.nn.utils.clip_grad_norm_(...)"
    assert len(message_text("x" * 80)) == 60 and message_text("x" * 80).endswith("...")


def test_multi_line_call_in_a_message(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    loop = (
        "for x in range(10):\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n"
        "    torch.nn.utils.clip_grad_value_(\n        model.parameters(),\n        0.5,\n    )\n"
    )
    write(tmp_path, "t.py", HEADER + loop)
    _, out, _ = run_cli(capsys, "--no-cache", "--isolated", "t.py")
    assert "t.py:9:5: GL004 [*] torch.nn.utils.clip_grad_value_(model.parameters(), 0.5) runs after opt.step() (line 8)" in out
