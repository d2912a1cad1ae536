"""One formatter per output format.  Each takes a RunResult and returns text.

Every format shows both findings and FileErrors (files that could not be
read or parsed); `show_suppressed` adds what a `# noqa` silenced where the
format has a place for it (text, json, sarif).
"""

from __future__ import annotations

import importlib

_MODULES = {
    "text": "text",
    "json": "json_output",
    "sarif": "sarif",
    "github": "github",
    "junit": "junit",
    "lsp": "lsp_output",
}
FORMATS = tuple(_MODULES)


def render(fmt: str, run, show_suppressed: bool = False, quiet: bool = False, show_unfollowed: bool = False) -> str:
    """`quiet` (-q): the text format leaves out its summary; the others have none to leave out.
    `show_unfollowed`: the text format lists the gradient calls the analysis does not follow
    (json and sarif always carry them, as notes)."""
    if fmt not in _MODULES:
        raise ValueError(f"unknown output format: {fmt}")
    module = importlib.import_module(f"gradlint.report.{_MODULES[fmt]}")
    if fmt == "text":
        return module.render(run, show_suppressed=show_suppressed, quiet=quiet, show_unfollowed=show_unfollowed)
    return module.render(run, show_suppressed=show_suppressed)
