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


def test_checkout_finds_a_bare_snapshot_or_a_work_tree_one(tmp_path):
    bare = tmp_path / "a+bare" / "repo"
    bare.mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    tree = tmp_path / "b+tree" / "repo" / ".git"
    tree.mkdir(parents=True)
    (tree / "HEAD").write_text("ref: refs/heads/main\n")
    assert checkout.git_dir_of(tmp_path, "a/bare") == bare
    assert checkout.git_dir_of(tmp_path, "b/tree") == tree
    assert checkout.git_dir_of(tmp_path, "c/absent") is None


def test_study_names_the_file_that_hangs_and_keeps_the_rest(tmp_path, monkeypatch):
    import study

    (tmp_path / "fast.py").write_text("x = 1\n")
    (tmp_path / "slow.py").write_text("x = 2\n")
    finding = {"path": str(tmp_path / "fast.py"), "line": 1, "code": "GL001", "message": "m"}

    def fake_run(paths, timeout):
        if paths == [str(tmp_path)] or paths == [str(tmp_path / "slow.py")]:
            raise study.Hang("no result")
        return {"findings": [finding], "errors": [], "files_checked": 1}

    monkeypatch.setattr(study, "run_gradlint", fake_run)
    monkeypatch.setattr(study, "count_loops", lambda folder, timeout: (0, []))
    result = study.study_repo(tmp_path, timeout=1)
    assert result["hangs"] == ["slow.py"]
    assert [(f["path"], f["code"]) for f in result["findings"]] == [("fast.py", "GL001")]
    assert result["crash"] is None


def test_study_reports_a_crash_instead_of_stopping(tmp_path, monkeypatch):
    import study

    (tmp_path / "a.py").write_text("x = 1\n")

    def failing(paths, timeout):
        raise RuntimeError("gradlint failed (2): boom")

    monkeypatch.setattr(study, "run_gradlint", failing)
    monkeypatch.setattr(study, "count_loops", lambda folder, timeout: (0, []))
    result = study.study_repo(tmp_path, timeout=1)
    assert result["crash"] == "gradlint failed (2): boom"
    assert result["findings"] == [] and result["hangs"] == []


def test_verdicts_are_read_by_repository_path_line_and_code(tmp_path):
    import study

    table = tmp_path / "verdicts.tsv"
    table.write_text("# comment\no/n\tsrc/t.py\t12\tGL002\treal bug\tclear between backward and step\n")
    assert study.read_verdicts(table) == {("o/n", "src/t.py", 12, "GL002"): ("real bug", "clear between backward and step")}


def test_the_dump_shows_a_loop_that_calls_a_training_step_of_another_module(tmp_path, capsys):
    """The command indexes its folders as a project, as a run does: a loop whose step is a
    method of another module is printed (it was left out, so the study's list of silent loops
    missed every one of them)."""
    from gradlint.run import project_run

    (tmp_path / "agent.py").write_text(
        "import torch\n\n\nclass Agent:\n    def __init__(self, net):\n        self.net = net\n"
        "        self.opt = torch.optim.Adam(net.parameters())\n\n    def update(self, x):\n"
        "        self.opt.zero_grad()\n        self.net(x).sum().backward()\n        self.opt.step()\n"
    )
    (tmp_path / "main.py").write_text(
        "import torch\nfrom agent import Agent\n\nagent = Agent(torch.nn.Linear(2, 1))\n"
        "for x in [torch.randn(4, 2)] * 3:\n    agent.update(x)\n"
    )
    try:
        assert dump_loops.main([str(tmp_path)]) == 0
    finally:
        project_run.install(None, {})
    out = capsys.readouterr().out
    assert f"{tmp_path / 'main.py'}:5: for loop: Z B S" in out
