"""The README's rule documentation matches the registry (editors link to it)."""

from pathlib import Path

from gradlint.rules.registry import all_rules

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_rule_has_a_section_its_docs_url_points_to():
    for rule in all_rules():
        assert f"\n### {rule.code} {rule.name}\n" in README, rule.code
        anchor = rule.docs_url.rsplit("#", 1)[1]
        assert anchor == f"{rule.code.lower()}-{rule.name}"
        assert f"(#{anchor})" in README


def test_rules_table_states_defaults():
    for rule in all_rules():
        row = next(line for line in README.splitlines() if line.startswith(f"| [{rule.code}]"))
        assert f"| {'on' if rule.default else 'off'} |" in row


def test_fix_table_lists_every_rule_with_a_fix():
    rows = {line.split("|")[1].strip(): line for line in README.splitlines() if line.startswith("| GL")}
    for rule in all_rules():
        if rule.fix:
            assert rule.code in rows, rule.code
            safety = rows[rule.code].rsplit("|", 2)[1]
            assert safety.strip().startswith("unsafe") == rule.fix.startswith("Unsafe"), rule.code
        else:
            assert rule.code not in rows, rule.code
