"""Issue 47: a correct loop that first changes the working folder's data.txt by routes the Python
mode's overlay must contain or report, and talks to a host service, then trains.

    python_escapes.py chown fchmod exec tcp

Prints `ESCAPE <route> ok|refused <detail>` per attempt.  ESCAPE_PORT: the host service's TCP port.
Expected under `verify --containment python`: data.txt unchanged (owner and mode), and the report lists
the exec and the connection it could not contain.
"""

import os
import socket
import sys

import torch
from torch import nn


def attempt(route, action):
    try:
        action()
    except OSError as exc:
        print(f"ESCAPE {route} refused {exc.strerror or exc}", flush=True)
    else:
        print(f"ESCAPE {route} ok", flush=True)


def chown():
    os.chown("data.txt", 65534, 65534)


def fchmod():
    fd = os.open("data.txt", os.O_RDONLY)  # opened for reading: allowed, the real file
    try:
        os.fchmod(fd, 0o666)
    finally:
        os.close(fd)


def exec_child():
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/sh", ["sh", "-c", "echo from exec > exec.txt"])
    os.waitpid(pid, 0)


def tcp():
    with socket.create_connection(("127.0.0.1", int(os.environ["ESCAPE_PORT"])), timeout=5) as sock:
        sock.sendall(b"secret\n")


ROUTES = {"chown": chown, "fchmod": fchmod, "exec": exec_child, "tcp": tcp}
for name in sys.argv[1:]:
    attempt(name, ROUTES[name])
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
