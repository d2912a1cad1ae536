"""A GradScaler that skips every step (the loss is inf).  Skipped steps count toward the budget,
so the run ends at --steps instead of at the timeout.  Expected: stopped by the step budget,
exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
for _ in range(10_000):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1)) * float("inf")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
