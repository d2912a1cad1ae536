"""The read-only walk calls a visitor exactly as libcst's own `node.visit` does."""

import glob
import inspect
import os
import sysconfig

import libcst as cst
import pytest

from gradlint.model import walk as walk_module
from gradlint.model.walk import walk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
# Real code with every kind of statement and expression, none of it ours.
STDLIB = [os.path.join(sysconfig.get_paths()["stdlib"], name) for name in ("argparse.py", "dataclasses.py", "asyncio/tasks.py")]
EVERY_NODE = '''\
from . import a as b
from .. x import (y, z)
import p.q as r
@dec(1)
@other
async def f(a, /, b: int = 2, *args, c, d=3, **kw) -> "T":
    global g
    nonlocal_ = lambda u, *v: u[v:1:2, ...]
    async with m() as (n, o), q:
        async for i in j:
            await k
    try:
        pass
    except* (E, F) as e:
        raise G from e
    else:
        del a[0], b.c
    finally:
        assert x, y
    match s:
        case [1, *rest] | {"k": v, **kw} if v:
            yield from rest
        case Point(x=0, y=yy) as pt:
            return {**kw, 1: 2}
        case _:
            pass
    t = {i for i in r if i} | {i: j for i, j in s} | [i async for i in r]
    u = (w := 1) if not x else -y ** 2 @ z
    v: list[int] = [*a, f"{b!r:>{c}}"]
    x += 1; y <<= 2
    type_ = print(*a, sep="", **kw)
class C(B, metaclass=M):
    """Doc."""
    def m(self): return super().m()
while True:
    break
else:
    continue
'''


class _Recorder(cst.CSTVisitor):
    """Every visit and leave of every node that is not whitespace or punctuation."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._record("visit", node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._record("leave", original_node)

    def _record(self, what: str, node: cst.CSTNode) -> None:
        if not _punctuation(node):
            self.events.append((what, id(node)))


class _NamedRecorder:
    """The same record, through the visit_X / leave_X methods the walk dispatches to."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def __getattr__(self, name: str):
        what, _, _ = name.partition("_")
        if what not in ("visit", "leave"):
            raise AttributeError(name)
        return lambda node: None if _punctuation(node) else self.events.append((what, id(node)))


_PUNCTUATION_TYPES = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Semicolon, cst.Colon, cst.AssignEqual, cst.Dot, cst.Asynchronous,
)


def _punctuation(node: cst.CSTNode) -> bool:
    return isinstance(node, _PUNCTUATION_TYPES)


def _events_of_both(module: cst.Module):
    theirs, ours = _Recorder(), _NamedRecorder()
    module.visit(theirs)
    walk(module, ours)
    return theirs.events, ours.events


@pytest.mark.parametrize("path", FIXTURES + STDLIB, ids=lambda p: os.path.relpath(p, ROOT))
def test_same_visits_in_the_same_order_as_libcst(path):
    with open(path, "rb") as handle:
        module = cst.parse_module(handle.read())
    theirs, ours = _events_of_both(module)
    assert len(theirs) > 2  # more than the module itself
    assert ours == theirs


def test_every_kind_of_node_in_the_same_order():
    theirs, ours = _events_of_both(cst.parse_module(EVERY_NODE))
    assert ours == theirs


def test_a_visit_returning_false_skips_the_children_but_still_leaves():
    class SkipCalls(cst.CSTVisitor):
        def __init__(self):
            self.names, self.left = [], 0

        def visit_Call(self, node):
            return False

        def leave_Call(self, node):
            self.left += 1

        def visit_Name(self, node):
            self.names.append(node.value)

    visitor = SkipCalls()
    walk(cst.parse_module("a = f(b, g(c))\nd = e\n"), visitor)
    assert visitor.names == ["a", "d", "e"]
    assert visitor.left == 1


def test_no_field_holding_code_is_skipped():
    """The skipped fields hold only tokens and whitespace, in every node type libcst has."""
    code_types = (cst.BaseExpression, cst.BaseStatement, cst.BaseSmallStatement, cst.BaseSuite)
    for kind in vars(cst).values():
        if not (inspect.isclass(kind) and issubclass(kind, cst.CSTNode)) or inspect.isabstract(kind):
            continue
        if not hasattr(kind, "__dataclass_fields__"):
            continue
        kept = walk_module._fields(kind)
        for name, field in kind.__dataclass_fields__.items():
            if name in kept:
                continue
            annotation = str(field.type)
            for base in code_types:
                assert base.__name__ not in annotation, (kind.__name__, name, annotation)


# A helper inlined by three loops, each with a nested loop: every statement of it is modelled
# in each loop that reaches it, and each condition read once per path that holds it.
_REPEATED = """\
import torch

def take_step(model, opt, batch, every):
    loss = model(batch).sum()
    loss.backward()
    if every > 1 and batch.sum() > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    for p in model.parameters():
        p.data -= 0.1 * p.grad
    opt.step()
    opt.zero_grad()

def train(model, opt, loader, every):
    for epoch in range(3):
        for batch in loader:
            take_step(model, opt, batch, every)
    for batch in loader:
        take_step(model, opt, batch, every)
    while True:
        take_step(model, opt, next(loader), every)
"""


def test_the_model_walks_each_expression_once_however_often_it_is_modelled(monkeypatch):
    """builder.walked: a statement is modelled again in every loop, branch and inlined call that
    holds it; the walk of its expression (its calls, the `.grad` it reads, a condition's names)
    is done once per node, not once per modelling."""
    from collections import Counter

    from gradlint.model import classify, loops
    from gradlint.model.names import ExpressionNames

    walks: Counter = Counter()
    nodes: dict = {}
    real = loops.walk

    def counted(node, visitor):
        walks[id(node), type(visitor)] += 1
        nodes[id(node)] = node  # alive for the test: ids stay distinct
        return real(node, visitor)

    monkeypatch.setattr(loops, "walk", counted)
    monkeypatch.setattr(classify, "walk", counted)  # the `.grad` a manual update reads
    module = cst.parse_module(_REPEATED)
    model = loops.build(module, "repeated.py", _REPEATED)
    assert len(model.loops) >= 3
    memoised = (loops._CallsInOrder, ExpressionNames, classify._GradReaders)  # (a clip's limit, a Float: not)
    walks = Counter({key: n for key, n in walks.items() if key[1] in memoised})
    assert {kind for _, kind in walks} == set(memoised)
    assert max(walks.values()) == 1, [(type(nodes[key]).__name__, kind.__name__, n) for (key, kind), n in walks.items() if n > 1]


def test_a_visitor_method_libcst_defines_as_a_no_op_is_never_called():
    """The walk's plan has no method for a node type whose visit_X / leave_X the visitor inherits
    unchanged from libcst's CSTVisitor (they do nothing): such nodes cost no call."""
    class NamesOnly(cst.CSTVisitor):
        def visit_Name(self, node):
            pass

    walk(cst.parse_module("f(a.b, c)\n"), NamesOnly())
    plans = walk_module._PLANS[NamesOnly]
    assert plans[cst.Name][0] is NamesOnly.visit_Name
    assert plans[cst.Call][:2] == (None, None) and plans[cst.Name][1] is None
