"""Hand-written SGD through .data (`p.data.add_(p.grad, alpha=-lr)`), each gradient cleared after
its update.  Expected: no runtime-only finding, the updates counted as steps (the budget stops
it), exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
for _ in range(20):
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-0.1)
        p.grad.zero_()
