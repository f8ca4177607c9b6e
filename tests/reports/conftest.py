"""The results directory the report's tests share: a real run of two arms over a small real corpus, and
its report rendered once."""
from __future__ import annotations

import shutil

import pytest
from matplotlib import pyplot as plt
from matplotlib.container import BarContainer

import evalkit as ek
from evalkit import qrels
from evalkit.reports import rendering, selection
from evalkit.results import Results
from evalkit.runner import run

from ..conftest import query, query_file

SET = {"name": "report-test", "corpus": "small", "gains": {"3": "answers it", "2": "helps", "1": "mentions it"}}
QUERIES = (
    query("n1", "needle", "How do I put a little extra vertical space before the total row of a table?",
          ("booktabs.pdf", 5, 3, "Occasionally we want to put an extra space between certain rows of a table"),
          ("ctable.pdf", 5, 1)),
    query("n2", "needle", "Which preamble command sets double spacing for the whole document?",
          ("setspace-doc.pdf", 1, 3, "The commands \\singlespacing, \\onehalfspacing, and \\doublespacing,")),
    query("n3", "needle", "insert the pages of an external PDF document into my document",
          ("pdfpages.pdf", 2, 3, "Inserts pages of an external PDF document.")),
    query("n4", "needle", "sort numeric citations into ascending order",
          ("cite.pdf", 1, 3, "Citations in a list are sorted into ascending order.")),
    query("s1", "spread", "define my own new floating environment type, like a Program float",
          ("float.pdf", 3, 3),
          ("newfloat.pdf", 2, 3)),
    query("t1", "trap", "make each chapter's bibliography a section instead of a chapter",
          ("chapterbib.pdf", 3, 3, "to convert your bibliographies from")),
    query("d1", "described", "little pictures side by side inside one figure, each labelled (a), (b) underneath",
          ("subcaption.pdf", 4, 2)),
    query("a1", "abstain", "How do I draw a Gantt chart with pgfgantt?"),
    query("a2", "abstain", "typeset a chess board diagram from a FEN string"),
)


ARMS = ["keyword", "global-index"]


@pytest.fixture(scope="package")
def results_dir(small, tmp_path_factory):
    """A real results directory: keyword and global-index over the queries above on ten real manuals."""
    c, store = small
    d = tmp_path_factory.mktemp("report")
    path = d / "report-test.toml"
    query_file(path, *QUERIES, **SET)
    qs = qrels.load(path)
    assert qrels.check(qs, store.corpus_texts(c)) == []
    return run(c, store, qs, ARMS, d / "results", progress=False)


@pytest.fixture(scope="package")
def gated(results_dir, tmp_path_factory):
    """What `make report` does, on a copy of the run: the best arm gated against keyword, then the report
    rendered (once for the package's tests) with a pair and an output file of its own: (copy, best arm,
    verdict, HTML path)."""
    copy = _copy(results_dir, tmp_path_factory.mktemp("gated"))
    best = selection.best_arm(Results.load(copy), besides="keyword")
    verdict = ek.gate(copy, copy, baseline_arm="keyword", candidate_arm=best)
    html = rendering.render(copy, out_html=copy.parent / "out" / "r.html", pair="global-index,keyword")
    return copy, best, verdict, html


@pytest.fixture(scope="package")
def rendered(gated):
    """The rendered report's HTML."""
    return gated[3]


@pytest.fixture
def res(results_dir):
    return Results.load(results_dir)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _bars(ax):
    """The bar groups of an axes, one per arm (bars with whiskers also add an ErrorbarContainer)."""
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def _copy(results_dir, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(results_dir, dest, ignore=shutil.ignore_patterns("report.*", "figures"))
    return dest


def _known(tmp_path):
    """Four arms on 30 answerable and 2 abstain queries with chosen scores: ``good`` is 0.3 above ``base`` on
    every query, ``same`` ties ``base`` on average, ``close`` leads ``good`` by 0.005 on average (+0.06 and
    -0.05 in turn); ``same`` refuses one abstain query and fails on one answerable query."""
    from ..conftest import write_results

    classes = ["needle"] * 30 + ["abstain"] * 2
    wiggle = [0.06 if i % 2 else -0.05 for i in range(32)]
    scores = {"base": [0.5] * 32, "good": [0.8] * 32, "same": [0.5 + w for w in wiggle],
              "close": [0.8 + w for w in wiggle]}
    outcomes = {"same": ["error"] + [None] * 30 + ["correct_refusal"]}
    return Results.load(write_results(tmp_path / "known", {a: {"nDCG@10": v} for a, v in scores.items()}, classes,
                                      outcomes=outcomes))
