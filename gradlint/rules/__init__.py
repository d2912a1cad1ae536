"""One small module per rule.  Each is a pure function of a FileModel and
carries its own valid and invalid samples (run by tests/test_rule_samples.py).
Metadata and selection live in registry.py."""
