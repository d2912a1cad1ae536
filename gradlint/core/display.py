"""How a file name is shown to a person: every report, every error line, one way.

A POSIX file name is any bytes but `/` and NUL.  Python gives a name that is not
UTF-8 as text holding lone surrogates (U+DC80-U+DCFF for the bytes, PEP 383), which
no UTF-8 writer, XML document or terminal accepts; a newline in a name would start a
second, forged report line; an escape sequence would reach the terminal.  So, as
ruff and git do, a name holding anything unprintable is shown quoted, with Python's
escapes: `"caf\\xe9.py"` (the byte 0xE9 that is not UTF-8), `"a\\nb.py"`, `"\\x1b[31m.py"`.
A printable name, Unicode letters included, is shown as it is; a name holding a
double quote is quoted too, so a quoted name is never mistaken for a name that
starts with a quote.

The formats that carry names as data keep them exact: JSON keeps the name (its
`\\udce9` escapes give back the same bytes through os.fsencode), URIs percent-encode
the name's bytes (`uri_path`).
"""

from __future__ import annotations

import os

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def shown(path: str) -> str:
    """The file name as a report line shows it: as it is, or quoted with escapes."""
    if path.isprintable() and '"' not in path:
        return path
    return f'"{escaped(path, quoting=True)}"'


def escaped(text: str, quoting: bool = False) -> str:
    """`text` with every unprintable character written as its escape (a surrogate that stands
    for a byte as that byte, `\\xe9`); with `quoting`, backslashes and double quotes too."""
    if text.isprintable() and not (quoting and ("\\" in text or '"' in text)):
        return text
    return "".join(_escape(ch, quoting) for ch in text)


def _escape(ch: str, quoting: bool) -> str:
    if ch.isprintable() and (not quoting or ch not in _SHORT):
        return ch
    if ch in _SHORT and (quoting or ch not in '\\"'):
        return _SHORT[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def name_bytes(path: str) -> bytes:
    """The name's bytes on disk (what a URI percent-encodes)."""
    return os.fsencode(path)
