"""Diagnostics one buffer's check gives another file.

A loop in train.py that runs trainer.py's clip after its step makes a finding that stands on
the clip, in trainer.py (gradlint/check/elsewhere.py).  The language server shows it in
trainer.py's diagnostics, beside that file's own, for as long as train.py's latest check
finds it: each buffer's check replaces what it gave before, and a closed buffer gives nothing.
trainer.py's own `# noqa` comments (its open buffer's text, else the file on disk) silence it.
"""

from __future__ import annotations

import os
from typing import Callable, Optional

from gradlint.core.findings import Finding


class Contributions:
    def __init__(self) -> None:
        # the buffer that checked -> {the other file's uri -> its diagnostics}
        self._given: dict[str, dict[str, list[dict]]] = {}

    def give(self, source_uri: str, findings: list[Finding], text_of: Callable[[str], Optional[str]]) -> set:
        """What the check of `source_uri` gives other files now (its findings made elsewhere);
        returns the uris whose contributions changed (those to publish again).  `text_of`: a
        path -> its text now (the open buffer's, else the file's), None when unreadable."""
        from gradlint.check.suppress import apply_suppressions
        from gradlint.report.lsp import path_uri, to_diagnostic

        by_path: dict[str, list[Finding]] = {}
        for finding in findings:
            by_path.setdefault(os.path.abspath(finding.path), []).append(finding)
        given: dict[str, list[dict]] = {}
        for path, found in by_path.items():
            text = text_of(path)
            kept = apply_suppressions(found, text)[0] if text is not None else found
            if kept:
                uri = path_uri(path)
                given[uri] = [to_diagnostic(f, uri) for f in kept]
        before = self._given.pop(source_uri, {})
        if given:
            self._given[source_uri] = given
        return {uri for uri in set(before) | set(given) if before.get(uri) != given.get(uri)}

    def withdraw(self, source_uri: str) -> set:
        """A closed buffer gives nothing: the uris it gave to."""
        return set(self._given.pop(source_uri, {}))

    def to(self, uri: str, own: list[dict]) -> list[dict]:
        """`own` (the file's own diagnostics) and what other buffers give it, each finding once."""
        seen = {_key(d) for d in own}
        out = list(own)
        for source in sorted(self._given):
            for diagnostic in self._given[source].get(uri, ()):
                if _key(diagnostic) not in seen:
                    seen.add(_key(diagnostic))
                    out.append(diagnostic)
        return out


def _key(diagnostic: dict) -> tuple:
    start = diagnostic["range"]["start"]
    return (diagnostic.get("code"), start["line"], start["character"])
