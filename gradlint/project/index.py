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
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Optional

from gradlint.core.digest import hex_digest
from gradlint.parse.ast_nodes import ast_nodes
from gradlint.core.events import MODULE_FORWARD, OWN_PROTOCOL_METHODS, PROTOCOL_FREE_BASES, WRAPPER_METHODS, ZERO_GRAD_METHODS
from gradlint.project.scan import IMPORT_LINE, continued_names, matches_at_lines

# How far a name is followed through re-exports (`from .trainer import Trainer` in a
# package's __init__.py) and how deep modules are read through each other's imports.
MAX_REEXPORTS = 4
MAX_IMPORT_DEPTH = 4
# A file of the project bigger than this is not read for the index (the engine refuses
# to analyse bigger ones too).
_MAX_BYTES = 8 * 1024 * 1024
# Names a loop's call of which is never a project helper to inline: every class has them,
# or the API's event of that name wins (`x.step()` is a step before it is a helper).  Not
# `__call__`: only an object of a class of the project that defines it runs it (a loss scaler's
# `loss_scaler(loss, opt)`), and a module's call runs `forward`, which stays out.
_NEVER_HELPERS = frozenset({"__init__", MODULE_FORWARD, "main"}) | OWN_PROTOCOL_METHODS | ZERO_GRAD_METHODS
# (except the API's names on a class that defines its own protocol: events.OWN_PROTOCOL_METHODS)
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
    gradient: bool  # its own text holds a gradient spelling (scan.py's)
    bare: frozenset = frozenset()  # names it calls bare: `f(...)`
    methods: frozenset = frozenset()  # names it calls on `self`: `self.m(...)`
    through_modules: frozenset = frozenset()  # names it calls on a module alias: `utils.clip(...)`
    members: frozenset = frozenset()  # (attribute, name) it calls on a `self` attribute: `self.x.m(...)`
    decorated: bool = False  # a decorator may make it return something else than its body does


@dataclass(frozen=True)
class Class:
    name: str
    bases: tuple[str, ...]  # dotted, as written
    methods: dict
    # `self.attr = Callee(...)` anywhere in its methods: attr -> the dotted callees, as written
    members: dict
    # attr -> each value it is assigned, as text readable in another module (_Portable): only
    # for attributes every assignment of which builds something (a call)
    portable: dict = field(default_factory=dict)


@dataclass
class Module:
    path: str  # as the run names it (a file read only for the index: relative to the cwd)
    digest: str
    aliases: dict  # as gradlint.model.names.Imports keeps them: local name -> qualified name
    functions: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)
    summarized: bool = False  # False: only its imports were read (no gradient word in it)
    stars: tuple = ()  # the modules it imports everything from (`from .base import *`), as qualified
    exports: Optional[tuple] = None  # its `__all__` when that is a literal list or tuple of names (_exports)
    # the names its star imports bind (Index.bind_stars): local name -> qualified name, also in `aliases`
    starred: dict = field(default_factory=dict)


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


def _stars(statements: Iterable[ast.stmt]) -> tuple:
    """The modules of the `from m import *` lines, qualified as `_aliases` qualifies a name."""
    return tuple(
        "." * (node.level or 0) + (node.module or "")
        for node in statements
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
    )


def _exports(tree: ast.Module) -> Optional[tuple]:
    """The names of a module-level `__all__ = [...]` (or a tuple) of string literals; None when
    there is none or it is anything else (built, extended: what it holds is not read, and a
    star import of the module binds every public name, as without one)."""
    found = None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) and found is None else None
        if not isinstance(value, (ast.List, ast.Tuple)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            return None  # a second assignment, an extension or a computed list: unknown
        found = tuple(e.value for e in value.elts)
    return found


def _imports_anywhere(tree: ast.Module) -> list[ast.stmt]:
    """Import statements at module level, also inside `try:`/`if:` blocks (`try: from x import
    y except ImportError: ...`), then the ones inside functions (`def main(): from agent import
    Agent`: the loop there builds its objects from them), first, so that a module-level import
    of the same name, read later, wins, as the text side (`text_aliases`) reads every import
    line.  Not inside classes."""
    found = []
    local = []
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
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local.extend(_function_imports(node))
    return local + found


def _function_imports(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The import statements of a function's body, at any depth of its blocks (not of the
    functions or classes it defines)."""
    found = []
    stack = list(reversed(node.body))
    while stack:
        statement = stack.pop()
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.append(statement)
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody"):
                stack.extend(reversed(getattr(statement, name, None) or []))
            for handler in getattr(statement, "handlers", None) or []:
                stack.extend(reversed(handler.body))
    return found


def _function(node, lines: list[str], class_name: Optional[str], words, aliases=()) -> Optional[Function]:
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
    # Calls by kind, for what reaches what (mark_relevant): `x.update()` of any other object
    # says nothing (a dict's update is no metric's), so only these count.
    bare, on_self, through, members, other = set(), set(), set(), set(), set()
    strings = []  # its string literals, blanked below if its text holds a gradient spelling
    for sub in ast_nodes(node):  # (sets: the order of the walk does not matter)
        if isinstance(sub, ast.Constant):
            if isinstance(sub.value, str):
                strings.append(sub)
        elif isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name):
                bare.add(func.id)
            elif isinstance(func, ast.Attribute):
                owner = func.value
                if isinstance(owner, ast.Name):
                    if owner.id == "self":
                        on_self.add(func.attr)
                    elif owner.id in aliases:
                        through.add(func.attr)
                    else:
                        other.add(func.attr)
                elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "self":
                    members.add((owner.attr, func.attr))
                else:
                    other.add(func.attr)
    qualname = f"{class_name}.{node.name}" if class_name else node.name
    gradient = words(text) and words(_without_strings(strings, body, first, len(indent)))
    return Function(
        node.name, qualname, params, text, first, indent,
        frozenset(bare | on_self | through | other | {m for _, m in members}), gradient,
        frozenset(bare), frozenset(on_self), frozenset(through), frozenset(members), bool(node.decorator_list),
    )


def _without_strings(strings: list, lines: list[str], first: int, indent: int) -> str:
    """The definition's text with its string literals (`strings`, str constants) blanked: an
    example in a docstring (`loss.backward()` in ignite's Engine docs) is no gradient spelling."""
    rows = [list(line) for line in lines]
    for sub in strings:
        if sub.end_lineno is not None:
            for number in range(sub.lineno, sub.end_lineno + 1):
                row = rows[number - first] if 0 <= number - first < len(rows) else None
                if row is None:
                    continue
                start = sub.col_offset - indent if number == sub.lineno else 0
                end = sub.end_col_offset - indent if number == sub.end_lineno else len(row)
                for i in range(max(start, 0), min(end, len(row))):  # byte columns: close enough to blank
                    row[i] = " "
    return "\n".join("".join(row) for row in rows)


def _statements(node: ast.AST):
    """The statements under a node, nested defs included, in the order `ast.walk` gives them
    (breadth first) but without entering an expression: an assignment is a statement, and the
    expressions are most of a method's nodes (its walk was half of a summary's time)."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                todo.extend([item for item in value if isinstance(item, _HOLDS_STATEMENTS)])
        yield node


# The nodes whose lists hold statements: statements, an `except` clause, a `case` of a match.
_HOLDS_STATEMENTS = (ast.stmt, ast.ExceptHandler) + ((ast.match_case,) if hasattr(ast, "match_case") else ())


def _members(node: ast.ClassDef) -> dict:
    out: dict = {}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in _statements(method):
            if isinstance(sub, (ast.Assign, ast.AnnAssign)) and isinstance(getattr(sub, "value", None), ast.Call):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                built = sub.value
                while isinstance(built.func, ast.Attribute) and built.func.attr in WRAPPER_METHODS and isinstance(built.func.value, ast.Call):
                    built = built.func.value  # `Net(...).to(device)` is a Net
                callee = _dotted(built.func)
                for target in targets:
                    name = _dotted(target)
                    if callee and name and name.startswith("self.") and name.count(".") == 1:
                        out.setdefault(name[len("self.") :], []).append(callee)
    return {attr: tuple(callees) for attr, callees in out.items()}


# The names a portable value uses for what only its own module knows.
PORTABLE_SELF = "__gradlint_self__"  # the object: the caller puts its own name for it
PORTABLE_PROJECT = "__gradlint_project__"  # a class or function of the project (`.X` of it)
PORTABLE_UNKNOWN = "__gradlint_unknown__"  # a local or a parameter of the method: unknown
_BUILTINS = frozenset(dir(__import__("builtins")))
_MAX_PORTABLE = 400  # characters of one value kept


class _Portable(ast.NodeTransformer):
    """An attribute's value rewritten to be read in another module's bindings: `self` as a
    placeholder, an imported name by its qualified name, the module's own classes and
    functions under PORTABLE_PROJECT, and the method's locals and parameters as unknown (a
    name of the checked file that happens to be spelled alike is no part of it)."""

    def __init__(self, aliases: dict, own: set, bound: set) -> None:
        self.aliases, self.own, self.bound = aliases, own, bound

    def visit_Name(self, node: ast.Name) -> ast.AST:
        name = node.id
        if name == "self":
            return ast.Name(PORTABLE_SELF, ast.Load())
        if name in self.bound or (name in _BUILTINS and name not in self.aliases and name not in self.own):
            return node
        target = self.aliases.get(name)
        if target is not None and not target.startswith("."):
            return _dotted_node(target)
        if target is not None or name in self.own:
            return ast.Attribute(ast.Name(PORTABLE_PROJECT, ast.Load()), name, ast.Load())
        return ast.Name(PORTABLE_UNKNOWN, ast.Load())


def _dotted_node(dotted: str) -> ast.expr:
    """`a.b.c` as the expression ast.parse gives it (Attribute(Attribute(Name)))."""
    first, *rest = dotted.split(".")
    node: ast.expr = ast.Name(first, ast.Load())
    for part in rest:
        node = ast.Attribute(node, part, ast.Load())
    return node


def _portable_members(node: ast.ClassDef, aliases: dict, own: set) -> dict:
    values: dict = {}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in _statements(method):
            if isinstance(sub, ast.Assign):
                targets, value = sub.targets, sub.value
            elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)) and sub.value is not None:
                targets, value = [sub.target], sub.value
            else:
                continue
            for target in targets:
                for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
                    name = _dotted(element)
                    if not (name and name.startswith("self.") and name.count(".") == 1):
                        continue
                    attr = name[len("self.") :]
                    if len(targets) > 1 or element is not target or not isinstance(sub, (ast.Assign, ast.AnnAssign)) \
                            or not isinstance(value, ast.Call):
                        values[attr] = None  # not (only) built here: what it is stays unknown
                    elif values.get(attr, ()) is not None:
                        values.setdefault(attr, []).append(value)
    out: dict = {}
    for attr, built in values.items():
        if built is None:
            continue
        texts = []
        for value in built:
            bound = {n.arg for lam in ast_nodes(value) if isinstance(lam, ast.Lambda) for n in lam.args.args}
            bound |= {n.id for c in ast_nodes(value) if isinstance(c, ast.comprehension) for n in ast_nodes(c.target) if isinstance(n, ast.Name)}
            try:
                text = ast.unparse(_Portable(aliases, own, bound).visit(_copy(value)))
            except (ValueError, TypeError, RecursionError, SyntaxError):
                text = None
            if text is None or len(text) > _MAX_PORTABLE:
                texts = None  # (a whole network spelled out: what matters of it is that it is a module)
                break
            texts.append(text)
        if texts:
            out[attr] = tuple(texts)
    return out


def _copy(node: ast.AST) -> ast.AST:
    import copy

    return copy.deepcopy(node)


def summarize(
    path: str, text: str, digest: str, wrappers=None, tree: Optional[ast.Module] = None, summarize_all: bool = False
) -> Optional[Module]:
    """The module's entry: every top-level function and every method of a top-level class
    when its text holds a gradient word (or `summarize_all`), else only its imports; None
    when it does not parse."""
    from gradlint.project.scan import has_spelling

    gradient = summarize_all or has_spelling(text, wrappers)
    tree = tree if tree is not None else _parse(text)
    if tree is None:
        return None
    imports = _imports_anywhere(tree)
    module = Module(path, digest, _aliases(imports), summarized=gradient, stars=_stars(imports), exports=_exports(tree))
    if not gradient:
        return module
    from gradlint.project.scan import has_spelling

    def words(body: str) -> bool:
        return has_spelling(body, wrappers)

    lines = text.split("\n")
    own = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = _function(node, lines, None, words, module.aliases)
            if function is not None:
                module.functions.setdefault(node.name, function)
        elif isinstance(node, ast.ClassDef):
            methods = {}
            for member in node.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name not in methods:
                    function = _function(member, lines, node.name, words, module.aliases)
                    if function is not None:
                        methods[member.name] = function
            bases = tuple(name for name in map(_dotted, node.bases) if name)
            portable = _portable_members(node, module.aliases, own)
            module.classes.setdefault(node.name, Class(node.name, bases, methods, _members(node), portable))
    return module


_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]*(?:\(([^)]*)\)|([^\n#;(]*))", re.M)
_PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_ALIAS = re.compile(r"([\w.]+)(?:[ \t]+as[ \t]+(\w+))?")


def text_aliases(text: str) -> dict:
    """Import aliases as `_aliases` gives them, read from the import lines without a parse
    (a caller that holds no def of interest needs no more: the index does not parse it)."""
    out: dict = {}
    for match in matches_at_lines(text, "import", _PLAIN_IMPORT):
        for name, alias in _ALIAS.findall(match.group(1)):
            if name:
                out[alias or name.split(".", 1)[0]] = name if alias else name.split(".", 1)[0]
    for match in matches_at_lines(text, "import", _FROM_IMPORT):
        base = match.group(1)
        for name, alias in _ALIAS.findall(match.group(2) or match.group(3) or ""):
            if name and name != "*" and "." not in name:
                out[alias or name] = f"{base}{name}" if base.endswith(".") else f"{base}.{name}"
    return out


def text_stars(text: str) -> tuple:
    """The modules of the text's `from m import *` lines, as `_stars` gives them, without a parse."""
    out = []
    for match in matches_at_lines(text, "import", _FROM_IMPORT):
        if (match.group(3) or "").strip() == "*":
            out.append(match.group(1))
    return tuple(out)


def import_targets(text: str) -> list[str]:
    """The qualified names (as Imports writes them) that the file's import lines name, read
    without a parse: `from .a import b, c` gives `.a`, `.a.b`, `.a.c`."""
    out: list[str] = []
    for match in matches_at_lines(text, "import", IMPORT_LINE):
        base, names, plain = match.groups()
        if base is not None:
            out.append(base)
            for name in _WORD.findall((names or "") + " " + continued_names(text, match)):
                if name != "import":
                    out.append(f"{base}{name}" if base.endswith(".") else f"{base}.{name}")
        elif plain:
            for part in plain.split(","):
                words = part.split()
                if words:
                    out.append(words[0])
    return out


def _installed(path: str) -> bool:
    """Under a folder where pip installs packages."""
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts


def read_module(path: str) -> tuple[Optional[str], str]:
    """(text, digest of the bytes) of a module on disk the run does not check; (None, "")
    when it is too big, unreadable or not UTF-8."""
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return None, ""
        with open(path, "rb") as handle:
            data = handle.read()
        return data.decode("utf-8"), hex_digest(data)
    except (OSError, UnicodeDecodeError):
        return None, ""


def listed(folder: str) -> frozenset:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def _star_names(base: str, source: Module) -> dict:
    """The names `from base import *` binds from the module `source`: local -> qualified."""
    own = set(source.functions) | set(source.classes)
    if source.exports is not None:
        names = source.exports
    else:
        names = sorted(n for n in own | set(source.aliases) if not n.startswith("_"))
    out = {}
    for name in names:
        imported = source.aliases.get(name) if name not in own else None
        if imported is not None and not imported.startswith("."):
            out[name] = imported  # `import torch` there: torch here too
        else:
            out[name] = f"{base}{name}" if base.endswith(".") else f"{base}.{name}"
    return out


def listing_digest(listing: frozenset) -> str:
    """Of the names in a folder an import can name (`name.py`, `name/`): a run's cache made
    there (`.gradlint_cache`) is no module."""
    names = sorted(n for n in listing if n.isidentifier() or (n.endswith(".py") and n[:-3].isidentifier()))
    return hex_digest("\0".join(names).encode("utf-8", "surrogateescape"), size=12)


class Index:
    """The modules of a run by absolute path, and how imports resolve between them.

    A module is *known* (its path exists, its text is at hand) long before it is *parsed*:
    `module(key)` parses it on first use, in the process that builds the index.  Once the
    index is `frozen` (handed to the analysis), nothing more is parsed: a module the build
    did not need stays unknown, and so every process resolves a name the same way.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.modules: dict[str, Optional[Module]] = {}  # absolute path -> entry (None: does not parse)
        self.pending: dict[str, tuple] = {}  # absolute path -> (path, text, digest, wrappers), not parsed yet
        self.known: set[str] = set()  # every path that is a module of the project, parsed or not
        self.frozen = False
        self.roots = sorted({os.path.abspath(r) if os.path.isdir(r) else os.path.dirname(os.path.abspath(r)) for r in roots})
        self.relevant: set[tuple[str, str]] = set()  # (absolute path, qualname) of functions that touch gradients
        self.reachable_words: frozenset = frozenset()
        # names of classes that store an optimizer on self (scan.py's builders): importing one
        # gives a file a view (view.py), so its loops know those optimizers
        self.builder_words: frozenset = frozenset()
        # (module, class) -> {attr: (module, class)}: an attribute stored from a constructor
        # parameter, and the class of the project every construction site hands it (construction.py)
        self.delivered: dict = {}
        # (module, top-level function) -> {parameter: (module, class)}: a parameter the module
        # never binds, and the class of the project every call site of another module hands it
        # (handed.py)
        self.handed: dict = {}
        self.trees: dict = {}  # absolute path -> its `ast` tree, parsed before its summary was asked
        # modules holding a def that may touch gradients, and the __init__.py above them (None:
        # not narrowed, the language server's index)
        self.holders: Optional[frozenset] = None
        self._exists: dict[str, frozenset] = {}  # folder -> the names in it
        # What the build asked of the disk beyond the run's own files, and the answers:
        # ("dir", folder) -> digest of its listing, ("file", path) -> is it a regular file,
        # ("read", path) -> digest of the module read ("" when unreadable).  A saved view of
        # the project (saved.py) holds while every answer is still the same.
        self.disk: dict[tuple[str, str], object] = {}
        # absolute path -> (folders it inserts at the front of sys.path, folders it appends):
        # its own `sys.path.insert/append(...)` lines (sys_path.py), where its imports look too
        self.search: dict[str, tuple] = {}

    # --- building (the parent process) ---------------------------------------------------

    def know(self, path: str, text: str, digest: str, wrappers=None) -> str:
        key = os.path.abspath(path)
        if key not in self.known:
            self.known.add(key)
            self.pending[key] = (path, text, digest, wrappers)
            self.learn_search(key, text)
        return key

    def learn_search(self, key: str, text: str) -> None:
        """The folders the module's text puts on sys.path (an open buffer's, in the server)."""
        from gradlint.project.sys_path import additions

        found = additions(text, key)
        if found != self.search.get(key, ((), ())):
            if any(found) or key in self.search:
                self.search[key] = found
            for memo in ("_resolved", "_resolved_on_disk"):
                self.__dict__.pop(memo, None)

    def module(self, key: str, tree: Optional[ast.Module] = None) -> Optional[Module]:
        """The entry of a known module, parsed now if it was not yet (never once frozen);
        `tree`: its text's parse, when the caller has it already."""
        if key in self.modules:
            return self.modules[key]
        if self.frozen or key not in self.pending:
            return None
        path, text, digest, wrappers = self.pending.pop(key)
        if tree is None:  # parsed already for another question (construction.py): not again
            tree = self.trees.pop(key, None)
        self.modules[key] = summarize(path, text, digest, wrappers, tree=tree, summarize_all=True)
        self.bind_stars(key, self.modules[key])
        return self.modules[key]

    def bind_stars(self, key: str, module: Optional[Module]) -> None:
        """Bind the names each `from m import *` of the module brings from a module of the
        project (while building only): its `__all__` when that is a literal, else every name
        it defines or imports that does not start with `_`.  A name the module imports by
        itself keeps that import.  A name is bound to what the starred module imports it as
        (`torch.nn`), or to the starred module's own (`trainers.base.Trainer`)."""
        if module is None or not module.stars or module.starred or self.frozen:
            return
        self._bind_stars(key, module)

    def bind_buffer_stars(self, key: str, module: Module) -> None:
        """An editor's buffer (a module the frozen index did not build from this text): its star
        imports bind what the index's modules define, as the build binds a file's."""
        if module.stars and not module.starred:
            self._bind_stars(key, module)

    def _bind_stars(self, key: str, module: Module) -> None:
        binding = self.__dict__.setdefault("_binding", set())
        if key in binding or len(binding) > MAX_REEXPORTS:
            return  # a cycle of star imports, or a chain deeper than a re-export is followed
        binding.add(key)
        try:
            for base in module.stars:
                found = self.resolve(base, key, on_disk=True)
                if found is None or found[1]:
                    continue  # not the project's (`from torch import *`), or no module
                source = self.module(found[0])
                if source is None:
                    continue
                for name, qualified in _star_names(base, source).items():
                    if name not in module.aliases:
                        module.starred[name] = qualified
            for name, qualified in module.starred.items():
                module.aliases[name] = qualified
        finally:
            binding.discard(key)

    def freeze(self) -> None:
        """Done building: the texts of modules never parsed are let go, nothing is parsed later."""
        self.frozen = True
        self.pending = {}
        self.trees = {}
        # what only the build asks (the disk): tens of megabytes on a big tree, in every worker
        self._exists = {}
        self.__dict__.pop("_resolved_on_disk", None)

    def read(self, key: str) -> bool:
        """A module of the project that the run does not check but one of its files imports:
        its text is read (and parsed only if a caller needs it)."""
        if key in self.known:
            return True
        if _installed(key) and not any(key.startswith(root + os.sep) for root in self.roots):
            return False  # an installed library next to a checked one (numpy beside torch): not the project
        text, digest = read_module(key)
        self.disk[("read", key)] = digest
        if text is None:
            return False
        shown = os.path.relpath(key) if not os.path.relpath(key).startswith("..") else key
        self.know(shown, text, digest)
        self.__dict__.pop("_resolved", None)  # a name that resolved to nothing may now
        return True

    def _is_file(self, path: str, on_disk: bool) -> bool:
        if path in self.known:
            return True
        if not on_disk or self.frozen:
            return False
        folder, name = os.path.split(path)
        return name in self._listing(folder) and self._isfile(path) and self.read(path)

    def _isfile(self, path: str) -> bool:
        found = self.disk[("file", path)] = os.path.isfile(path)
        return found

    def mark_relevant(self, seeds: tuple = ()) -> None:
        """Functions that touch gradients: their own text does, or they call (by name) one that
        does (`seeds`: (function names, method names) the text scan found so, in modules not
        parsed).  By name only: it decides what is worth inlining."""
        functions = [(key, f, None) for key, m in self.modules.items() if m is not None for f in m.functions.values()]
        functions += [
            (key, f, c)
            for key, m in self.modules.items()
            if m is not None
            for c in m.classes.values()
            for f in c.methods.values()
        ]
        # A function is reached bare or through a module alias (`model.train()` never calls a
        # script's `def train`); a method through `self` (its class, or a class built from it by
        # name: bases are matched by their last name) or through a `self` attribute built from
        # a class that has it (`self.stepper.run(loss)`, `self.stepper = Stepper(...)`).
        plain = set(seeds[0]) if seeds else set()
        by_class: dict = {}  # class name -> its relevant methods
        for name, classes in (seeds[1].items() if seeds and isinstance(seeds[1], dict) else ()):
            for cls in classes:
                by_class.setdefault(cls, set()).add(name)
        relevant: set = set()
        changed = True
        while changed:
            changed = False
            for key, f, cls in functions:
                if (key, f.qualname) in relevant:
                    continue
                if f.name in _NEVER_HELPERS and not (f.name in OWN_PROTOCOL_METHODS and self.own_protocol(key, cls)):
                    continue
                if f.gradient or f.bare & plain or f.through_modules & plain or self._reaches(f, cls, by_class) \
                        or self._reaches_delivered(key, f, cls, by_class):
                    relevant.add((key, f.qualname))
                    if cls is None:
                        plain.add(f.name)
                    else:
                        by_class.setdefault(cls.name, set()).add(f.name)
                    changed = True
        self.relevant = relevant

    def own_protocol(self, key: str, cls: Optional["Class"], depth: int = 0) -> bool:
        """Does `cls` (of module `key`) derive from nothing whose API names its methods?"""
        module = self.modules.get(key)
        if cls is None or module is None or depth > MAX_REEXPORTS:
            return False
        for base in cls.bases:
            head = base.split(".", 1)[0]
            qualified = module.aliases[head] + base[len(head):] if head in module.aliases else base
            if qualified in PROTOCOL_FREE_BASES:
                continue
            if base in module.classes and base != cls.name and self.own_protocol(key, module.classes[base], depth + 1):
                continue
            # a base class of another module of the project (`from trainers import BaseTrainer`)
            found = self.class_named(base, key, module) if base not in module.classes else None
            if found is not None and self.own_protocol(found[0], found[1], depth + 1):
                continue
            return False
        return True

    @staticmethod
    def _reaches(f: Function, cls: Optional["Class"], by_class: dict) -> bool:
        if cls is None:
            return False
        own = set(by_class.get(cls.name, ()))
        for base in cls.bases:
            own |= by_class.get(base.rsplit(".", 1)[-1], set())
        if f.methods & own:
            return True
        for attr, name in f.members:
            for callee in cls.members.get(attr, ()):
                if name in by_class.get(callee.rsplit(".", 1)[-1], ()):
                    return True
        return False

    def _reaches_delivered(self, key: str, f: Function, cls: Optional["Class"], by_class: dict) -> bool:
        """`self.pair.step()` on an attribute stored from a constructor parameter whose
        construction sites all hand it a class that has such a method."""
        delivered = self.delivered.get((key, cls.name)) if cls is not None and f.members else None
        if not delivered:
            return False
        return any(name in by_class.get(delivered[attr][1], ()) for attr, name in f.members if attr in delivered)

    def copy(self) -> "Index":
        """A new index with the same modules (the language server changes the copy, then swaps)."""
        new = Index()
        new.roots = list(self.roots)
        new.modules = dict(self.modules)
        new.known = set(self.known)
        new.pending = dict(self.pending)
        new.frozen = self.frozen
        new.delivered = dict(self.delivered)
        new.handed = dict(self.handed)
        new.builder_words = self.builder_words
        new.search = dict(self.search)
        return new

    # --- resolution (any process) -------------------------------------------------------

    def _bases(self, key: str) -> list[str]:
        """Where an absolute import from this file may be found: its folder, its package
        root, and the folders above it up to the root of the run that holds it."""
        folder = os.path.dirname(key)
        memo = self.__dict__.setdefault("_bases_memo", {})
        if folder not in memo:
            memo[folder] = self._bases_of(folder, key)
        if key not in self.search:
            return memo[folder]
        # `sys.path.insert(0, HERE / "src")` before the imports: the module's own folders too,
        # those of the project only (a path outside it is not read)
        front, back = self.search[key]
        ahead = [f for f in front if self._in_project(f) and f not in memo[folder]]
        behind = [f for f in back if self._in_project(f) and f not in memo[folder] and f not in ahead]
        return ahead + memo[folder] + behind

    def _in_project(self, folder: str) -> bool:
        return any(folder == r or folder.startswith(r + os.sep) for r in self.roots)

    def _bases_of(self, folder: str, key: str) -> list[str]:
        """A script's folder is where Python looks first (sys.path[0]); a module of a package
        is imported from above its top package, or from a package folder above its own (the
        root a stray __init__.py made a package), never from its own folder (`import
        transformers` inside diffusers/models/ is the library, not models/transformers/)."""
        def package(path: str) -> bool:
            init = os.path.join(path, "__init__.py")
            return init in self.known or self._isfile(init)

        out = []
        top = folder
        while package(top):
            parent = os.path.dirname(top)
            if parent == top:
                break
            top = parent
        out.append(top)  # the folder itself when it is no package
        # the packages between the module's own folder and the top one, nearest the top first:
        # a project whose root holds a stray __init__.py runs its scripts from there, and
        # `from trainers.base import X` in trainers/sac.py is read from that root (sys.path[0])
        inner = []
        here = os.path.dirname(folder)
        while here != top and here.startswith(top + os.sep):
            inner.append(here)
            here = os.path.dirname(here)
        out.extend(reversed(inner))
        root = next((r for r in self.roots if key.startswith(r + os.sep) or key == r), None)
        here = os.path.dirname(top)
        while root is not None and (here == root or here.startswith(root + os.sep)):
            if here not in out and not package(here):
                out.append(here)  # `sys.path.insert(0, "..")` in a script under tools/
            if here == root:
                break
            here = os.path.dirname(here)
        if root is not None and root not in out:
            out.append(root)  # a script at the run's root reads imports from there, package or not
        return out

    def _has_entry(self, base: str, name: str, on_disk: bool) -> bool:
        """Is there a module or package `name` in the folder `base` (known, or on disk)?"""
        stem = os.path.join(base, name)
        if stem + ".py" in self.known or os.path.join(stem, "__init__.py") in self.known:
            return True
        if not on_disk or self.frozen:
            return self._known_folder(stem)
        listing = self._listing(base)
        return name + ".py" in listing or name in listing

    def _known_folder(self, folder: str) -> bool:
        """Does a known module live under this folder (a namespace package without __init__.py)?"""
        folders = self.__dict__.get("_known_folders")
        if folders is None or folders[0] != len(self.known):
            names = set()
            for key in self.known:
                here = os.path.dirname(key)
                while here and here not in names and here != os.path.dirname(here):
                    names.add(here)
                    here = os.path.dirname(here)
            folders = (len(self.known), names)
            self.__dict__["_known_folders"] = folders
        return folder in folders[1]

    def _listing(self, folder: str) -> frozenset:
        listing = self._exists.get(folder)
        if listing is None:  # one listing per folder, not a stat per candidate
            listing = self._exists[folder] = listed(folder)
            self.disk[("dir", folder)] = listing_digest(listing)
        return listing

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
            if parts and not level and not self._has_entry(base, parts[0], on_disk):
                continue  # nothing named like the import's first name there (`torch` in a project)
            for cut in range(len(parts), 0, -1):
                found = self._module_file(base, parts[:cut], on_disk)
                if found is not None and found != key:
                    return found, parts[cut:]
            if level:
                init = os.path.join(base, "__init__.py")
                if init != key and self._is_file(init, on_disk):
                    return init, parts
        return None

    def lookup(self, qualified: str, key: str, depth: int = 0, trail: Optional[list] = None):
        """What a qualified name names in the project: ("module", path, Module), ("function",
        path, Module, Function), ("class", path, Module, Class), ("method", path, Module, Class,
        Function); None when it is not the project's (or not a function, class or module of
        it).  `trail` collects the paths of the modules it read (their digests key the cache)."""
        found = self.resolve(qualified, key)
        if found is None or depth > MAX_REEXPORTS:
            return None
        target, rest = found
        if trail is not None:
            trail.append(target)
        module = self.module(target)
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
            return self.lookup(".".join([module.aliases[head]] + rest[1:]), target, depth + 1, trail)
        return None

    def method(self, key: str, cls: Class, name: str, depth: int = 0):
        """(path, Module, Class, Function) of `name` on `cls` or on its first base of the project
        that has it."""
        module = self.module(key)
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

    def factory_classes(self, key: str, module: Module, function: Function) -> Optional[list]:
        """The classes a factory function of the project returns instances of, as [(module,
        Class)]: every `return` gives a call of a class of the project, or a name the function
        assigns only from such calls (`return SAC(...)` on one branch, `return TD3(...)` on
        another); None when a return gives anything else."""
        try:
            tree = ast.parse(function.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        definition = tree.body[0] if tree.body else None
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        built: dict = {}
        returned = []
        for node in ast.walk(definition):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not definition:
                return None  # a nested def: its returns are not the factory's
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        built.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                target = node.target
                if isinstance(target, ast.Name):
                    built.setdefault(target.id, []).append(None)
            elif isinstance(node, ast.Return):
                returned.append(node.value)
        values = []
        for value in returned:
            if isinstance(value, ast.Name):
                values += built.get(value.id) or [None]
            else:
                values.append(value)
        classes = set()
        for value in values:
            if not isinstance(value, ast.Call):
                return None
            callee = _dotted(value.func)
            hit = self.class_named(callee, key, module) if callee else None
            if hit is None:
                return None
            classes.add((hit[0], hit[1].name))
        return self.classes_of(classes)

    def factory_class(self, key: str, module: Module, function: Function) -> Optional[tuple[str, Class]]:
        """The one class a factory function of the project returns an instance of, or None."""
        classes = self.factory_classes(key, module, function)
        return classes[0] if classes is not None and len(classes) == 1 else None

    def classes_of(self, pairs: set) -> Optional[list]:
        """[(module, Class)] of (module, class name) pairs, in a stable order; None if one is unknown."""
        out = []
        for found_key, name in sorted(pairs):
            found = self.module(found_key)
            cls = found.classes.get(name) if found is not None else None
            if cls is None:
                return None
            out.append((found_key, cls))
        return out or None

    def delivered_class(self, key: str, class_name: Optional[str], attr: str) -> Optional[tuple[str, Class]]:
        """(module, class) of `self.attr` in the class `class_name` of module `key`, when every
        construction site of that class hands the attribute's parameter an instance of it."""
        hit = self.delivered.get((key, class_name), {}).get(attr) if class_name else None
        module = self.module(hit[0]) if hit is not None else None
        cls = module.classes.get(hit[1]) if module is not None else None
        return (hit[0], cls) if cls is not None else None

    def handed_class(self, key: str, function_name: str, parameter: str) -> Optional[tuple[str, Class]]:
        """(module, class) of a parameter of the top-level function `function_name` of module
        `key`, when every call site of the project hands it an instance of that class."""
        hit = self.handed.get((key, function_name), {}).get(parameter)
        module = self.module(hit[0]) if hit is not None else None
        cls = module.classes.get(hit[1]) if module is not None else None
        return (hit[0], cls) if cls is not None else None

    def is_relevant(self, key: str, function: Function) -> bool:
        return (key, function.qualname) in self.relevant
