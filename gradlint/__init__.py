"""gradlint: a linter for PyTorch training loops.

Importing this package is cheap on purpose: no libcst, no torch.  The
static checker lives in ``gradlint.engine``; the runtime verifier in
``gradlint.verify``.
"""

# The one place the version is written: pyproject.toml reads it (dynamic
# version), so the installed metadata agrees.  Tags are `v` + this
# (v0.1.0); CHANGELOG.md lists what each version changed.
__version__ = "0.1.0"
DISTRIBUTION = "torch-gradlint"  # the name on PyPI; `gradlint` there is another project
