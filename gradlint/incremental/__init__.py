"""What the checks of one open buffer keep for the next check of its edited text.

The language server checks a buffer again after every edit, and an edit
usually changes one statement of a long file.  A DocumentMemo holds what the
last checks parsed, so the next check of that buffer re-parses only what the
edit touched:

- CPython's ast, top-level statement by top-level statement (ast_chunks.py);
- libcst's tree of each top-level statement the screen kept, by its text:
  the model is then built from those trees in pieces (gradlint/model/piecewise.py,
  the same machinery that keeps huge files' memory small, which gives exactly
  the model of a whole parse);
- each piece's loop models, reused while the piece is the same tree at the same
  line and the complete bindings answer its models' questions as before;
- what the parse guard and the screen read from each top-level statement
  (gradlint/parse/parse_guard.py, gradlint/check/screen.py), kept by the statement's ast
  node: an unchanged statement at the same place keeps its node.

Everything else (the screen's reach, the bindings pass, the models of what
changed, the rules, the fixes) runs again on every check, on the code the
screen keeps.  A check with a memo gives exactly what a check without one
gives (tests/test_incremental.py).
"""

from __future__ import annotations

from gradlint.incremental.ast_chunks import AstChunks


class _Generations:
    """Entries kept from one check to the next: those the last check used (a check that used
    none keeps the ones before it); the rest are forgotten."""

    def __init__(self) -> None:
        self._kept: dict = {}
        self._used: dict = {}

    def _find(self, key):
        entry = self._used.get(key)
        if entry is None:
            entry = self._kept.get(key)
            if entry is not None:
                self._used[key] = entry
        return entry

    def next_check(self) -> None:
        if self._used:
            self._kept, self._used = self._used, {}


class ByIdentity(_Generations):
    """Values computed from an object (an ast statement, a libcst piece), kept while that object
    lives: looked up by identity, since an id alone could be a freed object's, handed out again."""

    def get(self, owner, key, compute=None):
        """The value for (owner, key); computed (and kept) when missing, or None without `compute`."""
        entry = self._find((id(owner), key))
        if entry is None or entry[0] is not owner:
            if compute is None:
                return None
            entry = (owner, compute())
            self._used[(id(owner), key)] = entry
        return entry[1]

    def put(self, owner, key, value) -> None:
        self._used[(id(owner), key)] = (owner, value)


class CstPieces(_Generations):
    """libcst modules of piece texts, kept from one check to the next.

    Trees are never changed, but their nodes are told apart by identity (positions number
    them, bindings keep defs): two equal pieces of one file (a class written twice) must be two
    trees, or the first copy's nodes would take the second's lines.  So a tree is kept by its
    text and by which occurrence of that text in the check it is."""

    def __init__(self) -> None:
        super().__init__()
        self.parsed = 0  # pieces parsed by the current check (tests and benchmarks read it)
        self._seen: dict[str, int] = {}  # text -> how many times the current check asked for it

    def parse(self, text: str):
        occurrence = self._seen.get(text, 0)
        self._seen[text] = occurrence + 1
        key = (text, occurrence)
        module = self._find(key)
        if module is None:
            from gradlint.parse.cst_parse import parse_module

            module = self._used[key] = parse_module(text)
            self.parsed += 1
        return module

    def next_check(self) -> None:
        super().next_check()
        self.parsed = 0
        self._seen = {}


class DocumentMemo:
    """One open buffer's reusable parses (see the module's docstring)."""

    def __init__(self) -> None:
        self.ast = AstChunks()
        self.cst = CstPieces()
        # each piece's first-pass loop models, by its libcst tree and its first line
        self.models = ByIdentity()
        # what the parse guard and the screen read from each top-level statement's ast
        self.nodes = ByIdentity()

    def next_check(self) -> None:
        self.cst.next_check()
        self.models.next_check()
        self.nodes.next_check()
