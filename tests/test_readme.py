"""The README and the docs pages match the code: the rule table and each
rule's page (findings and editors link to it), the Quick start, every command
line and CI recipe they show (accepted by the real parser), the pre-commit
snippet's `rev`, and the fix table."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import gradlint
from ci_snippets import gradlint_argv, readme_blocks, run_cli, validate_gradlint_argv
from gradlint.commands.cli import UsageError, check_parser
from gradlint.report.meta import all_infos
from gradlint.rules.registry import all_rules

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def section(text: str, heading: str) -> str:
    """The body of a `## heading` section, up to the next `## `."""
    return text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


# --- the README's shape ---------------------------------------------------------------------


def test_readme_is_short_and_has_the_users_sections():
    assert len(README.splitlines()) <= 400
    headings = re.findall(r"^## (.+)$", README, re.M)
    for wanted in ("Install", "Quick start", "Usage", "Rules", "pre-commit", "CI", "Editors"):
        assert wanted in headings, wanted
    assert any(heading.startswith("verify") for heading in headings)
    # one wrong and one right example, before any section
    intro = README.split("\n## ", 1)[0]
    assert "Wrong" in intro and "Right" in intro and intro.count("```python") == 2


def test_readme_example_output_is_what_gradlint_prints(capsys, monkeypatch):
    """The intro's `$ gradlint fixtures/...` block, run from the checkout's root."""
    intro = README.split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", intro, re.S | re.M)
    (block,) = [block for language, block in blocks if block.startswith("$ gradlint ") and not language]
    command, *expected = block.splitlines()
    argv = shlex.split(command)[2:]
    monkeypatch.chdir(ROOT)
    code, out, _ = run_cli(capsys, "--no-cache", "--isolated", *argv)
    assert code == 1 and out.splitlines() == expected
    wrong = next(block for language, block in blocks if language == "python")
    checked = re.sub(r"  # expect: GL\d+", "", (ROOT / argv[-1]).read_text())
    assert wrong in checked  # the loop shown is the one checked


def test_readme_says_the_repository_url_is_a_placeholder():
    install = section(README, "Install")
    assert gradlint.REPOSITORY_URL in install and "placeholder" in install


# --- each rule's page -------------------------------------------------------------------------


@pytest.mark.parametrize("meta", all_infos(), ids=lambda meta: meta.code)
def test_every_url_in_output_is_a_page_of_docs(meta):
    """json's `url`, SARIF's helpUri and the editors' links: DOCS_URL + a page that exists."""
    assert meta.docs_url.startswith(gradlint.DOCS_URL)
    page = meta.docs_url[len(gradlint.DOCS_URL):]
    assert page == f"rules/{meta.code}.md"
    assert (DOCS / page).is_file()


def test_rules_table_links_each_page_and_states_defaults():
    for rule in all_rules():
        row = next(line for line in README.splitlines() if line.startswith(f"| [{rule.code}]"))
        assert row.startswith(f"| [{rule.code}](docs/rules/{rule.code}.md) | {rule.name} |")
        assert f"| {'on' if rule.default else 'off'} |" in row


# --- Quick start ------------------------------------------------------------------------------


def quick_start_commands() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", section(README, "Quick start"), re.S)


def test_quick_start_is_two_commands_for_a_fresh_shell():
    setup, tests = quick_start_commands()
    steps = [step.strip() for step in setup.split("&&")]
    assert steps[0] == "python3 -m venv .venv"
    # nothing activated by hand: every later step calls the venv's own executables
    assert all(step.startswith(".venv/bin/") for step in steps[1:]) and "activate" not in setup + tests
    assert shlex.split(steps[1])[:2] == [".venv/bin/pip", "install"]  # torch before the project: pip keeps it
    assert shlex.split(steps[2]) == [".venv/bin/pip", "install", "-e", ".[dev,verify]"]
    assert tests.startswith(".venv/bin/nox -s ")


def _noxfile():
    import importlib.util

    spec = importlib.util.spec_from_file_location("noxfile_for_test", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_start_installs_the_cpu_build_of_torch_and_nox_the_same():
    """Never PyPI's default (CUDA, several GB on Linux): torch alone from PyTorch's CPU wheel
    index (here /opt/wheels' local file answers first), and nox's 3.11 session installs
    exactly that requirement, which pip's cache serves (issue 30, item 6)."""
    nox_module = _noxfile()
    setup, _ = quick_start_commands()
    torch_step = shlex.split(setup.split("&&")[1])
    assert torch_step == [".venv/bin/pip", "install", *nox_module.TORCH_INSTALL]
    words = nox_module.TORCH_INSTALL
    assert words[words.index("--index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    assert "--no-deps" in words  # its dependencies come from PyPI with the project: one index to wait for

    class Session:
        python = nox_module.TORCH_PYTHON
        installs: list = []

        def install(self, *args):
            self.installs.append(list(args))

    session = Session()
    nox_module._install(session, with_torch=True)
    assert session.installs[0] == words
    assert not any(arg.startswith("torch") for call in session.installs[1:] for arg in call)


def test_quick_start_checks_correct_code(capsys):
    """The first command ends by checking a folder of correct fixtures: exit 0, as the README says."""
    setup, _ = quick_start_commands()
    words = shlex.split(setup.split("&&")[-1])
    assert words[0] == ".venv/bin/gradlint"
    (folder,) = words[1:]
    assert (ROOT / folder).is_dir() and len(list((ROOT / folder).glob("*.py"))) >= 10
    code, out, err = run_cli(capsys, "--no-cache", "--isolated", str(ROOT / folder))
    checked = len(list((ROOT / folder).glob("*.py")))
    lines = out.splitlines()
    if len(lines) == 2 and re.fullmatch(r"\d+ gradient calls? (were|was) not followed \(--show-unfollowed lists them\)", lines[1]):
        lines.pop()  # correct code the analysis is blind to: a note, no finding
    assert (code, lines, err) == (0, [f"All checks passed! ({checked} files checked)"], "")
    assert "All checks passed! (N files checked)" in section(README, "Quick start")
    assert "exits 0" in section(README, "Quick start")


def test_quick_start_nox_session_exists():
    _, tests = quick_start_commands()
    session = shlex.split(tests)[-1]
    if not (ROOT / "noxfile.py").exists():
        pytest.skip("noxfile.py is not in this checkout yet (branch i20-pythons adds it)")
    listed = subprocess.run(
        [sys.executable, "-m", "nox", "--list", "--noxfile", str(ROOT / "noxfile.py")],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert listed.returncode == 0, listed.stderr
    assert re.search(rf"^[*-] {re.escape(session)}\b", listed.stdout, re.M), listed.stdout


# --- CI recipes and command lines that work as written ----------------------------------


def workflows() -> list[dict]:
    return [doc for doc in map(yaml.safe_load, readme_blocks("yaml")) if isinstance(doc, dict) and "jobs" in doc]


def steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def readme_command_lines() -> list[str]:
    """Every `gradlint ...` line of the README's and the docs' shell blocks and workflow `run:` steps."""
    lines = [line for block in readme_blocks("sh") for line in block.splitlines()]
    for workflow in workflows():
        lines += [line for step in steps(workflow) if "run" in step for line in step["run"].splitlines()]
    return [line for line in lines if gradlint_argv(line) is not None]


def test_every_yaml_block_parses():
    blocks = readme_blocks("yaml")
    assert len(blocks) >= 4
    for block in blocks:
        yaml.safe_load(block)


def installs_gradlint(run: str) -> bool:
    """`pip install` of torch-gradlint from its git URL (until the first release)."""
    return shlex.split(run) == ["pip", "install", f"torch-gradlint @ git+{gradlint.REPOSITORY_URL}"]


def test_github_actions_recipe():
    """checkout, setup-python, install, then annotations from --output-format github."""
    (annotations,) = [w for w in workflows() if any("--output-format github" in s.get("run", "") for s in steps(w))]
    uses = [s.get("uses", "") for s in steps(annotations)]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    runs = [s["run"] for s in steps(annotations) if "run" in s]
    assert installs_gradlint(runs[0])
    argv = gradlint_argv(runs[1])
    assert argv[:2] == ["--output-format", "github"]
    validate_gradlint_argv(argv)
    assert "--output-format github" in section(README, "CI")  # the README shows it; docs/ci.md the rest


def test_sarif_upload_recipe():
    (sarif,) = [w for w in workflows() if any("upload-sarif" in s.get("uses", "") for s in steps(w))]
    job = next(iter(sarif["jobs"].values()))
    assert job["permissions"]["security-events"] == "write"
    assert installs_gradlint(next(s["run"] for s in steps(sarif) if "run" in s))
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
    ["gradlint --fromat github src/", "gradlint --output-format gh src/", "gradlint --select GL999 src/", "gradlint explain GL0"],
)
def test_a_wrong_command_line_is_caught(line):
    with pytest.raises(UsageError):
        validate_gradlint_argv(gradlint_argv(line))


# --- pre-commit -------------------------------------------------------------------------------


def pre_commit_snippets() -> list[dict]:
    """The `.pre-commit-config.yaml` snippets of the README's pre-commit section: the one that
    works today (`repo: local`, the user's clone) and the one for after the first release."""
    blocks = re.findall(r"```yaml\n(.*?)```", section(README, "pre-commit"), re.S)
    return [doc for doc in map(yaml.safe_load, blocks) if isinstance(doc, dict) and "repos" in doc]


CLONE = "/path/to/gradlint"  # what the snippet that works today says instead of the clone's path


def published_hooks() -> dict:
    return {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_pre_commit_snippet_of_today_is_the_published_hook_on_a_clone():
    """No public address and no tag exist before the first release: the first snippet is a
    `repo: local` hook, the published `gradlint` hook's own definition, installing the
    user's clone (issue 30, item 5).  tests/test_precommit.py runs it with real pre-commit."""
    today, _ = pre_commit_snippets()
    (repo,) = today["repos"]
    assert repo["repo"] == "local" and "rev" not in repo
    (hook,) = repo["hooks"]
    published = published_hooks()[hook["id"]]
    for key in ("name", "entry", "language", "types_or", "require_serial", "minimum_pre_commit_version"):
        assert hook[key] == published[key], key
    assert hook["additional_dependencies"] == [CLONE]
    text = section(README, "pre-commit")
    assert "pre-commit clean" in text  # how a clone's new commits reach the hook


def test_pre_commit_snippet_after_the_release_pins_the_version_tag():
    _, released = pre_commit_snippets()
    (repo,) = released["repos"]
    assert repo["repo"] == gradlint.REPOSITORY_URL
    assert repo["rev"] == f"v{gradlint.__version__}"  # tags are `v` + the version
    assert {hook["id"] for hook in repo["hooks"]} <= set(published_hooks())


def git(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))


@pytest.mark.skipif(shutil.which("git") is None or not os.path.exists(PRE_COMMIT), reason="needs git and pre-commit")
def test_pre_commit_autoupdate_line_moves_the_release_pin_to_the_newest_tag(tmp_path):
    """The README's `pre-commit autoupdate` turns the release snippet's tag into the newest
    tag of the hook repository (here a throwaway repository holding the hooks file)."""
    (line,) = [line for line in re.findall(r"^pre-commit autoupdate.*$", section(README, "pre-commit"), re.M)]
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    shutil.copy(ROOT / ".pre-commit-hooks.yaml", hooks)
    identity = ["-c", "user.email=test@example.com", "-c", "user.name=test", "-c", "commit.gpgsign=false"]
    commit = [*identity, "commit", "-q", "--allow-empty", "-m", "hooks"]
    steps = (["init", "-q"], ["add", "."], commit, ["tag", f"v{gradlint.__version__}"], commit, ["tag", "v99.0.0"])
    for args in steps:
        assert git(*args, cwd=hooks).returncode == 0
    project = tmp_path / "project"
    project.mkdir()
    assert git("init", "-q", cwd=project).returncode == 0
    _, released = pre_commit_snippets()
    released["repos"][0]["repo"] = str(hooks)
    config = project / ".pre-commit-config.yaml"
    config.write_text(yaml.safe_dump(released))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [PRE_COMMIT, *shlex.split(line, comments=True)[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (repo,) = yaml.safe_load(config.read_text())["repos"]
    assert repo["rev"] == "v99.0.0"


def test_pre_commit_hook_entries_are_valid_command_lines():
    for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()):
        words = shlex.split(hook["entry"]) + list(hook.get("args", []))
        assert words[0] == "gradlint"
        if words[1] == "verify":
            words.append("train.py")  # pass_filenames is false: the user names the script in args
        else:
            words.append("a.py")  # pre-commit appends the file names
        validate_gradlint_argv(words[1:])


# --- the fix table (docs/fixes.md) and the package metadata ----------------------------------


def test_fix_table_lists_every_rule_with_a_fix():
    fixes = (DOCS / "fixes.md").read_text()
    rows = {line.split("|")[1].strip(): line for line in fixes.splitlines() if line.startswith("| GL")}
    assert rows
    for rule in all_rules():
        if rule.fix:
            assert rule.code in rows, rule.code
            safety = rows[rule.code].rsplit("|", 2)[1]
            assert safety.strip().startswith("unsafe") == rule.fix.startswith("Unsafe"), rule.code
        else:
            assert rule.code not in rows, rule.code


def test_project_urls_derive_from_the_one_repository_url():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    urls = {name.lower(): url for name, url in project["urls"].items()}
    assert {"homepage", "documentation", "changelog", "issues"} <= set(urls)
    assert all(url.startswith(gradlint.REPOSITORY_URL) for url in urls.values()), urls
    assert urls["documentation"].startswith(gradlint.DOCS_URL)
    assert urls["changelog"].endswith("/CHANGELOG.md")
