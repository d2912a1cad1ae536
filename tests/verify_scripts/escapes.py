"""Issue 47: a correct loop that first tries the routes given as arguments, each one a way out of
verify's namespace sandbox, and prints one line per attempt: `ESCAPE <route> ok|refused <detail>`.

    escapes.py append remount device cgroup shm sysctl tcp abstract unix

The project folder (the working directory) is expected to hold config.yaml, a mount point data/
and a read-only mount frozen/; ESCAPE_TAG names the test's cgroup, shm file, TCP port and
abstract socket.  Expected under verify: append ok (into the overlay), every other route refused,
and the real folder, devices and cgroups unchanged.
"""

import ctypes
import os
import socket
import sys

import torch
from torch import nn

TAG = os.environ.get("ESCAPE_TAG", "w47")
PORT = int(os.environ.get("ESCAPE_PORT", "0") or 0)
MS_REMOUNT, MS_BIND = 32, 4096
libc = ctypes.CDLL(None, use_errno=True)


def say(route, ok, detail=""):
    print(f"ESCAPE {route} {'ok' if ok else 'refused'} {detail}".rstrip(), flush=True)


def attempt(route, action):
    try:
        action()
    except OSError as exc:
        say(route, False, exc.strerror or str(exc))
    else:
        say(route, True)


def append():
    with open("config.yaml", "a") as handle:
        handle.write("appended by the script\n")


def remount():
    """Make each mount writable again (MS_REMOUNT | MS_BIND without MS_RDONLY), unmount it, then write."""
    paths = os.environ.get("ESCAPE_PATHS", "../frozen:data:config.yaml:../notes.txt").split(":")
    for path in paths:
        if libc.mount(None, os.path.abspath(path).encode(), None, ctypes.c_ulong(MS_REMOUNT | MS_BIND), None) == 0:
            say("remount", True, path)
    for path in paths:
        if libc.umount2(os.path.abspath(path).encode(), 2) == 0:
            say("umount", True, path)
    for route, path in (("write_frozen", "../frozen/model.txt"), ("write_notes", "../notes.txt")):
        attempt(route, lambda: open(path, "a").write("changed\n"))


def device():
    blocks = [name for name in sorted(os.listdir("/dev"))
              if os.path.exists(os.path.join("/dev", name)) and os.path.isfile(os.path.join("/dev", name)) is False
              and __import__("stat").S_ISBLK(os.stat(os.path.join("/dev", name)).st_mode)]
    say("block_devices", bool(blocks), " ".join(blocks))

    def write():
        with open("/dev/loop0", "r+b") as handle:
            handle.read(0)
    attempt("loop0", write)


def cgroup():
    for root in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.isdir(root):
            attempt("cgroup", lambda: os.mkdir(os.path.join(root, f"escape-{TAG}")))
            return


def shm():
    with open(f"/dev/shm/escape-{TAG}", "w") as handle:
        handle.write("left behind")
    say("shm_written", True)


def sysctl():
    path = "/proc/sys/kernel/printk_ratelimit"  # written back unchanged: harmless if it goes through
    with open(path) as handle:
        value = handle.read()

    def write():
        with open(path, "w") as handle:
            handle.write(value)
    attempt("sysctl", write)


def tcp():
    def send():
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as sock:
            sock.sendall(f"secret {TAG}\n".encode())
    attempt("tcp", send)


def abstract():
    def send():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(f"\0escape-{TAG}")
            sock.sendall(b"write a file for me\n")
    attempt("abstract", send)


def unix():
    def send():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect("../service.sock")
            sock.sendall(b"write a file for me\n")
    attempt("unix", send)


ROUTES = {"unix": unix, "append": lambda: attempt("append", append), "remount": remount, "device": device,
          "cgroup": cgroup, "shm": shm, "sysctl": sysctl, "tcp": tcp, "abstract": abstract}

for name in sys.argv[1:]:
    ROUTES[name]()
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(100):
    opt.zero_grad()
    nn.functional.mse_loss(model(torch.randn(4, 3)), torch.randn(4, 1)).backward()
    opt.step()
