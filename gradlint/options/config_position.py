"""Where in a TOML file a configuration error is: `path:line:col:`.

tomllib reports where a syntax error is, but a valid file with a bad value
(`select = "GL001"`) comes back as plain data without positions.  The key's
line is found again in the text: a line `KEY = ...` inside the gradlint
table (or a `[tool.gradlint.KEY]` header).  A key that cannot be found
(written as a dotted key, say) keeps the message without a position.
"""

from __future__ import annotations

import re

from gradlint.core import source_lines

# Linear-time patterns only: no repeated group whose alternatives overlap (a
# `\s*` beside a class that also takes spaces backtracks quadratically or worse).
_AT = re.compile(r"\(at line (\d+), column (\d+)\)$")
_AT_END = " (at end of document)"
_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]")  # the name is stripped by its reader
# parse_table's messages: "PATH: [tool.gradlint] KEY: ..." or "PATH: [tool.gradlint]: unknown key 'KEY' ..."
_KEY_IN_MESSAGE = re.compile(r"^\[tool\.gradlint\](?: ([\w-]+)|: unknown key '([^']+)')")


def toml_error_position(exc, text: str) -> tuple[int, int, str]:
    """(line, column, the reason without its position) of a TOMLDecodeError in `text`;
    line 0 when unknown."""
    message = str(exc)
    line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)  # Python 3.14+
    if getattr(exc, "msg", None) and line:
        return line, col or 1, exc.msg
    found = _AT.search(message)
    if found:
        return int(found.group(1)), int(found.group(2)), message[: found.start()].rstrip()
    if message.endswith(_AT_END):  # tomllib before 3.14 gives no position there: the text's end is it
        line, col = end_position(text)
        return line, col, message[: -len(_AT_END)]
    return 0, 0, message


def end_position(text: str) -> tuple[int, int]:
    """(line, column) just after the last character of `text`, 1-based."""
    last_line = text.rsplit("\n", 1)[-1]
    return text.count("\n") + 1, len(last_line) + 1


def with_key_position(message: str, path: str, text: str, top_level: bool) -> str:
    """`PATH: [tool.gradlint] select: ...` -> `PATH:LINE:COL: [tool.gradlint] select: ...`."""
    prefix = f"{path}: "
    if not message.startswith(prefix):
        return message
    rest = message[len(prefix):]
    named = _KEY_IN_MESSAGE.match(rest)
    if not named:
        return message
    found = key_position(text, named.group(1) or named.group(2), top_level)
    return f"{path}:{found[0]}:{found[1]}: {rest}" if found else message


def key_position(text: str, key: str, top_level: bool):
    """(line, column) of `key` in the gradlint table of `text`, or None."""
    table = "" if top_level else "tool.gradlint"
    current = ""
    assignment = re.compile(r"^(\s*)(?:" + re.escape(key) + r"|\"" + re.escape(key) + r"\"|'" + re.escape(key) + r"')\s*=")
    for number, line in enumerate(source_lines.lines(text), 1):
        header = _HEADER.match(line)
        if header and not line.lstrip().startswith("[["):
            current = header.group(1).strip().replace('"', "").replace(" ", "")
            if current == f"{table}.{key}".lstrip("."):
                return number, len(line) - len(line.lstrip()) + 1
            continue
        if current == table:
            found = assignment.match(line)
            if found:
                return number, len(found.group(1)) + 1
    return None


def unreadable_toml(path: str, text: str, exc: BaseException) -> str:
    """The message for TOML that tomllib cannot read although it may be valid: nesting deeper
    than its recursion, or an integer longer than Python converts.  Placed where known."""
    if isinstance(exc, RecursionError):
        found = deepest_bracket(text)
        reason = "nested too deeply to read (arrays or inline tables)"
    elif isinstance(exc, ValueError) and "digits" in str(exc):
        found = longest_digits(text)
        reason = "a number too long to read"
    else:
        found, reason = None, f"cannot be read ({type(exc).__name__})"
    where = f"{path}:{found[0]}:{found[1]}" if found else path
    return f"{where}: invalid TOML: {reason}"


def deepest_bracket(text: str):
    """(line, column) of the outermost bracket of the first value that reaches the deepest level
    of `[`/`{` nesting, strings and comments skipped; None without brackets.  One pass, no
    regular expression."""
    depth = deepest = 0
    found = outer = None
    line, start = 1, 0
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == "\n":
            line, start = line + 1, i + 1
        elif char == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif char in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else char
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                if text[j] == "\\" and quote[0] == '"':
                    j += 1
                elif text[j] == "\n":
                    if len(quote) == 1:
                        break  # an unclosed one-line string (a TOML error, found elsewhere)
                    line, start = line + 1, j + 1
                j += 1
            i = j + len(quote)
            continue
        elif char in "[{":
            depth += 1
            if depth == 1:
                outer = (line, i - start + 1)
            if depth > deepest:
                deepest, found = depth, outer
        elif char in "]}":
            depth = max(0, depth - 1)
        i += 1
    return found


def longest_digits(text: str):
    """(line, column) of the longest run of digits (and `_`) in `text`, None when there is none."""
    best, best_at = 0, None
    run_start = None
    for i, char in enumerate(text + " "):
        if char.isdigit() or (char == "_" and run_start is not None):
            if run_start is None:
                run_start = i
            continue
        if run_start is not None and i - run_start > best:
            best, best_at = i - run_start, run_start
        run_start = None
    if best_at is None:
        return None
    line = text.count("\n", 0, best_at) + 1
    return line, best_at - (text.rfind("\n", 0, best_at) + 1) + 1
