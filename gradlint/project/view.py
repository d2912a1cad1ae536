"""What one checked file sees of the project: the words that make its loops worth modelling,
and the digest of everything its result depends on in other files (for the cache key)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from gradlint.digest import hex_digest
from gradlint.project.index import MAX_IMPORT_DEPTH, Index, Module


@dataclass(frozen=True)
class View:
    key: str  # the checked file's absolute path
    # Names that, written in this file, may call a function of another module that touches
    # gradients: the prefilter and the screen treat them as they treat a configured wrapper.
    words: tuple[str, ...]
    digest: str  # of every module reachable through its imports that holds such a function


def _reachable(index: Index, key: str, module: Module) -> tuple[set[str], set[str]]:
    """(words, module keys) reachable from this module's imports, MAX_IMPORT_DEPTH deep."""
    words: set[str] = set()
    keys: set[str] = set()
    frontier = [(key, module, 0)]
    seen = {key}
    while frontier:
        here, current, depth = frontier.pop()
        for local, qualified in current.aliases.items():
            found = index.lookup(qualified, here)
            if found is None:
                continue
            kind, target, target_module = found[0], found[1], found[2]
            hit = _relevant_words(index, found)
            if hit:
                keys.add(target)
                if depth == 0:
                    words.add(local)
                    words |= hit
            if target not in seen and depth + 1 < MAX_IMPORT_DEPTH and target_module.summarized:
                seen.add(target)
                frontier.append((target, target_module, depth + 1))
                keys.add(target)
    return words, keys


def _relevant_words(index: Index, found) -> set[str]:
    """The names under which what an import names reaches a function that touches gradients."""
    kind, key, module = found[0], found[1], found[2]
    if kind == "function":
        return {found[3].name} if index.is_relevant(key, found[3]) else set()
    if kind == "class":
        out = set()
        cls = found[3]
        for name in _method_names(index, key, cls):
            hit = index.method(key, cls, name)
            if hit is not None and index.is_relevant(hit[0], hit[3]):
                out.add(name)
        return out | {cls.name} if out else set()
    if kind == "module":
        out = {f.name for f in module.functions.values() if index.is_relevant(key, f)}
        for cls in module.classes.values():
            out |= _relevant_words(index, ("class", key, module, cls))
        return out
    return set()


def _method_names(index: Index, key: str, cls, depth: int = 0) -> set[str]:
    names = set(cls.methods)
    module = index.modules.get(key)
    if module is None or depth > 3:
        return names
    for base in cls.bases:
        found = index.class_named(base, key, module)
        if found is not None:
            names |= _method_names(index, found[0], found[1], depth + 1)
    return names


def view_of(index: Index, path: str) -> Optional[View]:
    """The file's view, or None when nothing it imports reaches a function that touches
    gradients (its result then depends on no other file)."""
    key = os.path.abspath(path)
    module = index.modules.get(key)
    if module is None:
        return None
    return reachable_view(index, key, module)


def reachable_view(index: Index, key: str, module: Module) -> Optional[View]:
    """The view of the module at `key` as `module` reads (the language server: an unsaved buffer)."""
    words, keys = _reachable(index, key, module)
    if not words:
        return None
    parts = sorted(f"{k}\0{index.modules[k].digest}" for k in keys if index.modules.get(k) is not None)
    return View(key, tuple(sorted(words)), hex_digest("\n".join(parts).encode("utf-8", "surrogateescape"), size=12))
