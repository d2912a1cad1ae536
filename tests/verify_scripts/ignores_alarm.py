"""Ignores SIGALRM and spins: only the parent's hard kill can end it."""

import signal

import torch  # noqa: F401

signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    pass
