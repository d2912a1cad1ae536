"""docs/ stays true and navigable: the rule pages are what
scripts/gen_rule_docs.py writes from the rules' metadata (as ruff checks its
generated rule docs), every relative link of the README and of docs/
resolves (file and #anchor), and docs/index.md lists every page."""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

import pytest

from gradlint.rules.registry import all_rules, rules_by_code

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_rule_docs", ROOT / "scripts" / "gen_rule_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- generated rule pages ------------------------------------------------------------------


def test_rule_pages_are_current():
    """Run `python scripts/gen_rule_docs.py` after changing a rule's metadata or samples."""
    assert load_generator().stale_pages() == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_a_rule_page_shows_the_rules_own_text_and_samples(rule):
    page = (DOCS / "rules" / f"{rule.code}.md").read_text()
    assert page.splitlines()[2] == f"# {rule.code} {rule.name}"
    for text in (rule.summary, rule.rationale, rule.wrong.strip(), rule.right.strip(), rule.fix, rule.limits):
        assert text in page
    for sample in rule.samples:
        assert sample.strip("\n") in page


def test_a_changed_rule_makes_its_page_stale(monkeypatch):
    generator = load_generator()
    rule = all_rules()[0]
    changed = type(rule)(**{**rule.__dict__, "rationale": rule.rationale + " Changed."})
    monkeypatch.setattr(generator, "all_rules", lambda: (changed,) + all_rules()[1:])
    assert generator.stale_pages() == [f"{rule.code}.md"]


def test_gl101_page_says_it_is_silent_with_several_optimizers():
    page = (DOCS / "rules" / "GL101.md").read_text()
    what_it_leaves = page.split("## What it leaves alone\n", 1)[1].split("\n## ", 1)[0]
    assert "exactly one optimizer" in what_it_leaves and "several" in what_it_leaves
    assert rules_by_code()["GL101"].limits.strip() in what_it_leaves


# --- links ---------------------------------------------------------------------------------


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md"] + sorted(DOCS.rglob("*.md"))


def without_fences(text: str) -> str:
    """The Markdown outside fenced code blocks."""
    return re.sub(r"^ {0,3}```.*?^ {0,3}```", "", text, flags=re.S | re.M)


def without_code(text: str) -> str:
    """The Markdown outside fenced code blocks and inline code (links there are not links)."""
    return re.sub(r"`[^`\n]*`", "", without_fences(text))


def links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", without_code(path.read_text()))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset:
    headings = re.findall(r"^#{1,6} (.+)$", without_fences(path.read_text()), re.M)
    return frozenset(slug(heading) for heading in headings)


def relative_links() -> list[tuple[Path, str]]:
    return [(path, target) for path in pages() for target in links(path) if not re.match(r"[a-z]+:", target)]


def test_there_are_relative_links_to_check():
    targets = {target for _, target in relative_links()}
    assert "docs/rules/GL001.md" in targets and "../README.md#pre-commit" in targets


@pytest.mark.parametrize("path, target", relative_links(), ids=lambda value: str(value).replace(str(ROOT), ""))
def test_relative_link_resolves(path, target):
    file_part, _, anchor = target.partition("#")
    resolved = (path.parent / file_part).resolve() if file_part else path
    assert resolved.exists(), f"{path.relative_to(ROOT)}: no file {file_part}"
    if anchor:
        assert resolved.suffix == ".md", f"{path.relative_to(ROOT)}: an anchor into {file_part}"
        assert anchor in anchors(resolved), f"{path.relative_to(ROOT)}: no heading #{anchor} in {resolved.name}"


def test_slug_is_githubs():
    assert slug("verify: proving a finding at run time") == "verify-proving-a-finding-at-run-time"
    assert slug("Emacs (eglot)") == "emacs-eglot"
    assert slug("The `gradlint-verify` hook") == "the-gradlint-verify-hook"


def test_a_broken_link_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [no anchor](#nowhere)\n```\n[in code](x.md)\n```\n")
    assert links(page) == ["#title", "missing.md", "#nowhere"]
    assert "nowhere" not in anchors(page) and "title" in anchors(page)


# --- the index -----------------------------------------------------------------------------


def test_index_lists_every_page():
    listed = {(DOCS / target.split("#")[0]).resolve() for target in links(DOCS / "index.md") if "://" not in target}
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "index.md":
            assert page.resolve() in listed, f"docs/index.md does not link {page.name}"
    assert (DOCS / "rules" / "index.md").resolve() in listed


# --- tables --------------------------------------------------------------------------------


def table_rows(path: Path) -> list[list[int]]:
    """The cell count of every row, for each Markdown table of the page (`\\|` is a pipe inside a cell)."""
    tables, current = [], []
    for line in without_fences(path.read_text()).splitlines() + [""]:
        if line.startswith("|"):
            current.append(len(re.split(r"(?<!\\)\|", line.strip())[1:-1]))
        elif current:
            tables.append(current)
            current = []
    return tables


@pytest.mark.parametrize("path", pages(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_table_row_has_the_headers_cells(path):
    for counts in table_rows(path):
        assert len(counts) >= 3 and len(set(counts)) == 1, f"{path.name}: a table with rows of {counts} cells"


def test_the_local_verify_hook_is_the_published_one():
    """docs/pre-commit.md's `repo: local` gradlint-verify hook (until the first release) says
    what .pre-commit-hooks.yaml says."""
    import yaml

    page = (ROOT / "docs" / "pre-commit.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", page, re.S)]
    (local,) = [hook for block in blocks if isinstance(block, list) for hook in block if "entry" in hook]
    published = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    for key, value in published[local["id"]].items():
        if key not in ("description", "minimum_pre_commit_version"):
            assert local[key] == value, key


# --- docs/ is for users: how the project is developed lives in docs/development.md (issue 30) ---

_DEVELOPMENT_WORDS = [
    (re.compile(r"\bissues? \d", re.I), "an internal issue number"),
    (re.compile(r"\bthis machine\b|\b(?:tested|measured|not tested) here\b", re.I), "the developers' machine"),
    (re.compile(r"\b[\d,]+ tests\b"), "a test count"),
    (re.compile(r"\btests/\w+|\btest_\w+\.py\b"), "a test of the project"),
    (re.compile(r"\bbenchmarks/|\bscripts/|\.ci/|\bnox\b|\bpytest\b"), "the project's tooling"),
]


def _user_pages() -> list[Path]:
    return [p for p in sorted(DOCS.rglob("*.md")) if p.name != "development.md"]


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_user_pages_say_nothing_about_how_gradlint_is_developed(page):
    text = re.sub(r"<!--.*?-->", "", page.read_text(encoding="utf-8"), flags=re.S)  # comments are not shown
    found = [
        f"{what}: {match.group(0)!r} at line {text.count(chr(10), 0, match.start()) + 1}"
        for pattern, what in _DEVELOPMENT_WORDS
        for match in pattern.finditer(text)
    ]
    assert found == [], "move it to docs/development.md"


def test_configuration_explains_every_wrapper_key_with_an_example_that_silences_one(tmp_path, capsys):
    from gradlint.commands.cli import main
    from gradlint.options.config import WRAPPER_KEYS

    page = (DOCS / "configuration.md").read_text(encoding="utf-8")
    section = page[page.index("## Your own helpers") :]
    section = section[: section.index("\n## ", 1)]
    for key in WRAPPER_KEYS:
        assert re.search(rf"^\| `{key}` \| \w", section, re.M), key  # a row of the table: what its event is
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (toml,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    (path := tmp_path / "train.py").write_text(code)
    capsys.readouterr()
    assert main(["--no-cache", "--isolated", str(path)]) == 1
    (finding,) = [line for line in capsys.readouterr().out.splitlines() if ": GL" in line]
    assert finding.split(": ", 1)[1] in section  # the page shows the real finding
    (tmp_path / "pyproject.toml").write_text(toml)
    assert main(["--no-cache", str(path)]) == 0
    assert "## The cache" in page and "--cache-dir" in page and "--no-cache" in page
