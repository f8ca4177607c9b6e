"""Shared fixtures: tiny PDFs built with PyMuPDF, the real default corpora fetched once per machine, the
query sets and runs several test modules use, and the check of a one-line error."""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, settings

from evalkit.__main__ import WITHOUT

ROOT = Path(__file__).resolve().parent.parent
# Hypothesis: a bounded number of examples, and no per-example deadline or speed health check, which a
# loaded machine would fail; HYPOTHESIS_PROFILE=thorough draws ten times as many.
settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", parent=settings.get_profile("ci"), max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# Real corpora and their caches persist between test runs (they are pinned by sha256, so reuse is safe).
TEST_HOME = ROOT / ".evalkit-test"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Tests run the real all-MiniLM-L6-v2 assembled from PyPI packages: no model hub, no fake embedding.
os.environ.setdefault("EVALKIT_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
os.environ.setdefault("EVALKIT_MODEL_DIR", "packaged")
# On `pytest -n 2` both cores are busy, and a model's second thread only spins waiting for one: embedding on
# one thread each (evalkit.config.threads), this process's and every process it starts (commands, kernels,
# Dask workers), does the same work in the same time for a quarter less CPU.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("EVALKIT_THREADS", "1")
# The test processes do without rfc3987-syntax, as `python -m evalkit` does (evalkit/__main__.py): nbformat's
# jsonschema would compile its 38 Lark grammars in every worker, 3 CPU-s, for a format no test checks.
# tests/test_cli.py checks, in a process of its own, that the library leaves a user's process alone.
for _name in WITHOUT:
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
# A few short real manuals: enough for the real model and real FTS5 behaviour, small enough to embed quickly.
SMALL = ("booktabs.pdf", "ctable.pdf", "float.pdf", "newfloat.pdf", "setspace-doc.pdf", "parskip.pdf",
         "subcaption.pdf", "cite.pdf", "chapterbib.pdf", "pdfpages.pdf")


# Four queries about the `small` manuals, one per class (q4's words occur nowhere): the runs below use them.
SMALL_QUERIES = '''
[set]
name = "small-set"
[[query]]
id = "q1"
class = "needle"
text = "How do I put extra space between rows of a table?"
judgments = [{ doc = "booktabs.pdf", page = 6, gain = 3 }, { doc = "ctable.pdf", page = 5, gain = 1 }]
[[query]]
id = "q2"
class = "spread"
text = "define a new float type"
judgments = [{ doc = "float.pdf", page = 3, gain = 3 }, { doc = "newfloat.pdf", page = 2, gain = 2 },
             { doc = "float.pdf", page = 1, gain = 0 }, { doc = "newfloat.pdf", page = 1, gain = 0 }]
[[query]]
id = "q3"
class = "abstain"
text = "How do I draw a gantt chart with pgfgantt?"
judgments = []
[[query]]
id = "q4"
class = "described"
text = "zzzqx qqqzzv"
judgments = [{ doc = "setspace-doc.pdf", page = 1, gain = 2 }]
'''


def install_plugin(site: Path, module: str, source: str, arms: dict[str, str]) -> Path:
    """A real installed distribution in ``site`` (a module and a dist-info whose entry points name its arms,
    ``{name: "module:Class"}``), not a monkeypatched registry; put ``site`` on sys.path to install it."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir(parents=True)
    (site / f"{module}.py").write_text(source)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[evalkit.arms]\n" + "".join(f"{n} = {v}\n" for n, v in arms.items()))
    return site


def query(qid: str, cls: str, text: str, *judgments: tuple, **fields: object) -> dict:
    """One ``[[query]]`` table of :func:`query_file`: a judgment is ``(doc, page, gain)`` or ``(doc, page, gain,
    evidence)``; ``fields`` are the query's others (``kind``, ``distractor``, ``notes``, ``pooled``)."""
    keys = ("doc", "page", "gain", "evidence")
    return {"id": qid, "class": cls, "text": text,
            "judgments": [dict(zip(keys, j, strict=False)) for j in judgments], **fields}


def query_file(path: Path, *queries: dict, **header: object) -> Path:
    """Write a valid query file, one :func:`query` per ``[[query]]``, under a ``[set]`` of ``header``
    (``name`` is the file's stem unless given; ``corpus``, ``gains``, ``pool_depth``, ``pool_arms``): the one
    builder of the query sets tests write, in the form a person writes them (TOML, by tomli_w, not evalkit)."""
    import tomli_w

    path.write_text(tomli_w.dumps({"set": {"name": path.stem, **header}, "query": list(queries)}))
    return path


def make_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF with one page per string (an empty string makes a page with no text, like a scan)."""
    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        if text:
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), text, fontsize=10)
    doc.save(path)
    doc.close()
    return path


def benchmark(name: str):
    """``benchmarks/NAME.py`` as a module: a test checks a script's figures or reuses its simulation, so the
    benchmark and the test draw from one definition."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# How long a wait may last before a test is failed as hung (a browser's page, a server's start, a kernel's
# answer): a bound on a hang, never a measure of speed. On a 2-core machine at load 14 every step takes
# several times as long as on an idle one, and past Playwright's default 30 s.
HANG_S = 600


# Fixtures that need a real corpus, the real model or a cluster of processes: a test that uses one, itself or
# through another fixture, is marked slow, so `pytest -n 2 -m "not slow"` is the inner loop (85 s on an
# idle 2-core machine: docs/getting-started.md). A test module may name more of its
# own in SLOW_FIXTURES (a fixture that starts a server or an interpreter); a test that starts processes of
# its own (an interpreter, a kernel, a browser, mypy, mkdocs, a mount namespace), or that costs more than
# about 1.5 CPU-seconds by itself (fitting the local judge in every fold, a coverage simulation, every
# rendering of hostile input), carries the mark itself.
SLOW_FIXTURES = {"real_env", "latex", "rmanuals", "small", "small_results", "small_pair", "latex_results", "cluster"}


# `make test` runs the suite on two workers (`pytest -n 2`, pytest-xdist, `--dist loadgroup`).
# Tests sharing a fixture
# built once per module or package (a server, a rendered report) run on one worker, which builds it once; so
# do the tests sharing the Dask cluster. The real corpora are built once for both workers (:func:`building`).
# xdist hands out the groups first, largest first (its --loadscope-reorder), then the tests of no group in
# the order collected here: slow ones first, the quick ones filling in at the end, so neither worker is
# left with one long test while the other is idle.
SHARED_SESSION_FIXTURES = {"cluster"}


def _xdist_group(item) -> str | None:
    """The worker group of a test: the session fixture it shares, or the module or package whose fixture it uses."""
    if shared := sorted(SHARED_SESSION_FIXTURES & set(item.fixturenames)):
        return shared[0]
    info = getattr(item, "_fixtureinfo", None)  # the fixtures the test uses, directly or through others
    # defined in a test module or a package's conftest (the real corpora here are shared through the cache);
    # of several, the widest: a package's tests share what its conftest builds
    shared = [d[-1] for d in (info.name2fixturedefs.values() if info else ())
              if d[-1].scope != "function" and d[-1].baseid not in ("", "tests")]
    widest = sorted(shared, key=lambda d: ("session", "package", "module", "class").index(d.scope))
    return widest[0].baseid if widest else None


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks and before xdist reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        slow = SLOW_FIXTURES | set(getattr(getattr(item, "module", None), "SLOW_FIXTURES", ()))
        if slow & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        if group := _xdist_group(item):
            item.add_marker(pytest.mark.xdist_group(group))
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker collects alike, so the order is the same on both
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down
def pytest_runtest_teardown(item, nextitem):
    """End a shared session fixture after the last test of its group, not at the end of the run: the idle Dask
    cluster's processes (heartbeats, a 10 ms profiler) took 170 CPU-s of a 16-minute run. loadgroup hands a
    group to one worker in one piece; a later test that asks for the fixture again starts it again."""
    for name in SHARED_SESSION_FIXTURES & set(item.fixturenames):
        if nextitem is None or name not in nextitem.fixturenames:
            item._fixtureinfo.name2fixturedefs[name][-1].finish(item._request)


def pytest_sessionfinish(session):
    """A worker collects its garbage and freezes the survivors before xdist reports it finished. The controller
    then closes the worker, and execnet interrupts a worker still busy 5 s later (SIGINT). pytest's last step
    collects garbage five times (its unraisable-exception check): over a full run's heap (500,000-600,000
    objects), 2.0-2.5 s in all on an idle machine and 1.8-3.4 s each at load 12, where the interrupt surfaced
    after ``[100%]`` as a KeyboardInterrupt in Hypothesis's GC callback. Frozen objects are not traversed again,
    so those collections take under a millisecond."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import gc

        gc.collect()
        gc.freeze()


def pytest_collection_finish(session):
    """Refuse a run whose groups xdist dropped: it names a test's group in its id (``…@group``), and where the
    installed pytest ignores that (pytest 9 with xdist 3.8) each worker silently builds every shared fixture."""
    if not session.config.getoption("loadgroup", False):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist did not group {lost[0]} (and {len(lost) - 1} more): "
                                "this pytest and pytest-xdist do not work together (see pyproject.toml)")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Point evalkit's data dir, cache dir and lock file at a fresh temporary folder."""
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("EVALKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALKIT_LOCK", str(tmp_path / "corpora.lock"))
    return tmp_path


TINY_QUERIES = '''
[set]
name = "tiny"
[[query]]
id = "q1"
class = "needle"
text = "walrus migration"
judgments = [{ doc = "a.pdf", page = 2, gain = 3 }]
'''


@pytest.fixture
def tiny(isolated):
    """A two-document folder, its query file and the argv of a keyword run into ``res``."""
    docs = isolated / "docs"
    docs.mkdir()
    make_pdf(docs / "a.pdf", ["seals", "walrus migration routes"])
    make_pdf(docs / "b.pdf", ["penguins and a walrus"])
    q = isolated / "tiny.toml"
    q.write_text(TINY_QUERIES)
    return isolated, ["run", "--docs", str(docs), "--qrels", str(q), "--arms", "keyword", "--out",
                      str(isolated / "res")]


def one_line_error(capsys, *needles):
    """The error a failed command leaves on stderr: one line after any progress bars, no traceback, holding
    every needle."""
    err = capsys.readouterr().err
    assert "evalkit: " in err and "Traceback" not in err, err
    err = err[err.index("evalkit: "):]  # after any progress bars
    assert err.count("\n") == 1, err
    for n in needles:
        assert n in err, err
    return err


def evalkit_in_namespace(mounts: str, argv: list[str], after: str = ""):
    """``python -m evalkit ARGV`` in a mount namespace of its own, after the shell commands ``mounts`` (a
    read-only bind, a tiny tmpfs) and before ``after`` (which sees the mounts; its output goes to stderr):
    a real read-only or full file system, gone when the process ends, however it ends. Skipped where mount
    namespaces are not allowed (CI runs as root, where they are)."""
    import shlex
    import shutil
    import subprocess

    if not shutil.which("unshare") or subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode:
        pytest.skip("needs a mount namespace (unshare --mount, as root)")
    script = (f"set -e; {mounts}; set +e; {shlex.quote(sys.executable)} -m evalkit {shlex.join(argv)}; code=$?; "
              f"{{ {after or ':'}; }} >&2; exit $code")
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def cluster():
    """A real Dask cluster of two worker processes on this machine: its ``dask://`` address."""
    distributed = pytest.importorskip("distributed")
    import dask

    # workers that may start children: extraction bounds every PDF in a process of its own. The scheduler's
    # HTTP server starts even without a dashboard, on 8787 unless told: two suites at once warned of the clash
    with dask.config.set({"distributed.worker.daemon": False}), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
            scheduler_kwargs={"dashboard": False}, silence_logs=40) as c:
        yield c.scheduler_address.replace("tcp://", "dask://")


@pytest.fixture(scope="session")
def real_env():
    """Environment for the real corpora: a persistent data dir and cache under .evalkit-test/."""
    return {"EVALKIT_DATA": str(TEST_HOME / "data"), "EVALKIT_CACHE": str(TEST_HOME / "cache"),
            "EVALKIT_LOCK": str(ROOT / "corpora.lock")}


@contextmanager
def building(name: str) -> Iterator[None]:
    """One process at a time builds ``name`` in the persistent .evalkit-test cache (fetches, extracts, embeds):
    the other worker of ``pytest -n 2`` (and a test run in another checkout sharing the cache) waits, then
    finds it built and only reads it. A flock: the kernel releases it if the holder dies."""
    from evalkit.atomic import holding

    folder = TEST_HOME / "building" / name
    folder.mkdir(parents=True, exist_ok=True)
    with holding(folder):
        yield


def _real_corpus(name: str, env: dict[str, str]):
    """A real corpus, fetched (apt-get download + dpkg-deb) and its pages in the store: yields (corpus, store)."""
    from evalkit import corpora
    from evalkit.arms.lexical import ensure_global_index
    from evalkit.pages import PageStore

    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    with building(name):
        c = corpora.load(name)
        corpora.fetch(c)
        store = PageStore()
        ingest = store.ingest(c, progress=False)
        ensure_global_index(store, ingest.corpus)  # one long write: built here once, not by a test of each worker
    yield ingest.corpus, store
    store.close()
    mp.undo()


@pytest.fixture(scope="session")
def latex(real_env):
    """The real `latex` corpus: (corpus, store)."""
    yield from _real_corpus("latex", real_env)


@pytest.fixture(scope="session")
def rmanuals(real_env):
    """The real `rmanuals` corpus: (corpus, store)."""
    yield from _real_corpus("rmanuals", real_env)


@pytest.fixture(scope="session")
def small(latex, tmp_path_factory):
    """Ten short real manuals from `latex` in a folder of their own, pages and vectors in the store:
    (corpus, store)."""
    import shutil

    from evalkit import corpora
    from evalkit.arms.semantic import SemanticArm

    c, store = latex
    folder = tmp_path_factory.mktemp("small")
    for name in SMALL:
        shutil.copy(c.path(name), folder / name)
    with building("small"), pytest.MonkeyPatch.context() as mp:  # their vectors, embedded once for both workers
        # (the cache is keyed by content), on every core: the other worker's first tests wait for them
        mp.delenv("EVALKIT_THREADS", raising=False)
        small = store.ingest(corpora.from_dir(folder, "small"), progress=False).corpus
        SemanticArm(small, store, progress=False)  # the arm `semantic`: its vectors
    return small, store


ENVIRONMENT = {"python": "3.11.7", "implementation": "CPython", "sqlite": "3.40.1",
               "packages": {"numpy": "2.4.6", "pandas": "3.1.1"},
               "machine": {"platform": "Linux", "processor": "x86_64", "cpus": 2, "memory_bytes": 1}}


def write_results(path: Path, scores: dict[str, dict[str, list[float]]], classes: list[str], *,
                  outcomes: dict[str, list[str]] | None = None, latency: dict[str, float] | None = None,
                  corpus: str = "c0ffee", queries: str = "q0ffee", environment: dict | None = None,
                  ids: list[str] | None = None) -> Path:
    """A results directory as the runner writes it (manifest.json, per_query.parquet), from given per-query
    scores: ``scores[arm][measure]`` lists one value per query (abstain queries get NaN whatever is given),
    so statistics can be tested on chosen numbers. Every unlisted default measure copies nDCG@10."""
    import json

    import pandas as pd

    from evalkit.measures import DEFAULT

    path.mkdir(parents=True, exist_ok=True)
    ids = ids or [f"q{i:03d}" for i in range(len(classes))]
    rows = []
    for arm, by_measure in scores.items():
        for i, (qid, cls) in enumerate(zip(ids, classes, strict=True)):
            values = {m: by_measure.get(m, by_measure["nDCG@10"])[i] for m in DEFAULT}
            if cls == "abstain":
                values = {m: float("nan") for m in DEFAULT}
            outcome = (outcomes or {}).get(arm, [None] * len(ids))[i] or (
                "answered_abstain" if cls == "abstain" else "answered")
            rows.append({"query": qid, "class": cls, "arm": arm, **values, "outcome": outcome,
                         "refused": outcome in ("correct_refusal", "wrongful_refusal"), "hits": 10,
                         "latency_s": (latency or {}).get(arm, 0.01), "ties@10": 0})
    pd.DataFrame(rows).to_parquet(path / "per_query.parquet", index=False)
    manifest = {"corpus": {"name": "fixture", "digest": corpus, "root": "/nowhere"},
                "qrels": {"name": "fixture-set", "path": "qrels/fixture.toml", "digest": queries, "queries": len(ids)},
                "depth": 100, "specs": list(scores), "evalkit": "0.1.0", "environment": environment or ENVIRONMENT,
                "arms": [{"spec": a, "label": a, "file": a, "params": {}} for a in scores], "status": "complete"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


@pytest.fixture(scope="session")
def small_results(small, tmp_path_factory):
    """A real results directory: keyword, global-index and score-merge over the small corpus and the four
    queries of tests/test_run.py. Session-wide, so tests that write into it must work on a copy."""
    from evalkit import qrels
    from evalkit.runner import run

    c, store = small
    d = tmp_path_factory.mktemp("small-results")
    (d / "q.toml").write_text(SMALL_QUERIES)
    return run(c, store, qrels.load(d / "q.toml"), ["keyword", "global-index", "score-merge"], d / "results",
               progress=False)


@pytest.fixture(scope="session")
def small_pair(small, tmp_path_factory):
    """keyword and global-index over the small corpus and SMALL_QUERIES, loaded as Results (session-wide:
    read it, do not write into its directory)."""
    from evalkit import qrels
    from evalkit.results import Results
    from evalkit.runner import run

    c, store = small
    d = tmp_path_factory.mktemp("small-pair")
    (d / "q.toml").write_text(SMALL_QUERIES)
    return Results.load(run(c, store, qrels.load(d / "q.toml"), ["keyword", "global-index"], d / "r", progress=False))


@pytest.fixture(scope="session")
def latex_results(latex, tmp_path_factory):
    """keyword and score-merge over the whole real `latex` corpus and its query set (about 10 s)."""
    from evalkit import qrels
    from evalkit.runner import run

    c, store = latex
    return run(c, store, qrels.load(ROOT / "qrels" / "latex.toml"), ["keyword", "score-merge"],
               tmp_path_factory.mktemp("latex-results") / "results", progress=False)


# Two queries per class, as in issue #20's trial: the paired differences are (+0.0034, -0.3) for needle
# and (+0.5, 0) for trap, whose unguarded MDDs are the 2.478 and 4.084 it reported for a measure bounded by 1.
TWO_PER_CLASS = {"base": {"nDCG@10": [0.2, 0.5, 0.5, 0.5]}, "cand": {"nDCG@10": [0.2034, 0.2, 1.0, 0.5]}}


@pytest.fixture
def two_per_class(tmp_path):
    """A results directory with two arms and two queries in each of two classes."""
    return write_results(tmp_path / "two", TWO_PER_CLASS, ["needle", "needle", "trap", "trap"])
