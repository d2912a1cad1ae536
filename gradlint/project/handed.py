"""What a function's parameter is when only callers in other modules fill it: the class the
call sites of the project hand it.

MAE's layout: `engine.py` defines `def train_one_epoch(model, loader, optimizer, epoch,
loss_scaler)` whose loop calls `loss_scaler(loss, optimizer, update_grad=...)`, and the
script builds `loss_scaler = NativeScaler()` (a class of `util/misc.py`) and calls
`train_one_epoch(..., loss_scaler)` in its epoch loop.  The engine's module never names the
scaler's class, so its loop cannot tell what calling the parameter runs.  This module reads
the call sites of such a function (every file of the run that calls it by name and imports
its module or the function, as construction.py reads a class's construction sites) and the
argument each hands the parameter; when every site hands an instance of the same class of
the project, the parameter has that class (Index.handed).  Sites that disagree, an argument
that cannot be resolved, a parameter left to its default, `*args`/`**kwargs` at a site, or
the function named anywhere but in a call (`partial(train, ...)`) leave it unknown.

Cost: asked only for the top-level functions of a file that the text scan found holding a
gradient spelling and that another file of the run imports by name; each such function's
call sites are read once (the files parsed by construction.py's Deliveries, which keeps them).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Optional

from gradlint.core.api_names import OBJECT_CALL
from gradlint.project.construction import Deliveries, _argument, _calls_of_class, _module_word, _naming
from gradlint.project.index import _dotted


class Handed:
    """Resolves, for one index build, the parameters that call sites of other modules fill."""

    def __init__(self, deliveries: Deliveries) -> None:
        self.deliveries = deliveries
        self._asked: dict = {}  # (key, function, parameter) -> answer
        self._by_word: Optional[dict] = None  # import word -> the files whose import lines hold it
        self.callers: dict = {}  # module key -> the modules whose calls handed one of its parameters a class

    def _candidates(self, key: str, name: str) -> list:
        """The files that may call the function `name` of module `key` (construction.py's
        _candidates for a class, read from the import words' index: only the files that import
        it are looked at, never every file of the run once per function)."""
        memo = ("function candidates", key, name)
        found = self.deliveries._sites.get(memo)
        if found is None:
            importers = self._importers()
            module_word = _module_word(key)
            package = os.path.basename(os.path.dirname(key))
            through = f".{module_word}."
            texts = self.deliveries.texts
            sites = {key} | importers.get(name, set()) | importers.get(module_word, set())
            sites |= {site for site in importers.get(package, ()) if through in texts.get(site, "")}
            found = self.deliveries._sites[memo] = sorted(site for site in sites if name in texts.get(site, ""))
        return found

    def _importers(self) -> dict:
        """import word -> the files whose import lines hold it, built once: the gate that keeps
        a file no other file imports from being looked at further."""
        if self._by_word is None:
            self._by_word = {}
            for site, words in self.deliveries.imports.items():
                for word in words:
                    self._by_word.setdefault(word, set()).add(site)
        return self._by_word

    def classes_for(self, key: str, functions, methods) -> set[str]:
        """The names of the classes handed to parameters of the module's top-level `functions`
        (those the text scan found touching gradients) that a body calls (`p(...)`, when a class
        of the project has a `__call__` that touches gradients) or calls one of `methods` on
        (`p.learn()`): what its imports would name, had it imported them."""
        text = self.deliveries.texts.get(key)
        if text is None:
            return set()
        # another file whose import lines name this module (`from engine import train_one_epoch`,
        # `import engine`): else nothing to parse.  A word any file may import (`main`) is not
        # enough; the sites themselves are then looked for more widely (_candidates)
        texts = self.deliveries.texts
        importers = self._importers().get(_module_word(key), set()) - {key}
        out: set[str] = set()
        for name in sorted(functions):
            if not any(name in texts.get(site, "") for site in importers):
                continue
            node = _top_level_def(text, name)
            for parameter in _called_parameters(node, methods) if node is not None else ():
                hit = self.hand(key, node, parameter)
                if hit is not None:
                    out.add(hit[1])
        return out

    def hand(self, key: str, function: ast.FunctionDef, parameter: str) -> Optional[tuple[str, str]]:
        asked = (key, function.name, parameter)
        if asked not in self._asked:
            self._asked[asked] = self._hand(key, function, parameter)
            if self._asked[asked] is not None:
                self.deliveries.index.handed.setdefault((key, function.name), {})[parameter] = self._asked[asked]
        return self._asked[asked]

    def _hand(self, key: str, function: ast.FunctionDef, parameter: str) -> Optional[tuple[str, str]]:
        arguments = function.args
        positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        position = positional.index(parameter) if parameter in positional else -1
        sites = self._sites(key, function.name)
        if not sites:
            return None
        found = set()
        for site_key, call, scope in sites:
            value = _argument(call, parameter, position)
            if value is None:
                return None  # left to its default, or handed through *args/**kwargs
            found.add(self.deliveries._class_of(value, site_key, scope, 0))
            if None in found or len(found) > 1:
                return None
        self.callers.setdefault(key, set()).update(site_key for site_key, _, _ in sites)
        return found.pop()

    def _sites(self, key: str, name: str) -> Optional[list]:
        """Every call of the top-level function `name` of module `key` in the files that may
        name it; None when one of them cannot be read (a call of a name that may be it, the
        function handed around or aliased)."""
        deliveries = self.deliveries
        memo = ("function sites", key, name)
        if memo in deliveries._sites:
            return deliveries._sites[memo]
        out: Optional[list] = []
        for site_key in self._candidates(key, name):
            tree = deliveries._tree(site_key)
            text = deliveries.texts[site_key]
            calls = _calls_of_class(_naming(tree, text, name), name) if tree is not None else None
            if calls is None:
                out = None
                break
            if not calls:
                continue
            module = deliveries._module(site_key, tree)
            if module is None:
                out = None
                break
            for call, scope in calls:
                callee = _dotted(call.func)
                hit = deliveries._callee(callee, site_key, module) if callee is not None else None
                if hit is None:
                    if callee == name and site_key != key and "import *" not in text:
                        continue  # a name of its own there: not this function
                    out = None
                    break
                if hit[0] == "function" and hit[1] == key and hit[3].qualname == name:
                    out.append((site_key, call, scope))
            if out is None:
                break
        deliveries._sites[memo] = out
        return out


def _called_parameters(function: ast.FunctionDef, methods) -> list[str]:
    """The parameters the body calls (`p(...)`, when OBJECT_CALL is among `methods`) or calls
    one of `methods` on (`p.m(...)`), and never binds again (a new value is not what the
    callers handed)."""
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    called: set = set()
    rebound: set = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and OBJECT_CALL in methods:
                called.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in methods:
                called.add(func.value.id)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            rebound.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            rebound.update(node.names)
    return [name for name in names if name in called and name not in rebound and name != "self"]


def _top_level_def(text: str, name: str) -> Optional[ast.FunctionDef]:
    """The module's one top-level `def name(...)`, parsed from its own lines only (a big module
    is not parsed for one function): from its `def` line (after its decorators) to the next
    line that starts a statement at the first column.  None when the module has several, it is
    decorated (what its callers call may take other arguments), or that text is no function alone (a line at the first column inside a string or brackets:
    then it does not parse, and the function is not looked at)."""
    heads = [m.start() for m in re.finditer(r"^(?:async[ \t]+)?def[ \t]+" + re.escape(name) + r"\b", text, re.M)]
    if len(heads) != 1:
        return None
    start = heads[0]
    before = text[max(0, start - 2000):start].rstrip()
    if before.rsplit("\n", 1)[-1].lstrip().startswith("@"):
        return None  # decorated: what its callers call may take other arguments
    end = len(text)
    at = text.find("\n", start)
    while at != -1 and at + 1 < len(text):
        line_start = at + 1
        first = text[line_start]
        if first not in " \t\r\n#":
            end = line_start
            break
        at = text.find("\n", line_start)
    try:
        tree = ast.parse(text[start:end])
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    node = tree.body[0] if len(tree.body) == 1 else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name else None
