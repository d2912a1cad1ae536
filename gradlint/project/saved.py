"""The project's views of one run, saved in the result cache: a warm run builds no index.

Building the index reads and scans every file of the run and parses the modules its callers
reach (run.py); on a tree like the torch package that is most of a cold run.  What a run
needs of it before any file is analysed is only the views (view.py): which files call into
the project, and the digest that goes into their cache keys.  So the views are saved under
a key made of everything the build read from the run (gradlint's code, the roots, every
file's path, digest and wrappers), together with what the build asked of the disk beyond
those files (folder listings, which paths are files, the modules it read; `Index.disk`).
A later run with the same key serves the views while every one of those answers is still
the same; the index itself is built only when a file with a view has to be analysed.
"""

from __future__ import annotations

import os
from typing import Optional

from gradlint.core.digest import hex_digest
from gradlint.project.index import Index, listed, listing_digest, read_module
from gradlint.project.view import View

LAYOUT = "project-views-2"  # bump when the entry's format changes
AREA = "project"  # the cache's folder for these entries


def run_key(cache, files, roots) -> str:
    """`files`: (path, text, digest, wrappers) of every file of the run, as index_files takes them."""
    parts = [LAYOUT, cache.code]
    for root in roots:  # a root's kind decides where imports are looked for
        parts.append(f"root\0{root}\0{os.path.isdir(root)}\0{os.path.isfile(root)}")
    for path, _, digest, wrappers in files:
        parts.append(f"file\0{os.path.abspath(path)}\0{path}\0{digest}\0{wrappers!r}")
    return hex_digest("\n".join(parts).encode("utf-8", "surrogateescape"), size=20)


def save(cache, key: str, index: Index, views: dict) -> None:
    cache.put_json(key, area=AREA, value={
        "layout": LAYOUT,
        "views": [
            [path, v.key, list(v.words), v.digest, list(v.callbacks), v.runs_for, list(v.subclasses)]
            for path, v in sorted(views.items())
        ],
        "disk": [[kind, path, answer] for (kind, path), answer in sorted(index.disk.items())],
    })


def load(cache, key: str) -> Optional[dict]:
    """The saved views (path -> View) when the entry is there, well formed, and the disk still
    answers as it did; else None (build the index)."""
    data = cache.get_json(key, AREA)
    try:
        if not isinstance(data, dict) or data.get("layout") != LAYOUT:
            return None
        for kind, path, answer in data["disk"]:
            if _ask(kind, path) != answer:
                return None
        views = {}
        for path, view_key, words, digest, callbacks, runs_for, subclasses in data["views"]:
            if not all(isinstance(s, str) for s in (path, view_key, digest, runs_for, *words, *callbacks, *subclasses)):
                return None
            views[path] = View(view_key, tuple(words), digest, tuple(callbacks), runs_for, tuple(subclasses))
        return views
    except (TypeError, ValueError, KeyError):
        return None  # a damaged entry is no answer: the index is built


def _ask(kind, path):
    """The disk's answer now to a question the build asked (Index.disk)."""
    if not isinstance(path, str):
        return None
    if kind == "dir":
        return listing_digest(listed(path))
    if kind == "file":
        return os.path.isfile(path)
    if kind == "read":
        return read_module(path)[1]
    return None
