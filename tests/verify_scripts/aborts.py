"""A correct loop whose process dies at C level (SIGABRT) after one step."""

import os

import torch
from torch import nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
opt.step()
os.abort()
