"""How well `--fix --unsafe-fixes` repairs bugs injected into clean training loops.

Each clean loop below is a list of statements (some of them written over
several lines, with comments); each mutation breaks it the way one rule
describes (delete the clear, move the clip after the step, step the
scheduler first, clear the wrong module...).  Every mutant is fixed with
every fix allowed, then the figures the issue asks for are measured:

* the share of injected findings gone after the fix (target: at least 90%),
* files that gained a finding of any code (target: none),
* files that no longer parse (target: none),
* files that a second fix still changes (target: none).

    python benchmarks/fix_mutants.py          # prints the figures, exit 1 if a target is missed

tests/test_fix_mutants.py runs the same measure.
"""

from __future__ import annotations

import ast
import os
import sys
from collections import Counter
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gradlint.check.engine import check_source  # noqa: E402
from gradlint.fix.session import fix_source  # noqa: E402
from gradlint.options.settings import Settings  # noqa: E402

HEADER = """import torch
from torch import nn

model = nn.Linear(4, 2)
other = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
scaler = torch.amp.GradScaler()
loss_fn = nn.MSELoss()

"""

CLIP_MULTILINE = "torch.nn.utils.clip_grad_norm_(\n    model.parameters(),  # every parameter\n    max_norm=1.0,\n)"
FORWARD_MULTILINE = "loss = loss_fn(\n    model(x),\n    y,\n)  # the batch loss"

# (tag, statement): Z clear, F forward, B backward, U unscale, C clip, S step, P scaler update, L scheduler
TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "plain": [
        ("Z", "optimizer.zero_grad()"),
        ("F", "loss = loss_fn(model(x), y)"),
        ("B", "loss.backward()"),
        ("C", CLIP_MULTILINE),
        ("S", "optimizer.step()"),
        ("L", "scheduler.step()"),
    ],
    "amp": [
        ("Z", "optimizer.zero_grad(set_to_none=True)"),
        ("F", FORWARD_MULTILINE),
        ("B", "scaler.scale(loss).backward()"),
        ("U", "scaler.unscale_(optimizer)"),
        ("C", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # clip"),
        ("S", "scaler.step(optimizer)"),
        ("P", "scaler.update()"),
        ("L", "scheduler.step()"),
    ],
    "clear_last": [
        ("F", FORWARD_MULTILINE),
        ("B", "loss.backward()"),
        ("C", "torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)"),
        ("S", "optimizer.step()  # update"),
        ("Z", "optimizer.zero_grad()"),
        ("L", "scheduler.step()"),
    ],
    "multiline_calls": [
        ("Z", "optimizer.zero_grad(\n    set_to_none=True,\n)"),
        ("F", "loss = loss_fn(model(x), y)"),
        ("B", "loss.backward(\n    retain_graph=False,\n)"),
        ("C", CLIP_MULTILINE),
        ("S", "optimizer.step(\n)  # one update"),
        ("L", "scheduler.step()"),
    ],
    "amp_multiline_clip": [
        ("Z", "optimizer.zero_grad()"),
        ("F", "loss = loss_fn(model(x), y)"),
        ("B", "scaler.scale(loss).backward()"),
        ("U", "scaler.unscale_(optimizer)"),
        ("C", CLIP_MULTILINE),
        ("S", "scaler.step(optimizer)"),
        ("P", "scaler.update()"),
    ],
}


def _delete(tag):
    def mutate(body):
        return [item for item in body if item[0] != tag]

    return mutate


def _move(tag, anchor, after=False):
    """Put `tag`'s statement right before (or after) `anchor`'s; `anchor` None: at the top."""

    def mutate(body):
        moved = next(item for item in body if item[0] == tag)
        rest = [item for item in body if item[0] != tag]
        if anchor is None:
            return [moved] + rest
        at = next(i for i, item in enumerate(rest) if item[0] == anchor) + (1 if after else 0)
        return rest[:at] + [moved] + rest[at:]

    return mutate


def _retarget(tag, old, new):
    def mutate(body):
        return [(t, s.replace(old, new, 1) if t == tag else s) for t, s in body]

    return mutate


# rule -> mutations (needing these tags)
MUTATIONS = {
    "GL001": [("delete the clear", _delete("Z"), "Z")],
    "GL002": [("clear between backward and step", _move("Z", "S"), "ZS"), ("clear right after backward", _move("Z", "B", True), "ZB")],
    "GL003": [("clear another module", _retarget("Z", "optimizer.zero_grad", "other.zero_grad"), "Z")],
    "GL004": [("clip after the step", _move("C", "S", True), "CS"), ("clip at the top", _move("C", None), "C")],
    "GL005": [("clip before backward", _move("C", "B"), "CB"), ("clip before the forward", _move("C", "F"), "CF")],
    "GL006": [("no unscale_", _delete("U"), "U"), ("unscale_ after the clip", _move("U", "C", True), "UC")],
    "GL007": [("step before backward", _move("S", "B"), "SB"), ("step at the top", _move("S", None), "S")],
    "GL008": [("scheduler first", _move("L", None), "L"), ("scheduler before step", _move("L", "S"), "LS")],
}

# Accumulation and epoch loops, written out: mutants whose loop shape the list form cannot express.
WRITTEN = {
    "GL001 accumulation": (
        "for i, (x, y) in enumerate(loader):\n    loss = loss_fn(model(x), y) / 4\n    loss.backward()\n"
        "    if (i + 1) % 4 == 0:\n        optimizer.step()\n"
    ),
    "GL002 accumulation": (
        "for i, (x, y) in enumerate(loader):\n    optimizer.zero_grad()\n    loss = loss_fn(model(x), y) / 4\n"
        "    loss.backward()\n    if (i + 1) % 4 == 0:\n        optimizer.step()\n"
    ),
    "GL004 accumulation": (
        "for i, (x, y) in enumerate(loader):\n    loss_fn(model(x), y).backward()\n    if (i + 1) % 4 == 0:\n"
        "        optimizer.step()\n        optimizer.zero_grad()\n    torch.nn.utils.clip_grad_norm_(\n"
        "        model.parameters(), 1.0\n    )\n"
    ),
    "GL005 micro-batch clip": (
        "for i, (x, y) in enumerate(loader):\n    loss_fn(model(x), y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    if (i + 1) % 4 == 0:\n"
        "        optimizer.step()\n        optimizer.zero_grad()\n"
    ),
    "GL008 epoch": (
        "for epoch in range(3):\n    scheduler.step()\n    for x, y in loader:\n        optimizer.zero_grad()\n"
        "        loss_fn(model(x), y).backward()\n        optimizer.step()\n"
    ),
    "GL005 amp issue case": (
        "for x, y in loader:\n    optimizer.zero_grad()\n    loss = loss_fn(model(x), y)\n    scaler.unscale_(optimizer)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.scale(loss).backward()\n"
        "    scaler.step(optimizer)\n    scaler.update()\n"
    ),
    "GL006 inside a with block": (
        "for x, y in loader:\n    optimizer.zero_grad()\n    with torch.autocast('cpu'):\n        loss = loss_fn(model(x), y)\n"
        "    scaler.scale(loss).backward()\n    norm = torch.nn.utils.clip_grad_norm_(\n        model.parameters(), 1.0,\n    )\n"
        "    scaler.step(optimizer)\n    scaler.update()\n"
    ),
    "GL007 trainer method": (
        "class Trainer:\n    def fit(self, loader):\n        for x, y in loader:\n            self.optimizer.zero_grad()\n"
        "            self.optimizer.step()\n            loss = self.loss_fn(self.model(x), y)\n            loss.backward()\n"
    ),
}


def render(body: list[tuple[str, str]]) -> str:
    lines = ["for x, y in loader:"]
    for _, statement in body:
        lines += ["    " + line for line in statement.splitlines()]
    return HEADER + "\n".join(lines) + "\n"


def mutants():
    """(name, rule, clean source or None, mutant source)."""
    for name, body in TEMPLATES.items():
        tags = {tag for tag, _ in body}
        for rule, mutations in MUTATIONS.items():
            for description, mutate, needs in mutations:
                if set(needs) <= tags:
                    yield f"{name}: {description}", rule, render(body), render(mutate(body))
    for name, loop in WRITTEN.items():
        yield name, name.split()[0], None, HEADER + loop


SETTINGS = Settings.default()


@dataclass
class Figures:
    mutants: int = 0
    injected: int = 0
    left: int = 0
    gained: list = None
    unparsable: list = None
    unstable: list = None
    unfixed: list = None
    silent: list = None  # mutants on which the rule did not fire: not counted

    @property
    def gone_share(self) -> float:
        return 1 - self.left / self.injected if self.injected else 1.0


def measure() -> Figures:
    figures = Figures(gained=[], unparsable=[], unstable=[], unfixed=[], silent=[])
    check = lambda text: check_source(text, "mutant.py", SETTINGS)  # noqa: E731
    for name, rule, clean, source in mutants():
        if clean is not None:
            assert not check(clean).findings, f"template of {name} is not clean"
        before = check(source)
        if not any(f.code == rule for f in before.findings):
            figures.silent.append(name)
            continue
        figures.mutants += 1
        figures.injected += len(before.findings)
        outcome = fix_source(source, check, unsafe=True)
        after = outcome.result
        figures.left += len(after.findings)
        if Counter(f.code for f in after.findings) - Counter(f.code for f in before.findings):
            figures.gained.append(name)
        try:
            ast.parse(outcome.text)
        except SyntaxError:
            figures.unparsable.append(name)
        if fix_source(outcome.text, check, unsafe=True).text != outcome.text:
            figures.unstable.append(name)
        if after.findings:
            figures.unfixed.append(f"{name}: {', '.join(outcome.not_fixed)}")
    return figures


def main() -> int:
    figures = measure()
    print(f"mutants: {figures.mutants} (rule silent on {len(figures.silent)}: {figures.silent})")
    print(f"injected findings: {figures.injected}, left after --fix --unsafe-fixes: {figures.left}")
    print(f"gone: {figures.gone_share:.1%} (target >= 90%)")
    print(f"files that gained a finding: {len(figures.gained)} {figures.gained}")
    print(f"files that no longer parse: {len(figures.unparsable)} {figures.unparsable}")
    print(f"files a second --fix changes: {len(figures.unstable)} {figures.unstable}")
    for line in figures.unfixed:
        print(f"  not fixed: {line}")
    ok = figures.gone_share >= 0.9 and not (figures.gained or figures.unparsable or figures.unstable)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
