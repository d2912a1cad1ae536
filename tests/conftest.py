import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

# Whole modules of slow end-to-end runs, in the slow set (`pytest -m slow`, `nox -s slow`):
# real editors on `gradlint lsp`, and pre-commit building the hook's venv from PyPI.
SLOW_MODULES = {"test_editor_nvim.py", "test_editor_emacs.py", "test_precommit.py"}


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by mark
def pytest_collection_modifyitems(items):
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
