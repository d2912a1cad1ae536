"""Per-batch methods of a framework's trainer that a subclass overrides (events.py's
FRAMEWORK_TRAINERS): the body is one iteration, followed by what the framework documents."""

from __future__ import annotations

import textwrap

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings


def codes(source: str) -> list[tuple[str, int]]:
    result = check_source(textwrap.dedent(source), "train.py", Settings.default())
    return [(f.code, f.line) for f in result.findings]


def test_a_compute_loss_override_runs_before_the_trainers_backward_and_step():
    assert codes(
        """
        from transformers import Trainer

        class MyTrainer(Trainer):
            def compute_loss(self, model, inputs, return_outputs=False):
                self.lr_scheduler.step()
                return model(**inputs).loss
        """
    ) == [("GL008", 6)]


def test_a_subclass_of_the_files_own_trainer_subclass():
    assert codes(
        """
        from transformers import Seq2SeqTrainer

        class Base(Seq2SeqTrainer):
            pass

        class MyTrainer(Base):
            def training_step(self, model, inputs):
                loss = self.compute_loss(model, inputs)
                loss.backward()
                self.optimizer.zero_grad()
                return loss
        """
    ) == [("GL002", 11)]


def test_super_training_step_is_the_trainers_backward():
    # a clip before the base class's training_step clips before its backward
    assert codes(
        """
        import torch
        from transformers import Trainer

        class MyTrainer(Trainer):
            def training_step(self, model, inputs):
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                return super().training_step(model, inputs)
        """
    ) == [("GL005", 7)]


def test_the_same_methods_of_a_class_that_is_no_framework_trainer_are_not_modelled():
    assert codes(
        """
        class Trainer:
            def training_step(self, model, inputs):
                loss = model(inputs)
                loss.backward()
                self.optimizer.zero_grad()
                return loss

        class Brain:
            def fit_batch(self, batch):
                self.loss(batch).backward()
                self.optimizer.step()
        """
    ) == []


def test_lightning_under_automatic_optimization_clears_and_steps_itself():
    assert codes(
        """
        import torch
        from lightning import LightningModule

        class M(LightningModule):
            def training_step(self, batch, batch_idx):
                return self.net(batch).sum()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)
        """
    ) == []
