"""Defaults the command line shows in its options and help before it loads the modules that use them: its
help and a command's parsing must not pay for pandas, SciPy and PyMuPDF. Each module re-exports its own."""

DEPTH = 100  # hits kept per query (runner): enough for RR and pooling; measures at 10 read the first 10
HIDDEN_TEXT = ("index", "drop")  # index hidden text like any text (the default), or read visible text only (pages)
COMPARE_MEASURES = ("nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "RR")  # comparison
ROBUSTNESS_MEASURES = ("nDCG@10", "nDCG@10(doc)", "GoldDoc@3", "RR", "RR(doc)", "Recall@10")  # robustness
STRATEGIES = ("depth(k=10)", "depth(k=10,order=rank)", "mtf", "maxmean")  # simulate: pooling strategies replayed

# bench: the built-in arms, the recommended arm (docs/tuning.md: is it within 2x of the arm it extends?) and
# the recommended refusing arm (docs/refusal.md: what admission adds to the arm it wraps)
LATENCY_ARMS = ("keyword", "keyword(tiebreak=page)", "global-index", "score-merge", "semantic", "hybrid",
                "hybrid(keyword=global-index)",
                "hybrid(centroid=2.0,keyword=global-index,profile=0.5,profile_windows=3)",
                "admit(arm=hybrid(keyword=global-index),policy=names(policy=spread,rare=1),threshold=0.0766)")
SCALE_ARMS = ("keyword", "global-index", "semantic", "hybrid", "hybrid(keyword=global-index)")
