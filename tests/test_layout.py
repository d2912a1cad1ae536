"""The layout is a picture of the architecture.

The package is a stack of stage packages (docs/development.md, "The pipeline"): a module may
import its own stage and the stages below it, never one above, at the top of a file or inside
a function.  No module sits at the top of the package but `__init__.py` (the public API, which
every stage may read) and `__main__.py` (`python -m gradlint`, above every stage).  And
modules that need each other both ways have no clear job each, so no two of gradlint's modules
import each other (a package importing its own submodule, and the submodule its package,
excepted)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradlint"

# Bottom first.  scripts/regroup.py, which moved the modules here, lists the same order.
STAGES = (
    "core",  # findings, source lines, digests, the rule catalogue, the API-name tables
    "options",  # [tool.gradlint] and flags -> Settings
    "parse",  # the CPython parse, libcst's parse, the guards before them
    "incremental",  # what the language server keeps per buffer to re-parse only an edit
    "project",  # the other modules of the run, read as text: the index
    "model",  # what a training loop is
    "fix",  # repairs: edit primitives, a plan per rule, the fixing session
    "rules",  # one module per rule
    "run",  # discovery, the pool, the cache, the run's project index, atomic writes
    "check",  # one file through the pipeline: prefilter, screen, engine, suppress; notebooks; quick
    "report",  # one formatter per output format
    "lsp",  # the language server
    "verify",  # the runtime verifier
    "guard",  # the rules watched inside the user's own run (verify's replay, fed live)
    "edit",  # --fix and --add-noqa on the user's files, the one writer
    "commands",  # the command line
)
# A module whose job is a lower stage's than its folder's: the rule catalogue (codes, names,
# defaults, selection) lives beside the rule modules, which it finds by their file names and
# imports only by name when the rules themselves are asked for; every stage asks it for codes.
PLACED = {"gradlint.rules.registry": "core"}
# Packages that only group a stage's modules: importing one must import nothing (the quick
# pre-commit path imports core/, parse/, check/ and commands/).
GROUPING_ONLY = ("core", "options", "parse", "run", "check", "edit", "commands")


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every gradlint name `path` imports, at the top or inside a function, with the names
    `importlib.import_module("gradlint...")` is given as a constant."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("gradlint"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("gradlint"))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).startswith("gradlint")
        ):
            found.add(node.args[0].value)
    return found


def _graph(package: Path) -> dict[str, set[str]]:
    return {_module_name(path, package): _imports(path) for path in package.rglob("*.py")}


def _resolve(name: str, graph: dict) -> str | None:
    """The module or package a dotted name lives in (`gradlint.check.engine.check_source` is
    gradlint.check.engine; `gradlint.DOCS_URL` is gradlint)."""
    while name and name not in graph:
        name = name.rpartition(".")[0]
    return name or None


def _stage(module: str, placed=PLACED) -> str:
    return placed.get(module) or module.split(".")[1]


def _level(module: str, stages=STAGES, placed=PLACED) -> int:
    if module == "gradlint":
        return -1  # the package root: the version and the project's addresses
    if module == "gradlint.__main__":
        return len(stages)
    stage = _stage(module, placed)
    return stages.index(stage) if stage in stages else len(stages) + 1


def upward_imports(package: Path = PACKAGE, stages=STAGES, placed=PLACED) -> list[str]:
    graph = _graph(package)
    wrong = []
    for module, imported in sorted(graph.items()):
        targets = {_resolve(name, graph) for name in imported} - {None, module}
        # `from gradlint.check import engine` names the package and the module: report the module
        targets = {t for t in targets if not any(other.startswith(t + ".") for other in targets)}
        for target in sorted(targets):
            if _level(target, stages, placed) > _level(module, stages, placed):
                wrong.append(f"{module} imports {target}: stage {_stage(target, placed)} is above {_stage(module, placed)}")
    return sorted(set(wrong))


def unplaced(package: Path = PACKAGE, stages=STAGES) -> list[str]:
    left = []
    for entry in sorted(package.iterdir()):
        if entry.is_file() and entry.suffix == ".py" and entry.name not in ("__init__.py", "__main__.py"):
            left.append(f"gradlint/{entry.name} is in no stage")
        elif entry.is_dir() and (entry / "__init__.py").exists() and entry.name not in stages:
            left.append(f"gradlint/{entry.name}/ is not in STAGES")
    return left


def _mutual_imports() -> list[tuple[str, str]]:
    graph = _graph(PACKAGE)
    pairs = []
    for module, imported in graph.items():
        for other in imported:
            if other <= module or other not in graph or module not in graph[other]:
                continue
            if other.startswith(module + ".") or module.startswith(other + "."):
                continue  # a package and its own submodule
            pairs.append((module, other))
    return pairs


def test_no_import_runs_up_a_stage():
    assert upward_imports() == []


def test_every_module_is_in_a_stage():
    assert unplaced() == []


def test_grouping_packages_import_nothing():
    for stage in GROUPING_ONLY:
        assert _imports(PACKAGE / stage / "__init__.py") == set(), stage
        body = ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8")).body
        assert [type(node) for node in body] == [ast.Expr], f"gradlint/{stage}/__init__.py holds more than its docstring"


def test_no_two_modules_import_each_other():
    assert _mutual_imports() == []


def test_the_regroup_script_lists_the_same_stages():
    tree = ast.parse((ROOT / "scripts" / "regroup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "STAGES":
            assert tuple(key.value for key in node.value.keys) == STAGES
            return
    raise AssertionError("scripts/regroup.py has no STAGES")


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_an_import_up_a_stage_is_caught(tmp_path):
    """The check itself, on a small package: each way of importing upward is reported, and
    imports down, within a stage and of the root are not."""
    package = tmp_path / "gradlint"
    _write(package, "__init__.py", "VERSION = '0'\n")
    _write(package, "__main__.py", "from gradlint.top.cli import main\n")
    for stage in ("low", "mid", "top"):
        _write(package, f"{stage}/__init__.py", "")
    _write(package, "low/a.py", "from gradlint import VERSION\n\ndef f():\n    from gradlint.mid import b\n")
    _write(package, "low/c.py", "import importlib\nimportlib.import_module('gradlint.top.cli')\n")
    _write(package, "mid/b.py", "from gradlint.low import a\nfrom gradlint.low.c import x\nimport gradlint.mid.d\n")
    _write(package, "mid/d.py", "import gradlint.top.cli as cli\n")
    _write(package, "top/cli.py", "from gradlint.mid.b import y\n")
    _write(package, "top/catalogue.py", "from gradlint.low import a\n")  # placed in low: may import low only
    _write(package, "low/e.py", "from gradlint.top import catalogue\n")
    _write(package, "mid/f.py", "from gradlint.top.catalogue import x\nfrom gradlint.top import cli\n")
    assert upward_imports(package, ("low", "mid", "top"), {"gradlint.top.catalogue": "low"}) == [
        "gradlint.low.a imports gradlint.mid.b: stage mid is above low",
        "gradlint.low.c imports gradlint.top.cli: stage top is above low",
        "gradlint.mid.d imports gradlint.top.cli: stage top is above mid",
        "gradlint.mid.f imports gradlint.top.cli: stage top is above mid",
    ]
    _write(package, "top/catalogue.py", "from gradlint.mid import b\n")
    assert "gradlint.top.catalogue imports gradlint.mid.b: stage mid is above low" in upward_imports(
        package, ("low", "mid", "top"), {"gradlint.top.catalogue": "low"})
    _write(package, "top/catalogue.py", "")
    _write(package, "low/e.py", "")
    _write(package, "mid/f.py", "")
    assert upward_imports(package, ("low", "mid", "top"), {}) == [
        "gradlint.low.a imports gradlint.mid.b: stage mid is above low",
        "gradlint.low.c imports gradlint.top.cli: stage top is above low",
        "gradlint.mid.d imports gradlint.top.cli: stage top is above mid",
    ]
    assert unplaced(package, ("low", "mid", "top")) == []
    _write(package, "stray.py", "")
    assert unplaced(package, ("low", "mid", "top")) == ["gradlint/stray.py is in no stage"]
