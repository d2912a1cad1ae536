"""A clear at the start of each epoch, before the inner loop that accumulates (5 micro-batches,
a step every 2): it drops the previous epoch's last, partial window, which keeps each epoch's
first window the right size.  Correct by the rule contract (rules.md, GL002).

verify-expect: exit 0; nothing; --steps 8
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(5)]
for epoch in range(6):
    opt.zero_grad()
    for i, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x), y) / 2
        loss.backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
