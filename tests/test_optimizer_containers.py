"""Optimizers held in a list or dict: `opts[i]` and `for o in opts` are optimizers (one per
index text), decided from what the container is built of, not from its name."""

from __future__ import annotations

import textwrap

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

HEAD = """
import torch
nets = [torch.nn.Linear(2, 1) for _ in range(2)]
"""


def codes(source: str) -> list[tuple[str, int]]:
    text = HEAD + textwrap.dedent(source)
    result = check_source(text, "train.py", Settings.default())
    offset = HEAD.count("\n")
    return [(f.code, f.line - offset) for f in result.findings]


def test_an_element_stepped_and_never_cleared():
    assert codes(
        """
        pool = [torch.optim.SGD(n.parameters(), lr=0.1) for n in nets]
        for x in data:
            nets[0](x).sum().backward()
            pool[0].step()
        """
    ) == [("GL001", 4)]


def test_a_dict_of_optimizers_by_key():
    assert codes(
        """
        pool = {"a": torch.optim.SGD(nets[0].parameters(), lr=0.1), "b": torch.optim.Adam(nets[1].parameters())}
        for x in data:
            pool["a"].zero_grad()
            nets[0](x).sum().backward()
            pool["a"].step()
            nets[0](x).sum().backward()
            pool["a"].step()
        """
    ) == [("GL001", 7)]


def test_two_indexes_are_two_optimizers():
    # clearing one element does not clear another, and each is cleared before its own backward
    assert codes(
        """
        pool = [torch.optim.SGD(n.parameters(), lr=0.1) for n in nets]
        for x in data:
            pool[0].zero_grad()
            nets[0](x).sum().backward()
            pool[1].zero_grad()
            nets[1](x).sum().backward()
            pool[0].step()
            pool[1].step()
        """
    ) == []


def test_a_container_of_modules_is_not_one_of_optimizers():
    # `nets[i].zero_grad()` clears a module (unknown which): precision first, nothing to say
    assert codes(
        """
        pool = torch.optim.SGD(nets[0].parameters(), lr=0.1)
        for x in data:
            nets[0].zero_grad()
            nets[0](x).sum().backward()
            pool.step()
        """
    ) == []


def test_a_name_iterating_a_container_of_other_things_is_no_optimizer():
    assert codes(
        """
        steppers = [make_env() for _ in range(2)]
        opt = torch.optim.SGD(nets[0].parameters(), lr=0.1)
        for x in data:
            opt.zero_grad()
            nets[0](x).sum().backward()
            opt.step()
            for e in steppers:
                e.step()
        """
    ) == []


def test_a_generator_attribute_is_no_part_of_critics_built_with_a_setting_of_self():
    # `.to(self.device)` reads `self`, not `self.generator`: the critics are other modules, so
    # their clears leave the generator's gradients piling up (GL003, as for named critics)
    assert codes(
        """
        class GAN:
            def fit(self, data):
                self.generator = Generator().to(self.device)
                critics = [Critic().double().to(self.device) for _ in range(3)]
                opt_c = [torch.optim.Adam(critics[i].parameters()) for i in range(3)]
                opt_g = torch.optim.Adam(self.generator.parameters())
                for x in data:
                    for i in range(3):
                        opt_c[i].zero_grad()
                        critics[i](self.generator(x).detach()).mean().backward()
                        opt_c[i].step()
                    critics[0](self.generator(x)).mean().backward()
                    opt_g.step()
        """
    ) == [("GL003", 14)]


def test_a_dict_returned_by_a_function_of_the_file_and_handed_back_by_prepare():
    # `pool = build(nets)` whose body returns a dict name; `accelerator.prepare(pool)` hands it back
    assert codes(
        """
        def build(nets):
            made = {"a": torch.optim.SGD(nets[0].parameters(), lr=0.1)}
            return made
        pool = build(nets)
        pool = accelerator.prepare(pool)
        for x in data:
            nets[0](x).sum().backward()
            pool["a"].step()
        """
    ) == [("GL001", 8)]


def test_a_container_of_something_else_returned_by_a_function_stays_unknown():
    assert codes(
        """
        def build(nets):
            made = {"a": make_thing(nets[0])}
            return made
        pool = build(nets)
        for x in data:
            nets[0](x).sum().backward()
            pool["a"].step()
        """
    ) == []
