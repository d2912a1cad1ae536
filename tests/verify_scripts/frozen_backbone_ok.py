"""The frozen-then-unfrozen backbone of frozen_backbone_bug.py, written correctly (both
optimizers cleared).  Expected: no runtime-only finding (no GL007 for the frozen epoch), exit 0."""

import torch
from torch import nn

torch.manual_seed(0)
backbone = nn.Linear(4, 4)
head = nn.Linear(4, 1)
backbone.requires_grad_(False)
head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
backbone_opt = torch.optim.SGD(backbone.parameters(), lr=0.01)
batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]
for epoch in range(4):
    if epoch == 1:
        backbone.requires_grad_(True)
    for x, y in batches:
        head_opt.zero_grad()
        backbone_opt.zero_grad()
        loss = nn.functional.mse_loss(head(backbone(x)), y)
        loss.backward()
        head_opt.step()
        backbone_opt.step()
