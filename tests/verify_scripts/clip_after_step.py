"""Clip after the step, with norms large enough to be clipped (the evidence shows both)."""

import torch
from torch import nn

torch.manual_seed(3)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(4):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(torch.randn(8, 4) * 10), torch.randn(8, 1) * 10)
    loss.backward()
    opt.step()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL004
