"""The package type-checks: ``mypy`` with the ``[tool.mypy]`` settings of pyproject.toml, inside ``make test``.
evalkit ships ``py.typed``, so its annotations are what a user's own checker reads."""
from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


@pytest.mark.slow
def test_mypy_passes_on_the_package():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")
