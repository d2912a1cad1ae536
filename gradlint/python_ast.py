"""CPython's `ast` of a file, parsed once per check.

The parse guard, the screen and the position table each need the ast of
the same text; the C parser costs about a third of a big file's analysis,
so the last tree is remembered and handed out again for an equal text.
The engine forgets it when its check ends (a 50,000-line file's tree is
tens of megabytes).  The last two trees are kept: the file's own (the
guard, the screen, and the statements a fix moves) and the screened text's
(the position table).  Another thread's text (the language server) simply
does not match and is parsed again.
"""

from __future__ import annotations

import ast
import warnings

_last: list[tuple[str, ast.Module]] = []  # newest first, at most two


def parse(source: str) -> ast.Module:
    """`ast.parse(source)` without warnings (invalid escapes are the user's business); raises as it does."""
    global _last
    for known in list(_last):
        if known[0] is source or known[0] == source:
            return known[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    _last = [(source, tree)] + _last[:1]
    return tree


def forget() -> None:
    global _last
    _last = []
