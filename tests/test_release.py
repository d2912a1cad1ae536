"""The release as a user gets it: `python -m build` makes an sdist and a wheel
named torch-gradlint, and the wheel works in a fresh venv of every supported
Python that holds nothing but it and its dependencies (libcst; tomli before
3.11; no torch, no pygls, no checkout on sys.path)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gradlint
from gradlint.commands.cli import installed_version, main
from pythons import SUPPORTED, find_python

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "torch-gradlint"


def test_distribution_name_and_version_have_one_source():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == gradlint.DISTRIBUTION
    assert project["dynamic"] == ["version"]  # read from gradlint.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", gradlint.__version__)
    assert project["scripts"] == {"gradlint": "gradlint.commands.cli:main"}


def test_changelog_has_the_current_version():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"\n## {gradlint.__version__} " in changelog or f"\n## [{gradlint.__version__}]" in changelog


def test_version_reads_the_installed_metadata(tmp_path, monkeypatch, capsys):
    dist_info = tmp_path / "torch_gradlint-9.8.7.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-gradlint\nVersion: 9.8.7\n\nVersion: 1.0 in the text\n")
    (tmp_path / "gradlint-1.1.7.dist-info").mkdir()  # the other project of that name is not ours
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nothing"), str(tmp_path)])
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "gradlint 9.8.7\n"


def test_version_asks_importlib_metadata_when_no_dist_info_is_on_the_path(tmp_path, monkeypatch):
    import importlib.metadata as metadata

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    asked = []
    monkeypatch.setattr(metadata, "version", lambda name: asked.append(name) or "9.8.6")
    assert installed_version() == "9.8.6" and asked == [DISTRIBUTION]


def test_version_falls_back_to_the_source_tree(tmp_path, monkeypatch):
    import importlib.metadata as metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(metadata, "version", missing)
    assert installed_version() == gradlint.__version__


def test_version_is_answered_without_the_checker(tmp_path):
    """`gradlint --version` imports neither argparse nor the configuration loader."""
    code = (
        "import sys; from gradlint.commands.cli import main; main(['--version']);"
        "print(sorted(m for m in ('argparse', 'gradlint.options.config', 'gradlint.check.engine', 'libcst', 'importlib.metadata')"
        " if m in sys.modules))"
    )
    result = _run(sys.executable, "-c", code, cwd=tmp_path)
    assert result.stdout.splitlines() == [f"gradlint {installed_version()}", "[]"], result.stderr


def _run(*argv, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# What a checkout holds besides the project's own files: never copied into the build.
NOT_THE_PROJECT = (".git", ".venv", ".ci-venv", ".nox", "venv", "build", "dist", "*.egg-info", "__pycache__",
                   ".gradlint_cache", ".pytest_cache", ".ruff_cache", ".hypothesis")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """sdist and wheel built by `python -m build` from a copy of the whole
    checkout, tests and fixtures included, so that what the sdist leaves out
    is MANIFEST.in's doing (the build writes build/ and *.egg-info next to
    the sources). The wheel is built from the sdist, as `build` does."""
    src = tmp_path_factory.mktemp("src") / "project"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*NOT_THE_PROJECT))
    dist = tmp_path_factory.mktemp("dist")
    # --no-isolation: the build backend (setuptools) of this venv, no download.
    result = _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "deprecated" not in result.stdout + result.stderr  # e.g. the license table setuptools drops in 2027
    return dist


def test_build_makes_an_sdist_and_a_wheel(built):
    version = gradlint.__version__
    names = sorted(p.name for p in built.iterdir())
    assert names == [f"torch_gradlint-{version}-py3-none-any.whl", f"torch_gradlint-{version}.tar.gz"]
    import zipfile

    with zipfile.ZipFile(built / names[0]) as wheel:
        listed = wheel.namelist()
        metadata = wheel.read(f"torch_gradlint-{version}.dist-info/METADATA").decode()
    assert f"torch_gradlint-{version}.dist-info/licenses/LICENSE" in listed
    assert "License-Expression: MIT" in metadata and f"Version: {version}" in metadata
    for field in ("Project-URL: Documentation, " + gradlint.DOCS_URL, "Project-URL: Changelog, ", "Project-URL: Issues, ",
                  "Keywords: pytorch", "Author: ", "Classifier: Topic :: Software Development :: Quality Assurance"):
        assert field in metadata, field
    assert "gradlint/rules/gl001_missing_zero_grad.py" in listed and not any(n.startswith("tests/") for n in listed)


def sdist_names(built: Path) -> list[str]:
    """The sdist's file names, without the `torch_gradlint-<version>/` prefix."""
    import tarfile

    with tarfile.open(next(built.glob("*.tar.gz"))) as sdist:
        return [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]


def test_sdist_holds_the_package_and_its_docs_but_no_tests(built):
    """The tests need the whole checkout (conftest, helpers, fixtures,
    benchmarks, git history): the sdist leaves them all out rather than ship
    test files that cannot run (setuptools adds tests/test*.py by default)."""
    names = sdist_names(built)
    for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in",
                   "gradlint/__init__.py", "gradlint/rules/gl001_missing_zero_grad.py",
                   "docs/index.md", "docs/rules/GL001.md"):
        assert needed in names, needed
    for left_out in ("tests/", "fixtures/", "benchmarks/", "scripts/", "notes/", ".git/", ".ci/"):
        assert not any(name.startswith(left_out) for name in names), left_out
    assert not any("__pycache__" in name or name.endswith(".pyc") for name in names)


def test_the_readmes_relative_links_resolve_in_the_sdist(built):
    """PyPI's page is the README without the repository; the sdist at least
    carries every file the README links to."""
    import re

    names = set(sdist_names(built))
    readme = (ROOT / "README.md").read_text()
    targets = {target.split("#", 1)[0] for target in re.findall(r"\]\(([^)\s]+)\)", readme)}
    relative = {target for target in targets if target and "://" not in target}
    assert "docs/rules/GL001.md" in relative
    assert relative <= names, relative - names


@pytest.fixture(scope="module")
def checkout_findings() -> dict:
    """The findings on fixtures/ of this checkout under the Python running the tests."""
    return _findings_on_fixtures([sys.executable, "-m", "gradlint"], env=None)


def _findings_on_fixtures(command: list[str], env) -> dict:
    result = _run(*command, "--no-cache", "--isolated", "--output-format", "json", "fixtures", cwd=ROOT, env=env)
    assert result.returncode == 1, result.stderr[-2000:]  # the wrong fixtures are found
    return json.loads(result.stdout)


def _interpreter(version: str) -> str:
    found = find_python(version)
    if found is None:
        message = f"Python {version} is not installed (pyenv install {version})"
        if os.environ.get("GRADLINT_EVERY_PYTHON"):  # nox's slow session: every one must be there
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED)
def test_wheel_in_a_fresh_venv_checks_the_fixtures(built, checkout_findings, tmp_path, version):
    """On every supported Python: the wheel installs, runs, and finds on fixtures/ exactly
    what this checkout finds under the Python running the tests."""
    venv = tmp_path / "venv"
    assert _run(_interpreter(version), "-m", "venv", "--without-pip", str(venv)).returncode == 0
    python = venv / "bin" / "python"
    wheel = next(built.glob("*.whl"))
    # No PYTHONPATH: a checkout on it (its *.egg-info) would make pip call the wheel installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # This venv's pip installs into the fresh one (--python): no ensurepip; the wheel's own
    # dependencies (libcst, tomli before 3.11) from the registry; torch is not needed.
    result = _run(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel), env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    gradlint_cmd = str(venv / "bin" / "gradlint")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"

    said = _run(str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])", env=env)
    assert said.stdout.strip() == version
    version_line = _run(gradlint_cmd, "--version", cwd=tmp_path, env=env)
    assert (version_line.returncode, version_line.stdout) == (0, f"gradlint {gradlint.__version__}\n")

    # The installed package, not this checkout, does the checking.
    where = _run(str(python), "-c", "import gradlint; print(gradlint.__file__)", cwd=tmp_path, env=env)
    assert str(venv) in where.stdout and str(ROOT) not in where.stdout

    fixture = ROOT / "fixtures" / "gl002" / "wrong_zero_grad_between.py"
    check = _run(gradlint_cmd, "--no-cache", "--isolated", str(fixture), cwd=tmp_path, env=env)
    assert check.returncode == 1, check.stderr
    assert ": GL002 " in check.stdout and "1 file checked" in check.stdout

    clean = _run(gradlint_cmd, "--no-cache", "--isolated", str(ROOT / "fixtures" / "gl002"), "--select", "GL004", cwd=tmp_path, env=env)
    assert clean.returncode == 0 and clean.stdout.startswith("All checks passed! (")

    for command in ("rules", "explain"):  # the rule modules are in the wheel
        assert _run(gradlint_cmd, command, "GL002" if command == "explain" else "--help", cwd=tmp_path, env=env).returncode == 0

    # fixtures/newer_syntax is read by every Python, also those whose own parser cannot.
    assert _findings_on_fixtures([gradlint_cmd], env) == checkout_findings
