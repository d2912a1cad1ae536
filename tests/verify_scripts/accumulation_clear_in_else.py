"""Gradient accumulation whose clear sits in the `else:` of the step test: it clears after every
micro-batch but the last, so each step uses one micro-batch of every window.

verify-expect: exit 1; GL002 line 21 confirmed or GL002 line 21 runtime only
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation = 3
for i in range(30):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    loss = nn.functional.mse_loss(model(x), y) / accumulation
    loss.backward()
    if (i + 1) % accumulation == 0:
        opt.step()
    else:
        opt.zero_grad()
