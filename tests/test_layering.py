"""The layering of DESIGN.md, kept by test: modules that read a results directory never load the runner or
PyMuPDF, so a notebook or a CI gate that only reads results needs neither the arms nor a PDF library.

Each module is imported in a process of its own that has imported nothing of evalkit (this process has long
since imported everything), and the modules it loaded are read from ``sys.modules``. One interpreter imports
the third-party libraries the readers share, none of them forbidden, then forks a child per module, so
those seconds of imports are paid once rather than once per module.
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
SHARED = ("numpy", "pandas", "pandas.io.formats.style", "scipy.stats", "matplotlib.pyplot")
PROBE = """
import json, os, sys
for name in sys.argv[1].split(","):
    __import__(name)
assert not any(m == "evalkit" or m.startswith("evalkit.") for m in sys.modules), "evalkit loaded before the probe"
found = {}
for module in sys.argv[2:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            __import__(module)
            out = json.dumps(sorted(sys.modules))
        except BaseException as e:
            out = json.dumps(f"{type(e).__name__}: {e}")
        with os.fdopen(w, "w") as f:
            f.write(out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        found[module] = json.loads(f.read())
    os.waitpid(pid, 0)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, set[str]]:
    """Module -> the modules importing it loaded, for every reader and the runner."""
    modules = [f"evalkit.{r}" for r in READERS] + ["evalkit.runner"]
    out = subprocess.run([sys.executable, "-c", PROBE, ",".join(SHARED), *modules], capture_output=True, text=True,
                         check=True).stdout
    found = json.loads(out)
    failed = {m: v for m, v in found.items() if isinstance(v, str)}
    assert not failed, failed
    return {m: set(v) for m, v in found.items()}


@pytest.mark.parametrize("reader", READERS)
def test_a_module_that_reads_results_loads_neither_the_runner_nor_pymupdf(loaded, reader):
    modules = loaded[f"evalkit.{reader}"]
    assert f"evalkit.{reader}" in modules
    assert not modules & FORBIDDEN, f"evalkit.{reader} loads {sorted(modules & FORBIDDEN)}"


def test_the_check_sees_what_the_runner_loads(loaded):
    """The probe itself: importing the runner does load what the readers must not."""
    assert {"evalkit.runner", "pymupdf"} <= loaded["evalkit.runner"]
