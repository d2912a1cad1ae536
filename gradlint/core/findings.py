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

from gradlint.core.display import shown


@dataclass(frozen=True, order=True)
class Span:
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class CellSpan:
    """Where a notebook's finding is for its reader (the Span stays the line in the joined code
    cells, which suppressions and fixes work on): the cell, counted from 1 over every cell,
    markdown included (as Jupyter shows them and ruff names them); the line and column in that
    cell's own source; and the line of the .ipynb file that holds the span's first line, for the
    formats that can only point at a line of the file (GitHub annotations, SARIF, JUnit)."""

    cell: int
    span: Span
    file_line: int

    def label(self) -> str:
        return f"cell {self.cell}, line {self.span.line}"

    @staticmethod
    def from_dict(data: "dict | None") -> "CellSpan | None":
        if data is None:
            return None
        return CellSpan(data["cell"], Span(**data["span"]), data["file_line"])


@dataclass(frozen=True)
class Related:
    """Another event that makes a finding a bug (the backward, the step)."""

    span: Span
    message: str
    cell: Optional[CellSpan] = None  # in a notebook: where it is for the reader
    # The file it is in when that is not the finding's own (project-wide analysis: the clip
    # inside a trainer method that a loop of this file calls); None: the finding's file.
    path: Optional[str] = None

    def label(self, finding_cell: "CellSpan | None" = None, finding_path: "str | None" = None) -> str:
        """How a message names this event's line: `line 14` (in a notebook, the line in the
        cell, with the cell named when it is not the finding's own; in another file of the
        project, `trainer.py line 14`)."""
        if self.path is not None and self.path != finding_path:
            return f"{shown(self.path)} line {self.span.line}"
        if self.cell is None:
            return f"line {self.span.line}"
        if finding_cell is not None and finding_cell.cell == self.cell.cell:
            return f"line {self.cell.span.line}"
        return self.cell.label()


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
    cell: Optional[CellSpan] = None  # in a notebook: where it is for the reader (see CellSpan)

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
                Related(Span(**r["span"]), r["message"], CellSpan.from_dict(r.get("cell")), r.get("path"))
                for r in data.get("related", ())
            ),
            fix=None if fix is None else Fix.from_dict(fix),
            cell=CellSpan.from_dict(data.get("cell")),
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
# A file that was checked but whose edit (--fix, --add-noqa) could not be written: its findings
# stay reported, it counts as checked (whole_file False), and the run exits 1 (gradlint/edit/rewrite.py).
WRITE_ERROR = "write-error"
# Kinds that make the run exit 2 (and SARIF's executionSuccessful false for gradlint's own).
TOOL_FAILURES = (INTERNAL_ERROR, TIMEOUT)
EXIT_ERROR_KINDS = TOOL_FAILURES + (NOT_PYTHON,)
FILE_ERROR_KINDS = (SYNTAX_ERROR, READ_ERROR, INTERNAL_ERROR, TIMEOUT, NOT_PYTHON, WRITE_ERROR)  # `gradlint explain` knows each


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
    cell: Optional[CellSpan] = None  # in a notebook: where it is for the reader (see CellSpan)

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(data: dict) -> "FileError":
        return FileError(**{**data, "cell": CellSpan.from_dict(data.get("cell"))})


# The verdicts of a call that can be a gradient event (gradlint/model/coverage.py decides them).
FOLLOWED = "followed"  # part of a modelled iteration: the rules read it
NOT_TRAINING = "not training"  # the model can say why it is no training code
NOT_FOLLOWED = "not followed"  # training code the analysis does not reach: the checker is blind there
# Left for the run to decide: no loop of this file reaches the call's function, and only the
# other files can say whether one calls it (`reason`: the function, `Class.method` for a method).
UNREACHED = "unreached"


@dataclass(frozen=True)
class GradientCall:
    """A call that can be a gradient event (a backward, an optimizer's step or clear, a clip,
    an unscale, a scheduler's step): where it is, its verdict and, unless followed, why."""

    line: int
    col: int
    verdict: str
    reason: str = ""

    def to_list(self) -> list:
        return [self.line, self.col, self.verdict, self.reason]

    @staticmethod
    def from_list(data) -> "GradientCall":
        line, col, verdict, reason = data
        if not (type(line) is int and type(col) is int and isinstance(verdict, str) and isinstance(reason, str)):
            raise TypeError("a gradient call is [line, col, verdict, reason]")
        return GradientCall(line, col, verdict, reason)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Findings a `# noqa` comment silenced; kept so --show-suppressed can list them.
    suppressed: list[Finding] = field(default_factory=list)
    # The digest (gradlint/core/digest.py) of the bytes this result describes, when they came from a
    # file: an edit (--fix, --add-noqa) refuses a file that no longer holds them.  Not reported.
    source_digest: Optional[str] = field(default=None, compare=False, repr=False)
    # Every call of the file that can be a gradient event, with its verdict (what the run
    # reports as not followed); `reached`: (path, line, col) of the calls of other files this
    # file's loops followed into; `called`: the names the file calls (not defines), which tell
    # the run whether an UNREACHED call's function has a caller.  Kept by the cache.
    gradient_calls: list[GradientCall] = field(default_factory=list)
    reached: list[tuple] = field(default_factory=list)
    called: frozenset = frozenset()

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "errors": [e.to_dict() for e in self.errors],
            "suppressed": [f.to_dict() for f in self.suppressed],
            "gradient_calls": [c.to_list() for c in self.gradient_calls],
            "reached": [list(r) for r in self.reached],
            "called": sorted(self.called),
        }

    @staticmethod
    def from_dict(data: dict) -> "FileResult":
        reached = [tuple(r) for r in data.get("reached", [])]
        if not all(len(r) == 3 and isinstance(r[0], str) and type(r[1]) is int and type(r[2]) is int for r in reached):
            raise TypeError("a reached call is [path, line, col]")
        called = data.get("called", [])
        if not all(isinstance(name, str) for name in called):
            raise TypeError("called names are strings")
        return FileResult(
            path=data["path"],
            findings=[Finding.from_dict(f) for f in data["findings"]],
            errors=[FileError.from_dict(e) for e in data["errors"]],
            suppressed=[Finding.from_dict(f) for f in data.get("suppressed", [])],
            gradient_calls=[GradientCall.from_list(c) for c in data.get("gradient_calls", [])],
            reached=reached,
            called=frozenset(called),
        )
