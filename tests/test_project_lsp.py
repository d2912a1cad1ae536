"""The language server's workspace index (gradlint/lsp/workspace.py): a buffer whose loop
calls a method of another module of the workspace gets the finding, once the index is built
in the background; a check never waits for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest.importorskip("pytest_lsp")

import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from test_lsp import diagnostics_for, initialize_params, make_client, open_doc, replace_all
from test_project import TRAIN, TRAINER

pytestmark = [pytest.mark.xdist_group("test_project_lsp")]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"], client_factory=make_client),
    loop_scope="module",
)
async def workspace_client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "trainer.py").write_text(TRAINER)
    (tmp_path / "train.py").write_text(TRAIN.format(module="trainer"))
    lsp_client.root = tmp_path
    await lsp_client.initialize_session(initialize_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_a_buffer_gives_the_finding_to_the_module_of_the_misplaced_call(workspace_client: LanguageClient):
    """train.py's loop runs trainer.py's clip after its step: the diagnostic stands on the clip,
    in trainer.py (not open), with the call in train.py as related information; train.py's
    buffer shows nothing of it, and an edit that stops calling the method takes it away."""
    lsp_client, root = workspace_client, workspace_client.root
    uri = open_doc(lsp_client, root / "train.py", TRAIN.format(module="trainer"))
    trainer = (root / "trainer.py").as_uri()
    (diagnostic,) = await diagnostics_for(lsp_client, trainer, lambda d: len(d) > 0)
    assert diagnostic.code == "GL004"
    assert diagnostic.range.start.line == 15  # the clip in trainer.py
    related = [(r.location.uri, r.location.range.start.line) for r in diagnostic.related_information]
    assert related == [(trainer, 14), (uri, 6)]  # the step it comes after, the loop's call
    assert list(lsp_client.diagnostics[uri]) == []
    # an unsaved edit that stops calling the method: the buffer's text counts, not the file's
    replace_all(lsp_client, uri, TRAIN.format(module="trainer").replace("trainer.train_step(batch)", "pass"), 2)
    assert await diagnostics_for(lsp_client, trainer, lambda d: len(d) == 0) == []


def test_a_check_never_waits_for_the_index(tmp_path):
    from gradlint.lsp.workspace import WorkspaceIndex

    index = WorkspaceIndex()
    assert index.project_for(str(tmp_path / "train.py"), TRAIN.format(module="trainer")) is None  # nothing built yet
    (tmp_path / "trainer.py").write_text(TRAINER)
    index.start([str(tmp_path)])
    index.wait()
    assert index.error is None, index.error
    project = index.project_for(str(tmp_path / "train.py"), TRAIN.format(module="trainer"))
    assert project is not None and "train_step" in project.words
    # a saved fix of trainer.py makes a new index; the old one was never changed in place
    old = index.index
    (tmp_path / "trainer.py").write_text(TRAINER.replace("clip_grad_norm_", "clip_grad_value_").replace(
        "class Trainer", "class Renamed"))
    index.file_saved(str(tmp_path / "trainer.py"))
    index.wait()
    assert index.index is not old
    assert index.project_for(str(tmp_path / "train.py"), TRAIN.format(module="trainer")) is None  # Trainer is gone
