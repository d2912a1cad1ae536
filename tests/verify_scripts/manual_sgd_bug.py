"""Hand-written SGD (`p -= lr * p.grad` under no_grad) and no clear: every update uses the sum of
all gradients so far.  Expected: GL001 seen at run time (runtime only until the static side
knows manual updates, then confirmed), the manual updates counted as steps, exit 1."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
for _ in range(20):
    loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad
