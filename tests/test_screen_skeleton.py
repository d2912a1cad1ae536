"""The screen cuts a function needed only for an assignment down to a skeleton."""

import ast

from gradlint.engine import check_source
from gradlint.screen import screen
from gradlint.settings import Settings

SOURCE = '''\
import torch


def build(model, lr):
    print("building")
    if lr > 0:
        for _ in range(3):
            noise = 1
        opt = torch.optim.SGD(model.head.parameters(), lr=lr)
    total = sum(p.numel() for p in model.parameters())
    return total


def guarded(model):
    try:
        opt = torch.optim.SGD(model.parameters())
    except RuntimeError:
        pass


def train(model, loader):
    for x, y in loader:
        model.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
'''


def kept_lines(text):
    return [n for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def test_skeleton_keeps_headers_and_the_assignment_only():
    text = screen(SOURCE)
    ast.parse(text)  # still Python
    kept = kept_lines(text)
    for line in (4, 6, 9):  # def build, if lr > 0, the assignment
        assert line in kept
    for line in (5, 7, 8, 10, 11):  # the print, the unrelated loop, the rest
        assert line not in kept
    # inside `try:` a header alone is not valid Python: the whole function stays
    assert all(line in kept for line in range(14, 19))


def test_findings_are_the_same_with_and_without_the_screen(monkeypatch):
    from gradlint import engine

    screened = check_source(SOURCE, "s.py", Settings.default()).findings
    monkeypatch.setattr(engine, "_screen", lambda source, settings: source)
    whole = check_source(SOURCE, "s.py", Settings.default()).findings
    assert screened == whole
