"""A folder's bytes as a dict, to show that something left it unchanged."""

from __future__ import annotations

import hashlib
import os
import stat


def tree_digest(root) -> dict:
    """Every path under root with its kind and content (links: their target)."""
    digest = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            key = os.path.relpath(path, root)
            if os.path.islink(path):
                digest[key] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                digest[key] = "dir"
            elif not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO: opening it would block
                digest[key] = "special"
            else:
                with open(path, "rb") as handle:
                    digest[key] = hashlib.sha256(handle.read()).hexdigest()
    return digest
