"""The buffer both language-server test modules open: GL002 on line 8 (0-based 7)."""

BUGGY = """\
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    loss = model(x).sum()
    loss.backward()
    opt.zero_grad()
    opt.step()
"""
