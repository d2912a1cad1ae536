"""A GAN whose generator's scheduler steps before the generator's first step, between the
critic's backward and the critic's step.  Expected: GL008 confirmed, naming opt_g (the
scheduler's optimizer), with the learning rates its first iterations trained with.

verify-expect: exit 1; GL008 line 18 confirmed
"""

import torch
from torch import nn

gen, disc = nn.Linear(3, 3), nn.Linear(3, 1)
opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
sched_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=1, gamma=0.5)
for step in range(20):
    opt_d.zero_grad()
    disc(gen(torch.randn(4, 3)).detach()).mean().backward()
    sched_g.step()
    opt_d.step()
    opt_g.zero_grad()
    (-disc(gen(torch.randn(4, 3)))).mean().backward()
    opt_g.step()
