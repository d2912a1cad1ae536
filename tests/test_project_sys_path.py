"""A module's own `sys.path.insert/append(...)` lines: the folders its bare imports are read
from, as Python finds them at run time (gradlint/project/sys_path.py)."""

from __future__ import annotations

import pytest

from gradlint.project.sys_path import additions

KEY = "/repo/tools/train.py"


@pytest.mark.parametrize(
    "line, folder",
    [
        ('sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))', "/repo/tools/src"),
        ("sys.path.append(os.path.join(os.path.dirname(__file__), 'src'))", "/repo/tools/src"),
        ("sys.path.append('./model')", "/repo/tools/model"),
        ("sys.path.append('..')", "/repo"),
        ("sys.path.append(os.path.abspath('..'))", "/repo"),
        ("sys.path.append(str(Path(__file__).parent.parent))", "/repo"),
        ("sys.path.append(str(Path(__file__).resolve().parents[1] / 'lib'))", "/repo/lib"),
        ("sys.path.append(osp.dirname(osp.abspath(__file__)) + '/../agents')", "/repo/agents"),
        ("sys.path.append(os.getcwd())", "/repo/tools"),
        ("sys.path.append(os.path.split(os.path.dirname(__file__))[0])", "/repo"),
    ],
)
def test_an_appended_folder_is_read(line, folder):
    assert additions(f"import os\nimport sys\n{line}\nfrom trainer import Trainer\n", KEY) == ((), (folder,))


def test_an_inserted_folder_goes_first_and_names_bound_once_are_read():
    text = (
        "import os, sys\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "ROOT = os.path.dirname(HERE)\n"
        "sys.path.insert(0, os.path.join(ROOT, 'src'))\n"
        "sys.path.append(HERE)\n"
    )
    assert additions(text, KEY) == (("/repo/src",), ("/repo/tools",))


@pytest.mark.parametrize(
    "text",
    [
        "import sys\nsys.path.append(code_path)\n",  # a name nothing binds
        "import sys\nROOT = 'a'\nROOT = 'b'\nsys.path.append(ROOT)\n",  # bound twice: which one?
        "import sys\nsys.path.append(os.environ['CODE'])\n",  # the environment
        "import sys\nsys.path.insert(0)\n",  # not a call Python accepts
        "import sys\n# sys.path.append('src') in a comment\n",
        "import sys\nsys.path.append(f'{root}/src')\n",
    ],
)
def test_a_path_it_cannot_read_adds_nothing(text):
    assert additions(text, KEY) == ((), ())


def test_the_checker_reads_a_bare_import_from_the_folder_the_script_adds(tmp_path):
    """The script's loop steps through a helper of src/ that only `sys.path` makes importable:
    without that folder, the step is unseen and the missing clear goes unreported."""
    from tests.test_project import found, run

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "updates.py").write_text("def apply_update(optimizer):\n    optimizer.step()\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import os, sys\n"
        "import torch\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'src'))\n"
        "from updates import apply_update\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    model(x).sum().backward()\n"
        "    apply_update(opt)\n"
    )
    assert found(run(tmp_path)) == [("train.py", 7, "GL001")]
    assert found(run(tmp_path, "train.py")) == [("train.py", 7, "GL001")]
