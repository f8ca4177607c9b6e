"""The judge and the gate beside the workbench (evalkit.judging_gate): the judge's record read once, its
opinion of a page given only for a page the person graded, and "can I decide yet?" computed again only when
the file's text changed."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit import judging_gate, qrels
from evalkit.autojudge import agreement, model, record, session
from evalkit.comparison import CompareError

from .conftest import write_results
from .test_judged import DECIDE as RULES  # non-inferiority on nDCG@10(doc) and wrongful refusal

PAGES = [("walrus.pdf", 1), ("walrus.pdf", 2), ("seal.pdf", 1), ("seal.pdf", 2), ("ice.pdf", 1), ("ice.pdf", 2)]
CLASSES = ("needle", "spread", "described")
W = 0.3  # how far the candidate follows the grades: undecided with 10 of 30 queries graded, one more decides


def _unit(*parts) -> float:
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:12], 16) / 16 ** 12


def gain(qid: str, page: tuple[str, int]) -> int:
    """The grade a person gives: fixed per (query, page), one page in each query answering it fully."""
    return 3 if PAGES.index(page) == int(qid[1:]) % len(PAGES) else int(3 * _unit("g", qid, page) ** 2)


def gated(folder: Path, n: int = 30, graded: int = 10) -> tuple[Path, Path, Path, Path]:
    """A query file over the docs fixture's six pages (every query pools all six, the first ``graded``
    graded whole), a run of two arms on it (``base``, ``cand``: recorded answers), a judge's predictions of
    every page with its judge.json (as `evalkit qrels judge` writes them), and gate rules; returns
    (query file, results, predictions, rules)."""
    ids = [f"q{i:02d}" for i in range(n)]
    classes = [CLASSES[i % len(CLASSES)] for i in range(n)]
    pooled = ", ".join(f'"{d}#{p}"' for d, p in PAGES)
    text = ['[set]\nname = "mine"\ncorpus = "docs"\n']
    for i, (q, c) in enumerate(zip(ids, classes, strict=True)):
        grades = ", ".join(f'{{ doc = "{d}", page = {p}, gain = {gain(q, (d, p))} }}' for d, p in PAGES)
        text.append(f'[[query]]\nid = "{q}"\nclass = "{c}"\ntext = "walrus migration sea ice {i}"\n'
                    f"pooled = [{pooled}]\n" + (f"judgments = [{grades}]\n" if i < graded else ""))
    path = folder / "mine.toml"
    path.write_text("\n".join(text))
    res = write_results(folder / "results", {a: {"nDCG@10": [0.5] * n} for a in ("base", "cand")}, classes,
                        queries=qrels.load(path).digest, ids=ids)
    (res / "runs").mkdir()
    for arm in ("base", "cand"):
        order = {q: sorted(PAGES, key=lambda p, q=q: -W * gain(q, p) * (arm == "cand") - 3 * _unit(arm, q, p))
                 for q in ids}
        (res / "runs" / f"{arm}.jsonl").write_text("".join(json.dumps(
            {"query": q, "hits": [[d, p, 6.0 - r] for r, (d, p) in enumerate(order[q])], "refused": False})
            + "\n" for q in ids))
    preds = _predictions(ids, classes, graded)
    out = session.Outcome(preds, agreement.class_table(preds), agreement.verdicts(agreement.class_table(preds)),
                          "f" * 64, "cross-fitted on mine: 5 folds by query", model.Spec("logistic", "isotonic"))
    session.write(out, res / record.FOLDER, "evalkit qrels judge mine.toml --results results")
    rules = folder / "gate.toml"
    rules.write_text(RULES)
    return path, res, res / record.FOLDER / record.PREDICTIONS, rules


def _predictions(ids: list[str], classes: list[str], graded: int) -> pd.DataFrame:
    """A judge that sees the grade through noise: P(gain >= g) rises with the person's gain."""
    rows = []
    for i, (q, c) in enumerate(zip(ids, classes, strict=True)):
        for d, p in PAGES:
            g = gain(q, (d, p)) + 0.8 * (_unit("noise", q, d, p) - 0.5)
            ps = np.clip([g / 2, (g - 1) / 2, (g - 2) / 2], 0.02, 0.98)
            rows.append({"query": q, "doc": d, "page": p, "p_ge1": ps[0], "p_ge2": min(ps[1], ps[0]),
                         "p_eq3": min(ps[2], ps[1], ps[0]), "gain": float(gain(q, (d, p))) if i < graded else np.nan,
                         "cls": c, "distractor": False, "pooled": True, "fold": i % 5, "model": f"m{i % 5}",
                         "prior_ge2": 0.3, "judge": "f" * 64})
    return pd.DataFrame(rows)


@pytest.fixture
def beside(tmp_path):
    path, res, preds, rules = gated(tmp_path)
    return path, judging_gate.beside(res, "base", "cand", None, rules)


def test_the_judge_is_read_once_with_its_agreement_and_refusals(beside):
    _, b = beside
    assert b.judge["identity"].startswith("judge ffffffffffffffff (logistic+isotonic, seed 0): cross-fitted")
    assert "AUROC for gain ≥ 2" in b.judge["summary"] and "refused for" in b.judge["summary"]
    assert all(line.startswith(("needle: ", "spread: ", "described: ")) for line in b.judge["classes"])
    assert b.record is not None and b.judge["classes"] == b.record.refusals()


def test_the_judge_s_opinion_of_a_page_is_given_only_once_it_is_graded(beside):
    _, b = beside
    assert b.opinion("q20", "walrus.pdf", 1, None) == ""
    said = b.opinion("q20", "walrus.pdf", 1, 2)
    assert said.startswith("the judge: most likely grade ") and "P(gain ≥ 2) " in said
    assert b.opinion("q20", "nosuch.pdf", 1, 2) == ""  # a page the judge did not predict


def test_can_i_decide_is_computed_again_only_when_the_file_changed(beside):
    path, b = beside
    calls = []

    def query_set():
        calls.append(1)
        return qrels.load(path)

    text = path.read_text()
    first = b.decide(text, query_set)
    assert first["status"] == "undecided" and first["grade"].startswith("undecided: grade ")
    assert b.decide(text, query_set) is first and len(calls) == 1  # the same text: nothing computed
    ask = first["next"].split()[1].rstrip(",")
    graded = text.replace(f'id = "{ask}"\n', f'id = "{ask}"\njudgments = [{{ doc = "walrus.pdf", page = 1, '
                                             f'gain = {gain(ask, ("walrus.pdf", 1))} }}]\n', 1)
    after = b.decide(graded, lambda: qrels.parse(graded.encode(), path))
    assert after["next"] != first["next"] and "(5 of its 6 pooled pages left)" in after["next"]


def test_a_run_without_arms_named_or_predictions_is_refused_in_one_line(tmp_path):
    path, res, preds, rules = gated(tmp_path)
    with pytest.raises(CompareError, match="name the baseline and the candidate"):
        judging_gate.beside(res, "base", None)
    with pytest.raises(CompareError, match=r"nosuch\.parquet: no judge's predictions"):
        judging_gate.beside(res, "base", "cand", tmp_path / "nosuch.parquet")
    assert judging_gate.beside(None, None, None) is None
