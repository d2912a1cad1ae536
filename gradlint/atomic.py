"""Write a file so that a reader never sees half of it: a temp file beside
it, then os.replace.  Shared by reports (--output-file), --fix and the cache."""

from __future__ import annotations

import os
from typing import Optional, Union


class ChangedOnDisk(Exception):
    """The file no longer holds the bytes its new content was computed from."""


def write_atomically(
    path: str,
    text: Union[str, bytes],
    mode: Optional[int] = None,
    fsync: bool = False,
    expected: Optional[bytes] = None,
) -> None:
    """Replace `path` with `text` (str: written as UTF-8; bytes: as given).

    `mode` None: what a newly created file would get.  `expected`: the bytes the
    caller read; if the file holds anything else when the new content is ready
    (an editor saved it meanwhile), nothing is written and ChangedOnDisk is raised.
    """
    import tempfile  # here, not at import: a run that writes nothing does not pay for it

    data = text.encode("utf-8") if isinstance(text, str) else text
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp makes 0600
        os.chmod(temp, mode)
        if expected is not None and _current_bytes(path) != expected:
            raise ChangedOnDisk(path)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _current_bytes(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None
