"""Keeps the script being verified from changing the user's files.  Runs in the verify child.

By default the script's writes are redirected into a copy-on-write overlay
(overlay.py, redirect.py); this is the backstop for what goes around that
redirection, and with --allow-writes it reports the real writes it lets through.

The budget stop unwinds the script, so its `finally:` blocks and atexit
handlers run: a `torch.save(model, "final.pt")` there would overwrite a real
checkpoint with a model trained for five steps.  An audit hook
(`sys.addaudithook`, PEP 578) sees every `open()` of a path and the os/shutil
calls that create, rename or delete files; a write outside verify's scratch
directory and the overlay raises PermissionError in the script, before
anything is touched.  `torch.save` and `torch.jit.save` write through C++ (no
audit event), so they are wrapped.  Every attempt, refused or (with
--allow-writes) allowed, is reported once.

What this does not see: writes made by C extensions on their own (h5py,
a C++ logger), and processes started with the spawn method (a fresh
interpreter without the hook).  Forked DataLoader workers keep it.
"""

from __future__ import annotations

import os
import sys

# os flags that make open() a write
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# audit event -> (action shown in the report, indexes of the path arguments)
_PATH_EVENTS = {
    "os.remove": ("delete", (0,)),
    "os.rmdir": ("delete", (0,)),
    "os.mkdir": ("create directory", (0,)),
    "os.rename": ("rename", (0, 1)),
    "os.truncate": ("truncate", (0,)),
    "os.symlink": ("link", (1,)),
    "os.link": ("link", (1,)),
    "shutil.rmtree": ("delete", (0,)),
    "shutil.copyfile": ("write", (1,)),
    "os.chown": ("change the owner of", (0,)),
    "os.chmod": ("change the mode of", (0,)),
    "os.utime": ("change the times of", (0,)),
    "os.setxattr": ("change the attributes of", (0,)),
    "os.removexattr": ("change the attributes of", (0,)),
    "os.chflags": ("change the flags of", (0,)),
}
# events whose target may be a descriptor (os.fchown, os.fchmod, os.ftruncate): a file opened for
# reading can still be changed through it, so its path is looked up
_DESCRIPTOR_EVENTS = ("os.chown", "os.chmod", "os.utime", "os.truncate", "os.setxattr", "os.removexattr")
_ALWAYS_ALLOWED = ("/dev/", "/proc/self/")


class Guard:
    def __init__(self, scratch: str, allow: bool, report, overlay=None):
        self.scratch = os.path.realpath(scratch) + os.sep
        # verify's temporary folder (the scratch's grandparent): its own files (the output) are not the user's
        self.own = os.path.dirname(os.path.dirname(self.scratch.rstrip(os.sep))) + os.sep
        # The overlay holds only files, folders and links into itself (overlay.py): a path under it
        # needs no realpath, which would read it through the redirected os.lstat.
        self.overlay = os.path.realpath(overlay) + os.sep if overlay else None
        self.allow = allow
        self.report = report  # callable(dict): one record per attempted write
        self.seen: set = set()
        self.busy = False  # reporting writes to the (already open) log: never re-enter

    def permitted(self, path: str) -> bool:
        return (
            path.startswith(self.scratch) or path == self.scratch[:-1] or path.startswith(_ALWAYS_ALLOWED)
            or path == os.devnull
        )

    def check(self, action: str, target) -> None:
        if isinstance(target, int) or target is None:
            return  # a file descriptor the process already holds
        try:
            name = os.fsdecode(target)
            if self.overlay and os.path.abspath(name).startswith(self.overlay):
                return
            path = os.path.realpath(name)
        except (TypeError, ValueError):
            return
        if self.permitted(path):
            return
        key = (action, path)
        if key not in self.seen and not self.busy:
            self.seen.add(key)
            self.busy = True
            try:
                self.report({"type": "write", "action": action, "path": path, "refused": not self.allow})
            finally:
                self.busy = False
        if not self.allow:
            if self.overlay:
                raise PermissionError(
                    f"gradlint verify refused to {action} {path}: this write went around verify's copy-on-write "
                    "overlay (C code, or a module holding its own open), so it would change the real file "
                    "(use --allow-writes to let it)"
                )
            raise PermissionError(
                f"gradlint verify refused to {action} {path}: the script may only write under its scratch "
                "directory (use --allow-writes to let it)"
            )

    def audit(self, event: str, args) -> None:
        if event == "open":
            if self.overlay and _opener_active():
                return  # open(path, opener=...): the opener's os.open meets the overlay itself
            target, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing:
                self.check("write", target)
            return
        spec = _PATH_EVENTS.get(event)
        if spec is not None and self.overlay and event.startswith("shutil."):
            return  # raised with the script's paths; the opens and os calls under it go to the overlay
        if spec is not None:
            action, indexes = spec
            for index in indexes:
                if index < len(args):
                    target = args[index]
                    if isinstance(target, int) and event in _DESCRIPTOR_EVENTS:
                        target = self._descriptor_path(target)
                    self.check(action, target)

    def _descriptor_path(self, fd: int):
        """The file a descriptor is open on (Linux /proc), or None: a pipe, a socket, verify's own file."""
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except (OSError, ValueError):
            return None
        if not path.startswith(os.sep) or path.startswith(self.own) or path.endswith(" (deleted)"):
            return None
        return path


def _opener_active() -> bool:
    overlay = sys.modules.get("gradlint.verify.overlay")
    active = getattr(overlay, "opener_active", None)  # None while the module is being imported
    return active is not None and active()


def install(scratch: str, allow: bool, report, overlay=None) -> Guard:
    guard = Guard(scratch, allow, report, overlay)
    sys.addaudithook(guard.audit)
    _wrap_torch_saves(guard)
    return guard


def _wrap_torch_saves(guard: Guard) -> None:
    try:
        import torch
        import torch.serialization
    except ImportError:
        return

    def wrap(original, action):
        def save(obj, f, *args, **kwargs):
            if isinstance(f, (str, bytes, os.PathLike)):
                guard.check(action, f)
            return original(obj, f, *args, **kwargs)

        save.__wrapped__ = original
        save.__name__ = original.__name__
        save.__doc__ = original.__doc__
        return save

    saved = wrap(torch.serialization.save, "write")
    torch.save = torch.serialization.save = saved
    jit = getattr(torch, "jit", None)
    if jit is not None and hasattr(jit, "save"):
        original_jit = jit.save

        def jit_save(m, f, *args, **kwargs):
            if isinstance(f, (str, bytes, os.PathLike)):
                guard.check("write", f)
            return original_jit(m, f, *args, **kwargs)

        jit.save = jit_save
