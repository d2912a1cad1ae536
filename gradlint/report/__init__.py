"""One formatter per output format.  Each takes a RunResult and returns text."""

FORMATS = ("text",)


def render(fmt: str, run) -> str:
    if fmt == "text":
        from gradlint.report.text import render as text

        return text(run)
    raise ValueError(f"unknown output format: {fmt}")
