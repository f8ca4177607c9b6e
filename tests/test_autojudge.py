"""The local judge: determinism, cross-fitting that never lets a query's grades reach its own predictions,
calibration, the refusal of a class by the bounds docs/judge.md stated, and its table and files.

The synthetic cases inject the text signals (the :class:`evalkit.autojudge.features.TextSignals` protocol) so
that the grades follow a known signal; the real-corpus test reads the page store and the semantic arm's vectors.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest

from evalkit import qrels
from evalkit.autojudge import agreement, features, model, session
from evalkit.results import Results

from .conftest import write_results

ARMS = ("a", "b")


def _unit(*parts) -> float:
    """A deterministic number in [0, 1) from its parts."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:12], 16) / 16 ** 12


class Signals:
    """Text signals that follow a page's hidden relevance (``truth``), with noise; a trap's distractor pages
    look relevant when ``fooled``."""

    key = "stub"

    def __init__(self, truth: dict, fooled: set | None = None):
        self.truth, self.fooled = truth, fooled or set()

    def pages(self, doc: str) -> int:
        return 40

    def score(self, query, pages):
        rows = []
        for p in pages:
            t = 3.0 if p in self.fooled else self.truth.get((query, p), 0.0)
            rows.append([t + _unit(query, p, 0), t / 3 + 0.3 * _unit(query, p, 1), 1.0,
                         t / 4 + 0.2 * _unit(query, p, 2),
                         0.8, 0.1])
        return np.array(rows, dtype=float).reshape(len(pages), len(features.TEXT))


def write_case(tmp, n=30, grade_shift: dict | None = None, kinds=("needle", "trap", "abstain")):
    """n queries (``kinds`` in turn); each pools 12 pages; gains follow a hidden score. Returns
    (query set, results, truth, distractor pages)."""
    lines, truth, fooled, runs = ['[set]', 'name = "syn"', 'corpus = "fixture"', ""], {}, set(), {a: [] for a in ARMS}
    classes = [kinds[i % len(kinds)] for i in range(n)]
    for i, cls in enumerate(classes):
        qid, text = f"q{i:02d}", f"question {i}"
        pages = [(f"d{i % 5}.pdf", 1 + j) for j in range(8)] + [("lure.pdf", 1 + i), ("lure.pdf", 2 + i),
                                                                 (f"e{i % 4}.pdf", 3), (f"e{i % 4}.pdf", 4)]
        judged = []
        for p in pages:
            score = 0.0 if cls == "abstain" or p[0] == "lure.pdf" else 3 * _unit("gain", qid, p)
            gain = int(min(3, max(0, round(score + (grade_shift or {}).get(qid, 0)))))
            truth[(text, p)] = score
            if cls == "trap" and p[0] == "lure.pdf":
                fooled.add(p)  # page numbers differ per query: a lure page is one query's
            ev = ', evidence = "x"' if gain else ""
            judged.append(f'{{ doc = "{p[0]}", page = {p[1]}, gain = {gain}{ev} }}')
        extra = 'distractor = "lure.pdf"\n' if cls == "trap" else ('kind = "off-domain"\n' if cls == "abstain" else "")
        lines += ["[[query]]", f'id = "{qid}"', f'class = "{cls}"', f'text = "{text}"', extra.strip(),
                  "judgments = [" + ", ".join(judged) + "]", ""]
        looks = {p: 3.0 if p in fooled else truth[(text, p)] for p in pages}  # the arms are fooled too
        order = sorted(pages, key=lambda p: -looks[p] - _unit("rank", qid, p))
        runs["a"].append((qid, order[:10]))
        runs["b"].append((qid, list(reversed(order))[:10]))
    path = tmp / "syn.toml"
    path.write_text("\n".join(x for x in lines if x != "") + "\n")
    qs = qrels.load(path)
    d = write_results(tmp / "results", {a: {"nDCG@10": [0.5] * n} for a in ARMS}, classes, queries=qs.digest,
                      ids=[q.id for q in qs.queries])
    (d / "runs").mkdir(exist_ok=True)
    for a in ARMS:
        (d / "runs" / f"{a}.jsonl").write_text("".join(json.dumps(
            {"query": q, "hits": [[doc, page, 10.0 - r] for r, (doc, page) in enumerate(hits)], "refused": False,
             "reason": "", "error": ""}) + "\n" for q, hits in runs[a]))
    return qs, Results.load(d), Signals(truth, fooled)


@pytest.fixture
def case(tmp_path):
    qs, res, sig = write_case(tmp_path)
    return session.load(qs, res, sig)


LOGISTIC = model.Spec("logistic", "isotonic", seed=0)


@pytest.mark.slow
def test_the_same_seed_gives_the_same_judge_and_predictions(case):
    a, b = session.crossfit(case, LOGISTIC, k=3), session.crossfit(case, LOGISTIC, k=3)
    pd.testing.assert_frame_equal(a, b)
    other = session.crossfit(case, model.Spec("logistic", "isotonic", seed=1), k=3)
    assert set(other["model"]) != set(a["model"])  # the seed is part of the identity


@pytest.mark.slow
def test_no_query_s_grades_reach_its_own_cross_fitted_predictions(tmp_path):
    """Regrade one query: its own predictions do not move (its fold's judge never saw it); a judge trained
    on every query, that query included, does move: so the check can fail."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    base = session.load(*write_case(tmp_path / "a"))
    changed = session.load(*write_case(tmp_path / "b", grade_shift={"q03": 2}))
    x, y = session.crossfit(base, LOGISTIC, k=3), session.crossfit(changed, LOGISTIC, k=3)
    def own(f):
        return f[f["query"] == "q03"][["p_ge1", "p_ge2", "p_eq3"]].to_numpy()

    np.testing.assert_array_equal(own(x), own(y))
    assert not np.array_equal(x[["p_ge1", "p_ge2", "p_eq3"]].to_numpy(), y[["p_ge1", "p_ge2", "p_eq3"]].to_numpy())
    def leaky(s):
        return session.predict(session.fit(s.frame, s.settings, LOGISTIC), s.frame[s.frame["query"] == "q03"])

    assert not np.allclose(leaky(base)[["p_ge1", "p_ge2"]].to_numpy(), leaky(changed)[["p_ge1", "p_ge2"]].to_numpy())


def test_a_fooled_judge_is_refused_for_the_trap_class_in_words(case, tmp_path):
    """A judge trained where no trap was graded takes the distractor's look-alike pages for answers."""
    (tmp_path / "needles").mkdir()
    needles = session.load(*write_case(tmp_path / "needles", n=12, kinds=("needle",)))
    out = session.run(case, LOGISTIC, train_on=[needles])
    assert out.table.loc[agreement.DISTRACTOR_ROW, "false_alarms"] > agreement.FALSE_ALARMS_MAX
    assert out.verdicts["trap"].startswith("refused: ") and "distractor pages" in out.verdicts["trap"]
    assert out.verdicts["needle"] == "accepted"
    assert "trap: refused" in session.render(out)


def test_an_arm_built_on_the_judge_s_own_signal_is_not_favoured_by_its_grades(case):
    """Arm ``a`` ranks by the very signal the judge's text features read (as the semantic arm reads the
    judge's MiniLM vectors); ``b`` ranks against it. Under the judge's grades ``a`` gains no more over the
    person's grades than ``b`` does."""
    means = session.arm_means(case, session.crossfit(case, LOGISTIC, k=3))
    person, _ = session.rescored(case, session.crossfit(case, LOGISTIC, k=3))
    answerable = person[person["class"] != "abstain"]
    assert means.loc["a", "person page"] == pytest.approx(answerable[answerable["arm"] == "a"]["nDCG@10"].mean())
    for level in ("page", "doc"):
        gap = means[f"judge − person {level}"]
        assert gap["a"] - gap["b"] <= 0.05, means


def test_verdicts_follow_the_stated_bounds():
    t = pd.DataFrame({"kappa": [0.5, 0.39, math.nan, 0.9, 0.9], "false_alarms": [0.0, 0.0, 0.1, 0.0, 0.25]},
                     index=["needle", "spread", "abstain", "trap", agreement.DISTRACTOR_ROW])
    v = agreement.verdicts(t)
    assert v["needle"] == "accepted" and v["abstain"] == "accepted"
    assert v["spread"].startswith("refused: kappa 0.39 < 0.40")
    assert "25% of the distractor pages" in v["trap"]
    t.loc["abstain", "kappa"] = 0.0  # the person's one grade: κ is 0 whatever the judge says
    assert agreement.verdicts(t)["abstain"] == "accepted"
    t.loc["abstain", "false_alarms"] = 0.3
    assert agreement.verdicts(t)["abstain"].startswith("refused")


@pytest.mark.slow
def test_isotonic_calibration_matches_the_true_chances_on_fresh_data():
    rng = np.random.default_rng(0)

    def draw(n):
        x = rng.normal(size=(n, 3))
        p = 1 / (1 + np.exp(-(2 * x[:, 0] - 1)))  # the true P(gain >= 1); P(>= 2), P(= 3) nested below it
        u = rng.random(n)
        return x, (u < p).astype(int) + (u < p * 0.5) + (u < p * 0.2), p

    x, g, _ = draw(4000)
    j = model.fit(x, g, [f"q{i // 20}" for i in range(len(g))], ["x0", "x1", "x2"], model.Spec("hgb", "isotonic"), "t")
    xt, gt, pt = draw(4000)
    pred = j.predict(xt)
    assert agreement.ece(gt >= 1, pred[:, 0]) < 0.03
    assert np.abs(pred[:, 0] - pt).mean() < 0.06
    assert (np.diff(pred, axis=1) <= 0).all()  # P(= 3) <= P(>= 2) <= P(>= 1)


def test_the_boosted_model_predicts_with_numpy_as_scikit_learn_does():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 4))
    y = (x[:, 0] + rng.normal(size=500) > 0).astype(int)
    est = HistGradientBoostingClassifier(early_stopping=False, random_state=0, **model.HGB).fit(x, y)
    trees = model._trees([p[0].nodes for p in est._predictors], float(np.ravel(est._baseline_prediction)[0]))
    np.testing.assert_allclose(model.raw_score(trees, x), est.decision_function(x), atol=1e-9)


def test_a_cached_judge_is_data_and_predicts_the_same(case, tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "cache.sqlite")
    graded = case.frame[case.frame["gain"].notna()]
    names = list(case.settings.names)
    ident = model.identity(LOGISTIC, case.settings.digest(), features.digest(graded, names))
    def build():
        return model.fit(graded[names].to_numpy(float), graded["gain"].to_numpy(int), graded["query"].tolist(),
                         names, LOGISTIC, ident)

    first, reused = model.cached(db, ident, build)
    again, reused_again = model.cached(db, ident, lambda: pytest.fail("refitted"))
    assert (reused, reused_again) == (False, True)
    np.testing.assert_array_equal(first.predict(graded[names].to_numpy(float)),
                                  again.predict(graded[names].to_numpy(float)))
    assert first.weights() == again.weights()


def test_agreement_measures_against_references():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(2)
    y, s = rng.random(200) < 0.3, rng.random(200).round(1)
    assert agreement.auroc(y, s) == pytest.approx(roc_auc_score(y, s))
    # two bins: predictions 0.05 (outcome 0 of 2) and 0.95 (outcome 1 of 2): |0.05 - 0| and |0.95 - 0.5|
    assert agreement.ece(np.array([0, 0, 1, 0]), np.array([0.05, 0.05, 0.95, 0.95])) == pytest.approx(0.5 * 0.05 + 0.5
                                                                                                      * 0.45)
    assert list(agreement.grade(np.array([[0.9, 0.8, 0.1], [0.4, 0.1, 0.0]]))) == [2, 0]


def test_train_on_a_share_and_on_another_file(case, tmp_path):
    own = session.share(case.qs, 0.2, seed=0)
    assert {case.qs[q].cls for q in own} == {"needle", "trap", "abstain"}
    out = session.run(case, LOGISTIC, train_share=0.2)
    assert not set(out.preds["query"]) & own and len(set(out.preds["query"])) == len(case.qs.queries) - len(own)
    (tmp_path / "other").mkdir()
    other = session.load(*write_case(tmp_path / "other", n=12))
    moved = session.run(case, LOGISTIC, train_on=[other])
    assert set(moved.preds["query"]) == {q.id for q in case.qs.queries}
    written = session.write(moved, tmp_path / "out")
    table = pd.read_parquet(written[0])
    assert list(table.columns[:6]) == list(agreement.PREDICTIONS) and set(table["judge"]) == {moved.identity}
    assert json.loads(written[1].read_text())["judge"] == moved.identity


def test_the_command_refuses_a_malformed_train_on_in_one_line(tmp_path, capsys):
    from evalkit.cli import main

    assert main(["qrels", "judge", "q.toml", "--results", str(tmp_path), "--train-on", "only-a-file.toml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "QRELS=RESULTS" in err[0]


@pytest.mark.slow
def test_features_on_a_real_corpus_read_the_arms_own_scores(small, small_results):
    """On real pages: the BM25 feature is the global-index arm's score for the pages it ranks, and the
    cosine the semantic arm's."""
    from evalkit.arms.semantic import SemanticArm
    from evalkit.arms.signals import CorpusSignals
    from evalkit.simulate import answers

    c, store = small
    res = Results.load(small_results) if not isinstance(small_results, Results) else small_results
    qs = qrels.load(res.path.parent / "q.toml")
    src = session.load(qs, res, CorpusSignals(c, store))
    hits = answers(res)["global-index"]
    q = qs.queries[0]
    rows = src.frame[src.frame["query"] == q.id].set_index(["doc", "page"])
    for h in hits[q.id].hits[:5]:
        assert rows.loc[(h.doc, h.page), "bm25"] == pytest.approx(h.score)
    sem = SemanticArm(c, store, progress=False)
    best = sem.search(q.text, 1).hits[0]
    assert CorpusSignals(c, store).score(q.text, [(best.doc, best.page)])[0, 3] == pytest.approx(best.score, abs=1e-5)
    words_only = CorpusSignals(c, store, vectors=False)
    assert words_only.key != src.settings.text  # a judge without the semantic signal is another judge
    assert not words_only.score(q.text, [(best.doc, best.page)])[0, 3:].any()
