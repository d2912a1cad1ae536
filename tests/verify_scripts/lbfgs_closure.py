"""LBFGS: one step(closure) evaluates the closure (a clear and a backward) several times.  Those
backward passes are evaluations of one step, not accumulation.  Correct.

verify-expect: exit 0; nothing
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=6)
x, y = torch.randn(32, 4), torch.randn(32, 1)


def closure():
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for _ in range(6):
    opt.step(closure)
