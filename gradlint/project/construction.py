"""What an attribute stored from a constructor parameter is: the class the construction sites
of the project hand it.

A runner is often given its optimizer wrapper rather than building it: `self.pair = pair` in
`Runner.__init__`, `self.pair.step()` in its loop, and elsewhere `Runner(model, pair=pair)`
with `pair = make_pair(model)`, a factory of a third module whose return builds `StepPair(...)`.
The runner's module never names StepPair, so neither the caller gate (run.py) nor the
checked file's bindings can tell what `self.pair` is.  This module reads the construction
sites of the runner's class (every file of the run that calls it by name and imports its
module or class), and the argument each passes for the parameter: built by `Cls(...)` of the
project, or returned by a project function every return of which builds one (through local
names and further factories, a few levels deep).  When every site hands the same class, the
attribute has that class (Index.delivered); several sites that disagree, an argument that
cannot be resolved, a subclass of the runner, or `*args`/`**kwargs` at a site leave it unknown.

Cost: only the files the text scan picks are parsed (a call `self.attr.name(` of a method of
the project on an attribute stored from a bare name, then the few files that call the class
by name), with CPython's `ast`, once each; factory bodies are parsed once each.
"""

from __future__ import annotations

import ast
import os
import re
from collections import OrderedDict
from typing import Optional

from gradlint.parse.ast_nodes import ast_nodes
from gradlint.project.index import Index, Module, _dotted, _parse
from gradlint.project.scan import member_calls

# How many steps (a local name to its assignments, a call to a factory's returns) an argument
# is followed; a cycle of names ends there too.
MAX_STEPS = 8
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


_TREES_KEPT = 8


class Deliveries:
    """Resolves, for one index build, the attributes stored from constructor parameters."""

    def __init__(self, index: Index, texts: dict, imports: dict) -> None:
        self.index = index
        self.texts = texts  # key -> text of every module the build scanned
        self.imports = imports  # key -> the words of its import lines
        # key -> ast of a construction site's module (None: no parse), the latest _TREES_KEPT
        self._trees: OrderedDict = OrderedDict()
        # (key, class) -> [(site key, call, scope)] (None: unknown); ("stored", key, class) -> its
        # stored attributes; ("candidates", key, class) -> the files that may name it
        self._sites: dict = {}
        self._returns: dict = {}  # (key, qualname) -> (module key, class name) or None
        self._asked: dict = {}  # (key, class, attr) -> answer

    def classes_for(self, key: str, names) -> set[str]:
        """The names of the classes delivered to attributes on which the module `key` calls
        one of `names` (`self.pair.step()`): what its imports would name, had it imported them."""
        text = self.texts.get(key)
        if text is None:
            return set()
        out: set[str] = set()
        for class_name, attrs in member_calls(text, names).items():
            for attr in attrs:
                hit = self.deliver(key, class_name, attr)
                if hit is not None:
                    out.add(hit[1])
        return out

    def deliver(self, key: str, class_name: str, attr: str) -> Optional[tuple[str, str]]:
        asked = (key, class_name, attr)
        if asked not in self._asked:
            self._asked[asked] = self._deliver(key, class_name, attr)
            if self._asked[asked] is not None:
                self.index.delivered.setdefault((key, class_name), {})[attr] = self._asked[asked]
        return self._asked[asked]

    def _deliver(self, key: str, class_name: str, attr: str) -> Optional[tuple[str, str]]:
        if not self._maybe_built(key, class_name):
            return None  # no file calls it: nothing to parse
        stored = self._stored(key, class_name)
        if attr not in stored:
            return None
        param, position = stored[attr]
        sites = self.sites(key, class_name)
        if not sites:
            return None
        found = set()
        for site_key, call, scope in sites:
            value = _argument(call, param, position)
            if value is None:
                return None
            found.add(self._class_of(value, site_key, scope, 0))
            if None in found or len(found) > 1:
                return None
        return found.pop()

    # -- construction sites -----------------------------------------------------------------

    def _stored(self, key: str, class_name: str) -> dict:
        memo = ("stored", key, class_name)
        if memo not in self._sites:
            tree = self._tree(key)
            node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None) if tree else None
            self._sites[memo] = _stored(node) if node is not None else {}
        return self._sites[memo]

    def _candidates(self, key: str, class_name: str) -> list:
        """The files that may build or name the class: its own, and those whose import lines
        hold its name or its module's, or its package's when the text reaches the module
        through it (`pkg.trainer.Trainer`)."""
        memo = ("candidates", key, class_name)
        if memo not in self._sites:
            module_word = _module_word(key)
            words = {class_name, module_word}
            package = os.path.basename(os.path.dirname(key))
            through = f".{module_word}."

            def may_name(site_key: str, text: str) -> bool:
                imports = self.imports.get(site_key, set())
                return not imports.isdisjoint(words) or (package in imports and through in text)

            # the import words first: a search of every text for every class asked about
            # was a third of the index's time on torch's tree
            self._sites[memo] = [
                site_key for site_key, text in self.texts.items()
                if (site_key == key or may_name(site_key, text)) and class_name in text
            ]
        return self._sites[memo]

    def _maybe_built(self, key: str, class_name: str) -> bool:
        called = re.compile(r"(?<!\w)(?<!class )" + re.escape(class_name) + r"[ \t]*\(")  # not its `class` line
        return any(called.search(self.texts[site_key]) for site_key in self._candidates(key, class_name))

    def sites(self, key: str, class_name: str) -> Optional[list]:
        memo = (key, class_name)
        if memo not in self._sites:
            self._sites[memo] = self._find_sites(key, class_name)
        return self._sites[memo]

    def _find_sites(self, key: str, class_name: str) -> Optional[list]:
        """Every call of the class in the files that may name it; None when one of them cannot
        be read as a call of it or of something else, subclasses it or hands it around."""
        out: list = []
        for site_key in self._candidates(key, class_name):
            tree = self._tree(site_key)
            if tree is None:
                return None
            calls = _calls_of_class(_naming(tree, self.texts[site_key], class_name), class_name)
            if calls is None or (site_key == key and _builds_itself(tree, class_name)):
                return None
            if not calls:
                continue
            site_module = self._module(site_key, tree)
            if site_module is None:
                return None
            text = self.texts[site_key]
            for node, scope in calls:
                callee = _dotted(node.func)
                hit = self._callee(callee, site_key, site_module)
                if hit is None:
                    if callee == class_name and site_key != key and "import *" not in text:
                        continue  # a name of its own (a local value): not this class
                    return None
                if hit[0] == "class" and hit[1] == key and hit[3].name == class_name:
                    out.append((site_key, node, scope))
        return out

    def _tree(self, key: str) -> Optional[ast.Module]:
        if key in self._trees:
            self._trees.move_to_end(key)
            return self._trees[key]
        text = self.texts.get(key)
        tree = self._trees[key] = _parse(text) if text is not None else None
        if tree is not None and key in self.index.pending:
            self.index.trees[key] = tree  # its summary, if asked, needs no parse
        if len(self._trees) > _TREES_KEPT:
            # the oldest goes (parsed again if asked): every construction site of a big tree
            # kept at once was most of a run's peak memory (139 MB of torch's 268)
            old, _ = self._trees.popitem(last=False)
            self.index.trees.pop(old, None)
        return tree

    def _module(self, key: str, tree: Optional[ast.Module] = None) -> Optional[Module]:
        """The index's entry for a module (parsed now, from `tree` when given: it joins the
        index, so its digest keys the results that depend on it)."""
        if key in self.index.modules:
            return self.index.modules[key]
        if tree is None and key in self.texts:
            tree = self._tree(key)
        return self.index.module(key, tree)

    # -- values -------------------------------------------------------------------------------

    def _callee(self, dotted: str, key: str, module: Module):
        """What a called name is in a module: ("class", key, Module, Class) or ("function",
        key, Module, Function) of the project, else None."""
        head, _, rest = dotted.partition(".")
        if not rest and head not in module.aliases:
            if head in module.classes:
                return ("class", key, module, module.classes[head])
            if head in module.functions:
                return ("function", key, module, module.functions[head])
            return None
        if head not in module.aliases:
            return None
        found = self.index.lookup(module.aliases[head] + ("." + rest if rest else ""), key)
        return found if found is not None and found[0] in ("class", "function") else None

    def _class_of(self, value: ast.AST, key: str, scope: ast.AST, steps: int) -> Optional[tuple[str, str]]:
        """(module key, class name) of the project that `value` (in module `key`, read in
        `scope`) is an instance of, when that is certain."""
        if steps > MAX_STEPS:
            return None
        if isinstance(value, ast.Name):
            assigned = _assignments(scope, value.id)
            if not assigned:
                return None
            found = {self._class_of(v, key, scope, steps + 1) for v in assigned}
            return found.pop() if len(found) == 1 else None
        if not isinstance(value, ast.Call):
            return None
        callee = _dotted(value.func)
        module = self.index.module(key)
        hit = self._callee(callee, key, module) if callee is not None and module is not None else None
        if hit is None:
            return None
        if hit[0] == "class":
            return hit[1], hit[3].name
        return self._returned(hit[1], hit[2], hit[3], steps + 1)

    def _returned(self, key: str, module: Module, function, steps: int) -> Optional[tuple[str, str]]:
        """The class every return of a project function builds."""
        memo = (key, function.qualname, function.line)
        if memo in self._returns:
            return self._returns[memo]
        self._returns[memo] = None  # a recursive factory: unknown
        tree = _parse(function.text)
        definition = tree.body[0] if tree is not None and tree.body else None
        found: set = set()
        if isinstance(definition, ast.FunctionDef) and not function.decorated:
            for node, scope in _walk_scoped(definition, definition):
                if scope is not definition:
                    continue
                if isinstance(node, (ast.Yield, ast.YieldFrom)):
                    found = {None}
                    break
                if isinstance(node, ast.Return):
                    found.add(self._class_of(node.value, key, definition, steps) if node.value is not None else None)
        answer = found.pop() if len(found) == 1 else None
        self._returns[memo] = answer
        return answer


def _naming(tree: ast.Module, text: str, class_name: str) -> Optional[list]:
    """(statement, its scope) for the statements whose lines hold the class's name, looked for
    inside class bodies too: every place the tree names it is in one of them (a big module
    names a class in a few methods; the rest is not walked).  None when a class of the tree
    derives from it (its own construction sites hand the parameter too)."""
    lines = set()
    line, last = 1, 0
    for match in re.finditer(r"(?<!\w)" + re.escape(class_name) + r"(?!\w)", text):
        line += text.count("\n", last, match.start())
        last = match.start()
        lines.add(line)
    out: list = []
    stack = [(statement, tree) for statement in reversed(tree.body)]
    while stack:
        statement, scope = stack.pop()
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        end = statement.end_lineno or statement.lineno
        if not any(first <= number <= end for number in lines):
            continue
        if not isinstance(statement, ast.ClassDef):
            out.append((statement, scope))
            continue
        if any((_dotted(base) or "").rsplit(".", 1)[-1] == class_name for base in statement.bases):
            return None
        out += [(expr, scope) for expr in statement.bases + [k.value for k in statement.keywords] + statement.decorator_list]
        stack += [(inner, statement) for inner in reversed(statement.body)]
    return out


def _calls_of_class(statements: Optional[list], class_name: str) -> Optional[list]:
    """(call, scope) of each call of a name ending in the class's name, in one walk; None when
    the tree subclasses it, or names it other than where it is called, annotated or tested
    (`partial(Runner, ...)`, `factory = Runner`, `Runner.from_config(...)`): then a site may
    be out of sight."""
    calls: list = []
    allowed: set = set()
    named: list = []
    if statements is None:
        return None
    for node, scope in (pair for statement, outer in statements for pair in _walk_scoped(statement, outer)):
        if isinstance(node, ast.Call):
            allowed.add(id(node.func))
            callee = _dotted(node.func)
            if callee is not None and callee.rsplit(".", 1)[-1] == class_name:
                calls.append((node, scope))
            if isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                allowed.update(id(sub) for sub in ast_nodes(node.args[1]))
        elif isinstance(node, ast.ClassDef):
            if any((_dotted(base) or "").rsplit(".", 1)[-1] == class_name for base in node.bases):
                return None  # a subclass: its own construction sites hand the parameter too
        elif isinstance(node, ast.arg) and node.annotation is not None:
            allowed.update(id(sub) for sub in ast_nodes(node.annotation))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            allowed.update(id(sub) for sub in ast_nodes(node.returns))
        elif isinstance(node, ast.AnnAssign):
            allowed.update(id(sub) for sub in ast_nodes(node.annotation))
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            if (node.id if isinstance(node, ast.Name) else node.attr) == class_name:
                named.append(node)
    if any(id(node) not in allowed for node in named):
        return None
    return calls


def _builds_itself(tree: ast.Module, class_name: str) -> bool:
    """Does the class build instances of itself (`cls(...)` in a classmethod, `type(self)(...)`)?"""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for sub in ast_nodes(node):
                if isinstance(sub, ast.Call):
                    func = sub.func
                    if (isinstance(func, ast.Name) and func.id == "cls") or isinstance(func, ast.Call) \
                            or (isinstance(func, ast.Attribute) and func.attr == "__class__"):
                        return True
    return False


def _stored(node: ast.ClassDef) -> dict:
    """attr -> (parameter, its position among `__init__`'s positional parameters after `self`,
    or -1 for a keyword-only one) for each `self.attr = parameter` of `__init__` that is the
    attribute's only assignment in the class, of a parameter `__init__` never rebinds.  Only
    statements are read (an attribute is assigned by a statement), not every expression."""
    init = next((m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == "__init__"), None)
    if init is None:
        return {}
    positional = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    keyword_only = {a.arg for a in init.args.kwonlyargs}
    rebound = {t.id for statement, targets in _assigned(init.body) for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    found: dict = {}
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for statement, targets in _assigned(method.body):
            for target in targets:
                for element in ast.walk(target):
                    name = _dotted(element) if isinstance(element, ast.Attribute) else None
                    if not (name and name.startswith("self.") and name.count(".") == 1):
                        continue
                    attr = name[len("self.") :]
                    value = getattr(statement, "value", None)
                    plain = (
                        method is init and isinstance(statement, ast.Assign) and len(statement.targets) == 1
                        and element is target and isinstance(value, ast.Name) and value.id not in rebound
                        and (value.id in positional or value.id in keyword_only)
                    )
                    found[attr] = None if attr in found or not plain else value.id
    return {
        attr: (param, positional.index(param) if param in positional else -1)
        for attr, param in found.items()
        if param is not None
    }


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _assigned(statements: list):
    """(statement, its targets) of every statement that assigns, nested blocks and defs included."""
    stack = list(statements)
    while stack:
        statement = stack.pop()
        if isinstance(statement, ast.Assign):
            yield statement, statement.targets
        elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
            yield statement, [statement.target]
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            yield statement, [statement.target]
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield statement, [item.optional_vars for item in statement.items if item.optional_vars is not None]
        for name in _BODIES:
            for child in getattr(statement, name, None) or ():
                if isinstance(child, ast.stmt):
                    stack.append(child)
                else:  # an except handler, a match case: their statements
                    stack.extend(getattr(child, "body", None) or ())


def _argument(call: ast.Call, param: str, position: int) -> Optional[ast.AST]:
    """What a construction call passes for the parameter; None when it cannot be told
    (`*args`, `**kwargs`) or it is not passed (its default)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    for keyword in call.keywords:
        if keyword.arg == param:
            return keyword.value
    if 0 <= position < len(call.args):
        return call.args[position]
    return None


def _walk_scoped(tree: ast.AST, scope: Optional[ast.AST] = None):
    """Every node with the scope (module, function or lambda; a class body is one too) whose
    names it reads."""
    scope = tree if scope is None else scope
    stack = [(tree, scope)]
    while stack:
        node, here = stack.pop()
        yield node, here
        inner = node if isinstance(node, _SCOPES + _COMPREHENSIONS) else here
        for child in ast.iter_child_nodes(node):
            stack.append((child, inner))


def _assignments(scope: ast.AST, name: str) -> Optional[list]:
    """The values `name = value` assigns in the scope's own body; None when the name is bound
    any other way there too (a parameter, a loop or `with` target, an unpacking, an import,
    `global`), or never."""
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        arguments = scope.args
        every = arguments.posonlyargs + arguments.args + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg]
        if any(a is not None and a.arg == name for a in every):
            return None
    elif not isinstance(scope, ast.Module):
        return None  # a class body's names: not followed
    values: list = []
    plain: set = set()
    for node, here in _walk_scoped(scope, scope):
        if here is not scope:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not scope:
            if node.name == name:
                return None
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
                    plain.add(id(target))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
            if node.value is None:
                plain.add(id(node.target))  # a declaration binds nothing
            else:
                values.append(node.value)
                plain.add(id(node.target))
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name.split(".")[0]) == name for a in node.names):
            return None
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            return None
        elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) and id(node) not in plain:
            return None
    return values or None


def _module_word(key: str) -> str:
    folder, name = os.path.split(key)
    stem = os.path.splitext(name)[0]
    return os.path.basename(folder) if stem == "__init__" else stem

