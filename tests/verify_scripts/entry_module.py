"""An entry point for `gradlint verify entry_module:train` (no zero_grad: GL001)."""

import torch
from torch import nn


def train():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(4):
        loss = nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1))
        loss.backward()  # expect: GL001
        opt.step()


print("imported, not run")
