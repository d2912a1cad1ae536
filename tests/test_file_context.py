"""One FileContext per check (gradlint/parse/file_context.py): what the stages share travels as an
argument, nothing of a check is kept by a module, and the collector is the entry points' business."""

from __future__ import annotations

import ast
import gc
import weakref
from collections import Counter

import pytest

from gradlint.check import engine
from gradlint.check.engine import check_source
from gradlint.parse.file_context import FileContext
from gradlint.options.settings import Settings

LOOP = (
    "    for x, y in loader:\n        opt.zero_grad()\n        loss = model(x).sum()\n"
    "        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        loss.backward()\n        opt.step()\n"
)
# three GL005 findings, each with a fix that moves a statement; a helper the screen leaves out
SOURCE = "import torch\n\ndef unrelated(a):\n    return a + 1\n\ndef train(model, opt, loader):\n" + LOOP * 3


def test_each_text_of_a_check_is_parsed_once(monkeypatch):
    """The guard, the screen, the position table and the fixes read one tree per text (the
    C parser is a third of a big file's analysis): the context hands it out again."""
    parsed = Counter()
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.update([text]) or real(text, *a, **k))
    findings = check_source(SOURCE, "t.py", Settings.default()).findings
    assert [f.code for f in findings] == ["GL005"] * 3 and all(f.fix is not None for f in findings)
    assert parsed and set(parsed.values()) == {1}, parsed.values()


def test_nothing_of_a_check_outlives_it():
    """The context and the fixes' statement index die with the check, by reference counting
    alone (no module keeps them); the trees at the latest with the next collection (the screen's
    walk of the tree sits in a reference cycle: a closure of screen._needed_tops)."""
    kept = []
    real = engine._analyse_parsed

    def spy(context, settings, project=None):
        try:
            return real(context, settings, project)
        finally:
            kept.append((weakref.ref(context), weakref.ref(context.tree()), weakref.ref(context.statements)))

    was = gc.isenabled()
    gc.disable()
    try:
        engine._analyse_parsed = spy
        findings = check_source(SOURCE, "t.py", Settings.default()).findings
    finally:
        engine._analyse_parsed = real
        if was:
            gc.enable()
    assert findings and kept
    context, tree, statements = kept[0]
    assert context() is None and statements() is None
    gc.collect()
    assert tree() is None


def test_the_check_leaves_the_collector_alone(monkeypatch):
    """The collector's state is the process's: the library's check does not pause it."""
    seen = []
    real = engine._guard
    monkeypatch.setattr(engine, "_guard", lambda context: seen.append(gc.isenabled()) or real(context))
    assert gc.isenabled()
    check_source(SOURCE, "t.py", Settings.default())
    assert seen == [True] and gc.isenabled()


def test_a_run_pauses_the_collector_for_each_file():
    """A run's per-file guard (every file of a run, in a worker or not) pauses the collector
    while the file is checked, and lets it run again after, also when the check raised."""
    from gradlint.run.pool import guarded

    assert guarded(lambda path, settings: (gc.isenabled(), None), "f.py", Settings.default()) == (False, None)
    assert gc.isenabled()

    def boom(path, settings):
        raise ValueError("a bug")

    result, _ = guarded(boom, "f.py", Settings.default())
    assert result.errors and gc.isenabled()
    gc.disable()
    try:
        guarded(lambda path, settings: (None, None), "f.py", Settings.default())
        assert not gc.isenabled()  # paused before: still paused
    finally:
        gc.enable()


def test_a_fix_primitive_wants_the_checks_context():
    """A caller that still hands a fix its file's lines (the index of the lines was a module
    cache) fails loudly, not by indexing the file again for every finding."""
    from gradlint.fix import statements_of

    context = FileContext("t.py", SOURCE)
    assert statements_of(context) is statements_of(context)
    with pytest.raises(TypeError):
        statements_of(context.lines)


def test_the_language_servers_project_lookup_reads_the_checks_tree(monkeypatch):
    """The buffer's imports are read from the tree the check then reads (not parsed twice)."""
    from gradlint.lsp.workspace import _buffer_module

    text = "import torch\nfrom trainer import fit\n"
    context = FileContext("f.py", text)
    context.tree()
    monkeypatch.setattr(ast, "parse", lambda *a, **k: pytest.fail("parsed again"))
    assert _buffer_module("f.py", text, context) is not None


def test_a_syntax_error_is_remembered_with_its_text():
    context = FileContext("f.py", "x = (1,\n")
    with pytest.raises(SyntaxError) as first:
        context.tree()
    with pytest.raises(SyntaxError) as again:
        context.tree()
    assert again.value is first.value
