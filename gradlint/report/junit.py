"""`--output-format junit`: JUnit XML for CI test-report viewers.

One <testsuite> per checked file.  Each finding is a failed <testcase>
named after its code and line; a file that could not be checked is a
<testcase> with an <error>; a clean file is one passing <testcase>, so a
report of a clean run still lists what was checked.  In a notebook the
name says the cell (`GL002 ... (cell 3, line 4)`), the `line` attribute is
the line of the .ipynb file that holds the source line, and the text reads
as the text format's `nb.ipynb:cell 3:4:5: GL002 ...`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gradlint.core.display import escaped, shown
from gradlint.report.meta import info
from gradlint.report.text import location


def _file_line(item) -> str:
    return str(item.cell.file_line if item.cell is not None else item.line)


def _named_line(item) -> str:
    return item.cell.label() if item.cell is not None else f"line {item.line}"


def _xml(text: str) -> str:
    """XML 1.0 holds no control character but tab and line ends, not even as a reference, and
    no lone surrogate: each line of the text with those escaped (file names come quoted already)."""
    return "\n".join(escaped(line) for line in text.split("\n"))


def render(run, show_suppressed: bool = False) -> str:
    findings, errors = run.findings(), run.errors()
    by_path: dict[str, dict[str, list]] = {}
    for result in run.results:
        by_path.setdefault(result.path, {"findings": [], "errors": []})
    for finding in findings:
        by_path.setdefault(finding.path, {"findings": [], "errors": []})["findings"].append(finding)
    for error in errors:
        by_path.setdefault(error.path, {"findings": [], "errors": []})["errors"].append(error)

    root = ET.Element("testsuites", name="gradlint")
    total = failures = error_count = 0
    for path in sorted(by_path):
        items = by_path[path]
        name = shown(path)
        suite = ET.SubElement(root, "testsuite", name=name)
        cases = 0
        for finding in items["findings"]:
            meta = info(finding.code)
            case = ET.SubElement(
                suite, "testcase", name=f"{finding.code} {meta.name} ({_named_line(finding)})",
                classname=name, file=name, line=_file_line(finding),
            )
            failure = ET.SubElement(case, "failure", message=_xml(finding.message), type=finding.code)
            failure.text = _xml(f"{location(finding)}: {finding.code} {finding.message}" + "".join(
                f"\n  {r.label(finding.cell, finding.path)}: {r.message}" for r in finding.related
            ))
            cases += 1
        for error in items["errors"]:
            case = ET.SubElement(suite, "testcase", name=error.kind, classname=name, file=name, line=_file_line(error))
            element = ET.SubElement(case, "error", message=_xml(error.message), type=error.kind)
            element.text = _xml(f"{location(error)}: error: {error.message}")
            cases += 1
        if cases == 0:
            ET.SubElement(suite, "testcase", name="gradlint", classname=name, file=name)
            cases = 1
        suite.set("tests", str(cases))
        suite.set("failures", str(len(items["findings"])))
        suite.set("errors", str(len(items["errors"])))
        total += cases
        failures += len(items["findings"])
        error_count += len(items["errors"])
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", str(error_count))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
