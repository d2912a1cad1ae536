"""Print the training loops gradlint models in files, with their events.

For each loop: where it starts, its kind, and its body as gradlint sees it,
one event per line (Z clear, B backward, U unscale, C clip, S step, L
schedule) with the receiver text and line, indented under the branches,
nested loops and inlined helpers that hold it.  Reading these is how the
study finds loops that gradlint models wrongly or not at all.

    python benchmarks/realworld/dump_loops.py FILE_OR_DIR... [--json]

Kept thin on purpose: it asks gradlint's engine for the text the checker
would parse (the screen) and gradlint.model.loops.build for the model, and
only formats what comes back.  When the model API changes, adapt here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Iterator

SOURCE_SUFFIXES = (".py", ".ipynb")


def read_source(path: str) -> str | None:
    """The file's text as the checker reads it (a notebook's code cells joined)."""
    data = Path(path).read_bytes()
    if path.lower().endswith(".ipynb"):
        from gradlint.check.notebook import notebook_source

        text, _where, error = notebook_source(data, path)
        return None if error is not None else text
    from gradlint.check.engine import decode

    text, error = decode(data, path)
    return None if error is not None else text


def index_project(paths: list[str]) -> None:
    """Index the files under `paths` as one run would (gradlint/project), so that file_model
    and check() model loops that call functions of other modules of the project."""
    from gradlint.run.cache import content_digest
    from gradlint.run import project_run as run

    files = []
    for path in source_files(paths):
        if path.endswith(SOURCE_SUFFIXES):  # a notebook that imports the project's modules calls into it too
            data = Path(path).read_bytes()
            text = read_source(path)
            if text is not None:
                files.append((path, text, content_digest(data), None))
    index, views = run.index_files(files, paths)
    run.install(index, views)


def project_for(path: str):
    from gradlint.run.project_run import project_for as find

    return find(path)


def file_model(source: str, path: str):
    """gradlint's FileModel of a source text, or None when the checker would not parse it
    (in the project installed by index_project, if any)."""
    from gradlint.options.settings import Settings

    settings = Settings.default()
    from gradlint.check.prefilter import for_wrappers

    project = project_for(path)
    if project is None and not for_wrappers(settings.wrappers).may_hold_events(source):
        return None
    from gradlint.check import engine
    from gradlint.parse.file_context import FileContext
    from gradlint.model.loops import build

    context = FileContext(path, source)
    text = engine._screen(context, settings, project)
    if text is None:
        return None
    module, parsed = engine._parse_screened(text, source, path)
    return build(module, path, source, settings.wrappers, parsed_text=parsed, project=project, context=context)


def describe_event(event) -> str:
    target = event.optimizer or event.module or ""
    flags = [name for name in ("accumulation_guarded", "sync_only", "scaled", "clears", "closure",
                               "unknown_target", "overwrites", "unscales", "plateau")
             if getattr(event, name, False)]
    extra = f" [{', '.join(flags)}]" if flags else ""
    via = f" via {'/'.join(event.via)}" if getattr(event, "via", ()) else ""
    on = f" on {target}" if target else ""
    return f"{event.kind} L{event.span.line} {event.text}{on}{extra}{via}"


def has_events(nodes) -> bool:
    for node in nodes:
        if type(node).__name__ == "Event":
            return True
        for child in ("then", "orelse", "body"):
            if has_events(getattr(node, child, ())):
                return True
    return False


def tree_lines(nodes, depth: int = 1) -> Iterator[str]:
    """The loop body as indented lines; node types are read by name so renames only drop detail.

    Branches, loops and helper calls without any event inside are left out: they are noise here."""
    pad = "  " * depth
    for node in nodes:
        kind = type(node).__name__
        if kind in ("Branch", "Nested", "Helper") and not has_events([node]) or kind == "Rebind":
            continue
        if kind == "Event":
            yield pad + describe_event(node)
        elif kind == "Branch":
            marks = "".join(m for m, on in (("A", node.accumulation), ("I", node.invariant)) if on)
            yield f"{pad}if {node.key}" + (f"  [{marks}]" if marks else "")
            yield from tree_lines(node.then, depth + 1)
            if node.orelse:
                yield pad + "else"
                yield from tree_lines(node.orelse, depth + 1)
        elif kind == "Nested":
            yield pad + "loop"
            yield from tree_lines(node.body, depth + 1)
        elif kind == "Helper":
            yield pad + "call"
            yield from tree_lines(node.body, depth + 1)
        elif kind == "Jump":
            yield pad + node.kind
        else:
            yield f"{pad}{kind}"


def sequence(loop) -> str:
    """The flat event string of a loop, e.g. `Z B C S L`."""
    return " ".join(e.kind for e in loop.events)


def loops_of(path: str) -> list[dict]:
    source = read_source(path)
    if source is None:
        return []
    model = file_model(source, path)
    if model is None:
        return []
    return [
        {
            "line": loop.span.line,
            "kind": loop.kind,
            "sequence": sequence(loop),
            "events": [
                {"kind": e.kind, "line": e.span.line, "text": e.text,
                 "target": e.optimizer or e.module}
                for e in loop.events
            ],
            "tree": list(tree_lines(loop.body)),
        }
        for loop in model.loops
    ]


def source_files(paths: list[str]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if name.endswith(SOURCE_SUFFIXES):
                        yield os.path.join(root, name)
        else:
            yield path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--json", action="store_true", help="one JSON object per file with loops")
    args = parser.parse_args(argv)
    index_project(args.paths)  # loops that call a training step of another module, as a run models them
    for path in source_files(args.paths):
        try:
            loops = loops_of(path)
        except Exception as exc:  # a file gradlint cannot model: say so, keep going
            print(f"{path}: cannot model: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        if not loops:
            continue
        if args.json:
            print(json.dumps({"path": path, "loops": loops}))
            continue
        for loop in loops:
            print(f"{path}:{loop['line']}: {loop['kind']} loop: {loop['sequence']}")
            for line in loop["tree"]:
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
