"""Every rule's own valid and invalid samples (the Fixit habit)."""

import pytest

from gradlint.check.engine import check_source
from gradlint.rules.registry import all_rules
from gradlint.options.settings import Settings
from marks import expected_marks, found_marks

CASES = [
    pytest.param(rule, kind, index, sample, id=f"{rule.code}-{kind}-{index}")
    for rule in all_rules()
    for kind, samples in (("valid", rule.valid), ("invalid", [s.source for s in rule.invalid]))
    for index, sample in enumerate(samples)
]


def test_every_rule_has_samples():
    for rule in all_rules():
        assert rule.valid and rule.invalid, rule.code
        assert all(expected_marks(sample.source) for sample in rule.invalid), rule.code


@pytest.mark.parametrize("rule, kind, index, sample", CASES)
def test_sample(rule, kind, index, sample):
    result = check_source(sample, "sample.py", Settings(select=frozenset({rule.code})))
    assert not result.errors
    assert found_marks(result.findings) == expected_marks(sample)


@pytest.mark.parametrize("rule, kind, index, sample", [c for c in CASES if c.values[1] == "valid"])
def test_valid_samples_clean_under_every_rule(rule, kind, index, sample):
    """A valid sample is correct code: no default rule may fire on it."""
    result = check_source(sample, "sample.py", Settings.default())
    assert found_marks(result.findings) == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_the_short_wrong_example_is_found_and_the_right_one_is_not(rule):
    """The Wrong / Right pair `gradlint explain` and the rule's page show first: what a reader
    copies to try the rule must behave as shown."""
    settings = Settings(select=frozenset({rule.code}))
    wrong = check_source(rule.wrong, "wrong.py", settings)
    right = check_source(rule.right, "right.py", settings)
    assert not wrong.errors and not right.errors
    assert [f.code for f in wrong.findings] == [rule.code]
    assert right.findings == []
