"""Issue 29: a correct loop that first writes through the routes given as arguments, each one a
way around a Python-level overlay, into its folder, a sibling folder and $HOME.

    routes.py sqlite from_file mkfifo ctypes subprocess system helper fork_setsid setsid

fork_setsid and setsid leave a `sleep TAG` process behind (TAG from $ROUTES_TAG) that outlives the
script unless verify ends it.  Expected: 5 optimizer steps, exit 0; under verify, either the
folders are unchanged or the report lists what it could not contain.
"""

import ctypes
import os
import sqlite3
import subprocess
import sys

import torch
from torch import nn

HOME = os.path.expanduser("~")
SIBLING = os.path.join("..", "sibling")
TAG = os.environ.get("ROUTES_TAG", "1000.25")


def sqlite():
    connection = sqlite3.connect("runs.db")
    connection.execute("create table if not exists runs (step integer)")
    connection.execute("insert into runs values (1)")
    connection.commit()
    connection.close()
    connection = sqlite3.connect(os.path.join(SIBLING, "shared.db"))  # an existing database
    connection.execute("insert into runs values (2)")
    connection.commit()
    connection.close()


def from_file():
    mapped = torch.from_file(os.path.join(SIBLING, "weights.bin"), shared=True, size=4, dtype=torch.float32)
    mapped.fill_(7.0)
    del mapped


def mkfifo():
    os.mkfifo("pipe")
    os.mkfifo(os.path.join(HOME, "pipe"))


def ctypes_write():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.open.restype = ctypes.c_int
    fd = libc.open(b"ctypes.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    libc.write(fd, b"written by libc\n", 16)
    libc.close(fd)


def subprocess_run():
    subprocess.run(["sh", "-c", "echo from sh > subprocess.txt; echo more >> ../sibling/notes.txt"], check=True)


def system():
    os.system("echo from os.system > \"$HOME/system.txt\"")


def helper():  # an experiment tracker's writer process
    code = "import os; os.makedirs('wandb/run-1', exist_ok=True); open('wandb/run-1/events', 'w').write('x')"
    subprocess.Popen([sys.executable, "-c", code]).wait()


def fork_setsid():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", TAG])


def setsid():
    subprocess.Popen(["setsid", "sleep", TAG])


ROUTES = {"sqlite": sqlite, "from_file": from_file, "mkfifo": mkfifo, "ctypes": ctypes_write,
          "subprocess": subprocess_run, "system": system, "helper": helper, "fork_setsid": fork_setsid,
          "setsid": setsid}

for name in sys.argv[1:]:
    ROUTES[name]()
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
