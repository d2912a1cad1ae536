"""libcst's `parse_module` without its per-node validation.

Every libcst node runs `_validate()` when it is built (`CSTNode.__post_init__`: are its
parentheses paired, is there whitespace after a keyword...).  That guards trees built by
hand, such as a fix's; a tree the parser builds from text that CPython's parser accepted
(every text gradlint hands to libcst) passes it by construction, and on training scripts
the checks are about a tenth of libcst's parse.  While a thread parses here, its nodes skip
them; nodes built anywhere else, by any thread, are validated as before.
"""

from __future__ import annotations

from _thread import get_ident
from threading import active_count

_parsing: set[int] = set()  # the threads inside parse_module now
_installed = False
_node_class = None  # libcst's CSTNode, once installed


def _post_init(self) -> None:
    if _parsing and get_ident() in _parsing:
        return
    self._validate()


def _unchecked(self) -> None:
    """__post_init__ while the process's only thread parses: nothing to ask per node."""


def _install() -> None:
    global _installed, _node_class
    from libcst._nodes.base import CSTNode

    # Only the base class defines __post_init__ (libcst 1.x); a version where a node type
    # defines its own keeps validating those nodes, which is merely slower.
    CSTNode.__post_init__ = _post_init
    _node_class = CSTNode
    _installed = True


def parse_module(text: str):
    """`libcst.parse_module(text)`: the same tree, the same errors (ParserSyntaxError)."""
    import libcst

    if not _installed:
        _install()
    me = get_ident()
    if me in _parsing:
        return libcst.parse_module(text)
    # The process's only thread (the command line, a worker): no node can be built elsewhere
    # while it parses, so the hook itself is a no-op for the parse, not a test of the thread
    # per node (half a million nodes on a big training script).  With other threads (the
    # language server), each node asks which thread builds it.
    alone = active_count() == 1
    _parsing.add(me)
    if alone:
        _node_class.__post_init__ = _unchecked
    try:
        return libcst.parse_module(text)
    finally:
        if alone:
            _node_class.__post_init__ = _post_init
        _parsing.discard(me)
