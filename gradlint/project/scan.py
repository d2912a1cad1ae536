"""A text scan of a file, before any parse: which of its defs hold a gradient spelling, and
which of its calls may reach such a def of another file.

The index parses a module with `ast` only when a file of the run may call one of its
functions that touches gradients in a loop.  Deciding that from text costs a few regular
expression passes per file; parsing every module that has a gradient word somewhere would
cost more than the rest of a whole-tree run (most such files are training scripts nobody
imports).

A spelling (or a call) is placed in the defs and loops around it by indentation: the
nearest `def`, `class`, `for` or `while` head above it indented less, whose block no line
between has closed, then the one around that, and so on.  Only the lines with a spelling or
a call of interest are placed, never every line.  The scan decides what to parse: what it
misses stays silent, what it over-reads costs a parse.

Functions and methods are told apart, and so are their calls: `model.train()` is a call of a
method `train`, never of a script's function `def train(...)`; a function is called bare
(`train(...)`) or through a module its file imports (`utils.clip(model)`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import repeat
from typing import Optional
from dataclasses import dataclass, field

from gradlint.core.api_names import BACKWARD, DATA, GRAD, GRAD_ZERO, SCALER_UNSCALE, STEP
from gradlint.core.events import (
    BACKWARD_NAMES,
    CLIP_FUNCTIONS,
    PER_BATCH_METHODS,
    OWN_PROTOCOL_METHODS,
    PROTOCOL_FREE_BASES,
    SELF_UNSCALING_CLIPS,
    ZERO_GRAD_METHODS,
)

_HEAD = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:(def|class)[ \t]+(\w+)|(for|while)\b)", re.M)
# What a function may do to gradients, as text: a backward, a clear, a clip, an unscale, a
# `.grad` write, a step (kept below only of something named like an optimizer, a scaler or an
# engine, or without arguments: `scheduler.step(noise, t, x)` of a diffusion pipeline is none).
# One pattern per spelling, each starting with its literal (a fast search), tried only when
# the literal is in the text at all.
_SPELLINGS = tuple(
    (literal, re.compile(pattern))
    for literal, pattern in [
        *((name, re.escape(name) + r"[ \t]*\(")
          for name in sorted(BACKWARD_NAMES | ZERO_GRAD_METHODS | CLIP_FUNCTIONS | SELF_UNSCALING_CLIPS | {SCALER_UNSCALE})),
        ("." + GRAD, r"\.%s\b(?:\.%s)?[ \t]*(?:=[^=]|[-+*/]=|\.%s\()" % (GRAD, DATA, GRAD_ZERO)),
        ("." + STEP, r"\.%s[ \t]*\(" % STEP),
    ]
)

# A def named as a clip (a project's own `clip_grad_norm_`) is a clip by its name where it is
# called, so it is one of the defs that touch gradients even when its body's writes read as none.
_CLIP_NAMES = CLIP_FUNCTIONS | SELF_UNSCALING_CLIPS
_STEPPER = re.compile(r"opt|scaler|engine", re.I)
IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import\b([^\n#;]*)|import[ \t]+([^\n#;]+))", re.M)
_WORD = re.compile(r"\w+")
# `self.opt = torch.optim.Adam(...)` in a method: the class builds an optimizer of its own,
# which a loop of another module may clear and step through an instance (`self.policy.opt`,
# gradlint/model/foreign.py's Project.learn_instances).  No backtracking: each part is a run
# of one character class.  The word boundary before `self` is checked on each match instead
# of in the pattern: a pattern that starts with its literal is searched for that literal
# first, 15 times faster over diffusers' texts that name `optim.`.
_OPTIMIZER_BUILT = re.compile(r"self\.\w+[ \t]*=[ \t]*[\w.]*\boptim\.[A-Z]\w*[ \t]*\(")


def optimizers_built(text: str):
    """The matches of `self.x = ...optim.Cls(` in the text whose `self` is a whole word."""
    for match in _OPTIMIZER_BUILT.finditer(text):
        at = match.start()
        if not at or not (text[at - 1].isalnum() or text[at - 1] == "_"):
            yield match


@dataclass
class Scan:
    imports: set = field(default_factory=set)  # words of the import lines
    functions: set = field(default_factory=set)  # names of top-level (or nested) functions around a spelling
    methods: dict = field(default_factory=dict)  # names of methods around a spelling -> their classes
    builders: set = field(default_factory=set)  # classes whose methods store an optimizer on self
    # `step`/`backward` methods around a spelling in a class whose bases are not plainly free of
    # an API's protocol (`class Trainer(BaseTrainer)`): name -> {(class, the bases' last names)}.
    # The build asks the index whether those bases are the project's and free (held_protocol_methods)
    held: dict = field(default_factory=dict)


def continued_names(text: str, match: "re.Match") -> str:
    """The lines an import line's parenthesis continues on (`from .utils import (` then
    `    clip_grad_norm_,` ... `)`), up to the `)`: "" for a one-line import."""
    names = match.group(2)
    if not names or "(" not in names or ")" in names:
        return ""
    close = text.find(")", match.end())
    return text[match.end() : len(text) if close < 0 else close]


def line_starts(text: str, word: str):
    """The start of each line that holds `word`, in order, each once.  A pattern anchored at a
    line's start (`^` in MULTILINE mode) is tried at every character of a text; tried only at
    these starts it costs a third (and each line is read once: a long line holding the word
    many times is not read back to its start for each)."""
    at = text.find(word)
    while at >= 0:
        yield text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            return
        at = text.find(word, end + 1)


def matches_at_lines(text: str, word: str, pattern: "re.Pattern"):
    """`pattern.finditer(text)` for a pattern that starts with `^` (MULTILINE) and can only
    match a line holding `word`: tried at those lines' starts, none inside an earlier match."""
    after = 0
    for start in line_starts(text, word):
        if start >= after:
            match = pattern.match(text, start)
            if match is not None:
                yield match
                after = match.end()


def import_words(text: str) -> set[str]:
    """The words of the text's import lines."""
    words: set[str] = set()
    for match in matches_at_lines(text, "import", IMPORT_LINE):
        for group in match.groups():
            if group:
                words.update(_WORD.findall(group))
        words.update(_WORD.findall(continued_names(text, match)))
    return words


def star_words(text: str) -> set[str]:
    """The words of the modules the text imports everything from (`from .trainer import *`):
    a package's __init__.py re-exports whatever a def of those modules is."""
    words: set[str] = set()
    for match in matches_at_lines(text, "*", IMPORT_LINE):
        if match.group(1) and match.group(2).strip() == "*":
            words.update(_WORD.findall(match.group(1)))
    return words


_TRIPLE = re.compile(r"\"\"\"|\'\'\'")


def _in_strings(text: str):
    """A test: does an offset lie inside a triple-quoted string (a docstring's example code
    is no code)?  Quotes are paired in order; escapes and nesting are not read."""
    bounds: list[int] = []
    opened = None
    for match in _TRIPLE.finditer(text):
        if opened is None:
            opened = match.group()
            bounds.append(match.start())
        elif match.group() == opened:
            opened = None
            bounds.append(match.end())
    if opened is not None:
        bounds.append(len(text))

    def inside(offset: int) -> bool:
        return bisect_left(bounds, offset + 1) % 2 == 1

    return inside


_HEAD_WORDS = ("def", "class", "for", "while")


def _head_matches(text: str) -> list:
    """`_HEAD.finditer(text)`, tried only at the lines holding one of its words."""
    starts = set()
    for word in _HEAD_WORDS:
        starts.update(line_starts(text, word))
    return [m for m in map(_HEAD.match, repeat(text), sorted(starts)) if m is not None]


class _Heads:
    """The def, class and loop heads of a text, to place a line among them."""

    def __init__(self, text: str, inside=None) -> None:
        self.text = text
        self.heads = []
        for m in _head_matches(text):
            if inside is not None and inside(m.start()):
                continue
            kind = m.group(2) or "loop"
            bases = _bases_text(text, m.end()) if kind == "class" else ""
            self.heads.append((m.start(), len(m.group(1)), kind, m.group(3) or "", bases))
        self.offsets = [h[0] for h in self.heads]
        self._ends: list[int] = []
        self._parents: Optional[list[int]] = None  # made on the first question (_nest)

    def around(self, offset: int) -> list[tuple]:
        """(kind, name, owner kind) of each head around the line holding `offset`, innermost first
        (a def whose own head line holds it is not among them: see named_def)."""
        found = self._enclosing(offset)
        return [(h[2], h[3], found[i + 1] if i + 1 < len(found) else _NO_HEAD) for i, h in enumerate(found)]

    def named_def(self, offset: int, names) -> list[tuple]:
        """`around` for the def whose head line names itself at `offset` with one of `names`
        (`def clip_grad_norm_(params, max_norm, clip=True):`): a clip by its name, the def
        first; [] for any other offset."""
        text = self.text
        line_start = text.rfind("\n", 0, offset) + 1
        at = bisect_left(self.offsets, line_start)
        if at == len(self.offsets) or self.offsets[at] != line_start:
            return []
        head = self.heads[at]
        if head[2] != "def" or head[3] not in names or not text.startswith(head[3], offset):
            return []
        found = self._enclosing(offset)
        return [(head[2], head[3], found[0] if found else _NO_HEAD)] + self.around(offset)

    def _enclosing(self, offset: int) -> list[tuple]:
        """The heads whose bodies hold the line of `offset` and that are indented less than it,
        innermost first.  Such heads nest (each strictly indented more than the one around it),
        so they are all on the chain of parents of the last head before the line: the walk costs
        the nesting's depth, not the number of heads before the line (a function of thousands of
        loops asks once per event)."""
        text = self.text
        line_start = text.rfind("\n", 0, offset) + 1
        prefix = text[line_start:offset]
        indent = len(prefix) - len(prefix.lstrip(" \t"))  # a tab is one column, as in _closing
        if self._parents is None:
            self._nest()
        ends, parents = self._ends, self._parents
        found = []
        index = bisect_left(self.offsets, line_start) - 1
        while index >= 0 and indent > 0:
            head = self.heads[index]
            if head[1] < indent and ends[index] > line_start:
                found.append(head)
                indent = head[1]
            index = parents[index]
        return found

    def _nest(self) -> None:
        """Each head's end (where the first line indented no deeper than it closes it; a head is
        open on every line that starts before that end) and its parent (the nearest earlier head
        open on its line, -1 for none).  A head closed before a line is closed for every later
        line, so one stack of open heads finds every parent; each head's end is searched once."""
        text, heads = self.text, self.heads
        ends, parents, open_heads = [], [], []
        for index, head in enumerate(heads):
            closer = _closing(head[1]).search(text, head[0])
            ends.append(closer.end() if closer is not None else len(text) + 1)
            while open_heads and not (heads[open_heads[-1]][1] < head[1] and ends[open_heads[-1]] > head[0]):
                open_heads.pop()
            parents.append(open_heads[-1] if open_heads else -1)
            open_heads.append(index)
        self._ends, self._parents = ends, parents


_NO_HEAD = (None, None, None, None, "")


_MAX_BASES = 300  # characters of a class's bases read (a longer list is not protocol-free anyway)


def _bases_text(text: str, end: int) -> str:
    """What a class head's parentheses hold (`nn.Module` of `class Net(nn.Module):`)."""
    i = end
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "(":
        return ""
    close = text.find(")", i, i + _MAX_BASES)
    return text[i + 1 : close] if close != -1 else "?"


def _protocol_free(bases: str) -> bool:
    """As written (the index decides again through the module's imports): does the class build
    on nothing whose API has a `step()` or `backward()`?"""
    for base in bases.split(","):
        base = base.strip()
        if not base or "=" in base:  # `metaclass=...`
            continue
        if base.rsplit(".", 1)[-1] not in _FREE_LAST_NAMES:
            return False
    return True


_FREE_LAST_NAMES = frozenset(name.rsplit(".", 1)[-1] for name in PROTOCOL_FREE_BASES)


_CLOSERS: dict = {}


def _closing(width: int) -> "re.Pattern":
    """A code line indented at most `width` columns, a tab counting one, as the heads and lines
    are measured (a file Python accepts compares its indents the same with tabs of 1 or 8
    columns: it raises TabError otherwise; measured with tabs expanded to 8, a tab-indented
    method's own body lines would read as closing it)."""
    if width not in _CLOSERS:
        _CLOSERS[width] = re.compile(r"\n[ \t]{0,%d}[^\s#)\]}]" % width)
    return _CLOSERS[width]


def _defs(kinds: list[tuple], held: Optional[dict] = None) -> tuple[set, dict]:
    """(functions, methods with their classes) among the heads around a line; `held` collects
    the `step`/`backward` methods left out for their class's bases (Scan.held)."""
    functions, methods = set(), {}
    for kind, name, owner in kinds:
        if kind == "def":
            if owner[2] == "class":
                if name in OWN_PROTOCOL_METHODS and not _protocol_free(owner[4]):
                    # a library optimizer's or scheduler's step(): the API's event, no helper
                    # (unless its bases turn out to be the project's own: the build asks)
                    if held is not None:
                        held.setdefault(name, set()).add((owner[3], _last_names(owner[4])))
                    continue
                methods.setdefault(name, set()).add(owner[3])
            else:
                functions.add(name)
    return functions, methods


def _last_names(bases: str) -> tuple:
    return tuple(b.strip().rsplit(".", 1)[-1] for b in bases.split(",") if b.strip() and "=" not in b)


def merge(into: dict, methods: dict) -> None:
    for name, classes in methods.items():
        into.setdefault(name, set()).update(classes)


def _receiver(text: str, start: int):
    """For a call whose name starts at `start`: None when it is called bare (`f(`), else the
    word before the dot (`trainer` of `self.trainer.step(`; "" when it is no plain word)."""
    i = start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] != ".":
        return None
    return _word_before(text, i)


def _word_before(text: str, end: int) -> str:
    """The word that ends right before `end` (spaces skipped), read backwards: "" if none."""
    i = end - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    stop = i
    while i >= 0 and (text[i].isalnum() or text[i] == "_") and stop - i < 80:
        i -= 1
    return text[i + 1 : stop + 1]


def _spellings(text: str) -> list[int]:
    return sorted(_spelling_starts(text))


# Words several spellings contain (a spelling holding neither is its own word): the text is
# searched once per word and each spelling is tried only where its word occurs
# (`clip_grad_norm_` at each `grad`, 10 characters before it).  Searching the whole text once
# per spelling (12 names, then a pattern per name present) took three times as long on a 45 MB tree.
_GATES = (BACKWARD, GRAD)


def _gated() -> dict:
    """word -> ((literal, where the word starts in it, pattern), ...) of every spelling."""
    out: dict = {}
    for literal, pattern in _SPELLINGS:
        word = next((gate for gate in _GATES if gate in literal), literal)
        out.setdefault(word, []).append((literal, literal.index(word), pattern))
    return {word: tuple(spellings) for word, spellings in out.items()}


_GATED = _gated()


def _spelling_starts(text: str):
    """Where each gradient spelling of the text starts (a step only of a stepper: _counts),
    gate by gate: not in order, each once."""
    for gate, spellings in _GATED.items():
        at = text.find(gate)
        while at >= 0:
            for literal, offset, pattern in spellings:
                start = at - offset
                if start >= 0 and text.startswith(literal, start) and _called_name(text, start, literal):
                    match = pattern.match(text, start)
                    if match is not None and _counts(text, match):
                        yield start
            at = text.find(gate, at + 1)


def _called_name(text: str, start: int, literal: str) -> bool:
    """Is the name at `start` the whole name of a call?  Not the tail of a longer one
    (`ctx.save_for_backward(x)` calls no backward), nor the name a `def` line gives (an autograd
    Function's `def backward(ctx, grad):` runs nothing), except a clip's: a def named as a clip
    is one where it is called (named_def).  `.grad`, `.step`: an attribute, always whole."""
    if literal.startswith("."):
        return True
    if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return False
    return literal in _CLIP_NAMES or _word_before(text, start) != "def"


def builds_optimizer(text: str) -> bool:
    return "optim." in text and next(optimizers_built(text), None) is not None


def scan(text: str, wrappers=None) -> Scan:
    found = Scan(import_words(text))
    if builds_optimizer(text):
        inside, heads = _layout(text)
        for match in optimizers_built(text):
            if not inside(match.start()):
                cls = _class_around(heads, match.start())
                if cls:
                    found.builders.add(cls)
    spellings = _spellings(text)
    inside = _layout(text)[0] if spellings else None
    spellings = [offset for offset in spellings if not inside(offset)]
    if wrappers is not None:  # a configured wrapper's name is a spelling too
        for name in wrappers.all_names():
            word = name.rsplit(".", 1)[-1]
            spellings += [m.start() for m in re.finditer(re.escape(word) + r"[ \t]*\(", text)]
    if not spellings:
        return found
    inside, heads = _layout(text)
    for offset in spellings:
        functions, methods = _defs(heads.named_def(offset, _CLIP_NAMES) or heads.around(offset), found.held)
        found.functions |= functions
        merge(found.methods, methods)
    _local_wrappers(text, heads, inside, found)
    return found


# How many times a def of the file wrapping another of its defs is followed (`train` calling
# `_train_or_test` calling ...): each round is one pass over the file's calls of those names.
_LOCAL_ROUNDS = 4


def _local_wrappers(text: str, heads: "_Heads", inside, found: Scan) -> None:
    """A def that calls one of the file's own defs holding a spelling (bare, or on `self`) may
    be what another module calls: `tnt.train(...)` whose `train` only hands its arguments to
    `_train_or_test`, which holds the loop.  Such defs join the scan's, as a wrapper in another
    file joins them in the index's rounds (calls_of), only within the file."""
    for _ in range(_LOCAL_ROUNDS):
        own_functions, own_methods = set(found.functions), set(found.methods)

        def local(name: str, receiver) -> bool:
            return (receiver is None and name in own_functions) or (receiver == "self" and name in own_methods)

        _, functions, methods = _placed(text, heads, inside, own_functions | own_methods, local)
        size = (len(found.functions), sum(map(len, found.methods.values())))
        found.functions |= functions
        merge(found.methods, methods)
        if (len(found.functions), sum(map(len, found.methods.values()))) == size:
            return


def calls_of(text: str, functions: set, methods: dict, imports: set, through=None) -> tuple[bool, set, dict]:
    """Where the file calls one of `functions` (bare, or through a module it imports) or of
    `methods` (after a dot, when the file imports one of the method's classes: `unet.train()`
    is not a call of a trainer's `train` in a file that never imports the trainer): (one of
    them inside a `for` or `while` block, the functions and the methods of the file around
    them).  Only a loop can make a call a training step; a def around a call wraps it, and a
    loop elsewhere may call that def.  `through(name, receiver)`: can that module receiver
    reach the function (None: any module the file imports can)."""
    inside, heads = _layout(text)

    def imported(name: str, receiver) -> bool:
        """A call of another module's function or method: imported by name, through a module
        alias, or a method of an imported class."""
        if receiver is None:
            return name in functions and name in imports
        if name in methods and not imports.isdisjoint(methods[name]):
            return True
        return name in functions and receiver in imports and (through is None or through(name, receiver))

    in_loop, wrapping_functions, wrapping_methods = _placed(text, heads, inside, functions | set(methods), imported)
    # a def of this file around such a call, called in one of its own loops (bare, or on self)
    if not in_loop and (wrapping_functions or wrapping_methods):
        def local(name: str, receiver) -> bool:
            return (receiver is None and name in wrapping_functions) or (receiver == "self" and name in wrapping_methods)

        in_loop = _placed(text, heads, inside, wrapping_functions | set(wrapping_methods), local)[0]
    return in_loop, wrapping_functions, wrapping_methods


def _placed(text: str, heads: "_Heads", inside, names, accept) -> tuple[bool, set, dict]:
    in_loop = False
    functions, methods = set(), {}
    for match in _calls_of_names(text, names):
        if inside(match.start()) or not accept(match.group(1), _receiver(text, match.start())):
            continue
        kinds = heads.around(match.start())
        in_loop = in_loop or any(kind == "loop" or (kind == "def" and name in PER_BATCH_METHODS) for kind, name, _ in kinds)
        f, m = _defs(kinds)
        functions |= f
        merge(methods, m)
    return in_loop, functions, methods


class _Call:
    """A call's name and where it starts (what calls_of reads of a match)."""

    __slots__ = ("name", "begin")

    def __init__(self, name: str, begin: int) -> None:
        self.name, self.begin = name, begin

    def group(self, _index: int) -> str:
        return self.name

    def start(self) -> int:
        return self.begin


# A call read backwards: `(`, spaces or tabs, then the name reversed.  On the reversed text
# the pattern starts with its literal, which the engine searches for first; a pattern tried
# at every word of the text (`(?<!\w)(\w+)[ \t]*\(`) took ten times as long on a 45 MB
# tree (the calls of diffusers: 1.5 s against 0.15 s).  Linear: the only retry is over the
# spaces after one `(`, and the next match starts past them.
_CALL_REVERSED = re.compile(r"\([ \t]*(\w+)")


def _call_sites(text: str) -> list:
    """(name, offset) of each `name(` of the text (spaces and tabs allowed before the
    parenthesis), in order."""
    size = len(text)
    found = [(m.group(1)[::-1], size - m.end(1)) for m in _CALL_REVERSED.finditer(text[::-1])]
    found.reverse()
    return found


def _call_names(text: str) -> frozenset:
    return frozenset(name[::-1] for name in _CALL_REVERSED.findall(text[::-1]))


# The calls of the texts being scanned, by name: one pass per text, whatever the names asked
# about in each round (str caches its hash, so the text itself is the key).  Cleared by forget().
_CALLS: dict = {}
# Its triple-quoted strings and its def, class and loop heads, for each text placed in a
# round (calls_of runs once per round on a caller). Cleared by forget().
_LAYOUTS: dict = {}
_NAMES: dict = {}  # text -> the names it calls (called_names)


def forget() -> None:
    _CALLS.clear()
    _LAYOUTS.clear()
    _NAMES.clear()
    _MEMBERS.clear()
    _STORES.clear()


def _layout(text: str) -> tuple:
    found = _LAYOUTS.get(text)
    if found is None:
        inside = _in_strings(text)
        found = _LAYOUTS[text] = (inside, _Heads(text, inside))
    return found


def called_names(text: str):
    """The names the text calls (`name(`), each once: what calls_of can find in it.  Without
    their places (most texts are only asked this): a set, not the lists _calls keeps."""
    names = _NAMES.get(text)
    if names is None:
        calls = _CALLS.get(text)
        names = _NAMES[text] = frozenset(calls) if calls is not None else _call_names(text)
    return names


def _calls(text: str) -> dict:
    calls = _CALLS.get(text)
    if calls is None:
        calls = _CALLS[text] = {}
        for name, at in _call_sites(text):
            calls.setdefault(name, []).append(at)
    return calls


def _calls_of_names(text: str, names) -> list:
    """Calls of these names in the text, in order."""
    calls = _calls(text)
    found = [_Call(name, at) for name in names if name in calls for at in calls[name]]
    found.sort(key=lambda call: call.begin)
    return found


# `self.pair = pair`: an attribute stored from a bare name (a constructor's parameter, maybe),
# and `self.pair.step(`: a call on an attribute.  Each starts with its literal, so a search
# skips from one `self.` of the text to the next.
# (an annotation runs to the `=` without a `:`: `self.a: int = a`; allowing `:` in it let each
# `self.x:` of a long line rescan the rest of the line, quadratic in the line's length)
_STORE = re.compile(r"self\.(\w+)[ \t]*(?::[^=:\n]*)?=[ \t]*(\w+)[ \t]*(?:#[^\n]*)?$", re.M)
_MEMBER_CALL = re.compile(r"self\.(\w+)[ \t]*\.[ \t]*(\w+)[ \t]*\(")
_CONSTANTS = frozenset({"None", "True", "False"})
# text -> its calls on attributes, [(attr, name, offset)]; and -> {attr: offsets of its
# stores from a bare name}, only read for a text that calls one of the names asked.
# Cleared by forget().
_MEMBERS: dict = {}
_STORES: dict = {}


def _member_calls(text: str) -> list:
    found = _MEMBERS.get(text)
    if found is None:
        found = _MEMBERS[text] = [(m.group(1), m.group(2), m.start(2)) for m in _MEMBER_CALL.finditer(text)] if "self." in text else []
    return found


def _stores(text: str) -> dict:
    found = _STORES.get(text)
    if found is None:
        found = _STORES[text] = {}
        for match in _STORE.finditer(text):
            if match.group(2) not in _CONSTANTS and not match.group(2)[0].isdigit():
                found.setdefault(match.group(1), []).append(match.start())
    return found


def member_calls(text: str, names) -> dict:
    """Calls `self.attr.name(...)` of these names, in a method of a class whose `__init__`
    stores the attribute from a bare name (`self.attr = attr`): class -> the attributes.
    (What they are, the construction sites of the class say: construction.py.)"""
    calls = [(attr, at) for attr, name, at in _member_calls(text) if name in names]
    stores = _stores(text) if calls else {}
    calls = [(attr, at) for attr, at in calls if attr in stores]
    if not calls:
        return {}
    inside, heads = _layout(text)
    out: dict = {}
    for attr, at in calls:
        if inside(at):
            continue
        owner = _class_around(heads, at)
        if owner is not None and attr not in out.get(owner, ()) and any(
            _class_around(heads, store, "__init__") == owner for store in stores[attr]
        ):
            out.setdefault(owner, set()).add(attr)
    return out


def _class_around(heads: "_Heads", offset: int, method: str = "") -> str:
    """The class whose method (named `method`, if given) holds the offset, or None."""
    for kind, name, owner in heads.around(offset):
        if kind == "def":
            if owner[2] == "class" and (not method or name == method):
                return owner[3]
            return None
    return None


def has_spelling(text: str, wrappers=None) -> bool:
    """Does the text hold a gradient spelling (the scan's, configured wrappers included)?"""
    if next(_spelling_starts(text), None) is not None:
        return True
    return wrappers is not None and any(
        re.search(re.escape(n.rsplit(".", 1)[-1]) + r"[ \t]*\(", text) for n in wrappers.all_names() if n
    )


def _counts(text: str, match: "re.Match") -> bool:
    if not match.group().startswith("." + STEP):
        return True
    if text[match.end() : match.end() + 8].lstrip(" \t").startswith(")"):
        return True  # `x.step()`
    return _STEPPER.search(_word_before(text, match.start())) is not None
