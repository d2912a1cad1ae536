"""What the stages of one file's check share, handed to them as an argument.

The engine makes one FileContext when it starts checking a file and passes it
to each stage that needs more than its text: the data-literal pass, the parse
guard, the screen, the position table and the fixes all read CPython's tree
of the same text, and the C parser costs about a third of a big file's
analysis, so the context parses each text once and hands the tree (or the
SyntaxError it raised: a buffer being typed often does not parse) out again.
The last two texts asked about are kept: the file's own (the guard, the
screen, the statements a fix moves) and the screened text's (the position
table).  With the language server's memo (gradlint/incremental), the trees
come from its AstChunks, which re-parses only what an edit touched.

Nothing here outlives the check: the context dies with it, and with it the
trees (a 50,000-line file's is tens of megabytes) and the fixes' statement
index.  A stage called without one (a test, a benchmark) makes its own.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from gradlint.parse import python_ast
from gradlint.core import source_lines

NOT_INDEXED = object()  # FileContext.statements before a fix asked for them
# From this size on, a fix reads the statements of the screened text (the loops and what they
# reach, the rest blank: the same statements where a fix can move or insert), and its proof
# re-checks the fixed screened text: a generated module is not parsed whole again for them.
SCREENED_FIXES_FROM = 64 * 1024


class FileContext:
    """One check of one file: its path, its text, the memo of its buffer, and what was parsed of it."""

    def __init__(self, path: str, source: str, memo=None) -> None:
        self.path = path
        # The text analysed: the engine sets it once, before any other stage, to the file's text
        # with its big numeric data literals emptied (gradlint/parse/data_literals.py).
        self.source = source
        self.memo = memo  # the buffer's gradlint.incremental.DocumentMemo (the language server), or None
        # fix/statements.py's Statements of `source` (None: it does not parse), made by the first
        # fix that asks (gradlint/fix: every finding of a file plans on the same index)
        self.statements = NOT_INDEXED
        # What libcst was handed: the source with what no loop reaches blanked (check/screen.py),
        # same lines; None until the engine screened it (or nothing was screened).
        self.screened: Optional[str] = None
        # The lines where the screen's prefilter found a spelling (None: not screened), and what
        # gradlint/model/coverage.py made of the file's gradient calls: (calls, the other files'
        # calls this file's loops followed, the names the file calls), for its FileResult.
        self.event_lines: Optional[list] = None
        self.coverage: tuple = ((), frozenset(), frozenset())
        self._trees: list[tuple[str, Union[ast.Module, BaseException]]] = []  # newest first
        self._lines: Optional[list[str]] = None

    def tree(self, text: Optional[str] = None) -> ast.Module:
        """CPython's tree of `text` (default: the source), parsed once: python_ast.parse's tree,
        raising what it raises (a SyntaxError is remembered and raised again)."""
        if text is None:
            text = self.source
        for known, tree in self._trees:
            if known is text or known == text:
                if isinstance(tree, SyntaxError):
                    raise tree
                return tree
        parse = self.memo.ast.parse if self.memo is not None else python_ast.parse
        try:
            tree = parse(text)
        except SyntaxError as error:
            self._trees = [(text, error)] + self._trees[:1]
            raise
        self._trees = [(text, tree)] + self._trees[:1]
        return tree

    def fix_tree(self) -> ast.Module:
        """The tree a fix reads statements from: the source's, or for a big file the screened
        text's (SCREENED_FIXES_FROM)."""
        if self.screened is not None and len(self.source) >= SCREENED_FIXES_FROM:
            return self.tree(self.screened)
        return self.tree()

    def forget_trees(self) -> None:
        """Let the trees go now (a huge file built in pieces keeps only its position table)."""
        self._trees = []

    @property
    def lines(self) -> list[str]:
        """The source split into lines with their ends (fixes read it often; never changed)."""
        if self._lines is None:
            self._lines = source_lines.lines(self.source, keepends=True)
        return self._lines
