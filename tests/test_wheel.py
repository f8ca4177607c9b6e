"""evalkit installed the way libraries are: a wheel built from the package, installed into a fresh virtual
environment outside the checkout, then a folder of one's own (``corpus add``) -> run -> report -> gate from a
temporary working directory, which verifies again when copied elsewhere (its lock's paths are relative).

Offline by construction: the wheel is built with this environment's setuptools (no build isolation, which
would download one), and the fresh environment sees this environment's third-party packages through a
``.pth`` file naming its site-packages. A ``.pth`` line that is a path only adds that folder to
``sys.path``; the ``.pth`` files inside it are not run, so the editable install's import hook, which would
map ``evalkit`` to the checkout, stays off and the wheel's copy is the one imported. The dependencies'
Jupyter data (nbconvert's templates) is under this environment's prefix: ``$JUPYTER_PATH`` names it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT, make_pdf, query, query_file

QUERIES = (
    query("q1", "needle", "walrus migration routes", ("a.pdf", 2, 3)),
    query("q2", "spread", "walrus and penguins", ("a.pdf", 2, 2), ("b.pdf", 1, 2)),
    query("q3", "abstain", "quantum chromodynamics lattice"),
)


def clean_copy(tmp: Path) -> Path:
    """What the build reads, copied out of the checkout (an in-tree build would reuse a stale ``build/``)."""
    src = tmp / "src"
    shutil.copytree(ROOT / "evalkit", src / "evalkit", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "corpora.lock"):
        shutil.copy(ROOT / name, src / name)
    return src


def build_wheel(tmp: Path) -> Path:
    """The wheel of a clean copy of the package."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(clean_copy(tmp)), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp / "wheels")], check=True)
    return next((tmp / "wheels").glob("evalkit-*.whl"))


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A virtual environment holding the wheel, with this environment's dependencies visible; its site-packages."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    site = Path(subprocess.run([venv / "bin" / "python", "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    ours = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "evalkit_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    return site


def tree(path: Path) -> dict[str, str]:
    """Every file under ``path`` but bytecode caches, with its sha256."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_the_wheel_runs_corpus_run_report_and_gate_outside_the_checkout(tmp_path):
    site = fresh_venv(tmp_path, build_wheel(tmp_path))
    installed = tree(site)
    assert {"evalkit/py.typed", "evalkit/data/corpora.lock", "evalkit/data/gate.toml", "evalkit/data/report.ipynb",
            "evalkit/data/bench.ipynb"} <= set(installed)
    # the repository's top-level lock, copied into the package by the build (setup.py)
    assert installed["evalkit/data/corpora.lock"] == hashlib.sha256((ROOT / "corpora.lock").read_bytes()).hexdigest()
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    make_pdf(work / "docs" / "a.pdf", ["seals on the ice", "walrus migration routes along the coast"])
    make_pdf(work / "docs" / "b.pdf", ["emperor penguins huddle in winter, watched by a walrus"])
    query_file(work / "wheel.toml", *QUERIES, name="wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALKIT_LOCK")}
    env.update(EVALKIT_DATA=str(tmp_path / "data"), EVALKIT_CACHE=str(tmp_path / "cache"),
               JUPYTER_PATH=str(Path(sys.prefix) / "share" / "jupyter"))
    bin_ = site.parents[2] / "bin"

    def evalkit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([bin_ / "evalkit", *args], cwd=work, env=env, capture_output=True, text=True)

    where = subprocess.run([bin_ / "python", "-c", "import evalkit; print(evalkit.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(site)), where

    add = evalkit("corpus", "add", "tiny", "docs")  # a folder of one's own: pinned and usable, no fetch
    assert add.returncode == 0 and add.stdout == "tiny: 2 documents, 3 pages, ready as --corpus tiny\n", add
    assert f"pinned tiny in {work / 'corpora.lock'}: 2 documents, 3 pages in docs" in add.stderr
    assert 'source = "file:docs/a.pdf"' in (work / "corpora.lock").read_text()
    assert evalkit("corpus", "verify", "latex").stdout.startswith("missing: ")  # the shipped lock is still read
    run = evalkit("run", "--corpus", "tiny", "--qrels", "wheel.toml", "--arms", "keyword,global-index",
                  "--out", "results/tiny")
    assert run.returncode == 0, run.stderr
    assert f"cache {tmp_path / 'cache' / 'evalkit.sqlite'}: 2 of 2 documents reused, 0 extracted" in run.stderr
    report = evalkit("report", "results/tiny")
    assert report.returncode == 0, report.stderr
    html = (work / "results" / "tiny" / "report.html").read_text()
    assert "What this query set can detect" in html and "n too small" in html  # one query per class
    gate = evalkit("gate", "--baseline", "results/tiny:keyword", "--candidate", "results/tiny:global-index")
    assert gate.returncode in (0, 1), gate.stderr  # a verdict (2: none could be reached)
    assert f"rules     {site / 'evalkit' / 'data' / 'gate.toml'}" in gate.stdout
    assert "(n 2); needle n too small (n 1); spread n too small (n 1)" in gate.stdout.split("\ndetects   ")[1]
    assert (work / "results" / "tiny" / "gate.json").exists()

    assert tree(site) == installed  # nothing written into the installation
    assert sorted(p.name for p in work.iterdir()) == ["corpora.lock", "docs", "results", "wheel.toml"]

    checkout = tmp_path / "another" / "checkout"  # the repository cloned elsewhere: the lock still verifies
    shutil.copytree(work, checkout)
    verify = subprocess.run([bin_ / "evalkit", "corpus", "verify", "tiny"], cwd=checkout, env=env, capture_output=True,
                            text=True)
    assert verify.returncode == 0 and f"0 missing, 0 changed, 0 extra in {checkout / 'docs'}" in verify.stdout, verify


@pytest.mark.slow
def test_an_editable_install_is_not_shadowed_by_a_folder_named_evalkit(tmp_path):
    """Python started in a folder holding one named ``evalkit`` (the clone) imported it as an empty namespace
    package under setuptools' editable import hook, asked only after every sys.path folder: ``module
    'evalkit' has no attribute 'arm'`` (issue 33). pyproject.toml's package root makes ``pip install -e .``
    put the checkout itself on sys.path, where the package is found before any namespace folder counts."""
    build = f"from setuptools import build_meta; print(build_meta.build_editable({str(tmp_path)!r}))"
    built = subprocess.run([sys.executable, "-c", build], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(tmp_path / built.stdout.split()[-1]) as wheel:
        (pth,) = [n for n in wheel.namelist() if n.endswith(".pth")]
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "editable.pth").write_bytes(wheel.read(pth))
    (tmp_path / "mine" / "evalkit").mkdir(parents=True)  # the user's folder, holding the clone
    probe = (f"import site; site.addsitedir({str(tmp_path / 'site')!r}); import evalkit; "
             "print(evalkit.__file__, evalkit.arm.__name__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the suite's own path entry would hide it
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path / "mine", env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(ROOT / "evalkit" / "__init__.py"), "arm"]

@pytest.mark.slow
def test_an_editable_install_reads_the_checkouts_top_level_lock(tmp_path):
    """``pip install -e``: the package runs from the checkout and reads its top-level corpora.lock, the one a
    change to the lock edits; the build copies nothing into the package folder that could go stale."""
    src = clean_copy(tmp_path)
    build = "from setuptools import build_meta; print(build_meta.build_editable(%r))" % str(tmp_path / "wheels")
    wheel = subprocess.run([sys.executable, "-c", build], cwd=src, capture_output=True, text=True, check=True)
    site = fresh_venv(tmp_path, tmp_path / "wheels" / wheel.stdout.splitlines()[-1])
    shipped = subprocess.run([site.parents[2] / "bin" / "python", "-c",
                              "from evalkit import dirs; print(dirs.shipped_lock())"], cwd=tmp_path,
                             capture_output=True,
                             text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert shipped.returncode == 0 and shipped.stdout == f"{src / 'corpora.lock'}\n", shipped
    assert not (src / "evalkit" / "data" / "corpora.lock").exists()
