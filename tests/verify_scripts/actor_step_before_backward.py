"""Actor-critic whose actor steps between its clear and its backward.  One misplaced call, one
finding: GL007 on the actor's step, confirmed; the actor's next clear, which then throws that
backward away, is the same bug and no second (runtime-only GL002) finding.

verify-expect: exit 1; GL007 line 26 confirmed
"""

import torch
from torch import nn

torch.manual_seed(0)
actor, critic = nn.Linear(4, 2), nn.Linear(4, 1)
actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
for _ in range(10):
    state, ret = torch.randn(8, 4), torch.randn(8, 1)
    value = critic(state)
    critic_loss = nn.functional.mse_loss(value, ret)
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()

    log_prob = torch.log_softmax(actor(state), dim=-1)[:, 0:1]
    actor_loss = -(log_prob * (ret - value.detach())).mean()
    actor_opt.zero_grad()
    actor_opt.step()
    actor_loss.backward()
