"""The code is ruff-clean: pycodestyle's errors and warnings, bugbear's likely bugs and pyflakes' dead imports
and names (``[tool.ruff]`` of pyproject.toml), inside ``make test``, as tests/test_typing.py runs mypy."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def _ruff() -> str:
    """The ruff of this environment (the ``test`` extra installs it), else one on PATH."""
    here = Path(sys.executable).with_name("ruff")
    found = str(here) if here.exists() else shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: pip install -e '.[test]'")
    return found


@pytest.mark.slow
def test_ruff_finds_nothing_in_the_tree():
    done = subprocess.run([_ruff(), "check", "--no-cache", "--output-format", "concise"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All checks passed!" in done.stdout
