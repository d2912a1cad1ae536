"""Code actions and hover text as plain LSP dicts (no pygls).

Positions are 0-based lines and code-point columns, like documents.py.
"""

from __future__ import annotations

import re

from gradlint.core.findings import Finding, Fix, Span

# The forms gradlint.check.suppress honours.  Used to merge a new code into an
# existing list; the tests check the edited line really suppresses the code.
_NOQA_LIST = re.compile(r"#\s*noqa:\s*[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*", re.I)
_NOQA_BARE = re.compile(r"#\s*noqa(?!\s*:)", re.I)
_IGNORE = re.compile(r"#\s*gradlint:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)


def _comment_start(line: str) -> int:
    """Index of the `#` that starts the line's comment, or -1 (quotes on this line respected)."""
    quote = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == "\\":
                index += 1
            elif line.startswith(quote, index):
                index += len(quote) - 1
                quote = None
        elif char == "#":
            return index
        elif char in "'\"":
            quote = line[index : index + 3] if line[index : index + 3] in ("'''", '"""') else char
            index += len(quote) - 1
        index += 1
    return -1


def _codes(text: str) -> set[str]:
    return {c.upper() for c in re.split(r"[\s,]+", text) if c}


def suppression_edit(line_text: str, line: int, code: str) -> dict | None:
    """The TextEdit that makes `# noqa` on this line cover `code`; None if it already does or cannot.

    Merges into an existing `# noqa: A, B` (or `# gradlint: ignore[A]`) list;
    otherwise appends `  # noqa: CODE` at the end of the line.
    """
    code = code.upper()
    hash_at = _comment_start(line_text)
    comment = line_text[hash_at:] if hash_at >= 0 else ""
    if comment:
        if _NOQA_BARE.search(comment):
            return None  # a bare noqa comment silences every code already
        match = _NOQA_LIST.search(comment)
        if match:
            if code in _codes(match.group(0).split(":", 1)[1]):
                return None
            at = hash_at + match.end()
            return _insert(line, at, f", {code}")
        match = _IGNORE.search(comment)
        if match:
            if code in _codes(match.group("codes")):
                return None
            at = hash_at + match.end("codes")
            return _insert(line, at, f", {code}" if match.group("codes").strip() else code)
    code_part = line_text[:hash_at] if hash_at >= 0 else line_text
    if code_part.rstrip().endswith("\\"):
        return None  # a comment after a line continuation would break the code
    end = len(line_text.rstrip())  # after any other comment; trailing blanks replaced
    return {
        "range": _range(line, end, line, len(line_text)),
        "newText": f"  # noqa: {code}",
    }


def suppression_action(finding: Finding, line_text: str, uri: str, diagnostic: dict | None) -> dict | None:
    edit = suppression_edit(line_text, finding.span.line - 1, finding.code)
    if edit is None:
        return None
    return _action(f"Suppress {finding.code} on this line", "quickfix", uri, [edit], diagnostic)


def fix_edits(fix: Fix) -> list[dict]:
    return [{"range": span_range(edit.span), "newText": edit.new_text} for edit in fix.edits]


def proven_fix(text: str, path: str, findings: list[Finding], finding: Finding, check) -> Fix | None:
    """The repair `--fix --unsafe-fixes` would apply to `finding` in this buffer (fix/session.py
    `decide`, the decision behind every mark and fix): an editor offers no quick fix that would
    leave the finding or add another one.  `check(text)` analyses a version of the buffer."""
    from gradlint.core.findings import FileResult
    from gradlint.fix.session import decide

    return decide(text, FileResult(path, list(findings)), finding, check, unsafe=True).fix


def fix_action(finding: Finding, uri: str, diagnostic: dict | None) -> dict | None:
    """The finding's fix as a quick fix (the server passes a proven one, see proven_fix); an
    unsafe one says so in its title and is never the preferred action (editors apply
    preferred fixes on a keystroke)."""
    if finding.fix is None or not finding.fix.edits:
        return None
    fix = finding.fix
    title = fix.description if fix.safe else f"{fix.description} (unsafe fix: review it)"
    action = _action(title, "quickfix", uri, fix_edits(fix), diagnostic)
    action["isPreferred"] = fix.safe
    return action


def hover_markdown(finding: Finding) -> str:
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code().get(finding.code)
    if rule is None:
        return f"**{finding.code}** {finding.message}"
    parts = [
        f"**{rule.code} {rule.name}**: {finding.message}",
        rule.summary,
        rule.rationale,
        f"[{rule.code} documentation]({rule.docs_url})",
    ]
    return "\n\n".join(part.strip() for part in parts if part.strip())


def span_range(span: Span) -> dict:
    return _range(span.line - 1, span.col - 1, span.end_line - 1, span.end_col - 1)


def _range(line: int, character: int, end_line: int, end_character: int) -> dict:
    return {
        "start": {"line": line, "character": character},
        "end": {"line": end_line, "character": end_character},
    }


def _insert(line: int, at: int, text: str) -> dict:
    return {"range": _range(line, at, line, at), "newText": text}


def _action(title: str, kind: str, uri: str, edits: list[dict], diagnostic: dict | None) -> dict:
    action = {"title": title, "kind": kind, "edit": {"changes": {uri: edits}}}
    if diagnostic is not None:
        action["diagnostics"] = [diagnostic]
    return action
