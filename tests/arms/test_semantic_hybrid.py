import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from evalkit import arms, corpora
from evalkit.arms.semantic import page_maxima

from ..conftest import SMALL


@pytest.fixture(scope="module")
def renamed(small, tmp_path_factory):
    """The same ten manuals under a permutation of their names (a derangement: every name changes)."""
    c, store = small
    folder = tmp_path_factory.mktemp("renamed")
    names = list(SMALL)
    mapping = dict(zip(names, names[3:] + names[:3], strict=True))
    for old, new in mapping.items():
        shutil.copy(c.path(old), folder / new)
    return store.ingest(corpora.from_dir(folder, "renamed"), progress=False).corpus, mapping


QUERIES = ["space between rows of a table", "double spacing of the text", "define a new float type",
           "insert pages of another PDF", "sort and compress citation numbers", "captions for subfigures"]


def test_semantic_finds_the_page_a_sentence_came_from(small):
    c, store = small
    arm = arms.make("semantic", c, store)
    found = 0
    checked = 0
    for d in c.documents:
        text = store.texts(d)[min(1, d.pages - 1)]
        words = text.split()
        if len(words) < 60:
            continue
        checked += 1
        hits = arm.search(" ".join(words[20:45]), 3).hits
        found += any((h.doc, h.page) == (d.name, min(2, d.pages)) for h in hits)
    assert checked >= 8 and found >= checked - 2


def test_page_maxima_by_hand():
    # three pages: windows 0-1, window 2, windows 3-5
    scores = np.array([0.2, 0.5, 0.1, 0.3, 0.9, 0.4])
    assert page_maxima(scores, np.array([0, 2, 3])).tolist() == [0.5, 0.1, 0.9]


def test_a_pages_score_is_its_best_window(small):
    c, store = small
    arm = arms.make("semantic", c, store)
    q = "space between rows of a table"
    pages = page_maxima(arm.window_scores(q), arm.starts)
    assert len(pages) == c.pages and len(arm.window_scores(q)) == len(arm.matrix)
    assert [h.score for h in arm.search(q, 5).hits] == pytest.approx(sorted(pages, reverse=True)[:5])


@pytest.mark.parametrize("spec", ["keyword", "hybrid", "hybrid(keyword=global-index)", "semantic", "global-index",
                                  "hybrid(keyword=global-index,profile=0.5,profile_windows=3)",
                                  "hybrid(centroid=2,diversify=5,keyword=global-index,profile=0.5,profile_windows=3)",
                                  "hybrid(keyword=global-index,fusion=convex,norm=zscore)", "global-index(prf=5)"])
def test_renaming_every_document_changes_nothing_but_the_names(small, renamed, spec):
    c, store = small
    c2, mapping = renamed
    a, b = arms.make(spec, c, store), arms.make(spec, c2, store)
    for q in QUERIES:
        before = [(mapping[h.doc], h.page, h.score) for h in a.search(q, 20).hits]
        after = [(h.doc, h.page, h.score) for h in b.search(q, 20).hits]
        assert before == after


@pytest.mark.parametrize("spec", ["semantic", "hybrid", "hybrid(keyword=global-index)",
                                  "hybrid(keyword=global-index,profile=0.25)",
                                  "hybrid(keyword=global-index,fusion=convex,weight=0.7,norm=zscore,profile=0.2)",
                                  "hybrid(keyword=global-index,fusion=convex,norm=tmm)"])
def test_prefix_property(small, spec):
    c, store = small
    arm = arms.make(spec, c, store)
    for q in QUERIES[:3]:
        top = arm.search(q, 25).hits
        assert all(arm.search(q, k).hits == top[:k] for k in (1, 5, 10))
        assert [h.score for h in top] == sorted((h.score for h in top), reverse=True)


def test_hybrid_adds_the_contributions_of_a_page_in_both_lists(small):
    c, store = small
    h = arms.make("hybrid", c, store)
    q = QUERIES[0]
    kw = [(x.doc, x.page) for x in h.keyword.search(q, 100).hits]
    se = [(x.doc, x.page) for x in h.semantic.search(q, 100).hits]
    both = [p for p in kw if p in se]
    assert both
    for hit in h.search(q, 100).hits:
        p = (hit.doc, hit.page)
        expected = (1 / (60 + kw.index(p) + 1) if p in kw else 0) + (1 / (60 + se.index(p) + 1) if p in se else 0)
        assert hit.score == pytest.approx(expected, abs=1e-15)


def test_results_are_identical_across_two_processes(small):
    c, store = small
    cmd = [sys.executable, "-m", "evalkit", "search", "--docs", str(c.root), "--cache", str(store.path),
           "--arm", "hybrid", "-k", "20", "how do I change the spacing between lines"]
    runs = [subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})
            for seed in ("1", "2")]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.count("#") >= 20
