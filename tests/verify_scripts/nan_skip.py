"""A loop that skips a batch whose loss is NaN: `opt.zero_grad(); continue` throws away
gradients no step was meant to use.  Expected: no GL002 (no runtime-only finding), exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(6)]
batches[1] = (torch.full((8, 4), float("nan")), torch.randn(8, 1))
batches[3] = (torch.full((8, 4), float("nan")), torch.randn(8, 1))
for x, y in batches:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    if not torch.isfinite(loss):
        opt.zero_grad()
        continue
    opt.step()
    opt.zero_grad()
