"""Work and memory that must not grow faster than the input (issue 34).

benchmarks/growth.py times the same shapes; these tests count work, never time."""

from __future__ import annotations

import ast

import libcst
import pytest

from gradlint.check import engine
from gradlint.run import pool
from gradlint.check.engine import check_source
from gradlint.model import flow
from gradlint.options.settings import Settings

HEADER = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


def nested(depth: int, clear: bool = True) -> str:
    lines, indent = [], ""
    for level in range(depth):
        lines.append(f"{indent}for i{level} in range(2):")
        indent += "    "
    if clear:
        lines.append(f"{indent}opt.zero_grad()")
    lines += [f"{indent}model(x).sum().backward()", f"{indent}opt.step()"]
    return HEADER + "\n".join(lines) + "\n"


@pytest.fixture
def steps(monkeypatch):
    """Counts the path enumeration's steps; fails at once past `limit` (old code: millions)."""
    state = {"count": 0, "limit": 10**9}
    real = flow._step

    def counted(*args):
        state["count"] += 1
        assert state["count"] <= state["limit"], "the path enumeration does not stop"
        return real(*args)

    monkeypatch.setattr(flow, "_step", counted)
    return state


def _loop_sizes(source: str) -> int:
    """The sizes of the models of every loop of `source` (what the budget is proportional to)."""
    from gradlint.model.loops import build

    module = libcst.parse_module(source)
    return sum(flow.model_size(loop.body) for loop in build(module, "n.py", source).loops)


@pytest.mark.parametrize("depth", [6, 7, 8])
def test_nested_loops_cost_steps_in_proportion_to_their_models(depth, steps):
    source = nested(depth, clear=False)
    bound = flow.STEPS_PER_NODE * _loop_sizes(source)
    steps["limit"] = bound
    result = check_source(source, "n.py", Settings.default())
    # The innermost loop is judged: it never clears (its outer loops may be too tangled to judge).
    assert [f.code for f in result.findings] == ["GL001"]
    assert steps["count"] <= bound


def test_the_bound_leaves_shallow_nests_as_they_were(steps):
    """Three levels, the deepest real code has: every loop is judged (no step budget reached)."""
    for depth in (1, 2, 3):
        steps["count"] = 0
        assert [f.code for f in check_source(nested(depth, clear=False), "n.py", Settings.default()).findings] == ["GL001"]
        source = nested(depth)
        for loop_paths in _paths_of_every_loop(source):
            assert loop_paths is not None


def _paths_of_every_loop(source: str):
    from gradlint.model.loops import build

    module = libcst.parse_module(source)
    return [flow.iteration_paths(loop) for loop in build(module, "n.py", source).loops]


@pytest.fixture
def parses(monkeypatch):
    counts = {"libcst": 0, "ast chars": 0}
    real_cst, real_ast = libcst.parse_module, ast.parse

    def counted_cst(*args, **kwargs):
        counts["libcst"] += 1
        return real_cst(*args, **kwargs)

    def counted_ast(source, *args, **kwargs):
        counts["ast chars"] = max(counts["ast chars"], len(source))
        return real_ast(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counted_cst)
    monkeypatch.setattr(ast, "parse", counted_ast)
    return counts


def test_a_huge_line_in_a_training_loop_is_one_error_before_any_parse(parses):
    items = ", ".join(["x.y"] * 120_000)  # 600 KB on one line: libcst would need over a gigabyte
    source = HEADER + f"for x in loader:\n    z = [{items}]\n    model(x).sum().backward()\n    opt.step()\n"
    result = check_source(source, "huge.py", Settings.default())
    assert [(e.kind, e.line) for e in result.errors] == [("syntax-error", 5)]
    assert "statement too large to check" in result.errors[0].message
    assert parses["libcst"] == 0 and parses["ast chars"] == 0


def test_a_huge_statement_on_many_lines_never_reaches_libcst(parses):
    """One that holds events (data that holds none is blanked first: tests/test_big_expressions.py)."""
    # the bound counts no spaces: 60,000 items are about 700 KiB of code (30,000 were under it, and
    # 30,000 events in one statement are analysed slowly: issue 48, open)
    items = ",\n        ".join(["opt.step()"] * 60_000)
    source = HEADER + f"for x in loader:\n    z = [\n        {items}\n    ]\n    model(x).sum().backward()\n    opt.step()\n"
    result = check_source(source, "huge.py", Settings.default())
    assert [(e.kind, e.line) for e in result.errors] == [("syntax-error", 5)]
    assert parses["libcst"] == 0


def test_a_large_line_below_the_bound_is_still_analysed():
    items = ", ".join(["x.y"] * 4_000)
    source = HEADER + f"for x in loader:\n    z = [{items}]\n    model(x).sum().backward()\n    opt.step()\n"
    assert [f.code for f in check_source(source, "big.py", Settings.default()).findings] == ["GL001"]


def test_the_per_file_limit_bounds_memory(monkeypatch):
    """An analysis that grows past the per-file memory limit is one error for its file, and the
    process's own limit is as it was afterwards."""
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS)
    monkeypatch.setattr(pool, "FILE_MEMORY_BYTES", 300 * 1024**2)

    def hungry(*args):
        blocks = [bytearray(10**6) for _ in range(2_000)]  # 2 GB
        return [len(blocks)]

    monkeypatch.setattr(engine, "_analyse", hungry)
    result, _ = pool.guarded(lambda path, settings: (check_source("x = 1\n", path, settings), None), "f.py", Settings.default())
    assert [(e.kind, e.message) for e in result.errors] == [("timeout", "analysis stopped: out of memory")]
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def loops_in_one_function(loops: int) -> str:
    """One function holding `loops` copies of a five-line loop (generated, notebook-exported code)."""
    loop = ["    for b in loader:", "        loss = model(b).sum()", "        loss.backward()",
            "        opt.zero_grad()", "        opt.step()"]
    return "import torch\n\ndef main(model, loader, opt):\n" + "\n".join(loop * loops) + "\n"


@pytest.fixture
def closer_reads(monkeypatch):
    """Counts the characters the project scan reads looking for the line that closes a def, class
    or loop (gradlint/project/scan.py _closing): a search that finds nothing reads to its end."""
    from gradlint.project import scan

    state = {"chars": 0}
    real = scan._closing

    class Counted:
        def __init__(self, pattern):
            self.pattern = pattern

        def search(self, text, pos=0, endpos=None):
            found = self.pattern.search(text, pos) if endpos is None else self.pattern.search(text, pos, endpos)
            stop = found.end() if found is not None else (len(text) if endpos is None else endpos)
            state["chars"] += stop - pos
            return found

    monkeypatch.setattr(scan, "_closing", lambda width: Counted(real(width)))
    return state


def test_placing_the_events_of_a_function_of_many_loops_reads_its_text_a_bounded_number_of_times(closer_reads):
    """Each backward, clear and step of the project scan is placed among the defs and loops around
    it.  Placing one walked back over every head before it and searched the function's whole
    text up to it for a closing line: one function of 2,000 loops read 4,000 times as much as
    one of 1,000 (issue 48: 4,000 loops took 32.8 s and then ran out of time)."""
    from gradlint.project.scan import scan

    read = []
    for loops in (500, 1_000):
        closer_reads["chars"] = 0
        found = scan(loops_in_one_function(loops))
        assert found.functions == {"main"}  # the function that backs, clears and steps
        read.append(closer_reads["chars"])
    assert read[1] <= 2.2 * read[0], read


def package_of(tmp_path, modules: int, imports: int = 20) -> list:
    """`modules` modules of one package, each importing `imports` helpers of the others and
    calling one in a small training loop (no finding): the rows project_run.index_files takes."""
    import hashlib

    package = tmp_path / f"pkg{modules}" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    rows = [(str(package / "__init__.py"), "", hashlib.sha1(b"").hexdigest(), None)]
    for i in range(modules):
        others = [(i + 1 + 7 * step) % modules for step in range(imports)]
        text = "".join(f"from pkg.m{j} import update_{j}\n" for j in others) + (
            f"\n\ndef update_{i}(model, opt, batch):\n    opt.zero_grad()\n    model(batch).sum().backward()\n    opt.step()\n"
            f"\n\ndef train(model, opt, loader):\n    for batch in loader:\n        update_{others[0]}(model, opt, batch)\n"
        )
        path = package / f"m{i}.py"
        path.write_text(text)
        rows.append((str(path), text, hashlib.sha1(text.encode()).hexdigest(), None))
    return rows


def test_the_project_index_costs_what_each_file_imports_not_the_whole_package_per_file(tmp_path, monkeypatch):
    """Every file's view followed its imports four levels deep on its own: with 20 imports a
    module, each file reached the whole package, and doubling the modules made four times the
    lookups (issue 48: 500 modules took 45 s, 1,000 took 189 s).  What a module's imports reach
    is read once per module now, shared by every file that imports it."""
    from gradlint.project.index import Index
    from gradlint.run import project_run

    lookups = {"count": 0}
    real = Index.lookup

    def counted(self, *args, **kwargs):
        lookups["count"] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Index, "lookup", counted)
    counts = []
    for modules in (120, 240):
        lookups["count"] = 0
        rows = package_of(tmp_path, modules)
        _, views = project_run.index_files(rows, (str(tmp_path / f"pkg{modules}"),))
        # every module calls a helper of another in its loop: each has a view, with the names it imports
        assert len(views) == modules
        view = views[rows[1][0]]
        assert {"update_1", "update_8"} <= set(view.words) and set(view.callbacks) >= {"backward", "step", "zero_grad"}
        counts.append(lookups["count"])
    assert counts[1] <= 2.2 * counts[0], counts


# --- issue 48: thousands of events in one statement, thousands of loops in one function


def _steps_in_one_statement(steps: int) -> str:
    items = ",\n        ".join(["opt.step()"] * steps)
    return HEADER + f"for x in loader:\n    z = [\n        {items}\n    ]\n    model(x).sum().backward()\n    opt.step()\n"


def _loops_in_one_function(loops: int) -> str:
    loop = ["    for b in loader:", "        loss = model(b).sum()", "        loss.backward()",
            "        opt.zero_grad()", "        opt.step()"]
    return "import torch\n\ndef main(model, loader, opt):\n" + "\n".join(loop * loops) + "\n"


def _counted(monkeypatch, owner, name: str) -> dict:
    state = {"count": 0}
    real = getattr(owner, name)

    def counted(*args, **kwargs):
        state["count"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return state


def test_the_steps_of_one_statement_cost_work_linear_in_their_number(monkeypatch):
    """Each step is a GL007.  Before: each step looked back over every event before it for its
    optimizer's clear and a backward, and each finding's fix plan found its events with list.index
    (an equality test of every field, per event before it): 8,000 steps took 130 s, 4x per doubling."""
    from gradlint.model.event import Event
    from gradlint.rules import gl007_step_before_backward as gl007

    equal = _counted(monkeypatch, Event, "__eq__")
    touched = _counted(monkeypatch, gl007, "touches")
    work = []
    for steps in (400, 800):
        equal["count"] = touched["count"] = 0
        result = check_source(_steps_in_one_statement(steps), "steps.py", Settings.default())
        assert [f.code for f in result.findings].count("GL007") == steps
        work.append(equal["count"] + touched["count"])
    assert work[1] <= 2.2 * work[0], work


def test_the_loops_of_one_function_cost_work_linear_in_their_number(monkeypatch):
    """Before: every `loss.backward()` asked which def owns each of the function's `loss = ...`
    values (4,000 loops: 32 million questions, 97 s of a 2.6 s parse)."""
    from gradlint.model import bindings

    owner = _counted(monkeypatch, bindings.Bindings, "_owning_scope")
    work = []
    for loops in (200, 400):
        owner["count"] = 0
        result = check_source(_loops_in_one_function(loops), "loops.py", Settings.default())
        assert [f.code for f in result.findings] == ["GL002"] * loops
        work.append(owner["count"])
    assert work[1] <= 2.2 * work[0], work


def test_a_finding_met_on_several_walks_plans_its_fix_once(monkeypatch):
    """Each loop is walked over two iterations and over its exit, so GL002 meets each misplaced
    clear twice.  Before: both raw findings planned their fix (the second was dropped when the two
    merged), and each plan looked up the clear's and the step's statements again."""
    from gradlint.fix import plan as plans
    from gradlint.fix.statements import Statements

    planned = _counted(monkeypatch, plans, "plan")
    looked_up = _counted(monkeypatch, Statements, "at")
    loops = 50
    result = check_source(_loops_in_one_function(loops), "loops.py", Settings.default())
    assert [f.code for f in result.findings] == ["GL002"] * loops
    assert all(f.fix is not None for f in result.findings)
    assert planned["count"] == loops  # one plan per finding (was two)
    assert looked_up["count"] == 2 * loops  # the clear's statement and the step's, once (was four)


def test_a_name_bound_in_every_loop_is_not_copied_for_each_loop(monkeypatch):
    """`loss.backward()` in each of N loops asks which `loss = ...` values its scope sees: all N.
    Before: each question copied them (4,000 loops: 16 million copies); the scope's values are
    now handed back as they are, one sequence for every call of that scope."""
    from gradlint.model import bindings

    seen = []
    real = bindings.Bindings.values_seen_at

    def recorded(self, name, call, depth=0):
        answer = real(self, name, call, depth)
        if name == "loss":
            seen.append(answer)
        return answer

    monkeypatch.setattr(bindings.Bindings, "values_seen_at", recorded)
    check_source(_loops_in_one_function(30), "loops.py", Settings.default())
    assert len(seen) >= 30 and all(len(values) == 30 for values in seen)
    assert len({id(values) for values in seen}) == 1
