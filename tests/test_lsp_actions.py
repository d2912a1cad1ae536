"""The language server's pure parts: suppression and fix edits, hover text, document checks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gradlint.core.findings import UNSAFE, Edit, Finding, Fix, Span
from gradlint.lsp import actions
from gradlint.lsp.documents import check_document, finding_at, findings_on_lines
from gradlint.options.settings import Settings
from gradlint.check.suppress import line_suppressions
from lsp_snippets import BUGGY


def apply(line: str, edit: dict | None) -> str:
    assert edit is not None
    start, end = edit["range"]["start"], edit["range"]["end"]
    assert start["line"] == end["line"] == 0
    return line[: start["character"]] + edit["newText"] + line[end["character"] :]


@pytest.mark.parametrize(
    "line, expected",
    [
        ("    opt.zero_grad()", "    opt.zero_grad()  # noqa: GL002"),
        ("    opt.zero_grad()   ", "    opt.zero_grad()  # noqa: GL002"),
        ("    opt.zero_grad()  # noqa: GL001", "    opt.zero_grad()  # noqa: GL001, GL002"),
        ("    opt.zero_grad()  # noqa: GL001,GL004 why", "    opt.zero_grad()  # noqa: GL001,GL004, GL002 why"),
        ("    opt.zero_grad()  # noqa:E501", "    opt.zero_grad()  # noqa:E501, GL002"),
        ("    opt.zero_grad()  # gradlint: ignore[GL001]", "    opt.zero_grad()  # gradlint: ignore[GL001, GL002]"),
        ("    opt.zero_grad()  # reset", "    opt.zero_grad()  # reset  # noqa: GL002"),
        ('    log("# not a comment"); opt.zero_grad()', '    log("# not a comment"); opt.zero_grad()  # noqa: GL002'),
    ],
)
def test_suppression_edit_merges_and_suppresses(line, expected):
    edited = apply(line, actions.suppression_edit(line, 0, "GL002"))
    assert edited == expected
    assert "GL002" in line_suppressions(edited)[1]  # what gradlint.check.suppress reads back


@pytest.mark.parametrize(
    "line",
    [
        "    opt.zero_grad()  # noqa",  # bare noqa silences everything already
        "    opt.zero_grad()  # noqa: GL002",
        "    opt.zero_grad()  # noqa: gl001, gl002",
        "    opt.zero_grad()  # gradlint: ignore[GL002]",
        "    x = opt.zero_grad() + \\",  # a comment after a continuation would break the code
    ],
)
def test_no_suppression_edit_when_already_suppressed_or_impossible(line):
    assert actions.suppression_edit(line, 0, "GL002") is None


def fake_finding(fix: Fix | None) -> Finding:
    return Finding(path="t.py", code="GL004", message="clip after step", span=Span(3, 5, 3, 20), fix=fix)


def test_fix_action_carries_every_edit():
    fix = Fix(
        "Move the clip before opt.step()",
        (Edit(Span(3, 1, 4, 1), ""), Edit(Span(2, 1, 2, 1), "    clip_grad_norm_(params, 1.0)\n")),
    )
    uri = "file:///t.py"
    diagnostic = {"range": actions.span_range(Span(3, 5, 3, 20)), "message": "clip after step", "code": "GL004"}
    action = actions.fix_action(fake_finding(fix), uri, diagnostic)
    assert action["title"] == "Move the clip before opt.step()"
    assert action["kind"] == "quickfix" and action["isPreferred"] is True
    assert action["diagnostics"] == [diagnostic]
    assert action["edit"]["changes"][uri] == [
        {"range": {"start": {"line": 2, "character": 0}, "end": {"line": 3, "character": 0}}, "newText": ""},
        {
            "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
            "newText": "    clip_grad_norm_(params, 1.0)\n",
        },
    ]
    # the dict is a valid LSP CodeAction
    from lsprotocol import types
    from lsprotocol.converters import get_converter

    structured = get_converter().structure(action, types.CodeAction)
    assert len(structured.edit.changes[uri]) == 2


def test_unsafe_fix_is_offered_marked_and_not_preferred():
    edit = Edit(Span(3, 5, 3, 5), "opt.zero_grad()\n    ")
    action = actions.fix_action(fake_finding(Fix("Insert opt.zero_grad()", (edit,), UNSAFE)), "file:///t.py", None)
    assert action["title"] == "Insert opt.zero_grad() (unsafe fix: review it)"
    assert action["isPreferred"] is False and action["kind"] == "quickfix"
    safe = actions.fix_action(fake_finding(Fix("Move it", (edit,))), "file:///t.py", None)
    assert safe["title"] == "Move it" and safe["isPreferred"] is True


def test_no_fix_action_without_a_fix():
    assert actions.fix_action(fake_finding(None), "file:///t.py", None) is None
    assert actions.fix_action(fake_finding(Fix("nothing", ())), "file:///t.py", None) is None


def test_hover_names_the_rule_and_links_its_docs():
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code()["GL004"]
    text = actions.hover_markdown(fake_finding(None))
    assert text.startswith(f"**GL004 {rule.name}**: clip after step")
    assert rule.rationale.strip() in text and rule.docs_url in text
    unknown = Finding(path="t.py", code="XX999", message="m", span=Span(1, 1, 1, 2))
    assert actions.hover_markdown(unknown) == "**XX999** m"




def test_check_document_diagnostics_match_findings():
    check = check_document(BUGGY, "t.py", "file:///t.py", Settings.default())
    assert [f.code for f in check.findings] == ["GL002"]
    (diagnostic,) = check.diagnostics
    assert diagnostic["range"] == {"start": {"line": 7, "character": 4}, "end": {"line": 7, "character": 19}}
    assert check.internal_errors == []
    assert finding_at(check.findings, 7, 4) is check.findings[0]
    assert finding_at(check.findings, 7, 19) is check.findings[0]
    assert finding_at(check.findings, 7, 20) is None
    assert findings_on_lines(check.findings, 0, 6) == []
    assert findings_on_lines(check.findings, 7, 7) == check.findings


def test_unparsable_buffer_is_one_syntax_error_diagnostic_at_the_error():
    broken = BUGGY.replace("opt.step()", "opt.step(")
    check = check_document(broken, "t.py", "file:///t.py", Settings.default())
    assert check.findings == []
    (diagnostic,) = check.diagnostics
    assert diagnostic["code"] == "syntax-error" and diagnostic["severity"] == 1
    assert diagnostic["range"]["start"]["line"] == 8
    assert "was never closed" in diagnostic["message"]


def test_a_buffer_only_libcst_rejects_keeps_its_error():
    # valid for CPython 3.11 only if libcst is stricter; whichever parser fails, the result is one diagnostic
    check = check_document("x = (\n", "t.py", "file:///t.py", Settings.default())
    assert [d["code"] for d in check.diagnostics] == ["syntax-error"]
    assert check.diagnostics[0]["range"]["start"]["line"] == 0


def test_guarded_handler_logs_and_returns_none():
    from gradlint.lsp.server import guarded

    class FakeServer:
        def __init__(self):
            self.logged = []

        def log(self, message, kind):
            self.logged.append((message, kind))

    @guarded
    def explode(ls, params):
        raise KeyError("missing")

    server = FakeServer()
    assert explode(server, None) is None
    ((message, kind),) = server.logged
    assert "error in explode: KeyError" in message and int(kind) == 1


def test_importing_gradlint_and_the_checker_does_not_import_pygls():
    code = (
        "import sys, gradlint, gradlint.check.engine, gradlint.commands.cli, gradlint.report.lsp\n"
        "gradlint.check.engine.check_source('x = 1\\n', 'x.py')\n"
        "assert not [m for m in sys.modules if m.startswith(('pygls', 'lsprotocol'))], sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lsp_usage_error_exits_2_without_traceback():
    run = subprocess.run([sys.executable, "-m", "gradlint", "lsp", "--tcp", "nowhere"], check=False, capture_output=True, text=True)
    assert run.returncode == 2
    assert "expected HOST:PORT" in run.stderr and "Traceback" not in run.stderr


def test_tcp_mode_serves_a_session_and_exits_quietly():
    import json

    from lsp_snippets import start_tcp_server

    server, conn = start_tcp_server()
    try:
        stream = conn.makefile("rb")

        def send(message: dict) -> None:
            body = json.dumps({"jsonrpc": "2.0", **message}).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

        def receive() -> dict:
            length = 0
            while (header := stream.readline().strip()) != b"":
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            return json.loads(stream.read(length))

        send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        assert receive()["result"]["serverInfo"]["name"] == "gradlint"
        send({"method": "initialized", "params": {}})
        document = {"uri": "file:///tmp/train.py", "languageId": "python", "version": 1, "text": BUGGY}
        send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
        while (message := receive()).get("method") != "textDocument/publishDiagnostics":
            pass
        assert [d["code"] for d in message["params"]["diagnostics"]] == ["GL002"]
        send({"id": 2, "method": "shutdown"})
        assert receive()["id"] == 2
        send({"method": "exit"})
        _, err = server.communicate(timeout=20)
        conn.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0
    assert b"Traceback" not in err


async def test_debounce_runs_one_check_for_a_burst_of_changes():
    import asyncio

    from gradlint.lsp.server import GradlintServer

    server = GradlintServer()
    published = []

    async def publish(uri):
        published.append(uri)

    server.publish = publish
    for _ in range(5):  # five keystrokes inside one debounce window
        server.schedule("file:///a.py", 0.05)
    server.schedule("file:///b.py", 0.05)
    await asyncio.sleep(0.3)
    assert sorted(published) == ["file:///a.py", "file:///b.py"]
    assert server.pending == {}
    server.schedule("file:///a.py", 0.05)
    server.forget("file:///a.py")  # closed before its check ran
    await asyncio.sleep(0.2)
    assert published.count("file:///a.py") == 1
