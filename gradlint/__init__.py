"""gradlint: a linter for PyTorch training loops.

Importing this package is cheap on purpose: no libcst, no torch.  The
static checker lives in ``gradlint.engine``; the runtime verifier in
``gradlint.verify``.
"""

__version__ = "0.1.0"
