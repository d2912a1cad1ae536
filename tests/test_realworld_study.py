"""The real-code study's scripts (benchmarks/realworld/) keep working as the model changes.

They read gradlint's loop model directly, so a change of the model API shows
up here first, not in the middle of a study run.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "realworld"))

import checkout  # noqa: E402
import dump_loops  # noqa: E402
import break_silent_loops as mutate  # noqa: E402  (not `mutate`: benchmarks/mutants has one)

CLEAN = """\
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 1)
for x in [torch.randn(2, 3)]:
    opt.zero_grad()
    model(x).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
"""


def test_dump_lists_each_event_with_its_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(CLEAN)
    [loop] = dump_loops.loops_of(str(script))
    assert loop["line"] == 5
    assert loop["sequence"] == "Z B C S L"
    assert [(e["kind"], e["line"]) for e in loop["events"]] == [("Z", 6), ("B", 7), ("C", 8), ("S", 9), ("L", 10)]
    assert loop["tree"][0].strip().startswith("Z L6 opt.zero_grad()")


def test_dump_is_empty_for_a_file_without_training_loops(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("for i in range(3):\n    print(i)\n")
    assert dump_loops.loops_of(str(script)) == []


def test_every_mutant_of_a_clean_loop_is_caught(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(CLEAN)
    results = {name: hit for name, _line, hit in mutate.mutants(str(script))}
    assert set(results) == {"no-clear", "clear-before-step", "clip-after-step",
                            "schedule-before-step", "step-first", "clip-before-backward"}
    assert all(results.values()), results


def test_a_mutant_moves_the_line_with_its_new_indentation():
    source = "for x in xs:\n    if x:\n        b()\n    s()\n    c()\n"
    moved = mutate.edit(source, {5}, {5: ["    c()"]})
    assert moved == "for x in xs:\n    if x:\n        b()\n    s()\n    c()\n    pass\n"
    assert mutate.edit(source, {3}, {}) == "for x in xs:\n    if x:\n        pass\n    s()\n    c()\n"


def test_repo_list_pins_a_commit_for_each_repository():
    pairs = checkout.read_repo_list(ROOT / "benchmarks" / "realworld" / "repos.txt")
    assert len(pairs) >= 40
    assert all(len(commit) == 40 and "/" in name for name, commit in pairs)
