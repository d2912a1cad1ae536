"""The layout is a picture of the architecture: modules that need each other both
ways have no clear job each, so no two of gradlint's modules import each other
(a package importing its own submodule, and the submodule its package, excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gradlint"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every gradlint module `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gradlint"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("gradlint"))
    return found


def _mutual_imports() -> list[tuple[str, str]]:
    graph = {_module_name(path): _imports(path) for path in PACKAGE.rglob("*.py")}
    pairs = []
    for module, imported in graph.items():
        for other in imported:
            if other <= module or other not in graph or module not in graph[other]:
                continue
            if other.startswith(module + ".") or module.startswith(other + "."):
                continue  # a package and its own submodule
            pairs.append((module, other))
    return pairs


def test_no_two_modules_import_each_other():
    assert _mutual_imports() == []
