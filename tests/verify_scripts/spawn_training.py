"""Training inside torch.multiprocessing.spawn: the loop (with a GL001 bug) runs in a process
verify does not probe.  Expected: the finding `not probed` (never "line N never ran"), exit 2."""

import torch
import torch.multiprocessing as mp
from torch import nn


def train(rank):
    torch.manual_seed(rank)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()  # expect: GL001
        opt.step()


if __name__ == "__main__":
    mp.spawn(train, nprocs=1)
