"""A big file never aborts the run (issue 48): big expressions that hold no gradient event are
blanked before the parsers see them (gradlint/check/big_expressions.py), the big statements
libcst is still given are bounded together (parse_guard.oversized_statement), and a big file is
analysed in a child process even with -j 1 (engine.check_files).  The inputs are built here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

HEADER = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


def four_big_statements(item: str = "x.y", count: int = 100_000) -> str:
    """A training loop that never clears (one GL001) holding four statements of about
    5 * `count` characters each (500 KB: each under the 512 KiB statement bound, 2 MB in all)."""
    items = ", ".join([item] * count)
    body = "".join(f"    z{k} = [{items}]\n" for k in range(4))
    return HEADER + "for x in loader:\n" + body + "    model(x).sum().backward()\n    opt.step()\n"


def test_four_big_statements_in_a_loop_are_checked_alone_with_one_process(tmp_path):
    """Before: libcst was handed the 2 MB and needed gigabytes (exit 134, no report, or the time
    limit).  The data is blanked: the loop's finding is reported, on its line."""
    path = tmp_path / "train.py"
    path.write_text(four_big_statements())
    proc = subprocess.run(
        [sys.executable, "-m", "gradlint", "--no-cache", "-j", "1", str(path)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{path}:9:5: GL001 " in proc.stdout
    assert "error" not in proc.stdout


def test_blanked_expressions_keep_every_line_and_column():
    source = four_big_statements(count=20_000)  # 100 KB each: over the blanking's 64 KiB
    from gradlint.check.big_expressions import without_big_data
    from gradlint.check.prefilter import for_wrappers
    from gradlint.parse.file_context import FileContext

    blanked = without_big_data(source, FileContext("t.py", source), for_wrappers(Settings.default().wrappers))
    assert len(blanked) == len(source)
    assert blanked.splitlines()[4] == "    z0 = (" + " " * (len(source.splitlines()[4]) - len("    z0 = ()")) + ")"
    assert blanked.splitlines()[8:] == source.splitlines()[8:]


def test_big_statements_that_hold_events_are_one_error_for_the_file():
    """Events in each of them: nothing can be blanked, and together they are past what libcst is
    given (each one alone is under the statement bound)."""
    source = four_big_statements("opt.step()", 14_000)  # 168 KB each, 670 KB in all
    result = check_source(source, "big.py", Settings.default())
    assert result.findings == []
    assert [(e.kind, e.line) for e in result.errors] == [("syntax-error", 5)]
    assert result.errors[0].message.startswith("statements too large to check (")


def test_a_small_expression_is_left_as_it_was():
    source = four_big_statements(count=2_000)  # 10 KB each
    from gradlint.check.big_expressions import without_big_data
    from gradlint.check.prefilter import for_wrappers
    from gradlint.parse.file_context import FileContext

    assert without_big_data(source, FileContext("t.py", source), for_wrappers(Settings.default().wrappers)) is source


ABORTS = textwrap.dedent('''
    import os, sys
    from gradlint.check import engine
    from gradlint.options.settings import Settings
    real = engine.check_source

    def check_source(source, path, *args, **kwargs):
        if path.endswith("big.py"):
            os.abort()  # as libcst's native parser does when an allocation fails
        return real(source, path, *args, **kwargs)

    engine.check_source = check_source
    results = engine.check_files([(p, Settings.default()) for p in sys.argv[1:]], engine.RunOptions(jobs=1))
    for result in results:
        print(result.path, [f.code for f in result.findings], [(e.kind, e.message) for e in result.errors])
''')


def test_a_big_file_is_analysed_in_a_child_process_even_with_one_job(tmp_path):
    """An analysis that aborts its process is one error for that file; the run goes on."""
    big = tmp_path / "big.py"
    big.write_text(HEADER + "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n" + "# padding\n" * 120_000)
    small = tmp_path / "small.py"
    small.write_text(HEADER + "for x in loader:\n    model(x).sum().backward()\n    opt.step()\n")
    proc = subprocess.run([sys.executable, "-c", ABORTS, str(big), str(small)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"{big} [] [('internal-error', 'internal error: the worker process checking this file died')]"
    assert lines[1] == f"{small} ['GL001'] []"
