"""Small buggy and clean training loops for the CLI, config, suppression and format tests."""

from __future__ import annotations

import os
import textwrap

from gradlint.cli import main

HEADER = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""

# GL002 on line 8 (the zero_grad between backward and step), related lines 7 and 9.
GL002_LOOP = HEADER + """\
for x in range(10):
    loss = model(x).sum()
    loss.backward()
    opt.zero_grad(){comment}
    opt.step()
"""

# GL004 on line 10 (the clip after the step on line 9).
GL004_LOOP = HEADER + """\
for x in range(10):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0){comment}
"""

# GL001 on line 7 (backward into never-cleared gradients), related step line 8.
GL001_LOOP = HEADER + """\
for x in range(10):
    loss = model(x).sum()
    loss.backward(){comment}
    opt.step()
"""

CLEAN_LOOP = HEADER + """\
for x in range(10):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def snippet(template: str, comment: str = "") -> str:
    return template.format(comment=comment)


def write(root, relpath: str, text: str) -> str:
    path = os.path.join(str(root), relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(text) if text.startswith("\n") else text)
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """gradlint in-process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def codes_by_file(out: str) -> set[tuple[str, int, str]]:
    """(path, line, code) from the text format."""
    found = set()
    for line in out.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[1].isdigit():
            code = parts[3].strip().split(" ", 1)[0]
            found.add((parts[0].replace(os.sep, "/"), int(parts[1]), code))
    return found
