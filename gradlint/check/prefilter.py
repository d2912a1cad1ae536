"""A text test that decides, before any parse, whether a file can matter.

Every finding comes from a loop (or a Lightning ``training_step``) whose
events include a backward (B) or a step (S); see gradlint/model/loops.py
(``_finish``) and rules.md.  Those events can only be written with one of
a few spellings, so a file in which none of them occurs cannot hold a
finding and is never parsed:

* ``backward`` followed by ``(`` (``loss.backward()``,
  ``self.manual_backward(loss)``, ``torch.autograd.backward(t)``), by
  ``as`` (``from torch.autograd import backward as bw``), or by ``,``,
  ``)`` or ``=`` (``torch.autograd.backward`` handed to a helper that calls
  its parameter: loops.py substitutes the argument's name); a
  ``backward`` in prose (``the backward pass``) is not a call;
* a call of ``step``: ``opt.step(``, ``xm.optimizer_step(``,
  ``def training_step(`` (Lightning);
* a write to ``.grad``: ``p.grad = g``, ``p.grad += g`` (a B event that
  overwrites), also ``(p.grad) = ...`` and ``p.grad.data = ...``; a bare
  ``grad = ...`` is a local variable, not an event;
* a ``def backward(`` or ``def step(`` defines a name and runs nothing (its
  body holds the events, if any), so it does not count; ``def
  training_step(`` does;
* a call of a framework's engine factory whose process function the
  framework documents (``create_supervised_trainer(``, api_names.py's
  DOCUMENTED_RUNNERS): that process clears, backpropagates and steps, and
  a handler registered on the engine (a clip after its step) is read
  against it (model/engines.py);
* the last name of any configured wrapper (``[tool.gradlint]``
  ``backward-functions``, ``step-functions``, ...): a call matches an
  entry by its dotted text or its last name, so that name is in the text.

Soundness comes first (tests/test_prefilter.py runs every fixture and rule
sample through it); the same spellings mark the lines that
gradlint/check/screen.py looks at.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gradlint.core.api_names import (
    BACKWARD,
    BACKWARD_NAMES,
    DATA,
    DOCUMENTED_RUNNERS,
    GRAD,
    STEP,
    STEP_NAMES,
    TRAINING_STEP,
)

TYPE_CHECKING = False  # gradlint/check/quick.py imports this module first: no typing, no settings
if TYPE_CHECKING:
    from typing import Optional

    from gradlint.options.settings import Wrappers

# Between a name and what follows it Python allows spaces, newlines inside
# brackets, backslash continuations and comments.  They are skipped by a scan
# (`_skip_gap`), not by a repeated regular-expression group: a group such as
# `(?:\s|\\|#[^\n]*)*` can split a comment banner (`# ####...`) in exponentially
# many ways and never finish on a file that does not match.
_BLANKS = re.compile(r"[\s\\]*")  # one character class: linear


def _skip_gap(text: str, i: int) -> int:
    """The index of the first character at or after `i` that is not a blank, a
    backslash or part of a comment (a comment runs to the end of its line)."""
    while True:
        i = _BLANKS.match(text, i).end()
        if not text.startswith("#", i):
            return i
        end = text.find("\n", i)
        if end < 0:
            return len(text)
        i = end


def _backward_use(text: str, i: int) -> bool:
    """`backward` is called, imported `as`, handed on (`,`, `)`) or assigned (`=`)."""
    i = _skip_gap(text, i)
    return text[i : i + 1] in ("(", ",", ")", "=") or _AS.match(text, i) is not None


def _step_call(text: str, i: int) -> bool:
    return text.startswith("(", _skip_gap(text, i))


def _grad_write(text: str, i: int) -> bool:
    """`x.grad = ...`, `x.grad += ...`, `(x.grad) = ...`, `x.grad.data = ...`; not `==`."""
    while True:
        i = _skip_gap(text, i)
        if text.startswith(")", i):
            i += 1
            continue
        data = _DOT_DATA.match(text, i)
        if data is None:
            break
        i = data.end()
    operator = _AUGMENTED.match(text, i)
    if operator is not None:
        i = operator.end()
    return text.startswith("=", i) and not text.startswith("==", i)


_AS = re.compile(r"as\b")
_DOT_DATA = re.compile(r"\.\s*%s\b" % DATA)
_AUGMENTED = re.compile(r"//|\*\*|<<|>>|[-+*/%@&|^]")

# The names api_names.py gives B and S events (`backward`, `manual_backward`; `step`,
# `optimizer_step`, Lightning's `training_step`): each is found by its base word
# (a fast literal search), then what follows it is read by the scan above; the
# longer names ending with the word are checked after.
_WORD = {word: re.compile(word + r"\b") for word in (BACKWARD, STEP, GRAD)}


def _prefixes(names, word: str) -> tuple:
    """`("manual_",)` for the names {"backward", "manual_backward"} and the word "backward"."""
    return tuple(sorted(name[: -len(word)] for name in names if name.endswith(word) and name != word))


# `create_supervised_trainer(`: an engine whose process function holds B and S events.
_RUNNER_CALLS = tuple((name, re.compile(re.escape(name) + r"\s*\(")) for name in sorted(DOCUMENTED_RUNNERS))

_SPELLINGS = (
    (BACKWARD, _backward_use, _prefixes(BACKWARD_NAMES, BACKWARD)),
    (STEP, _step_call, _prefixes(STEP_NAMES, STEP)),
    (GRAD, _grad_write, ()),
)


def _name_start(text: str, start: int, prefixes: tuple[str, ...]) -> int:
    """Where the name that text[start:] is the end of starts (one of `prefixes` + it), or -1."""
    for prefix in prefixes:
        if text.startswith(prefix, start - len(prefix)) and start >= len(prefix):
            start -= len(prefix)
            break
    return start if start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_") else -1


def _is_definition(text: str, name_start: int) -> bool:
    """`def step(`: the name is being defined on this line (a definition runs nothing).
    Reads backwards from the name only, never from the line's start: a long line
    with many calls must not be read once per call."""
    i = name_start
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    if i == name_start or not text.startswith("def", i - 3) or i < 3:
        return False
    return i == 3 or not (text[i - 4].isalnum() or text[i - 4] == "_")


def _after_dot(text: str, start: int) -> bool:
    """Is the name at `start` an attribute (`p.grad`, `p . grad`, `p.\\<newline>grad`)?
    Also True where that cannot be told cheaply (a comment between them, old Mac line ends)."""
    i = start - 1
    while i >= 0 and text[i] in " \t\\":
        i -= 1
    if i < 0 or text[i] == ".":
        return i >= 0
    if text[i] != "\n":
        return text[i] == "\r"
    # The name opens its line: an attribute only if the line before ends with the dot
    # (inside brackets, blank lines may come between); a comment there hides that end: count it.
    previous = ""
    while not previous and i > 0:
        line_start = text.rfind("\n", 0, i) + 1
        previous, i = text[line_start:i].strip(), line_start - 1
    return "#" in previous or previous.endswith((".", "\\"))


def _counts(text: str, literal: str, name_start: int) -> bool:
    if literal == GRAD:
        return _after_dot(text, name_start)
    return text.startswith(TRAINING_STEP, name_start) or not _is_definition(text, name_start)


class Prefilter:
    """The cheap test for one set of configured wrappers."""

    def __init__(self, wrappers: "Optional[Wrappers]" = None, project_words: tuple = ()):
        """`project_words`: names through which the file calls a function of another module
        that touches gradients (gradlint/project): found like a configured wrapper's name."""
        names = (wrappers.all_names() if wrappers is not None else ()) + tuple(project_words)
        self.wrapper_words = tuple(sorted({name.rsplit(".", 1)[-1] for name in names if name}))

    def _matches(self, text: str):
        """(where, plain step) of each spelling: `plain step` for a call of a method named
        exactly `step` (`x.step(`), which is a gradient event only when x is an optimizer."""
        for literal, follows, prefixes in _SPELLINGS:
            if literal in text:
                for match in _WORD[literal].finditer(text):
                    if not follows(text, match.end()):
                        continue
                    start = _name_start(text, match.start(), prefixes)
                    if start >= 0 and _counts(text, literal, start):
                        yield match.start(), literal == STEP and start == match.start()
        for name, call in _RUNNER_CALLS:
            if name in text:
                for match in call.finditer(text):
                    start = match.start()
                    if _name_start(text, start, ()) >= 0 and not _is_definition(text, start):
                        yield start, False
        for word in self.wrapper_words:
            start = text.find(word)
            while start >= 0:
                yield start, False
                start = text.find(word, start + 1)

    def may_hold_events(self, text: str) -> bool:
        """False only when no gradient event can be written in `text`."""
        return next(self._matches(text), None) is not None

    def event_lines(self, text: str, step_kept=None) -> list[int]:
        """1-based numbers of the lines where such a spelling starts, ascending.  `step_kept`:
        when given, a plain `x.step(` counts only if step_kept(text, where) says so
        (gradlint/check/screen.py: a sampler's step is no optimizer's)."""
        lines: set[int] = set()
        line, last = 1, 0
        for start, plain_step in sorted(self._matches(text)):
            if plain_step and step_kept is not None and not step_kept(text, start):
                continue
            line += text.count("\n", last, start)
            last = start
            lines.add(line)
        return sorted(lines)

    def plain_steps(self, text: str) -> "Optional[list[int]]":
        """Where each spelling of `text` starts when every one is a call of a method named
        `step` (see only_plain_steps), else None."""
        if self.wrapper_words:
            return None
        out = []
        for start, plain in self._matches(text):
            if not plain:
                return None
            out.append(start)
        return out

    def only_plain_steps(self, text: str) -> bool:
        """Is every spelling in `text` a call of a method named `step` (no backward, no
        gradient write, no `training_step`, no configured wrapper)?"""
        return not self.wrapper_words and all(plain for _, plain in self._matches(text))


@lru_cache(maxsize=32)
def for_wrappers(wrappers: "Optional[Wrappers]", project_words: tuple = ()) -> Prefilter:
    return Prefilter(wrappers, project_words)


def may_hold_events(text: str, wrappers: "Optional[Wrappers]" = None) -> bool:
    return for_wrappers(wrappers).may_hold_events(text)
