"""One analysis, one answer: the language server and the command line find the same things
in the same text of the same file in the same folder.

For every cross-file fixture folder (a small project: a loop in one file calls a function of
another), a server is started on the folder as its workspace; once its project index is
ready every .py file is opened as it is on disk, and its diagnostics (code, line, column)
must equal the findings that `gradlint FILE` run from the folder reports in that file, over
every FILE of the folder: an editor checks one buffer, as the command line checks one named
file, and a finding stands on the misplaced call, so a loop of one file may give one to another
(the editor shows it in that file's diagnostics).  They disagreed: a loop whose epoch function lives in another module got GL001 and GL005 in the
editor (its model built piece by piece did not leave the other module's own loop to that
module), and a model-factory script lost GL003 in the editor (the workspace index answered
no project when no function, only a class storing an optimizer, linked the files).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest.importorskip("pytest_lsp")

from pytest_lsp import ClientServerConfig

from ci_snippets import run_cli
from test_fixtures import FIXTURES, project_of
from test_lsp import diagnostics_for, initialize_params, make_client, open_doc, until

pytestmark = [pytest.mark.xdist_group("test_server_agrees_with_cli")]

FOLDERS = sorted({project_of(path) for path in FIXTURES.rglob("*.py")} - {None})


def test_every_cross_file_fixture_folder_is_compared():
    cross_file = {path for path in (FIXTURES / "cross_file").iterdir() if path.is_dir()}
    assert cross_file <= set(FOLDERS)
    assert FIXTURES / "gl006" / "scaled_backward_in_caller" in FOLDERS
    for folder in FOLDERS:
        assert len(list(folder.rglob("*.py"))) >= 2, folder


def _found(out: str) -> dict:
    """{path: [(code, line, column)]} of the text report's finding lines: `name:8:5: GL002 ...`."""
    found: dict = {}
    for line in out.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit() and parts[3].split()[:1] and parts[3].split()[0].startswith("GL"):
            found.setdefault(parts[0], set()).add((parts[3].split()[0], int(parts[1]), int(parts[2])))
    return found


def command_line(folder: Path, capsys, files: list[str]) -> dict:
    """The findings of `gradlint FILE` for each file, run from the folder (in this process: the
    early answer for named files, quick.py, is on the way as it is for a user), by the file
    they stand in: a loop of train.py makes a finding on trainer.py's misplaced call."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        where: dict = {name: set() for name in files}
        for name in files:
            code, out, err = run_cli(capsys, "--no-cache", name)  # what a user types
            assert code in (0, 1) and "error:" not in out, (name, out, err)
            for path, found in _found(out).items():
                where.setdefault(os.path.normpath(path), set()).update(found)
        return {name: sorted(found) for name, found in where.items()}
    finally:
        os.chdir(cwd)


@pytest.mark.asyncio
@pytest.mark.parametrize("folder", FOLDERS, ids=[str(f.relative_to(FIXTURES)) for f in FOLDERS])
async def test_the_server_finds_what_the_command_line_finds(folder: Path, capsys):
    from gradlint.lsp.server import INDEX_READY

    files = sorted(os.path.relpath(path, folder) for path in folder.rglob("*.py"))
    alone = command_line(folder, capsys, files)
    config = ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"], client_factory=make_client)
    client = await config.start()
    try:
        await client.initialize_session(initialize_params(folder))
        await until(lambda: any(message.message == INDEX_READY for message in client.log_messages))
        uris = {name: open_doc(client, folder / name, (folder / name).read_text(encoding="utf-8")) for name in files}
        editor = {}

        def shown(name):
            return sorted((d.code, d.range.start.line + 1, d.range.start.character + 1) for d in client.diagnostics[uris[name]])

        for name, uri in uris.items():
            await diagnostics_for(client, uri)
            try:  # a finding another buffer gives this file may be published after its own check
                await asyncio.wait_for(until(lambda: shown(name) == alone[name]), 10)
            except asyncio.TimeoutError:
                pass  # compared below, with both sides shown
            editor[name] = shown(name)
        await client.shutdown_session()
    finally:
        await client.stop()
    assert editor == alone
