"""The project index of one run: built before the files are analysed, installed in every
process that analyses them (the command line's own, or each worker of the pool)."""

from __future__ import annotations

import os
from typing import Optional

from gradlint.project.index import MAX_IMPORT_DEPTH, Index, has_gradient_words, import_targets, import_words
from gradlint.project.view import View, view_of

# What this process knows of the run's project: the index and each checked file's view.
_INDEX: Optional[Index] = None
_VIEWS: dict = {}


def index_files(files, roots=(), every_module: bool = False) -> tuple[Index, dict]:
    """`files`: (path, text, digest, wrappers) of every file the run checks.  Returns the
    index and the views (path -> View) of the files whose loops may call into another module.
    `every_module`: summarize modules no file of the run imports too (the language server: an
    open buffer that imports one may not be saved yet)."""
    index = Index(roots or [os.path.dirname(os.path.abspath(path)) or "." for path, *_ in files])
    # A module's functions matter to another file only if some import line of the run names it
    # (its file name, or its package's folder for an __init__.py): a training script nobody
    # imports is not summarized (most files with gradient words are such scripts).
    words = {path: import_words(text) for path, text, *_ in files}
    imported = set().union(*words.values()) if words else set()
    others = []
    for path, text, digest, wrappers in files:
        if has_gradient_words(text, wrappers) and (every_module or _module_word(path) in imported):
            index.add(path, text, digest, wrappers)
        else:
            others.append((path, text, digest))
    # What a file with no gradient word imports from the project but the run does not check
    # (`gradlint train.py`, a pre-commit run of the changed files) is read too.
    for path, text, digest in others:
        key = os.path.abspath(path)
        for target in import_targets(text):
            index.resolve(target, key, on_disk=True)
    index.close_imports()
    if not index.relevant:
        return index, {}
    # A file with no gradient word may still loop over calls of the project's functions, or wrap
    # them (`Trainer.train_step` calling `self.stepper.run(loss)`): it is read when a word of its
    # imports can reach one, and then what reaches it may reach further, a few rounds deep.
    for _ in range(MAX_IMPORT_DEPTH):
        callers = [f for f in others if not words[f[0]].isdisjoint(index.reachable_words)]
        if not callers:
            break
        others = [f for f in others if f not in callers]
        for path, text, digest in callers:
            index.add(path, text, digest, None, summarize_all=True)
        index.close_imports()
    views: dict = {}
    for path, *_ in files:
        view = view_of(index, path)
        if view is not None:
            views[path] = view
    return index, views


def _module_word(path: str) -> str:
    """The word an import of this file holds: `trainer` of trainer.py, `engine` of engine/__init__.py."""
    folder, name = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(name)[0]
    return os.path.basename(folder) if stem == "__init__" else stem


def install(index: Optional[Index], views: dict) -> None:
    global _INDEX, _VIEWS
    _INDEX, _VIEWS = index, dict(views)


def view_for(path: str) -> Optional[View]:
    return _VIEWS.get(path)


def project_for(path: str):
    """The Project (foreign.py) a check of this file models other modules' functions with, or None."""
    view = _VIEWS.get(path)
    if view is None or _INDEX is None:
        return None
    from gradlint.project.foreign import Project

    return Project(_INDEX, view)


def install_and_load(index, views, load) -> None:
    """A worker's start: the run's project, then the analysis's imports (engine.load_analysis)."""
    install(index, views)
    load()
