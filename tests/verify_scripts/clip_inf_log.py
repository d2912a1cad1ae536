"""Measures the gradient norm for a log with clip_grad_norm_(..., inf) after the step: it never
clips, so it is not GL004.  Expected: no runtime-only finding, exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1)).backward()
    opt.step()
    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
    print(f"grad norm {grad_norm:.3f}")
