"""gradlint.guard under Lightning (automatic and manual optimization, through its callback), the
transformers Trainer (through its TrainerCallback, a tiny model built from a config: no
download) and Accelerate's `accumulate`.  Each is skipped where its package is not installed
(they are test dependencies: the `frameworks` extra)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")

import gradlint.guard as guard  # noqa: E402
from gradlint.guard.frameworks import _Session, lightning_callback, transformers_callback  # noqa: E402
from gradlint.guard.patches import Patches  # noqa: E402
from gradlint.guard.watcher import Watcher  # noqa: E402

nn = torch.nn


def _line(function, text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return next(start + i for i, line in enumerate(lines) if text in line)


# --- Lightning --------------------------------------------------------------------------------


def _lightning():
    return pytest.importorskip("lightning.pytorch", reason="lightning is not installed")


def _fit(module, callback, tmp_path, **options):
    L = _lightning()
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, callbacks=[callback], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=str(tmp_path), **options)
    trainer.fit(module, data)


def _modules():
    L = _lightning()

    class Automatic(L.LightningModule):
        def __init__(self, schedule_in_step=False):
            super().__init__()
            self.net = nn.Linear(4, 1)
            self.schedule_in_step = schedule_in_step

        def training_step(self, batch, index):
            x, y = batch
            if self.schedule_in_step:
                self.lr_schedulers().step()  # GL008 here
            return nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 2)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}

    class Manual(L.LightningModule):
        def __init__(self, clears=True):
            super().__init__()
            self.net = nn.Linear(4, 1)
            self.automatic_optimization = False
            self.clears = clears

        def training_step(self, batch, index):
            opt = self.optimizers()
            x, y = batch
            if self.clears:
                opt.zero_grad()
            self.manual_backward(nn.functional.mse_loss(self.net(x), y))  # GL001 here
            opt.step()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Automatic, Manual


# The guard is installed by the callback alone (never by the test), and its reports are read from
# the callback: a test that installed the guard itself would pass without the callback.


def test_lightning_automatic_optimization_right_and_with_accumulation(tmp_path):
    Automatic, _ = _modules()
    for accumulate in (1, 2):
        callback = lightning_callback(mode="log")
        _fit(Automatic(), callback, tmp_path, accumulate_grad_batches=accumulate)
        assert callback.reports == [], "\n".join(map(str, callback.reports))


def test_lightning_automatic_scheduler_stepped_in_training_step(tmp_path):
    Automatic, _ = _modules()
    callback = lightning_callback(mode="log")
    _fit(Automatic(schedule_in_step=True), callback, tmp_path)
    line = _line(_modules, "# GL008 here")
    assert [(r.code, r.line) for r in callback.reports] == [("GL008", line)], "\n".join(map(str, callback.reports))


def test_lightning_manual_optimization_right(tmp_path):
    _, Manual = _modules()
    callback = lightning_callback(mode="log")
    _fit(Manual(clears=True), callback, tmp_path)
    assert callback.reports == [], "\n".join(map(str, callback.reports))


def test_lightning_manual_optimization_without_a_clear(tmp_path):
    _, Manual = _modules()
    callback = lightning_callback(mode="log")
    _fit(Manual(clears=False), callback, tmp_path)
    found = [(r.code, r.line) for r in callback.reports]
    assert found == [("GL001", _line(_modules, "# GL001 here"))], "\n".join(map(str, callback.reports))


def test_the_lightning_callback_installs_and_removes_the_guard(tmp_path):
    _, Manual = _modules()
    seen = []

    class Spy(_lightning().Callback):
        def on_train_batch_end(self, *args):
            seen.append(guard.installed())

    L = _lightning()
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4)
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, callbacks=[lightning_callback(mode="log"), Spy()],
                        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=str(tmp_path))
    trainer.fit(Manual(), data)
    assert seen and all(seen) and not guard.installed()


# --- transformers Trainer -------------------------------------------------------------------------


def _tiny_trainer(tmp_path, trainer_class=None, accumulation=2):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    config = transformers.BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=16, max_position_embeddings=16, num_labels=2)
    model = transformers.BertForSequenceClassification(config)  # from a config: nothing is downloaded
    data = [{"input_ids": torch.randint(0, 32, (8,)), "labels": torch.tensor(i % 2)} for i in range(16)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=4, per_device_train_batch_size=2, gradient_accumulation_steps=accumulation,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True, disable_tqdm=True, max_grad_norm=1.0,
    )
    cls = trainer_class or transformers.Trainer
    return cls(model=model, args=args, train_dataset=data, callbacks=[transformers_callback(mode="log")])


def _callback_reports(trainer) -> list:
    """The reports of the guard the trainer's TrainerCallback installed."""
    return next(c for c in trainer.callback_handler.callbacks if type(c).__name__ == "GradlintGuard").reports


def test_transformers_trainer_right_run(tmp_path):
    trainer = _tiny_trainer(tmp_path)
    trainer.train()
    assert _callback_reports(trainer) == [], "\n".join(map(str, _callback_reports(trainer)))


def test_transformers_trainer_scheduler_stepped_in_training_step(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")

    class Early(transformers.Trainer):
        def training_step(self, *args, **kwargs):
            self.lr_scheduler.step()  # GL008 here
            return super().training_step(*args, **kwargs)

    trainer = _tiny_trainer(tmp_path, Early, accumulation=1)
    trainer.train()
    found = _callback_reports(trainer)
    assert ("GL008", _line(Early, "# GL008 here")) in [(r.code, r.line) for r in found], "\n".join(map(str, found))


def test_the_transformers_callback_installs_the_guard(tmp_path):
    trainer = _tiny_trainer(tmp_path)
    seen = []
    transformers = pytest.importorskip("transformers")

    class Spy(transformers.TrainerCallback):
        def on_step_end(self, *args, **kwargs):
            seen.append(guard.installed())

    trainer.add_callback(Spy())
    trainer.train()
    assert seen and all(seen) and not guard.installed()


# --- Accelerate ----------------------------------------------------------------------------------------


def _accelerate_loop(clear_model_each_micro_batch: bool):
    accelerate = pytest.importorskip("accelerate", reason="accelerate is not installed")
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)  # the Trainer's tests leave their own accumulation settings
    GradientState._reset_state()
    accelerator = accelerate.Accelerator(gradient_accumulation_steps=2, cpu=True)
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(2, 4), torch.randn(2, 1)) for _ in range(8)]
    model, opt = accelerator.prepare(model, opt)
    for x, y in data:
        with accelerator.accumulate(model):
            accelerator.backward(nn.functional.mse_loss(model(x), y))
            if accelerator.sync_gradients:  # (every micro-batch would clip partial sums: GL005)
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if clear_model_each_micro_batch:
                model.zero_grad()  # GL002 here
            else:
                opt.zero_grad()


def test_accelerate_accumulate_right():
    with guard.watch(mode="log") as found:
        _accelerate_loop(clear_model_each_micro_batch=False)
    assert found == [], "\n".join(map(str, found))


def test_accelerate_accumulate_model_zero_grad_discards():
    with guard.watch(mode="log") as found:
        _accelerate_loop(clear_model_each_micro_batch=True)
    assert ("GL002", _line(_accelerate_loop, "# GL002 here")) in [(r.code, r.line) for r in found], \
        "\n".join(map(str, found))


# --- each stack's report needs its hook ------------------------------------------------------------

# (the stack's wrong-run test, the part of the guard it goes through, how to knock that part out):
# with that part knocked out, the test fails.  `_Session.begin` is the callbacks' install
# (Lightning's on_fit_start, the TrainerCallback's on_train_begin); the Patches parts are the
# wrappers and hooks of gradlint/guard/patches.py; `Watcher._hook` the accumulate hook.
STACK_NEEDS = {
    "lightning automatic: its callback": ("test_lightning_automatic_scheduler_stepped_in_training_step", _Session, "begin"),
    "lightning automatic: the scheduler wrappers": ("test_lightning_automatic_scheduler_stepped_in_training_step", Patches, "_schedulers"),
    "lightning manual: its callback": ("test_lightning_manual_optimization_without_a_clear", _Session, "begin"),
    "lightning manual: the accumulate hook": ("test_lightning_manual_optimization_without_a_clear", Watcher, "_hook"),
    "transformers: its TrainerCallback": ("test_transformers_trainer_scheduler_stepped_in_training_step", _Session, "begin"),
    "transformers: the scheduler wrappers": ("test_transformers_trainer_scheduler_stepped_in_training_step", Patches, "_schedulers"),
    "accelerate: the clear wrappers": ("test_accelerate_accumulate_model_zero_grad_discards", Patches, "_optimizer"),
    "accelerate: the accumulate hook": ("test_accelerate_accumulate_model_zero_grad_discards", Watcher, "_hook"),
}


@pytest.mark.parametrize("stack", sorted(STACK_NEEDS))
def test_each_stacks_report_needs_its_hook(stack, monkeypatch, tmp_path):
    test, owner, part = STACK_NEEDS[stack]
    run = globals()[test]
    monkeypatch.setattr(owner, part, lambda *args, **kwargs: None)
    with pytest.raises(AssertionError):
        run(**({"tmp_path": tmp_path} if "tmp_path" in inspect.signature(run).parameters else {}))
