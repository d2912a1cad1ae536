"""Skip a test module when a package is not installed, without importing it.

`pytest.importorskip("torch")` imports torch in every pytest worker at collection (seconds of
CPU each); the verifier's tests run torch only in the processes they start.
"""

from __future__ import annotations

import importlib.util

import pytest


def require(name: str) -> None:
    """Skip the calling module, as pytest.importorskip would, when `name` is not installed."""
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"could not import {name!r}: not installed", allow_module_level=True)
