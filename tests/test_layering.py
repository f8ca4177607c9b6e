"""The layering of DESIGN.md, kept by test: modules that read a results directory never load the runner or
PyMuPDF, so a notebook or a CI gate that only reads results needs neither the arms nor a PDF library; and
no module of the package imports itself back through others.

Two checks. The static one parses every module of the package and follows its imports, those made inside
functions too (they load the module when the function runs: ``Results.refusal()`` once reached the arms
this way); an import under ``if TYPE_CHECKING:`` is never run, so a reader may make one, but it is part of
the import graph a reader of the code and the type checker follow, so it counts toward a cycle. The dynamic
one imports each reader in a process that has imported nothing of evalkit (this process has long since
imported everything) and reads the modules it loaded from ``sys.modules``: it catches what the static one
cannot see (``import_module``). One interpreter imports the third-party libraries the readers share, none of
them forbidden, then forks a child per module, so those imports are paid once rather than once per module.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

READERS = ("results", "rules", "completeness", "gating", "comparison", "planning", "calibration", "environment",
           "latency", "docfigures", "refusal_report", "reports", "reports.figures", "reports.labels", "reports.prose",
           "reports.queryfile", "reports.rendering", "reports.selection", "reports.tables", "reports.judge",
           "autojudge.record")
# the runner, the arms, the page store and the PDF library behind it
FORBIDDEN = {"evalkit.runner", "evalkit.arms", "evalkit.pages", "evalkit.extraction", "fitz", "pymupdf"}
PACKAGE = Path(__file__).resolve().parents[1] / "evalkit"
TYPING = "TYPE_CHECKING"  # where an import under ``if TYPE_CHECKING:`` is made

# Imports made inside these functions are left out of one check, each for its reason. An allowance that no
# longer names an import fails (test_every_allowance_names_an_import).
READER_MAY = {  # (module, function): a reader may call into a writer there
    ("evalkit.calibration", "_pdf"): "the yardstick's reference workload parses PDF pages (extraction is what "
                                     "evalkit spends its time on); only a run or a bench takes a reading",
}
LOOPS = {  # (module, function): a loop by design
    ("evalkit.arms", "builtin"): "the registry imports its built-in arms when first asked, and the arms that "
                                 "wrap another (admit, hybrid, learned) and the policies build it through the registry",
}


@dataclass(frozen=True)
class Import:
    target: str  # the module imported: ``from . import x`` names module x where x is one
    where: str   # "" at module level, TYPING, or the function the import is made in


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package by its own name)."""
    return {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in sorted(root.rglob("*.py"))}


def _type_checking(test: ast.expr) -> bool:
    return isinstance(test, ast.Name) and test.id == TYPING or isinstance(test, ast.Attribute) and test.attr == TYPING


def _statements(node: ast.AST, where: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement under ``node``, with where it is made."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node, where
        return
    if isinstance(node, ast.If) and _type_checking(node.test):
        for stmt in node.body:
            yield from _statements(stmt, TYPING)
        for stmt in node.orelse:
            yield from _statements(stmt, where)
        return
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not where:
        where = node.name
    for child in ast.iter_child_nodes(node):
        yield from _statements(child, where)


def imports(name: str, path: Path, known: Mapping[str, Path]) -> list[Import]:
    """What module ``name`` (its source at ``path``) imports, relative imports resolved against ``known``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node, where in _statements(ast.parse(path.read_text(encoding="utf-8"), str(path)), ""):
        if isinstance(node, ast.Import):
            found += [Import(a.name, where) for a in node.names]
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
        found += [Import(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base, where) for a in node.names]
    return found


def import_graph(root: Path) -> dict[str, list[Import]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


@cache
def package_graph() -> dict[str, list[Import]]:
    return import_graph(PACKAGE)


def _within(module: str, names: set[str]) -> bool:
    return any(module == n or module.startswith(f"{n}.") for n in names)


def reaches(graph: Mapping[str, list[Import]], start: str, forbidden: set[str],
            allowed: Mapping[tuple[str, str], str] = {}) -> list[str] | None:
    """The shortest chain of imports that run (at module level or in a function; importing ``a.b`` runs
    package ``a`` too) from ``start`` to a module within ``forbidden``, or None."""
    came = {start: ""}
    todo = [start]
    while todo:
        module = todo.pop(0)
        if _within(module, forbidden):
            chain = [module]
            while came[chain[-1]]:
                chain.append(came[chain[-1]])
            return chain[::-1]
        parts = module.split(".")
        nexts = [i.target for i in graph.get(module, ()) if i.where != TYPING and (module, i.where) not in allowed]
        for n in [*nexts, *(".".join(parts[:k]) for k in range(1, len(parts)))]:
            if n not in came:
                came[n] = module
                todo.append(n)
    return None


def cycles(graph: Mapping[str, list[Import]], allowed: Mapping[tuple[str, str], str] = {}) -> list[list[str]]:
    """The modules that import each other in a loop (every import counts, TYPE_CHECKING ones too), one sorted
    list per loop: Tarjan's strongly connected components of two modules or more, or of one importing itself."""
    edges = {m: {i.target for i in imps if i.target in graph and (m, i.where) not in allowed}
             for m, imps in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(m: str) -> None:
        index[m] = low[m] = len(index)
        stack.append(m)
        for n in edges[m]:
            if n not in index:
                visit(n)
                low[m] = min(low[m], low[n])
            elif n in stack:
                low[m] = min(low[m], index[n])
        if low[m] == index[m]:
            component = stack[stack.index(m):]
            del stack[stack.index(m):]
            if len(component) > 1 or m in edges[m]:
                found.append(sorted(component))

    for m in sorted(edges):
        if m not in index:
            visit(m)
    return found


# ---- the package ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_a_module_that_reads_results_imports_neither_the_runner_nor_pymupdf(reader):
    chain = reaches(package_graph(), f"evalkit.{reader}", FORBIDDEN, READER_MAY)
    assert chain is None, f"evalkit.{reader} reaches a writer: {' -> '.join(chain or [])}"


def test_no_module_imports_itself_back():
    assert cycles(package_graph(), LOOPS) == []


def test_every_allowance_names_an_import():
    made = {(m, i.where) for m, imps in package_graph().items() for i in imps}
    assert set(READER_MAY) | set(LOOPS) <= made
    assert {f"evalkit.{r}" for r in READERS} <= set(package_graph())


# ---- the checks themselves, on a package of our own ----------------------------------------------------------


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"__init__.py": "", **files}.items():
        (root / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "pkg" / name).write_text(text)
    return root / "pkg"


def test_the_static_check_finds_a_reader_that_imports_a_writer_through_a_function(tmp_path):
    graph = import_graph(write_package(tmp_path, {
        "runner.py": "import json\n",
        "results.py": "from . import helper\nimport typing\nif typing.TYPE_CHECKING:\n    from .runner import run\n",
        "helper.py": "def rescore():\n    from .runner import run\n"}))
    assert reaches(graph, "pkg.results", {"pkg.runner"}) == ["pkg.results", "pkg.helper", "pkg.runner"]
    assert reaches(graph, "pkg.results", {"pkg.runner"}, {("pkg.helper", "rescore"): "why"}) is None


def test_the_static_check_follows_a_package_that_a_submodule_import_runs(tmp_path):
    graph = import_graph(write_package(tmp_path, {
        "arms/__init__.py": "import pymupdf\n", "arms/spec.py": "", "report.py": "from .arms.spec import parse\n"}))
    assert reaches(graph, "pkg.report", {"pymupdf"}) == ["pkg.report", "pkg.arms.spec", "pkg.arms", "pymupdf"]


def test_a_type_checking_import_back_is_a_cycle(tmp_path):
    graph = import_graph(write_package(tmp_path, {
        "results.py": "def refusal():\n    from . import refusal_report\n",
        "refusal_report.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .results import Results\n",
        "records.py": "from . import records\n"}))
    assert cycles(graph) == [["pkg.records"], ["pkg.refusal_report", "pkg.results"]]
    assert cycles(graph, {("pkg.results", "refusal"): "why", ("pkg.records", ""): "why"}) == []


# ---- what the interpreter loads ------------------------------------------------------------------------------


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


SLOW_FIXTURES = {"loaded"}  # it starts an interpreter that imports every reader: slow (tests/conftest.py)


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
    """The probe itself: importing the runner does load what the readers must not (PyMuPDF itself only
    once a PDF is read: the runner's import reaches the page store and the extractor, not the library)."""
    assert {"evalkit.runner", "evalkit.arms", "evalkit.pages", "evalkit.extraction"} <= loaded["evalkit.runner"]


@pytest.mark.slow  # a process of its own
def test_a_search_loads_neither_scipy_nor_matplotlib():
    """`evalkit run` and `evalkit search` load the runner and every built-in arm; scipy.stats alone took 1.2 s
    of a 2.5 s search, so the statistics load where they are computed, not where their module is imported."""
    probe = ("import sys, evalkit.runner, evalkit.arms, evalkit.cli; evalkit.arms.builtin(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'matplotlib', 'sklearn')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
