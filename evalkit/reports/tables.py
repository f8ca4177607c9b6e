"""The report's tables: plain pandas frames (or Stylers for the page, every label from data escaped)
computed from a :class:`~evalkit.results.Results`."""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
from pandas.io.formats.style import Styler

from .. import calibration, stats
from .. import escape as esc
from ..records import CLASSES
from ..results import Results
from .labels import MEASURE_LABELS, short_labels
from .queryfile import query_set

# Fewer queries than this get a mean but no bootstrap interval: resampling a handful of values gives a
# whisker that looks like evidence and is not (with 2 queries it spans at most the two values themselves).
MIN_CI_QUERIES = 10
OUTCOME_LABELS = {"answered": "answered", "wrongful_refusal": "refused (wrongly)",
                  "correct_refusal": "refused (correctly)", "answered_abstain": "answered (should refuse)"}
ALL = "all answerable"


def _answerable(results: Results) -> pd.DataFrame:
    pq = results.per_query
    return pq[pq["class"] != "abstain"]


def _classes(frame: pd.DataFrame) -> list[str]:
    present = set(frame["class"])
    return [c for c in CLASSES if c in present] + sorted(present - set(CLASSES))


_LOWER_IS_BETTER = {"wrongful refusal", "errors", "s/query (median)"}
_NOT_RANKED = {"Judged@10"}  # describes the judgments under an arm, not the arm: no "best" to bold


def headline(results: Results):
    """:meth:`Results.table`, formatted (a pandas Styler); the best value of each column in bold."""
    t = results.table()
    fmt = {c: "{:.3f}" for c in t.columns}
    fmt["s/query (median)"] = "{:.4f}"
    fmt["errors"] = "{:.0f}"
    st = styled(t.style.format(fmt, na_rep="n/a"))
    if len(t) > 1:
        ranked = separating(t)
        hi = [c for c in ranked if c not in _LOWER_IS_BETTER | _NOT_RANKED]
        lo = [c for c in ranked if c in _LOWER_IS_BETTER]
        st = (st.highlight_max(subset=hi, props="font-weight: bold", axis=0)
                .highlight_min(subset=lo, props="font-weight: bold", axis=0))
    return st.set_caption(f"{esc.html(results.manifest['corpus']['name'])} × "
                          f"{esc.html(results.manifest['qrels']['name'])}: "
                          "ranking measures over answerable queries; best in bold where the arms differ")


def separating(table: pd.DataFrame) -> list[str]:
    """The columns whose values differ between arms: a column where every arm scores the same (no refusals,
    no errors) has no best to highlight."""
    return [c for c in table.columns if table[c].dropna().round(12).nunique() > 1]


def styled(st: Styler) -> Styler:
    """``st`` with its row and column labels HTML-escaped: pandas' Styler writes labels (and captions) into
    the page as markup, unlike ``DataFrame.to_html``, and labels here are arm names and classes from data."""
    return st.format_index(escape="html", axis=0).format_index(escape="html", axis=1)


def class_ci(results: Results, measure: str = "nDCG@10", confidence: float = 0.95,
             n_resamples: int = 10_000) -> pd.DataFrame:
    """Per arm and answerable class (and ``all answerable``): n, mean and the percentile-bootstrap CI of the
    mean (:func:`evalkit.stats.bootstrap_ci`, seeded); no CI (NaN) below :data:`MIN_CI_QUERIES` queries."""
    f = _answerable(results)
    rows = []
    for arm in results.arms:
        a = f[f["arm"] == arm]
        for cls in [*_classes(f), ALL]:
            v = a[measure] if cls == ALL else a.loc[a["class"] == cls, measure]
            mean, low, high = stats.bootstrap_ci(v.to_numpy(), confidence=confidence, n_resamples=n_resamples)
            if len(v) < MIN_CI_QUERIES:
                low = high = math.nan
            rows.append({"arm": arm, "class": cls, "n": len(v), "mean": mean, "low": low, "high": high})
    return pd.DataFrame(rows)


def class_ci_table(results: Results, measures: Sequence[str] = ("nDCG@10", "nDCG@10(doc)")) -> pd.DataFrame:
    """The numbers behind :func:`plot_class_bars`: "mean [low, high]" per arm (rows) and class (columns)."""
    parts = {}
    for m in measures:
        ci = class_ci(results, m)
        ci["cell"] = [f"{r.mean:.3f} [{r.low:.2f}, {r.high:.2f}]" if not math.isnan(r.low)
                      else f"{r.mean:.3f} (n {r.n}: no CI)" for r in ci.itertuples()]
        wide = ci.pivot(index="arm", columns="class", values="cell")
        parts[MEASURE_LABELS.get(m, m)] = wide.reindex(index=results.arms, columns=list(dict.fromkeys(ci["class"])))
    return pd.concat(parts, axis=1)


def class_ci_styled(results: Results) -> Styler:
    """:func:`class_ci_table` for the page, one block of rows per measure (side by side the two measures
    overflow the page) and each interval cell on one line (they wrapped onto three)."""
    wide = class_ci_table(results)
    measures = list(dict.fromkeys(wide.columns.get_level_values(0)))
    long = pd.concat({m: wide[m] for m in measures}, names=["measure", "arm"])
    return styled(long.style.set_table_styles([{"selector": "td", "props": "white-space: nowrap"}]))


def deltas(results: Results, pair: Sequence[str], measure: str = "nDCG@10") -> pd.DataFrame:
    """Per answerable query: the two arms' scores and ``delta`` = second - first, largest gain first. Carries
    the query text when the run's query file is at hand and unchanged."""
    a, b = pair
    wide = _answerable(results).pivot(index="query", columns="arm", values=measure)
    cls = results.per_query.drop_duplicates("query").set_index("query")["class"]
    out = pd.DataFrame({"class": cls.reindex(wide.index), a: wide[a], b: wide[b], "delta": wide[b] - wide[a]})
    qs = query_set(results)
    if qs is not None:
        texts = {q.id: q.text for q in qs.queries}
        out["text"] = [texts.get(q, "") for q in out.index]
    return out.sort_values(["delta", "class"], ascending=[False, True], kind="stable")


def biggest_changes(results: Results, pair: Sequence[str], measure: str = "nDCG@10", n: int = 5) -> pd.DataFrame:
    """The ``n`` queries that gained most and the ``n`` that lost most from the first arm to the second."""
    d = deltas(results, pair, measure)
    up, down = d[d["delta"] > 0].head(n), d[d["delta"] < 0].tail(n).iloc[::-1]
    return pd.concat({"better": up, "worse": down}, names=["change", "query"])


def biggest_changes_styled(results: Results, pair: Sequence[str], measure: str = "nDCG@10", n: int = 5) -> Styler:
    """:func:`biggest_changes` for the page: arms under their short labels (the full ones made the columns
    wider than the page), Δ signed, the query text wrapped within a column of its own width; every value
    from data escaped."""
    table = biggest_changes(results, pair, measure, n).rename(columns={**short_labels(results.arms), "delta": "Δ"})
    st = table.style.format("{:.3f}", subset=[short_labels(results.arms)[a] for a in pair])
    st = st.format("{:+.3f}", subset=["Δ"]).format(escape="html", subset=[c for c in ("class", "text") if c in table])
    wrap = [{"selector": "td", "props": "white-space: nowrap"},
            {"selector": "td.col-text, td:last-child", "props": "white-space: normal; min-width: 20em; max-width: "
                                                                "36em; text-align: left"}]
    return styled(st.set_table_styles(wrap))


def refusal_counts(results: Results) -> pd.DataFrame:
    """Query counts per arm (rows, manifest order) and refusal outcome (columns)."""
    pq = results.per_query
    counts = pq.groupby(["arm", "outcome"]).size().unstack(fill_value=0)
    return counts.reindex(index=results.arms, columns=list(OUTCOME_LABELS), fill_value=0)


def tie_audit(results: Results) -> pd.DataFrame:
    """Per arm and class (and ``all``): queries, mean tied items among the first 10 hits (``ties@10``) and the
    share of queries with any tie in their top 10. Inside a tied band the order is the arm's tie-break,
    so a measure at 10 is only as solid as these numbers are small."""
    pq = results.per_query
    rows = []
    for arm in results.arms:
        a = pq[pq["arm"] == arm]
        for cls in [*_classes(pq), "all"]:
            g = a if cls == "all" else a[a["class"] == cls]
            rows.append({"arm": arm, "class": cls, "queries": len(g), "mean ties@10": g["ties@10"].mean(),
                         "share with a tie": (g["ties@10"] > 0).mean() if len(g) else math.nan})
    return pd.DataFrame(rows)


def tie_table(results: Results) -> pd.DataFrame:
    """:func:`tie_audit` wide: arms as rows, (statistic, class) as columns."""
    t = tie_audit(results)
    order = list(dict.fromkeys(t["class"]))
    wide = t.pivot(index="arm", columns="class", values=["mean ties@10", "share with a tie"])
    return wide.reindex(index=results.arms).reindex(columns=order, level=1)


def _short(digest: object) -> str:
    """A weights digest as the table shows it, ``sha256:8199be6f699a`` (as git shortens a commit): the whole
    one ran the page's width off its right edge; manifest.json keeps it whole."""
    algo, sep, value = str(digest).partition(":")
    return f"{algo}:{value[:12]}" if sep and len(value) > 12 else str(digest)


def provenance(results: Results) -> dict[str, pd.DataFrame]:
    """The manifest as three tables: ``run`` (corpus, query set, digests, times), ``arms`` (label, spec,
    implementation, parameters, build seconds, model) and ``environment`` (interpreter, packages, machine,
    and the calibration line that says how fast the machine was at the start and end of the run)."""
    m = results.manifest
    c, q = m.get("corpus", {}), m.get("qrels", {})
    run = {"corpus": c.get("name"), "corpus digest": c.get("digest"), "documents": len(c.get("documents", {})),
           "query set": q.get("name"), "query file": q.get("path") or "", "query set digest": q.get("digest"),
           "queries": q.get("queries"), "arm specs": ", ".join(m.get("specs", [])), "depth": m.get("depth"),
           "evalkit": m.get("evalkit"), "started": m.get("started"), "finished": m.get("finished"),
           "status": m.get("status")}
    arms = pd.DataFrame([{
        "arm": a["label"], "spec": a.get("spec"), "implementation": a.get("class"),
        "params": ", ".join(f"{k}={v}" for k, v in a.get("params", {}).items()) or "(none)",
        "build s": a.get("build_seconds"),
        "model": "; ".join(f"{mo.get('name')} ({_short(mo.get('weights'))}, {mo.get('max_tokens')} tokens, "
                           f"window {mo.get('window')})" for mo in a.get("models", [])),
    } for a in m.get("arms", [])]).set_index("arm")
    if not arms["model"].astype(bool).any():
        arms = arms.drop(columns="model")
    env = m.get("environment", {})
    machine = env.get("machine", {})
    mem = machine.get("memory_bytes")
    e = {"python": f"{env.get('python')} ({env.get('implementation')})", "sqlite": env.get("sqlite"),
         "evalkit": env.get("evalkit"),
         **{f"package {k}": v for k, v in env.get("packages", {}).items()},
         "platform": machine.get("platform"), "processor": machine.get("processor"), "cpus": machine.get("cpus"),
         "memory": f"{mem / 2**30:.1f} GiB" if mem else None, "calibration": calibration.summary(env)}
    def as_table(d: dict) -> pd.DataFrame:
        return pd.DataFrame({"value": [("" if v is None else str(v)) for v in d.values()]},
                            index=pd.Index(list(d), name=""))

    return {"run": as_table(run), "arms": arms, "environment": as_table(e)}
