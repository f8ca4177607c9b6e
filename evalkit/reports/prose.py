"""The report's paragraphs: what the run is, what its measures, classes and gains mean, what its
query set can detect, and the conclusion: what the run shows, in words, from paired comparisons of its
arms (Holm-adjusted over the family), its refusals and errors, and the stored gate verdict."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import comparison, planning, resultsdir, stats
from .. import escape as esc
from .. import qrels as _qrels
from ..display import Markdown
from ..results import DEFINITIONS, HEADLINE, Results
from .labels import MEASURE_LABELS, label_note, short_labels
from .queryfile import gains, qrels_file, query_set
from .selection import CONCLUSION_MEASURE, arm_means
from .tables import _answerable, _classes, refusal_counts

def overview(results: Results) -> Markdown:
    """One paragraph: corpus, query set, classes, arms, when and whether the run finished; and the files
    in the results directory that evalkit did not write (listed, never read)."""
    m = results.manifest
    counts = results.per_query.drop_duplicates("query")["class"].value_counts()
    classes = ", ".join(f"{esc.markdown(c)} {counts[c]}" for c in _classes(results.per_query.drop_duplicates("query")))
    when = str(m.get("finished") or m.get("started") or "?").replace("T", " ")
    n = esc.markdown(m["qrels"]["queries"]) + (f", {sum(counts)} measured" if results.ungraded else "")
    text = (f"**Corpus** {esc.code(m['corpus']['name'])} ({len(m['corpus'].get('documents', {}))} documents) · "
            f"**queries** {esc.code(m['qrels']['name'])} ({n}: {classes}) · "
            f"**arms** {', '.join(esc.code(a) for a in results.arms)} · "
            f"**run** {esc.markdown(when)} ({esc.markdown(m.get('status', '?'))}) · "
            f"**results** {esc.code(results.path.name)}")
    if left := results.ungraded_note():
        text += f"\n\n_{esc.markdown(left[0].upper() + left[1:])}._"
    if foreign := resultsdir.foreign(results.path):
        text += (f"\n\n_Not written by evalkit, so not read: {', '.join(esc.code(n) for n in foreign)}._")
    return Markdown(text)


def legend(results: Results) -> Markdown:
    """What the headline columns mean, what the query classes are, what the gains mean."""
    counts = results.per_query.drop_duplicates("query")["class"].value_counts()
    lines = ["**Measures**", ""]
    lines += [f"- **{name}**: {DEFINITIONS[name]}" for name in HEADLINE.values() if name in DEFINITIONS]
    lines += ["", f"**Query classes** (queries {'measured ' if results.ungraded else ''}in this run)", ""]
    lines += [f"- **{c}** ({counts.get(c, 0)}): {d}" for c, d in _qrels.CLASS_LEGEND.items()]
    lines += ["", "**Gains** (graded judgments of a page)", ""]
    lines += [f"- **{g}**: {esc.markdown(d)}" for g, d in sorted(gains(results).items(), reverse=True)]
    path = qrels_file(results)
    if path is None:
        lines += ["", f"_The query file {esc.code(results.manifest['qrels'].get('path') or '(unnamed)')} was not "
                      "found: default gain legend shown._"]
    elif query_set(results) is None:
        lines += ["", f"_The query file {esc.code(results.manifest['qrels']['path'])} has changed since this run._"]
    return Markdown("\n".join(lines))


def power_plan(results: Results, measure: str = "nDCG@10(doc)", delta: float = 0.05) -> Markdown:
    """What this run's query set can detect per class, and the queries it would need to see ``delta``
    (:func:`evalkit.planning.plan` over the run's own per-query scores, every pair of its arms)."""
    if len(results.arms) < 2:
        return Markdown("_One arm only: the spread of paired differences needs two arms to plan with._")
    table = planning.plan(results.per_query, measure, delta)
    return Markdown(f"```\n{planning.text(table, measure, delta)}\n```")


@dataclass(frozen=True)
class Finding:
    """One paired comparison of the conclusion: ``cand`` - ``base`` over the answerable queries."""

    base: str
    cand: str
    result: stats.Comparison
    p_holm: float


def findings(results: Results, reference: str, extra: Sequence[tuple[str, str]] = (),
             measure: str = CONCLUSION_MEASURE, n_resamples: int = stats.RESAMPLES) -> list[Finding]:
    """Every other arm against ``reference`` (and the ``extra`` pairs), paired by query through
    :mod:`evalkit.comparison`, with sign-flip p-values Holm-adjusted over all of them as one family."""
    pairs = [(reference, a) for a in arm_means(results, measure).index if a != reference] + list(extra)
    found = []
    for base, cand in pairs:
        p = comparison.pair(comparison.Side(results, base), comparison.Side(results, cand))
        found.append(stats.paired_compare(*p.values(measure), n_resamples=n_resamples))
    holm = stats.holm(np.array([c.p_value for c in found], dtype=float))
    return [Finding(b, c, r, float(h)) for (b, c), r, h in zip(pairs, found, holm, strict=True)]


def _reading(f: Finding, alpha: float) -> str:
    """What the test decided, and whether the interval says otherwise: ``ahead``/``behind`` (Holm-adjusted
    p below alpha), ``interval only`` (the unadjusted bootstrap CI excludes 0 while the family's adjusted
    test does not separate the arms: a CI is not corrected for the number of comparisons), else ``untold``."""
    r = f.result
    if f.p_holm < alpha:
        return "ahead" if r.mean_delta > 0 else "behind"
    return "interval only" if r.low > 0 or r.high < 0 else "untold"


def _numbers(f: Finding, alpha: float) -> str:
    """A finding's difference and CI, and why the set cannot tell when it cannot."""
    r = f.result
    text = stats.delta_text(r.mean_delta, r.low, r.high)
    if f.p_holm < alpha:
        return text
    if _reading(f, alpha) == "interval only":
        return text + f" (p(Holm) = {f.p_holm:.2g})"
    can_detect = stats.detectable(r.mdd) if r.sd_delta > 0 else math.nan  # not 0 from identical arms
    return text + (f" (|Δ| below the {r.mdd:.3f} this set can detect)" if abs(r.mean_delta) < can_detect
                   else f" (p(Holm) = {f.p_holm:.2g})")


def _refusal_sentence(results: Results) -> str:
    """What refused and what failed, per arm, from the outcomes and error counts."""
    counts = refusal_counts(results)
    n_abs = int(counts[["correct_refusal", "answered_abstain"]].sum(axis=1).max())
    n_ans = int(counts[["answered", "wrongful_refusal"]].sum(axis=1).max())
    refusing = [f"{esc.code(a)} refused {int(r.correct_refusal)} of {n_abs} abstain and {int(r.wrongful_refusal)} "
                f"of {n_ans} answerable queries" for a, r in counts.iterrows() if r.correct_refusal
                + r.wrongful_refusal]
    text = "; ".join(refusing) if refusing else (f"no arm refused: all {n_abs} abstain queries were answered by every "
                                                 "arm"
                                                 if n_abs else "no arm refused (the set has no abstain query)")
    pq = results.per_query
    errors = (pq["outcome"] == "error").groupby(pq["arm"]).sum().reindex(results.arms, fill_value=0)
    failed = [f"{esc.code(a)} {int(n)}" for a, n in errors.items() if n]
    return text + (f". Errors: {', '.join(failed)}." if failed else ". No arm failed on any query.")


def conclusion(results: Results, baseline: str | None = None, measure: str = CONCLUSION_MEASURE,
               alpha: float = stats.ALPHA, n_resamples: int = stats.RESAMPLES) -> Markdown:
    """What the run shows, in words, computed from its per-query results: the arms by mean ``measure``, which
    lead and by how much (paired differences with 95% bootstrap CIs, sign-flip p Holm-adjusted over every
    comparison stated), which differences the set cannot tell, what refused, and the stored gate verdict."""
    means = arm_means(results, measure)
    label = MEASURE_LABELS.get(measure, measure)
    if means.empty:
        return Markdown(f"**Conclusion**: no answerable query, so no {esc.markdown(label)} to rank arms by. "
                        f"Refusal: {_refusal_sentence(results)}")
    lead = str(means.index[0])
    ref = baseline or lead
    extra = [(str(means.index[1]), lead)] if baseline and lead != baseline and len(means) > 2 \
        and means.index[1] != baseline else []
    found = findings(results, ref, extra, measure, n_resamples)
    n = len(_answerable(results).drop_duplicates("query"))
    lines = [f"**Conclusion** ({esc.markdown(label)}, mean over {n} answerable queries; Δ with 95% bootstrap CI, "
             f"paired by query, not adjusted for the comparisons; sign-flip p Holm-adjusted over the {len(found)} "
             f"comparisons below, α = {alpha:g})", "",
             "- **Ranking**: " + " > ".join(f"{esc.code(short_labels(results.arms)[a])} {v:.3f}"
                                            for a, v in means.items())]
    short = short_labels(results.arms)
    def name(a: str) -> str:
        return esc.code(short[a])

    against = [f for f in found if f.base == ref]
    for head, reading in ((f"ahead of {name(ref)}", "ahead"), (f"behind {name(ref)}", "behind"),
                          (f"CI excludes 0 against {name(ref)}, the adjusted test does not", "interval only"),
                          (f"cannot be told from {name(ref)}", "untold")):
        if chosen := [f"{name(f.cand)} {_numbers(f, alpha)}" for f in against if _reading(f, alpha) == reading]:
            lines.append(f"- **{head}**: " + "; ".join(chosen))
    for f in (f for f in found if f.base != ref):
        told = {"ahead": "a lead the set can tell", "behind": "a lead the set can tell",
                "interval only": "its CI excludes 0, but the adjusted test does not tell them apart",
                "untold": "the set cannot tell them apart"}[_reading(f, alpha)]
        lines.append(f"- **Lead**: {name(f.cand)} over {name(f.base)} by {_numbers(f, alpha)}: {told}")
    lines.append(f"- **Refusal**: {_refusal_sentence(results)}")
    lines.append(f"- **Gate**: {_gate_sentence(results)}")
    return Markdown("\n".join(lines + ([f"\n{note}"] if (note := label_note(results.arms)) else [])))


def _gate_sentence(results: Results) -> str:
    from ..gating import MARK, NoVerdict, show

    v = show(results.path)
    if isinstance(v, NoVerdict):
        return f"no verdict ({esc.markdown(v.why)}); `make report` gates the best arm against its baseline"
    def arm(side: str) -> str:
        return esc.code(short_labels([str(v.computed_on[side]["arm"])]).popitem()[1])

    named = [(what, esc.markdown(names)) for what, statuses in (("failed", {"fail", "underpowered"}),
                                                                ("undecided", {"undecided"}))
             if (names := v.named(statuses))]
    return (f"{arm('candidate')} against {arm('baseline')}: **{MARK[v.status]}** ({esc.markdown(v.counts())})"
            + "".join(f"; {what}: {names}" for what, names in named)
            + " (the rules and their numbers: Gate verdict below)")
