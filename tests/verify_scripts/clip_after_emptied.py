"""Two bugs in one loop: a clear between the backward and the step (GL002), and a clip after the
step (GL004).  The clip never has a gradient to act on, because the clear already emptied them:
its verdict is "not reached" with that reason, never "not reproduced".

verify-expect: exit 1; GL002 line 17 confirmed; GL004 line 19 not reached
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(10):
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    loss.backward()
    opt.zero_grad()
    opt.step()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
