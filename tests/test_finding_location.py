"""A finding stands on the misplaced call, in whatever module holds it: where the fix goes and
where a `# noqa` belongs.  The loop's call that leads there (in another file) is a related
location; one misplaced call gives one finding however many loops run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gradlint.options.settings import Settings
from tests.test_project import TRAIN, TRAINER, found, run, write

FILES = {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")}
CLIP_LINE = 16  # TRAINER's clip after its step
CALL_LINE = 7  # TRAIN's call of train_step in its loop

SECOND_LOOP = """\
import torch
from torch import nn
from trainer import Trainer


def finetune(model, batches):
    trainer = Trainer(model)
    for batch in batches:
        trainer.train_step(batch)
"""


def _noqa_at(text: str, line: int, comment: str = "  # noqa: GL004") -> str:
    lines = text.split("\n")
    lines[line - 1] += comment
    return "\n".join(lines)


def _cli(root, *args):
    return subprocess.run(
        [sys.executable, "-m", "gradlint", "--no-cache", *args], cwd=root, capture_output=True, text=True, timeout=120
    )


def test_two_loops_in_two_files_give_one_finding_with_both_calls(tmp_path):
    write(tmp_path, {**FILES, "finetune.py": SECOND_LOOP})
    result = run(tmp_path)
    assert found(result) == [("trainer.py", CLIP_LINE, "GL004")]
    (finding,) = result.findings()
    calls = sorted((r.path, r.span.line) for r in finding.related if r.path is not None)
    assert calls == [("finetune.py", 9), ("train.py", CALL_LINE)]


def test_noqa_on_the_misplaced_call_silences_it(tmp_path):
    write(tmp_path, {"trainer.py": _noqa_at(TRAINER, CLIP_LINE), "train.py": FILES["train.py"]})
    for named in ((), ("train.py",)):  # the folder, and a pre-commit run of train.py alone
        result = run(tmp_path, *named)
        assert found(result) == []
        assert [(f.path, f.line, f.code) for r in result.results for f in r.suppressed] == [("trainer.py", CLIP_LINE, "GL004")]


def test_noqa_on_the_loops_call_no_longer_silences_it(tmp_path):
    """The finding is not on that line: as in ruff, a noqa silences what is reported on its line."""
    write(tmp_path, {"trainer.py": TRAINER, "train.py": _noqa_at(FILES["train.py"], CALL_LINE)})
    assert found(run(tmp_path)) == [("trainer.py", CLIP_LINE, "GL004")]


def test_a_noqa_of_the_caller_on_the_same_line_number_does_not_silence_it(tmp_path):
    """Suppressions are read from the file that holds the finding, never by line number alone."""
    padded = FILES["train.py"] + "\n" * 10
    write(tmp_path, {"trainer.py": TRAINER, "train.py": _noqa_at(padded, CLIP_LINE, "  # noqa")})
    assert found(run(tmp_path, "train.py")) == [("trainer.py", CLIP_LINE, "GL004")]


def test_a_warm_cache_reads_the_noqa_added_since(tmp_path):
    write(tmp_path, FILES)
    cache = str(tmp_path / "cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", CLIP_LINE, "GL004")]
    (tmp_path / "trainer.py").write_text(_noqa_at(TRAINER, CLIP_LINE))
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == []
    (tmp_path / "trainer.py").write_text(TRAINER)
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == [("trainer.py", CLIP_LINE, "GL004")]


def test_the_noqa_that_silences_it_is_used(tmp_path):
    write(tmp_path, {"trainer.py": _noqa_at(TRAINER, CLIP_LINE), "train.py": FILES["train.py"]})
    proc = _cli(tmp_path, "--report-unused-noqa", ".")
    assert (proc.returncode, proc.stdout.startswith("All checks passed!")) == (0, True), proc.stdout


def test_add_noqa_marks_the_misplaced_call(tmp_path):
    write(tmp_path, FILES)
    proc = _cli(tmp_path, "--add-noqa", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "trainer.py").read_text().split("\n")[CLIP_LINE - 1].endswith("  # noqa: GL004")
    assert (tmp_path / "train.py").read_text() == FILES["train.py"]


def test_add_noqa_of_the_caller_alone_never_marks_its_own_line(tmp_path):
    """`--add-noqa train.py`: the finding is in trainer.py, which the run does not edit."""
    write(tmp_path, FILES)
    _cli(tmp_path, "--add-noqa", "train.py")
    assert (tmp_path / "train.py").read_text() == FILES["train.py"]
    assert (tmp_path / "trainer.py").read_text() == TRAINER


def test_fix_edits_no_other_line_for_it(tmp_path):
    """The check of train.py plans no edit for a call of trainer.py: --fix leaves both files."""
    write(tmp_path, FILES)
    proc = _cli(tmp_path, "--fix", "train.py")
    assert proc.returncode == 1 and f"trainer.py:{CLIP_LINE}:9: GL004" in proc.stdout
    assert (tmp_path / "train.py").read_text() == FILES["train.py"]
    assert (tmp_path / "trainer.py").read_text() == TRAINER


def test_fix_of_the_file_that_holds_the_call_moves_it(tmp_path):
    """trainer.py's `train_step` backpropagates and steps in its own body: its own check reads
    it (whoever calls it) and plans the move there; the caller's file is left alone."""
    write(tmp_path, FILES)
    proc = _cli(tmp_path, "--fix", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = (tmp_path / "trainer.py").read_text().split("\n")
    assert fixed[CLIP_LINE - 2].strip().startswith("nn.utils.clip_grad_norm_(") and fixed[CLIP_LINE - 1].strip() == "self.optimizer.step()"
    assert (tmp_path / "train.py").read_text() == FILES["train.py"]


def test_json_names_the_call_as_related(tmp_path):
    write(tmp_path, FILES)
    data = json.loads(_cli(tmp_path, "--output-format", "json", "train.py").stdout)
    (finding,) = data["findings"]
    assert (finding["path"], finding["line"]) == ("trainer.py", CLIP_LINE)
    assert ("train.py", CALL_LINE) in [(r["path"], r["line"]) for r in finding["related"]]
    assert data["files_checked"] == 1


def test_the_language_server_never_shows_another_files_finding_in_the_buffer(tmp_path):
    """train.py's buffer gets no diagnostic at trainer.py's line; the check keeps it for trainer.py."""
    from gradlint.lsp.documents import check_document
    from gradlint.run import project_run

    write(tmp_path, FILES)
    paths = {name: str(tmp_path / name) for name in FILES}
    texts = [(paths[n], FILES[n], n, None) for n in FILES]
    index, views = project_run.index_files(texts, [str(tmp_path)])
    project_run.install(index, views)
    try:
        project = project_run.project_for(paths["train.py"])
        check = check_document(FILES["train.py"], paths["train.py"], "file:///train.py", Settings.default(), project=project)
    finally:
        project_run.install(None, {})
    assert check.diagnostics == []
    assert [(os.path.basename(f.path), f.line, f.code) for f in check.elsewhere] == [("trainer.py", CLIP_LINE, "GL004")]


# --- a helper of the loop's own file --------------------------------------------------------

SAME_FILE = {
    # fixture: (the misplaced call's line, the lines of the loops' calls of its helper)
    "fixtures/gl004/wrong_clip_in_step_helper_of_two_loops.py": (17, [21, 24]),
    "fixtures/gl008/wrong_epoch_function_schedules_first.py": (14, [22]),
    "fixtures/gl002/wrong_update_helper_clears_after_backward.py": (14, [19]),
}


def test_a_helper_of_the_same_file_names_the_loops_calls():
    """One finding on the helper's misplaced call, whatever number of loops run it, with each
    loop's call of the helper as a related location (and the fix on the helper's lines)."""
    from pathlib import Path

    from gradlint.check.engine import check_source

    root = Path(__file__).resolve().parent.parent
    for name, (line, calls) in SAME_FILE.items():
        result = check_source((root / name).read_text(encoding="utf-8"), name, Settings.default())
        (finding,) = result.findings
        assert finding.line == line, name
        called = [r.span.line for r in finding.related if r.message.startswith("the call of ")]
        assert called == calls, name
        assert finding.fix is not None and all(e.span.line >= line - 4 for e in finding.fix.edits), name


def test_a_notebooks_loop_gives_the_finding_to_the_module_with_its_cell_related(tmp_path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# train"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["import torch\n", "from torch import nn\n", "from trainer import Trainer\n", "trainer = Trainer(nn.Linear(4, 1))"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["for batch in [(torch.randn(8, 4), torch.randn(8, 1))] * 3:\n", "    trainer.train_step(batch)"]},
    ]
    notebook = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    write(tmp_path, {"trainer.py": TRAINER, "train.ipynb": notebook})
    data = json.loads(_cli(tmp_path, "--output-format", "json", ".").stdout)
    (finding,) = data["findings"]
    assert (finding["path"], finding["line"], finding["cell"]) == ("trainer.py", CLIP_LINE, None)
    call = next(r for r in finding["related"] if r["path"] == "train.ipynb")
    assert (call["cell"], call["line"]) == (3, 2)  # the loop's call: its cell, its line there
    assert finding["message"].endswith("(train.ipynb cell 3, line 2)")


def test_a_rules_message_names_each_place_for_the_file_the_finding_stands_in():
    from gradlint.model.event import Event
    from gradlint.core.findings import Span
    from gradlint.rules.base import at, worded

    step = Event("S", Span(15, 9, 15, 30), "self.optimizer.step()", path="trainer.py")
    backward = Event("B", Span(7, 5, 7, 20), "loss.backward()")  # the checked file's own
    message = f"clip after {at(step)}, scaled by {at(backward)}"
    assert worded(message, "train.py", "trainer.py") == (
        "clip after self.optimizer.step() (line 15), scaled by loss.backward() (train.py line 7)"
    )
    assert worded(message, "train.py", "train.py") == (
        "clip after self.optimizer.step() (trainer.py line 15), scaled by loss.backward() (line 7)"
    )
    assert worded("no place here", "a.py", "b.py") == "no place here"
    cut = at(step)[:-2]  # a mark without its end is left as it is, never looped over
    assert worded(cut, "train.py", "trainer.py") == cut
