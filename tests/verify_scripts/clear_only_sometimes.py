"""The only clear runs under `if i > 10:`, while the step runs every iteration: the iterations
before it never clear.  One finding, one code in both halves: GL001 on the backward.

verify-expect: exit 1; GL001 line 18 confirmed or GL003 line 19 confirmed
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(30):
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    if i > 10:
        opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
