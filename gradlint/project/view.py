"""What one checked file sees of the project: the words that make its loops worth modelling,
and the digest of everything its result depends on in other files (for the cache key)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gradlint.core.digest import hex_digest
from gradlint.project.index import MAX_IMPORT_DEPTH, Index, Module


@dataclass(frozen=True)
class View:
    key: str  # the checked file's absolute path
    # Names that, written in this file, may call a function of another module that touches
    # gradients: the prefilter and the screen treat them as they treat a configured wrapper.
    words: tuple[str, ...]
    digest: str  # of every module of the project its analysis can read
    # Names those functions call: one may be a function or a method of this file handed to
    # them (a callback), so the screen keeps this file's defs of those names.
    callbacks: tuple[str, ...] = ()
    # A module the run does not check, analysed for a file it checks (`runs_for`, its path as
    # the run names it): a base class of it whose loop runs, through `self`, the overrides of
    # the `subclasses` ("module key\0class name") that file defines or uses (project_run.py's
    # _companions).  Only those overrides are followed there.
    runs_for: str = ""
    subclasses: tuple[str, ...] = ()


MAX_BASE_DEPTH = 3  # a subclass of a subclass of ... a base class, this many levels


def _worth_following(index: Index, qualified: str, here: str) -> bool:
    """Can this import reach a function that touches gradients?  Its last name must be one
    such function's, its class's, its module's or a package above it (the text scan's words),
    and it must resolve to a module holding one (or a package's __init__.py above one, which
    may re-export it): the index parses nothing for the others."""
    last = qualified.rstrip(".").rsplit(".", 1)[-1]
    if last not in index.reachable_words:
        return False
    if index.holders is None:
        return True
    found = index.resolve(qualified, here)
    return found is not None and found[0] in index.holders


def _followed(index: Index, here: str, module: Module) -> list[tuple[str, tuple]]:
    """(local name, what the lookup found) of each import of the module at `here` worth
    following, in the order of the names.  Asked once per module of the index and kept while
    the index's relevance stands (_memo): every file that imports a module shares its lookups.
    An unsaved buffer (a module other than the index's own at `here`) is looked up afresh."""
    shared = module is index.modules.get(here)
    memo = _memo(index)
    if shared and ("followed", here) in memo:
        return memo[("followed", here)]
    out = []
    for local, qualified in sorted(module.aliases.items()):
        if not _worth_following(index, qualified, here):
            continue
        found = index.lookup(qualified, here)
        if found is not None:
            out.append((local, found))
    if shared:
        memo[("followed", here)] = out
    return out


def parse_reachable(index: Index, key: str, module: Module, expanded: dict) -> None:
    """Parse the modules this module's imports reach, MAX_IMPORT_DEPTH levels deep (the module
    itself is the first), and what their relevance asks of them (a class's bases).  `expanded`
    (module key -> the levels read from it), shared by every caller of one build: a module
    whose imports were followed as deep already is not followed again, so a build costs each
    module's imports a few times, not once per file that reaches it."""
    level = [(key, module)]
    for levels in range(MAX_IMPORT_DEPTH, 0, -1):
        below = []
        for here, current in level:
            if expanded.get(here, 0) >= levels:
                continue
            expanded[here] = levels
            for _, found in _followed(index, here, current):
                _relevant_words(index, found)  # a class's methods are looked up through its bases
                below.append((found[1], found[2]))
        level = below


def walk(index: Index, key: str, module: Module, callbacks: Optional[set] = None) -> set[str]:
    """The words of this module's imports that reach a function that touches gradients (their
    names, and the names under which they reach it).  `callbacks` collects what the relevant
    functions reached call, MAX_IMPORT_DEPTH levels of imports deep (this module the first)."""
    words: set[str] = set()
    calls = callbacks if callbacks is not None else set()
    for local, found in _followed(index, key, module):
        hit = _relevant_words(index, found, calls)
        if hit:
            words.add(local)
            words |= hit
        if MAX_IMPORT_DEPTH > 1:
            calls |= _reached_calls(index, found[1], found[2], MAX_IMPORT_DEPTH - 1)
    return words


def _reached_calls(index: Index, key: str, module: Module, levels: int) -> frozenset:
    """What the relevant functions that the imports of the module at `key` reach call, `levels`
    levels deep (the module itself is the first).  Memoised per module and depth: a file's
    view costs what its own imports reach, the modules below them are read once per index (a
    walk per file of everything within four imports made 500 modules importing 20 names each
    cost 9 M lookups)."""
    memo = _memo(index)
    held = memo.get(("calls", key, levels))
    if held is None:
        calls: set = set()
        for _, found in _followed(index, key, module):
            _relevant_words(index, found, calls)
            if levels > 1:
                calls |= _reached_calls(index, found[1], found[2], levels - 1)
        held = memo[("calls", key, levels)] = frozenset(calls)
    return held


def _relevant_words(index: Index, found, callbacks: Optional[set] = None) -> set[str]:
    """The names under which what an import names reaches a function that touches gradients.
    Memoised per target while the index's relevance stands: every caller of a big package
    imports the same modules (`import torch.nn as nn` in each of torch's own files), and each
    class's methods are looked up through its bases only once."""
    kind, key = found[0], found[1]
    target = (kind, key, found[3].qualname if kind == "function" else found[3].name if kind == "class" else "")
    memo = _memo(index)
    if target not in memo:
        calls: set = set()
        memo[target] = (frozenset(_relevant_words_now(index, found, calls)), frozenset(calls))
    words, calls = memo[target]
    if callbacks is not None:
        callbacks |= calls
    return set(words)


def _memo(index: Index) -> dict:
    """The index's memo of _relevant_words, renewed when relevance is decided again (a new
    `relevant` set) or the index is frozen (a frozen lookup parses nothing more)."""
    held = index.__dict__.get("_words_memo")
    if held is None or held[0] is not index.relevant or held[1] != index.frozen:
        held = index.__dict__["_words_memo"] = (index.relevant, index.frozen, {})
    return held[2]


def _relevant_words_now(index: Index, found, sink: set) -> set[str]:
    kind, key, module = found[0], found[1], found[2]
    if kind == "function":
        if not index.is_relevant(key, found[3]):
            return _factory_words(index, key, module, found[3], sink)
        sink |= found[3].calls
        return {found[3].name}
    if kind == "class":
        out = set()
        cls = found[3]
        for name in _method_names(index, key, cls):
            hit = index.method(key, cls, name)
            if hit is not None and index.is_relevant(hit[0], hit[3]):
                out.add(name)
                sink |= hit[3].calls
        return out | {cls.name} if out else set()
    if kind == "module":
        out = set()
        for f in module.functions.values():
            if index.is_relevant(key, f):
                out.add(f.name)
                sink |= f.calls
        for cls in module.classes.values():
            out |= _relevant_words(index, ("class", key, module, cls), sink)
        # what a package's __init__.py imports is its too (`import pkg; pkg.update(...)` with
        # `from .ops import update` there), when its name can reach such a function at all
        for local, qualified in sorted(module.aliases.items()):
            if local in out or local not in index.reachable_words:
                continue
            again = index.lookup(qualified, key)
            if again is not None and again[0] in ("function", "class") and _relevant_words(index, again, sink):
                out.add(local)
        return out
    return set()


def _factory_words(index: Index, key: str, module: Module, function, sink: set) -> set[str]:
    """A factory of the project that touches no gradient itself but returns an object of a
    class whose methods do (`agent = get_agent(cfg)`, returning `SAC(...)` or `TD3(...)`):
    the loop that calls `agent.update(batch)` is worth modelling, so the factory's name and
    the names of those methods are words of the file that imports it.  Only a function that
    calls such a class by name is parsed (the index's `factory_classes` reads its returns)."""
    if not function.calls & index.reachable_words:
        return set()
    made = index.factory_classes(key, module, function)
    if not made:
        return set()
    out: set = set()
    for made_key, cls in made:
        made_module = index.module(made_key)
        if made_module is not None:
            out |= _relevant_words(index, ("class", made_key, made_module, cls), sink)
    return out | {function.name} if out else set()


def _method_names(index: Index, key: str, cls, depth: int = 0) -> set[str]:
    names = set(cls.methods)
    module = index.module(key)
    if module is None or depth > 3:
        return names
    for base in cls.bases:
        found = index.class_named(base, key, module)
        if found is not None:
            names |= _method_names(index, found[0], found[1], depth + 1)
    return names


def view_of(index: Index, key: str) -> Optional[View]:
    """The view of a parsed module of the index, or None when nothing it imports reaches a
    function that touches gradients (its result then depends on no other file)."""
    module = index.module(key)
    return reachable_view(index, key, module) if module is not None else None


def reachable_view(index: Index, key: str, module: Module) -> Optional[View]:
    """The view of the module at `key` as `module` reads (the language server: an unsaved buffer)."""
    callbacks: set = set()
    words = walk(index, key, module, callbacks)
    handed = ((k, attrs) for k, attrs in list(index.delivered.items()) + list(index.handed.items()))
    # classes handed to this file's classes (construction.py) and to its functions' parameters
    # (handed.py)
    for (here, _owner), attrs in handed:
        if here != key:
            continue
        for target, class_name in attrs.values():
            target_module = index.module(target)
            cls = target_module.classes.get(class_name) if target_module is not None else None
            if cls is not None:
                words |= _relevant_words(index, ("class", target, target_module, cls), callbacks)
    words |= _builder_words(index, key, module)
    words |= subclass_words(index).get(key, set())
    if not words:
        return None
    return View(key, tuple(sorted(words)), index_digest(index), tuple(sorted(callbacks - words)))


def subclass_words(index: Index) -> dict:
    """module key -> the names of the methods that touch gradients of the subclasses its classes
    have in other modules of the project, which those classes call on self (`def
    train_actor_critic(self, ...): pass` in the base class whose loop calls
    `self.train_actor_critic(...)`, the override in a2c_continuous.py): the base's loop runs
    the override, though the base's module imports nothing of its subclass's.  Once per index
    (memoised while its relevance stands)."""
    return _subclasses(index)[0]


def subclass_owners(index: Index) -> dict:
    """module key -> {(module key, class name, base class name)}: the subclasses of other modules
    whose overrides (subclass_words) a class of that module runs through `self`, with the base
    class of that module they derive from (its methods are the ones that run them)."""
    return _subclasses(index)[1]


def _subclasses(index: Index) -> tuple[dict, dict]:
    held = index.__dict__.get("_subclass_words")
    if held is not None and held[0] is index.relevant:
        return held[1], held[2]
    out: dict = {}
    owners: dict = {}
    for key, module in sorted(index.modules.items()):
        for cls in module.classes.values() if module is not None else ():
            names = {name for name, f in cls.methods.items() if index.is_relevant(key, f)}
            if names:
                _credit_bases(index, (key, cls.name), key, module, cls, names, out, owners, 0)
    index.__dict__["_subclass_words"] = (index.relevant, out, owners)
    return out, owners


def _credit_bases(
    index: Index, origin: tuple, key: str, module: Module, cls, names: set, out: dict, owners: dict, depth: int
) -> None:
    """Add to `out`, for the module of each base class of `cls` (of module `key`, a base of the
    class `origin` (module, name)) other than origin's module, those of `names` the base calls on
    self, and `origin` to `owners` of that module; up its bases."""
    if depth > MAX_BASE_DEPTH:
        return
    for base in cls.bases:
        found = index.class_named(base, key, module)
        inner = index.module(found[0]) if found is not None else None
        if inner is None:
            continue
        if found[0] != origin[0]:
            # those its own methods call on self (`self.process_batch(...)`), defined there as
            # a stub or not at all
            called = set().union(*(f.methods for f in found[1].methods.values())) & names
            if called:
                out.setdefault(found[0], set()).update(called)
                owners.setdefault(found[0], set()).add((origin[0], origin[1], found[1].name))
        _credit_bases(index, origin, found[0], inner, found[1], names, out, owners, depth + 1)


def _builder_words(index: Index, key: str, module: Module) -> set[str]:
    """The names this module imports of classes of the project that store an optimizer on self
    (`from policies import Policy`): its loops may step that optimizer through an instance."""
    out = set()
    for local, qualified in module.aliases.items():
        if local not in index.builder_words and qualified.rsplit(".", 1)[-1] not in index.builder_words:
            continue
        found = index.lookup(qualified, key)
        if found is not None and found[0] == "class" and found[3].portable:
            out.add(local)
        elif found is not None and found[0] == "function":
            made = index.factory_class(found[1], found[2], found[3])
            if made is not None and made[1].portable:
                out.add(local)
    return out


def index_digest(index: Index) -> str:
    """Of every module the index parsed: all that an analysis through it can read (a lookup
    in a frozen index parses nothing).  Wider than one file's needs, never narrower: a change
    to any parsed module renews the cache entries of the files that call into the project."""
    cached = index.__dict__.get("_digest")
    if cached is None or cached[0] != len(index.modules):
        parts = sorted(f"{k}\0{m.digest}" for k, m in index.modules.items() if m is not None)
        cached = (len(index.modules), hex_digest("\n".join(parts).encode("utf-8", "surrogateescape"), size=12))
        index.__dict__["_digest"] = cached
    return cached[1]
