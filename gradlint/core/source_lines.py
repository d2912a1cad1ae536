"""A source's lines as Python counts them: only `\\n`, `\\r\\n` and `\\r` end a line.

`str.splitlines` also ends a line at a form feed (`^L`, a page break in old
code), `\\v`, `\\x1c`-`\\x1e`, `\\x85` and the Unicode line and paragraph
separators, which CPython's parser, libcst, tokenize, the LSP and every editor
treat as ordinary characters of a line.  A position (line, column) given by the
parser must be read in lines split this way, or a form feed in a comment above
a finding makes every later line one off (the text a message quotes, the
statement a fix moves, the line a `# noqa` goes on).
"""

from __future__ import annotations

import io
import re

# What str.splitlines splits at besides \n and \r.  When a text holds none of these (nearly
# always), str.splitlines gives Python's lines, at C speed (and `in` finds none at memchr's
# speed: a regular expression's search took twice as long as the split).
_OTHER_BREAKS = ("\x0c", "\x0b", "\x1c", "\x1d", "\x1e")
_OTHER_UNICODE_BREAKS = ("\x85", "\u2028", "\u2029")


def _splitlines_is_pythons(text: str) -> bool:
    if any(char in text for char in _OTHER_BREAKS):
        return False
    return text.isascii() or not any(char in text for char in _OTHER_UNICODE_BREAKS)


def lines(text: str, keepends: bool = False) -> list[str]:
    """`text.splitlines(keepends)`, with a line ending only at `\\n`, `\\r\\n` or `\\r`."""
    if _splitlines_is_pythons(text):
        return text.splitlines(keepends)
    found = io.StringIO(text, newline="").readlines()  # newline="": split at \n, \r\n, \r only, ends kept
    if keepends:
        return found
    return [line.rstrip("\r\n") for line in found]


_LINE_END = re.compile(r"\r\n|\r|\n")


def line_at(text: str, number: int) -> tuple[int, str]:
    """(0-based index, text without its end) of 1-based line `number`, or of the last line when
    the text has fewer; read up to that line only (a huge buffer is not split whole)."""
    start, index = 0, 0
    for match in _LINE_END.finditer(text):
        if index == number - 1 or match.end() == len(text):
            return index, text[start : match.start()]
        start, index = match.end(), index + 1
    return index, text[start:]


def reader(text: str):
    """A readline over `text` for tokenize whose lines are Python's (a lone `\\r` ends one too,
    which `io.StringIO(text).readline` misses)."""
    return io.StringIO(text, newline="").readline
