"""A correct loop that writes outside the folder it runs in: appends to a cache file in
the home folder and writes a file under the folder given as its first argument (a /tmp path,
say), then reads both back.  Expected: exit 0, 5 steps; neither real file changes or appears;
the report lists both as written to verify's copy-on-write overlay."""

import os
import sys

import torch
from torch import nn

cache = os.path.expanduser("~/.cache/my_tool/seen.txt")
with open(cache, "a") as handle:
    handle.write("run\n")
outside = os.path.join(sys.argv[1], "out", "metrics.txt")
os.makedirs(os.path.dirname(outside), exist_ok=True)
with open(outside, "w") as handle:
    handle.write("loss 1.0\n")
with open(cache) as handle, open(outside) as metrics:
    print("cache lines:", len(handle.read().splitlines()), "metrics:", metrics.read().strip())
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
