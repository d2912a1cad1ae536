"""A notebook's findings where its reader looks for them, in every format.

As ruff prints them: `nb.ipynb:cell 4:5:5: GL002 ...`, the cell counted from 1
over every cell (markdown included), the line and column in that cell; JSON's
`cell` with the line and column in the cell; the formats that carry only a
line of the file (GitHub annotations, SARIF, JUnit) point at the line of the
.ipynb file that holds the source line.  (Before: the line of the joined code
cells, `nb.ipynb:12:5`, which an editor or a CI annotation opened at an
unrelated line of the JSON.)
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from ci_snippets import HEADER, run_cli, write
from test_formats import _sarif_validator
from test_notebook import indented_notebook, notebook

# GL002 on line 4 of its cell (col 5), backward on line 3, step on line 5
LOOP = "for x in range(10):\n    loss = model(x).sum()\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
CELLS = (("markdown", "# Training\nsome text\n"), ("code", "!pip install torch\n" + HEADER), ("markdown", "Loop:\n"),
         ("code", LOOP), ("code", "SELECT 1;\n"))


@pytest.fixture
def nb(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "nb.ipynb", indented_notebook(*CELLS))
    return tmp_path / "nb.ipynb"


def file_line_of(path, text: str) -> int:
    """The 1-based line of the .ipynb file whose JSON string holds `text`."""
    (number,) = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if json.dumps(text)[1:-1] in line]
    return number


def test_text(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "nb.ipynb")
    assert code == 1, err
    assert out.splitlines()[:2] == [
        "nb.ipynb:cell 5:1:8: error: syntax error: invalid syntax; the other cells were checked",
        "nb.ipynb:cell 4:4:5: GL002 [*] opt.zero_grad() discards the gradients of loss.backward() (line 3) "
        "before opt.step() (line 5)",
    ]


def test_json(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "json", "nb.ipynb")
    data = json.loads(out)
    (finding,) = data["findings"]
    assert (finding["cell"], finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (4, 4, 5, 4, 20)
    assert [(r["cell"], r["line"], r["column"]) for r in finding["related"]] == [(4, 3, 5), (4, 5, 5)]
    assert finding["fix"] is None
    (error,) = data["errors"]
    assert (error["cell"], error["line"], error["column"]) == (5, 1, 8)


def test_github(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "github", "nb.ipynb")
    error, finding = out.splitlines()
    assert finding.startswith(f"::error file=nb.ipynb,line={file_line_of(nb, '    opt.zero_grad()')},title=GL002::")
    assert "::cell 4, line 4, column 5: opt.zero_grad() discards" in finding
    assert "%0A  line 3: " in finding
    assert error.startswith(f"::error file=nb.ipynb,line={file_line_of(nb, 'SELECT 1;')},title=gradlint syntax-error::")


def test_sarif(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "sarif", "nb.ipynb")
    data = json.loads(out)
    _sarif_validator().validate(data)
    (result,) = data["runs"][0]["results"]
    location = result["locations"][0]
    assert location["physicalLocation"]["region"] == {"startLine": file_line_of(nb, "    opt.zero_grad()")}
    assert location["properties"] == {"cell": 4, "startLine": 4, "startColumn": 5, "endLine": 4, "endColumn": 20}
    assert result["message"]["text"].startswith("cell 4, line 4, column 5: opt.zero_grad()")
    assert "([line 3](1))" in result["message"]["text"]
    backward = result["relatedLocations"][0]
    assert backward["physicalLocation"]["region"] == {"startLine": file_line_of(nb, "    loss.backward()")}
    (note,) = data["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["region"] == {"startLine": file_line_of(nb, "SELECT 1;")}


def test_junit(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "junit", "nb.ipynb")
    cases = ET.fromstring(out).findall("./testsuite/testcase")
    finding = next(c for c in cases if c.find("failure") is not None)
    assert finding.get("name") == "GL002 zero-grad-discards-gradients (cell 4, line 4)"
    assert finding.get("line") == str(file_line_of(nb, "    opt.zero_grad()"))
    assert finding.find("failure").text.startswith("nb.ipynb:cell 4:4:5: GL002 ")
    error = next(c for c in cases if c.find("error") is not None)
    assert error.get("line") == str(file_line_of(nb, "SELECT 1;"))


def test_lsp_format(nb, capsys):
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "lsp", "nb.ipynb")
    (diagnostics,) = json.loads(out).values()
    error, finding = diagnostics
    assert finding["range"] == {"start": {"line": 3, "character": 4}, "end": {"line": 3, "character": 19}}
    assert finding["data"] == {"cell": 4}
    assert [r["location"]["range"]["start"]["line"] for r in finding["relatedInformation"]] == [2, 4]
    assert error["data"] == {"cell": 5}


def test_an_event_in_another_cell_is_named_with_its_cell(tmp_path, monkeypatch, capsys):
    """The backward runs in a helper defined two cells above the loop."""
    monkeypatch.chdir(tmp_path)
    helper = "def backward(loss):\n    loss.backward()\n"
    loop = "for x in range(10):\n    backward(model(x).sum())\n    opt.zero_grad()\n    opt.step()\n"
    write(tmp_path, "nb.ipynb", notebook(("code", HEADER), ("code", helper), ("markdown", "x\n"), ("code", loop)))
    code, out, err = run_cli(capsys, "--no-cache", "nb.ipynb")
    (line,) = [l for l in out.splitlines() if "GL002" in l]
    assert line.startswith("nb.ipynb:cell 4:3:5: GL002 ")
    assert "(cell 2, line 2)" in line and "(line 4)" in line, line


def test_a_cell_written_as_one_string(tmp_path, monkeypatch, capsys):
    """nbformat allows a cell's source as one string: every line of it is on one line of the file."""
    monkeypatch.chdir(tmp_path)
    data = json.loads(notebook(("code", HEADER), ("code", LOOP)))
    data["cells"][1]["source"] = LOOP
    write(tmp_path, "nb.ipynb", json.dumps(data, indent=1))
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "github", "nb.ipynb")
    wanted = file_line_of(tmp_path / "nb.ipynb", LOOP)
    assert out.startswith(f"::error file=nb.ipynb,line={wanted},title=GL002::cell 2, line 4, column 5:")


def test_suppressed_statistics_and_unused_noqa(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    silenced = LOOP.replace("opt.zero_grad()\n", "opt.zero_grad()  # noqa: GL002\n")
    stale = "y = 1  # noqa: GL004\n"
    write(tmp_path, "nb.ipynb", notebook(("markdown", "x\n"), ("code", HEADER), ("code", silenced), ("code", stale)))
    code, out, err = run_cli(capsys, "--no-cache", "--show-suppressed", "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 3:4:5: GL002 opt.zero_grad() discards"), out  # no mark when suppressed
    assert "(suppressed)" in out.splitlines()[0]
    code, out, err = run_cli(capsys, "--no-cache", "--report-unused-noqa", "nb.ipynb")
    assert out.startswith("nb.ipynb:cell 4:1:8: GL900 unused suppression of GL004"), out
    code, out, err = run_cli(capsys, "--no-cache", "--statistics", "--report-unused-noqa", "nb.ipynb")
    assert out == "1  GL900  unused-noqa\n"


def test_show_fixes_counts_every_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "nb.ipynb", indented_notebook(("markdown", "# T\n"), ("code", HEADER), ("code", LOOP)))
    code, out, err = run_cli(capsys, "--no-cache", "--fix", "--show-fixes", "nb.ipynb")
    assert code == 0, err
    assert "GL002 cell 3, line 4: Move opt.zero_grad() after opt.step()" in out + err


def test_stdin_notebook(tmp_path, monkeypatch, capsys):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    data = notebook(("markdown", "x\n"), ("code", HEADER), ("code", LOOP + "x = 1  # noqa: GL001\n")).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run_cli(capsys, "-", "--stdin-filename", "nb.ipynb", "--report-unused-noqa")
    assert out.splitlines()[:2] == [
        "nb.ipynb:cell 3:4:5: GL002 [*] opt.zero_grad() discards the gradients of loss.backward() (line 3) "
        "before opt.step() (line 5)",
        "nb.ipynb:cell 3:6:8: GL900 unused suppression of GL001 (nothing on this line is reported for it) "
        "in `# noqa: GL001`",
    ], out + err


def test_a_cached_notebook_result_keeps_its_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "nb.ipynb", indented_notebook(*CELLS[:4]))
    first = run_cli(capsys, "--cache-dir", "cache", "--output-format", "json", "nb.ipynb")
    assert list((tmp_path / "cache").rglob("*.json")), "the notebook's result was cached"
    second = run_cli(capsys, "--cache-dir", "cache", "--output-format", "json", "nb.ipynb")
    assert second == first
    (finding,) = json.loads(second[1])["findings"]
    assert (finding["cell"], finding["line"]) == (4, 4)
