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
import warnings

# os function -> the Overlay method that stands in for it
OS_FUNCTIONS = {
    "open": "os_open", "stat": "stat", "lstat": "lstat", "access": "access", "readlink": "readlink",
    "listdir": "listdir", "scandir": "scandir", "chdir": "chdir", "getcwd": "getcwd",
    "mkdir": "mkdir", "remove": "remove", "unlink": "unlink", "rmdir": "rmdir",
    "rename": "rename", "replace": "replace", "truncate": "truncate", "chmod": "chmod", "utime": "utime",
    "chown": "chown", "lchown": "lchown",
    "symlink": "symlink", "listxattr": "listxattr", "getxattr": "getxattr", "setxattr": "setxattr",
    "removexattr": "removexattr", "mkfifo": "mkfifo", "mknod": "mknod",
}


def install(overlay):
    """Redirect this process's file functions through `overlay`; returns the function that undoes it."""
    saved = []

    def put(owner, name, value):
        own = getattr(owner, "__dict__", None)
        old = own[name] if own is not None and name in own else getattr(owner, name, None)
        saved.append((setattr, owner, name, old))  # a class's staticmethod itself, not its function
        setattr(owner, name, value)

    def put_item(mapping, key, value):
        saved.append((dict.__setitem__, mapping, key, mapping[key]))
        mapping[key] = value

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
    file_io = _file_io(overlay)
    replacements[id(io.FileIO)] = (io.FileIO, file_io)
    put(io, "FileIO", file_io)
    _wrap_sqlite(overlay, put)
    with warnings.catch_warnings():  # looking at a deprecated module attribute is not using it
        warnings.simplefilter("ignore")
        _replace_captured(replacements, put, put_item)
    if "torch" in sys.modules:  # probes.install imported it; a run without torch has nothing to wrap
        _wrap_torch(overlay, put)

    def restore():
        for setter, owner, name, value in reversed(saved):
            setter(owner, name, value)

    return restore


# Modules that keep the real functions: the overlay itself, and the import system (it reads real files).
_KEEP_REAL = ("gradlint.verify", "importlib", "_frozen_importlib", "zipimport", "builtins", "os", "posix", "io", "_io")
_STDLIB = os.path.dirname(os.__file__) + os.sep


def _replace_captured(replacements: dict, put, put_item) -> None:
    """Redirect the references to the real functions that modules took before this ran: module names
    (tarfile's `bltn_open`, `from os import stat`), default arguments (tempfile's
    `close(self, unlink=_os.unlink)`), the values of a module's dicts and of its objects' dicts
    (numpy's `_file_openers = {None: io.open}`, which np.savetxt writes through) and, in the standard
    library, class attributes (pathlib's accessor before 3.11, glob's `scandir = staticmethod(os.scandir)`
    in 3.13)."""

    def replacement(value):
        found = replacements.get(id(value))
        return found[1] if found is not None and found[0] is value else None

    def defaults(function):
        for attr in ("__defaults__", "__kwdefaults__"):
            held = getattr(function, attr, None)
            if not held:
                continue
            values = held.values() if isinstance(held, dict) else held
            if any(replacement(v) is not None for v in values):
                if isinstance(held, dict):
                    new = {k: replacement(v) or v for k, v in held.items()}
                else:
                    new = tuple(replacement(v) or v for v in held)
                put(function, attr, new)

    def items(mapping):
        try:
            found = [(k, replacement(v)) for k, v in list(mapping.items())]
        except (TypeError, AttributeError, RuntimeError):
            return
        for key, new in found:
            if new is not None:
                put_item(mapping, key, new)

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
            kind = type(value)
            if new is not None:
                put(module, attr, new)
            elif kind is _FUNCTION:
                defaults(value)
            elif kind is dict:
                items(value)
            elif issubclass(kind, type):
                if vars(value).get("__module__") != name:
                    continue
                for class_attr, held in list(vars(value).items()):
                    function = held.__func__ if isinstance(held, (staticmethod, classmethod)) else held
                    if type(function) is _FUNCTION:
                        defaults(function)
                    if not stdlib:
                        continue
                    new = replacement(function)
                    if new is not None:
                        try:
                            put(value, class_attr, staticmethod(new))
                        except TypeError:  # a type defined in C: its attributes are fixed
                            pass
            elif vars(kind).get("__module__") == name:
                try:  # a module's own object (never its __getattr__): its dicts' values
                    own = object.__getattribute__(value, "__dict__")
                except (AttributeError, TypeError):
                    continue
                if type(own) is dict:
                    for held in list(own.values()):
                        if type(held) is dict:
                            items(held)


_FUNCTION = type(_replace_captured)


class _IsFileIO(type):
    """isinstance(f, io.FileIO) stays true of the files open() makes (the real class's)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _REAL_FILE_IO)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _REAL_FILE_IO)


_REAL_FILE_IO = io.FileIO


def _file_io(overlay):
    """io.FileIO(path, mode): the class opens the path in C, so its constructor is redirected here."""

    class FileIO(_REAL_FILE_IO, metaclass=_IsFileIO):
        def __init__(self, file, mode="r", closefd=True, opener=None):
            target = file
            if not isinstance(file, int) and opener is None and overlay.virtual(file) is not None:
                if any(c in mode for c in "wax+"):
                    target = overlay.writable(file, create="r" not in mode, truncate="w" in mode,
                                              exclusive="x" in mode)
                else:
                    target = overlay.held(overlay.virtual(file), file)
            super().__init__(target, mode, closefd, opener)
            if target is not file:
                self.name = file

    FileIO.__module__, FileIO.__qualname__ = "io", "FileIO"
    return FileIO


def _wrap_sqlite(overlay, put) -> None:
    """sqlite3 opens its database (and journal) in C: a file path is given the overlay's copy."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is None:
        try:
            import sqlite3
        except ImportError:
            return
    original = sqlite3.connect

    @functools.wraps(original)
    def connect(database, *args, **kwargs):
        uri = kwargs.get("uri", args[5] if len(args) > 5 else False)
        if not uri and _is_path(database) and os.fsdecode(database) not in ("", ":memory:") \
                and overlay.virtual(database) is not None:
            database = overlay.writable(database)
        return original(database, *args, **kwargs)

    put(sqlite3, "connect", connect)
    dbapi = sys.modules.get("sqlite3.dbapi2")
    if dbapi is not None:
        put(dbapi, "connect", connect)


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

    original_from_file = torch.from_file

    @functools.wraps(original_from_file)
    def from_file(filename, shared=None, size=0, **kwargs):
        if _is_path(filename) and overlay.virtual(filename) is not None:
            if shared:  # a shared map writes the file: the overlay's copy
                filename = overlay.writable(filename)
            else:
                filename = overlay.held(overlay.virtual(filename), filename)
        return original_from_file(filename, shared, size, **kwargs)

    put(torch, "from_file", from_file)
    save, load = saving(torch.save), loading(torch.load)
    put(torch, "save", save)
    put(torch.serialization, "save", save)
    put(torch, "load", load)
    put(torch.serialization, "load", load)
    jit = getattr(torch, "jit", None)
    if jit is not None and hasattr(jit, "save"):
        put(jit, "save", saving(jit.save))
