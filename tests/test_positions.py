"""Spans from the ast shortcut equal libcst's PositionProvider, and a mismatch falls back."""

import glob
import os

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from gradlint.model import positions as positions_module
from gradlint.model.bindings import collect
from gradlint.model.positions import KINDS, Positions
from gradlint.rules.registry import all_rules

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = [p for p in sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True)) if not p.endswith("__init__.py")]
TRICKY = '''\
import torch
@decorate(x)
def f(a):  # café
    s = f"{g(a)} and {h(a, b=k(1))}"
    t = "é" + str(a.b(c)(d))
    for p in m.parameters(): p.grad = None
    async def inner():
        async for x in y():
            z += w(x)
    while q(): opt.step()
    n: int = len(a)
    k = (\
        (g(a))
    ).item()
    # a comment before a statement
    loss = (  # why
        crit(out)
    )
    return [u(v) for v in range(3)]
'''


def spans(source):
    module = cst.parse_module(source)
    bindings = collect(module)
    fast = Positions(module, source, bindings)
    exact = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    pairs = []

    class Every(cst.CSTVisitor):
        def on_visit(self, node):
            if type(node) in KINDS:  # decorated defs too: both trees start them at `def`
                pos = exact[node]
                want = (pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)
                got = fast.span(node)
                pairs.append((want, (got.line, got.col, got.end_line, got.end_col)))
            return True

    module.visit(Every())
    return pairs, fast


@pytest.mark.parametrize("source", [TRICKY] + [open(p).read() for p in SOURCES[:40]], ids=lambda s: s[:30])
def test_fast_spans_equal_position_provider(source):
    pairs, fast = spans(source)
    assert pairs and all(want == got for want, got in pairs)
    assert fast._fallback is None  # the shortcut was used, not the fallback


def test_rule_samples_spans_equal_position_provider():
    for rule in all_rules():
        for sample in rule.valid + rule.invalid:
            pairs, _ = spans(sample)
            assert all(want == got for want, got in pairs), rule.code


def test_a_count_mismatch_falls_back(monkeypatch):
    monkeypatch.setattr(positions_module.ast, "parse", lambda source: positions_module.ast.Module([], []))
    pairs, fast = spans("for x in y:\n    opt.step()\n")
    assert all(want == got for want, got in pairs)
    assert fast._fallback is not None
