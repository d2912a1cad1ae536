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
