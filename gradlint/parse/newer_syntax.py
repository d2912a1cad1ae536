"""Syntax newer than the running Python, blanked so its `ast` can read the rest.

gradlint reads a file with CPython's `ast` first (the parse guard, the screen,
the position table, the fixes).  Code written for a newer Python than the one
gradlint runs on stops that parser; libcst (its own grammar) still reads it.
``readable`` returns a text of exactly the same lines and columns with those
constructs made old: only what cannot hold a training loop is touched, so
every loop, call and def keeps its place.

- ``type X[T] = ...`` (PEP 695, 3.12): the statement becomes ``pass``.
- ``def f[T](...)``, ``class C[T]:`` (PEP 695): the type parameters become spaces.
- ``except* E:`` (PEP 654, 3.11): the star becomes a space.
- f-strings whose replacement fields hold their own quote, a backslash or a
  comment (PEP 701, 3.12): the whole string becomes a plain string of spaces.

One pass over the text, each character looked at a bounded number of times.
None when nothing was blanked or the text is not understood (an unclosed
string): the caller then keeps CPython's own error.
"""

from __future__ import annotations

import re
from typing import Optional

# In code: what opens a string or comment, brackets, line ends, and the keywords that start a
# construct.  No nested quantifier: every match is found in one scan.
_CODE = re.compile(r"""[\"'#()\[\]{}\\;\n]|(?<![\w.])(?:def|class|type|except)(?!\w)""")
_PREFIX = re.compile(r"(?<!\w)[rRbBuUfF]{1,2}$")
_BLANKS = re.compile(r"[ \t]*")
_NAME = re.compile(r"([^\W\d]\w*)[ \t]*")  # after _BLANKS: a leading run here would make a search quadratic


def _name_at(source: str, pos: int):
    """The name (and the blanks after it) that the blanks at `pos` lead to, or None."""
    return _NAME.match(source, _BLANKS.match(source, pos).end())
_OPEN, _CLOSE = "([{", ")]}"


class _Unreadable(Exception):
    pass


def readable(source: str) -> Optional[str]:
    """`source` with the newer constructs blanked (same shape), or None."""
    try:
        text = _Blanker(source).run()
    except _Unreadable:
        return None
    return text if text != source else None


class _Blanker:
    def __init__(self, source: str):
        self.source = source
        self.out = list(source)
        self.depth = 0  # brackets open in code
        self.statement_start = True  # only whitespace since the last line end or `;` at depth 0

    def blank(self, start: int, end: int, keep: str = "") -> None:
        """Spaces over source[start:end], keeping line ends (the shape) and `keep` at its start."""
        out, source = self.out, self.source
        for i in range(start, end):
            if out[i] not in "\r\n" and not (out[i] == "\\" and source[i + 1 : i + 2] in ("\n", "\r")):
                out[i] = " "
        out[start : start + len(keep)] = keep

    def run(self) -> str:
        source, pos = self.source, 0
        while True:
            match = _CODE.search(source, pos)
            if match is None:
                return "".join(self.out)
            at, token = match.start(), match.group()
            if source[pos:at].strip():
                self.statement_start = False
            pos = self.code_token(at, token)

    def code_token(self, at: int, token: str) -> int:
        if token in "\"'":
            self.statement_start = False
            return self.skip_string(at)
        if token == "#":
            return self.line_end(at)
        if token == "\\":
            return at + 2  # a line continuation (or a stray backslash ast rejects anyway)
        if token in _OPEN:
            self.depth += 1
        elif token in _CLOSE:
            self.depth = max(0, self.depth - 1)
        elif token in "\n;":
            self.statement_start = self.depth == 0 or self.statement_start
            return at + 1
        elif token == "type":
            return self.type_alias(at)
        elif token in ("def", "class"):
            return self.type_parameters(at + len(token))
        elif token == "except":
            return self.except_star(at + len(token))
        self.statement_start = False
        return at + len(token)

    # --- PEP 695 -----------------------------------------------------------------

    def type_alias(self, at: int) -> int:
        """`type Name = ...` or `type Name[...] = ...` at the start of a statement: `pass`."""
        source = self.source
        name = _name_at(source, at + 4)
        starts = self.statement_start and self.depth == 0
        self.statement_start = False
        if not starts or name is None or name.end() >= len(source):
            return at + 4
        after = source[name.end()]
        if after == "[" or (after == "=" and source[name.end() + 1 : name.end() + 2] != "="):
            end = self.logical_line_end(name.end())
            self.blank(at, end, keep="pass")
            return end
        return at + 4

    def logical_line_end(self, pos: int) -> int:
        """Where the statement from pos ends: a line end or `;` outside brackets (strings and
        comments skipped, blanked too)."""
        source, depth = self.source, 0
        while True:
            match = _CODE.search(source, pos)
            if match is None:
                return len(source)
            at, token = match.start(), match.group()
            if token in "\"'":
                pos = self.skip_string(at, outer=False)
            elif token == "#":
                return self.line_end(at)
            elif token == "\\":
                pos = at + 2
            elif token in _OPEN:
                depth, pos = depth + 1, at + 1
            elif token in _CLOSE:
                depth, pos = max(0, depth - 1), at + 1
            elif token in "\n;" and depth == 0:
                return at
            else:
                pos = at + len(token)

    def type_parameters(self, pos: int) -> int:
        """`def name[...]` / `class name[...]`: the brackets and what is in them become spaces."""
        self.statement_start = False
        source = self.source
        name = _name_at(source, pos)
        if name is None or name.end() >= len(source) or source[name.end()] != "[":
            return pos
        start = name.end()
        end = self.bracket_end(start)
        self.blank(start, end)
        return end

    def bracket_end(self, start: int) -> int:
        """Just past the bracket that closes the one at `start` (strings inside skipped)."""
        source, depth, pos = self.source, 0, start
        while True:
            match = _CODE.search(source, pos)
            if match is None:
                raise _Unreadable
            at, token = match.start(), match.group()
            if token in "\"'":
                pos = self.skip_string(at, outer=False)
                continue
            if token == "#":
                pos = self.line_end(at)
                continue
            if token in _OPEN:
                depth += 1
            elif token in _CLOSE:
                depth -= 1
                if depth == 0:
                    return at + 1
            pos = at + (2 if token == "\\" else len(token))

    # --- PEP 654 -----------------------------------------------------------------

    def except_star(self, pos: int) -> int:
        self.statement_start = False
        source = self.source
        star = pos
        while star < len(source) and source[star] in " \t":
            star += 1
        if star < len(source) and source[star] == "*":
            self.out[star] = " "
            return star + 1
        return pos

    # --- strings, PEP 701 --------------------------------------------------------

    def line_end(self, at: int) -> int:
        end = self.source.find("\n", at)
        return len(self.source) if end == -1 else end

    def skip_string(self, quote_at: int, outer: bool = True) -> int:
        """Just past the string whose opening quote is at `quote_at` (its prefix read back)."""
        prefix = _PREFIX.search(self.source, max(0, quote_at - 2), quote_at)
        formatted = prefix is not None and "f" in prefix.group().lower()
        return self.string(prefix.start() if prefix else quote_at, quote_at, formatted, outer)

    def string(self, start: int, quote_at: int, formatted: bool, outer: bool) -> int:
        """Just past the string whose prefix starts at `start`; an f-string with PEP 701
        replacement fields (judged as a whole when it is an `outer` one) becomes a plain
        string of spaces, its quotes where the prefix and the closing quote were."""
        source = self.source
        quote = source[quote_at : quote_at + 3]
        quote = quote if quote in ('"""', "'''") else source[quote_at]
        body = quote_at + len(quote)
        if not formatted:
            return self.plain_string_end(body, quote)
        end, newer = self.fstring_end(body, quote)
        if newer and outer:
            self.blank(start, end)
            self.out[start : start + len(quote)] = quote
            self.out[end - len(quote) : end] = quote
        return end

    def plain_string_end(self, pos: int, quote: str) -> int:
        source = self.source
        while True:
            i = _next_of(source, pos, quote)
            if i == -1:
                raise _Unreadable
            if source[i] == "\\":
                pos = i + 2
            elif source[i] == "\n" and len(quote) == 1:
                raise _Unreadable
            elif source.startswith(quote, i):
                return i + len(quote)
            else:
                pos = i + 1

    def fstring_end(self, pos: int, quote: str) -> tuple[int, bool]:
        """Just past the f-string body from pos, and whether a replacement field uses PEP 701."""
        source, newer = self.source, False
        while True:
            i = _next_of(source, pos, quote, "{}")
            if i == -1:
                raise _Unreadable
            char = source[i]
            if char == "\\":
                pos = i + 2
            elif char == "\n" and len(quote) == 1:
                raise _Unreadable
            elif source.startswith(quote, i):
                return i + len(quote), newer
            elif char in "{}" and source[i + 1 : i + 2] == char:
                pos = i + 2  # {{ or }}
            elif char == "{":
                pos, field_newer = self.replacement_field(i + 1, quote)
                newer = newer or field_newer
            else:
                pos = i + 1

    def replacement_field(self, pos: int, quote: str) -> tuple[int, bool]:
        """Just past the `}` closing a replacement field (its format spec included), and whether
        it holds the outer quote, a backslash or a comment."""
        source, depth, newer = self.source, 0, False
        while True:
            i = _next_of(source, pos, quote, "#'\"()[]{}:")
            if i == -1:
                raise _Unreadable
            char = source[i]
            if char in "\\#\n":  # none of them was allowed in a replacement field before 3.12
                newer = True
                pos = self.line_end(i) if char == "#" else i + (2 if char == "\\" else 1)
            elif char in "\"'":
                newer = newer or source.startswith(quote, i)
                pos = self.skip_string(i, outer=False)
            elif char in "([{":
                depth, pos = depth + 1, i + 1
            elif char in ")]" or (char == "}" and depth > 0):
                depth, pos = depth - 1, i + 1
            elif char == "}":
                return i + 1, newer
            elif char == ":" and depth == 0:
                end, spec_newer = self.format_spec_end(i + 1, quote)
                return end, newer or spec_newer
            else:
                pos = i + 1

    def format_spec_end(self, pos: int, quote: str) -> tuple[int, bool]:
        """A format spec is f-string text up to the field's `}`, with nested fields."""
        source, newer = self.source, False
        while True:
            i = _next_of(source, pos, quote, "{}")
            if i == -1 or source.startswith(quote, i):
                raise _Unreadable
            char = source[i]
            if char == "\\":
                pos = i + 2
            elif char == "{":
                pos, field_newer = self.replacement_field(i + 1, quote)
                newer = newer or field_newer
            elif char == "}":
                return i + 1, newer
            else:
                pos = i + 1


def _next_of(source: str, pos: int, quote: str, also: str = "") -> int:
    """The first backslash, line end, quote start or character of `also` at or after pos."""
    pattern = _PATTERNS.get((quote, also))
    if pattern is None:
        chars = "\\\\\n" + re.escape(quote[0]) + "".join(re.escape(c) for c in also)
        pattern = _PATTERNS[(quote, also)] = re.compile(f"[{chars}]")
    match = pattern.search(source, pos)
    return -1 if match is None else match.start()


_PATTERNS: dict = {}
