"""The documentation site: `mkdocs build --strict` passes (a broken link, anchor, include or API reference
fails it), and the examples of its pages run.

An example is a ```python or ```sh block of a page under docs/. Each page's Python blocks run in order as one
script, and its shell blocks as bash scripts, in a fresh folder holding what a reader of "Your PDFs" has:
``pdfs/`` (ten short real manuals of the `latex` corpus) and ``qrels/mine.toml`` (a query set about them);
``results/mine`` already holds a run of keyword and global-index over them, so the pages after "Your PDFs"
start where a reader of it stands. A block that needs a big corpus or minutes of compute is preceded by
``<!-- not run: REASON -->``; its output, where the page shows one, is a figure file that `make
docs-figures` writes by re-running it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import cli_server
from tests.conftest import ROOT, SMALL_QUERIES

DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "cli.md")  # cli.md: generated from the parser
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(\S[^>]*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    skipped: str | None  # the reason given in the page, when it is not run


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, each with the reason it is not run, if the line before it gives one."""
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        found.append(Block(page.name, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2),
                           reason.group(1) if reason else None))
    return found


def test_every_fence_says_what_it_is():
    """A fence without a language could be an example nobody runs or output nobody regenerates."""
    bare = [f"{b.page}:{b.line}" for p in PAGES for b in blocks(p) if not b.lang]
    assert not bare, f"fenced blocks without a language (python, sh, toml, text): {bare}"


def test_every_page_says_how_its_examples_are_checked():
    """The last paragraph of a page says how its examples are checked (or that it has none)."""
    missing = [p.name for p in PAGES if not p.read_text().rstrip().rsplit("\n\n", 1)[-1].startswith(
        ("*Examples on this page", "*This page"))]
    assert not missing, f"pages whose last line does not say how their examples are checked: {missing}"


def test_the_readme_stays_short():
    """The README is the first screen (what evalkit is, the two commands, your PDFs, your retriever, gating,
    one table, links); everything else lives in the site."""
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n") <= 200
    for must in ("make report", "make test", "evalkit corpus add", "notebooks/your-pdfs.ipynb",
                 "import evalkit as ek", "notebooks/your-retriever.ipynb",
                 "<!-- BEGIN docs/figures/summary-latex.md -->"):
        assert must in readme, must


def test_every_measure_a_run_records_is_defined_on_the_measures_page():
    """Each family of a results directory's measure columns has its row in docs/measures.md (Evidence@10 had
    none: issue 33)."""
    from evalkit import measures

    rows = [line for line in (DOCS / "measures.md").read_text().splitlines() if line.startswith("| `")]
    families = {re.split(r"[@(]", name)[0] for name in (*measures.DEFAULT, measures.EVIDENCE)}
    assert not [f for f in sorted(families) if not any(r.startswith(f"| `{f}") for r in rows)]


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path):
    """`mkdocs build --strict` into a temporary folder: any warning (a broken link or anchor, a missing
    include, a docstring mkdocstrings cannot read, a page outside the nav) fails it. Not with --quiet:
    that hides the warnings from strict mode too, and the build passes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "site"
    assert (site / "index.html").is_file()
    # opened offline, a page asks no font server (Material's default loads Roboto from Google Fonts)
    assert not [p.name for p in site.rglob("*.html") if "fonts.googleapis.com" in p.read_text()]
    api = (site / "api.html").read_text()
    assert "evalkit.api.run" in api
    # the docstrings' Sphinx roles read as the code they name (docs/sphinx_roles.py), not ":func:`run`"
    assert not re.findall(r":(?:attr|class|const|data|exc|func|meth|mod|obj):", api), "a Sphinx role on the API page"
    # opened from disk (file://, no server): every link between pages leads to a file, never to a folder,
    # which a browser shows as a directory listing (issue 33); 404.html is a server's page, linked from /
    folders = {f"{page.relative_to(site)} -> {href}" for page in site.rglob("*.html") if page.name != "404.html"
               for href in re.findall(r'href="(?![a-z]+:)([^"#?]+)', page.read_text())
               if not (page.parent / href).is_file()}
    assert not folders, sorted(folders)[:10]


@pytest.fixture(scope="session")
def reader_folder(small, real_env, tmp_path_factory):
    """What a reader of "Your PDFs" has, made once: ``pdfs/`` (ten short real manuals), ``qrels/mine.toml``
    (four queries about them) and ``results/mine``, the run of keyword and global-index the pages' later
    examples read (made in this process: each page's own `evalkit run` would cost a process start)."""
    import evalkit as ek

    corpus, store = small
    folder = tmp_path_factory.mktemp("reader")
    (folder / "pdfs").mkdir()
    for d in corpus.documents:
        shutil.copy(corpus.path(d.name), folder / "pdfs" / d.name)
    (folder / "qrels").mkdir()
    (folder / "qrels" / "mine.toml").write_text(SMALL_QUERIES.replace('"small-set"', '"mine"'))
    docs = ek.corpus(docs=folder / "pdfs", store=store, progress=False)
    ek.run(docs, folder / "qrels" / "mine.toml", ["keyword", "global-index"], out=folder / "results" / "mine",
           progress=False)
    return folder


@pytest.fixture(scope="session")
def evalkit_server(tmp_path_factory):
    """The socket of a server running `evalkit` commands in forked children (tests/cli_server.py)."""
    sock = str(tmp_path_factory.mktemp("cli") / "evalkit.sock")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    server = subprocess.Popen([sys.executable, "-m", "tests.cli_server", sock], cwd=ROOT, env=env)
    deadline = time.monotonic() + 600
    while not os.path.exists(sock):
        assert server.poll() is None and time.monotonic() < deadline, "the evalkit command server did not start"
        time.sleep(0.1)
    yield sock
    server.terminate()
    server.wait(timeout=600)


@pytest.fixture
def reader(reader_folder, real_env, evalkit_server, tmp_path):
    """A fresh copy of the reader's folder, an `evalkit` command on PATH (the client of the command server),
    and the environment: the test corpora's page store and vectors (keyed by content, so the copied PDFs
    reuse them), a lock file and a config file of the folder's own."""
    folder = tmp_path / "reader"
    shutil.copytree(reader_folder, folder)
    bin_ = tmp_path / ".bin"
    bin_.mkdir()
    cli_server.client(str(bin_ / "evalkit"), evalkit_server)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALKIT_CACHE": real_env["EVALKIT_CACHE"],
           "EVALKIT_DATA": str(tmp_path / "data"), "EVALKIT_LOCK": str(folder / "corpora.lock"),
           "EVALKIT_CONFIG": str(tmp_path / "config.toml"),
           "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "MPLBACKEND": "Agg"}
    return folder, env


def page_examples(page: Path) -> list[tuple[str, str]]:
    """(language, script) of what runs on a page: its Python blocks joined, then each shell block."""
    run = [b for b in blocks(page) if b.lang in ("python", "sh") and b.skipped is None]
    python = "\n".join(b.code for b in run if b.lang == "python")
    return ([("python", python)] if python else []) + [("sh", b.code) for b in run if b.lang == "sh"]


# The README's examples run too (its summary table is written by `make docs-figures`, so its fences are
# not held to the docs' rules).
RUN_PAGES = [p for p in [*PAGES, ROOT / "README.md"] if page_examples(p)]


def test_every_fence_is_a_kind_the_docs_test_knows():
    """An example in another language (bash, console, ...) would be neither run nor marked."""
    unknown = [f"{b.page}:{b.line} ({b.lang})" for p in PAGES for b in blocks(p)
               if b.lang not in ("python", "sh", "toml", "text") and b.lang]
    assert not unknown, f"fenced blocks in a language the docs test does not know: {unknown}"


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.name for p in RUN_PAGES])
def test_examples_run(page, reader):
    folder, env = reader
    if page.name == "your-pdfs.md":  # the page that makes results/mine starts without it
        shutil.rmtree(folder / "results")
    for lang, script in page_examples(page):
        cmd = [sys.executable, "-c", script] if lang == "python" else ["bash", "-e", "-o", "pipefail", "-c", script]
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{page.name}: this {lang} example failed:\n{script}\n{done.stdout}\n{done.stderr}"
