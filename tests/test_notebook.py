"""An .ipynb named explicitly (as pre-commit's `jupyter` type passes it): its code cells are checked."""

import json

from ci_snippets import HEADER, run_cli, write
from gradlint.check.notebook import notebook_source


def notebook(*cells):
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True), "outputs": []}
                for kind, source in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


LOOP = "for x in range(10):\n    loss = model(x).sum()\n    %time y = 1\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"


def test_code_cells_are_joined_and_lines_name_the_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    nb = notebook(
        ("markdown", "# Training\nsome text\n"),
        ("code", "!pip install torch\n" + HEADER),  # the optimizer is built in this cell ...
        ("code", "%%bash\necho hi\n"),
        ("code", LOOP),  # ... and stepped in this one
    )
    write(tmp_path, "train.ipynb", nb)
    code, out, err = run_cli(capsys, "train.ipynb")
    assert code == 1, err
    # as ruff names it: the fourth cell (the markdown one counts), line 5 of that cell; the
    # related lines are the cell's own
    (line,) = [l for l in out.splitlines() if "GL002" in l]
    assert line == (  # --fix repairs it: marked [*]
        "train.ipynb:cell 4:5:5: GL002 [*] opt.zero_grad() discards the gradients of loss.backward() (line 4) "
        "before opt.step() (line 6)"
    )


def test_noqa_in_a_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "n.ipynb", notebook(("code", HEADER), ("code", LOOP.replace("zero_grad()\n", "zero_grad()  # noqa: GL002\n"))))
    assert run_cli(capsys, "n.ipynb") == (0, "All checks passed! (1 file checked)\n", "")


def test_directories_pick_up_notebooks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "sub/n.ipynb", notebook(("code", HEADER + LOOP)))
    write(tmp_path, ".ipynb_checkpoints/n-checkpoint.ipynb", notebook(("code", HEADER + LOOP)))
    code, out, err = run_cli(capsys, ".")
    assert code == 1, err
    assert [l.split(":")[0] for l in out.splitlines() if "GL002" in l] == ["sub/n.ipynb"]


def test_broken_notebook_is_a_file_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.ipynb", "{not json")
    write(tmp_path, "syntax.ipynb", notebook(("code", "x = 1\n"), ("code", "for x in :\n    pass\n")))
    code, out, err = run_cli(capsys, "bad.ipynb", "syntax.ipynb")
    assert code == 1 and "Traceback" not in err
    assert "error: bad.ipynb: not a Jupyter notebook (invalid JSON" in out
    assert "syntax.ipynb:cell 2:1:10: error: syntax error: invalid syntax; the other cells were checked" in out


def test_magics_keep_the_source_valid():
    source, where, error = notebook_source(notebook(("code", "if True:\n    %matplotlib inline\n")).encode(), "n.ipynb")
    assert error is None and source == "if True:\n    pass\n" and where == [(1, 1), (1, 2)]


def test_every_ipython_form_is_blanked_and_the_loop_is_still_checked():
    cell = (
        "!pip install torch \\\n    torchvision\n"  # a shell line continued with a backslash
        "files = !ls data\n"  # a shell command assigned
        "t = %timeit -o f()\n"  # a magic assigned
        "model?\n"  # help
        "torch.*Tensor?\n"  # help on every name a wildcard matches
        "%matplotlib inline\n" + LOOP
    )
    source, where, error = notebook_source(notebook(("code", HEADER), ("code", cell)).encode(), "n.ipynb")
    assert error is None
    compile(source, "n.ipynb", "exec")  # valid Python: nothing made the notebook unreadable
    cell_lines = source.splitlines()[len(HEADER.splitlines()):]
    assert cell_lines[:7] == ["pass", "", "pass", "pass", "pass", "pass", "pass"]


def test_a_cell_magic_blanks_only_its_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "n.ipynb", notebook(("code", "%%time\nx = (\n"), ("code", HEADER + "x = !ls \\\n  -l\n" + LOOP)))
    code, out, err = run_cli(capsys, "--no-cache", ".")
    assert code == 1 and "GL002" in out and "error" not in out


# --- --fix on notebooks (issue 14) -------------------------------------------------

FIXABLE_LOOP = "for x in range(10):\n    loss = model(x).sum()\n    %time y = 1\n    loss.backward()\n    opt.zero_grad()\n    opt.step()"


def indented_notebook(*cells):
    """As Jupyter writes it: indent=1, lists of lines, outputs and metadata we must keep."""
    data = {
        "cells": [
            {
                "cell_type": kind,
                "execution_count": 3,
                "id": f"c{i}",
                "metadata": {"tags": ["x"], "ü": "é"},
                "outputs": [{"name": "stdout", "output_type": "stream", "text": ["héllo\n"]}] if kind == "code" else [],
                "source": source.splitlines(keepends=True),
            }
            for i, (kind, source) in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def test_fix_rewrites_only_the_changed_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    original = indented_notebook(("markdown", "# T\n"), ("code", "!nvidia-smi\n" + HEADER), ("code", FIXABLE_LOOP))
    write(tmp_path, "nb.ipynb", original)
    code, out, err = run_cli(capsys, "--no-cache", "--fix", "--show-fixes", "nb.ipynb")
    assert code == 0, out + err
    assert "Fixed 1 problem" in err
    after = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    expected = json.loads(original)
    expected["cells"][2]["source"] = (
        "for x in range(10):\n    loss = model(x).sum()\n    %time y = 1\n    loss.backward()\n    opt.step()\n    opt.zero_grad()"
    ).splitlines(keepends=True)
    assert after == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"  # every other byte kept


def test_diff_on_a_notebook_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    original = indented_notebook(("code", HEADER), ("code", FIXABLE_LOOP))
    write(tmp_path, "nb.ipynb", original)
    code, out, err = run_cli(capsys, "--no-cache", "--diff", "nb.ipynb")
    assert code == 1
    assert '-    "    opt.zero_grad()\\n",' in out and '+    "    opt.zero_grad()"' in out
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == original


def test_an_indented_cell_is_its_own_code_not_the_rest_of_a_loop(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # Jupyter runs each cell alone (IPython dedents a cell indented as a whole): the
    # indented step in cell 3 is a top-level call, not the last line of cell 2's loop.
    original = indented_notebook(
        ("code", HEADER),
        ("code", "for x in range(10):\n    loss = model(x).sum()\n    loss.backward()\n    opt.zero_grad()\n"),
        ("code", "    opt.step()\n"),
    )
    write(tmp_path, "nb.ipynb", original)
    assert run_cli(capsys, "--no-cache", "--fix", "nb.ipynb")[0] == 0
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == original


def test_a_fix_never_spans_two_cells():
    from gradlint.core.findings import Edit, Fix, Span
    from gradlint.edit.fix_notebook import _Cells

    cells = _Cells("a = 1\nb = 2\n", [(1, 1), (2, 1)], ["a = 1", "b = 2"], [0, 1])
    within = Fix("move", (Edit(Span(1, 1, 1, 6), "a = 3"),))
    across = Fix("move", (Edit(Span(1, 1, 2, 6), "a = 3\nb = 4"),))
    assert cells.allowed(within) and not cells.allowed(across)


def test_json_and_sarif_carry_no_notebook_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "nb.ipynb", indented_notebook(("code", HEADER), ("code", FIXABLE_LOOP)))
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "json", "nb.ipynb")
    (finding,) = json.loads(out)["findings"]
    assert finding["code"] == "GL002" and finding["fix"] is None
    code, out, err = run_cli(capsys, "--no-cache", "--output-format", "sarif", "nb.ipynb")
    (result,) = json.loads(out)["runs"][0]["results"]
    assert "fixes" not in result


# --- a cell that is not Python (issue 19) ------------------------------------------

BUGGY_LOOP = "for x in range(10):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"  # GL001


def test_a_broken_cell_costs_that_cell_not_the_notebook(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "nb.ipynb", notebook(("code", HEADER), ("code", "SELECT * FROM runs;\n"), ("code", BUGGY_LOOP)))
    code, out, err = run_cli(capsys, "--no-cache", "nb.ipynb")
    assert code == 1, err
    errors = [line for line in out.splitlines() if "error:" in line]
    assert errors == ["nb.ipynb:cell 2:1:15: error: syntax error: invalid syntax; the other cells were checked"]
    assert any(line.startswith("nb.ipynb:cell 3:3:5: GL001") for line in out.splitlines())
    assert "Found 1 problem in 1 file (1 file checked, 1 notebook cell skipped for a syntax error)." in out


def test_a_cell_indented_as_a_whole_is_dedented(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    indented = "".join("    " + line if line else line for line in BUGGY_LOOP.splitlines(keepends=True))
    write(tmp_path, "nb.ipynb", notebook(("code", HEADER), ("code", "\n" + indented)))
    code, out, err = run_cli(capsys, "--no-cache", "nb.ipynb")
    assert code == 1 and "error" not in out, out
    assert "nb.ipynb:cell 2:4:9: GL001" in out  # the column in the cell as written, indented


def test_mixed_indentation_is_not_dedented():
    source, _, _ = notebook_source(notebook(("code", "    x = 1\n  y = 2\n")).encode(), "n.ipynb")
    assert source == "\n\n"  # not one prefix: the cell is broken and left out


def test_stdin_notebooks_name_their_cells(tmp_path, monkeypatch, capsys):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    data = notebook(("code", HEADER), ("code", BUGGY_LOOP)).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run_cli(capsys, "-", "--stdin-filename", "nb.ipynb")
    assert code == 1 and "nb.ipynb:cell 2:3:5: GL001" in out, out + err


def test_add_noqa_marks_each_finding_on_its_cell_line_and_the_rerun_is_clean(tmp_path, monkeypatch, capsys):
    """The adoption steps on a directory with a notebook: --add-noqa, then a clean rerun."""
    from ci_snippets import GL002_LOOP, snippet

    monkeypatch.chdir(tmp_path)
    original = indented_notebook(("markdown", "# T\n"), ("code", "!nvidia-smi\n" + HEADER), ("code", LOOP))
    write(tmp_path, "nb.ipynb", original)
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    code, out, _ = run_cli(capsys, "--no-cache", ".")
    assert code == 1 and "nb.ipynb:" in out
    code, out, err = run_cli(capsys, "--no-cache", "--add-noqa", ".")
    assert (code, out, err) == (0, "All checks passed! (2 files checked)\n", "Added 2 noqa directives to 2 files.\n")
    expected = json.loads(original)
    expected["cells"][2]["source"] = LOOP.replace("opt.zero_grad()\n", "opt.zero_grad()  # noqa: GL002\n").splitlines(keepends=True)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    assert run_cli(capsys, "--no-cache", ".") == (0, "All checks passed! (2 files checked)\n", "")
    assert run_cli(capsys, "--no-cache", "--add-noqa", ".") == (0, "All checks passed! (2 files checked)\n", "")  # nothing left to mark


def test_a_line_inside_an_open_statement_is_python_however_it_starts():
    cell = (
        "print('%d of %d'\n"
        "      % (1, 2))\n"  # `%` starts a line, but the bracket above is open
        "text = '''\n"
        "%not a magic, a string line\n"
        "'''\n"
        "total = 1 + \\\n"
        "    2\n"
        "%matplotlib inline\n"  # a statement starts here again: a magic
    )
    source, where, error = notebook_source(notebook(("code", cell)).encode(), "n.ipynb")
    assert error is None
    compile(source, "n.ipynb", "exec")
    lines = source.splitlines()
    assert lines[1] == "      % (1, 2))" and lines[3] == "%not a magic, a string line"
    assert lines[7] == "pass"


def test_a_notebook_too_deeply_nested_as_a_whole_has_that_one_error(tmp_path, monkeypatch, capsys):
    # a broken cell is skipped, then the joined cells are refused as too deep: the file was not
    # checked, so its one error is that refusal (not also the skipped cell's)
    monkeypatch.chdir(tmp_path)
    deep = "x = " + "-" * 1200 + "1\n"
    write(tmp_path, "nb.ipynb", notebook(("code", HEADER), ("code", "SELECT * FROM runs;\n"), ("code", deep)))
    code, out, err = run_cli(capsys, "--no-cache", "nb.ipynb")
    errors = [line for line in out.splitlines() if "error:" in line]
    assert len(errors) == 1 and "too deeply nested" in errors[0], out


AGENT = (
    "import torch\n\n\nclass Agent:\n    def __init__(self, net):\n        self.net = net\n"
    "        self.opt = torch.optim.Adam(net.parameters())\n\n    def learn(self, batch):\n"
    "        self.net(batch).sum().backward()\n        self.opt.step()\n"
)


def test_a_notebook_calling_an_agent_of_a_module_beside_it(tmp_path, monkeypatch, capsys):
    """Course code: the agent's update is in agent.py, the training loop in a notebook that
    imports it (`from agent import Agent`; `agent.learn(batch)`).  The notebook joins the
    project index as a caller, so the loop is modelled through the module's method, and the
    finding stands on the misplaced call in the module."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "agent.py", AGENT)
    nb = notebook(
        ("code", "import torch\nfrom agent import Agent\n"),
        ("code", "agent = Agent(torch.nn.Linear(2, 1))\nfor batch in [torch.randn(4, 2)] * 3:\n    agent.learn(batch)\n"),
    )
    write(tmp_path, "train.ipynb", nb)
    for paths in ([], ["train.ipynb", "agent.py"]):
        code, out, err = run_cli(capsys, ".", *paths) if not paths else run_cli(capsys, *paths)
        assert code == 1, err
        # the finding stands on the backward in agent.py; the notebook's call is named in its cell
        lines = [l for l in out.splitlines() if ": GL001" in l]
        assert [l.split(": GL")[0] for l in lines] == ["agent.py:10:9"], out
        assert lines[0].endswith("(train.ipynb cell 2, line 3)"), out
