"""Issue 47: starts a `setsid sleep TAG` daemon (TAG from $ROUTES_TAG), then hangs in a training
loop: verify is killed with SIGKILL meanwhile, and the daemon must not outlive it."""

import os
import subprocess
import time

import torch
from torch import nn

subprocess.Popen(["setsid", "sleep", os.environ.get("ROUTES_TAG", "1000.25")])
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt.zero_grad()
model(torch.randn(2, 3)).sum().backward()
while True:
    time.sleep(0.1)
