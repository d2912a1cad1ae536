"""A clip of gradients scaled by a GradScaler, without unscale_ (GL006), but the scaler is off
(`enabled=use_amp`, false at run time): no gradient is ever scaled,
so the run cannot show the bug.  It must say so, never "not reproduced".

verify-expect: exit 0; GL006 line 20 not reached
"""

import os

import torch
from torch import nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu", enabled=os.environ.get("USE_AMP") == "1")
for step in range(20):
    opt.zero_grad()
    loss = model(torch.randn(4, 3)).pow(2).mean()
    scaler.scale(loss).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
