"""CPython's `ast` of a file, parsed once per check.

The parse guard, the screen and the position table each need the ast of
the same text; the C parser costs about a third of a big file's analysis,
so the last tree is remembered and handed out again for an equal text.
A file written for a newer Python than this one gets the tree of its text
with the newer syntax blanked (gradlint/parse/newer_syntax.py), positions kept.
The engine forgets it when its check ends (a 50,000-line file's tree is
tens of megabytes).  The last two trees are kept: the file's own (the
guard, the screen, and the statements a fix moves) and the screened text's
(the position table).  Another thread's text (the language server) simply
does not match and is parsed again.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Union

# A threading.local holding this thread's AstChunks while `reusing` holds (the language server's
# checks); made by the first `reusing`, so that the command line imports no threading.
_local = None
# The last two texts and their trees, or the SyntaxError each raises (the guard, the screen
# and the position table all ask, and a buffer being typed in the editor often does not parse);
# newest first.
_last: list[tuple[str, Union[ast.Module, SyntaxError]]] = []
# A newer construct starts on the line CPython stops at: without one of these words there,
# the error is a real one and the text is not scanned (newer_syntax.py).
_NEWER_HINT = re.compile(r"""(?<![\w.])(?:type|def|class|except)(?!\w)|(?<!\w)(?:[fF][rR]?|[rR][fF])["']""")


def parse(source: str) -> ast.Module:
    """`ast.parse(source)` without warnings (invalid escapes are the user's business); raises as it
    does, but reads syntax newer than the running Python."""
    global _last
    for known in list(_last):
        if known[0] is source or known[0] == source:
            if isinstance(known[1], SyntaxError):
                raise known[1]
            return known[1]
    chunks = getattr(_local, "chunks", None) if _local is not None else None
    try:
        tree = chunks.parse(source) if chunks is not None else parse_uncached(source)
    except SyntaxError as final:
        _last = [(source, final)] + _last[:1]
        raise
    _last = [(source, tree)] + _last[:1]
    return tree


def parse_uncached(source: str) -> ast.Module:
    """The whole text parsed (no memory of earlier texts)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source)
        except SyntaxError as error:
            return _parse_newer(source, error)


class reusing:
    """While this holds (`with reusing(chunks):`), this thread's parses go through `chunks` (an
    AstChunks of gradlint/incremental/ast_chunks.py), which reuses the statements of similar
    earlier texts: the language server, between edits of one buffer."""

    def __init__(self, chunks) -> None:
        self.chunks = chunks

    def __enter__(self) -> None:
        global _local
        if _local is None:
            import threading

            _local = threading.local()
        self.before = getattr(_local, "chunks", None)
        _local.chunks = self.chunks

    def __exit__(self, *exc) -> None:
        _local.chunks = self.before


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


def forget() -> None:
    global _last
    _last = []
