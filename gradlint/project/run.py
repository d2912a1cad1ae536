"""The project index of one run: built before the files are analysed, installed in every
process that analyses them (the command line's own, or each worker of the pool)."""

from __future__ import annotations

import os
from typing import Optional

from gradlint.project.index import Index, has_gradient_words
from gradlint.project.view import View, view_of

# What this process knows of the run's project: the index and each checked file's view.
_INDEX: Optional[Index] = None
_VIEWS: dict = {}


def index_files(files, roots=()) -> tuple[Index, dict]:
    """`files`: (path, text, digest, wrappers) of every file the run checks.  Returns the
    index and the views (path -> View) of the files whose loops may call into another module."""
    index = Index(roots or [os.path.dirname(os.path.abspath(path)) or "." for path, *_ in files])
    texts = []
    for path, text, digest, wrappers in files:
        if has_gradient_words(text, wrappers):
            index.add(path, text, digest, wrappers)
        texts.append((path, text))
    index.close_imports()
    views: dict = {}
    if index.relevant:
        for path, text in texts:
            view = view_of(index, path, text)
            if view is not None:
                views[path] = view
    return index, views


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
