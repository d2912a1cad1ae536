"""CPython's `ast` of a text, reading syntax newer than the running Python.

A file written for a newer Python than this one gets the tree of its text
with the newer syntax blanked (gradlint/parse/newer_syntax.py), positions kept.
Nothing is remembered here: a check parses each text once through its
FileContext (gradlint/parse/file_context.py), which keeps the trees for the check.
"""

from __future__ import annotations

import ast
import re
import warnings

# A newer construct starts on the line CPython stops at: without one of these words there,
# the error is a real one and the text is not scanned (newer_syntax.py).
_NEWER_HINT = re.compile(r"""(?<![\w.])(?:type|def|class|except)(?!\w)|(?<!\w)(?:[fF][rR]?|[rR][fF])["']""")


def parse(source: str) -> ast.Module:
    """`ast.parse(source)` without warnings (invalid escapes are the user's business); raises as it
    does, but reads syntax newer than the running Python."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except SyntaxError as error:
            return _parse_newer(source, error)


def _parse_newer(source: str, error: SyntaxError) -> ast.Module:
    """Code for a newer Python than this one: the tree of the text with that syntax blanked
    (gradlint/parse/newer_syntax.py; same lines and columns), else CPython's error."""
    if error.text is not None and not _NEWER_HINT.search(error.text):
        raise error
    from gradlint.parse.newer_syntax import readable

    text = readable(source)
    if text is None:
        raise error
    try:
        return ast.parse(text)
    except SyntaxError:
        raise error from None

