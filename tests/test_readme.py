"""The README matches the code: rule documentation (editors link to it), and
every command line and CI recipe it shows is accepted by the real parser."""

import shlex
from pathlib import Path

import pytest
import yaml

import gradlint
from ci_snippets import gradlint_argv, readme_blocks, validate_gradlint_argv
from gradlint.cli import UsageError, check_parser
from gradlint.rules.registry import all_rules

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_rule_has_a_section_its_docs_url_points_to():
    for rule in all_rules():
        assert f"\n### {rule.code} {rule.name}\n" in README, rule.code
        anchor = rule.docs_url.rsplit("#", 1)[1]
        assert anchor == f"{rule.code.lower()}-{rule.name}"
        assert f"(#{anchor})" in README


def test_rules_table_states_defaults():
    for rule in all_rules():
        row = next(line for line in README.splitlines() if line.startswith(f"| [{rule.code}]"))
        assert f"| {'on' if rule.default else 'off'} |" in row


# --- CI recipes and command lines that work as written ----------------------------------

ROOT = Path(__file__).resolve().parent.parent


def workflows() -> list[dict]:
    return [doc for doc in map(yaml.safe_load, readme_blocks("yaml")) if isinstance(doc, dict) and "jobs" in doc]


def steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def readme_command_lines() -> list[str]:
    """Every `gradlint ...` line of the README's shell blocks and workflow `run:` steps."""
    lines = [line for block in readme_blocks("sh") for line in block.splitlines()]
    for workflow in workflows():
        lines += [line for step in steps(workflow) if "run" in step for line in step["run"].splitlines()]
    return [line for line in lines if gradlint_argv(line) is not None]


def test_every_yaml_block_parses():
    blocks = readme_blocks("yaml")
    assert len(blocks) >= 4
    for block in blocks:
        yaml.safe_load(block)


def test_github_actions_recipe():
    """checkout, setup-python, install from the registry, then annotations from --output-format github."""
    (annotations,) = [w for w in workflows() if any("github" in s.get("run", "") for s in steps(w))]
    uses = [s.get("uses", "") for s in steps(annotations)]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    runs = [s["run"] for s in steps(annotations) if "run" in s]
    assert runs[0] == "pip install torch-gradlint"
    argv = gradlint_argv(runs[1])
    assert argv[:2] == ["--output-format", "github"]
    validate_gradlint_argv(argv)


def test_sarif_upload_recipe():
    (sarif,) = [w for w in workflows() if any("upload-sarif" in s.get("uses", "") for s in steps(w))]
    job = next(iter(sarif["jobs"].values()))
    assert job["permissions"]["security-events"] == "write"
    runs = [gradlint_argv(s["run"]) for s in steps(sarif) if "run" in s and gradlint_argv(s["run"])]
    (argv,) = runs
    validate_gradlint_argv(argv)
    parsed = check_parser().parse_args(argv)
    assert parsed.output_format == "sarif" and parsed.exit_zero
    upload = next(s for s in steps(sarif) if "upload-sarif" in s.get("uses", ""))
    assert upload["with"]["sarif_file"] == parsed.output_file


@pytest.mark.parametrize("line", readme_command_lines())
def test_readme_command_line_is_valid(line):
    validate_gradlint_argv(gradlint_argv(line))


@pytest.mark.parametrize(
    "line",
    ["gradlint --format github src/", "gradlint --output-format gh src/", "gradlint --select GL999 src/", "gradlint explain GL0"],
)
def test_a_wrong_command_line_is_caught(line):
    with pytest.raises(UsageError):
        validate_gradlint_argv(gradlint_argv(line))


def test_pre_commit_snippet_pins_the_current_version():
    config = next(doc for doc in map(yaml.safe_load, readme_blocks("yaml")) if isinstance(doc, dict) and "repos" in doc)
    (repo,) = config["repos"]
    assert repo["rev"] == f"v{gradlint.__version__}"
    hook_ids = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {hook["id"] for hook in repo["hooks"]} <= hook_ids


def test_pre_commit_hook_entries_are_valid_command_lines():
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        words = shlex.split(hook["entry"]) + list(hook.get("args", []))
        assert words[0] == "gradlint"
        if words[1] == "verify":
            words.append("train.py")  # pass_filenames is false: the user names the script in args
        else:
            words.append("a.py")  # pre-commit appends the file names
        validate_gradlint_argv(words[1:])


def test_fix_table_lists_every_rule_with_a_fix():
    rows = {line.split("|")[1].strip(): line for line in README.splitlines() if line.startswith("| GL")}
    for rule in all_rules():
        if rule.fix:
            assert rule.code in rows, rule.code
            safety = rows[rule.code].rsplit("|", 2)[1]
            assert safety.strip().startswith("unsafe") == rule.fix.startswith("Unsafe"), rule.code
        else:
            assert rule.code not in rows, rule.code
