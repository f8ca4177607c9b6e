"""The report of a results directory: the helpers behind the report notebook (``evalkit/data/report.ipynb``),
which imports this package as one namespace (``from evalkit import reports as rp``), and :func:`render`, which
executes that notebook headless into ``report.ipynb``, ``report.html`` and ``figures/*.png`` next to the run.

Every helper reads a :class:`~evalkit.results.Results` and returns plain pandas or matplotlib objects, so the
notebook is a list of calls and each helper can be tested on its own: :mod:`~evalkit.reports.tables`,
:mod:`~evalkit.reports.figures`, :mod:`~evalkit.reports.prose` (paragraphs and the conclusion),
:mod:`~evalkit.reports.judge` (the local judge),
:mod:`~evalkit.reports.selection` (which arms a report is about), :mod:`~evalkit.reports.labels`,
:mod:`~evalkit.reports.queryfile` (the query set behind a run) and :mod:`~evalkit.reports.rendering`.

Not ``evalkit.report``: that is ``ek.report``, the function that renders a report, and importing a submodule
sets it as an attribute of its package, so a package of that name would replace the function.
"""
from __future__ import annotations

from ..display import Markdown
from .figures import (arm_colours, fig_class_bars, fig_deltas, fig_latency, fig_refusals, fig_ties, figures_dir,
                      save)
from .judge import judge_agreement, judge_agreement_styled, judge_overview
from .prose import conclusion, legend, overview, power_plan
from .rendering import render
from .selection import resolve_baseline, resolve_pair
from .tables import biggest_changes_styled, class_ci_styled, headline, provenance, refusal_counts, styled, tie_table

__all__ = ["Markdown", "arm_colours", "biggest_changes_styled", "class_ci_styled", "conclusion", "fig_class_bars",
           "fig_deltas", "fig_latency", "fig_refusals", "fig_ties", "figures_dir", "headline", "judge_agreement",
           "judge_agreement_styled", "judge_overview", "legend", "overview", "power_plan", "provenance",
           "refusal_counts", "render", "resolve_baseline", "resolve_pair", "save", "styled", "tie_table"]
