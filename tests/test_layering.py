"""The layering of DESIGN.md, kept by test: modules that read a results directory never load the runner or
PyMuPDF, so a notebook or a CI gate that only reads results needs neither the arms nor a PDF library.

Each module is imported in a fresh interpreter (this process has long since imported everything), and the
modules it loaded are read from ``sys.modules``.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

READERS = ("results", "rules", "completeness", "gating", "comparison", "reporting", "planning", "calibration",
           "environment", "latency", "docfigures")
# the runner, the arms, the page store and the PDF library behind it
FORBIDDEN = {"evalkit.runner", "evalkit.arms", "evalkit.pages", "evalkit.extraction", "fitz", "pymupdf"}


def loaded_by(module: str) -> set[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


@pytest.mark.parametrize("reader", READERS)
def test_a_module_that_reads_results_loads_neither_the_runner_nor_pymupdf(reader):
    loaded = loaded_by(f"evalkit.{reader}")
    assert f"evalkit.{reader}" in loaded
    assert not loaded & FORBIDDEN, f"evalkit.{reader} loads {sorted(loaded & FORBIDDEN)}"


def test_the_check_sees_what_the_runner_loads():
    """The probe itself: importing the runner does load what the readers must not."""
    assert {"evalkit.runner", "pymupdf"} <= loaded_by("evalkit.runner")
