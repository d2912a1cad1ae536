"""ast_nodes visits what ast.walk visits, but the Load/Store markers."""

import ast
import os

import pytest

from gradlint.parse.ast_nodes import ast_nodes

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = [os.path.join(HERE, "..", "gradlint", "check", "screen.py"), ast.__file__, os.__file__]


@pytest.mark.parametrize("path", SAMPLES, ids=os.path.basename)
def test_the_same_nodes_as_ast_walk(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    expected = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    got = ast_nodes(tree)
    assert len(got) == len(expected)
    assert {id(n) for n in got} == {id(n) for n in expected}
