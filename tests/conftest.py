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


def pytest_configure(config):
    """A run outside any project caches in the user's cache directory (cache.user_cache_dir):
    the suite's runs in temporary directories get one of their own, not the user's."""
    import atexit
    import shutil
    import tempfile

    if "GRADLINT_TEST_CACHE_HOME" not in os.environ:
        folder = tempfile.mkdtemp(prefix="gradlint-test-cache-")
        atexit.register(shutil.rmtree, folder, True)
        os.environ["GRADLINT_TEST_CACHE_HOME"] = folder
        os.environ["XDG_CACHE_HOME"] = folder
