"""Puts the copy-on-write overlay (overlay.py) in place of the file functions, in the verify child.

What is built on these follows without more: os.makedirs/removedirs/walk,
os.path.exists/isdir/getsize, glob, pathlib, shutil's copies and moves,
tempfile in a folder of the script's, logging.FileHandler, numpy.save/load,
PIL's Image.save.  torch.save and torch.jit.save hand the path to C++, and
torch.load(mmap=True) maps the file by its path: they are wrapped.  What
still goes around the overlay (a C extension writing on its own, a module
that took `open` before this ran, like tarfile) meets protect.py's audit hook.
"""

from __future__ import annotations

import builtins
import functools
import io
import os
import shutil
import sys

# os function -> the Overlay method that stands in for it
OS_FUNCTIONS = {
    "open": "os_open", "stat": "stat", "lstat": "lstat", "access": "access", "readlink": "readlink",
    "listdir": "listdir", "scandir": "scandir", "chdir": "chdir", "getcwd": "getcwd",
    "mkdir": "mkdir", "remove": "remove", "unlink": "unlink", "rmdir": "rmdir",
    "rename": "rename", "replace": "replace", "truncate": "truncate", "chmod": "chmod", "utime": "utime",
    "symlink": "symlink", "listxattr": "listxattr", "getxattr": "getxattr", "setxattr": "setxattr",
    "removexattr": "removexattr",
}


def install(overlay):
    """Redirect this process's file functions through `overlay`; returns the function that undoes it."""
    saved = []

    def put(owner, name, value):
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    put(builtins, "open", overlay.open)
    put(io, "open", overlay.open)
    for name, method in OS_FUNCTIONS.items():
        if hasattr(os, name):
            put(os, name, getattr(overlay, method))
    put(shutil, "rmtree", _rmtree(overlay, shutil.rmtree))
    if "torch" in sys.modules:  # probes.install imported it; a run without torch has nothing to wrap
        _wrap_torch(overlay, put)

    def restore():
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)

    return restore


def _rmtree(overlay, original):
    @functools.wraps(original)
    def rmtree(path, ignore_errors=False, onerror=None, **keywords):
        return overlay.rmtree(path, ignore_errors, onerror, original=original, **keywords)

    rmtree.avoids_symlink_attacks = False
    return rmtree


def _is_path(f) -> bool:
    return isinstance(f, (str, bytes, os.PathLike))


def _wrap_torch(overlay, put) -> None:
    import torch
    import torch.serialization

    def saving(original):
        @functools.wraps(original)
        def save(obj, f, *args, **kwargs):
            if _is_path(f) and overlay.virtual(f) is not None:
                f = overlay.writable(f, truncate=True)
            return original(obj, f, *args, **kwargs)

        return save

    def loading(original):
        @functools.wraps(original)
        def load(f, *args, **kwargs):
            p = overlay.virtual(f) if _is_path(f) else None
            if p is not None:
                f = overlay.held(p, f)
            return original(f, *args, **kwargs)

        return load

    save, load = saving(torch.save), loading(torch.load)
    put(torch, "save", save)
    put(torch.serialization, "save", save)
    put(torch, "load", load)
    put(torch.serialization, "load", load)
    jit = getattr(torch, "jit", None)
    if jit is not None and hasattr(jit, "save"):
        put(jit, "save", saving(jit.save))
