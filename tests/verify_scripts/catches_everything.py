"""A correct loop that swallows every exception, even BaseException, around each step."""

import torch
from torch import nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(50):
    try:
        opt.zero_grad()
        nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
        opt.step()
    except BaseException:
        pass
print("done")
