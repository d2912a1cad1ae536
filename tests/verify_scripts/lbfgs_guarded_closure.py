"""LBFGS with a closure that clears and runs backward only when gradients are enabled (the
closure idiom of torch.optim's documentation).  Each step(closure) evaluates it several times:
one step, not accumulation, and not several runs of the step's line.  Correct.

verify-expect: exit 0; GL003 line 27 not reproduced or none
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=6)
x, y = torch.randn(32, 4), torch.randn(32, 1)


def closure():
    if torch.is_grad_enabled():
        opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    if loss.requires_grad:
        loss.backward()
    return loss


for _ in range(6):
    opt.step(closure)
