"""The project index of a language server's workspace: built and kept current in the
background, read without waiting.

The index of a workspace takes a while (every file read, those with gradient words parsed
by `ast`), and an edit must never wait for it: a check asks `project_for`, which answers
from the index as it is, or None while the first one is still being built (the buffer is
then checked alone, as before; the server re-checks the open buffers once it is ready).
A saved file is summarized again in the background and a new index replaces the old one
in one assignment, so a check on another thread always reads a whole index.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Optional

from gradlint.run.cache import content_digest
from gradlint.project.index import Index, Module
from gradlint.run.project_run import index_files
from gradlint.project.view import reachable_view


class WorkspaceIndex:
    def __init__(self, on_ready: Optional[Callable[[], None]] = None) -> None:
        self.index: Optional[Index] = None  # replaced whole, never changed in place
        self.on_ready = on_ready  # called (on the builder's thread) after each new index
        self._lock = threading.Lock()  # between builders only: readers never take it
        self._thread: Optional[threading.Thread] = None
        self.roots: list[str] = []
        self.error: Optional[str] = None  # the last build's failure, if any

    # --- building, on a thread of its own --------------------------------------------------

    def start(self, roots: list[str]) -> None:
        self.roots = [r for r in roots if r and os.path.isdir(r)]
        if self.roots:
            self._run(self._build)

    def file_saved(self, path: str) -> None:
        """Index the workspace again after a save (a trainer method just fixed changes its
        callers' findings); the old index serves until the new one is ready."""
        if self.index is not None and path.endswith(".py") and any(_under(path, r) for r in self.roots):
            self._run(self._build)

    def _run(self, work: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                with self._lock:
                    work()
            except Exception:  # an index is a help, never a reason to stop serving
                import traceback

                self.error = traceback.format_exc()  # the server logs it

        self._thread = threading.Thread(target=guarded, name="gradlint-index", daemon=True)
        self._thread.start()

    def _build(self) -> None:
        from gradlint.run.discover import discover
        from gradlint.check.engine import MAX_FILE_BYTES, decode

        found = discover(self.roots)
        files = []
        for path in found.files:
            if not path.endswith(".py"):
                continue
            try:
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    continue
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            text, error = decode(data, path)
            if error is None:
                files.append((path, text, content_digest(data), None))
        index, _ = index_files(files, self.roots, every_module=True)
        self._publish(index)

    def _publish(self, index: Index) -> None:
        self.index = index
        if self.on_ready is not None:
            self.on_ready()

    def wait(self, timeout: float = 30.0) -> None:
        """Tests: until the background work started so far is done."""
        if self._thread is not None:
            self._thread.join(timeout)

    # --- reading (the check thread) ----------------------------------------------------------

    def project_for(self, path: str, text: str, context=None):
        """The Project a check of this buffer models other modules' functions with, or None
        (no index yet, or nothing the buffer imports reaches one).  Never waits.  `context`:
        the check's FileContext (gradlint/parse/file_context.py), whose tree of the text is read."""
        index = self.index
        # nothing touches gradients in another module, and no class stores an optimizer a loop
        # here could step through an instance (the command line's _builder_views): no project
        if index is None or not (index.relevant or index.builder_words):
            return None
        module = _buffer_module(path, text, context)
        if module is None:
            return None
        index.bind_buffer_stars(os.path.abspath(path), module)
        index.learn_search(os.path.abspath(path), text)  # the buffer's sys.path lines, saved or not
        view = reachable_view(index, os.path.abspath(path), module)
        if view is None:
            return None
        from gradlint.model.foreign import Project

        return Project(index, view)


def _buffer_module(path: str, text: str, context=None) -> Optional[Module]:
    """The open buffer's imports (what is unsaved counts, not the file on disk).  With the
    check's `context`, its tree is the one the check reads next."""
    if "import" not in text:
        return None
    from gradlint.parse import python_ast
    from gradlint.project.index import _aliases, _imports_anywhere, _stars

    try:
        tree = context.tree(text) if context is not None else python_ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    imports = _imports_anywhere(tree)
    return Module(path, "", _aliases(imports), stars=_stars(imports))


def _under(path: str, root: str) -> bool:
    return os.path.abspath(path).startswith(os.path.abspath(root) + os.sep)
