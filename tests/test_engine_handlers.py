"""Handlers an engine runs around its process function (gradlint/model/engines.py): where a
handler runs comes from the event it is registered on, never from its name."""

from __future__ import annotations

import textwrap

import pytest

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

HEAD = """
import torch
from ignite.engine import Engine, Events

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2)


def update(engine, batch):
    optimizer.zero_grad()
    model(batch).sum().backward()
    optimizer.step()


trainer = Engine(update)
"""


def codes(source: str) -> list[tuple[str, int]]:
    text = HEAD + textwrap.dedent(source)
    result = check_source(text, "train.py", Settings.default())
    first = text.count("\n", 0, text.index(textwrap.dedent(source))) + 1
    return [(f.code, f.line - first + 1) for f in result.findings]


@pytest.mark.parametrize(
    "registration",
    [
        "@trainer.on(Events.EPOCH_STARTED)\ndef adjust(engine):\n    scheduler.step()\n",
        "@trainer.on(Events.ITERATION_STARTED)\ndef adjust(engine):\n    scheduler.step()\n",
        "def adjust(engine):\n    scheduler.step()\ntrainer.add_event_handler(Events.EPOCH_STARTED, adjust)\n",
        "def adjust(engine, s):\n    s.step()\ntrainer.add_event_handler(Events.GET_BATCH_STARTED, adjust, scheduler)\n",
        "@trainer.on(Events.EPOCH_STARTED(every=1))\ndef adjust(engine):\n    scheduler.step()\n",
    ],
)
def test_a_scheduler_stepped_before_the_process_functions_step(registration):
    found = codes(registration)
    assert [code for code, _ in found] == ["GL008"]
    assert registration.splitlines()[found[0][1] - 1].strip().endswith(".step()")


@pytest.mark.parametrize(
    "registration",
    [
        "@trainer.on(Events.EPOCH_COMPLETED)\ndef adjust(engine):\n    scheduler.step()\n",
        "@trainer.on(Events.ITERATION_COMPLETED)\ndef adjust(engine):\n    scheduler.step()\n",
        "def adjust(engine):\n    scheduler.step()\ntrainer.add_event_handler(Events.ITERATION_COMPLETED, adjust)\n",
        # a filter that skips the first firing: the step comes after the first update
        "@trainer.on(Events.EPOCH_STARTED(every=2))\ndef adjust(engine):\n    scheduler.step()\n",
        "@trainer.on(Events.ITERATION_STARTED(once=5))\ndef adjust(engine):\n    scheduler.step()\n",
        # once before the run: in no loop
        "@trainer.on(Events.STARTED)\ndef adjust(engine):\n    scheduler.step()\n",
        # named like an epoch-start handler, registered on the end of the epoch
        "def on_epoch_start(engine):\n    scheduler.step()\ntrainer.add_event_handler(Events.EPOCH_COMPLETED, on_epoch_start)\n",
        # a handler of an object that is no engine
        "@logger.on(Events.EPOCH_STARTED)\ndef adjust(engine):\n    scheduler.step()\n",
    ],
)
def test_a_scheduler_stepped_after_it_is_silent(registration):
    assert codes(registration) == []


def test_a_handler_that_trains_once_after_the_run_is_no_loop():
    # COMPLETED fires once: a backward and a step there pile up nothing
    assert codes("@trainer.on(Events.COMPLETED)\ndef finetune(engine):\n    model(x).sum().backward()\n    optimizer.step()\n") == []


def test_a_handler_that_trains_each_epoch_is_still_a_loop():
    # EPOCH_COMPLETED fires every epoch: a backward and a step there with no clear pile up
    found = codes(
        "@trainer.on(Events.EPOCH_COMPLETED)\ndef finetune(engine):\n"
        "    model(x).sum().backward()\n    optimizer.step()\n"
    )
    assert found == [("GL001", 3)]
