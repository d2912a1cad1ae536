"""Every --output-format, parsed back and checked; --output-file, --statistics."""

import dataclasses
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ci_snippets import CLEAN_LOOP, GL002_LOOP, GL004_LOOP, run_cli, snippet, write
from gradlint.check.engine import RunResult
from gradlint.core.findings import Edit, FileResult, Finding, Fix, Related, Span
from gradlint.report import FORMATS, render

REPO = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = REPO.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"

EXPECTED = {("a.py", 8, "GL002"), ("b.py", 10, "GL004")}


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """a.py: GL002 at 8; b.py: GL004 at 10; clean.py; broken.py does not parse."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    write(tmp_path, "b.py", snippet(GL004_LOOP))
    write(tmp_path, "clean.py", snippet(CLEAN_LOOP))
    write(tmp_path, "broken.py", "for x in :\n    loss.backward()\n")  # a file without gradient events is never parsed
    return tmp_path


def output(capsys, fmt, *extra):
    code, out, err = run_cli(capsys, "--output-format", fmt, *extra, ".")
    assert code == 1, err
    assert "Traceback" not in err
    return out


def test_every_format_is_tested():
    tested = {name[len("test_"):].split("_")[0] for name in globals() if name.startswith("test_")}
    assert set(FORMATS) <= tested


def test_text(tree, capsys):
    out = output(capsys, "text")
    assert "a.py:8:5: GL002 [*] opt.zero_grad() discards" in out
    assert "b.py:10:5: GL004 [*] " in out
    assert re.search(r"^broken\.py:\d+:\d+: error: syntax error", out, re.M)
    assert out.splitlines()[-2:] == [
        "Found 2 problems in 2 files (3 files checked, 1 could not be checked).",
        "[*] 2 fixable with `--fix`.",
    ]


def test_json(tree, capsys):
    data = json.loads(output(capsys, "json"))
    assert (data["files_checked"], data["files_not_checked"]) == (3, 1)
    assert {(f["path"], f["line"], f["code"]) for f in data["findings"]} == EXPECTED
    gl002 = next(f for f in data["findings"] if f["code"] == "GL002")
    assert gl002["name"] == "zero-grad-discards-gradients"
    assert gl002["severity"] == "warning"
    assert (gl002["column"], gl002["end_line"], gl002["end_column"]) == (5, 8, 20)
    assert [r["line"] for r in gl002["related"]] == [7, 9]
    assert "opt.zero_grad()" in gl002["message"]
    assert gl002["fix"]["description"] == "Move opt.zero_grad() after opt.step()"
    assert sorted(e["line"] for e in gl002["fix"]["edits"]) == [8, 9]  # delete line 8, insert at the end of 9
    assert gl002["fix"]["applicability"] == "safe"
    assert [(e["path"], e["kind"]) for e in data["errors"]] == [("broken.py", "syntax-error")]


def _sarif_validator():
    if not SARIF_SCHEMA.is_file():
        pytest.skip(f"SARIF schema not found at {SARIF_SCHEMA} (the shared schemas directory is absent)")
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)


def test_sarif(tree, capsys):
    validator = _sarif_validator()
    data = json.loads(output(capsys, "sarif"))
    validator.validate(data)
    run = data["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = run["results"]
    assert {
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
         r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
        for r in results
    } == EXPECTED
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    gl002 = next(r for r in results if r["ruleId"] == "GL002")
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in gl002["relatedLocations"]] == [7, 9]
    assert "[line 7](1)" in gl002["message"]["text"]
    rule = rules[gl002["ruleIndex"]]
    assert rule["help"]["text"] and rule["fullDescription"]["text"] and rule["helpUri"].startswith("https://")
    notifications = run["invocations"][0]["toolExecutionNotifications"]
    assert [(n["descriptor"]["id"], n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
            for n in notifications] == [("syntax-error", "broken.py")]
    assert run["invocations"][0]["executionSuccessful"] is True


def test_sarif_links_each_related_line_once():
    """A message that names `(line 7)` gets that link in place, not a second `([line 7](1))`
    at its end; a related event the message does not name is linked at the end."""
    finding = Finding(
        "a.py", "GL002", "opt.zero_grad() (line 8) discards what loss.backward() (line 7) computed",
        Span(8, 5, 8, 20), (Related(Span(7, 5, 7, 20), "backward"), Related(Span(9, 5, 9, 15), "step")),
    )
    data = json.loads(render("sarif", RunResult([FileResult("a.py", findings=[finding])])))
    text = data["runs"][0]["results"][0]["message"]["text"]
    assert text == "opt.zero_grad() (line 8) discards what loss.backward() ([line 7](1)) computed ([line 9](2))"


def test_sarif_fix_and_suppression_and_absolute_path(tmp_path):
    validator = _sarif_validator()
    span = Span(8, 5, 8, 20)
    fixed = Finding(
        str(tmp_path / "x.py"), "GL002", "m", span,
        related=(Related(Span(7, 5, 7, 20), "the backward"),),
        fix=Fix("move zero_grad() before backward()", (Edit(span, ""), Edit(Span(7, 5, 7, 5), "opt.zero_grad()\n    "))),
    )
    quiet = Finding("y.py", "GL101", "advice", Span(3, 1, 3, 4))
    run = RunResult([FileResult(fixed.path, findings=[fixed]), FileResult("y.py", suppressed=[quiet])])
    data = json.loads(render("sarif", run, show_suppressed=True))
    validator.validate(data)
    first, second = data["runs"][0]["results"]
    (change,) = first["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == (tmp_path / "x.py").as_uri()
    assert [r["insertedContent"]["text"] for r in change["replacements"]] == ["", "opt.zero_grad()\n    "]
    assert change["replacements"][1]["deletedRegion"] == {"startLine": 7, "startColumn": 5, "endLine": 7, "endColumn": 5}
    assert first["fixes"][0]["properties"] == {"applicability": "safe"}
    assert second["suppressions"] == [{"kind": "inSource"}] and second["level"] == "note"
    # json shows the same fix
    (entry,) = json.loads(render("json", run))["findings"]
    assert entry["fix"]["description"].startswith("move") and len(entry["fix"]["edits"]) == 2


GITHUB = re.compile(
    r"^::(?P<level>error|warning) file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+)"
    r"(?:,endLine=\d+(?:,endColumn=\d+)?)?,title=(?P<title>[^:]+)::(?P<message>.+)$"
)


def test_github(tree, capsys):
    lines = output(capsys, "github").splitlines()
    matches = [GITHUB.match(line) for line in lines]
    assert all(matches), lines
    findings = {(m["file"], int(m["line"]), m["title"]) for m in matches if m["title"].startswith("GL")}
    assert findings == EXPECTED
    errors = [m for m in matches if not m["title"].startswith("GL")]
    assert [(m["file"], m["level"], m["title"]) for m in errors] == [("broken.py", "error", "gradlint syntax-error")]
    gl002 = next(m for m in matches if m["title"] == "GL002")
    assert gl002["level"] == "error" and "%0A  line 7: " in gl002["message"]


def test_github_escapes_properties_and_data():
    finding = Finding("dir,x/a:b.py", "GL101", "50% done\nnext", Span(1, 1, 2, 1))
    (line,) = render("github", RunResult([FileResult(finding.path, findings=[finding])])).splitlines()
    assert line == "::warning file=dir%2Cx/a%3Ab.py,line=1,col=1,endLine=2,title=GL101::50%25 done%0Anext"


def test_junit(tree, capsys):
    root = ET.fromstring(output(capsys, "junit"))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"a.py", "b.py", "broken.py", "clean.py"}
    failures = {
        (suite_name, int(case.get("line")), case.find("failure").get("type"))
        for suite_name, suite in suites.items()
        for case in suite.findall("testcase")
        if case.find("failure") is not None
    }
    assert failures == EXPECTED
    assert "opt.zero_grad() discards" in suites["a.py"].find("testcase/failure").get("message")
    assert suites["broken.py"].find("testcase/error").get("type") == "syntax-error"
    (clean_case,) = suites["clean.py"].findall("testcase")
    assert len(clean_case) == 0  # passed: no failure, no error


def test_lsp(tree, capsys):
    data = json.loads(output(capsys, "lsp"))
    uri = {name: (tree / name).resolve().as_uri() for name in ("a.py", "b.py", "clean.py", "broken.py")}
    assert set(data) == set(uri.values())
    assert data[uri["clean.py"]] == []
    (diagnostic,) = data[uri["a.py"]]
    assert diagnostic["code"] == "GL002" and diagnostic["source"] == "gradlint"
    assert diagnostic["range"]["start"] == {"line": 7, "character": 4}
    assert diagnostic["severity"] == 2 and diagnostic["codeDescription"]["href"].startswith("https://")
    assert [r["location"]["range"]["start"]["line"] for r in diagnostic["relatedInformation"]] == [6, 8]
    (error,) = data[uri["broken.py"]]
    assert error["severity"] == 1 and error["code"] == "syntax-error"
    assert data[uri["b.py"]][0]["code"] == "GL004"


def test_unknown_format(tree, capsys):
    code, out, err = run_cli(capsys, "--output-format", "xml", ".")
    assert code == 2 and out == "" and "xml" in err and "sarif" in err


# --- --output-file ------------------------------------------------------------------


def test_output_file_written_atomically(tree, capsys):
    target = tree / "out" / "report.sarif"
    target.parent.mkdir()
    code, out, _ = run_cli(capsys, "--output-format", "sarif", "--output-file", str(target), ".")
    assert code == 1 and out == ""
    data = json.loads(target.read_text())
    assert len(data["runs"][0]["results"]) == 2
    assert os.listdir(target.parent) == ["report.sarif"]  # no temp file left behind
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's 0600


def test_failed_run_leaves_output_file_alone(tree, capsys):
    target = tree / "report.json"
    target.write_text("previous report")
    write(tree, "pyproject.toml", "[tool.gradlint]\nselect = 3\n")
    code, _, err = run_cli(capsys, "--output-format", "json", "--output-file", str(target), ".")
    assert code == 2 and "select" in err
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tree.iterdir() if p.name.startswith(".report")) == []


def test_render_failure_leaves_no_partial_file(tree, capsys, monkeypatch):
    import gradlint.report.sarif as sarif

    target = tree / "report.sarif"
    monkeypatch.setattr(sarif, "render", lambda run, show_suppressed=False: 1 / 0)
    code, _, err = run_cli(capsys, "--output-format", "sarif", "-o", str(target), ".")
    assert code == 2 and "internal error" in err and "Traceback" not in err
    assert not target.exists()
    assert not [p for p in tree.iterdir() if p.name.endswith(".tmp")]


def test_output_file_in_missing_directory(tree, capsys):
    code, _, err = run_cli(capsys, "-o", str(tree / "nope" / "r.txt"), ".")
    assert code == 2 and "cannot write --output-file" in err


def test_output_file_through_a_symlink_writes_its_target_and_keeps_the_link(tree, capsys):
    real = tree / "reports" / "latest.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tree / "report.json"
    link.symlink_to(real)
    code, _, _ = run_cli(capsys, "--output-format", "json", "-o", str(link), ".")
    assert code == 1
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link is not replaced by a file
    assert len(json.loads(real.read_text())["findings"]) == 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_output_file_that_is_not_a_regular_file_is_written_into_never_replaced(tree, capsys):
    """`-o /dev/null`, `-o /dev/stdout`, a FIFO: opened and written, as a shell redirection
    does.  A rename over them replaced the device node itself (as root: /dev/null became a
    regular file for every program on the machine)."""
    import stat
    import threading

    fifo = tree / "report.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, _ = run_cli(capsys, "--output-format", "json", "-o", str(fifo), ".")
    reader.join(timeout=30)
    assert code == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a file put in its place
    assert received and len(json.loads(received[0])["findings"]) == 2


# --- --statistics, --exit-zero --------------------------------------------------------


def test_statistics(tree, capsys):
    write(tree, "c.py", snippet(GL002_LOOP))
    code, out, _ = run_cli(capsys, "--statistics", ".")
    assert code == 1
    assert out.splitlines() == [
        "2  GL002  zero-grad-discards-gradients",
        "1  GL004  clip-after-step",
        "1  files that could not be checked",
    ]
    rows = json.loads(run_cli(capsys, "--statistics", "--output-format", "json", ".")[1])
    assert rows == [
        {"code": "GL002", "name": "zero-grad-discards-gradients", "count": 2},
        {"code": "GL004", "name": "clip-after-step", "count": 1},
    ]
    assert run_cli(capsys, "--statistics", "--output-format", "sarif", ".")[0] == 2


def test_exit_zero(tree, capsys):
    code, out, _ = run_cli(capsys, "--exit-zero", "--output-format", "json", ".")
    assert code == 0 and len(json.loads(out)["findings"]) == 2


# --- the fixture corpus, through every format ---------------------------------------

FIXTURES = REPO / "fixtures"


def _parse(fmt: str, out: str, root: Path) -> set:
    if fmt == "json":
        return {(f["path"], f["line"], f["code"]) for f in json.loads(out)["findings"]}
    if fmt == "sarif":
        data = json.loads(out)
        _sarif_validator().validate(data)
        return {
            (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
             r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
            for r in data["runs"][0]["results"]
        }
    if fmt == "github":
        matches = [GITHUB.match(line) for line in out.splitlines()]
        assert all(matches)
        return {(m["file"], int(m["line"]), m["title"]) for m in matches if m["title"].startswith("GL")}
    if fmt == "junit":
        return {
            (case.get("classname"), int(case.get("line")), case.find("failure").get("type"))
            for case in ET.fromstring(out).iter("testcase")
            if case.find("failure") is not None
        }
    if fmt == "lsp":
        return {
            (Path(uri[len("file://"):]).relative_to(root).as_posix(), d["range"]["start"]["line"] + 1, d["code"])
            for uri, diagnostics in json.loads(out).items()
            for d in diagnostics
            if d["code"].startswith("GL")
        }
    raise AssertionError(fmt)


@pytest.fixture(scope="module")
def fixture_run():
    """One check of the fixture corpus (the CLI path is covered above; this is about the formats)."""
    if not FIXTURES.is_dir():
        pytest.skip("no fixtures directory")
    from gradlint.check.engine import check_paths
    from gradlint.options.settings import Settings

    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        run = check_paths(["fixtures"], Settings.default())
    finally:
        os.chdir(cwd)
    for result in run.results:  # `./fixtures/..` and `fixtures/..` alike
        result.findings = [dataclasses.replace(f, path=os.path.normpath(f.path)) for f in result.findings]
        result.path = os.path.normpath(result.path)
    return run


# One worker for the five: the module-scoped run of the corpus is then made once, not once per worker.
@pytest.mark.xdist_group("fixture_run")
@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "junit", "lsp"])
def test_fixture_findings_survive_every_format(fmt, fixture_run, monkeypatch):
    monkeypatch.chdir(REPO)
    expected = {(f.path.replace(os.sep, "/"), f.line, f.code) for f in fixture_run.findings()}
    assert len(expected) >= 10, "the fixtures should hold findings"
    assert _parse(fmt, render(fmt, fixture_run), REPO) == expected
