"""Many files: identical results with one process, two and from the cache;
the cache's keys, atomic writes and corrupt entries; start-up imports."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import subprocess
import sys

import pytest

import gradlint
from gradlint.run import cache as cache_module
from gradlint.check import engine
from gradlint.run.cache import Cache, content_digest, default_cache_dir
from gradlint.rules.registry import all_codes, all_rules, default_codes
from gradlint.options.settings import Settings, Wrappers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True))
SETTINGS = Settings.default()
BUGGY = "import torch\n\ndef train(model, opt, data):\n    for x in data:\n        model(x).backward()\n        opt.step()\n"


def plain(results):
    return [r.to_dict() for r in results]


@pytest.fixture(scope="module")
def reference():
    assert len(FIXTURES) >= engine.MIN_FILES_FOR_POOL
    return engine.check_files([(p, SETTINGS) for p in FIXTURES], engine.RunOptions(jobs=1))


def test_jobs_two_equals_jobs_one(reference):
    assert any(r.findings for r in reference)
    two = engine.check_files([(p, SETTINGS) for p in FIXTURES], engine.RunOptions(jobs=2))
    assert plain(two) == plain(reference)


def test_cache_gives_the_same_results(reference, tmp_path, monkeypatch):
    options = engine.RunOptions(jobs=2, cache_dir=str(tmp_path / "c"))
    tasks = [(p, SETTINGS) for p in FIXTURES]
    assert plain(engine.check_files(tasks, options)) == plain(reference)
    # The warm run must not analyse anything.
    monkeypatch.setattr(engine, "check_source", lambda *a, **k: pytest.fail("analysed on a warm run"))
    assert plain(engine.check_files(tasks, engine.RunOptions(jobs=1, cache_dir=options.cache_dir))) == plain(reference)


def write(tmp_path, text, name="t.py"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def counting(monkeypatch):
    calls = []
    real = engine.check_source

    def spy(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "check_source", spy)
    return calls


def test_cache_invalidation_content_settings_version(tmp_path, monkeypatch):
    path = write(tmp_path, BUGGY)
    options = engine.RunOptions(jobs=1, cache_dir=str(tmp_path / "c"))
    calls = counting(monkeypatch)

    def analysed(settings=SETTINGS) -> bool:
        """Was the file analysed (a miss) by a run with `settings`?  (A cold run also checks
        the file with each fix applied: more than one call.)"""
        before = len(calls)
        engine.check_files([(path, settings)], options)
        return len(calls) > before

    assert analysed()
    assert engine.check_files([(path, SETTINGS)], options)[0].findings
    assert not analysed()  # hit
    # content
    write(tmp_path, BUGGY + "\n# changed\n")
    assert analysed()
    # settings: rules and wrappers
    narrow = Settings(select=frozenset({"GL007"}))
    assert analysed(narrow)
    assert engine.check_files([(path, narrow)], options)[0].findings == []  # (served)
    wrapped = dataclasses.replace(SETTINGS, wrappers=Wrappers(step_functions=("go",)))
    assert analysed(wrapped)
    # gradlint's version
    monkeypatch.setattr(gradlint, "__version__", "99.0")
    cache_module.code_fingerprint.cache_clear()
    try:
        assert analysed()
    finally:
        monkeypatch.undo()
        cache_module.code_fingerprint.cache_clear()


def test_corrupt_and_foreign_entries_are_ignored(tmp_path):
    path = write(tmp_path, BUGGY)
    cache = Cache(str(tmp_path / "c"))
    key = cache.key(path, content_digest(open(path, "rb").read()), SETTINGS)
    good = engine.check_file(path, SETTINGS)
    cache.put(key, good)
    assert cache.get(key, path) == good
    entry = cache._entry(key)
    for junk in (b"", b"{not json", json.dumps({"key": "other", "result": good.to_dict()}).encode(), b"[1, 2]"):
        with open(entry, "wb") as handle:
            handle.write(junk)
        assert cache.get(key, path) is None
    options = engine.RunOptions(jobs=1, cache_dir=cache.directory)
    assert plain(engine.check_files([(path, SETTINGS)], options)) == plain([good])  # recomputed, rewritten
    assert cache.get(key, path) == good
    assert not [n for n in os.listdir(os.path.dirname(entry)) if n.startswith(".tmp-")]  # no temp left behind
    assert open(os.path.join(cache.directory, ".gitignore")).read().strip().endswith("*")


def test_unwritable_cache_dir_does_not_fail_the_run(tmp_path):
    path = write(tmp_path, BUGGY)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = engine.check_files([(path, SETTINGS)], engine.RunOptions(jobs=1, cache_dir=str(blocker / "c")))
    assert result[0].findings


def test_two_runs_sharing_a_cache(tmp_path):
    files = [write(tmp_path, BUGGY.replace("x", f"x{i}"), f"f{i}.py") for i in range(12)]
    cache_dir = str(tmp_path / "c")
    cmd = [sys.executable, "-m", "gradlint", "--cache-dir", cache_dir, "-j", "2", *files]
    runs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [r.communicate(timeout=120) for r in runs]
    assert all(r.returncode == 1 for r in runs), outs
    assert outs[0][0] == outs[1][0]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.stdout == outs[0][0]


def crashing(path, settings):
    if path.endswith("f3.py"):
        os._exit(3)  # a hard crash of the worker process
    return engine._check_file(path, settings)


def test_results_in_input_order_and_worker_crash_is_contained(tmp_path, monkeypatch):
    files = [write(tmp_path, BUGGY, f"f{i}.py") for i in range(10)]
    from gradlint.run.pool import run_parallel

    outcomes = run_parallel(crashing, [(p, SETTINGS) for p in files], 2)
    assert [r.path for r, _ in outcomes] == files
    assert [e.kind for e in outcomes[3][0].errors] == ["internal-error"]
    assert [bool(r.findings) for r, _ in outcomes] == [i != 3 for i in range(10)], [r.errors for r, _ in outcomes]


def test_default_cache_dir_is_in_the_project_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    assert default_cache_dir([str(tmp_path / "src" / "pkg")]) == str(tmp_path / ".gradlint_cache")


# --- issue 34: a damaged cache never hangs, crashes or lies


def cached_run(tmp_path, *extra, timeout=60, env=None):
    """The CLI on one buggy file with a cache in tmp_path/c; memory capped, so that reading a
    link to /dev/zero fails fast instead of taking the machine's memory."""
    def capped():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run(
        [sys.executable, "-m", "gradlint", "--cache-dir", str(tmp_path / "c"), *extra, "train.py"], cwd=tmp_path,
        capture_output=True, text=True, timeout=timeout, preexec_fn=capped if sys.platform.startswith("linux") else None,
        env=env,
    )


def only_entry(tmp_path) -> str:
    (entry,) = glob.glob(str(tmp_path / "c" / "v*" / "*" / "*.json"))
    return entry


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero")
@pytest.mark.parametrize("damage", ["fifo", "dev-zero", "deep-json", "rewritten", "directory"])
def test_a_damaged_cache_entry_is_ignored_and_the_result_is_the_true_one(tmp_path, damage):
    write(tmp_path, BUGGY, "train.py")
    first = cached_run(tmp_path)
    assert first.returncode == 1 and "GL001" in first.stdout, first.stderr
    entry = only_entry(tmp_path)
    if damage == "rewritten":  # well-formed, the right key, another result: no finding at all
        with open(entry, "rb") as handle:
            text = handle.read()
        assert b'"findings":[{' in text
        with open(entry, "wb") as handle:
            handle.write(text.replace(b'"findings":[{', b'"findings":[],"x":[{'))
    else:
        os.unlink(entry)
        if damage == "fifo":
            os.mkfifo(entry)  # opening it for reading blocked the run forever
        elif damage == "dev-zero":
            os.symlink("/dev/zero", entry)  # reading it grew the memory until the kernel killed the run
        elif damage == "deep-json":
            with open(entry, "w") as handle:
                handle.write("[" * 100_000 + "]" * 100_000)  # a RecursionError in every run
        else:
            os.mkdir(entry)
    for _ in range(2):  # and the next run, which may have rewritten the entry
        again = cached_run(tmp_path)
        assert (again.returncode, again.stdout, again.stderr) == (first.returncode, first.stdout, first.stderr)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero")
def test_the_cache_keeps_no_list_of_files_that_parse(tmp_path):
    """Issue 48: the set of digests of files that parse (`parsed-*.txt`, read for the files the
    prefilter passes over) was read with a plain open().read(): a FIFO there hung every run, a
    link to /dev/zero ate the memory.  Those files are not parsed any more, so no such set is
    written, and a FIFO or a link to /dev/zero under its name is never opened."""
    write(tmp_path, BUGGY, "train.py")
    write(tmp_path, "settings = {'lr': 0.1}\n", "plain.py")  # no gradient word: not parsed

    def run():
        return subprocess.run(
            [sys.executable, "-m", "gradlint", "--cache-dir", str(tmp_path / "c"), "."], cwd=tmp_path,
            capture_output=True, text=True, timeout=60,
            preexec_fn=(lambda: __import__("resource").setrlimit(__import__("resource").RLIMIT_AS, (2 << 30, 2 << 30)))
            if sys.platform.startswith("linux") else None,
        )

    first = run()
    assert first.returncode == 1 and "GL001" in first.stdout, first.stdout + first.stderr
    (layout,) = glob.glob(str(tmp_path / "c" / "v*"))
    assert glob.glob(os.path.join(layout, "parsed-*")) == []
    os.mkfifo(os.path.join(layout, f"parsed-{sys.version_info[0]}.{sys.version_info[1]}-fifo.txt"))
    os.symlink("/dev/zero", os.path.join(layout, f"parsed-{sys.version_info[0]}.{sys.version_info[1]}-zero.txt"))
    again = run()
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout), again.stderr


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symbolic links")
def test_the_caches_gitignore_is_not_written_through_a_link_in_its_place(tmp_path):
    write(tmp_path, BUGGY, "train.py")
    (tmp_path / "c").mkdir()
    os.symlink(tmp_path / "elsewhere.txt", tmp_path / "c" / ".gitignore")  # dangling: open("w") created it
    assert cached_run(tmp_path).returncode == 1
    assert not (tmp_path / "elsewhere.txt").exists()
    assert (tmp_path / "c" / "CACHEDIR.TAG").read_text().startswith("Signature:")


def test_an_entry_of_another_key_is_not_served(tmp_path):
    path = write(tmp_path, BUGGY)
    other = write(tmp_path, "import torch\n", "other.py")
    cache = Cache(str(tmp_path / "c"))
    key = cache.key(path, content_digest(open(path, "rb").read()), SETTINGS)
    other_key = cache.key(other, content_digest(b"import torch\n"), SETTINGS)
    cache.put(other_key, engine.FileResult(path))  # a clean result, stored for another key
    os.makedirs(os.path.dirname(cache._entry(key)), exist_ok=True)
    os.replace(cache._entry(other_key), cache._entry(key))  # and renamed to this file's key
    assert cache.get(key, path) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux default")
def test_outside_any_project_the_cache_goes_to_the_users_cache_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    above = [str(work), *map(str, work.parents)]
    if any(os.path.exists(os.path.join(d, m)) for d in above for m in ("pyproject.toml", ".git")):
        pytest.skip("a pyproject.toml or .git above the temporary directory")
    write(work, BUGGY, "train.py")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    proc = subprocess.run([sys.executable, "-m", "gradlint", "train.py"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert os.listdir(work) == ["train.py"]  # before: .gradlint_cache/ in the current directory
    assert glob.glob(str(tmp_path / "xdg" / "gradlint" / "v*" / "*" / "*.json"))
    env["XDG_CACHE_HOME"] = "relative"  # not absolute: ignored, as the XDG specification says
    env["HOME"] = str(tmp_path / "home")
    proc = subprocess.run([sys.executable, "-c", "from gradlint.run.cache import user_cache_dir; print(user_cache_dir())"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == str(tmp_path / "home" / ".cache" / "gradlint")


def test_registry_codes_without_the_rules():
    assert all_codes() == [rule.code for rule in all_rules()]
    assert default_codes() == [rule.code for rule in all_rules() if rule.default]
    from gradlint.rules.registry import NAMES

    assert NAMES == {rule.code: rule.name for rule in all_rules()}


def test_registry_parses_each_rules_statement_alone():
    """The metadata comes from each rule module's `RULE = Rule(...)` statement, parsed without
    the rest of the module (a whole parse of every rule module cost 8 ms a process)."""
    from pathlib import Path

    from gradlint.rules import registry

    for module_name in registry.RULE_MODULES:
        text = (Path(registry.__file__).parent / f"{module_name}.py").read_text(encoding="utf-8")
        assert len(registry._rule_statement(text).body) == 1, module_name
    whole = "RULE = Rule(code='GL999', name='x', default=True)\n"
    assert len(registry._rule_statement("import os\n" + whole).body) == 2  # not the usual shape: all of it


def child(code: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_startup_no_libcst_when_prefiltered_or_cached(tmp_path):
    clean = write(tmp_path, "import os\nprint(os.sep)\n", "clean.py")
    buggy = write(tmp_path, BUGGY, "buggy.py")
    cache_dir = str(tmp_path / "c")
    probe = (
        "import sys\nfrom gradlint.commands.cli import main\ncode = main({argv!r})\n"
        "print(code, sorted(m for m in ('libcst', 'torch', 'pygls', 'multiprocessing') if m in sys.modules))"
    )
    out = child(probe.format(argv=["--no-cache", clean]), tmp_path)
    assert out.stdout.split("\n")[-2] == "0 []", out.stderr
    out = child(probe.format(argv=["--cache-dir", cache_dir, buggy]), tmp_path)
    assert out.stdout.split("\n")[-2] == "1 ['libcst']", out.stderr  # a real buggy file: never torch
    # The cache hit: no analysis, not even for the `[*]` marks of fixable findings (the worker
    # proved them by checking the fixed text, and the cache keeps the marked result).
    out = child(probe.format(argv=["--cache-dir", cache_dir, buggy]), tmp_path)
    assert out.stdout.split("\n")[-2] == "1 []", out.stderr
    unfixable = write(  # a GL002 with no repair (the clear is in another block than the step)
        tmp_path,
        "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    if ready:\n        opt.zero_grad()\n    opt.step()\n",
        "unfixable.py",
    )
    out = child(probe.format(argv=["--cache-dir", cache_dir, unfixable]), tmp_path)
    assert out.stdout.split("\n")[-2] == "1 ['libcst']", out.stderr
    out = child(probe.format(argv=["--cache-dir", cache_dir, unfixable]), tmp_path)
    assert out.stdout.split("\n")[-2] == "1 []", out.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "text"])
def test_a_warm_run_analyses_nothing(tmp_path, fmt):
    """Issue 34: JSON and SARIF proved every file's fixes again in the main process on every run
    (20,000 files from the cache: 1.55 s in text, 27.7 s in JSON).  Proven results are cached.
    Issue 28: so are the text report's fix marks (a warm run re-checked each file with a
    fixable finding, and rebuilt the project index for one that calls into another module)."""
    files = [write(tmp_path, BUGGY.replace("x", f"x{i}"), f"f{i}.py") for i in range(10)]
    cache_dir = str(tmp_path / "c")
    probe = (
        "import sys\nfrom gradlint.check import engine\nfrom gradlint.commands.cli import main\n"
        "if {warm!r}: engine.check_source = lambda *a, **k: sys.exit('analysed on a warm run')\n"
        "code = main({argv!r})\n"
        "print(code, sorted(m for m in ('libcst', 'gradlint.model.loops') if m in sys.modules))"
    )
    argv = ["--cache-dir", cache_dir, "--output-format", fmt, "-j", "2", *files]
    cold = child(probe.format(argv=argv, warm=False), tmp_path)
    assert cold.stdout.split("\n")[-2] == "1 ['gradlint.model.loops', 'libcst']", cold.stderr
    warm = child(probe.format(argv=argv, warm=True), tmp_path)
    assert warm.returncode == 0 and (fmt == "text" or warm.stdout.startswith("{")), warm.stderr
    report, imported = warm.stdout.rsplit("\n", 2)[:2]
    assert report == cold.stdout.rsplit("\n", 2)[0]
    uncached = child(probe.format(argv=["--no-cache", *argv[2:]], warm=False), tmp_path)
    assert uncached.stdout == cold.stdout  # the same proven fixes
    if fmt in ("json", "text"):
        assert imported == "1 []"  # not even the rules (their modules import libcst)
    if fmt == "json":
        assert '"fix": {' in report
    if fmt == "text":
        assert "unsafe fixes available" in report


TWO_OPTIMIZERS = """\
import torch
model_a = torch.nn.Linear(2, 2)
model_b = torch.nn.Linear(2, 2)
for x in range(3):
    model_a(x).sum().backward()
    opt_a = torch.optim.SGD(model_a.parameters())
    opt_a.step()
    opt_b = torch.optim.SGD(model_b.parameters())
    opt_b.step()
"""


def test_the_same_findings_under_every_hash_seed(tmp_path):
    """A finding is reported once per place: which optimizer its message names must not
    depend on set order (the cache, --jobs and the LSP must all agree)."""
    script = tmp_path / "two.py"
    script.write_text(TWO_OPTIMIZERS)
    outputs = set()
    for seed in range(6):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        proc = subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", str(script)],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 1, proc.stderr
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    assert "opt_a.step()" in outputs.pop()  # the first optimizer stepped


def test_a_small_default_run_starts_no_worker_and_a_large_one_does(tmp_path, monkeypatch):
    """Default jobs: the pool only when there is enough to analyse to pay for it (issue 22:
    30 small files were 1.4x slower with the pool; benchmarks/pool_threshold.py)."""
    import gradlint.run.pool

    started = []

    def parallel(work, tasks, jobs, prepare=None):
        started.append(jobs)
        return [gradlint.run.pool.guarded(work, *task) for task in tasks]

    monkeypatch.setattr(gradlint.run.pool, "run_parallel", parallel)
    monkeypatch.setattr(engine.os, "cpu_count", lambda: 4)
    small = [(write(tmp_path, BUGGY, f"s{i}.py"), SETTINGS) for i in range(30)]
    assert all(r.findings for r in engine.check_files(small, engine.RunOptions()))
    assert started == []
    assert engine.check_files(small, engine.RunOptions(jobs=2)) and started == [2]  # asked for: given
    padding = "# " + "x" * 78 + "\n"
    large_text = BUGGY + padding * (engine.MIN_BYTES_FOR_POOL // len(padding) // 30 + 1)
    large = [(write(tmp_path, large_text, f"l{i}.py"), SETTINGS) for i in range(30)]
    assert all(r.findings for r in engine.check_files(large, engine.RunOptions()))
    assert started == [2, 4]
