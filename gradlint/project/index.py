"""The project index: the modules of a run, their functions, classes and imports, from `ast`.

Built once per run in the process that starts it (see the package's docstring for why),
from the texts the run has already read.  Plain data: it crosses to the workers of the
pool (inherited across fork, or pickled once per worker) and never imports libcst.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Optional

from gradlint.digest import hex_digest
from gradlint.model.events import CLIP_FUNCTIONS, SELF_UNSCALING_CLIPS, ZERO_GRAD_METHODS

# Besides the prefilter's spellings of a backward, a step or a `.grad` write (without one a
# file holds no loop worth modelling), a function that only clears or clips is a helper a
# loop may call: its words make a file worth summarizing too.
_HELPER_WORDS = tuple(sorted(ZERO_GRAD_METHODS | {"clip_grad", "unscale_", ".grad"} | SELF_UNSCALING_CLIPS))
# How far a name is followed through re-exports (`from .trainer import Trainer` in a
# package's __init__.py) and how deep modules are read through each other's imports.
MAX_REEXPORTS = 4
MAX_IMPORT_DEPTH = 4
# A file of the project bigger than this is not read for the index (the engine refuses
# to analyse bigger ones too).
_MAX_BYTES = 8 * 1024 * 1024
# The modules an import statement names, read from the text before any parse: a file with
# no gradient word is parsed only when one of its imports can reach a summarized module.
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import\b([^\n#;]*)|import[ \t]+([^\n#;]+))", re.M)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Function:
    """A function or a method: enough for foreign.py to parse and inline its definition."""

    name: str
    qualname: str  # `train_step`, or `Trainer.train_step` for a method
    params: tuple[str, ...]
    # The definition from its `def` line to its end, each line's leading `indent` removed:
    # it parses alone, and its spans map back by adding line - 1 and len(indent).
    text: str
    line: int
    indent: str
    calls: frozenset  # the last names of what it calls: `f`, `m` of `x.m(...)`
    gradient: bool  # its own text holds a gradient word


@dataclass(frozen=True)
class Class:
    name: str
    bases: tuple[str, ...]  # dotted, as written
    methods: dict
    # `self.attr = Callee(...)` anywhere in its methods: attr -> the dotted callees, as written
    members: dict


@dataclass
class Module:
    path: str  # as the run names it (a file read only for the index: relative to the cwd)
    digest: str
    aliases: dict  # as gradlint.model.names.Imports keeps them: local name -> qualified name
    functions: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)
    summarized: bool = False  # False: only its imports were read (no gradient word in it)


def has_gradient_words(text: str, wrappers=None) -> bool:
    from gradlint.prefilter import for_wrappers

    return any(word in text for word in _HELPER_WORDS) or for_wrappers(wrappers).may_hold_events(text)


def _parse(text: str) -> Optional[ast.Module]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _aliases(statements: Iterable[ast.stmt]) -> dict:
    """Import aliases exactly as names.Imports reads them (the libcst side qualifies with those)."""
    out: dict = {}
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    out[head] = head
        elif isinstance(node, ast.ImportFrom):
            base = "." * (node.level or 0) + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    continue
                local = alias.asname or alias.name
                out[local] = f"{base}{alias.name}" if base.endswith(".") else f"{base}.{alias.name}" if base else alias.name
    return out


def _imports_anywhere(tree: ast.Module) -> list[ast.stmt]:
    """Import statements at module level, also inside `try:`/`if:` blocks (`try: from x import
    y except ImportError: ...`), not inside functions or classes."""
    found = []
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for name in ("body", "orelse", "finalbody"):
                stack.extend(reversed(getattr(node, name, None) or []))
            for handler in getattr(node, "handlers", None) or []:
                stack.extend(reversed(handler.body))
    return found


def _function(node, lines: list[str], class_name: Optional[str], words) -> Optional[Function]:
    args = node.args
    params = tuple(a.arg for a in args.posonlyargs + args.args) + tuple(a.arg for a in args.kwonlyargs)
    first, end = node.lineno, node.end_lineno or node.lineno
    source = lines[first - 1 : end]
    if not source:
        return None
    head = source[0]
    indent = head[: len(head) - len(head.lstrip(" \t"))]
    body = []
    for line in source:
        if line.startswith(indent):
            body.append(line[len(indent) :])
        elif not line.strip():
            body.append("")
        else:
            return None  # a line left of the def (inside a string): its columns would not map back
    text = "\n".join(body) + "\n"
    calls = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name):
                calls.add(func.id)
            elif isinstance(func, ast.Attribute):
                calls.add(func.attr)
    qualname = f"{class_name}.{node.name}" if class_name else node.name
    gradient = any(word in text for word in words[0]) or words[1](text)
    return Function(node.name, qualname, params, text, first, indent, frozenset(calls), gradient)


def _members(node: ast.ClassDef) -> dict:
    out: dict = {}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in ast.walk(method):
            if isinstance(sub, (ast.Assign, ast.AnnAssign)) and isinstance(getattr(sub, "value", None), ast.Call):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                callee = _dotted(sub.value.func)
                for target in targets:
                    name = _dotted(target)
                    if callee and name and name.startswith("self.") and name.count(".") == 1:
                        out.setdefault(name[len("self.") :], []).append(callee)
    return {attr: tuple(callees) for attr, callees in out.items()}


def summarize(
    path: str, text: str, digest: str, wrappers=None, tree: Optional[ast.Module] = None, summarize_all: bool = False
) -> Optional[Module]:
    """The module's entry: every top-level function and every method of a top-level class
    when its text holds a gradient word (or `summarize_all`), else only its imports; None
    when it does not parse."""
    gradient = summarize_all or has_gradient_words(text, wrappers)
    tree = tree if tree is not None else _parse(text)
    if tree is None:
        return None
    module = Module(path, digest, _aliases(_imports_anywhere(tree)), summarized=gradient)
    if not gradient:
        return module
    from gradlint.prefilter import for_wrappers

    words = (_HELPER_WORDS, for_wrappers(wrappers).may_hold_events)
    lines = text.split("\n")
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = _function(node, lines, None, words)
            if function is not None:
                module.functions.setdefault(node.name, function)
        elif isinstance(node, ast.ClassDef):
            methods = {}
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name not in methods:
                    function = _function(member, lines, node.name, words)
                    if function is not None:
                        methods[member.name] = function
            bases = tuple(name for name in map(_dotted, node.bases) if name)
            module.classes.setdefault(node.name, Class(node.name, bases, methods, _members(node)))
    return module


def import_targets(text: str) -> list[str]:
    """The qualified names (as Imports writes them) that the file's import lines name, read
    without a parse: `from .a import b, c` gives `.a`, `.a.b`, `.a.c`."""
    out: list[str] = []
    for match in _IMPORT_LINE.finditer(text):
        base, names, plain = match.groups()
        if base is not None:
            out.append(base)
            for name in _WORD.findall(names or ""):
                if name != "import":
                    out.append(f"{base}{name}" if base.endswith(".") else f"{base}.{name}")
        elif plain:
            for part in plain.split(","):
                words = part.split()
                if words:
                    out.append(words[0])
    return out


def import_words(text: str) -> set[str]:
    """The words of the file's import lines (modules and names), read without a parse."""
    words: set[str] = set()
    for match in _IMPORT_LINE.finditer(text):
        for group in match.groups():
            if group:
                words.update(_WORD.findall(group))
    return words


class Index:
    """The modules of a run by absolute path, and how imports resolve between them."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.modules: dict[str, Optional[Module]] = {}  # absolute path -> entry (None: unreadable)
        self.roots = sorted({os.path.abspath(r) if os.path.isdir(r) else os.path.dirname(os.path.abspath(r)) for r in roots})
        self.relevant: set[tuple[str, str]] = set()  # (absolute path, qualname) of functions that touch gradients
        self.reachable_words: frozenset = frozenset()
        self._exists: dict[str, frozenset] = {}  # folder -> the names in it

    # --- building (the parent process) ---------------------------------------------------

    def add(self, path: str, text: str, digest: str, wrappers=None, summarize_all: bool = False) -> Optional[Module]:
        """`summarize_all`: its functions too, though it has no gradient word (it calls ones that do)."""
        key = os.path.abspath(path)
        known = self.modules.get(key)
        if known is None or (summarize_all and not known.summarized):
            self.modules[key] = summarize(path, text, digest, wrappers, summarize_all=summarize_all)
            self.__dict__.pop("_resolved", None)  # a name that resolved to nothing may now
        return self.modules[key]

    def read(self, key: str) -> Optional[Module]:
        """A module of the project that the run does not check but an indexed one imports."""
        if key in self.modules:
            return self.modules[key]
        self.modules[key] = None
        self.__dict__.pop("_resolved", None)
        try:
            if os.path.getsize(key) > _MAX_BYTES:
                return None
            with open(key, "rb") as handle:
                data = handle.read()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        shown = os.path.relpath(key) if not os.path.relpath(key).startswith("..") else key
        self.modules[key] = summarize(shown, text, hex_digest(data))
        return self.modules[key]

    def _is_file(self, path: str, on_disk: bool) -> bool:
        if path in self.modules:
            return self.modules[path] is not None
        if not on_disk:
            return False
        folder, name = os.path.split(path)
        listing = self._exists.get(folder)
        if listing is None:  # one listing per folder, not a stat per candidate
            try:
                listing = self._exists[folder] = frozenset(os.listdir(folder))
            except OSError:
                listing = self._exists[folder] = frozenset()
        if name == "__init__.py":
            return name in listing and self.read(path) is not None
        return name in listing and os.path.isfile(path) and self.read(path) is not None

    def close_imports(self) -> None:
        """Read the modules the summarized ones import (by path), until none is new."""
        seen: set[str] = set()
        for _ in range(MAX_IMPORT_DEPTH):
            fresh = [k for k, m in self.modules.items() if m is not None and k not in seen]
            if not fresh:
                break
            for key in fresh:
                seen.add(key)
                for qualified in self.modules[key].aliases.values():
                    self.resolve(qualified, key, on_disk=True)
        self._mark_relevant()

    def _mark_relevant(self) -> None:
        """Functions that touch gradients: their own text does, or they call (by last name) one
        that does.  By name only, over every module: it decides what is worth inlining."""
        functions = [
            (key, f)
            for key, m in self.modules.items()
            if m is not None
            for f in list(m.functions.values()) + [meth for c in m.classes.values() for meth in c.methods.values()]
        ]
        names = {f.name for _, f in functions if f.gradient}
        changed = True
        while changed:
            changed = False
            for _, f in functions:
                if f.name not in names and f.calls & names:
                    names.add(f.name)
                    changed = True
        self.relevant = {(key, f.qualname) for key, f in functions if f.name in names}
        # The words an import line must hold to reach one of them: its name, its class's, its
        # module's file name and the folders above (a package that re-exports it).
        reach: set[str] = set()
        for key, f in functions:
            if (key, f.qualname) in self.relevant:
                reach.update(f.qualname.split("."))
                reach.update(part for part in key.replace("\\", "/").split("/")[-4:])
                reach.add(os.path.splitext(os.path.basename(key))[0])
        self.reachable_words = frozenset(reach)

    def copy(self) -> "Index":
        """A new index with the same modules (the language server changes the copy, then swaps)."""
        new = Index()
        new.roots = list(self.roots)
        new.modules = dict(self.modules)
        return new

    # --- resolution (any process) -------------------------------------------------------

    def _bases(self, key: str) -> list[str]:
        """Where an absolute import from this file may be found: its folder, its package
        root, and the folders above it up to the root of the run that holds it."""
        folder = os.path.dirname(key)
        memo = self.__dict__.setdefault("_bases_memo", {})
        if folder not in memo:
            memo[folder] = self._bases_of(folder, key)
        return memo[folder]

    def _bases_of(self, folder: str, key: str) -> list[str]:
        out = [folder]
        top = folder
        while os.path.isfile(os.path.join(top, "__init__.py")) or os.path.join(top, "__init__.py") in self.modules:
            parent = os.path.dirname(top)
            if parent == top:
                break
            top = parent
        if top not in out:
            out.append(top)
        root = next((r for r in self.roots if key.startswith(r + os.sep)), None)
        here = folder
        while root is not None and here.startswith(root) and here != os.path.dirname(here):
            if here not in out:
                out.append(here)
            if here == root:
                break
            here = os.path.dirname(here)
        return out

    def _module_file(self, base: str, parts: list[str], on_disk: bool) -> Optional[str]:
        stem = os.path.join(base, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
            if self._is_file(candidate, on_disk):
                return candidate
        return None

    def resolve(self, qualified: str, key: str, on_disk: bool = False) -> Optional[tuple[str, list[str]]]:
        """The module a qualified name (as Imports gives it) lands in from the file `key`, and
        the attribute path left inside it: (`/p/trainer.py`, ["Trainer", "step"]).  Memoised:
        what is on disk does not change during a run; what is in the index only by add/read."""
        memo = self.__dict__.setdefault("_resolved_on_disk" if on_disk else "_resolved", {})
        if (qualified, key) not in memo:
            found = self._resolve(qualified, key, on_disk)
            memo[(qualified, key)] = (found[0], tuple(found[1])) if found is not None else None
        found = memo[(qualified, key)]
        return (found[0], list(found[1])) if found is not None else None

    def _resolve(self, qualified: str, key: str, on_disk: bool) -> Optional[tuple[str, list[str]]]:
        level = len(qualified) - len(qualified.lstrip("."))
        rest = qualified[level:]
        parts = rest.split(".") if rest else []
        if level:
            base = os.path.dirname(key)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = self._bases(key)
        for base in bases:
            for cut in range(len(parts), 0, -1):
                found = self._module_file(base, parts[:cut], on_disk)
                if found is not None and found != key:
                    return found, parts[cut:]
            if level:
                init = os.path.join(base, "__init__.py")
                if init != key and self._is_file(init, on_disk):
                    return init, parts
        return None

    def lookup(self, qualified: str, key: str, depth: int = 0):
        """What a qualified name names in the project: ("module", Module), ("function",
        Module, Function), ("class", Module, Class), ("method", Module, Class, Function);
        None when it is not the project's (or not a function, class or module of it)."""
        found = self.resolve(qualified, key)
        if found is None or depth > MAX_REEXPORTS:
            return None
        target, rest = found
        module = self.modules.get(target)
        if module is None:
            return None
        if not rest:
            return ("module", target, module)
        head = rest[0]
        if head in module.functions and len(rest) == 1:
            return ("function", target, module, module.functions[head])
        if head in module.classes:
            cls = module.classes[head]
            if len(rest) == 1:
                return ("class", target, module, cls)
            if len(rest) == 2:
                found = self.method(target, cls, rest[1])
                return ("method",) + found if found is not None else None
            return None
        if head in module.aliases:  # re-exported: `from .trainer import Trainer` in __init__.py
            return self.lookup(".".join([module.aliases[head]] + rest[1:]), target, depth + 1)
        return None

    def method(self, key: str, cls: Class, name: str, depth: int = 0):
        """(path, Module, Class, Function) of `name` on `cls` or on its first base of the project
        that has it."""
        module = self.modules.get(key)
        if module is None or depth > MAX_REEXPORTS:
            return None
        if name in cls.methods:
            return key, module, cls, cls.methods[name]
        for base in cls.bases:
            found = self.class_named(base, key, module)
            if found is not None:
                hit = self.method(found[0], found[1], name, depth + 1)
                if hit is not None:
                    return hit
        return None

    def class_named(self, dotted: str, key: str, module: Module) -> Optional[tuple[str, Class]]:
        """A class named in `module` (defined there or imported into it), or None."""
        head, _, rest = dotted.partition(".")
        if not rest and head in module.classes:
            return key, module.classes[head]
        if head in module.aliases:
            qualified = module.aliases[head] + ("." + rest if rest else "")
            found = self.lookup(qualified, key)
            if found is not None and found[0] == "class":
                return found[1], found[3]
        return None

    def is_relevant(self, key: str, function: Function) -> bool:
        return (key, function.qualname) in self.relevant
