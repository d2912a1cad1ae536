"""Write a file so that a reader never sees half of it: a temp file beside
it, then os.replace.  Shared by reports (--output-file), --fix and the cache."""

from __future__ import annotations

import os
from typing import Optional


def write_atomically(path: str, text: str, mode: Optional[int] = None, fsync: bool = False) -> None:
    """Replace `path` with `text`.  `mode` None: what a newly created file would get."""
    import tempfile  # here, not at import: a run that writes nothing does not pay for it

    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
