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
  line and every question its models asked of the bindings gets the same answer;
- what the parse guard and the screen read from each top-level statement
  (gradlint/parse_guard.py, gradlint/screen.py), kept by the statement's ast
  node: an unchanged statement at the same place keeps its node.

Everything else (the screen's reach, the bindings pass, the models of what
changed, the rules, the fixes) runs again on every check, on the code the
screen keeps.  A check with a memo
gives exactly what a check without one gives (tests/test_incremental.py).
"""

from __future__ import annotations

from gradlint.incremental.ast_chunks import AstChunks


class NodeMemo:
    """Values computed from an ast node, kept while the node is (by identity: an id alone
    could be a freed node's, handed out again).  What the last check did not ask for is
    forgotten at the next check."""

    def __init__(self) -> None:
        self._kept: dict = {}
        self._used: dict = {}

    def get(self, node, key, compute):
        entry = self._used.get((id(node), key))
        if entry is None or entry[0] is not node:
            entry = self._kept.get((id(node), key))
            if entry is None or entry[0] is not node:
                entry = (node, compute())
            self._used[(id(node), key)] = entry
        return entry[1]

    def next_check(self) -> None:
        if self._used:
            self._kept, self._used = self._used, {}


class CstPieces:
    """libcst modules of piece texts, kept from one check to the next (those the last check used)."""

    def __init__(self) -> None:
        self._kept: dict[str, object] = {}
        self._used: dict[str, object] = {}
        self.parsed = 0  # pieces parsed by the current check (tests and benchmarks read it)

    def parse(self, text: str):
        module = self._used.get(text)
        if module is None:
            module = self._kept.get(text)
            if module is None:
                import libcst as cst

                module = cst.parse_module(text)
                self.parsed += 1
            self._used[text] = module
        return module

    def next_check(self) -> None:
        """Keep what the last check used (if it used anything), forget the rest."""
        if self._used:
            self._kept, self._used = self._used, {}
        self.parsed = 0


class PieceModels:
    """The first-pass loop models of each piece (gradlint/model/piecewise.py), by its libcst
    tree (the same object for the same text) and its place; what the last build did not use
    is forgotten at the next check."""

    def __init__(self) -> None:
        self._kept: dict = {}
        self._used: dict = {}

    def get(self, module, key):
        entry = self._used.get((id(module), key)) or self._kept.get((id(module), key))
        if entry is None or entry[0] is not module:
            return None
        self._used[(id(module), key)] = entry
        return entry[1]

    def put(self, module, key, value) -> None:
        self._used[(id(module), key)] = (module, value)

    def next_check(self) -> None:
        if self._used:
            self._kept, self._used = self._used, {}


class DocumentMemo:
    """One open buffer's reusable parses (see the module's docstring)."""

    def __init__(self) -> None:
        self.ast = AstChunks()
        self.cst = CstPieces()
        self.models = PieceModels()
        # what the parse guard and the screen read from each top-level statement's ast
        self.nodes = NodeMemo()

    def next_check(self) -> None:
        self.cst.next_check()
        self.models.next_check()
        self.nodes.next_check()
