"""The screen cuts a function needed only for an assignment down to a skeleton."""

import ast
import textwrap

import pytest

from gradlint.check.engine import check_source
from gradlint.check.screen import screen
from gradlint.options.settings import Settings

SOURCE = '''\
import torch


def build(model, lr):
    print("building")
    if lr > 0:
        for _ in range(3):
            noise = 1
        opt = torch.optim.SGD(model.head.parameters(), lr=lr)
    total = sum(p.numel() for p in model.parameters())
    return total


def guarded(model):
    try:
        opt = torch.optim.SGD(model.parameters())
    except RuntimeError:
        pass


def train(model, loader):
    for x, y in loader:
        model.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
'''


def _same_without_the_screen(source, monkeypatch):
    """The findings of `source`, which must be the same when libcst parses the whole file."""
    from gradlint.check import engine

    screened = check_source(source, "s.py", Settings.default()).findings
    monkeypatch.setattr(engine, "_screen", lambda context, settings, project=None: context.source)
    whole = check_source(source, "s.py", Settings.default()).findings
    monkeypatch.undo()
    assert screened == whole
    return whole


def kept_lines(text):
    return [n for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def test_skeleton_keeps_headers_and_the_assignment_only():
    text = screen(SOURCE)
    ast.parse(text)  # still Python
    kept = kept_lines(text)
    for line in (4, 6, 9):  # def build, if lr > 0, the assignment
        assert line in kept
    for line in (5, 7, 8, 10, 11):  # the print, the unrelated loop, the rest
        assert line not in kept
    # `try:` alone is not a block: it becomes `if 1:` of the same indentation
    assert text.splitlines()[14] == "    if 1:"
    assert kept_lines(text)[kept.index(15):kept.index(16) + 1] == [15, 16]
    assert not {17, 18} & set(kept)


# Each shape holds the only assignment that tells which parameters `opt` steps (model's,
# so `other.zero_grad()` is GL003): the screen must keep it, in place.
LOOP = '''
model = torch.nn.Linear(2, 2)
other = torch.nn.Linear(2, 2)


def train(loader):
    for x in loader:
        other.zero_grad()
        model(x).sum().backward()
        opt.step()
'''

SHAPES = {
    "else": """
        if cond:
            print("a")
        else:
            opt = torch.optim.SGD(model.parameters())
    """,
    "else on one line": """
        if cond:
            print("a")
        else: opt = torch.optim.SGD(model.parameters())
    """,
    "elif": """
        if cond:
            print("a")
        elif (other and
              cond):
            opt = torch.optim.SGD(model.parameters())
        else:
            print("c")
    """,
    "else of elif": """
        if cond:
            print("a")
        elif other:
            print("b")
        else:
            # a comment between the header and the body
            opt = torch.optim.SGD(model.parameters())
    """,
    "try": """
        try:
            opt = torch.optim.SGD(model.parameters())
        except ValueError:
            print("x")
    """,
    "except": """
        try:
            print("x")
        except (ValueError,
                KeyError) as exc:
            opt = torch.optim.SGD(model.parameters())
    """,
    "try else": """
        try:
            print("x")
        except ValueError:
            print("y")
        else:
            opt = torch.optim.SGD(model.parameters())
    """,
    "finally": """
        try:
            print("x")
        finally:
            opt = torch.optim.SGD(model.parameters())
    """,
    "for else": """
        for item in cond:
            print(item)
        else:
            opt = torch.optim.SGD(model.parameters())
    """,
    "with inside except": """
        try:
            print("x")
        except ValueError:
            with cond:
                opt = torch.optim.SGD(model.parameters())
    """,
    "match case (kept whole)": """
        match cond:
            case 1:
                opt = torch.optim.SGD(model.parameters())
    """,
    "try on one line (kept whole)": """
        try: opt = torch.optim.SGD(model.parameters())
        except ValueError: pass
    """,
}


def _module(shape: str) -> str:
    body = textwrap.indent(textwrap.dedent(SHAPES[shape]).strip("\n"), "    ")
    return f"import torch\n\n\ndef build(cond):\n    print('start')\n{body}\n    print('end')\n\n{LOOP}"


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_block_around_the_assignment_keeps_it_in_place(shape, monkeypatch):

    source = _module(shape)
    text = screen(source)
    ast.parse(text)  # still Python
    source_lines, text_lines = source.split("\n"), text.split("\n")
    assert len(text_lines) == len(source_lines)
    assignment = next(n for n, line in enumerate(source_lines) if "opt = " in line)
    # the assignment keeps its line and column (the text before it is only a same-width header)
    column = source_lines[assignment].index("opt = ")
    assert text_lines[assignment][column:] == source_lines[assignment][column:]
    if "kept whole" in shape:
        assert "    print('start')" in text_lines
    else:
        assert "    print('start')" not in text_lines  # the rest of the function is gone
        assert "    print('end')" not in text_lines

    whole = _same_without_the_screen(source, monkeypatch)
    assert [f.code for f in whole] == ["GL003"]  # the assignment decides the finding


def test_findings_are_the_same_with_and_without_the_screen(monkeypatch):

    _same_without_the_screen(SOURCE, monkeypatch)


ENGINE = '''\
import torch


def unrelated():
    return 1


def setup(engine, loss):
    engine.backward(loss)
    engine.step()


def train(model, opt, loader):
    for x in loader:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
'''


def test_calls_that_make_an_engine_stay_wherever_they_are():
    """bindings.py takes a receiver of both `X.backward(loss)` and `X.step()` for a
    DeepSpeed-style engine from anywhere in the file: the screen keeps those calls."""
    text = screen(ENGINE)
    assert "    engine.backward(loss)" in text.split("\n")
    assert "    engine.step()" in text.split("\n")
    assert "    return 1" not in text.split("\n")  # while what nothing reaches goes


@pytest.mark.parametrize("spelling", ["engine.backward(loss)", "engine.backward( loss )", "engine.backward (loss)",
                                      "engine.backward(\n        loss)"])
def test_an_engine_backward_is_found_however_it_is_spelled(spelling):
    text = screen(ENGINE.replace("engine.backward(loss)", spelling))
    assert "    engine.step()" in text.split("\n")


def test_a_text_whose_every_backward_is_bare_has_no_engine_to_look_for(monkeypatch):
    """An engine is a receiver of `X.backward(arg)` and `X.step()`: when every `backward` of
    the text is `backward()`, there is none, and no statement is walked for one (a loop-dense
    file's statements are the whole file)."""
    from gradlint.check import screen as screen_module

    walked = []
    real = screen_module._receiver_calls
    monkeypatch.setattr(screen_module, "_receiver_calls", lambda statement: walked.append(statement) or real(statement))
    bare = ENGINE.replace("engine.backward(loss)", "engine.backward()")
    assert screen(bare) is not None
    assert walked == []
    assert screen(ENGINE) is not None
    assert walked  # the same text with an argument is read


def test_a_function_without_a_clip_name_is_not_read_for_clips(monkeypatch):
    """_clips_and_steps reads every node of a function with a mark; one whose lines never
    name a clip cannot clip, and is not read."""
    from gradlint.check import screen as screen_module

    read = []
    real = screen_module._clips_and_steps
    monkeypatch.setattr(screen_module, "_clips_and_steps", lambda node: read.append(node.name) or real(node))
    screen(ENGINE)
    assert read == []
    clipping = ENGINE.replace("        opt.step()", "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
                                                  "        grad_scaler.step(opt)")
    screen(clipping)
    assert read == ["train"]


# A script's training code in a top-level block: the block is cut down to its loops and what
# they reach (the assignment of `opt` decides GL003), like a def's body.
TRAINING = """
    opt = torch.optim.SGD(model.parameters())
    for x in loader:
        other.zero_grad()
        model(x).sum().backward()
        opt.step()
"""

ROOT_BLOCKS = {
    "main guard": 'if __name__ == "__main__":\n    print("setup")\n{training}    print("done")\n',
    "else": 'if debug:\n    print("debug")\nelse:\n    print("setup")\n{training}',
    "elif": 'if debug:\n    print("debug")\nelif (fast and\n      debug):\n    print("setup")\n{training}'
            'else:\n    print("no")\n',
    "with": 'with open("log") as log:\n    print("setup")\n{training}',
    "try": 'try:\n    print("setup")\n{training}except KeyboardInterrupt:\n    print("stopped")\n',
    "except": 'try:\n    print("setup")\nexcept ImportError:\n    print("fallback")\n{training}',
    "finally": 'try:\n    print("setup")\nfinally:\n    print("finally")\n{training}',
    # a mark outside the loops (a step before the first iteration): the block stays whole
    "mark outside the loop (kept whole)": 'if __name__ == "__main__":\n    print("setup")\n    opt.step()\n'
                                          '{training}',
}


def _script(shape: str) -> str:
    body = ROOT_BLOCKS[shape].format(training=TRAINING.lstrip("\n"))
    return f"import torch\n\nmodel = torch.nn.Linear(2, 2)\nother = torch.nn.Linear(2, 2)\n\n{body}"


@pytest.mark.parametrize("shape", sorted(ROOT_BLOCKS))
def test_a_scripts_top_level_block_keeps_its_loop_and_what_it_reaches(shape, monkeypatch):

    source = _script(shape)
    text = screen(source)
    ast.parse(text)  # still Python
    source_lines, text_lines = source.split("\n"), text.split("\n")
    assert len(text_lines) == len(source_lines)
    for n, line in enumerate(source_lines):
        if line.strip().startswith(("opt = ", "for x", "other.zero_grad()", "model(x)", "opt.step()")):
            column = len(line) - len(line.lstrip())
            assert text_lines[n][column:] == line[column:]  # in place
    setup = '    print("setup")'
    if "kept whole" in shape:
        assert setup in text_lines
    else:
        assert setup not in text_lines  # what no loop reaches is gone
        assert not any("print(" in line for line in text_lines)

    whole = _same_without_the_screen(source, monkeypatch)
    assert [f.code for f in whole] == ["GL003"]  # the assignment decides the finding
