"""A temporal convolutional network (dilated causal convolutions, the study's TCN kind) on a
synthetic adding problem; SGD with momentum and StepLR, an atomic checkpoint (a temporary file in
the output folder renamed into place)."""

import os
import tempfile

import torch
from torch import nn


class Causal(nn.Module):
    def __init__(self, channels, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.conv = nn.Conv1d(channels, channels, 3, dilation=dilation)

    def forward(self, x):
        return torch.relu(self.conv(nn.functional.pad(x, (self.pad, 0)))) + x


torch.manual_seed(0)
net = nn.Sequential(nn.Conv1d(2, 16, 1), *[Causal(16, 2 ** i) for i in range(5)], nn.Conv1d(16, 1, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
os.makedirs("checkpoints", exist_ok=True)
for step in range(200):
    values = torch.rand(32, 1, 100)
    marks = torch.zeros(32, 1, 100)
    marks[:, 0, torch.randint(0, 100, (2,))] = 1
    target = (values * marks).sum(dim=2)
    opt.zero_grad()
    loss = nn.functional.mse_loss(net(torch.cat([values, marks], dim=1))[:, :, -1], target)
    loss.backward()
    opt.step()
    sched.step()
    with tempfile.NamedTemporaryFile(dir="checkpoints", delete=False) as handle:
        torch.save(net.state_dict(), handle)
    os.replace(handle.name, "checkpoints/last.pt")
