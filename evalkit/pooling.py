"""Pooling strategies: which page an assessor reads next, and when reading more stops paying.

A page key is ``(doc, page)``, page 1-based and physical. Every call is a pure function of the arms'
rankings and of the judgments made so far, *in the order they were made*, so a judging workbench that
records each judgment at once can resume after a restart by calling again with what it recorded. Nothing
returned names an arm: the assessor reads blind.

Interface (what `evalkit qrels pool`, `evalkit qrels simulate` and the judging workbench program against)::

    PageKey  = tuple[str, int]                          # (doc, 1-based physical page)
    Rankings = Mapping[str, Sequence[PageKey]]          # arm label -> its ranked pages for one query
    Judged   = Sequence[tuple[PageKey, int]]            # (page, gain) in the order they were judged

    strategy(spec: str) -> Strategy                     # "depth(k=10)", "mtf", "maxmean(k=20)"
    registry() -> dict[str, type[Strategy]]             # name -> class (a registry, not if/elif)
    Strategy.label: str                                 # canonical spec, labels every output
    Strategy.pool(rankings) -> list[PageKey]            # every page it may ever propose, blind order
    Strategy.next_page(rankings, judged) -> PageKey | None   # None: nothing left to read
    Strategy.pending(rankings, judged) -> list[PageKey]  # readable now: the unread pool for depth, else next_page
    replay(strategy, rankings, assess, budget=None) -> tuple[tuple[PageKey, int], ...]
                                                        # judging simulated with an oracle `assess(page) -> gain`

    Prior.from_judged(pairs, depth) -> Prior            # a model of a page's gain given its covariates
    estimate(rankings, judged, depth=10, prior=None, tol=0.05) -> Estimate    # one query
    set_estimate(queries, depth=10, tol=0.02) -> SetEstimate   # queries: {qid: (rankings, judged)}
    knee(judged_by_query, ratio=6.0) -> Knee            # stopping for prioritised reading (mtf, maxmean)

Strategies (each follows a published method; see its docstring): ``depth`` (fixed-depth pooling, TREC's),
``mtf`` (move-to-front, Cormack, Palmer & Clarke, SIGIR 1998) and ``maxmean`` (the Bayesian bandit of
Losada, Parapar & Barreiro, SAC 2016 / IP&M 2017). Adaptive strategies read the same pool as ``depth`` with
the same ``k`` (the union of every arm's top ``k``), in a different order: their saving comes from
stopping early. Two stopping rules: the stopping estimate (:func:`estimate`, :func:`set_estimate`), a model
of a page's gain given what an adaptive strategy chooses on (the arms' precision so far, how many arms list
the page and how high), fitted on the pages read, and the knee method (:func:`knee`), made for prioritised
reading. `evalkit qrels simulate` measures both against the recorded judgments.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from .specs import ArmError, Configurable, lookup
from .measures import measure
from .records import page_id

PageKey = tuple[str, int]


def key(page: Sequence) -> PageKey:
    """A page as a key, however it came (a list from JSON, a tuple)."""
    return (str(page[0]), int(page[1]))
Rankings = Mapping[str, Sequence[PageKey]]
Judged = Sequence[tuple[PageKey, int]]

RELEVANT = 1  # gain at or above which a page counts as relevant (trec_eval's relevance level 1)
GOLD = 2      # gain at or above which a page is gold (measures.GOLD_GAIN)


@lru_cache(maxsize=1 << 16)
def blind_key(page: PageKey) -> str:
    """A page's place in a blind order: the sha256 of its page id. It depends on the page alone, so it
    reveals no arm, and renaming an arm cannot reorder the pool (ties broken by names decide results)."""
    return hashlib.sha256(page_id(*page).encode()).hexdigest()


class Strategy(Configurable):
    """Base class of a pooling strategy: parameters and canonical label as for arms, and ``next_page``."""

    kind = "pooling strategy"
    defaults: ClassVar[dict[str, Any]] = {"k": 10}  # the pool: the union of every arm's top k
    minimum: ClassVar[dict[str, int]] = {"k": 1}

    def __init__(self, **params: Any):  # a strategy needs no corpus: it sees rankings and judgments only
        self.params = self.resolve(params)

    @property
    def depth(self) -> int:
        return self.params["k"]

    def top(self, rankings: Rankings) -> dict[str, list[PageKey]]:
        """Each arm's first ``depth`` pages (an arm's repeats collapsed: a page is read once)."""
        return listed(rankings, self.depth)

    def pool(self, rankings: Rankings) -> list[PageKey]:
        """Every page the strategy may propose: the union of every arm's top ``depth``, in blind order."""
        return sorted({p for r in self.top(rankings).values() for p in r}, key=blind_key)

    def next_page(self, rankings: Rankings, judged: Judged) -> PageKey | None:  # pragma: no cover - protocol
        raise NotImplementedError

    def pending(self, rankings: Rankings, judged: Judged) -> list[PageKey]:
        """The pages that can be read now, before the next judgment: an adaptive strategy's choice depends
        on each judgment, so it is the next page alone."""
        page = self.next_page(rankings, judged)
        return [] if page is None else [page]

    def for_query(self, qid: str) -> Strategy:
        """The strategy as it reads query ``qid``: itself, for every strategy that needs only the rankings and
        the judgments; one that reads per-query predictions (``judge``) binds that query's."""
        return self

    def __repr__(self) -> str:
        return f"<pooling {self.label}>"


class Depth(Strategy):
    """Fixed-depth pooling (TREC since 1992; Spärck Jones & van Rijsbergen's "ideal test collection"): read
    the union of every arm's top ``depth``. ``order=hash`` reads it in blind content-hash order (today's
    ``qrels pool``); ``order=rank`` reads shallow pages first (best rank over the arms, then how many arms
    list the page, then the hash), which is fixed-depth pooling grown one rank at a time."""

    name = "depth"
    defaults = {"k": 10, "order": "hash"}
    choices = {"order": ("hash", "rank")}

    def pool(self, rankings: Rankings) -> list[PageKey]:
        pages = super().pool(rankings)
        if self.params["order"] == "hash":
            return pages
        top = self.top(rankings)
        best = {p: min(r.index(p) for r in top.values() if p in r) for p in pages}
        listed = votes(rankings, self.depth)
        return sorted(pages, key=lambda p: (best[p], -listed[p], blind_key(p)))

    def next_page(self, rankings: Rankings, judged: Judged) -> PageKey | None:
        return next(iter(self.pending(rankings, judged)), None)

    def pending(self, rankings: Rankings, judged: Judged) -> list[PageKey]:
        """Every unread page of the pool: a fixed-depth pool does not depend on the judgments."""
        seen = {tuple(p) for p, _ in judged}
        return [p for p in self.pool(rankings) if p not in seen]


def _next_of(pages: Sequence[PageKey], seen: set) -> PageKey | None:
    return next((p for p in pages if p not in seen), None)


def _best(live: dict[str, PageKey], score: Callable[[str], float]) -> str | None:
    """The best-scoring arm among those with a page left (``live``: arm -> its next unread page); ties go
    to the smaller blind key of that page, never to the arm's name."""
    return min(live, key=lambda a: (-score(a), blind_key(live[a])), default=None)


class MoveToFront(Strategy):
    """Move-to-front pooling (Cormack, Palmer & Clarke, "Efficient construction of large test collections",
    SIGIR 1998): every arm starts with the same priority; read the next unread page of the arm with the
    highest priority, and keep reading that arm while its pages are relevant; a non-relevant page lowers
    its priority by one and the turn passes to the arm of highest priority. The state (priorities, the
    current arm) is rebuilt by folding over the judgments in order, so the call stays pure; a judgment of
    a page the strategy did not propose (one made elsewhere) only marks the page read."""

    name = "mtf"

    def next_page(self, rankings: Rankings, judged: Judged) -> PageKey | None:
        top = self.top(rankings)
        priority = {a: 0 for a in top}
        seen: set = set()
        current: str | None = None
        for page, gain in judged:
            page = key(page)
            proposer = self._choose(top, priority, seen, current)
            if proposer is not None and _next_of(top[proposer], seen) == page:
                if gain < RELEVANT:
                    priority[proposer] -= 1
                current = proposer if gain >= RELEVANT else None
            seen.add(page)
        arm = self._choose(top, priority, seen, current)
        return None if arm is None else _next_of(top[arm], seen)

    @staticmethod
    def _choose(top: dict[str, list[PageKey]], priority: dict[str, int], seen: set, current: str | None) -> str | None:
        """The arm whose turn it is: the current one while it has pages left, else the highest priority."""
        if current is not None and _next_of(top[current], seen) is not None:
            return current
        live = {a: p for a in top if (p := _next_of(top[a], seen)) is not None}
        return _best(live, lambda a: priority[a])


class MaxMean(Strategy):
    """MaxMean, the stationary Bayesian bandit of Losada, Parapar & Barreiro ("Feeling lucky? Multi-armed
    bandits for ordering judgements in pooling-based evaluation", SAC 2016; "Multi-armed bandits for
    adjudicating documents in pooling-based evaluation of information retrieval systems", IP&M 53(5),
    2017). Each arm is a Bernoulli bandit with a Beta(1, 1) prior; its reward history is the judged pages
    of its list above its next unread page (whoever asked for them), a reward being a page of gain >=
    ``RELEVANT``. Read the next unread page of the arm with the largest posterior mean
    (1 + relevant) / (2 + judged)."""

    name = "maxmean"

    def next_page(self, rankings: Rankings, judged: Judged) -> PageKey | None:
        gains = {key(p): g for p, g in judged}
        means: dict[str, float] = {}
        live: dict[str, PageKey] = {}
        for arm, pages in self.top(rankings).items():
            rel = n = 0
            for p in pages:
                if p not in gains:
                    live[arm] = p
                    break
                n, rel = n + 1, rel + (gains[p] >= RELEVANT)
            means[arm] = (1 + rel) / (2 + n)
        best = _best(live, lambda a: means[a])
        return None if best is None else live[best]


@lru_cache(maxsize=4)
def _predictions(path: str) -> dict[str, dict[PageKey, float]]:
    """P(gain >= 1) per query and page from a judge's predictions table (``evalkit qrels judge``)."""
    import pandas as pd


    try:
        t = pd.read_parquet(path, columns=["query", "doc", "page", "p_ge1"])
    except (OSError, ValueError, KeyError) as e:
        raise ArmError(f"judge(predictions={path}): not a judge's predictions table ({e})") from None
    out: dict[str, dict[PageKey, float]] = {}
    for q, d, p, c in zip(t["query"], t["doc"], t["page"], t["p_ge1"], strict=True):
        out.setdefault(str(q), {})[(str(d), int(p))] = float(c)
    return out


class JudgeOrder(Strategy):
    """The judge's choice, after LARA (Takehi, Voorhees, Sakai & Soboroff, SIGIR 2025): read next the unread
    pool page whose label is most uncertain and most able to move a measure: the Bernoulli variance of the
    judge's P(gain >= 1), p(1 - p), times the largest nDCG@10 discount any arm gives the page, 1 / log2(1 +
    its best rank); ties to the blind key. ``predictions``: a predictions table of `evalkit qrels judge`
    (``RESULTS/judge/predictions.parquet``), cross-fitted by query, so no query's own grades chose its order;
    a page it does not cover counts as p = 1/2, the most uncertain. Its opinion never reaches the assessor:
    only the page to read next does."""

    name = "judge"
    defaults = {"k": 10, "predictions": ""}

    def __init__(self, **params: Any):
        super().__init__(**params)
        if not self.params["predictions"]:

            raise ArmError("judge needs predictions=PATH: the predictions.parquet `evalkit qrels judge` writes")
        self.chances: Mapping[PageKey, float] = {}

    def for_query(self, qid: str) -> Strategy:
        bound = JudgeOrder(**self.params)
        bound.chances = _predictions(str(self.params["predictions"])).get(qid, {})
        return bound

    def next_page(self, rankings: Rankings, judged: Judged) -> PageKey | None:
        seen = {key(p) for p, _ in judged}
        best: dict[PageKey, int] = {}
        for r in self.top(rankings).values():
            for rank, p in enumerate(r, 1):
                best[p] = min(best.get(p, rank), rank)
        live = [p for p in best if p not in seen]

        def value(p: PageKey) -> float:
            c = self.chances.get(p, 0.5)
            return c * (1 - c) / math.log2(1 + best[p])

        return min(live, key=lambda p: (-value(p), blind_key(p)), default=None)


def builtin() -> dict[str, type[Strategy]]:
    return {s.name: s for s in (Depth, MoveToFront, MaxMean, JudgeOrder)}


def registry() -> dict[str, type[Strategy]]:
    """Every pooling strategy by name."""
    return builtin()


def strategy(spec: str) -> Strategy:
    """Build a strategy from a spec in the arm grammar (``depth(k=10)``, ``mtf(k=20)``: ``k`` is the pool
    depth). Raises :class:`evalkit.arms.ArmError` naming what is wrong."""
    cls, params = lookup(spec, registry(), Strategy.kind)
    return cls(**params)


def replay(strat: Strategy, rankings: Rankings, assess: Callable[[PageKey], int],
           budget: int | None = None) -> tuple[tuple[PageKey, int], ...]:
    """Judging simulated with an oracle: ask ``next_page``, judge it with ``assess``, repeat until the
    strategy has nothing left or ``budget`` pages are read. The order of the returned pairs is the order
    an assessor would have read them in."""
    judged: list[tuple[PageKey, int]] = []
    while budget is None or len(judged) < budget:
        page = strat.next_page(rankings, judged)
        if page is None:
            break
        judged.append((page, assess(page)))
    return tuple(judged)


# ---- stopping ------------------------------------------------------------------------------------------

def listed(rankings: Rankings, depth: int) -> dict[str, list[PageKey]]:
    """Each arm's first ``depth`` distinct pages."""
    return {arm: list(dict.fromkeys(key(x) for x in r))[:depth] for arm, r in rankings.items()}


def votes(rankings: Rankings, depth: int) -> dict[PageKey, int]:
    """Every page of the pool (the union of the arms' top ``depth``) with how many arms list it there."""
    out: dict[PageKey, int] = {}
    for r in listed(rankings, depth).values():
        for p in r:
            out[p] = out.get(p, 0) + 1
    return out


def _logit_mean(rel: float, n: float) -> float:
    """The log-odds of a Beta(1, 1) posterior mean, (1 + rel) / (2 + n): MaxMean's score of an arm."""
    return math.log((1.0 + rel) / (1.0 + n - rel))


def covariates(rankings: Rankings, gains: Mapping[PageKey, int], depth: int) -> dict[PageKey, tuple[float, ...]]:
    """Every pool page's covariates, all observed, the state an adaptive strategy chooses on: (1, log of
    how many arms list it, log of its best rank, the log-odds of MaxMean's posterior mean over the judged
    pages the listing arms rank above it, the same over the judged pages of the arms that do not list
    it). A page read is described as it stood before it was read: its own judgment enters neither."""
    top = listed(rankings, depth)
    best: dict[PageKey, int] = {}
    above: dict[PageKey, list[int]] = {}  # judged, relevant above the page, summed over the listing arms
    arms: dict[PageKey, set[str]] = {}
    whole: dict[str, tuple[int, int]] = {}
    for a, r in top.items():
        n = rel = 0
        for rank, p in enumerate(r, 1):
            best[p] = min(best.get(p, rank), rank)
            acc = above.setdefault(p, [0, 0])
            acc[0], acc[1] = acc[0] + n, acc[1] + rel
            arms.setdefault(p, set()).add(a)
            n, rel = n + (p in gains), rel + (gains.get(p, 0) >= RELEVANT)
        whole[a] = (n, rel)
    out: dict[PageKey, tuple[float, ...]] = {}
    for p, (n, rel) in above.items():
        others = [whole[a] for a in top if a not in arms[p]]
        out[p] = (1.0, math.log(len(arms[p])), math.log(best[p]), _logit_mean(rel, n),
                  _logit_mean(sum(x[1] for x in others), sum(x[0] for x in others)))
    return out


L2 = 1.0  # ridge penalty on every coefficient: with nothing judged, every chance is 1/2


def _logistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Ridge-penalised logistic regression by Newton's method (IRLS); the coefficients."""
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        step = np.linalg.solve((x.T * (p * (1 - p))) @ x + L2 * np.eye(len(w)), x.T @ (p - y) + L2 * w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


@dataclass(frozen=True)
class Prior:
    """A continuation-ratio logistic model (Agresti, *Categorical Data Analysis*) of a page's gain given
    its :func:`covariates`, fitted on the judged pages of a query set: ``weights[g - 1]`` gives the chance
    of gain >= g among pages of gain >= g - 1, for g = 1 up to the largest gain judged (at least ``GOLD``)."""

    weights: tuple[tuple[float, ...], ...] = ()

    @classmethod
    def from_judged(cls, queries: Sequence[tuple[Rankings, Judged]], depth: int = 10) -> Prior:
        rows, gains = [], []
        for rankings, judged in queries:
            known = {key(p): gain for p, gain in judged}
            for p, c in covariates(rankings, known, depth).items():
                if p in known:
                    rows.append(c)
                    gains.append(known[p])
        x, y = np.array(rows, dtype=float).reshape(-1, 5), np.array(gains, dtype=int)
        top = max(GOLD, int(y.max(initial=0)))
        return cls(tuple(tuple(float(w) for w in _logistic(x[y >= g - 1], (y[y >= g - 1] >= g).astype(float)))
                         for g in range(1, top + 1)))

    def chances(self, x: tuple[float, ...]) -> list[float]:
        """P(gain >= g) for g = 1, 2, ...: the product of the continuation chances up to g."""
        out, p = [], 1.0
        for w in self.weights:
            p *= 1.0 / (1.0 + math.exp(-sum(a * b for a, b in zip(w, x, strict=True))))
            out.append(p)
        return out


@dataclass(frozen=True)
class Estimate:
    """One query's stopping estimate. ``missing_rel`` / ``missing_gold``: expected pages of gain >= 1 / >= 2
    among the pool's unread pages; ``shift``: the largest change of any arm's nDCG@10 (page or doc) if the
    unread pages held their expected gain; ``stable``: shift <= the tolerance."""

    read: int
    unread: int
    found_rel: int
    found_gold: int
    missing_rel: float
    missing_gold: float
    shift: float
    stable: bool
    expected: dict[PageKey, float] = field(default_factory=dict, hash=False, compare=False)
    # each arm's (nDCG@10, nDCG@10(doc)) as judged so far, and with unread pages at their expected gain
    now: dict[str, tuple[float, float]] = field(default_factory=dict, hash=False, compare=False)
    then: dict[str, tuple[float, float]] = field(default_factory=dict, hash=False, compare=False)


def estimate(rankings: Rankings, judged: Judged, depth: int = 10, prior: Prior | None = None,
             tol: float = 0.05) -> Estimate:
    """Estimate what the unread pages of one query's pool hold. An adaptive strategy reads what the arms'
    rankings and the judgments so far make likely, so the unread pages of a stratum are the unlikely ones:
    but the choice depends on observed data only, so the unread pages' gains are missing at random given
    the covariates the strategy chooses on (Rubin, "Inference and missing data", Biometrika 1976), and a
    model of the gain given those covariates, fitted on the pages read, applies to the unread ones. The
    covariates (:func:`covariates`) are how many arms list a page and how high, and the precision so far
    of the arms that list it (MaxMean's Beta(1, 1) posterior mean) and of the query; the model, ``prior``,
    is fitted on the whole set (:func:`set_estimate`), else on this query alone. The strategies here are
    deterministic, so no selection probability exists for an inverse-probability-weighted estimate (the
    route of sampling-based pools: Aslam, Pavlu & Yilmaz, SIGIR 2006). Relevant pages no arm ranks within
    ``depth`` are beyond every pool and are not estimated."""
    gains = {key(p): g for p, g in judged}
    x = covariates(rankings, gains, depth)
    model = prior if prior is not None else Prior.from_judged([(rankings, judged)], depth)
    chances = {p: model.chances(c) for p, c in x.items() if p not in gains}
    expected = {p: sum(c) for p, c in chances.items()}
    now, then = arm_scores(rankings, dict(gains)), arm_scores(rankings, {**gains, **expected})
    shift = max((abs(a - b) for arm in now for a, b in zip(now[arm], then[arm], strict=True)), default=0.0)
    return Estimate(read=len(gains), unread=len(chances),
                    found_rel=sum(g >= RELEVANT for g in gains.values()),
                    found_gold=sum(g >= GOLD for g in gains.values()),
                    missing_rel=sum(c[RELEVANT - 1] for c in chances.values()),
                    missing_gold=sum(c[GOLD - 1] for c in chances.values()),
                    shift=shift, stable=shift <= tol, expected=expected, now=now, then=then)


NDCG = (measure("nDCG@10"), measure("nDCG@10(doc)"))


def arm_scores(rankings: Rankings, gains: Mapping[PageKey, float]) -> dict[str, tuple[float, float]]:
    """Each arm's nDCG@10 and nDCG@10(doc) under ``gains`` (unlisted pages count 0)."""
    qrels = {page_id(*p): g for p, g in gains.items()}
    scores = {arm: [m([page_id(*p) for p in shown(r)], qrels) for m in NDCG] for arm, r in rankings.items()}  # type: ignore[arg-type]
    return {arm: (page, doc) for arm, (page, doc) in scores.items()}


def shown(ranking: Sequence[PageKey], docs: int = 10) -> list[PageKey]:
    """The distinct pages of a ranking up to its ``docs``-th distinct document: all that nDCG@10 and
    nDCG@10(doc) look at (the rest of a 100-page ranking only costs time)."""
    out: dict[PageKey, None] = {}
    seen: set[str] = set()
    for p in ranking:
        p = key(p)
        if p[0] not in seen and len(seen) == docs:
            break
        seen.add(p[0])
        out.setdefault(p, None)
    return list(out)


@dataclass(frozen=True)
class SetEstimate:
    """A query set's stopping estimate: the per-query estimates (with the set's strata as prior), their
    sums, and whether filling every unread page with its expected gain would leave the arms' order on
    nDCG@10 and nDCG@10(doc) in place (Kendall tau >= ``TAU``) and move no arm's mean by more than ``tol``."""

    queries: dict[str, Estimate]
    missing_rel: float
    missing_gold: float
    tau: float
    shift: float
    stable: bool


TAU = 0.9  # the usual yardstick for "the same order of systems" (Voorhees 2000; Losada et al. 2019)


def set_estimate(queries: Mapping[str, tuple[Rankings, Judged]], depth: int = 10, tol: float = 0.02) -> SetEstimate:
    """Estimate for every query with the set's judgments as prior, then the set-level signal."""
    prior = Prior.from_judged(list(queries.values()), depth)
    per = {q: estimate(r, j, depth, prior) for q, (r, j) in queries.items()}
    now: dict[str, list] = {}
    then: dict[str, list] = {}
    for e in per.values():
        for arm in e.now:
            now.setdefault(arm, []).append(e.now[arm])
            then.setdefault(arm, []).append(e.then[arm])
    arms = sorted(now)
    taus, shifts = [], []
    for level in (0, 1):
        a = [sum(s[level] for s in now[x]) / len(now[x]) for x in arms]
        b = [sum(s[level] for s in then[x]) / len(then[x]) for x in arms]
        taus.append(kendall_tau(a, b))
        shifts.append(max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0))
    tau, shift = min(taus), max(shifts)
    return SetEstimate(per, sum(e.missing_rel for e in per.values()), sum(e.missing_gold for e in per.values()),
                       tau, shift, tau >= TAU and shift <= tol)


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists over the same arms (scipy); NaN when either list is constant
    (every arm scores the same: there is no order to keep) or holds one arm, which no threshold passes."""
    from scipy.stats import kendalltau

    if len(a) < 2:  # one arm: scipy warns of a small sample to the person's terminal, and says NaN
        return math.nan
    return float(kendalltau(a, b).statistic)


def describe(e: SetEstimate) -> str:
    """One line a person reads to decide whether to keep judging."""
    unstable = sorted(q for q, x in e.queries.items() if not x.stable)
    return (f"stopping estimate over {len(e.queries)} answerable queries: about {e.missing_rel:.1f} relevant "
            f"page(s) not yet found ({e.missing_gold:.1f} of gain >= {GOLD}); filling unread pages with their "
            f"expected gain keeps the arms' order at tau {e.tau:.2f} and moves no mean by more than {e.shift:.3f}: "
            + ("reading more is unlikely to change the arms' order" if e.stable else "keep reading")
            + (f"; queries still moving: {', '.join(unstable[:10])}{' …' if len(unstable) > 10 else ''}" if unstable
               else ""))


KNEE_RATIO = 6.0  # Cormack & Grossman's threshold on the slope ratio


@dataclass(frozen=True)
class Knee:
    """The knee method's reading of a gain curve: the largest slope ratio over the candidate knees, and
    whether it reached ``KNEE_RATIO`` (stop)."""

    ratio: float
    pages: int
    stop: bool


def knee(queries: Mapping[str, Judged], ratio: float = KNEE_RATIO, minimum: int = 0) -> Knee:
    """The knee method (Cormack & Grossman, "Engineering quality and reliability in technology-assisted
    review", SIGIR 2016), a stopping rule for *prioritised* reading such as ``mtf`` and ``maxmean``: the
    curve of relevant pages found against pages read flattens once the likely pages are read. The set's
    curve reads every query's judgments round by round (each query's first page, then each one's second,
    as a per-query budget does); at each round r a candidate knee splits it, and the slope ratio is
    (relevant by r / pages by r) / ((relevant after r + 1) / pages after r), the + 1 keeping a flat tail
    from dividing by zero. Stop when some ratio reaches ``ratio`` and at least ``minimum`` pages are read."""
    rounds = max((len(j) for j in queries.values()), default=0)
    pages, rel, curve = 0, 0, []
    for r in range(rounds):
        for judged in queries.values():
            if r < len(judged):
                pages, rel = pages + 1, rel + (judged[r][1] >= RELEVANT)
        curve.append((pages, rel))
    best = max(((rel_k / pages_k) / ((rel - rel_k + 1) / (pages - pages_k))
                for pages_k, rel_k in curve if 0 < pages_k < pages), default=0.0)
    return Knee(best, pages, best >= ratio and pages >= minimum)
