"""gradlint/parse/cst_parse.py: libcst's parse without the per-node validation, which only a
hand-built tree needs; nodes built outside the parse are still validated."""

from __future__ import annotations

import threading

import libcst as cst
import pytest

from gradlint.parse.cst_parse import parse_module

SOURCE = """\
import torch

for x, y in loader:
    opt.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
"""


def test_the_same_tree_as_libcst():
    ours, theirs = parse_module(SOURCE), cst.parse_module(SOURCE)
    assert ours.code == SOURCE
    assert ours.deep_equals(theirs)


def test_a_parse_validates_no_node(monkeypatch):
    calls = []
    original = cst.Name._validate

    def counting(self):
        calls.append(self.value)
        return original(self)

    monkeypatch.setattr(cst.Name, "_validate", counting)
    cst.parse_module(SOURCE)
    assert calls  # libcst's own parse validates every Name it builds
    calls.clear()
    parse_module(SOURCE)
    assert calls == []


def test_nodes_built_by_hand_are_still_validated():
    parse_module(SOURCE)  # installs the switch
    with pytest.raises(cst.CSTValidationError):
        cst.Subscript(value=cst.Name("x"), slice=())  # an empty subscript
    # and in another thread while this one is not parsing
    errors = []

    def build():
        try:
            cst.Subscript(value=cst.Name("x"), slice=())
        except cst.CSTValidationError as exc:
            errors.append(exc)

    thread = threading.Thread(target=build)
    thread.start()
    thread.join()
    assert len(errors) == 1


def test_syntax_errors_are_libcsts():
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("for x in :\n    pass\n")
    # the switch is off again after a failed parse: a bad hand-built node still raises
    with pytest.raises(cst.CSTValidationError):
        cst.Subscript(value=cst.Name("x"), slice=())


def test_the_only_thread_parses_with_a_no_op_hook_and_puts_it_back(monkeypatch):
    """The process's only thread (a command-line run, a worker): no node is built elsewhere
    during its parse, so __post_init__ is a no-op then, not a per-node test of the thread;
    with another thread alive (the language server), the per-node test stays."""
    from libcst._nodes.base import CSTNode

    from gradlint.parse import cst_parse

    parse_module(SOURCE)  # installs the switch
    installed = CSTNode.__post_init__
    seen = []
    real = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda text: seen.append(CSTNode.__post_init__) or real(text))
    with monkeypatch.context() as alone:
        alone.setattr(cst_parse, "active_count", lambda: 1)  # (the test runner may have threads of its own)
        parse_module(SOURCE)
    assert seen == [cst_parse._unchecked]
    assert CSTNode.__post_init__ is installed
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        parse_module(SOURCE)
    finally:
        release.set()
        other.join()
    assert seen[1] is installed
    assert CSTNode.__post_init__ is installed
