"""The labels of helper-made events ("optimizer.zero_grad", "inferred clear", ...) are spelled in
gradlint/core/event_labels.py only: verify's probes and the guard record events under them, and a
rule's run-time criterion (GL002's) compares with them, so a side that spelled its own could drift
from the others unseen.  The scan reads string literals with `ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import gradlint
from gradlint.core import event_labels

PACKAGE = Path(gradlint.__file__).parent
TABLE = PACKAGE / "core" / "event_labels.py"


def labels() -> set:
    found = set()
    for name, value in vars(event_labels).items():
        if name.isupper():
            found |= {value} if isinstance(value, str) else set(value)
    return found


def spelled_elsewhere(package: Path = PACKAGE, table: Path = TABLE) -> list[str]:
    wanted = labels()
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == table:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in wanted:
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {node.value!r}")
    return found


def test_every_event_label_is_spelled_in_one_place():
    assert spelled_elsewhere() == []


def test_a_label_spelled_by_one_side_is_caught(tmp_path):
    (tmp_path / "probe.py").write_text('event = dict(api="optimizer.zero_grad")\n', encoding="utf-8")
    (tmp_path / "criterion.py").write_text('CALLS = ("module.zero_grad",)\nNOTE = "optimizer.zero_grad()"\n', encoding="utf-8")
    assert spelled_elsewhere(tmp_path, TABLE) == [
        "%s/criterion.py:1: 'module.zero_grad'" % tmp_path.name,
        "%s/probe.py:1: 'optimizer.zero_grad'" % tmp_path.name,
    ]


def test_the_probes_the_guard_and_gl002_read_the_table():
    # each side imports the labels it records or compares with (not a copy of its own)
    for module in ("verify/probes.py", "guard/watcher.py", "guard/patches.py", "rules/gl002_zero_grad_discards.py"):
        source = (PACKAGE / module).read_text(encoding="utf-8")
        assert "from gradlint.core.event_labels import" in source, module


def test_the_table_is_torch_free():
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(TABLE.read_text(encoding="utf-8")))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in getattr(node, "names", [])
    }
    assert imported == set()
