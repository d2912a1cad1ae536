"""An .ipynb named explicitly (as pre-commit's `jupyter` type passes it): its code cells are checked."""

import json

from ci_snippets import HEADER, run_cli, write
from gradlint.notebook import notebook_source


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
    # joined code-cell lines: cell 1 has 5 lines, cell 2 has 2, so cell 3 line 5 is line 12
    (line,) = [l for l in out.splitlines() if "GL002" in l]
    assert line.startswith("train.ipynb:12:5: GL002 opt.zero_grad() discards")
    assert line.endswith("[cell 3, line 5]")


def test_noqa_in_a_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "n.ipynb", notebook(("code", HEADER), ("code", LOOP.replace("zero_grad()\n", "zero_grad()  # noqa: GL002\n"))))
    assert run_cli(capsys, "n.ipynb") == (0, "", "")


def test_directories_do_not_pick_up_notebooks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "n.ipynb", notebook(("code", HEADER + LOOP)))
    assert run_cli(capsys, ".") == (0, "", "")


def test_broken_notebook_is_a_file_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "bad.ipynb", "{not json")
    write(tmp_path, "syntax.ipynb", notebook(("code", "x = 1\n"), ("code", "for x in :\n    pass\n")))
    code, out, err = run_cli(capsys, "bad.ipynb", "syntax.ipynb")
    assert code == 1 and "Traceback" not in err
    assert "error: bad.ipynb: not a Jupyter notebook (invalid JSON" in out
    assert "syntax.ipynb:" in out and "[cell 2, line" in out


def test_magics_keep_the_source_valid():
    source, where, error = notebook_source(notebook(("code", "if True:\n    %matplotlib inline\n")).encode(), "n.ipynb")
    assert error is None and source == "if True:\n    pass\n" and where == [(1, 1), (1, 2)]
