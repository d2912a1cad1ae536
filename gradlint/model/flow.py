"""Paths through one iteration of a loop, and walks across its back edge.

A path is the sequence of events one iteration can run, with the sides it
took at each branch.  Branches with equal conditions take equal sides in
one iteration; branches on conditions the loop never changes (`if
use_amp:`) take equal sides in every iteration.  A walk is two iterations
in a row, which is enough to see every rule's bug: what one iteration
leaves in `.grad` and what the next does with it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Optional

from gradlint.model.event import Event
from gradlint.core.events import S
from gradlint.model.last_iteration import LAST
from gradlint.model.loops import Branch, Helper, Jump, LoopModel, Nested, Rebind, steps_in

MAX_PATHS = 64  # beyond this (or PATHS_PER_NODE per node) a loop is too tangled to judge: say nothing
# A big loop may have more paths: an HF-style Trainer loop (backward, clip and step each under
# amp / apex / deepspeed / TPU settings and two accumulation tests) has 133 through 47 nodes,
# and saying nothing there missed every bug in it.  Linear in the loop's size, like the bounds below.
PATHS_PER_NODE = 4
# Work per loop is bounded by its size (the nodes of its model): a path enumeration may take
# STEPS_PER_NODE steps per node, and the walks may hold WALK_EVENTS_PER_NODE events per node
# (the rules read every event of every walk).  Inner loops run once or twice, so each level of
# nesting can double the paths and their length: without a bound, seven nested loops around
# one backward took minutes.  Both bounds leave room for 64 paths through two nested levels
# (64 x 2 x 2 x 2 steps per node, 64 x 64 walks of 2 x 4 times the nodes): no loop of the
# benchmark repositories or of the real-code study comes near them (benchmarks/nesting.py).
STEPS_PER_NODE = 2048
WALK_EVENTS_PER_NODE = 64 * 64 * 2 * 4
NORMAL, CONTINUE, BREAK, RETURN = "normal", "continue", "break", "return"
# A `raise`: it leaves every loop and helper.  A path that raises where a sibling path goes on
# is an error path (`raise ValueError(f"unknown {args.strategy}")` among a setting's sides): no
# rule judges it, and keeping one per setting test multiplied a loop's paths past MAX_PATHS.
RAISE = "raise"
# A side that runs on the loop's last iteration only (last_iteration.py) goes on to the end of
# its iteration, and no iteration follows it: a decision under this key says so.
_LAST_KEY = ("last iteration",)
_ENDS = frozenset({(_LAST_KEY, True, False)})


class TooComplex(Exception):
    pass


class _Sequence:
    """The events of a path so far, shared with every path that extends it: appending is one
    step, and equal sequences are one object (`_Enumeration.append` keeps one per value), so a
    state hashes and compares in constant time instead of by its whole history."""

    __slots__ = ("before", "event", "length")

    def __init__(self, before: "Optional[_Sequence]", event: Optional[Event], length: int):
        self.before, self.event, self.length = before, event, length

    def events(self) -> tuple[Event, ...]:
        out = []
        node = self
        while node.event is not None:
            out.append(node.event)
            node = node.before
        return tuple(reversed(out))


class _Enumeration:
    """The shared sequences and the step budget of one loop's path enumeration."""

    def __init__(self, size: int, read_again: frozenset = frozenset()):
        self.empty = _Sequence(None, None, 0)
        # the condition keys that more than one branch reads (_read_again): a decision on a
        # varying key that nothing reads again only splits equal paths, and the splits multiply
        self.read_again = read_again
        self.steps_left = STEPS_PER_NODE * max(size, 1)
        self.max_paths = max(MAX_PATHS, PATHS_PER_NODE * size)
        self._codes: dict = {}  # an Event (by value: equal events are one code) -> its code
        self._by_id: dict[int, tuple[Event, int]] = {}  # the same, by identity (held: ids stay unique)
        self._sequences: dict[tuple[int, int], _Sequence] = {}  # (id of the sequence before, code)

    def append(self, sequence: _Sequence, event: Event) -> _Sequence:
        known = self._by_id.get(id(event))
        if known is None:
            code = self._codes.setdefault(event, len(self._codes))
            self._by_id[id(event)] = (event, code)
        else:
            code = known[1]
        key = (id(sequence), code)
        found = self._sequences.get(key)
        if found is None:
            found = self._sequences[key] = _Sequence(sequence, event, sequence.length + 1)
        return found

    def spend(self) -> None:
        self.steps_left -= 1
        if self.steps_left < 0:
            raise TooComplex


@dataclass(frozen=True)
class _State:
    events: _Sequence
    decisions: frozenset  # of (key, side, invariant)
    status: str = NORMAL
    # optimizers whose step this iteration skipped on an accumulation condition
    deferred: frozenset = frozenset()

    def decided(self, key: str) -> Optional[bool]:
        for k, side, _ in self.decisions:
            if k == key:
                return side
        return None


@dataclass(frozen=True)
class Path:
    events: tuple[Event, ...]
    invariants: frozenset  # (key, side) of loop-invariant conditions
    exits: bool  # ended by break/return/raise: no next iteration
    deferred: frozenset  # optimizers whose step it skipped on purpose (gradient accumulation)


@dataclass(frozen=True)
class Walk:
    """Two iterations in a row: `events[i]` ran in iteration `iteration[i]`."""

    events: tuple[Event, ...]
    iteration: tuple[int, ...]
    paths: tuple[Path, ...]

    def first_iteration(self):
        """Indexes of the events of the first iteration (the ones whose future is visible)."""
        return [i for i, it in enumerate(self.iteration) if it == 0]


def _run(run: _Enumeration, nodes, states: list[_State]) -> list[_State]:
    for node in nodes:
        active = [s for s in states if s.status == NORMAL]
        if not active:
            break
        finished = [s for s in states if s.status != NORMAL]
        produced: list[_State] = []
        for state in active:
            produced.extend(_step(run, node, state))
        states = finished + list(dict.fromkeys(produced))
        if len(states) > run.max_paths:
            raise TooComplex
    return states


def _step(run: _Enumeration, node, state: _State) -> list[_State]:
    run.spend()
    if isinstance(node, Event):
        # a step consumes what an earlier accumulation branch left pending for its optimizer
        deferred = state.deferred - {node.optimizer} if node.kind == S else state.deferred
        return [_State(run.append(state.events, node), state.decisions, state.status, deferred)]
    if isinstance(node, Jump):
        if node.kind == LAST:
            return [_State(state.events, state.decisions | _ENDS, state.status, state.deferred)]
        return [_State(state.events, state.decisions, node.kind, state.deferred)]
    if isinstance(node, Helper):
        out = _run(run, node.body, [state])
        return [_State(s.events, s.decisions, NORMAL if s.status == RETURN else s.status, s.deferred) for s in out]
    if isinstance(node, Branch):
        return _branch(run, node, state)
    if isinstance(node, Rebind):
        # a later test of these conditions may go the other way
        kept = frozenset(d for d in state.decisions if d[0] not in node.keys)
        return [_State(state.events, kept, state.status, state.deferred)]
    if isinstance(node, Nested):
        return _nested(run, node, state)
    raise TypeError(node)


def _branch(run: _Enumeration, node: Branch, state: _State) -> list[_State]:
    out: list[_State] = []
    for side in (True, False):
        implied = node.then_implies if side else node.else_implies
        if not _possible(node, side, state):
            continue
        decisions = state.decisions | frozenset(
            d for d in ((node.key, side, node.invariant), *implied) if d[2] or d[0] in run.read_again
        )
        if node.formula:
            # kept for the rest of the iteration: a later decision may contradict this side
            decisions = decisions | {(_CONSTRAINT, (node.formula, side), False)}
        decisions = _constrained(decisions, run)
        if decisions is None:
            continue  # the and/or tests this path took say this side cannot be taken
        body = node.then if side else node.orelse
        other = node.orelse if side else node.then
        deferred = state.deferred
        if node.accumulation:
            deferred = deferred | (steps_in(other) - steps_in(body))
        out.extend(_run(run, body, [_State(state.events, decisions, NORMAL, deferred)]))
    going_on = [s for s in out if s.status != RAISE]
    return going_on if going_on else out


_CONSTRAINT = ("and/or test taken",)  # the key of a decision entry holding (formula, side)


def _constrained(decisions: frozenset, run) -> Optional[frozenset]:
    """The decisions with what the and/or tests the path took say of them, until nothing more
    follows; None on a contradiction."""
    constraints = [d[1] for d in decisions if d[0] == _CONSTRAINT]
    for _ in range(len(constraints) + 1):
        before = decisions
        for formula, side in constraints:
            decisions = _propagate(formula, side, decisions, run)
            if decisions is None:
                return None
        if decisions == before:
            break
    return decisions


def _propagate(formula: tuple, side: bool, decisions: frozenset, run) -> Optional[frozenset]:
    """The decisions of a path after it took a side of an and/or test, with what follows from
    the parts already decided: the `else` of `a and (b or c)` with `a` true has b and c false
    (so a later `if b:` takes its `else`).  None when the parts contradict the side."""
    known = {k: taken for k, taken, _ in decisions if k != _CONSTRAINT}
    if known.get(formula[1], side) != side:
        return None
    known[formula[1]] = side
    added: list = []

    def decide(key: str, value: bool, invariant: bool) -> bool:
        if key in known:
            return known[key] == value
        known[key] = value  # for the rest of this propagation; kept on the path only when read again
        if invariant or key in run.read_again:
            added.append((key, value, invariant))
        return True

    changed = True
    while changed:
        changed = False
        for kind, key, invariant, children in _compounds(formula):
            value = known.get(key)
            states = [None if child[1] not in known else known[child[1]] == polarity for child, polarity in children]
            # `and` true / `or` false: every operand is that; `and` false / `or` true with all
            # operands but one the other way: that one is it
            holds = kind == "and"
            before = len(known)
            if value is not None:
                if value == holds:
                    targets = [(c, p, holds) for (c, p), st in zip(children, states) if st is None]
                    if any(st == (not holds) for st in states):
                        return None
                else:
                    open_ = [(c, p) for (c, p), st in zip(children, states) if st is None]
                    if not open_ and all(st == holds for st in states):
                        return None
                    targets = [(open_[0][0], open_[0][1], not holds)] if len(open_) == 1 and all(
                        st in (None, holds) for st in states) else []
                for child, polarity, operand in targets:
                    if not decide(child[1], polarity if operand else not polarity, child[2]):
                        return None
            elif None not in states:
                decide(key, all(states) if holds else any(states), invariant)
            changed = changed or len(known) > before
    return decisions | frozenset(added) if added else decisions


def _compounds(formula: tuple) -> list:
    out, stack = [], [formula]
    while stack:
        node = stack.pop()
        if node[0] != "atom":
            out.append(node)
            stack.extend(child for child, _ in node[3])
    return out


def _possible(node: Branch, side: bool, state: _State) -> bool:
    """Can this side be taken after the decisions of the path so far?  Not when the condition
    (or a part of it: `a` of `a and b`) went the other way, nor when the parts that decide the
    other side all went that way already."""
    taken = state.decided(node.key)
    if taken is not None:
        return taken == side
    if not side and any(state.decided(key) == part for key, part in node.always_then):
        return False  # `x % accum == 0` where a setting made `accum` 1: no accumulation
    implied = node.then_implies if side else node.else_implies
    if any(state.decided(key) not in (None, part) for key, part, _ in implied):
        return False
    other = node.else_implies if side else node.then_implies
    return not (other and all(state.decided(key) == part for key, part, _ in other))


def _next_iteration(state: _State) -> _State:
    kept = frozenset(d for d in state.decisions if d[2])
    return _State(state.events, kept, NORMAL, state.deferred)


def _nested(run: _Enumeration, node: Nested, state: _State) -> list[_State]:
    """An inner loop runs its body once or twice (never zero: that adds no events).  Its second
    run forgets the varying decisions its first run took, not the ones the outer iteration took
    before it (`if accelerator.sync_gradients:` around a loop over parameters, tested again for
    the step): what the inner body assigns is outdated by its own Rebind."""
    entry = state.decisions
    once = _run(run, node.body, [state])
    results = []
    again = []
    ended_before = _ENDS <= entry
    for s in once:
        if not ended_before and _ENDS <= s.decisions:
            # the inner loop's last iteration: the outer one goes on after it
            s = _State(s.events, s.decisions - _ENDS, s.status, s.deferred)
            results.append(s if s.status in (RETURN, RAISE) else _State(s.events, s.decisions, NORMAL, s.deferred))
        elif s.status in (RETURN, RAISE):
            results.append(s)
        elif s.status == BREAK:
            results.append(_State(s.events, s.decisions, NORMAL, s.deferred))
        else:
            results.append(_State(s.events, s.decisions, NORMAL, s.deferred))
            kept = frozenset(d for d in s.decisions if d[2] or d in entry)
            again.append(_State(s.events, kept, NORMAL, s.deferred))
    for s in _run(run, node.body, again) if again else []:
        if not ended_before:
            s = _State(s.events, s.decisions - _ENDS, s.status, s.deferred)
        results.append(_State(s.events, s.decisions, s.status if s.status in (RETURN, RAISE) else NORMAL, s.deferred))
    return list(dict.fromkeys(results))


def iteration_paths(loop: LoopModel) -> Optional[list[Path]]:
    body = without_inert(loop.body)
    run = _Enumeration(model_size(body), _read_again(body))
    try:
        states = _run(run, body, [_State(run.empty, frozenset())])
    except TooComplex:
        return None
    paths = []
    for s in states:
        invariants = frozenset((k, side) for k, side, inv in s.decisions if inv)
        ends = s.status in (BREAK, RETURN, RAISE) or _ENDS <= s.decisions
        paths.append(Path(s.events.events(), invariants, ends, s.deferred))
    return list(dict.fromkeys(paths))


def without_inert(nodes: list) -> list:
    """The body with every inert part left out: a branch, nested loop or inlined helper that
    holds no gradient event and no jump out of it (a helper's own `return`, a nested loop's
    own `break` stay inside).  Such a part runs the same events on every side, but each of its
    tests on a setting (`if val_loader is None:`) is a decision the paths keep, so one long
    evaluation helper multiplied the paths past MAX_PATHS and silenced the whole loop.  What
    the part rebinds is kept (one Rebind of all of it: a later test may go either way)."""
    return _prune(nodes)[0]


def _prune(nodes: list) -> tuple[list, bool, frozenset, frozenset]:
    """(the nodes with their inert parts replaced, whether any holds an event, the kinds of the
    jumps that leave them, the condition keys their rebinds outdate)."""
    kept: list = []
    events = False
    leaves: frozenset = frozenset()
    keys: frozenset = frozenset()
    for node in nodes:
        if isinstance(node, Event):
            kept.append(node)
            events = True
            continue
        if isinstance(node, Jump):
            kept.append(node)
            leaves |= {node.kind}
            continue
        if isinstance(node, Rebind):
            kept.append(node)
            keys |= node.keys
            continue
        if isinstance(node, Branch):
            then, then_events, then_leaves, then_keys = _prune(node.then)
            orelse, else_events, else_leaves, else_keys = _prune(node.orelse)
            part = (then_events or else_events, then_leaves | else_leaves, then_keys | else_keys)
            rebuilt = replace(node, then=then, orelse=orelse)
        elif isinstance(node, Helper):
            body, part_events, part_leaves, part_keys = _prune(node.body)
            part = (part_events, part_leaves - {RETURN}, part_keys)
            rebuilt = Helper(body)
        elif isinstance(node, Nested):
            body, part_events, part_leaves, part_keys = _prune(node.body)
            part = (part_events, part_leaves - {BREAK, CONTINUE, LAST}, part_keys)
            rebuilt = Nested(body)
        else:
            raise TypeError(node)
        part_events, part_leaves, part_keys = part
        keys |= part_keys
        if not part_events and part_leaves == {RAISE} and not _surely_raises(rebuilt):
            # raises on some sides, does nothing on the others: only the error paths differ, and
            # _branch drops those beside a path that goes on
            part_leaves = frozenset()
        if part_events or part_leaves:
            kept.append(rebuilt)
            events = events or part_events
            leaves |= part_leaves
        elif part_keys:
            kept.append(Rebind(frozenset(), part_keys))
    return kept, events, leaves, keys


def _surely_raises(node) -> bool:
    """Every path through this pruned branch or helper ends in a `raise` at its top level."""
    if isinstance(node, Branch):
        return _raises_at_top(node.then) and _raises_at_top(node.orelse)
    if isinstance(node, (Helper, Nested)):
        return _raises_at_top(node.body)
    return False


def _raises_at_top(nodes) -> bool:
    return any(
        (isinstance(n, Jump) and n.kind == RAISE) or (isinstance(n, (Branch, Helper)) and _surely_raises(n)) for n in nodes
    )


def _read_again(nodes) -> frozenset:
    """The keys of the conditions that more than one branch tests (as its condition or a part of
    it).  A decision on any other key that varies is read by no later branch of its iteration
    and is forgotten by the next: it need not be kept (an invariant one is kept for the pairing
    of iterations)."""
    seen: set = set()
    again: set = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if isinstance(node, Branch):
            keys = {node.key} | {k for k, _, _ in node.then_implies + node.else_implies}
            keys |= {k for k, _ in node.always_then}
            keys |= {c[1] for c in _compounds(node.formula) for c in [c] + [child for child, _ in c[3]]} if node.formula else set()
            again |= keys & seen
            seen |= keys
            stack.extend(node.then)
            stack.extend(node.orelse)
        elif isinstance(node, (Nested, Helper)):
            stack.extend(node.body)
    return frozenset(again)


def model_size(nodes) -> int:
    """The nodes of a loop body's model, each counted once (branches, nested loops, helpers and
    jumps as well as events): what its paths and walks may cost is bounded by it."""
    size = 0
    stack = list(nodes)
    while stack:
        node = stack.pop()
        size += 1
        if isinstance(node, Branch):
            stack.extend(node.then)
            stack.extend(node.orelse)
        elif isinstance(node, (Nested, Helper)):
            stack.extend(node.body)
    return size


def _consistent(a: Path, b: Path) -> bool:
    sides = dict(a.invariants)
    return all(sides.get(k, side) == side for k, side in b.invariants)


def walks(loop: LoopModel) -> list[Walk]:
    """Every consistent pair of iterations (a loop that exits at once gives one-iteration walks).

    Computed once per loop and kept on it: every rule walks the same pairs.
    """
    if loop.walks is None:
        loop.walks = _walks(loop)
    return loop.walks


def _walks(loop: LoopModel) -> list[Walk]:
    paths = iteration_paths(loop)
    result: Optional[list[Walk]] = None
    if paths is not None and _walk_events(paths) > WALK_EVENTS_PER_NODE * max(model_size(loop.body), 1):
        paths = None  # more to read than the loop's size allows: too tangled to judge, as above
    if paths is not None:
        result = []
        for first, second in product(paths, repeat=2):
            if first.exits:
                continue
            if not _consistent(first, second):
                continue
            events = first.events + second.events
            iteration = (0,) * len(first.events) + (1,) * len(second.events)
            result.append(Walk(events, iteration, (first, second)))
        for first in paths:
            if first.exits:
                result.append(Walk(first.events, (0,) * len(first.events), (first,)))
    return result or []


def _walk_events(paths: list[Path]) -> int:
    """The events of every pair of paths (an upper bound of what the walks hold)."""
    return 2 * len(paths) * sum(len(path.events) for path in paths)


def conditional(loop: LoopModel) -> dict:
    """The events that run only under a condition, by key: True when the condition can
    change between iterations (`if i > 10:`, `if i % 100 == 0:`), so the event runs only
    on some of them; False when every condition around it is one the loop never changes
    (`if use_amp:`: every iteration alike).  Events that always run are absent."""
    if loop.conditional is None:
        found: dict = {}
        _conditional(loop.body, None, found)
        loop.conditional = found
    return loop.conditional


def plain_guards(loop: LoopModel) -> dict:
    """The events under a plain test, by key: the keys of the branches around each that
    can change between iterations and mark no accumulation window (`if step > 0:`, `if i ==
    last:`), so the event runs on some of the iterations the windows around it let through.
    Events under no such test are absent."""
    if loop.plain_guards is None:
        found: dict = {}
        _plain_guards(loop.body, frozenset(), found)
        loop.plain_guards = found
    return loop.plain_guards


def _plain_guards(nodes, guards: frozenset, found: dict) -> None:
    for node in nodes:
        if isinstance(node, Event):
            if guards:
                found[node.key] = found.get(node.key, frozenset()) | guards
        elif isinstance(node, Branch):
            inner = guards if node.invariant or node.accumulation else guards | {node.key}
            _plain_guards(node.then, inner, found)
            _plain_guards(node.orelse, inner, found)
        elif isinstance(node, (Nested, Helper)):
            _plain_guards(node.body, guards, found)


def _conditional(nodes, varying, found: dict) -> None:
    for node in nodes:
        if isinstance(node, Event):
            if varying is not None:
                found[node.key] = varying or found.get(node.key, False)
        elif isinstance(node, Branch):
            inner = bool(varying) or not node.invariant
            _conditional(node.then, inner, found)
            _conditional(node.orelse, inner, found)
        elif isinstance(node, (Nested, Helper)):
            _conditional(node.body, varying, found)
