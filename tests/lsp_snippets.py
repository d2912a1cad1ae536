"""The buffer both language-server test modules open: GL002 on line 8 (0-based 7)."""

BUGGY = """\
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in data:
    loss = model(x).sum()
    loss.backward()
    opt.zero_grad()
    opt.step()
"""


def start_tcp_server(**popen_options):
    """`gradlint lsp --tcp` on a free local port, and a client socket connected to it.

    Returns (server process, connection); the caller stops the server."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "gradlint", "lsp", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen_options,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            return server, socket.create_connection(("127.0.0.1", port), timeout=20)
        except OSError:
            time.sleep(0.05)
    server.kill()
    server.communicate()
    raise AssertionError("the language server did not listen")
