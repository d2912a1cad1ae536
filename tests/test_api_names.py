"""Every API name gradlint knows is spelled in gradlint/core/api_names.py and nowhere else.

The checker (model/), the text screens (prefilter.py, screen.py, project/scan.py), the
verifier's probes (verify/) and the in-run guard's patches (guard/) all read the one table,
so a name added there reaches them all, and the static and run-time definitions cannot
drift apart (issue 31: the probes knew `clip_grads_with_norm_` before the checker did).
The scan reads string literals with `ast` (docstrings and comments are prose, not code).
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gradlint
from gradlint.core import api_names
from installed import require

PACKAGE = Path(gradlint.__file__).parent
TABLE = PACKAGE / "core" / "api_names.py"

# API words this test knows by itself, so that a literal of one of them is caught even
# before anyone puts it in the table (and the table cannot lose one to silence the scan).
KNOWN_API_WORDS = frozenset(
    """backward manual_backward step optimizer_step training_step zero_grad set_to_none
    grad _grad data zero_ clamp_ clip_ unscale_ scale get_scale enabled
    clip_grad_norm_ clip_grad_norm clip_grad_value_ clip_grads_with_norm_ get_total_norm
    dispatch_clip_grad clip_gradients max_norm clip_value inf
    params param_groups parameters named_parameters model_parameters lr closure
    lr_schedulers automatic_optimization accumulate prepare initialize
    register_step_post_hook register_optimizer_step_post_hook add_event_handler
    no_grad inference_mode enable_grad set_grad_enabled
    GradScaler LightningModule Engine create_supervised_trainer ReduceLROnPlateau
    torch.autograd.backward torch.autograd.grad torch.multiprocessing.spawn""".split()
)
# Words that are also gradlint's own vocabulary: the kinds a binding has (`"optimizer"`,
# `"module"`, ...), the keys of verify's records and of the JSON and LSP outputs (`"params"`,
# `"scale"`, `"parameters"`, `"data"`), the fragments of names in EVENT_WORDS (`"zero"`,
# `"clip"`), the top-level packages (how gradlint itself imports torch), and Python's own
# names (builtins, methods of lists).  A literal of one of them is not policed.
OWN_WORDS = (
    frozenset("""optimizer module scaler scheduler engine model once on zero clip unscale
    params parameters scale data shape size layout""".split())  # (the last three: also a file's size, a layout...)
    | api_names.TORCH_PACKAGES
    | frozenset(dir(builtins))
    | frozenset(dir(list))
)
# Qualified names under a framework's package are API names whatever their last part.
_QUALIFIED = re.compile(r"(?:%s)\." % "|".join(sorted(api_names.TORCH_PACKAGES | {"nn"})))
# A display word that happens to be an API name (verify's trace calls a B event "backward")
# is marked on its line so; nothing else is let through.
LABEL_MARK = "# a label, not an API name"


def _table_names(value) -> set:
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(_table_names(k) | _table_names(v) for k, v in value.items()))
    if isinstance(value, (frozenset, set, tuple, list)):
        return set().union(*map(_table_names, value))
    return set()


def table_names() -> set:
    return set().union(*(_table_names(v) for k, v in vars(api_names).items() if k.isupper()))


def policed_names() -> set:
    return (table_names() | KNOWN_API_WORDS) - OWN_WORDS


def _docstrings(tree: ast.AST) -> set:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def api_literals(source: str, policed: set) -> list[tuple[int, str]]:
    """(line, text) of every string literal of `source` that is an API name."""
    tree = ast.parse(source)
    lines = source.splitlines()
    docs = _docstrings(tree)
    out = []
    # `frozenset("SGD Adam AdamW".split())`: each word of a split literal is a name
    split = {
        id(node.func.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split"
    }
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
            continue
        for text in node.value.split() if id(node) in split else (node.value,):
            if text in policed or (_QUALIFIED.match(text) and text.rstrip(".") not in api_names.TORCH_PACKAGES):
                if LABEL_MARK not in lines[node.lineno - 1]:
                    out.append((node.lineno, text))
    return sorted(out)


def test_no_api_name_is_spelled_outside_the_table():
    policed = policed_names()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == TABLE:
            continue
        for line, text in api_literals(path.read_text(encoding="utf-8"), policed):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {text!r}")
    assert not found, "API names outside gradlint/core/api_names.py:\n" + "\n".join(found)


def test_the_scan_sees_a_literal_and_not_prose_or_a_marked_label():
    policed = policed_names()
    source = (
        '"""The backward pass."""\n'
        'if method == "backward":  # the backward\n'
        '    x = "clip_grads_with_norm_"\n'
        'f = "torch.optim.lr_scheduler"\n'
        'kind = "optimizer"\n'
        'classes = "SGD Adam".split()\n'
        f'word = "step"  {LABEL_MARK}\n'
    )
    assert api_literals(source, policed) == [(2, "backward"), (3, "clip_grads_with_norm_"), (4, "torch.optim.lr_scheduler"), (6, "Adam"), (6, "SGD")]


def test_every_known_api_word_is_in_the_table():
    spelled = table_names()
    missing = KNOWN_API_WORDS - spelled - {name.rsplit(".", 1)[-1] for name in spelled}
    assert not missing


def test_the_table_is_cheap_to_import():
    """The pre-commit shortcut (gradlint/check/quick.py) imports the prefilter, which reads the
    table: that must import no other gradlint module, and no typing."""
    code = (
        "import sys\n"
        "import gradlint.check.prefilter\n"
        "print(sorted(m for m in sys.modules if m.startswith('gradlint') or m == 'typing'))\n"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    # gradlint.check and gradlint.core only group their stage's modules: docstrings (tests/test_layout.py)
    expected = ["gradlint", "gradlint.check", "gradlint.check.prefilter", "gradlint.core", "gradlint.core.api_names"]
    assert proc.stdout.strip() == str(expected), proc.stdout + proc.stderr


# --- the clips: the checker and the verifier's probes read the same names -------------------

_CLIP_LOOP = """\
import torch
from torch import nn

model = nn.Linear(6, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    nn.functional.mse_loss(model(torch.randn(8, 6)), torch.randn(8, 2)).backward()
    optimizer.step()
    torch.nn.utils.{call}
"""


def _arguments(name: str) -> str:
    return "([p.grad for p in model.parameters()])" if name in api_names.NORM_FUNCTIONS else (
        "(model.parameters(), 1.0, torch.tensor(2.0))" if name == "clip_grads_with_norm_" else "(model.parameters(), 1.0)"
    )


def _codes_after_the_step(name: str) -> list[str]:
    from gradlint.check.engine import check_source

    result = check_source(_CLIP_LOOP.format(call=name + _arguments(name)), "loop.py")
    return [finding.code for finding in result.findings]


@pytest.mark.parametrize("name", api_names.TORCH_CLIP_FUNCTIONS)
def test_every_torch_clip_of_the_table_is_a_clip_for_the_checker(name):
    assert _codes_after_the_step(name) == ["GL004"]


@pytest.mark.parametrize("name", sorted(api_names.NORM_FUNCTIONS))
def test_a_function_that_only_measures_the_gradients_is_no_clip(name):
    """torch's docs: `get_total_norm` computes the norm of the tensors and returns it; unlike
    `clip_grads_with_norm_` ("Gradients are modified in-place") it writes nothing."""
    assert name not in api_names.CLIP_FUNCTIONS
    assert _codes_after_the_step(name) == []


@pytest.mark.xdist_group("imports_torch")  # torch in this process: on one worker, not on each
def test_the_table_has_every_clip_and_norm_function_of_torch():
    """torch.nn.utils as installed: a new public clip (or norm) function must be added to the
    table, where both the checker and the probes read it."""
    utils = pytest.importorskip("torch.nn.utils")
    public = {name for name in dir(utils) if not name.startswith("_") and callable(getattr(utils, name))}
    assert {name for name in public if "clip_grad" in name} == set(api_names.TORCH_CLIP_FUNCTIONS)
    assert "get_total_norm" in public and "get_total_norm" in api_names.NORM_FUNCTIONS


def test_the_probes_wrap_the_torch_clips_of_the_table_and_nothing_else():
    """The verifier's probes, installed in a child process (they patch torch), wrap exactly
    the table's torch clip functions: what the checker calls a clip is what verify watches."""
    require("torch")  # the child imports it
    code = (
        "import torch.nn.utils as u\n"
        "from gradlint.verify import probes\n"
        "probes._patch_clips()\n"
        "print(sorted(n for n in dir(u) if hasattr(getattr(u, n), '__wrapped__') and getattr(u, n).__module__ == 'gradlint.verify.probes'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert proc.stdout.strip().splitlines()[-1:] == [str(sorted(api_names.TORCH_CLIP_FUNCTIONS))], proc.stderr[-2000:]
