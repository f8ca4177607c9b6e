"""Two results sides paired query by query, and the paired statistics of every measure and class.

A *side* is one arm of one results directory (``DIR:ARM``, or ``DIR`` when it holds one arm). Pairing is by
query id and refuses what cannot be paired honestly: another corpus (always), another query set (unless
the caller allows it: then only the shared queries count and the rest are listed). A query one run has no
answer for scores 0 -- an empty answer counts, as everywhere in evalkit -- and is listed.

The minimal detectable difference is computed from the standard deviation of the *paired differences*,
not from the baseline's per-query variance. The test that decides is a paired test, and its power is set by
the spread of the differences; two arms over the same queries are strongly correlated (query difficulty
dominates both), so the baseline-only figure, sd_diff = sqrt(2) * sd_base for independent arms, overstates
the spread several times and would call every slice underpowered. The baseline-only figure is still what
one has *before* a candidate exists; :func:`evalkit.stats.mdd` takes any standard deviation.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import escape as esc
from . import stats
from .defaults import COMPARE_MEASURES
from .records import CLASSES
from .results import Results
from .resultsdir import ResultsError

MEASURES = COMPARE_MEASURES
ANSWERABLE = tuple(c for c in CLASSES if c != "abstain")
ALL = "all"
ENVIRONMENT_KEYS = ("python", "implementation", "sqlite", "packages", "machine")


class CompareError(Exception):
    """Two sides that cannot be compared (missing directory or arm, another corpus or query set); the message
    names what and where. The command line prints it and exits 2."""


@dataclass(frozen=True)
class Side:
    """One arm of one results directory."""

    results: Results
    arm: str

    @property
    def label(self) -> str:
        return f"{self.results.path}:{self.arm}"

    @property
    def rows(self) -> pd.DataFrame:
        pq = self.results.per_query
        return pq[pq["arm"] == self.arm].set_index("query")


def _load(path: Path) -> Results:
    """A finished run whose measures belong to it (:meth:`Results.check_complete`), else CompareError."""
    try:
        results = Results.load(path)
        results.check_complete()
    except (FileNotFoundError, ResultsError) as e:
        raise CompareError(str(e)) from None
    return results


def _arm(results: Results, arm: str) -> str:
    """An arm's label, resolved as :meth:`Results.arm` does (one way for the command line and notebooks)."""
    try:
        return results.arm(arm)
    except ResultsError as e:
        raise CompareError(str(e)) from None


def side(spec: str | Path, arm: str | None = None) -> Side:
    """Parse ``DIR:ARM`` (the first ``:`` after which the rest names an arm of an existing ``DIR``), or ``DIR``
    alone when that directory holds a single arm; ``arm`` given separately wins."""
    spec = str(spec)
    if arm is None and not Path(spec).is_dir():
        cut = next((i for i, ch in enumerate(spec) if ch == ":" and Path(spec[:i]).is_dir()), None)
        if cut is not None:
            spec, arm = spec[:cut], spec[cut + 1:]
    if not Path(spec).is_dir():
        raise CompareError(f"{spec}: no such results directory")
    res = _load(Path(spec))
    if arm is None:
        if len(res.arms) != 1:
            raise CompareError(f"{spec} holds {len(res.arms)} arms ({', '.join(res.arms)}): name one as {spec}:ARM")
        arm = res.arms[0]
    return Side(res, _arm(res, arm))


@dataclass(frozen=True, eq=False)
class Pair:
    """Baseline and candidate, one row per query in the same order in ``base_rows`` and ``cand_rows``
    (indexed by query id): ``class``, every measure, ``outcome`` and ``latency_s``."""

    base: Side
    cand: Side
    base_rows: pd.DataFrame
    cand_rows: pd.DataFrame
    missing: tuple[tuple[str, str], ...]  # (side label, query id): no answer recorded, scored 0
    unshared: tuple[str, ...]  # query ids in only one of two different query sets, left out
    environment: tuple[str, ...]  # how the two runs' environments differ (empty: latencies comparable)
    depths: tuple[int, int] = (0, 0)  # hits kept per query by each run

    @property
    def query_class(self) -> pd.Series:
        return self.base_rows["class"]

    @property
    def classes(self) -> list[str]:
        """The answerable classes present, in evalkit's class order."""
        present = set(self.query_class)
        return [c for c in ANSWERABLE if c in present]

    def mask(self, cls: str = ALL) -> pd.Series:
        """The queries of one class, or every answerable query for ``all``."""
        return self.query_class != "abstain" if cls == ALL else self.query_class == cls

    def values(self, measure: str, cls: str = ALL) -> tuple[np.ndarray, np.ndarray]:
        """Paired per-query values of a ranking measure over the answerable queries (or one class)."""
        if measure not in self.base_rows.columns or measure not in self.cand_rows.columns:
            raise CompareError(f"measure {measure!r} is not in both results' per_query.parquet")
        m = self.mask(cls)
        if not m.any():
            raise CompareError(f"class {cls!r} has no answerable queries in these runs")
        return self.base_rows[measure][m].to_numpy(float), self.cand_rows[measure][m].to_numpy(float)


def _environment_differences(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _environment_differences(va, vb, f"{prefix}{key}.")
        elif va != vb:
            out.append(f"{prefix}{key} {va} vs {vb}")
    return out


def _fill(rows: pd.DataFrame, ids: list[str], classes: pd.Series) -> pd.DataFrame:
    """Rows for queries a run has no answer for, scored as an empty answer: ranking measures 0 (NaN on
    abstain queries), the refusal outcome of answering nothing, no hits and no latency."""
    if not ids:
        return rows
    cls = classes[ids].to_numpy()
    abstain = cls == "abstain"
    filler: dict = {}
    for col, dtype in rows.dtypes.items():
        if pd.api.types.is_bool_dtype(dtype):
            filler[col] = True  # refused
        elif pd.api.types.is_integer_dtype(dtype):
            filler[col] = 0
        elif pd.api.types.is_float_dtype(dtype):
            filler[col] = np.where(abstain, math.nan, 0.0)
        else:
            filler[col] = None
    filler.update({"class": cls, "outcome": np.where(abstain, "correct_refusal", "wrongful_refusal"),
                   "latency_s": math.nan})
    return pd.concat([rows, pd.DataFrame(filler, index=pd.Index(ids, name="query"))])


def pair(base: Side, cand: Side, allow_different_queries: bool = False) -> Pair:
    """Pair two sides by query id, refusing another corpus and (unless allowed) another query set."""
    mb, mc = base.results.manifest, cand.results.manifest
    if mb["corpus"]["digest"] != mc["corpus"]["digest"]:
        raise CompareError(f"different corpora: {base.results.path} ran on {mb['corpus']['name']} "
                           f"({mb['corpus']['digest'][:12]}), {cand.results.path} on {mc['corpus']['name']} "
                           f"({mc['corpus']['digest'][:12]})")
    same_queries = mb["qrels"]["digest"] == mc["qrels"]["digest"]
    if not same_queries and not allow_different_queries:
        raise CompareError(f"different query sets: {base.results.path} used {mb['qrels']['name']} "
                           f"({mb['qrels']['digest'][:12]}), {cand.results.path} used {mc['qrels']['name']} "
                           f"({mc['qrels']['digest'][:12]}); pass --allow-different-queries to compare "
                           "the queries they share")
    asked_b = set(base.results.per_query["query"])
    asked_c = set(cand.results.per_query["query"])
    universe = sorted(asked_b | asked_c if same_queries else asked_b & asked_c)
    unshared = () if same_queries else tuple(sorted(asked_b ^ asked_c))
    rb, rc = base.rows, cand.rows
    classes = pd.concat([base.results.per_query,
                         cand.results.per_query]).drop_duplicates("query").set_index("query")["class"]
    missing = []
    sides = []
    for s, rows in ((base, rb), (cand, rc)):
        absent = [q for q in universe if q not in rows.index]
        missing += [(s.label, q) for q in absent]
        sides.append(_fill(rows, absent, classes).loc[universe].drop(columns=["arm"]))
    env = _environment_differences({k: mb.get("environment", {}).get(k) for k in ENVIRONMENT_KEYS},
                                   {k: mc.get("environment", {}).get(k) for k in ENVIRONMENT_KEYS})
    base_rows, cand_rows = sides
    return Pair(base, cand, base_rows, cand_rows, tuple(missing), unshared, tuple(env),
                (mb.get("depth", 0), mc.get("depth", 0)))


def table(pair: Pair, measures: tuple[str, ...] = MEASURES, confidence: float = 0.95,
          n_resamples: int = stats.RESAMPLES, seed: int = 0, alpha: float = stats.ALPHA,
          target_power: float = stats.POWER) -> pd.DataFrame:
    """One row per measure and slice (``all`` answerable queries, then each answerable class): n, both
    means, the paired difference with its bootstrap CI, the sign-flip p-value, win/tie/loss and the MDD
    (NaN where the slice is too small for one within the measure's range)."""
    rows = []
    for m in measures:
        for cls in [ALL, *pair.classes]:
            a, b = pair.values(m, cls)
            c = stats.paired_compare(a, b, confidence=confidence, n_resamples=n_resamples, seed=seed,
                                     alpha=alpha, target_power=target_power)
            rows.append({"measure": m, "class": cls, "n": c.n, "base": c.mean_a, "cand": c.mean_b,
                         "delta": c.mean_delta, "low": c.low, "high": c.high, "p": c.p_value,
                         "wins": c.wins, "ties": c.ties, "losses": c.losses, "sd_delta": c.sd_delta,
                         "mdd": stats.detectable(c.mdd)})
    return pd.DataFrame(rows)


def with_holm(frame: pd.DataFrame, by: str = "measure") -> pd.DataFrame:
    """Add ``p_holm``: Holm over each group of rows sharing ``by`` (the family)."""
    out = frame.copy()
    out["p_holm"] = math.nan
    for _, idx in out.groupby(by, sort=False).groups.items():
        out.loc[idx, "p_holm"] = stats.holm(out.loc[idx, "p"].to_numpy())
    return out


def refusal_changes(pair: Pair) -> pd.DataFrame:
    """Both refusal rates side by side with the paired changes behind them and an exact one-sided McNemar
    p-value that the rate got worse: wrongful refusal over answerable queries (worse = newly refused),
    correct refusal over abstain queries (worse = no longer refused)."""
    ob, oc = pair.base_rows["outcome"], pair.cand_rows["outcome"]
    rows = []
    for rate, pool, bad, good in (("wrongful refusal", pair.mask(ALL), "wrongful_refusal", "answered"),
                                  ("correct refusal", pair.mask("abstain"), "answered_abstain", "correct_refusal")):
        b, c = ob[pool], oc[pool]
        worse, better = int(((b == good) & (c == bad)).sum()), int(((b == bad) & (c == good)).sum())
        n = int(pool.sum())
        key = "wrongful_refusal" if rate == "wrongful refusal" else "correct_refusal"
        rows.append({"rate": rate, "n": n,
                     "base": (b == key).mean() if n else math.nan, "cand": (c == key).mean() if n else math.nan,
                     "worse": worse, "better": better, "p_worse": stats.mcnemar_p(worse, better)})
    return pd.DataFrame(rows)


def no_queries(rate: str) -> str:
    """What a refusal rate (``"wrongful refusal"``, ``"correct refusal"``) over no queries says instead."""
    return f"the query set has no {'abstain' if rate == 'correct refusal' else 'answerable'} queries"


def refusal_text(r, arrow: str = "->") -> str:
    """One row of :func:`refusal_changes` in words; a rate over no queries says there is none to measure."""
    if not r.n:
        return f"{r.rate}: {no_queries(r.rate)}"
    return (f"{r.rate}: {r.base:.3f} {arrow} {r.cand:.3f} over {r.n} queries; {r.worse} worse, {r.better} better "
            f"(exact McNemar, one-sided p {r.p_worse:.4f})")


def latency(pair: Pair) -> dict:
    """Median seconds per query of both sides (queries answered by both) and their ratio."""
    lb, lc = pair.base_rows["latency_s"], pair.cand_rows["latency_s"]
    both = lb.notna() & lc.notna()
    mb, mc = float(lb[both].median()), float(lc[both].median())
    return {"base": mb, "cand": mc, "ratio": mc / mb if mb > 0 else math.nan, "n": int(both.sum()),
            "comparable": not pair.environment}


# ---- text ----------------------------------------------------------------------------------------------

def formatted(frame: pd.DataFrame) -> pd.DataFrame:
    """A :func:`table` (with ``p_holm``) as the columns `evalkit compare` shows, each value formatted."""
    f = frame.copy()
    f["Δ"] = f["delta"].map(lambda v: f"{v:+.3f}")
    f["95% CI"] = [stats.ci_text(lo, hi) for lo, hi in zip(f["low"], f["high"], strict=True)]
    f["W/T/L"] = [f"{w}/{t}/{lost}" for w, t, lost in zip(f["wins"], f["ties"], f["losses"], strict=True)]
    for col in ("base", "cand"):
        f[col] = f[col].map(lambda v: "n/a" if pd.isna(v) else f"{v:.3f}")
    f["mdd"] = [stats.mdd_text(v, sd).removeprefix("MDD ") for v, sd in zip(f["mdd"], f["sd_delta"], strict=True)]
    for col in ("p", "p_holm"):
        f[col] = f[col].map(lambda v: "n/a" if pd.isna(v) else f"{v:.4f}")
    cols = ["measure", "class", "n", "base", "cand", "Δ", "95% CI", "p", "p_holm", "W/T/L", "mdd"]
    return f[cols].rename(columns={"p_holm": "p(Holm)", "mdd": "MDD"})


def _fmt_table(frame: pd.DataFrame) -> str:
    f = frame.assign(**{"class": frame["class"].map(esc.terminal)})  # one row per line, whatever a class is called
    return formatted(f).to_string(index=False)


def notes(pair: Pair) -> list[str]:
    """What a reader must know before trusting the numbers: ungraded queries left out, missing answers,
    unshared queries, latency."""
    out = [n for n in dict.fromkeys(s.results.ungraded_note() for s in (pair.base, pair.cand)
                                    if not set(s.results.ungraded) <= set(pair.base_rows.index)) if n]
    for label in dict.fromkeys(lbl for lbl, _ in pair.missing):
        ids = [q for lbl, q in pair.missing if lbl == label]
        out.append(f"{label} has no answer for {len(ids)} query(ies), scored 0: {', '.join(ids)}")
    if pair.unshared:
        out.append(f"different query sets: {len(pair.unshared)} query(ies) not in both left out: "
                   f"{', '.join(pair.unshared)}; "
                   "each shared query counts as its own run judged it")
    if pair.depths[0] != pair.depths[1]:
        out.append(f"the runs kept {pair.depths[0]} and {pair.depths[1]} hits per query: document-level measures "
                   "(documents are ranked from the pages kept) and measures that look deeper than the shorter run "
                   "(RR, Recall and Success beyond it) are not comparable")
    if pair.environment:
        out.append("latencies are not comparable, the runs' environments differ: " + "; ".join(pair.environment))
    return out


def render(pairs: list[Pair], measures: tuple[str, ...] = MEASURES, **kw) -> str:
    """The text ``evalkit compare`` prints: per candidate, the measure table, refusals, latency and notes;
    Holm over every row of one measure across all candidates shown (the family is named in the output)."""
    tables = [table(p, measures, **kw).assign(candidate=p.cand.arm) for p in pairs]
    full = with_holm(pd.concat(tables, ignore_index=True))
    out = []
    for p in pairs:
        f = full[full["candidate"] == p.cand.arm]
        lat = latency(p)
        ref = refusal_changes(p)
        n_ans = int(p.mask(ALL).sum())
        out += [f"baseline  {esc.terminal(p.base.label)}", f"candidate {esc.terminal(p.cand.label)}",
                f"{n_ans} answerable queries paired by id (abstain queries: refusal rates)", "", _fmt_table(f), ""]
        out += [refusal_text(r) for r in ref.itertuples()]
        out.append(f"latency (median s/query) {lat['base']:.4f} -> {lat['cand']:.4f}, ratio {lat['ratio']:.2f}"
                   + ("" if lat["comparable"] else "  (NOT comparable: see below)"))
        out += [f"note: {esc.terminal(n)}" for n in notes(p)]
        out.append("")
    n_slices = len(full) // max(1, len(measures))
    alpha, power = kw.get("alpha", stats.ALPHA), kw.get("target_power", stats.POWER)
    conf = kw.get("confidence", 0.95)
    out += [f"Δ = candidate - baseline per query; {conf:.0%} CI: percentile bootstrap; p: two-sided paired sign-flip "
            "test,",
            f"(b+1)/(m+1); p(Holm): Holm over the {n_slices} rows of each measure ({len(pairs)} candidate(s) "
            "x slices);",
            f"MDD: the smallest true Δ detected with {power:.0%} power at alpha {alpha:g}, from the sd of the paired Δ",
            f"({stats.TOO_SMALL}: the slice could not detect even the largest Δ the measure can show)"]
    return "\n".join(out)
