"""Trains one step, then starts a worker process and waits forever (a stuck loader).
Used to send SIGINT/SIGTERM to `gradlint verify`: nothing of it may be left running."""

import multiprocessing
import time

import torch
from torch import nn


def worker():
    while True:
        time.sleep(0.2)


if __name__ == "__main__":
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
    multiprocessing.get_context("fork").Process(target=worker, daemon=False).start()
    print("worker started", flush=True)
    while True:
        time.sleep(0.2)
