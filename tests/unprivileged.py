"""Run a command as a user that file permissions apply to.

The suite often runs as root (containers, CI), and root ignores a file's mode:
a read-only file or an unwritable directory stops nobody.  A child started
through `unprivileged_run` keeps uid 0 (so it can still read the interpreter
under /root) but loses the capabilities that bypass permission checks and
change owners, so it meets permissions exactly as an ordinary user does.
As a normal user it is a plain subprocess.run.
"""

from __future__ import annotations

import os
import subprocess
import sys

# linux/capability.h
CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER = 0, 1, 2, 3
CAP_SYS_ADMIN = 21  # dropped too for a user without mount rights (it then needs a user namespace to mount)
_PR_CAPBSET_DROP = 24


def _drop_capabilities(extra=()) -> None:
    """In the child before exec: out of the bounding set, so the exec'd program never has them."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, *extra):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            os._exit(97)


def can_drop_privileges() -> bool:
    return os.geteuid() != 0 or sys.platform.startswith("linux")


def unprivileged_run(args: list[str], no_mounts: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """no_mounts: without CAP_SYS_ADMIN as well, as a user who may mount only in a user namespace."""
    if os.geteuid() == 0:
        kwargs["preexec_fn"] = (lambda: _drop_capabilities((CAP_SYS_ADMIN,))) if no_mounts else _drop_capabilities
    proc = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert proc.returncode != 97, "could not drop capabilities"
    return proc


def gradlint_unprivileged(*argv: str, cwd) -> subprocess.CompletedProcess:
    return unprivileged_run([sys.executable, "-m", "gradlint", *argv], cwd=cwd, timeout=120)
