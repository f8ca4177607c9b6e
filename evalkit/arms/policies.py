"""Admission policies: how sure we are that the corpus answers a query at all, as one number per query.

A policy reads the query (and, if it wants, the ranking the wrapped arm produced) and returns a
:class:`Verdict`: a ``confidence`` (higher = more likely answerable), what that number is in words, and the
evidence a person should see when the query is refused. :class:`~evalkit.arms.admit.AdmitArm` compares the
confidence with a threshold; the threshold is chosen afterwards on another query set (``evalkit refusal
calibrate``), which is why every answer records its confidence.

The built-ins, compared in docs/refusal.md:

- ``idf-mass``: the published lexical gate. Mean IDF of the query's terms over the corpus's pages, absent
  terms at the maximum IDF; familiar words give high confidence. The baseline to beat.
- ``score``: a feature of an arm's own scores: MTEB's confidence functions ``max``, ``std``, ``diff1``
  (top1 - top2) over the returned list, and the query-performance predictors ``nqc`` and ``wig``.
- ``semantic``: the best page's cosine similarity (the semantic arm's top score).
- ``spread``: how unevenly the query resembles the corpus: the standard deviation of its cosine over every
  window (or page) of the corpus, NQC on cosines with the whole corpus as the list. Needs no labels and no
  fit; a query the corpus does not speak to is about as (dis)similar to everything.
- ``names``: a veto on what the query names (a command, a package, a program: ``\\addplot``, ``TikZ``,
  ``Overleaf``): if no page of the corpus holds one of them, the query is refused whatever the threshold;
  otherwise another policy decides (``names(policy=spread)``).
- ``evidence``: a logistic model over four signals, fitted on a development set (``evalkit refusal fit``):
  best semantic match, the share of the query's IDF mass found together on one page (do its rare words
  co-occur anywhere?), agreement of the keyword and semantic rankings, and term familiarity.
- ``conformal``: another policy's confidence as a conformal p-value among passages drawn from the corpus
  (:mod:`evalkit.arms.conformal`), so a threshold carries a wrongful-refusal bound to any corpus.
- ``judge``: the local judge's chance that the arm's top pages answer, trained on the user's own judged
  queries of the corpus and turned into a conformal p-value among its answerable ones
  (:mod:`evalkit.arms.answerability`). The judge only admits or refuses another arm's ranking; it ranks nothing.

Plug-in policies come from the ``evalkit.admission`` entry point group, like arms.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from importlib.metadata import entry_points

import numpy as np

from ..records import Answer
from ..text import names, rare_words
from . import ArmError, Configurable, lookup, make
from .conformal import p_value, pseudo_queries
from .lexical import GlobalIndex, query_terms
from .semantic import page_maxima


@dataclass(frozen=True)
class Verdict:
    """A policy's judgement of one query: ``confidence`` (higher = answerable), ``measure`` naming it in
    words ("best semantic match"), ``evidence`` for a person reading a refusal ("no page contains 'x'")."""

    confidence: float
    measure: str
    evidence: str = ""


class Policy(Configurable):
    """Base class of every admission policy. ``depth`` is how many hits of the wrapped arm's ranking it
    reads (0: none), so the wrapper asks for them whatever k the caller wants and the confidence does not
    depend on k."""

    kind = "policy"
    depth: int = 0

    def assess(self, query: str, result: Answer) -> Verdict:  # pragma: no cover - the protocol
        raise NotImplementedError

    def bind(self, arm) -> None:
        """Meet the arm whose rankings this policy admits (:class:`~evalkit.arms.admit.AdmitArm` calls it once
        built); a policy that learns from that arm's rankings keeps it. The default needs none."""

    def prepare(self) -> None:
        """Do the costly part before the first timed query (the wrapper's ``prepare``); default: nothing."""

    def note(self, threshold: float) -> str:
        """What a user should read about this policy at ``threshold`` before trusting its refusals (a bound
        on wrongful refusal, say); the wrapper prints it when it prepares. Default: nothing to say."""
        return ""

    def describe(self) -> dict:
        """What the manifest should record about this policy beyond its label; default: nothing."""
        return {}


# ---- term statistics ---------------------------------------------------------------------------------------


def idf(df: int, n: int) -> float:
    """BM25's IDF with Lucene's +1 (never negative): ln(1 + (n - df + 0.5) / (df + 0.5)); its maximum,
    at df = 0, is what an absent term gets."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def coverage(weights: dict[str, float], pages_with: dict[str, frozenset]) -> float:
    """The largest share of the query's IDF mass that one page holds: 1.0 when some page has every term,
    low when the rare terms never appear together (or not at all). Pure: term -> weight, term -> pages."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    mass: defaultdict[object, float] = defaultdict(float)
    for t, w in weights.items():
        for p in pages_with.get(t, ()):
            mass[p] += w
    return max(mass.values(), default=0.0) / total


def absent_phrase(absent: list[str]) -> str:
    """"no page contains 'pgfplots' or 'addplot'" (empty when nothing is absent)."""
    return "no page contains " + " or ".join(f"'{t}'" for t in absent) if absent else ""


class Lexicon:
    """Page frequencies of query terms over a corpus's global FTS5 index (stemmed as the index stems)."""

    def __init__(self, store, corpus):
        self.index = GlobalIndex(store, corpus)
        self.n = self.index.n_pages

    def weights(self, terms: list[str]) -> dict[str, float]:
        return {t: idf(len(self.index.pages_with(t)), self.n) for t in terms}

    def absent(self, terms: list[str]) -> list[str]:
        return [t for t in terms if not self.index.pages_with(t)]

    def coverage(self, terms: list[str]) -> float:
        return coverage(self.weights(terms), {t: self.index.pages_with(t) for t in terms})

    def familiarity(self, terms: list[str]) -> float:
        """1 - mean IDF / max IDF: 0 when every term is absent, near 1 when every term is everywhere."""
        w = self.weights(terms)
        return 1.0 - (sum(w.values()) / len(w)) / idf(0, self.n) if w else 0.0


# ---- the policies ------------------------------------------------------------------------------------------


class IdfMassPolicy(Policy):
    """The published gate: mean query-term IDF against the corpus, absent terms at the maximum IDF."""

    name = "idf-mass"
    defaults = {}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.lexicon = Lexicon(store, corpus)

    def assess(self, query: str, result: Answer) -> Verdict:
        terms = query_terms(query)
        return Verdict(self.lexicon.familiarity(terms), "term familiarity (1 - mean IDF / max IDF)",
                       absent_phrase(self.lexicon.absent(terms)))


SCORE_FEATURES = ("max", "std", "diff1", "nqc", "wig")


def score_feature(scores: list[float], feature: str, k: int = 10, n_terms: int = 1) -> float:
    """One confidence from a ranking's scores (best first). ``max``, ``std`` (population, over the whole
    list) and ``diff1`` (top1 - top2; 0 for one hit) are MTEB's; ``nqc`` is the standard deviation of the top
    k over the magnitude of the list's mean (NQC with the list standing in for the corpus), ``wig`` the top
    k's mean minus the list's, over sqrt(query terms). An empty ranking is -inf: nothing to be sure of."""
    if not scores:
        return -math.inf
    s = np.asarray(scores, dtype=float)
    top = s[:k]
    if feature == "max":
        return float(s[0])
    if feature == "std":
        return float(s.std())
    if feature == "diff1":
        return float(s[0] - s[1]) if len(s) > 1 else 0.0
    if feature == "nqc":
        return float(top.std() / abs(s.mean())) if s.mean() else 0.0
    if feature == "wig":
        return float((top.mean() - s.mean()) / math.sqrt(max(n_terms, 1)))
    raise ValueError(f"unknown score feature {feature!r} (features: {', '.join(SCORE_FEATURES)})")


class ScorePolicy(Policy):
    """A feature of the scores of the wrapped arm's ranking (its top ``depth`` hits), or of another arm's
    (``of=global-index``): rank-fused arms give every query the same top score, so their own is no signal."""

    name = "score"
    defaults = {"feature": "max", "of": "", "k": 10, "depth": 100}
    choices = {"feature": SCORE_FEATURES}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.other = make(self.params["of"], corpus, store) if self.params["of"] else None
        self.depth = 0 if self.other else self.params["depth"]

    def assess(self, query: str, result: Answer) -> Verdict:
        ranking = self.other.search(query, self.params["depth"]) if self.other else result
        scores = [h.score for h in ranking.hits[:self.params["depth"]]]
        who = self.other.label if self.other else "the arm"
        c = score_feature(scores, self.params["feature"], self.params["k"], len(query_terms(query)))
        return Verdict(c, f"{self.params['feature']} of {who}'s scores", "" if scores else f"{who} found nothing")


class SemanticPolicy(Policy):
    """The cosine similarity of the best page (the semantic arm's top score) against a threshold; a refusal
    also names the query terms no page contains."""

    name = "semantic"
    defaults = {"of": "semantic"}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.semantic = make(self.params["of"], corpus, store)
        self.lexicon = Lexicon(store, corpus)

    def best(self, query: str) -> tuple[float, str]:
        hits = self.semantic.search(query, 1).hits
        return (hits[0].score, f"{hits[0].doc}#{hits[0].page}") if hits else (-1.0, "")

    def evidence(self, query: str, page: str, extra: str = "") -> str:
        """What a person reading a refusal should see: the query's words no page holds, the closest page."""
        absent = absent_phrase(self.lexicon.absent(query_terms(query)))
        closest = f"closest page {page}{extra}" if page else ""
        return "; ".join(p for p in (absent, closest) if p)

    def assess(self, query: str, result: Answer) -> Verdict:
        c, page = self.best(query)
        return Verdict(c, "best semantic match", self.evidence(query, page))


SPREAD_UNITS = ("windows", "pages")


def spread(scores: np.ndarray) -> float:
    """Population standard deviation of a query's cosines over the corpus; -inf with nothing to compare."""
    return float(np.std(scores)) if len(scores) else -math.inf


class SpreadPolicy(SemanticPolicy):
    """The spread of the query's cosine over the whole corpus (``over=windows``, each embedded window, or
    ``over=pages``, each page's best window). A query some pages answer stands out from the rest of the
    corpus; one that only shares the corpus's register (a need nothing meets, a near miss) is about equally
    similar to many pages. Unlike the best cosine it is relative to the query's own level, so a threshold
    has less to carry between corpora; it reads every score, not the top k that ``score(feature=std)`` sees."""

    name = "spread"
    defaults = {"of": "semantic", "over": "windows"}
    choices = {"over": SPREAD_UNITS}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        if not hasattr(self.semantic, "window_scores"):
            raise ArmError(f"policy 'spread': of={self.params['of']} is not a semantic arm (it needs every window's "
                           "score)")

    def assess(self, query: str, result: Answer) -> Verdict:
        scores = self.semantic.window_scores(query)
        if self.params["over"] == "pages":
            scores = page_maxima(scores, self.semantic.starts)
        best, page = self.best(query)
        return Verdict(spread(scores), f"spread of semantic similarity over {len(scores)} {self.params['over']}",
                       self.evidence(query, page, f" (best semantic match {best:.2f})"))


class NamesPolicy(Policy):
    """Refuses a query that names something no page holds, and leaves the rest to ``policy`` (none: every
    other query gets confidence 1). A reader who writes ``\\addplot``, ``TikZ`` or ``Overleaf`` names what
    they need; a corpus that never mentions it cannot answer, however close its pages are in meaning. Plain
    words are left out on purpose: a description in the reader's own words is often missing from the corpus
    word for word (:func:`evalkit.text.names` says what counts as a name). With ``rare`` > 0 a lower-case word
    counts as a name too when it is rarer in English than that Zipf frequency (``wordfreq``; 2 = once in ten
    million words): ``qrcode``, ``xgboost``, which a spelling rule cannot tell from prose. The veto is a
    confidence of -inf, below every threshold, so calibration and the trade-off curves count it like any
    other refusal."""

    name = "names"
    defaults = {"policy": "", "rare": 0.0}

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        if resolved["policy"]:
            validate(resolved["policy"])
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.lexicon = Lexicon(store, corpus)
        self.then = make_policy(self.params["policy"], corpus, store) if self.params["policy"] else None
        if self.then:
            self.params["policy"] = self.then.label
            self.depth = self.then.depth

    def bind(self, arm) -> None:
        if self.then:
            self.then.bind(arm)

    def prepare(self) -> None:
        if self.then:
            self.then.prepare()

    def note(self, threshold: float) -> str:
        return self.then.note(threshold) if self.then else ""

    def describe(self) -> dict:
        return self.then.describe() if self.then else {}

    def absent(self, query: str) -> list[str]:
        """The names of ``query`` that no page holds (as FTS5 reads them: case-folded and stemmed)."""
        rare = rare_words(query, english_frequency, self.params["rare"]) if self.params["rare"] > 0 else []
        return self.lexicon.absent(list(dict.fromkeys([*names(query), *rare])))

    def assess(self, query: str, result: Answer) -> Verdict:
        missing = self.absent(query)
        if missing:
            them = " or ".join(f"'{n}'" for n in missing)
            return Verdict(-math.inf, "names the corpus lacks", f"the query names {them}, which no page contains")
        if self.then is None:
            return Verdict(1.0, "every name the query uses is in the corpus")
        return self.then.assess(query, result)


def english_frequency(word: str) -> float:
    """The word's Zipf frequency in English (wordfreq's large list; 0 for a word it does not know)."""
    from wordfreq import zipf_frequency  # loads its word list on first use

    return zipf_frequency(word, "en", wordlist="large")


# ---- evidence: a fitted combination ----------------------------------------------------------------------

SIGNALS = ("semantic", "coverage", "agreement", "familiarity")
# The default: fitted on the latex query set of 30 November 2026 (110 queries, 22 abstain) by
# `evalkit refusal fit --qrels qrels/latex.toml`; intercept, then one weight per signal in SIGNALS order.
# Refit when the development set changes; a spec that names its weights does not depend on this.
LATEX_WEIGHTS = "-10.44:13.86:3.476:0.146:7.128"


def logistic(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """P(answerable) = 1 / (1 + exp(-(w0 + w . x))) for each row of ``x``."""
    return 1.0 / (1.0 + np.exp(-(weights[0] + np.asarray(x, dtype=float) @ weights[1:])))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0) -> np.ndarray:
    """Weights (intercept first, on the raw scale of ``x``) minimising the log loss plus ``l2``/2 |w|^2 over
    standardised features (the intercept unpenalised): the ridge keeps the weights finite when a small
    development set is separable, and standardising makes it shrink every signal alike."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    mean, sd = x.mean(0), x.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    design = np.column_stack([np.ones(len(x)), (x - mean) / sd])

    def loss(w):
        z = design @ w
        nll = np.sum(np.logaddexp(0, z) - y * z)
        grad = design.T @ (1 / (1 + np.exp(-z)) - y)
        return nll + l2 / 2 * w[1:] @ w[1:], grad + l2 * np.r_[0, w[1:]]

    from scipy.optimize import minimize  # here: every arm loads this module through the registry

    w = minimize(loss, np.zeros(design.shape[1]), jac=True, method="L-BFGS-B").x
    return np.r_[w[0] - np.sum(w[1:] * mean / sd), w[1:] / sd]


def fit_evidence(policy: "Policy", queries, l2: float = 1.0) -> str:
    """Fit the evidence policy's weights on a development query set (answerable = 1, abstain = 0) and
    return them as its ``weights`` parameter; any other policy has none (TypeError)."""
    if not isinstance(policy, EvidencePolicy):
        raise TypeError(f"policy {policy.label!r} has no weights to fit (fit the 'evidence' policy)")
    x = np.array([[policy.signals(q.text)[n] for n in SIGNALS] for q in queries])
    y = np.array([q.answerable for q in queries], dtype=float)
    if y.all() or not y.any():
        raise ValueError("fitting needs answerable and abstain queries")
    return format_weights(fit_logistic(x, y, l2))


def agreement(keyword_docs: list[str], semantic_docs: list[str]) -> float:
    """Jaccard overlap of the documents in two top-k lists: rankings that agree on where the answer is
    are evidence that it exists; two unrelated lists are each what is least bad for their own model."""
    a, b = set(keyword_docs), set(semantic_docs)
    return len(a & b) / len(a | b) if a | b else 0.0


class EvidencePolicy(SemanticPolicy):
    """Logistic combination of :data:`SIGNALS` with fitted ``weights`` (intercept:w1:w2:w3:w4)."""

    name = "evidence"
    defaults = {"of": "semantic", "weights": LATEX_WEIGHTS, "k": 10}

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.weights = np.array(parse_weights(self.params["weights"]))

    def signals(self, query: str) -> dict[str, float]:
        terms, k = query_terms(query), self.params["k"]
        sem = self.semantic.search(query, k).hits
        kw = self.lexicon.index.bm25(terms)[:k]
        return {"semantic": sem[0].score if sem else -1.0,
                "coverage": self.lexicon.coverage(terms),
                "agreement": agreement([d for d, _, _ in kw], [h.doc for h in sem]),
                "familiarity": self.lexicon.familiarity(terms)}

    def assess(self, query: str, result: Answer) -> Verdict:
        s = self.signals(query)
        c = float(logistic(np.array([[s[n] for n in SIGNALS]]), self.weights)[0])
        absent = absent_phrase(self.lexicon.absent(query_terms(query)))
        seen = (f"best semantic match {s['semantic']:.2f}, one page holds {s['coverage']:.0%} of the query's "
                f"term weight, keyword/semantic agreement {s['agreement']:.2f}")
        return Verdict(c, "P(answerable)", "; ".join(p for p in (absent, seen) if p))


def parse_weights(text: str, names: tuple[str, ...] = SIGNALS, owner: str = "policy 'evidence'") -> list[float]:
    """``w0:w1:…``: a logistic model's intercept, then one weight per name in ``names``."""
    try:
        w = [float(v) for v in text.split(":")]
    except ValueError:
        w = []
    if len(w) != len(names) + 1:
        raise ArmError(f"{owner}: weights wants {len(names) + 1} numbers separated by ':' "
                       f"(intercept, then {', '.join(names)}), got {text!r}")
    return w


def format_weights(w) -> str:
    return ":".join(f"{v:.4g}" for v in w)


# ---- conformal: a p-value among the corpus's own pseudo-queries ---------------------------------------


class ConformalPolicy(Policy):
    """The p-value of ``policy``'s confidence among the corpus's own pseudo-queries (:mod:`evalkit.arms.conformal`)."""

    name = "conformal"
    defaults = {"policy": "spread", "n": 200, "words": 12, "seed": 0}
    minimum = {"n": 19, "words": 0}  # 19: the least n at which p can reach 0.05; words 0: the query's length

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        validate(resolved["policy"])
        return resolved

    def __init__(self, corpus, store, **params):
        super().__init__(corpus, store, **params)
        self.base = make_policy(self.params["policy"], corpus, store)
        if self.base.depth:
            raise ArmError(f"policy 'conformal': policy={self.base.label} reads the arm's ranking; "
                           "a pseudo-query has none (use a policy that reads the corpus: spread, semantic, idf-mass)")
        self.params["policy"] = self.base.label
        self.corpus_name = corpus.name
        self.pages = [t for d in sorted(corpus.documents, key=lambda d: d.sha256) for t in store.texts(d)]
        self.by_length = {}  # words -> sorted confidences of that many words' passages
        if self.params["words"]:  # drawn now, so a corpus too short for them fails when the arm is built
            self.passages(self.params["words"])

    def passages(self, words: int) -> np.ndarray:
        """The base policy's confidences on ``n`` pseudo-queries of ``words`` words, sorted (cached)."""
        if words not in self.by_length:
            p = self.params
            got = np.sort([self.base.assess(q, Answer()).confidence
                           for q in pseudo_queries(self.pages, p["n"], words, p["seed"])])
            if not len(got):
                raise ArmError(f"policy 'conformal': no page of {self.corpus_name} has {words} words to draw a "
                               "pseudo-query from")
            self.by_length[words] = got
        return self.by_length[words]

    def assess(self, query: str, result: Answer) -> Verdict:
        v = self.base.assess(query, result)
        if v.confidence == -math.inf:  # a veto stays one
            return Verdict(-math.inf, v.measure, v.evidence)
        words = self.params["words"] or max(1, len(query.split()))
        calibration = self.passages(words)
        among = f"among {len(calibration)} {words}-word passages of the corpus"
        return Verdict(p_value(calibration, v.confidence), f"p-value of {v.measure} {among}", v.evidence)


# ---- judge: the local judge's answerability, calibrated on the user's own judged queries --------------------

JUDGE_SUMMARIES = ("max", "mean", "any")


class JudgePolicy(Policy):
    """The conformal p-value of the local judge's chance that the wrapped arm's top pages answer, among answerable
    queries of the user's own query file of this corpus that the judge did not learn from
    (:mod:`evalkit.arms.answerability`). ``qrels``: that file; ``train``: the share of its answerable queries
    the judge learns from (with every abstain query), the others calibrate; ``gain``, ``top``, ``summary``:
    which chance, over how many of the arm's pages, summarised how; ``model``, ``calibration``: the judge's
    (:class:`~evalkit.autojudge.model.Spec`). The defaults are the reading that told the shipped sets' answerable
    queries from their abstain ones best, cross-fitted (``benchmarks/admit_judge.py``, docs/refusal.md);
    ``vectors=0``: no semantic signal (a corpus not embedded). The judge never ranks: it reads the ranking of
    the arm it admits (:meth:`bind`) and says whether to show it."""

    name = "judge"
    defaults = {"qrels": "", "train": 0.5, "gain": 2, "top": 3, "summary": "mean", "depth": 10, "model": "logistic",
                "calibration": "isotonic", "seed": 0, "vectors": True}
    choices = {"summary": JUDGE_SUMMARIES, "gain": (1, 2, 3), "model": ("hgb", "logistic"),
               "calibration": ("platt", "isotonic")}
    minimum = {"top": 1, "depth": 1}

    @classmethod
    def resolve(cls, params):
        resolved = super().resolve(params)
        if not resolved["qrels"]:
            raise ArmError("policy 'judge' needs qrels=FILE, your judged queries of this corpus: "
                           "judge(qrels=qrels/mine.toml)")
        if not 0 < resolved["train"] < 1:
            raise ArmError(f"policy 'judge': parameter 'train' is the share of answerable queries the judge learns "
                           f"from, between 0 and 1, not {resolved['train']!r}")
        if resolved["top"] > resolved["depth"]:
            raise ArmError(f"policy 'judge': parameter 'top' ({resolved['top']}) reads more pages than 'depth' "
                           f"({resolved['depth']}) gives it")
        return resolved

    def __init__(self, corpus, store, **params):
        from .. import qrels

        super().__init__(corpus, store, **params)
        self.depth = self.params["depth"]
        path = self.params["qrels"]
        try:
            self.queries = qrels.load(path)
        except (OSError, ValueError) as e:
            raise ArmError(f"policy 'judge': qrels={path}: {e.strerror if isinstance(e, OSError) else e}") from None
        if self.queries.corpus and self.queries.corpus != corpus.name:
            raise ArmError(f"policy 'judge': {path} holds queries of corpus {self.queries.corpus!r}, not "
                           f"{corpus.name!r}: the judge is calibrated on the corpus's own queries")
        self.arm = None  # the wrapped arm, once bound
        self._calibrated = None
        self._signals = None

    def bind(self, arm) -> None:
        self.arm = arm

    def calibration(self):
        """The judge trained and calibrated on the query file (once, on first use)."""
        if self._calibrated is None:
            from ..autojudge.model import Spec
            from .signals import CorpusSignals
            from . import answerability as A

            if self.arm is None:
                raise ArmError("policy 'judge' admits an arm's ranking: use it as admit(arm=ARM,policy=judge(...))")
            p, arm = self.params, self.arm
            self._signals = CorpusSignals(self.corpus, self.store, vectors=p["vectors"])
            reading = A.Reading(p["gain"], p["top"], p["summary"], p["depth"])
            try:
                self._calibrated = A.calibrate(self.queries.queries, lambda t: [(h.doc, h.page) for h in
                                                                                arm.search(t, p["depth"]).hits],
                                               self._signals, reading, Spec(p["model"], p["calibration"], p["seed"]),
                                               p["train"], self.store.db)
            except ValueError as e:
                raise ArmError(f"policy 'judge': {p['qrels']}: {e}") from None
            except ImportError:
                raise ArmError("policy 'judge' trains its judge with scikit-learn: pip install 'evalkit[judge]'") \
                    from None
        return self._calibrated

    def prepare(self) -> None:
        self.calibration()

    def assess(self, query: str, result: Answer) -> Verdict:
        from . import answerability as A

        cal, p = self.calibration(), self.params
        s = A.score(cal, query, [(h.doc, h.page) for h in result.hits], self._signals)
        inside = "; in-sample: the query is in the calibration file" if A.in_sample(cal, query) else ""
        return Verdict(cal.p_value(s), f"p-value among {cal.n} answerable queries of {p['qrels']}{inside}",
                       f"the judge's {p['summary']} P(gain >= {p['gain']}) over the top {p['top']} pages {s:.2f}")

    def note(self, threshold: float) -> str:
        cal, path = self.calibration(), self.params["qrels"]
        head = (f"policy judge: calibrated on {cal.n} answerable queries of {path} (judge trained on "
                f"{cal.trained_on} others)")
        if threshold == -math.inf:
            return f"{head}; no threshold: records its p-values only"
        k, bound, upper = cal.bound(threshold)
        return (f"{head}; at threshold {threshold:g} it refuses {k}/{cal.n} of them; wrongful refusal of a new "
                f"answerable query <= {bound:.3f} (split conformal), and <= {upper:.3f} at 95% for this calibration "
                f"(Clopper-Pearson, {k}/{cal.n})")

    def describe(self) -> dict:
        cal = self.calibration()
        return {"policy": self.label, "judge": cal.judge.identity, "qrels": self.params["qrels"],
                "qrels_digest": self.queries.digest, "calibrated_on": cal.n, "trained_on": cal.trained_on}


# ---- registry ------------------------------------------------------------------------------------------------


def registry() -> dict[str, type[Policy]]:
    """Every policy by name: the built-ins, then plug-ins from the ``evalkit.admission`` entry points."""
    policies: dict[str, type[Policy]] = {p.name: p for p in (IdfMassPolicy, ScorePolicy, SemanticPolicy, SpreadPolicy,
                                                             NamesPolicy, EvidencePolicy, ConformalPolicy,
                                                             JudgePolicy)}
    for ep in entry_points(group="evalkit.admission"):
        if ep.name in policies:
            raise ArmError(f"plug-in policy {ep.name!r} ({ep.value}) would shadow a built-in policy")
        policies[ep.name] = ep.load()
    return policies


def validate(spec: str) -> tuple[type[Policy], dict[str, str]]:
    return lookup(spec, registry(), "policy")


def make_policy(spec: str, corpus, store) -> Policy:
    """Build the policy named by ``spec`` (``semantic`` or ``score(feature=diff1,of=global-index)``)."""
    cls, params = validate(spec)
    return cls(corpus, store, **params)
