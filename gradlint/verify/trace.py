"""`--trace`: every event in order, with the gradient state of each parameter after it."""

from __future__ import annotations

import os

from gradlint.verify.verdicts import Run, display_path

# The words the trace shows for each event kind.
KINDS = {"O": "optimizer", "B": "backward", "Z": "clear", "S": "step", "C": "clip", "U": "unscale", "L": "schedule"}  # a label, not an API name
MAX_PARAMS = 16  # a big model's trace shows the first ones and says how many it left out


def format_state(state) -> str:
    if state is None:
        return "None"
    if state.get("norm") is None:
        return "present (not measurable)"
    if state.get("zero"):
        return "zero (norm 0.0000)"
    if state.get("sum") is None:
        return f"norm {state['norm']:.4f}"
    return f"norm {state['norm']:.4f}  sum {state['sum']:.4f}"


def _where(path, line, home) -> str:
    if path is None:
        return "?"
    if home and os.path.realpath(home) == path:
        return f"line {line}"
    return f"{display_path(path)}:{line}"


def format_trace(run: Run, home: str | None = None) -> str:
    pids = sorted(run.params)
    shown = pids[:MAX_PARAMS]
    width = max((len(run.param(p)) for p in shown), default=0)
    out = [f"Trace: {len(run.events)} events, {len(pids)} parameters"]
    for event in run.events:
        path, line = event.site
        label = KINDS.get(event.kind, event.kind)
        note = " (inferred)" if event.raw.get("inferred") else ""
        if event.raw.get("prevented"):
            note = " (not run: step budget used up)"
        elif event.raw.get("skipped"):
            note = " (skipped by the GradScaler: inf/NaN gradients)"
        out.append(f"  #{event.i:<3} {_where(path, line, home):<14} {label:<9} {event.raw.get('text', '')}{note}")
        for pid in shown:
            out.append(f"         {run.param(pid):<{width}}  {format_state(event.state(pid))}")
        if len(pids) > len(shown):
            out.append(f"         ... and {len(pids) - len(shown)} more parameters")
    return "\n".join(out)
