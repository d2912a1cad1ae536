"""gradlint: a linter for PyTorch training loops.

Importing this package is cheap on purpose: no libcst, no torch.  The
static checker lives in ``gradlint.check.engine``; the runtime verifier in
``gradlint.verify``.
"""

# The one place the version is written: pyproject.toml reads it (dynamic
# version), so the installed metadata agrees.  Tags are `v` + this
# (v0.1.0); CHANGELOG.md lists what each version changed.
__version__ = "0.1.0"
DISTRIBUTION = "torch-gradlint"  # the name on PyPI; `gradlint` there is another project

# The project's home. A placeholder until the repository is published (the
# docs say so): every link gradlint prints (a finding's `url`, SARIF's
# helpUri and informationUri, the editors' links) and pyproject.toml's
# project URLs derive from it, so moving it is one edit here and there.
REPOSITORY_URL = "https://github.com/gradlint/gradlint"
DOCS_URL = f"{REPOSITORY_URL}/blob/main/docs/"  # docs/index.md; a rule's page is rules/GLxxx.md below it
