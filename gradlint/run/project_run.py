"""The project index of one run: built before the files are analysed, installed in every
process that analyses them (the command line's own, or each worker of the pool)."""

from __future__ import annotations

import os
import re
from typing import Optional

from gradlint.core.events import LOOP_EVENT_NAMES, MODULE_FORWARD, OWN_PROTOCOL_METHODS, ZERO_GRAD_METHODS
from gradlint.core.api_names import OBJECT_CALL
from gradlint.project.index import MAX_IMPORT_DEPTH, Index, Module, import_targets, text_aliases, text_stars
from gradlint.project.scan import called_names, calls_of, has_spelling, matches_at_lines, merge, scan, star_words
from gradlint.project.scan import forget as forget_calls
from gradlint.project.view import View, index_digest, subclass_owners, subclass_words, view_of

_TOP_DEF = re.compile(r"^(?:async[ \t]+)?def[ \t]", re.M)

# What this process knows of the run's project: the index and each checked file's view.
_INDEX: Optional[Index] = None
_VIEWS: dict = {}
_BUILD = None  # makes the index when the views came from the cache (views_of_run)


def index_files(files, roots=(), every_module: bool = False) -> tuple[Index, dict]:
    """`files`: (path, text, digest, wrappers) of every file the run checks.  Returns the
    frozen index and the views (path -> View) of the files whose loops may call a function of
    another module that touches gradients.

    1. Every file is scanned as text (scan.py): its defs that hold a gradient spelling, the
       names each def and the file call, the words of its import lines.  A local module a
       file imports that the run does not check is read (not parsed) and scanned too.
    2. Names that touch gradients, by text: such defs, and defs that call them, to a fixed point.
    3. Callers: files that call one of those names and whose import lines name one of them, its
       class or its module.  Only callers are parsed, and the modules their imports lead to.
    `every_module` (the language server, whose callers are unsaved buffers): every module
    holding such a def is parsed, and every package's __init__.py (it may re-export one).
    """
    index = Index(roots or [os.path.dirname(os.path.abspath(path)) or "." for path, *_ in files])
    scans: dict = {}
    texts: dict = {}
    run_keys = []
    for path, text, digest, wrappers in files:
        key = index.know(path, text, digest, wrappers)
        run_keys.append((path, key))
        scans[key] = scan(text, wrappers)
        texts[key] = text
    # local modules the run does not check, imported by a file named on the command line
    # (`gradlint train.py`, a pre-commit run: trainer.py next to it); a folder's run has them all
    named = {os.path.abspath(r) for r in roots if os.path.isfile(r)}
    fresh = [key for key in scans if key in named]
    for _ in range(MAX_IMPORT_DEPTH):
        for key in fresh:
            for target in import_targets(index.pending[key][1]) if key in index.pending else ():
                index.resolve(target, key, on_disk=True)
        fresh = [k for k in index.pending if k not in scans]
        if not fresh:
            break
        for key in fresh:
            scans[key] = scan(index.pending[key][1])
    _admit_held(index, scans, texts)
    functions = set().union(*(s.functions for s in scans.values())) - _NOT_HELPERS
    methods: dict = {}
    for found in scans.values():
        merge(methods, found.methods)
    for name in _NOT_HELPER_METHODS:
        methods.pop(name, None)
    builders = set().union(*(s.builders for s in scans.values()))
    builders |= _factories(index, scans, texts, builders)
    index.builder_words = frozenset(builders)
    if not functions and not methods:
        views = _builder_views(index, scans, texts, run_keys, builders, {})
        index.freeze()
        forget_calls()
        return index, views
    from gradlint.project.construction import Deliveries
    from gradlint.project.view import parse_reachable

    # what the build scanned, for the construction sites of a class (construction.py)
    known_texts = {key: texts[key] if key in texts else index.pending[key][1] for key in scans if key in texts or key in index.pending}
    deliveries = Deliveries(index, known_texts, {key: found.imports for key, found in scans.items()})
    stars = _stars(texts, index)
    starred_words = _starred_words(texts, index, scans)
    # `agent = get_agent(cfg)`, a factory returning `SAC(...)` or `TD3(...)`: as if the file
    # imported the classes whose methods touch gradients
    made_by = _trainer_factories(index, scans, texts, methods)
    used_factories: dict = {}  # factory name -> its modules, for the files that import one

    # Callers are found round by round: a def around a call of one of them wraps it (Trainer.
    # train_step calling self.stepper.run(loss)) and joins them, and a file that calls one of
    # them inside a loop is a caller.  Callers are parsed, and the modules their imports lead to.
    callers: list = []
    done: set = set()
    targets: dict = {}
    looked: dict = {}
    for _ in range(MAX_IMPORT_DEPTH + 1):
        holders, receivers = _holders(scans, functions | set(methods), stars)
        module_classes = _module_classes(scans)
        more_functions, more_methods = set(functions), {k: set(v) for k, v in methods.items()}
        size = (len(functions), sum(map(len, methods.values())))
        names = functions | set(methods)
        words = _words(scans, names)
        by_class: dict = {}  # class -> its methods among them
        for name, classes in methods.items():
            for cls in classes:
                by_class.setdefault(cls, set()).add(name)
        for path, key in run_keys:
            found = scans[key]
            if looked.get(key) == size:
                continue
            # a class of the project handed to this file's class by its construction sites
            # (`self.pair.step()`, `self.pair = pair`): as if the file imported it
            delivered = deliveries.classes_for(key, methods)
            imports = found.imports | delivered if delivered else found.imports
            starred = starred_words(key)
            if starred:  # `from trainers.base import *`: as if it named what that module defines
                imports = imports | starred
            factories = imports & made_by.keys()
            for name in factories:
                imports = imports | made_by[name][1]
                used_factories[name] = made_by[name][0]
            # cheapest first: an import line that may reach one, then the name in the text at all
            if imports.isdisjoint(words):
                continue
            # `policy = agentmod.Agent(...)` with `import agentmod`: the class, as if imported by name
            built = _classes_through(texts[key], imports & words)
            # `loss = getattr(losses, args.loss)(model)` with `import losses`: every class of it
            built |= _classes_by_getattr(texts[key], imports & words, module_classes)
            if built:
                imports = imports | built
            # what calls_of can accept here (its own test): a function, bare or through a module,
            # or a method of a class the import lines name (`model.train()` is no call of a
            # trainer's `train` in a file that never imports the trainer), called in the text
            # (set intersections: each walks the smaller set, the file's calls)
            called = called_names(texts[key])
            if called.isdisjoint(functions) and not any(
                not called.isdisjoint(by_class[word]) for word in imports if word in by_class
            ):
                continue
            if not delivered and not factories and not _imports_a_holder(index, key, texts[key], holders, targets):
                continue
            looked[key] = size
            in_loop, wrapping_functions, wrapping_methods = calls_of(
                texts[key], functions, methods, imports, _through(receivers, texts[key])
            )
            found.functions |= wrapping_functions
            merge(found.methods, wrapping_methods)
            more_functions |= wrapping_functions
            merge(more_methods, wrapping_methods)
            if in_loop and key not in done:
                done.add(key)
                callers.append((path, key))
        more_functions -= _NOT_HELPERS
        for name in _NOT_HELPER_METHODS:
            more_methods.pop(name, None)
        if (len(more_functions), sum(map(len, more_methods.values()))) == size:
            break
        functions, methods = more_functions, more_methods
    # a top-level function whose parameter its body calls (`loss_scaler(loss, opt)`) or calls a
    # method on, filled only by callers of other modules: the class they all hand it (handed.py)
    from gradlint.project.handed import Handed

    handed = Handed(deliveries)
    handed_keys = [
        (path, key) for path, key in run_keys
        if scans[key].functions and handed.classes_for(key, scans[key].functions, set(methods))
    ]
    # ...and such a module the run does not check, imported by a file it checks that calls the
    # function (`gradlint main_pretrain.py`, engine_pretrain.py beside it): analysed for that file
    checked_keys = {key for _, key in run_keys}
    handed_elsewhere = [
        key for key in sorted(scans)
        if key not in checked_keys and scans[key].functions
        and handed.classes_for(key, scans[key].functions, set(methods))
    ]
    names = functions | set(methods)
    index.reachable_words = frozenset(_words(scans, names) | used_factories.keys())
    factory_modules = set().union(*used_factories.values()) if used_factories else set()
    index.holders = None if every_module else frozenset(_holders(scans, names, stars)[0] | factory_modules)
    expanded: dict = {}  # module key -> the levels of its imports parsed (parse_reachable)
    for _, key in callers:
        # its own defs matter, or an earlier caller's walk parsed it already (a base class
        # looked up there): the summary; else only its imports, read from its text
        if index.holders is None or key in index.holders or key in index.modules:
            module = index.module(key)
        else:
            path, text, digest, _ = index.pending.pop(key)
            module = index.modules[key] = Module(path, digest, text_aliases(text), stars=text_stars(text))
            index.bind_stars(key, module)
        if module is not None:
            parse_reachable(index, key, module, expanded)
    index.mark_relevant(_seeds(index, scans, functions, methods))
    if every_module:
        for key, found in scans.items():
            if os.path.basename(key) == "__init__.py" or not (found.functions | set(found.methods)).isdisjoint(names):
                index.module(key)
        index.mark_relevant(_seeds(index, scans, functions, methods))
    elif any(scans[key].methods for key in index.holders or () if key in scans):
        # the modules whose classes hold methods that touch gradients: a base class of another
        # module may run them through `self` (subclass_words), which no import of its shows
        for key in sorted(index.holders):
            if key in scans and scans[key].methods:
                index.module(key)
        index.mark_relevant(_seeds(index, scans, functions, methods))
    views: dict = {}
    for path, key in callers:
        view = view_of(index, key)
        if view is not None:
            views[path] = view
    # a file importing a class whose `__call__` touches gradients calls it through its objects
    # (`loss_scaler(loss, opt)`), by names no text scan can tell: its view, as a caller's
    callable_classes = methods.get(OBJECT_CALL, set())
    for path, key in run_keys if callable_classes else ():
        if path not in views and not scans[key].imports.isdisjoint(callable_classes) and index.module(key) is not None:
            view = view_of(index, key)
            if view is not None:
                views[path] = view
    for path, key in handed_keys:  # its loop runs what the handed objects' classes run
        if path not in views and index.module(key) is not None:
            view = view_of(index, key)
            if view is not None:
                views[path] = view
    path_of = {key: path for path, key in run_keys}
    for key in handed_elsewhere:
        adopter = next((path_of[site] for site in sorted(handed.callers.get(key, ())) if site in path_of), None)
        module = index.module(key) if adopter is not None else None
        view = view_of(index, key) if module is not None else None
        if view is not None and module.path not in views:
            views[module.path] = View(view.key, view.words, view.digest, view.callbacks, runs_for=adopter)
    # a base class whose loop calls `self.m()` that subclasses of other modules override
    overridden = subclass_words(index)
    for path, key in run_keys:
        if path not in views and key in overridden and index.module(key) is not None:
            view = view_of(index, key)
            if view is not None:
                views[path] = view
    views = _builder_views(index, scans, texts, run_keys, builders, views)
    views = _companions(index, texts, run_keys, views)
    index.freeze()
    forget_calls()
    return index, views


def _companions(index: Index, texts: dict, run_keys: list, views: dict) -> dict:
    """`views`, and a view for each module the run does not check whose base class runs, through
    `self`, the override of a subclass that a checked file defines, or that a checked file
    imports and calls a method of the base on (`ClippedTrainer(model).train(batches)`, `train`
    inherited from the base whose loop calls `self.run_step()`): the base's loop is where that
    override's misplaced call is a bug, so the run analyses it for that file (engine.py) and
    reports what it finds outside the base's own lines.  Only modules the index already holds
    are asked (the checked files' imports, and what they reach): nothing else is read."""
    owners = subclass_owners(index)
    checked = {key: path for path, key in run_keys}
    out = dict(views)
    for base_key, found in sorted(owners.items()):
        if base_key in checked:
            continue  # checked itself: its own loops follow every override
        base = index.modules.get(base_key)
        if base is None:
            continue
        adopter, classes = None, set()
        for sub_key, sub_name, base_name in sorted(found):
            user = checked.get(sub_key) or _user_of(index, texts, run_keys, sub_key, sub_name, base.classes.get(base_name))
            if user is not None:
                adopter = adopter or user
                classes.add(f"{sub_key}\0{sub_name}")
        if adopter is None:
            continue
        view = view_of(index, base_key)
        if view is None:
            continue
        restricted = tuple(sorted(classes))
        digest = index_digest(index) + "-" + _digest_of(restricted)
        out[base.path] = View(view.key, view.words, digest, view.callbacks, runs_for=adopter, subclasses=restricted)
    return out


def _user_of(index: Index, texts: dict, run_keys: list, sub_key: str, sub_name: str, base_class) -> Optional[str]:
    """The first checked file that imports the subclass `sub_name` of module `sub_key` (by its
    name, or through its module: `trainers.ClippedTrainer`) and calls, by name, a method its base
    class `base_class` defines (the one whose loop may run the override)."""
    if base_class is None:
        return None
    methods = set(base_class.methods)
    for path, key in run_keys:
        text = texts.get(key)
        if text is None or sub_name not in text or called_names(text).isdisjoint(methods):
            continue
        for local, qualified in text_aliases(text).items():
            last = qualified.rsplit(".", 1)[-1]
            if last == sub_name:
                hit = index.lookup(qualified, key)
                if hit is not None and hit[0] == "class" and hit[1] == sub_key and hit[3].name == sub_name:
                    return path
            elif f"{local}.{sub_name}" in text:
                hit = index.lookup(f"{qualified}.{sub_name}", key)
                if hit is not None and hit[0] == "class" and hit[1] == sub_key:
                    return path
    return None


def _digest_of(names: tuple) -> str:
    from gradlint.core.digest import hex_digest

    return hex_digest("\n".join(names).encode("utf-8", "surrogateescape"), size=8)


def _factories(index: Index, scans: dict, texts: dict, builders: set) -> set:
    """Functions of the modules that import such a class which return an instance of it
    (`create_model(opt)` of a package's __init__.py): their callers' loops may step its
    optimizers too.  Only those modules are parsed whose text has a top-level def and names
    an imported such class again after its import."""
    out: set = set()
    if not builders:
        return out
    for key, found in list(scans.items()):
        named = found.imports & builders
        if not named:
            continue
        text = texts[key] if key in texts else index.pending[key][1] if key in index.pending else ""
        if next(matches_at_lines(text, "def", _TOP_DEF), None) is None or all(text.count(name) < 2 for name in named):
            continue
        module = index.module(key)
        for function in module.functions.values() if module is not None else ():
            made = index.factory_class(key, module, function)
            if made is not None and made[1].name in builders:
                out.add(function.name)
    return out


def _trainer_factories(index: Index, scans: dict, texts: dict, methods: dict) -> dict:
    """{name: ({module keys}, {class names})} of the functions that return an instance of one of
    several classes whose methods touch gradients (`get_agent(cfg)` returning `SAC(...)` on one
    branch, `TD3(...)` on another; the index's `factory_classes` reads every return), in the
    modules that import such a class.  Only those modules are parsed whose text has a top-level
    def and names an imported such class again after its import.  A name two modules define
    holds both (these are words that make a file worth modelling; which module the file
    imports is the model's to resolve)."""
    classes = {cls for owners in methods.values() for cls in owners}
    out: dict = {}
    for key, found in list(scans.items()):
        named = found.imports & classes
        if not named:
            continue
        text = texts[key] if key in texts else index.pending[key][1] if key in index.pending else None
        if text is None and key not in index.modules:
            continue
        if text is not None and (  # a module parsed already (its text let go) is read as it is
            next(matches_at_lines(text, "def", _TOP_DEF), None) is None or all(text.count(name) < 2 for name in named)
        ):
            continue
        module = index.module(key)
        for function in module.functions.values() if module is not None else ():
            if function.name in _NOT_HELPERS or not function.calls & named:
                continue
            made = index.factory_classes(key, module, function)
            built = {cls.name for _, cls in made or ()} & classes
            if not built:
                continue
            keys, names = out.get(function.name, (set(), set()))
            out[function.name] = (keys | {key}, names | built)
    return out


def _builder_views(index: Index, scans: dict, texts: dict, run_keys: list, builders: set, views: dict) -> dict:
    """`views`, and the view of each other file of the run whose import lines name a class that
    stores an optimizer on self (scan.py's builders) and whose text has a gradient spelling (a
    clear, a backward, a step): its loops may clear and step that optimizer through an instance
    (`self.policy.optimizer`, foreign.py's Project.learn_instances)."""
    if not builders:
        return views
    out = dict(views)
    for path, key in run_keys:
        if path in out or scans[key].imports.isdisjoint(builders) or not has_spelling(texts[key]):
            continue
        module = index.module(key)
        view = view_of(index, key) if module is not None else None
        if view is not None:
            out[path] = view
    return out


def _seeds(index: Index, scans: dict, functions: set, methods: dict) -> tuple:
    """The text's names, for the parse's relevance, of the defs in modules it did not parse
    (a parsed module's own functions say for themselves whether they touch gradients)."""
    unparsed = [found for key, found in scans.items() if index.modules.get(key) is None]
    plain = {n for n in functions if any(n in found.functions for found in unparsed)}
    bound: dict = {}
    for found in unparsed:
        for name, classes in found.methods.items():
            if name in methods and name not in _NOT_HELPER_METHODS:
                bound.setdefault(name, set()).update(classes)
    return frozenset(plain - _NOT_HELPERS), bound


def _holders(scans: dict, names: set, stars) -> tuple[set[str], dict]:
    """Modules holding a def of `names`, and the package __init__.py files above them (three
    folders up) that may re-export one: its import lines name the def or its class, or it
    imports everything (`*`) from a module or package on the way down to it; an __init__.py
    the build never read may re-export anything.  With them, for each function of `names`,
    the words a module must have for `module.name(...)` to call it: its module's, and each
    re-exporting package's (`torch.sum(x)` is no call of a `def sum` that torch/__init__.py
    never imports).  `stars`: key -> the words its `import *` lines name."""
    out: set[str] = set()
    receivers: dict = {}
    for key, found in scans.items():
        functions = found.functions & names
        classes = {cls for name, owners in found.methods.items() if name in names for cls in owners}
        if not functions and not classes:
            continue
        out.add(key)
        word = _module_word(key)
        for name in functions:
            receivers.setdefault(name, set()).add(word)
        way = {word}  # the module and the packages between it and the __init__.py
        folder = os.path.dirname(key)
        for _ in range(3):
            init = os.path.join(folder, "__init__.py")
            above = scans.get(init)
            if init != key and (
                above is None or not above.imports.isdisjoint(functions | classes) or not stars(init).isdisjoint(way)
            ):
                out.add(init)
                for name in functions:
                    receivers[name].add(os.path.basename(folder))
            way.add(os.path.basename(folder))
            folder = os.path.dirname(folder)
    return out, receivers


def _stars(texts: dict, index: Index):
    """key -> the words of its `import *` lines (only a package's __init__.py is asked)."""
    known: dict = {}

    def stars(key: str) -> set:
        if key not in known:
            text = texts[key] if key in texts else index.pending[key][1] if key in index.pending else None
            known[key] = star_words(text) if text is not None else set()
        return known[key]

    return stars


_CLASS_HEAD = re.compile(r"^[ \t]*class[ \t]+(\w+)", re.M)


def _admit_held(index: Index, scans: dict, texts: dict) -> None:
    """A `step` or `backward` method the scan held back (Scan.held: its class builds on something
    not plainly free of an API's protocol) is a helper after all when that something is a class
    of the project that is (`class RedshiftTrainer(BaseTrainer)`, `class BaseTrainer(ABC)` in
    another module): the base's loop runs the override through `self.step(data)`.  Only a
    module whose class names a base some text of the run defines is parsed to ask."""
    held = [(key, found) for key, found in scans.items() if found.held]
    if not held:
        return
    defined: set = set()
    for key in scans:
        text = texts[key] if key in texts else index.pending[key][1] if key in index.pending else ""
        defined.update(m.group(1) for m in matches_at_lines(text, "class", _CLASS_HEAD))
    for key, found in held:
        for name, owners in found.held.items():
            for class_name, bases in owners:
                if defined.isdisjoint(bases):
                    continue
                module = index.module(key)
                cls = module.classes.get(class_name) if module is not None else None
                if cls is not None and index.own_protocol(key, cls):
                    merge(found.methods, {name: {class_name}})


def _starred_words(texts: dict, index: Index, scans: dict):
    """key -> the names of the defs (and their classes) that touch gradients in the modules the
    file's `from m import *` lines import, as the scans know them now (they grow round by round)."""
    targets: dict = {}

    def starred(key: str) -> set:
        if key not in targets:
            text = texts[key] if key in texts else index.pending[key][1] if key in index.pending else ""
            found = [index.resolve(base, key) for base in text_stars(text)] if "*" in text else []
            targets[key] = [f[0] for f in found if f is not None and not f[1] and f[0] in scans]
        out: set = set()
        for target in targets[key]:
            held = scans[target]
            out |= held.functions | set(held.methods)
            for classes in held.methods.values():
                out |= set(classes)
        return out

    return starred


def _classes_through(text: str, modules: set) -> set[str]:
    """The capitalised names the text reads through one of `modules` (`agentmod.Agent` of
    `policy = agentmod.Agent(...)` after `import agentmod`): a class reached through its module
    is as good as one its import line names.  One search per module word, no pattern."""
    out: set[str] = set()
    for word in modules:
        needle = word + "."
        at = text.find(needle)
        while at >= 0:
            if at == 0 or not (text[at - 1].isalnum() or text[at - 1] in "_."):
                start = end = at + len(needle)
                while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    end += 1
                if text[start:start + 1].isupper():
                    out.add(text[start:end])
            at = text.find(needle, at + len(needle))
    return out


def _module_classes(scans: dict) -> dict:
    """{module word: the classes whose methods touch gradients there}: what `getattr(word, name)`
    may give."""
    out: dict = {}
    for key, found in scans.items():
        classes = {cls for owners in found.methods.values() for cls in owners}
        if classes:
            out.setdefault(_module_word(key), set()).update(classes)
    return out


def _classes_by_getattr(text: str, modules: set, module_classes: dict) -> set[str]:
    """The classes of the modules the text picks a class from by name (`getattr(losses,` after
    `import losses`): any of them may be the one built.  One search per module word."""
    out: set[str] = set()
    for word in modules:
        if word in module_classes and f"getattr({word}," in text:
            out |= module_classes[word]
    return out


def _through(receivers: dict, text: str):
    """Can `receiver.name(...)` in this text call the project's function `name`?  The
    receiver, or the module it aliases (`import trainer as tr`), must be one of the words
    that reach a module holding it (`_holders`)."""
    aliases: list = []

    def through(name: str, receiver: str) -> bool:
        words = receivers.get(name)
        if words is None or receiver in words:
            return True
        if not aliases:
            aliases.append(text_aliases(text))
        qualified = aliases[0].get(receiver)
        return qualified is not None and not words.isdisjoint(qualified.split("."))

    return through


def _imports_a_holder(index: Index, key: str, text: str, holders: set, targets: dict) -> bool:
    """Does one of the file's import lines resolve (by path) to a module holding such a def?"""
    if key not in targets:
        targets[key] = import_targets(text)
    for target in targets[key]:
        found = index.resolve(target, key)
        if found is not None and found[0] in holders:
            return True
    return False


def _words(scans: dict, names: set) -> set[str]:
    """The words an import line must hold to reach a def of `names`: the name, its class's,
    its module's, and its package's folder (an __init__.py may re-export it)."""
    words = set(names)
    for key, found in scans.items():
        if (found.functions | set(found.methods)).isdisjoint(names):
            continue
        words.add(_module_word(key))
        words.add(os.path.basename(os.path.dirname(key)))
        words.update(cls for method, classes in found.methods.items() if method in names for cls in classes)
    return words


# Names every class has, and the API's own event names (a call of `x.step()` is a step
# before it is a helper): that one of them touches gradients says nothing about a call of it.
# Not `__call__`: an object of its class runs it when called (a loss scaler's `loss_scaler(loss,
# opt)`); no caller is found by that name, but its class's module is read for the files that
# import the class (index.py's _NEVER_HELPERS likewise).
_NOT_HELPERS = frozenset({"__init__", MODULE_FORWARD, "main"}) | LOOP_EVENT_NAMES | ZERO_GRAD_METHODS
# ...but a method of these names on a class of the project's own protocol (scan.py keeps only those).
_NOT_HELPER_METHODS = _NOT_HELPERS - OWN_PROTOCOL_METHODS


def _module_word(path: str) -> str:
    """The word an import of this file holds: `trainer` of trainer.py, `engine` of engine/__init__.py."""
    folder, name = os.path.split(os.path.abspath(path))
    stem = os.path.splitext(name)[0]
    return os.path.basename(folder) if stem == "__init__" else stem


def views_of_run(files, roots, cache) -> tuple[Optional[Index], dict]:
    """(index, views) of the run: the views saved by an earlier run of the same files when the
    disk still answers as it did (then no index: None, built by `index_now` if a file with a
    view turns out to need analysis), else both built now and the views saved."""
    if cache is None:
        return index_files(files, roots)
    from gradlint.project import saved

    key = saved.run_key(cache, files, roots)
    views = saved.load(cache, key)
    if views is not None:
        return None, views
    index, views = index_files(files, roots)
    saved.save(cache, key, index, views)
    return index, views


def install(index: Optional[Index], views: dict, build=None) -> None:
    """`build`: makes (index, views) when the index is None and a file with a view is analysed."""
    global _INDEX, _VIEWS, _BUILD
    _INDEX, _VIEWS, _BUILD = index, dict(views), build


def index_now() -> Optional[Index]:
    """The run's index, built now if the views came from the cache."""
    global _INDEX, _VIEWS, _BUILD
    if _INDEX is None and _BUILD is not None:
        _INDEX, views = _BUILD()
        _VIEWS, _BUILD = dict(views), None
    return _INDEX


def views_now() -> dict:
    return dict(_VIEWS)


def view_for(path: str) -> Optional[View]:
    return _VIEWS.get(path)


def project_for(path: str):
    """The Project (foreign.py) a check of this file models other modules' functions with, or None."""
    if _VIEWS.get(path) is None or index_now() is None:
        return None
    view = _VIEWS.get(path)  # the built index's own view
    if view is None:
        return None
    from gradlint.model.foreign import Project

    return Project(_INDEX, view)


def install_and_load(index, views, load) -> None:
    """A worker's start: the run's project, then the analysis's imports (engine.load_analysis)."""
    install(index, views)
    load()
