"""Optimizer in backward: each parameter's post-accumulate-grad hook steps and clears its own
optimizer while the backward pass runs (the idiom of PyTorch's optimizer-in-backward tutorial).
Correct.

verify-expect: exit 0; nothing
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizers = {p: torch.optim.SGD([p], lr=0.01) for p in model.parameters()}


def step_and_clear(p):
    optimizers[p].step()
    optimizers[p].zero_grad()


for p in model.parameters():
    p.register_post_accumulate_grad_hook(step_and_clear)

shared = torch.optim.SGD(nn.Linear(4, 1).parameters(), lr=0.01)  # one optimizer, stepped from each hook
head = shared.param_groups[0]["params"]


def step_and_clear_shared(p):  # a hook must return None: a lambda returning a tuple is refused
    shared.step()
    shared.zero_grad()


for p in head:
    p.register_post_accumulate_grad_hook(step_and_clear_shared)

for _ in range(8):
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    nn.functional.mse_loss(model(x), y).backward()
    nn.functional.mse_loss(x @ head[0].t() + head[1], y).backward()
