"""Break real, silent training loops on purpose and see whether gradlint notices.

For every loop gradlint models in the study's files and reports nothing on,
each mutant removes or moves one event of that loop (see OPERATORS; a
removed line becomes `pass`, a moved one is re-indented to its new place)
and checks the mutated text for the code that must fire.

A mutant gradlint stays silent on is a candidate miss: read it (some are
right to stay silent, e.g. an engine that clears for you).  Prints one line
per silent mutant and a summary per operator.

    python benchmarks/realworld/break_silent_loops.py [--own-steps] [PATH ...]   (default /work/study/src)

--own-steps: mutate only the functions read on their own as one training step (OWN_STEP).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dump_loops import file_model, index_project, project_for, read_source, source_files  # noqa: E402

from gradlint.core.events import OWN_STEP  # noqa: E402

OWN_STEPS_FLAG = "--own-steps"

OPERATORS = {
    # name: what the mutant does, the codes that must fire
    "no-clear": ("every Z of the loop removed", {"GL001", "GL003"}),
    "clear-before-step": ("a copy of the first Z put just before the last S", {"GL002"}),
    "clip-after-step": ("the C moved to just after the last S", {"GL004"}),
    "schedule-before-step": ("the L moved to just before the first S", {"GL008"}),
    "no-unscale": ("every U removed (the loop has a C)", {"GL006"}),
    "step-first": ("the first S moved to just before the first B", {"GL007"}),
    "clip-before-backward": ("the C moved to just before the last B", {"GL005"}),
    "swap-clear": ("one optimizer's clear replaced by another's (both cleared in the loop)", {"GL003"}),
}


def _single_line(events, kind):
    """Events of this file (one in another module's function is not this file's to edit)."""
    return [e for e in events if e.kind == kind and e.span.line == e.span.end_line and getattr(e, "path", None) is None]


def _alone(source_lines: list[str], event, loop) -> bool:
    """The event is the whole statement on its line (no `;`, no other event there)."""
    line = source_lines[event.span.line - 1]
    others = [e for e in loop.events if e.span.line == event.span.line and e.key != event.key]
    return not others and ";" not in line and line.lstrip().startswith(event.text[:20])


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def edit(source: str, remove: set[int], insert: dict[int, list[str]]) -> str:
    """Replace lines in `remove` by `pass`; put the (indented) `insert[n]` lines before line n (1-based)."""
    out = []
    lines = source.splitlines(keepends=True)
    for number, line in enumerate(lines + [""], start=1):
        out.extend(text + "\n" for text in insert.get(number, []))
        out.append(_indent(line) + "pass\n" if number in remove else line)
    return "".join(out)


def mutations(source: str, loop):
    """(operator, mutated source) for each operator that applies to this loop.  A function read
    on its own as one training step (OWN_STEP) gets no "no-clear" mutant: its caller may clear
    before each call, so a missing clear there is no bug the function alone can show."""
    lines = source.splitlines()
    kinds = {e.kind for e in loop.events}
    if not {"B", "S"} <= kinds:
        return
    own_step = getattr(loop, "kind", None) == OWN_STEP
    steps = [e for e in _single_line(loop.events, "S") if _alone(lines, e, loop)]
    if not steps:
        return
    first_step, last_step = min(steps, key=lambda e: e.span), max(steps, key=lambda e: e.span)
    clears = _single_line(loop.events, "Z")
    if clears and all(_alone(lines, e, loop) for e in clears):
        if not own_step:
            yield "no-clear", edit(source, {e.span.line for e in clears}, {})
        # the clear of the optimizer the last step uses: another optimizer's clear there is no bug
        own = [e for e in clears if e.optimizer and e.optimizer == last_step.optimizer]
        if own:
            text = _indent(lines[last_step.span.line - 1]) + lines[own[0].span.line - 1].strip()
            yield "clear-before-step", edit(source, set(), {last_step.span.line: [text]})
    clips = [e for e in _single_line(loop.events, "C") if _alone(lines, e, loop)]
    if len(clips) == 1 and clips[0].span < last_step.span:
        text = _indent(lines[last_step.span.line - 1]) + lines[clips[0].span.line - 1].strip()
        yield "clip-after-step", edit(source, {clips[0].span.line}, {last_step.span.line + 1: [text]})
    schedules = [e for e in _single_line(loop.events, "L") if _alone(lines, e, loop)
                 and not getattr(e, "plateau", False) and not getattr(e, "has_args", False)]
    if len(schedules) == 1 and schedules[0].span > first_step.span:
        text = _indent(lines[first_step.span.line - 1]) + lines[schedules[0].span.line - 1].strip()
        yield "schedule-before-step", edit(source, {schedules[0].span.line}, {first_step.span.line: [text]})
    backwards = [e for e in _single_line(loop.events, "B") if _alone(lines, e, loop)]
    if backwards and first_step.span > min(backwards, key=lambda e: e.span).span:
        first_b = min(backwards, key=lambda e: e.span)
        text = _indent(lines[first_b.span.line - 1]) + lines[first_step.span.line - 1].strip()
        yield "step-first", edit(source, {first_step.span.line}, {first_b.span.line: [text]})
    if backwards and len(clips) == 1 and clips[0].span > max(backwards, key=lambda e: e.span).span:
        last_b = max(backwards, key=lambda e: e.span)
        text = _indent(lines[last_b.span.line - 1]) + lines[clips[0].span.line - 1].strip()
        yield "clip-before-backward", edit(source, {clips[0].span.line}, {last_b.span.line: [text]})
    named = {}
    for e in clears:
        line = lines[e.span.line - 1].strip()
        if e.optimizer and line.startswith(e.optimizer + ".zero_grad(") and _alone(lines, e, loop):
            named.setdefault(e.optimizer, e)
    if len(named) >= 2:
        (first, event), (other, _) = list(named.items())[:2]
        text = _indent(lines[event.span.line - 1]) + lines[event.span.line - 1].strip().replace(first, other, 1)
        yield "swap-clear", edit(source, {event.span.line}, {event.span.line: [text]})
    unscales = _single_line(loop.events, "U")
    if "C" in kinds and unscales and all(_alone(lines, e, loop) for e in unscales):
        yield "no-unscale", edit(source, {e.span.line for e in unscales}, {})


def findings(source: str, path: str) -> set[str]:
    from gradlint.check.engine import check_source

    return {f.code for f in check_source(source, path, project=project_for(path)).findings}


def mutants(path: str, only_own_steps: bool = False):
    source = read_source(path)
    if source is None or path.endswith(".ipynb"):
        return
    model = file_model(source, path)
    if model is None or not model.loops or findings(source, path):
        return
    for loop in model.loops:
        if only_own_steps and getattr(loop, "kind", None) != OWN_STEP:
            continue
        for name, mutated in mutations(source, loop):
            yield name, loop.span.line, findings(mutated, path) & OPERATORS[name][1]


def repositories(paths: list[str]) -> list[list[str]]:
    """The study's folder holds one folder per repository: each is indexed as its own project."""
    out = []
    for path in paths:
        folder = Path(path)
        children = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        if children and "+" in children[0].name:  # /work/study/src/owner+name/...
            out.extend([str(child)] for child in children)
        else:
            out.append([path])
    return out


def main(argv: list[str] | None = None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    only_own_steps = OWN_STEPS_FLAG in args  # the functions read on their own, alone
    paths = [a for a in args if a != OWN_STEPS_FLAG] or ["/work/study/src"]
    caught: Counter = Counter()
    total: Counter = Counter()
    for repository in repositories(paths):
        index_project(repository)
        _run(repository, caught, total, only_own_steps)
    for name in OPERATORS:
        if total[name]:
            print(f"{name}: {caught[name]}/{total[name]} mutants caught ({100 * caught[name] / total[name]:.0f}%)")
    all_caught, all_total = sum(caught.values()), sum(total.values())
    if all_total:
        print(f"all: {all_caught}/{all_total} ({100 * all_caught / all_total:.1f}%)")
    return 0


def _run(paths: list[str], caught: Counter, total: Counter, only_own_steps: bool = False) -> None:
    for path in source_files(paths):
        try:
            results = list(mutants(path, only_own_steps))
        except Exception as exc:  # a file gradlint cannot model: not a mutant
            print(f"{path}: skipped ({type(exc).__name__})", file=sys.stderr)
            continue
        for name, loop_line, hit in results:
            total[name] += 1
            if hit:
                caught[name] += 1
            else:
                print(f"SILENT {name} {path}:{loop_line}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
