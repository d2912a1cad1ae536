"""A correct loop that saves final.pt in `finally:` (and keeps a log) - the budget stop runs
the finally.  Expected: exit 0; final.pt and train.log in the working directory untouched;
the report lists both as written to verify's copy-on-write overlay (train.log with its new line)."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    for step in range(100):
        opt.zero_grad()
        nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
        opt.step()
finally:
    try:
        with open("train.log", "a") as log:
            log.write("finished\n")
    except OSError as exc:
        print("could not log:", exc)
    torch.save(model.state_dict(), "final.pt")
