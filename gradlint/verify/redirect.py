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
        saved.append((owner, name, vars(owner).get(name)))  # a class's staticmethod itself, not its function
        setattr(owner, name, value)

    replacements = {id(io.open): (io.open, overlay.open)}
    for name, method in OS_FUNCTIONS.items():
        if hasattr(os, name):
            replacements[id(getattr(os, name))] = (getattr(os, name), getattr(overlay, method))
    put(builtins, "open", overlay.open)
    put(io, "open", overlay.open)
    for name, method in OS_FUNCTIONS.items():
        if hasattr(os, name):
            put(os, name, getattr(overlay, method))
    put(shutil, "rmtree", _rmtree(overlay, shutil.rmtree))
    _replace_captured(replacements, put)
    if "torch" in sys.modules:  # probes.install imported it; a run without torch has nothing to wrap
        _wrap_torch(overlay, put)

    def restore():
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)

    return restore


# Modules that keep the real functions: the overlay itself, and the import system (it reads real files).
_KEEP_REAL = ("gradlint.verify", "importlib", "_frozen_importlib", "zipimport", "builtins", "os", "posix", "io", "_io")
_STDLIB = os.path.dirname(os.__file__) + os.sep


def _replace_captured(replacements: dict, put) -> None:
    """Redirect the references to the real functions that modules took before this ran: module names
    (tarfile's `bltn_open`, `from os import stat`) and, in the standard library, class attributes
    (pathlib's accessor before 3.11, glob's `scandir = staticmethod(os.scandir)` in 3.13)."""

    def replacement(value):
        found = replacements.get(id(value))
        return found[1] if found is not None and found[0] is value else None

    for name, module in list(sys.modules.items()):
        if module is None or name.partition(".")[0] in _KEEP_REAL or name.startswith(_KEEP_REAL[0]):
            continue
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        stdlib = (getattr(module, "__file__", None) or "").startswith(_STDLIB)
        for attr, value in names:
            new = replacement(value)
            if new is not None:
                put(module, attr, new)
            elif stdlib and isinstance(value, type) and value.__module__ == name:
                for class_attr, held in list(vars(value).items()):
                    new = replacement(held.__func__ if isinstance(held, staticmethod) else held)
                    if new is not None:
                        try:
                            put(value, class_attr, staticmethod(new))
                        except TypeError:  # a type defined in C: its attributes are fixed
                            pass


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
