"""The guard as a framework's callback, for runs whose loop a framework owns.

    trainer = lightning.Trainer(callbacks=[gradlint.guard.frameworks.lightning_callback()])
    trainer = transformers.Trainer(..., callbacks=[gradlint.guard.frameworks.transformers_callback()])

Each installs the guard when training begins and, if it installed it, removes it when training
ends; its `reports` are what the guard found during training (also once it is removed).  The framework is imported when the callback is made, never by gradlint otherwise.
Accelerate needs no callback: `install()` before the loop watches `accelerator.accumulate`,
`accelerator.backward` and `accelerator.clip_grad_norm_` through torch's own calls.
"""

from __future__ import annotations

from gradlint.guard import active, install, installed, uninstall


class _Session:
    """Install at the start of training; uninstall at its end, only what this callback installed."""

    def __init__(self, mode: str):
        self.mode = mode
        self.ours = False
        self.found: list = []  # the reports list of the guard watching this training (kept after it)

    def begin(self) -> None:
        if not installed():
            install(self.mode)
            self.ours = True
        self.found = active().reports

    def end(self) -> None:
        if self.ours:
            uninstall()
            self.ours = False


def lightning_callback(mode: str = "warn"):
    """A Lightning Callback (lightning.pytorch, or the older pytorch_lightning package)."""
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback

    class GradlintGuard(Callback):
        def __init__(self):
            self.session = _Session(mode)

        def on_fit_start(self, trainer, pl_module):
            self.session.begin()

        def on_fit_end(self, trainer, pl_module):
            self.session.end()

        def on_exception(self, trainer, pl_module, exception):
            self.session.end()

        @property
        def reports(self) -> list:
            return list(self.session.found)

    return GradlintGuard()


def transformers_callback(mode: str = "warn"):
    """A transformers TrainerCallback."""
    from transformers import TrainerCallback

    class GradlintGuard(TrainerCallback):
        def __init__(self):
            self.session = _Session(mode)

        def on_train_begin(self, args, state, control, **kwargs):
            self.session.begin()

        def on_train_end(self, args, state, control, **kwargs):
            self.session.end()

        @property
        def reports(self) -> list:
            return list(self.session.found)

    return GradlintGuard()
