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
* the last name of any configured wrapper (``[tool.gradlint]``
  ``backward-functions``, ``step-functions``, ...): a call matches an
  entry by its dotted text or its last name, so that name is in the text.

Soundness comes first (tests/test_prefilter.py runs every fixture and rule
sample through it); the same spellings mark the lines that
gradlint/screen.py looks at.
"""

from __future__ import annotations

import re
from functools import lru_cache

from gradlint.model.events import BACKWARD_NAMES, STEP_NAMES, TRAINING_STEP

TYPE_CHECKING = False  # gradlint/quick.py imports this module first: no typing, no settings
if TYPE_CHECKING:
    from typing import Optional

    from gradlint.settings import Wrappers

# Between a name and what follows it Python allows spaces, newlines inside
# brackets, backslash continuations and comments: accept all of them.
_GAP = r"(?:\s|\\|#[^\n]*)*"
# The names events.py gives B and S events (`backward`, `manual_backward`; `step`,
# `optimizer_step`, Lightning's `training_step`): each pattern starts with the base
# word (a fast literal search); the longer names ending with it are checked after.
BACKWARD_USE = r"backward\b" + _GAP + r"(?:[(,)=]|as\b)"
STEP_CALL = r"step\b" + _GAP + r"\("
# `x.grad = ...`, `x.grad += ...`, `(x.grad) = ...`, `x.grad.data = ...`; not `==`.
GRAD_WRITE = r"grad\b(?:\s|\\|\)|#[^\n]*|\.\s*data\b)*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)"


def _prefixes(names, word: str) -> tuple:
    """`("manual_",)` for the names {"backward", "manual_backward"} and the word "backward"."""
    return tuple(sorted(name[: -len(word)] for name in names if name.endswith(word) and name != word))


_SPELLINGS = (
    ("backward", re.compile(BACKWARD_USE), _prefixes(BACKWARD_NAMES, "backward")),
    ("step", re.compile(STEP_CALL), _prefixes(STEP_NAMES, "step")),
    ("grad", re.compile(GRAD_WRITE), ()),
)


def _name_start(text: str, start: int, prefixes: tuple[str, ...]) -> int:
    """Where the name that text[start:] is the end of starts (one of `prefixes` + it), or -1."""
    for prefix in prefixes:
        if text.startswith(prefix, start - len(prefix)) and start >= len(prefix):
            start -= len(prefix)
            break
    return start if start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_") else -1


_DEF_BEFORE = re.compile(r"(?:^|[^\w])def[ \t]+$", re.MULTILINE)


def _is_definition(text: str, name_start: int) -> bool:
    """`def step(`: the name is being defined on this line (a definition runs nothing)."""
    line_start = text.rfind("\n", 0, name_start) + 1
    return _DEF_BEFORE.search(text, line_start, name_start) is not None


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
    if literal == "grad":
        return _after_dot(text, name_start)
    return text.startswith(TRAINING_STEP, name_start) or not _is_definition(text, name_start)


class Prefilter:
    """The cheap test for one set of configured wrappers."""

    def __init__(self, wrappers: "Optional[Wrappers]" = None):
        names = wrappers.all_names() if wrappers is not None else ()
        self.wrapper_words = tuple(sorted({name.rsplit(".", 1)[-1] for name in names if name}))

    def _matches(self, text: str):
        for literal, pattern, prefixes in _SPELLINGS:
            if literal in text:
                for match in pattern.finditer(text):
                    start = _name_start(text, match.start(), prefixes)
                    if start >= 0 and _counts(text, literal, start):
                        yield match.start()
        for word in self.wrapper_words:
            start = text.find(word)
            while start >= 0:
                yield start
                start = text.find(word, start + 1)

    def may_hold_events(self, text: str) -> bool:
        """False only when no gradient event can be written in `text`."""
        return next(self._matches(text), None) is not None

    def event_lines(self, text: str) -> list[int]:
        """1-based numbers of the lines where such a spelling starts, ascending."""
        lines: set[int] = set()
        line, last = 1, 0
        for start in sorted(self._matches(text)):
            line += text.count("\n", last, start)
            last = start
            lines.add(line)
        return sorted(lines)


@lru_cache(maxsize=32)
def for_wrappers(wrappers: "Optional[Wrappers]") -> Prefilter:
    return Prefilter(wrappers)


def may_hold_events(text: str, wrappers: "Optional[Wrappers]" = None) -> bool:
    return for_wrappers(wrappers).may_hold_events(text)
