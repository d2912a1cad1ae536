"""The supported Pythons: the trove classifiers of pyproject.toml, and where their
interpreters are (noxfile.py and the tests that run every one of them share this)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
_VERSION_CLASSIFIER = re.compile(r"Programming Language :: Python :: (3\.\d+)")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


SUPPORTED = sorted(
    (m[1] for m in map(_VERSION_CLASSIFIER.fullmatch, PROJECT.get("classifiers", [])) if m), key=_key
)


def _pyenv_bin(version: str) -> Optional[str]:
    """The newest pyenv-installed patch release of `version` (pyenv's shims answer only for
    the selected version, so the interpreters' own directories are used)."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = [d for d in glob.glob(os.path.join(root, "versions", f"{version}.*", "bin"))
             if re.fullmatch(rf"{re.escape(version)}\.\d+", Path(d).parent.name)]
    return max(found, key=lambda d: _key(Path(d).parent.name)) if found else None


def interpreter_dirs() -> list[str]:
    return [d for d in map(_pyenv_bin, SUPPORTED) if d]


def find_python(version: str) -> Optional[str]:
    """A python`version` that runs and says it is that version, or None."""
    folder = _pyenv_bin(version)
    candidates = [os.path.join(folder, f"python{version}")] if folder else []
    candidates.append(shutil.which(f"python{version}"))
    for candidate in filter(None, candidates):
        try:
            said = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if said.returncode == 0 and said.stdout.strip() == version:
            return candidate
    return None
