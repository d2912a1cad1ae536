"""The project's views saved in the cache (gradlint/project/saved.py): a warm run builds no
index, and any change to what the index read (a file of the run, a module on disk it read, a
module that appears where an import looked) builds it again."""

from __future__ import annotations

import pytest

from gradlint.run import project_run
from tests.test_project import TRAIN, TRAINER, found, run, write

FIXED = TRAINER.replace(
    "        self.optimizer.step()\n        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n",
    "        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n        self.optimizer.step()\n",
)


@pytest.fixture
def builds(monkeypatch):
    """How many times the run built the project index."""
    count = []
    real = project_run.index_files

    def counted(*args, **kwargs):
        count.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(project_run, "index_files", counted)
    return count


def test_a_warm_run_builds_no_index(tmp_path, builds):
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    assert len(builds) == 1
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    assert len(builds) == 1  # views and results from the cache


def test_a_changed_file_of_the_run_builds_it_again(tmp_path, builds):
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    (tmp_path / "trainer.py").write_text(FIXED)
    assert found(run(tmp_path, cache_dir=cache)) == []
    assert len(builds) == 2


def test_a_module_read_from_disk_is_checked_again(tmp_path, builds):
    """`gradlint train.py` (a pre-commit run): trainer.py is not in the run, the index read it."""
    write(tmp_path, {"trainer.py": FIXED, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == []
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == []
    assert len(builds) == 1
    (tmp_path / "trainer.py").write_text(TRAINER)
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    assert len(builds) == 2


def test_a_module_that_appears_where_an_import_looked_is_read(tmp_path, builds):
    write(tmp_path, {"train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == []  # nothing to resolve: silent
    write(tmp_path, {"trainer.py": TRAINER})
    assert found(run(tmp_path, "train.py", cache_dir=cache)) == [("trainer.py", 16, "GL004")]


def test_saved_views_with_a_file_to_analyse_build_the_index(tmp_path, builds):
    """Same files, other settings: the views are served, the results are not, and the file
    that calls into the project is analysed through a real index."""
    from gradlint.run.discover import discover
    from gradlint.check.engine import RunOptions, RunResult, check_files
    from gradlint.options.settings import Settings

    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        files = [os.path.normpath(p) for p in discover(["."]).files]
        options = RunOptions(jobs=1, cache_dir=cache, roots=(".",))
        settings = Settings(select=frozenset({"GL004"}))  # other settings: other cache entries
        result = RunResult(check_files([(p, settings) for p in files], options))
    finally:
        os.chdir(cwd)
    assert found(result) == [("trainer.py", 16, "GL004")]
    assert len(builds) == 2


def test_a_damaged_entry_builds_the_index(tmp_path, builds):
    from gradlint.run.cache import Cache

    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / ".gradlint_cache")
    run(tmp_path, cache_dir=cache)
    damaged = 0
    for entry in (tmp_path / ".gradlint_cache" / "v2" / "project").rglob("*.json"):
        head, seal, body = entry.read_bytes().split(b"\n", 2)
        if b"project-views" in body:  # rewritten well formed and sealed, but of the wrong shape
            new = body.replace(b'"views":[', b'"views":[7,', 1)
            from gradlint.run.cache import _seal

            entry.write_bytes(head + b"\n" + _seal(head.decode(), new).encode() + b"\n" + new)
            damaged += 1
    assert damaged == 1
    assert Cache(cache).writable
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    assert len(builds) == 2


def test_an_installed_library_beside_a_checked_one_is_not_read(tmp_path):
    """Checking a package inside site-packages: a sibling the run does not check is another
    installed library, not the project, and is never read; a module under the checked root is."""
    from gradlint.run.project_run import index_files

    lib = tmp_path / "lib" / "site-packages"
    write(lib, {"pkg/__init__.py": "", "pkg/train.py": TRAIN.format(module="trainer"), "trainer.py": TRAINER,
                "pkg/helper.py": TRAINER})
    train = str(lib / "pkg" / "train.py")
    index, _ = index_files([(train, (lib / "pkg" / "train.py").read_text(), "d", None)], roots=(train,))
    assert str(lib / "trainer.py") not in index.known
    local = TRAIN.format(module="pkg.helper")
    index, views = index_files([(train, local, "d", None)], roots=(train,))
    assert str(lib / "pkg" / "helper.py") in index.known and train in views
