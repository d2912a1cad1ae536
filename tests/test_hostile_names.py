"""File names that are not UTF-8 or hold control characters, in every output format.

A POSIX name is any bytes but `/` and NUL: a Latin-1 name (`caf\\xe9.py`), a name with a
newline that would forge a second finding line, one with a terminal escape.  Each format
shows them escaped (gradlint/core/display.py), keeps the report parseable, and lets a
machine get the name back.  The runs are real processes: the bytes that reach standard
output are what is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from ci_snippets import GL002_LOOP, snippet
from gradlint.core.display import escaped, shown

REPO = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = REPO.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"

LATIN1 = b"caf\xe9.py"
FORGED = b"a\nb.py:1:1: GL999 forged.py"
ESCAPE = b"esc\x1b[31mred.py"
NAMES = (LATIN1, FORGED, ESCAPE)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="names that are any bytes: a POSIX file system")


@pytest.fixture
def hostile(tmp_path):
    """Three files with one GL002 each (line 8), under hostile names, and a broken one."""
    text = snippet(GL002_LOOP).encode("utf-8")
    for name in NAMES:
        (Path(os.fsdecode(tmp_path)) / os.fsdecode(name)).write_bytes(text)
    (tmp_path / os.fsdecode(b"syn\x1btax.py")).write_bytes(b"import torch\nloss.backward(\n")
    return tmp_path


def gradlint(cwd, *argv, env=None) -> tuple[int, bytes, bytes]:
    environment = {**os.environ, "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8", **(env or {})}
    done = subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", *argv], cwd=cwd, env=environment,
                          capture_output=True, timeout=120)
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_shown_quotes_what_is_not_printable_and_leaves_the_rest():
    assert shown("train.py") == "train.py"
    assert shown("entraînement/modèle.py") == "entraînement/modèle.py"  # printable Unicode as it is
    assert shown(os.fsdecode(LATIN1)) == '"caf\\xe9.py"'  # the byte, not a surrogate
    assert shown("a\nb.py") == '"a\\nb.py"'
    assert shown("e\x1b[31m.py") == '"e\\x1b[31m.py"'
    assert shown('say "hi".py') == '"say \\"hi\\".py"'  # a quoted name is never a name with quotes
    assert shown("back\\slash\x07.py") == '"back\\\\slash\\x07.py"'
    assert shown("rtl\u202e.py") == '"rtl\\u202e.py"'  # a bidi override reorders the line
    assert escaped("tab\there") == "tab\\there"


def test_text_escapes_names_and_forges_no_line(hostile):
    code, out, err = gradlint(hostile, ".")
    assert code == 1, err
    text = out.decode("utf-8")  # strict: every byte is UTF-8
    assert "\x1b" not in text
    lines = text.splitlines()
    assert sorted(line.split(": GL002")[0] for line in lines if ": GL002 " in line) == sorted(
        ['"caf\\xe9.py":8:5', '"a\\nb.py:1:1: GL999 forged.py":8:5', '"esc\\x1b[31mred.py":8:5']
    )
    assert not any(line.startswith("b.py:1:1") for line in lines)  # no forged line
    assert any(line.startswith('"syn\\x1btax.py":') for line in lines)


def test_json_names_round_trip_to_the_bytes(hostile):
    code, out, err = gradlint(hostile, "--output-format", "json", ".")
    assert code == 1, err
    out.decode("ascii")
    data = json.loads(out)
    paths = {os.fsencode(finding["path"]) for finding in data["findings"]}
    assert paths == set(NAMES)
    for path in paths:
        assert (hostile / os.fsdecode(path)).is_file()


def test_sarif_is_valid_and_its_uris_are_the_names_bytes(hostile):
    code, out, err = gradlint(hostile, "--output-format", "sarif", ".")
    assert code == 1, err
    out.decode("ascii")
    data = json.loads(out)
    if SARIF_SCHEMA.is_file():
        import jsonschema

        schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
        jsonschema.validators.validator_for(schema)(schema).validate(data)
    run = data["runs"][0]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]]
    assert sorted(unquote_to_bytes(uri) for uri in uris) == sorted(NAMES)
    assert all(uri.isascii() and uri.isprintable() and " " not in uri for uri in uris)
    notified = run["invocations"][0]["toolExecutionNotifications"]
    assert [unquote_to_bytes(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for n in notified] == [
        b"syn\x1btax.py"
    ]


def test_junit_is_well_formed_xml(hostile):
    code, out, err = gradlint(hostile, "--output-format", "junit", ".")
    assert code == 1, err
    root = ET.fromstring(out)  # raises on a byte that is not UTF-8 or a control character
    suites = sorted(suite.get("name") for suite in root.iter("testsuite"))
    assert suites == sorted(shown(os.fsdecode(n)) for n in NAMES + (b"syn\x1btax.py",))


def test_github_commands_hold_no_control_character(hostile):
    code, out, err = gradlint(hostile, "--output-format", "github", ".")
    assert code == 1, err
    lines = out.decode("utf-8").splitlines()
    assert len(lines) == 4 and all(line.startswith("::error file=") for line in lines)
    assert all(line.isprintable() for line in lines)


def test_lsp_uris_are_the_names_bytes(hostile):
    code, out, err = gradlint(hostile, "--output-format", "lsp", ".")
    assert code == 1, err
    data = json.loads(out)
    names = sorted(unquote_to_bytes(uri).rsplit(b"/", 1)[1] for uri, found in data.items() if found)
    assert names == sorted(NAMES + (b"syn\x1btax.py",))


def test_show_fixes_and_error_lines_escape_names(hostile):
    code, out, err = gradlint(hostile, "--diff", "--unsafe-fixes", "--show-fixes", os.fsdecode(LATIN1))
    assert code == 1
    assert b'"caf\\xe9.py": would fix' in err
    assert b'--- "a/caf\\xe9.py"' in out
    code, out, err = gradlint(hostile, "--output-file", os.fsdecode(b"no/such\x1b/out.txt"), ".")
    assert code == 2
    assert b"\x1b" not in err and b"no/such\\x1b/out.txt" in err
