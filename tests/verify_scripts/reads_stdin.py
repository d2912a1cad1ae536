"""Asks a question on stdin before training: verify gives no input, so EOFError before the
first step.  Expected: exit 2, "could not verify", the EOF named."""

import torch
from torch import nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
answer = input("train for how many batches? ")
for _ in range(int(answer)):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
