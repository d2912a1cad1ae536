"""A correct loop configured from the command line: without `--lr 0.1` it exits 2 (argparse)."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--batches", type=int, default=3)
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for _ in range(args.batches):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
print("trained with lr", opt.param_groups[0]["lr"], "for", args.batches, "batches")
