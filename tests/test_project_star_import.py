"""A star import of a project module binds the names that module defines (gradlint/project/
index.py's bind_stars): a subclass whose base arrives through `from trainers.base import *`
inherits the base's step, and the loop that runs it is followed.

fixtures/cross_file/star_imported_base_clips_after_step: wrong_train.py's loop calls
`self.update(x, y)`, inherited from base_trainer.py's BaseTrainer, which clips after the step.
Before, the base was not found (the star import bound nothing): no finding, and the base's
gradient calls were listed as not followed.
"""

from __future__ import annotations

import shutil

import pytest

from gradlint.core.findings import NOT_FOLLOWED
from gradlint.check.unfollowed import verdicts
from gradlint.project.index import Index
from test_project import ROOT, found, run, write

WRONG = ROOT / "fixtures" / "cross_file" / "star_imported_base_clips_after_step"
RIGHT = ROOT / "fixtures" / "cross_file" / "star_imported_base_steps_in_order"


def copy(folder, into):
    for path in folder.glob("*.py"):
        shutil.copy(path, into / path.name)
    return into


@pytest.mark.parametrize("named", [["."], ["wrong_train.py"]])
def test_the_inherited_step_of_a_star_imported_base_is_followed(tmp_path, named):
    result = run(copy(WRONG, tmp_path), *named)
    assert found(result) == [("base_trainer.py", 16, "GL004")]


def test_the_right_project_is_clean_and_every_gradient_call_is_followed(tmp_path):
    result = run(copy(RIGHT, tmp_path))
    assert found(result) == []
    assert [v for v in verdicts(result.results) if v.verdict == NOT_FOLLOWED] == []


def _index(tmp_path, files: dict) -> Index:
    write(tmp_path, files)
    index = Index([str(tmp_path)])
    for name, text in files.items():
        index.know(str(tmp_path / name), text, name)
    return index


def _starred(index: Index, tmp_path, name: str) -> dict:
    return index.module(str(tmp_path / name)).starred


BASE = "import torch\nfrom . import helpers as _helpers\n\n\nclass Base:\n    pass\n\n\ndef _private():\n    pass\n\n\ndef public():\n    pass\n"


def test_without_all_every_public_name_defined_or_imported_is_bound(tmp_path):
    index = _index(tmp_path, {"base.py": BASE, "sub.py": "from base import *\n\nclass Sub(Base):\n    pass\n"})
    assert _starred(index, tmp_path, "sub.py") == {"Base": "base.Base", "public": "base.public", "torch": "torch"}
    assert index.lookup("base.Base", str(tmp_path / "sub.py"))[0] == "class"


def test_a_literal_all_decides_what_is_bound(tmp_path):
    base = '__all__ = ("public",)\n' + BASE
    index = _index(tmp_path, {"base.py": base, "sub.py": "from base import *\n"})
    assert _starred(index, tmp_path, "sub.py") == {"public": "base.public"}


def test_an_all_that_is_not_a_literal_is_read_as_every_public_name(tmp_path):
    # what a computed `__all__` holds is not read; code that runs uses names it holds
    base = '__all__ = ["public"]\n__all__ += ["Base"]\n' + BASE
    index = _index(tmp_path, {"base.py": base, "sub.py": "from base import *\n"})
    assert _starred(index, tmp_path, "sub.py") == {"Base": "base.Base", "public": "base.public", "torch": "torch"}


def test_an_explicit_import_keeps_its_binding_and_a_relative_star_is_read(tmp_path):
    (tmp_path / "pkg").mkdir()
    files = {
        "pkg/__init__.py": "",
        "pkg/base.py": BASE,
        "pkg/other.py": "class Base:\n    pass\n",
        "pkg/sub.py": "from .other import Base\nfrom .base import *\n",
    }
    index = _index(tmp_path, files)
    starred = _starred(index, tmp_path, "pkg/sub.py")
    assert starred == {"public": ".base.public", "torch": "torch"}
    assert index.module(str(tmp_path / "pkg/sub.py")).aliases["Base"] == ".other.Base"


def test_star_imports_through_two_modules_and_a_cycle(tmp_path):
    files = {
        "base.py": "from middle import *\n\nclass Base:\n    pass\n",
        "middle.py": "from base import *\n\nclass Middle:\n    pass\n",
        "sub.py": "from middle import *\n",
    }
    index = _index(tmp_path, files)  # a cycle of star imports ends
    starred = _starred(index, tmp_path, "sub.py")
    assert starred["Middle"] == "middle.Middle"
    # middle.py's star import of base.py binds Base there, and sub.py's star import passes it on
    assert index.lookup(starred["Base"], str(tmp_path / "sub.py"))[:2] == ("class", str(tmp_path / "base.py"))


def test_a_warm_run_sees_an_edit_of_the_star_imported_base(tmp_path, tmp_path_factory):
    project = copy(WRONG, tmp_path)
    cache = str(tmp_path_factory.mktemp("cache"))
    assert found(run(project, "wrong_train.py", cache_dir=cache)) == [("base_trainer.py", 16, "GL004")]
    base = project / "base_trainer.py"
    base.write_text(base.read_text().replace("        nn.utils.clip_grad_norm_(", "        pass  # ("), encoding="utf-8")
    assert found(run(project, "wrong_train.py", cache_dir=cache)) == []
