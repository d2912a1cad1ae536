"""The loop clears by scaling each gradient by zero (`p.grad.mul_(0)`), which the static checker
does not read as a clear, so it reports GL001; at run time the backward, the step and the next
backward all ran, the probes saw both parameters, and each step used only its own batch's
gradient.  Expected: GL001 `not reproduced`, exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.mul_(0)
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    loss.backward()
    opt.step()
