"""What a name assigned objects of several kinds is.

Bindings are flow-insensitive: every assignment of `self.scaler` in the file counts, so an
attribute set to `None` in `__init__` and to a `GradScaler` in `setup()`, or built by one
subclass and replaced by another, has several values.  A value whose kind is unknown says
nothing; among the known ones, one kind that matters to the rules (an optimizer, a
scheduler, a scaler, an engine) decides, when the others are only things the checker cannot
read (a module, or a class of a library).  Two kinds that matter contradict each other: unknown.
"""

from __future__ import annotations

from typing import Optional

# kinds that decide what an event on the name is (bindings.py's names for them)
DECIDING = frozenset({"optimizer", "scheduler", "scaler", "engine"})
# kinds that say nothing against one of those: a class of a library or of the file
NEUTRAL = frozenset({"module", "custom"})


def several_kinds(kinds: set) -> Optional[str]:
    """The kind of a name whose assignments have these (more than one) known kinds."""
    deciding = kinds & DECIDING
    if len(deciding) != 1 or not kinds - deciding <= NEUTRAL:
        return None
    kind = next(iter(deciding))
    # a scheduler of a class the checker cannot read may set the LR for the coming step: not an L
    if kind == "scheduler" and "custom" in kinds:
        return None
    return kind
