"""Inference loops never reach libcst (issue 28); a file gradlint reads is parsed by CPython
(issue 30 item 3), a file with no gradient spelling at all by nothing (issue 48).

A diffusion pipeline's denoising loop calls `self.scheduler.step(noise, t, latents)`: the
prefilter sees a step spelled, but no `.step(...)` in such a file can be an optimizer's
(classify.py: an optimizer or a scaler by its kind or its name).  These files cost a CPython
parse at most: libcst is never called.  The samples are written for this test in the style
of huggingface/diffusers (pipelines, schedulers, their tests); none is copied.
"""

from __future__ import annotations

import ast
import textwrap

import libcst
import pytest

from gradlint.check import engine
from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

PIPELINE = '''\
import inspect
from typing import Callable, List, Optional, Union

import torch

from ...schedulers import KarrasDiffusionSchedulers
from ..pipeline_utils import DiffusionPipeline, ImagePipelineOutput


class ToyImagePipeline(DiffusionPipeline):
    """A toy text-to-image pipeline: encode, denoise, decode."""

    def __init__(self, vae, unet, scheduler: KarrasDiffusionSchedulers, audio_scheduler=None):
        super().__init__()
        self.register_modules(vae=vae, unet=unet, scheduler=scheduler)
        self.audio_scheduler = audio_scheduler

    def prepare_extra_step_kwargs(self, generator, eta):
        accepts_eta = "eta" in set(inspect.signature(self.scheduler.step).parameters.keys())
        return {"eta": eta} if accepts_eta else {}

    @torch.no_grad()
    def __call__(
        self,
        prompt: Union[str, List[str]] = None,
        num_inference_steps: int = 50,
        guidance_scale: float = 7.5,
        generator: Optional[torch.Generator] = None,
        callback: Optional[Callable[[int, int, torch.Tensor], None]] = None,
    ):
        self.scheduler.set_timesteps(num_inference_steps)
        timesteps = self.scheduler.timesteps
        latents = torch.randn((1, 4, 64, 64), generator=generator)
        extra_step_kwargs = self.prepare_extra_step_kwargs(generator, 0.0)
        with self.progress_bar(total=num_inference_steps) as progress_bar:
            for i, t in enumerate(timesteps):
                latent_model_input = torch.cat([latents] * 2)
                latent_model_input = self.scheduler.scale_model_input(latent_model_input, t)
                noise_pred = self.unet(latent_model_input, t).sample
                uncond, text = noise_pred.chunk(2)
                noise_pred = uncond + guidance_scale * (text - uncond)
                latents = self.scheduler.step(noise_pred, t, latents, **extra_step_kwargs, return_dict=False)[0]
                if self.audio_scheduler is not None:
                    latents = self.audio_scheduler.step(noise_pred, t, latents).prev_sample
                if callback is not None and i % 5 == 0:
                    callback(i, t, latents)
                progress_bar.update()
        image = self.vae.decode(latents / self.vae.config.scaling_factor).sample
        return ImagePipelineOutput(images=image)
'''

SCHEDULER = '''\
import math
from dataclasses import dataclass
from typing import Optional, Tuple, Union

import torch


@dataclass
class ToySchedulerOutput:
    prev_sample: torch.Tensor


class ToyScheduler:
    order = 1

    def __init__(self, num_train_timesteps: int = 1000):
        self.betas = torch.linspace(1e-4, 0.02, num_train_timesteps)
        self.alphas_cumprod = torch.cumprod(1.0 - self.betas, dim=0)
        self.timesteps = torch.arange(num_train_timesteps).flip(0)

    def step(self, model_output, timestep, sample, return_dict: bool = True) -> Union[ToySchedulerOutput, Tuple]:
        alpha = self.alphas_cumprod[timestep]
        prev_sample = (sample - math.sqrt(1 - alpha) * model_output) / math.sqrt(alpha)
        if not return_dict:
            return (prev_sample,)
        return ToySchedulerOutput(prev_sample=prev_sample)


def sample_loop(model, scheduler, sample, steps: Optional[int] = None):
    """A helper whose parameter is the sampler: `scheduler.step` is a bare parameter's."""
    for t in scheduler.timesteps[:steps]:
        residual = model(sample, t)
        sample = scheduler.step(residual, t, sample).prev_sample
        xm.mark_step()
    return sample


def run(model, sample):
    return sample_loop(model, ToyScheduler(), sample, steps=10)
'''

SCHEDULER_TEST = '''\
import torch

from diffusers import DDIMScheduler


class SchedulerCommonTest:
    scheduler_classes = (DDIMScheduler,)

    def full_loop(self, **config):
        scheduler = self.scheduler_classes[0](**config)
        scheduler.set_timesteps(10)
        sample = self.dummy_sample_deter
        for t in scheduler.timesteps:
            residual = self.dummy_model()(sample, t)
            sample = scheduler.step(residual, t, sample, eta=0.0).prev_sample
        for i, t in enumerate(scheduler.timesteps):
            with torch.no_grad():
                output = schedulers[i].step(residual, t, sample)
                other = self.scheduler.step(output, t, sample)
        return sample
'''

INFERENCE_SAMPLES = {"pipeline_toy.py": PIPELINE, "scheduling_toy.py": SCHEDULER, "test_scheduler_toy.py": SCHEDULER_TEST}

TRAINING = '''\
import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler
from diffusers.optimization import get_scheduler


def main(unet, train_dataloader, args):
    noise_scheduler = DDPMScheduler.from_pretrained(args.model, subfolder="scheduler")
    optimizer = torch.optim.AdamW(unet.parameters(), lr=args.learning_rate)
    lr_scheduler = get_scheduler(args.lr_scheduler, optimizer=optimizer)
    for epoch in range(args.epochs):
        for step, batch in enumerate(train_dataloader):
            latents = batch["latents"]
            noise = torch.randn_like(latents)
            timesteps = torch.randint(0, 1000, (latents.shape[0],))
            noisy = noise_scheduler.add_noise(latents, noise, timesteps)
            loss = F.mse_loss(unet(noisy, timesteps).sample, noise)
            loss.backward()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
'''


@pytest.fixture
def parses(monkeypatch):
    """Counts libcst's and CPython's parses (and CPython's symbol-table check) while a test
    checks files."""
    from gradlint.parse import syntax

    Settings.default()  # the rules' metadata is read from their modules once per process, not per file
    counts = {"libcst": 0, "ast": 0, "symtable": 0}
    real_cst, real_ast, real_symtable = libcst.parse_module, ast.parse, syntax._symbol_table

    def counted_cst(*args, **kwargs):
        counts["libcst"] += 1
        return real_cst(*args, **kwargs)

    def counted_ast(*args, **kwargs):
        counts["ast"] += 1
        return real_ast(*args, **kwargs)

    def counted_symtable(*args, **kwargs):
        counts["symtable"] += 1
        return real_symtable(*args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", counted_cst)
    monkeypatch.setattr(ast, "parse", counted_ast)
    if real_symtable is not None:
        monkeypatch.setattr(syntax, "_symbol_table", counted_symtable)
    return counts


@pytest.mark.parametrize("name", sorted(INFERENCE_SAMPLES))
def test_an_inference_loop_is_never_parsed_by_libcst(name, parses):
    result = check_source(INFERENCE_SAMPLES[name], name, Settings.default())
    assert not result.findings and not result.errors
    assert parses["libcst"] == 0
    assert parses["ast"] <= 1  # its cost is one CPython parse at most


def test_inference_files_on_disk_cost_no_libcst(tmp_path, parses):
    paths = []
    for name, text in INFERENCE_SAMPLES.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    results = engine.check_files([(path, Settings.default()) for path in paths], engine.RunOptions(jobs=1))
    assert [r.findings or r.errors for r in results] == [[]] * len(paths)
    assert parses["libcst"] == 0


def test_a_training_file_is_parsed_by_libcst(parses):
    """The counter can fail: the same check of a training loop calls libcst."""
    result = check_source(TRAINING, "train.py", Settings.default())
    assert not result.errors
    assert parses["libcst"] >= 1


def _steps_optimizer(body: str) -> str:
    return "import torch\n\n" + textwrap.dedent(body)


# `.step(` calls in files without an optimizer's word that can still be an optimizer's or
# a scaler's step: each must reach libcst (and the model decides).
STILL_STEPS = {
    "named like an optimizer": """
        def run(model, loader, g_opt):
            for x in loader:
                g_opt.step()
        """,
    "named like a scaler": """
        def run(model, loader, opt_g, amp_scaler):
            for x in loader:
                amp_scaler.step(opt_g)
        """,
    "a parameter handed an optimizer": """
        def advance(sched):
            sched.step()

        def run(loader, model_opt):
            for x in loader:
                advance(model_opt)
        """,
    "a parenthesised name": """
        def run(loader, optim_d):
            for x in loader:
                (optim_d).step()
        """,
    "a name on the line above its dot": """
        def run(loader, opt):
            for x in loader:
                (opt  # the generator's
                 .step())
        """,
}


@pytest.mark.parametrize("name", sorted(STILL_STEPS))
def test_a_step_that_may_be_an_optimizers_still_reaches_libcst(name, parses):
    check_source(_steps_optimizer(STILL_STEPS[name]), "run.py", Settings.default())
    assert parses["libcst"] >= 1


def test_without_an_optimizer_word_a_sampler_parameter_is_not_kept(parses):
    text = _steps_optimizer("""
        def advance(sched, latents, noise):
            return sched.step(noise, 1, latents)

        def run(loader, sampler, latents):
            for x in loader:
                latents = advance(sampler, latents, x)
        """)
    check_source(text, "run.py", Settings.default())
    assert parses["libcst"] == 0


# --- a file gradlint reads is parsed by CPython (issue 30 item 3); one without any gradient
# spelling is not parsed at all (issue 48): its syntax errors are Python's and ruff's to report

BROKEN = {"def_colon.py": "def f(:\n    pass\n", "python2.py": 'print "x"\n'}
# the same mistakes in files gradlint reads: a training step spelled, an inference step spelled
BROKEN_READ = {
    "train_colon.py": "def train(:\n    loss.backward()\n",
    "step_print.py": 'print "x"\nopt.step()\n',
    "sample_colon.py": "def sample(:\n    latents = self.scheduler.step(noise, t, latents)\n",
}


def test_a_file_without_gradient_spellings_is_not_parsed(tmp_path, parses):
    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "fine.py").write_text("x = 1\n")
    run = engine.check_paths([str(tmp_path)], Settings.default(), engine.RunOptions(jobs=1))
    assert run.errors() == [] and run.exit_code() == 0
    assert run.files_checked == 3
    assert parses == {"libcst": 0, "ast": 0, "symtable": 0}


def test_a_file_gradlint_reads_that_does_not_parse_is_an_error(tmp_path):
    for name, text in BROKEN_READ.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "fine.py").write_text("x = 1\nloss.backward()\n")
    run = engine.check_paths([str(tmp_path)], Settings.default())
    errors = [(e.path.rsplit("/", 1)[-1], e.kind, e.line) for e in run.errors()]
    assert errors == [(name, "syntax-error", 1) for name in sorted(BROKEN_READ)]
    assert run.exit_code() == 1
    assert run.files_checked == 1


@pytest.mark.parametrize("argv", [[], ["--output-format", "json"], ["-j", "2"]])
def test_the_command_line_reports_those_it_reads_and_exits_1(tmp_path, argv):
    import subprocess
    import sys

    for name, text in {**BROKEN, **BROKEN_READ}.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", *argv, *sorted(map(str, tmp_path.iterdir()))],
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert all(name in proc.stdout for name in BROKEN_READ)
    assert not any(name in proc.stdout for name in BROKEN)
    assert "syntax error" in proc.stdout or "syntax-error" in proc.stdout


def test_the_command_line_passes_broken_files_without_gradient_spellings(tmp_path):
    import subprocess
    import sys

    for name, text in BROKEN.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", str(tmp_path)], capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "All checks passed! (2 files checked)\n"), proc.stderr


def test_what_the_analysis_accepts_is_accepted(tmp_path):
    """The same parse as the analysis: newer syntax is read (PEP 695 on any Python), and what
    only CPython's later passes refuse (`nonlocal` at module level) is no syntax error (each
    file spells a backward, so that it is read)."""
    (tmp_path / "newer.py").write_text(
        "type Pair = tuple[int, int]\n\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n\nloss.backward()\n")
    (tmp_path / "late.py").write_text("nonlocal x\nloss.backward()\n")
    run = engine.check_paths([str(tmp_path)], Settings.default())
    assert run.errors() == [] and run.exit_code() == 0


def test_a_training_file_that_does_not_parse_is_refused_before_libcst(parses):
    text = TRAINING.replace("for epoch in range(args.epochs):", "for epoch in range(args.epochs)")
    result = check_source(text, "train.py", Settings.default())
    assert [(e.kind, e.line, e.message) for e in result.errors] == [("syntax-error", 11, "syntax error: expected ':'")]
    assert parses["libcst"] == 0


def test_a_warm_run_reports_a_broken_file_it_reads_again(tmp_path, parses):
    """Nothing is cached for the files with no spelling (nothing was done for them); a file
    read that does not parse is served from the cache with its error."""
    (tmp_path / "fine.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("def f(:\n    loss.backward()\n")
    tasks = [(str(tmp_path / name), Settings.default()) for name in ("fine.py", "broken.py")]
    options = engine.RunOptions(jobs=1, cache_dir=str(tmp_path / "cache"))
    for run in range(2):
        parses.update(libcst=0, ast=0, symtable=0)
        results = engine.check_files(tasks, options)
        assert [bool(r.errors) for r in results] == [False, True]
        assert parses["libcst"] == 0
        assert parses["ast"] + parses["symtable"] == (0 if run else 1)  # warm: the cache's entry
