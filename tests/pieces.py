"""Force gradlint/model/piecewise.py's cut in tests: every file built in pieces of a few lines."""

from __future__ import annotations

import contextlib

from gradlint.model import piecewise


@contextlib.contextmanager
def pieces_of(lines: int | None):
    """Build every file in pieces of `lines` lines (None: never in pieces)."""
    saved = piecewise.PIECES_FROM, piecewise.PIECE_LINES
    piecewise.PIECES_FROM, piecewise.PIECE_LINES = (0, lines) if lines else (10**9, saved[1])
    try:
        yield
    finally:
        piecewise.PIECES_FROM, piecewise.PIECE_LINES = saved
