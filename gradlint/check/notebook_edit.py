"""Rewrite the `source` of a notebook's cells in its JSON text, keeping every other byte.

`--fix` and `--add-noqa` change a few lines of a few cells.  Re-serialising
the whole notebook would reorder keys, re-indent, and rewrite outputs and
escapes; instead each changed cell's `source` value is found in the
original text and replaced there, written the way it was (a list of lines
or one string, the same indentation and the same escaping).
"""

from __future__ import annotations

import json
import re
from typing import Optional

from gradlint.core import source_lines


def code_cells(notebook: dict) -> list[tuple[int, str]]:
    """(index in the `cells` list, source text) of each code cell in order: code cell
    number n (as findings name it, counted from 1) is item n - 1."""
    found = []
    for index, cell in enumerate(notebook.get("cells") or ()):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            if isinstance(source, list):
                source = "".join(s for s in source if isinstance(s, str))
            found.append((index, source if isinstance(source, str) else ""))
    return found


def replace_cell_sources(text: str, spans: list, sources: dict[int, str]) -> str:
    """`text` with the `source` of each cell `index` (in the top-level `cells` list) set to
    `sources[index]`; `spans` is what source_spans(text) returned."""
    after = text
    # From the end of the text, so that the spans of earlier cells stay valid.
    for index in sorted(sources, key=lambda i: spans[i][0], reverse=True):
        start, end = spans[index]
        after = after[:start] + _dump_like(text[start:end], sources[index]) + after[end:]
    return after


def _dump_like(original: str, source: str) -> str:
    """`source` as a JSON value written the way `original` (the old value's text) was."""
    ascii_only = "\\u" in original and original.isascii()
    dump = lambda s: json.dumps(s, ensure_ascii=ascii_only)  # noqa: E731
    if not original.lstrip().startswith("["):
        return dump(source)
    lines = source_lines.lines(source, keepends=True)
    items = list(re.finditer(r'"(?:[^"\\]|\\.)*"', original))
    if not items or not lines:
        return "[" + ", ".join(dump(line) for line in lines) + "]"
    opener = original[1 : items[0].start()]
    between = original[items[0].end() : items[1].start()] if len(items) > 1 else "," + opener
    closer = original[items[-1].end() : -1]
    return "[" + opener + between.join(dump(line) for line in lines) + closer + "]"


# --- where each cell's "source" value sits in the JSON text ------------------------

_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")


def source_spans(text: str) -> Optional[list[Optional[tuple[int, int]]]]:
    """For each element of the top-level `cells` list, the (start, end) offsets of its
    `source` value in `text` (None for an element without one); None if not readable."""
    found: dict[int, tuple[int, int]] = {}
    count = [0]
    try:
        _value(text, 0, (), found, count)
    except (IndexError, ValueError, RecursionError):
        return None
    return [found.get(i) for i in range(count[0])]


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()


def _value(text: str, i: int, path: tuple, found: dict, count: list) -> int:
    i = _ws(text, i)
    char = text[i]
    if char == "{":
        i = _ws(text, i + 1)
        if text[i] == "}":
            return i + 1
        while True:
            key = _STRING.match(text, i)
            if key is None:
                raise ValueError("object key")
            name = json.loads(key.group())
            i = _ws(text, key.end())
            if text[i] != ":":
                raise ValueError("colon")
            start = _ws(text, i + 1)
            end = _value(text, start, path + (name,), found, count)
            if len(path) == 2 and path[0] == "cells" and name == "source":
                found[path[1]] = (start, end)
            i = _ws(text, end)
            if text[i] == "}":
                return i + 1
            if text[i] != ",":
                raise ValueError("comma")
            i = _ws(text, i + 1)
    if char == "[":
        i = _ws(text, i + 1)
        if text[i] == "]":
            return i + 1
        index = 0
        while True:
            i = _ws(text, _value(text, i, path + (index,), found, count))
            index += 1
            if path == ("cells",):
                count[0] = index
            if text[i] == "]":
                return i + 1
            if text[i] != ",":
                raise ValueError("comma")
            i += 1
    match = (_STRING if char == '"' else _SCALAR).match(text, i)
    if match is None:
        raise ValueError("value")
    return match.end()
