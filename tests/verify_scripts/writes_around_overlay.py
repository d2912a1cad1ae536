"""A correct loop that writes a file through _io.open, the C function under open() that
verify's copy-on-write overlay does not replace (as C code writing on its own would).
Expected: exit 0, 5 steps; the write is refused with PermissionError (the script goes on),
no around.txt appears, and the report lists it as refused."""

import _io

import torch
from torch import nn

try:
    with _io.open("around.txt", "w") as handle:
        handle.write("should never reach the disk\n")
except PermissionError as exc:
    print("refused:", exc)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
