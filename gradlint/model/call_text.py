"""A call's source as one line, for messages: `clip_grad_value_(model.parameters(), 0.5)`.

A call written over several lines keeps its tokens but loses the line
breaks, the comments (a `# noqa` inside the call is not part of it) and the
trailing comma before a closing bracket; a call still too long for a
message becomes `func(...)`.  Only what libcst already parsed gets here,
and tokenize works on that text alone, so nothing is imported or run.
"""

from __future__ import annotations

import io
import tokenize
from typing import Callable

MAX_CHARS = 60
_OPEN, _CLOSE = "([{", ")]}"
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


def one_line(code: str) -> str:
    """`code` on one line with Python's own spacing between its tokens kept."""
    code = code.strip()
    if "\n" not in code:
        return code
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in _SKIP]
    except (tokenize.TokenError, SyntaxError):  # e.g. a fragment tokenize cannot end: plain collapse
        return " ".join(code.split())
    parts: list[str] = []
    previous = None
    dropped_comma = False
    for i, token in enumerate(tokens):
        following = tokens[i + 1].string if i + 1 < len(tokens) else ""
        if token.string == "," and following and following in _CLOSE:
            dropped_comma = True  # `f(a, b,\n)` -> `f(a, b)`
            continue
        if previous is not None:
            if previous.string in _OPEN or token.string in _CLOSE or dropped_comma:
                gap = ""
            elif previous.end[0] != token.start[0] or previous.end[1] != token.start[1]:
                gap = " "
            else:
                gap = ""
            parts.append(gap)
        parts.append(token.string)
        previous, dropped_comma = token, False
    text = "".join(parts)
    return " ".join(text.split()) if "\n" in text else text  # a multi-line string literal


def message_text(code: str, func_code: "str | Callable[[], str] | None" = None) -> str:
    """One line of at most MAX_CHARS: the call itself, else `func(...)`, else cut with `...`.

    `func_code` may be a function giving it: most calls are short, and need no second text."""
    text = one_line(code)
    if len(text) <= MAX_CHARS:
        return text
    if callable(func_code):
        func_code = func_code()
    if func_code is not None:
        short = one_line(func_code) + "(...)"
        if len(short) <= MAX_CHARS:
            return short
    return text[: MAX_CHARS - 3] + "..."
