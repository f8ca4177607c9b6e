"""The results directory the report's tests share: a real run of two arms over a small real corpus, and
its report rendered once."""
from __future__ import annotations

import shutil

import pytest
from matplotlib import pyplot as plt
from matplotlib.container import BarContainer

from evalkit import qrels
from evalkit.reports import rendering
from evalkit.results import Results
from evalkit.runner import run


QUERIES = r'''
[set]
name = "report-test"
corpus = "small"
[set.gains]
3 = "answers it"
2 = "helps"
1 = "mentions it"

[[query]]
id = "n1"
class = "needle"
text = "How do I put a little extra vertical space before the total row of a table?"
judgments = [{ doc = "booktabs.pdf", page = 5, gain = 3, evidence = "Occasionally we want to put an extra space between certain rows of a table" },
             { doc = "ctable.pdf", page = 5, gain = 1 }]
[[query]]
id = "n2"
class = "needle"
text = "Which preamble command sets double spacing for the whole document?"
judgments = [{ doc = "setspace-doc.pdf", page = 1, gain = 3, evidence = 'The commands \singlespacing, \onehalfspacing, and \doublespacing,' }]
[[query]]
id = "n3"
class = "needle"
text = "insert the pages of an external PDF document into my document"
judgments = [{ doc = "pdfpages.pdf", page = 2, gain = 3, evidence = "Inserts pages of an external PDF document." }]
[[query]]
id = "n4"
class = "needle"
text = "sort numeric citations into ascending order"
judgments = [{ doc = "cite.pdf", page = 1, gain = 3, evidence = "Citations in a list are sorted into ascending order." }]
[[query]]
id = "s1"
class = "spread"
text = "define my own new floating environment type, like a Program float"
judgments = [{ doc = "float.pdf", page = 3, gain = 3 }, { doc = "newfloat.pdf", page = 2, gain = 3 }]
[[query]]
id = "t1"
class = "trap"
text = "make each chapter's bibliography a section instead of a chapter"
judgments = [{ doc = "chapterbib.pdf", page = 3, gain = 3, evidence = "to convert your bibliographies from" }]
[[query]]
id = "d1"
class = "described"
text = "little pictures side by side inside one figure, each labelled (a), (b) underneath"
judgments = [{ doc = "subcaption.pdf", page = 4, gain = 2 }]
[[query]]
id = "a1"
class = "abstain"
text = "How do I draw a Gantt chart with pgfgantt?"
[[query]]
id = "a2"
class = "abstain"
text = "typeset a chess board diagram from a FEN string"
'''  # noqa: E501 (a TOML inline table, a judgment, is one line)


ARMS = ["keyword", "global-index"]


@pytest.fixture(scope="package")
def results_dir(small, tmp_path_factory):
    """A real results directory: keyword and global-index over the queries above on ten real manuals."""
    c, store = small
    d = tmp_path_factory.mktemp("report")
    path = d / "report-test.toml"
    path.write_text(QUERIES)
    qs = qrels.load(path)
    assert qrels.check(qs, store.corpus_texts(c)) == []
    return run(c, store, qs, ARMS, d / "results", progress=False)


@pytest.fixture(scope="package")
def rendered(results_dir):
    return rendering.render(results_dir)


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
