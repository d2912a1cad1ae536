"""Issue 21: the copy-on-write view verify gives the script (gradlint/verify/overlay.py, redirect.py).

Each test runs in-process with the file functions redirected (undone after
it), in a project folder whose bytes are hashed before and after: whatever
the script does, the real folder must not change.
"""

from __future__ import annotations

import errno
import glob
import io
import logging
import os
import pathlib
import shutil
import stat
import tarfile
import tempfile

import pytest

from gradlint.verify import overlay as overlay_module
from gradlint.verify import redirect
from gradlint.verify.overlay import Overlay, written
from trees import tree_digest


class View:
    def __init__(self, project, overlay):
        self.project, self.overlay, self.removed = project, overlay, []


@pytest.fixture
def view(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "data" / "nested").mkdir(parents=True)
    (project / "data" / "a.csv").write_text("1,2\n")
    (project / "data" / "nested" / "b.csv").write_text("3,4\n")
    (project / "train.log").write_text("old\n")
    (project / "config.json").write_text("hello")
    (project / "empty").mkdir()
    verify_tmp = tmp_path / "gradlint-verify-test"
    (verify_tmp / "overlay").mkdir(parents=True)
    before = tree_digest(project)
    monkeypatch.chdir(project)
    removed = []
    overlay = Overlay(str(verify_tmp / "overlay"), own=(str(verify_tmp),), on_remove=removed.append)
    restore = redirect.install(overlay)
    try:
        state = View(project, overlay)
        state.removed = removed
        yield state
    finally:
        restore()
    assert tree_digest(project) == before  # the user's folder, byte for byte


def read(path):
    with open(path) as handle:
        return handle.read()


def test_append_to_an_existing_file_starts_from_its_content(view):
    with open("train.log", "a") as log:
        log.write("new\n")
    assert read("train.log") == "old\nnew\n"
    assert os.path.getsize("train.log") == 8
    with open("train.log", "a") as log:  # the second append extends the copy, not the original again
        log.write("more\n")
    assert read("train.log") == "old\nnew\nmore\n"


def test_open_r_plus_updates_a_copy_and_needs_the_file(view):
    with open("config.json", "r+") as handle:
        assert handle.read(1) == "h"
        handle.seek(0)
        handle.write("J")
    assert read("config.json") == "Jello"
    with pytest.raises(FileNotFoundError) as raised:
        open("missing.json", "r+")
    assert raised.value.filename == "missing.json"  # the script's path, never the overlay's
    assert not os.path.exists("missing.json")


def test_write_then_read_back_and_the_handle_keeps_the_scripts_name(view):
    with open("out.txt", "w") as handle:
        handle.write("written")
        assert handle.name == "out.txt"
    assert read("out.txt") == "written"
    assert read(os.path.abspath("out.txt")) == "written"
    assert os.path.isfile("out.txt") and not os.path.isdir("out.txt")
    with pytest.raises(FileExistsError):
        open("out.txt", "x")
    with pytest.raises(IsADirectoryError):
        open("data", "w")


def test_makedirs_exist_ok_on_a_real_folder_and_new_folders(view):
    os.makedirs("data", exist_ok=True)
    with pytest.raises(FileExistsError):
        os.makedirs("data")
    with pytest.raises(FileExistsError):
        os.mkdir("config.json")
    os.makedirs("runs/exp1/checkpoints", exist_ok=True)
    assert os.path.isdir("runs/exp1/checkpoints")
    os.makedirs("runs/exp1", exist_ok=True)
    os.makedirs(os.path.join("data", "nested", "deeper"))
    assert sorted(os.listdir("data/nested")) == ["b.csv", "deeper"]
    with pytest.raises(FileNotFoundError):
        os.mkdir("nowhere/child")
    with pytest.raises(FileNotFoundError):
        open("nowhere/file.txt", "w")


def test_remove_then_listdir_hides_the_file_until_it_is_written_again(view):
    os.remove("data/a.csv")
    assert os.listdir("data") == ["nested"]
    assert not os.path.exists("data/a.csv")
    assert glob.glob("data/*.csv") == []
    with pytest.raises(FileNotFoundError):
        open("data/a.csv")
    with pytest.raises(FileNotFoundError):
        os.remove("data/a.csv")
    with open("data/a.csv", "w") as handle:
        handle.write("new")
    assert sorted(os.listdir("data")) == ["a.csv", "nested"]  # once, the script's copy
    assert read("data/a.csv") == "new"
    assert view.removed == [os.path.join(str(view.project), "data", "a.csv")]


def test_rename_a_real_file_and_replace_a_real_file_with_a_written_one(view):
    os.rename("config.json", "config.old")
    assert not os.path.exists("config.json") and read("config.old") == "hello"
    with open("config.json.tmp", "w") as handle:
        handle.write("fresh")
    os.replace("config.json.tmp", "train.log")  # the atomic-save idiom, onto a real file
    assert read("train.log") == "fresh"
    assert "config.json.tmp" not in os.listdir(".")
    assert sorted(os.listdir(".")) == ["config.old", "data", "empty", "train.log"]


def test_rename_a_real_folder_takes_its_files_and_hides_the_old_name(view):
    os.rename("data", "data_v1")
    assert not os.path.exists("data")
    assert sorted(os.listdir("data_v1")) == ["a.csv", "nested"]
    assert read("data_v1/nested/b.csv") == "3,4\n"
    with pytest.raises(FileNotFoundError):
        os.listdir("data")
    os.mkdir("data")  # a new folder of that name is empty: the old files stay removed
    assert os.listdir("data") == []
    with pytest.raises(OSError) as raised:
        os.rename("data_v1", "empty/inside/x")
    assert raised.value.errno == errno.ENOENT


def test_a_temporary_file_of_verifys_own_moved_into_place_and_back(view, tmp_path):
    own = tmp_path / "gradlint-verify-test" / "scratch"
    own.mkdir()
    (own / "tmp123").write_text("atomic")
    os.replace(own / "tmp123", "config.json")  # TMPDIR is verify's: the atomic-save idiom across folders
    assert read("config.json") == "atomic" and not (own / "tmp123").exists()
    os.rename("train.log", own / "moved.log")
    assert (own / "moved.log").read_text() == "old\n" and not os.path.exists("train.log")


def test_rename_onto_a_non_empty_folder_is_refused_as_by_the_os(view):
    with pytest.raises(OSError) as raised:
        os.rename("empty", "data")
    assert raised.value.errno in (errno.ENOTEMPTY, errno.EEXIST)
    with pytest.raises(IsADirectoryError):
        os.rename("config.json", "data")


def test_listing_shows_both_sides_through_walk_scandir_glob_and_pathlib(view):
    os.makedirs("data/new")
    pathlib.Path("data/c.csv").write_text("5,6\n")
    assert sorted(os.listdir("data")) == ["a.csv", "c.csv", "nested", "new"]
    with os.scandir("data") as entries:
        seen = {entry.name: (entry.path, entry.is_dir(), entry.is_file()) for entry in entries}
    assert seen["c.csv"] == (os.path.join("data", "c.csv"), False, True)
    assert seen["a.csv"] == (os.path.join("data", "a.csv"), False, True)
    assert seen["new"][1] and seen["nested"][1]
    walked = {os.path.relpath(os.path.join(folder, name)) for folder, _, files in os.walk("data") for name in files}
    assert walked == {"data/a.csv", "data/c.csv", "data/nested/b.csv"}
    assert sorted(glob.glob("data/**/*.csv", recursive=True)) == ["data/a.csv", "data/c.csv", "data/nested/b.csv"]
    assert sorted(p.name for p in pathlib.Path("data").iterdir()) == ["a.csv", "c.csv", "nested", "new"]
    assert sorted(str(p) for p in pathlib.Path(".").glob("data/*.csv")) == ["data/a.csv", "data/c.csv"]
    assert pathlib.Path("data/c.csv").read_text() == "5,6\n"


def test_rmtree_of_a_real_folder_and_rmdir(view):
    shutil.rmtree("data")
    assert not os.path.exists("data") and "data" not in os.listdir(".")
    os.rmdir("empty")
    assert not os.path.isdir("empty")
    with pytest.raises(OSError) as raised:
        os.rmdir("config.json")
    assert raised.value.errno == errno.ENOTDIR
    assert set(view.removed) >= {os.path.join(str(view.project), p) for p in ("data", "data/a.csv", "empty")}


def test_shutil_copy_move_and_a_temporary_file_in_the_scripts_folder(view):
    shutil.copy2("config.json", "config.bak")
    assert read("config.bak") == "hello"
    shutil.move("config.bak", "data/config.bak")
    assert read("data/config.bak") == "hello" and not os.path.exists("config.bak")
    with tempfile.NamedTemporaryFile("w", dir=".", delete=False) as handle:
        handle.write("atomic")
    os.replace(handle.name, "config.json")
    assert read("config.json") == "atomic"
    with tempfile.TemporaryDirectory(dir=".") as folder:
        pathlib.Path(folder, "x").write_text("x")
    assert not os.path.exists(folder)


def test_a_link_the_script_makes_cannot_reach_the_real_file(view):
    target = os.path.abspath("config.json")
    os.symlink(target, "latest")
    assert os.path.islink("latest") and read("latest") == "hello"
    assert os.readlink("latest") == target
    # what the kernel would follow (C code writing through the link) stays in the overlay
    stored = overlay_module._readlink(view.overlay.upper(os.path.abspath("latest")))
    assert stored.startswith(view.overlay.root + os.sep)
    with open("latest", "w") as handle:  # writes the view's config.json, never the real one
        handle.write("through the link")
    assert read("config.json") == "through the link"
    assert os.path.realpath("latest") == target


def test_truncate_chmod_and_touch_work_on_copies(view):
    os.truncate("train.log", 1)
    assert read("train.log") == "o"
    os.chmod("config.json", 0o600)
    assert os.stat("config.json").st_mode & 0o777 == 0o600
    pathlib.Path("config.json").touch()
    pathlib.Path("new_marker").touch()
    assert os.path.exists("new_marker")


def test_a_folder_made_by_the_script_can_be_entered(view):
    os.makedirs("out/run1")
    os.chdir("out/run1")
    assert os.getcwd() == os.path.join(str(view.project), "out", "run1")
    with open("result.txt", "w") as handle:
        handle.write("ok")
    assert read(os.path.join(str(view.project), "out", "run1", "result.txt")) == "ok"
    assert read("../../config.json") == "hello"


def test_a_log_file_handler_writes_into_the_view(view):
    handler = logging.FileHandler("train.log")
    try:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "step 1", None, None)
        handler.emit(record)
    finally:
        handler.close()
    assert read("train.log") == "old\nstep 1\n"


def test_bytes_paths_get_bytes_names(view):
    pathlib.Path("data/c.csv").write_text("")
    assert sorted(os.listdir(b"data")) == [b"a.csv", b"c.csv", b"nested"]
    with os.scandir(b"data") as entries:
        assert sorted(entry.path for entry in entries) == [b"data/a.csv", b"data/c.csv", b"data/nested"]


def test_written_lists_files_with_sizes_new_folders_and_removals(view):
    os.makedirs("runs/exp1")
    with open("runs/exp1/ckpt.pt", "wb") as handle:
        handle.write(b"x" * 10)
    with open("train.log", "a") as log:
        log.write("new\n")
    os.symlink("train.log", "latest.log")
    os.remove("config.json")
    os.remove("data/a.csv")
    with open("data/a.csv", "w") as handle:  # removed, then written again: a write, not a removal
        handle.write("a")
    project = str(view.project)
    entries = written(view.overlay.root, view.removed)
    assert {(e["action"], os.path.relpath(e["path"], project), e.get("size", e.get("target"))) for e in entries} == {
        ("link", "latest.log", "train.log"),
        ("create directory", "runs", None),
        ("create directory", "runs/exp1", None),
        ("write", "runs/exp1/ckpt.pt", 10),
        ("write", "train.log", 8),
        ("write", "data/a.csv", 1),
        ("delete", "config.json", None),
    }


def test_verifys_own_folders_and_dev_are_not_redirected(view, tmp_path):
    own = tmp_path / "gradlint-verify-test" / "scratch.txt"
    with open(own, "w") as handle:
        handle.write("mine")
    assert own.read_text() == "mine"
    with open(os.devnull, "w") as handle:
        handle.write("nothing")
    assert view.overlay.virtual(str(own)) is None


def test_numpy_save_and_load_go_through_the_view(view):
    numpy = pytest.importorskip("numpy")
    numpy.save("data/array", numpy.arange(3))
    assert list(numpy.load("data/array.npy")) == [0, 1, 2]
    assert "array.npy" in os.listdir("data")


def test_a_module_that_took_open_before_the_redirection_writes_into_the_view(view):
    # tarfile, imported at the top of this file, holds the `open` it saw then as `bltn_open`
    with tarfile.open("data.tar", "w") as archive:
        archive.add("config.json")
    with tarfile.open("data.tar") as archive:
        assert archive.getnames() == ["config.json"]


# --- issue 29: writes a plain run allows ---------------------------------------------------


def test_temporary_files_in_the_scripts_folder_truncation_and_fileio_work_on_copies(view):
    with tempfile.NamedTemporaryFile(dir=".") as handle:  # 3.12+: io.open(dir, opener=...)
        handle.write(b"named")
        handle.flush()
        assert os.path.exists(handle.name)
    with tempfile.TemporaryFile(dir=".") as handle:  # Linux: O_TMPFILE on the folder
        handle.write(b"unnamed")
        handle.seek(0)
        assert handle.read() == b"unnamed"
    fd = os.open("train.log", os.O_WRONLY | os.O_TRUNC)  # an existing file, without O_CREAT
    os.write(fd, b"new\n")
    os.close(fd)
    assert read("train.log") == "new\n"
    with io.FileIO("raw.bin", "w") as handle:
        handle.write(b"raw")
    assert isinstance(handle, io.FileIO) and handle.name == "raw.bin"
    with io.FileIO("raw.bin") as handle:
        assert handle.read() == b"raw"
    with open("config.json", "rb", buffering=0) as handle:
        assert isinstance(handle, io.FileIO)  # the real class's files still are FileIO


def test_a_fifo_and_a_sqlite_database_are_made_in_the_overlay(view):
    import sqlite3

    os.mkfifo("pipe")
    assert stat.S_ISFIFO(os.stat("pipe").st_mode)
    connection = sqlite3.connect("runs.db")
    connection.execute("create table t (x integer)")
    connection.commit()
    connection.close()
    assert os.path.getsize("runs.db") > 0
    assert {(e["action"], os.path.basename(e["path"])) for e in written(view.overlay.root)} >= {
        ("create FIFO", "pipe"), ("write", "runs.db")}


def test_references_taken_before_the_overlay_are_redirected(tmp_path, monkeypatch):
    """A module imported before verify holds io.open in a dict of one of its objects (numpy's
    DataSource openers, which np.savetxt writes through) and os.unlink as a default argument
    (tempfile's closer): both go to the overlay."""
    import sys
    import types

    project = tmp_path / "project"
    project.mkdir()
    (project / "kept.txt").write_text("real")
    before = tree_digest(project)
    module = types.ModuleType("captured_openers")

    class Openers:
        def __init__(self):
            self.openers = {None: io.open}

    def remove(path, unlink=os.unlink):
        unlink(path)

    Openers.__module__ = remove.__module__ = "captured_openers"
    module.openers, module.remove, module.Openers = Openers(), remove, Openers
    monkeypatch.setitem(sys.modules, "captured_openers", module)
    monkeypatch.chdir(project)
    verify_tmp = tmp_path / "gradlint-verify-test"
    (verify_tmp / "overlay").mkdir(parents=True)
    restore = redirect.install(Overlay(str(verify_tmp / "overlay"), own=(str(verify_tmp),)))
    try:
        with module.openers.openers[None]("kept.txt", "w") as handle:
            handle.write("overlay")
        module.remove("kept.txt")
        assert not os.path.exists("kept.txt")
    finally:
        restore()
    assert module.openers.openers[None] is io.open and remove.__defaults__ == (os.unlink,)
    assert tree_digest(project) == before
