"""WGAN with n_critic=5: five critic steps per generator step.  The budget counts each optimizer
on its own, so the generator gets its --steps steps too.  Correct.  Expected: exit 0, the
generator's optimizer with 5 steps."""

import torch
from torch import nn

torch.manual_seed(0)
generator = nn.Linear(2, 4)
critic = nn.Linear(4, 1)
opt_g = torch.optim.RMSprop(generator.parameters(), lr=5e-5)
opt_c = torch.optim.RMSprop(critic.parameters(), lr=5e-5)
n_critic = 5
for iteration in range(100):
    for _ in range(n_critic):
        opt_c.zero_grad()
        fake = generator(torch.randn(8, 2)).detach()
        loss_c = critic(fake).mean() - critic(torch.randn(8, 4)).mean()
        loss_c.backward()
        opt_c.step()
        for p in critic.parameters():
            p.data.clamp_(-0.01, 0.01)
    opt_g.zero_grad()
    loss_g = -critic(generator(torch.randn(8, 2))).mean()
    loss_g.backward()
    opt_g.step()
