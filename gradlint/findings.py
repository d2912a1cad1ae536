"""What a check produces: findings on code, and diagnostics about files.

These are plain data shared by every side of gradlint (the checker, the
reports, the language server and the verifier), so they import nothing
heavy.  Lines are 1-based; columns are 1-based too (as ruff prints them);
reports that need 0-based positions (LSP, SARIF columns stay 1-based)
convert at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field, asdict
from typing import Optional


@dataclass(frozen=True, order=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Related:
    """Another event that makes a finding a bug (the backward, the step)."""

    span: Span
    message: str
    # The file it is in when that is not the finding's own (project-wide analysis: the clip
    # inside a trainer method that a loop of this file calls); None: the finding's file.
    path: Optional[str] = None

    def where(self, finding_path: str) -> str:
        """`line 12`, or `trainer.py line 12` for a location in another file."""
        return f"line {self.span.line}" if self.path in (None, finding_path) else f"{self.path} line {self.span.line}"


@dataclass(frozen=True)
class Edit:
    span: Span
    new_text: str


# How sure a fix is, as ruff says it: a safe fix does exactly what the rule
# describes (`--fix` applies it); an unsafe one had to choose something (which
# optimizer to clear) and wants a human look (`--unsafe-fixes`).
SAFE, UNSAFE = "safe", "unsafe"


@dataclass(frozen=True)
class Fix:
    description: str
    edits: tuple[Edit, ...]
    applicability: str = SAFE
    # Other repairs of the same finding, tried in order when this one does not
    # leave the file with strictly fewer findings (never shown in reports).
    alternatives: tuple["Fix", ...] = field(default=(), compare=False)

    @property
    def safe(self) -> bool:
        return self.applicability == SAFE

    @staticmethod
    def from_dict(data: dict) -> "Fix":
        return Fix(
            data["description"],
            tuple(Edit(Span(**e["span"]), e["new_text"]) for e in data["edits"]),
            data.get("applicability", SAFE),
            tuple(Fix.from_dict(a) for a in data.get("alternatives", ())),
        )


@dataclass(frozen=True)
class Finding:
    path: str
    code: str
    message: str
    span: Span
    related: tuple[Related, ...] = ()
    fix: Optional[Fix] = None

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def col(self) -> int:
        return self.span.col

    def sort_key(self):
        return (self.path, self.span.line, self.span.col, self.code)

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict) -> "Finding":
        fix = data.get("fix")
        return Finding(
            path=data["path"],
            code=data["code"],
            message=data["message"],
            span=Span(**data["span"]),
            related=tuple(
                Related(Span(**r["span"]), r["message"], r.get("path")) for r in data.get("related", ())
            ),
            fix=None if fix is None else Fix.from_dict(fix),
        )


# Kinds of file diagnostics.  A syntax or read error is the user's input
# (exit 1 at least); an internal error or a timeout is gradlint's own
# failure (exit 2).
SYNTAX_ERROR = "syntax-error"
READ_ERROR = "read-error"
INTERNAL_ERROR = "internal-error"
# The analysis of one file ran past its time limit: gradlint's failure, as an internal error is.
TIMEOUT = "timeout"
# A file named on the command line that is not Python: a usage error for that file (exit 2).
NOT_PYTHON = "not-python"
# Kinds that make the run exit 2 (and SARIF's executionSuccessful false for gradlint's own).
TOOL_FAILURES = (INTERNAL_ERROR, TIMEOUT)
EXIT_ERROR_KINDS = TOOL_FAILURES + (NOT_PYTHON,)
FILE_ERROR_KINDS = (SYNTAX_ERROR, READ_ERROR, INTERNAL_ERROR, TIMEOUT, NOT_PYTHON)  # `gradlint explain` knows each


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked, with the reason in one line."""

    path: str
    kind: str
    message: str
    line: int = 1
    col: int = 1
    # False when only a part (a notebook cell) could not be checked and the rest was.
    whole_file: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Findings a `# noqa` comment silenced; kept so --show-suppressed can list them.
    suppressed: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "errors": [e.to_dict() for e in self.errors],
            "suppressed": [f.to_dict() for f in self.suppressed],
        }

    @staticmethod
    def from_dict(data: dict) -> "FileResult":
        return FileResult(
            path=data["path"],
            findings=[Finding.from_dict(f) for f in data["findings"]],
            errors=[FileError(**e) for e in data["errors"]],
            suppressed=[Finding.from_dict(f) for f in data.get("suppressed", [])],
        )
