"""The ``evalkit`` command: a thin layer over the public API (everything here is callable from a notebook).

It parses, calls the library once and prints. Each command imports what it uses when it runs: ``--help``,
``--version`` and a command that reads one file do not load pandas, SciPy, matplotlib or PyMuPDF."""
from __future__ import annotations

import argparse
import os
import select
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import defaults
from . import escape as esc
from .text import snippet, split_top
from .version import __version__

if TYPE_CHECKING:
    from . import api, qrels
    from .pages import PageStore


Subparsers = Any  # what add_subparsers returns (argparse's _SubParsersAction, a private class)


class UsageError(Exception):
    """Bad input on the command line or in a file it names; printed without a traceback, exit 2."""


def add_corpus_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--corpus", metavar="NAME", help="a corpus from corpora.lock (after `evalkit corpus fetch NAME`)")
    g.add_argument("--docs", metavar="DIR", type=Path, help="any folder of PDFs")
    p.add_argument("--root", type=Path, help="where a --corpus lives (default: the evalkit data dir)")
    add_symlinks_arg(p)
    p.add_argument("--cache", type=Path, help="page store / index database (default: $EVALKIT_CACHE/evalkit.sqlite)")
    add_hidden_text_arg(p)
    p.add_argument("--executor", metavar="ADDRESS", default="local",
                   help="where extraction, embedding and arm runs go: local (in this process, the default) or "
                        "dask://HOST:PORT, a Dask scheduler (see docs/distributed.md)")


def add_symlinks_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read PDFs in the folder that are symbolic links (by default they are listed and left out)")


def add_hidden_text_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hidden-text", choices=defaults.HIDDEN_TEXT, default="index",
                   help="index text no reader sees (invisible, white, tiny) like any text, or drop it "
                        "(visible text only, in a cache of its own: evalkit-visible.sqlite)")


def opening(args: argparse.Namespace) -> dict[str, Any]:
    """How --docs, --root, --cache, --hidden-text and --follow-symlinks open a corpus (:func:`evalkit.api.corpus`'s
    keywords)."""
    return {"docs": args.docs, "root": args.root, "cache": args.cache, "hidden_text": args.hidden_text,
            "follow_symlinks": getattr(args, "follow_symlinks", False)}


def open_corpus(args: argparse.Namespace, quiet: bool = False, store: PageStore | None = None) -> api.OpenCorpus:
    """The corpus named by --corpus/--docs with its pages in the store (``store``, else the one --cache and
    --hidden-text name), as :func:`evalkit.api.corpus` opens it."""
    from . import api

    return api.corpus(args.corpus, progress=not quiet, store=store, **opening(args))


def open_run(args: argparse.Namespace) -> tuple[qrels.QuerySet, api.OpenCorpus]:
    """The query set of --qrels and the corpus it is run on, refused when the judgments do not fit it
    (:func:`evalkit.api.corpus_for`)."""
    from . import api

    qs = api.queries(args.qrels)
    return qs, api.corpus_for(qs, args.corpus, **opening(args))


# ---- corpus ---------------------------------------------------------------------------------------------

def cmd_corpus_fetch(args) -> int:
    from . import corpora

    c = corpora.load(args.name, args.dest)
    written = corpora.fetch(c)
    v = corpora.verify(c)
    print(f"{c.name}: {len(c.documents)} documents in {c.root} ({len(written)} fetched, all sha256 verified)")
    return 0 if not (v.missing or v.changed) else 1


def cmd_corpus_verify(args) -> int:
    from . import corpora

    c = corpora.load(args.name, args.root)
    v = corpora.verify(c)
    for label, names in (("missing", v.missing), ("changed", v.changed), ("extra", v.extra)):
        for n in names:
            print(f"{label}: {n}")
    print(f"{c.name}: {len(c.documents)} pinned, {len(v.missing)} missing, {len(v.changed)} changed, "
          f"{len(v.extra)} extra in {c.root}")
    return 0 if v.ok else 1


def cmd_corpus_lock(args) -> int:
    from . import api

    lock, entry, _ = api.pin(args.name, args.dir, lock=args.lock, description=args.description, cache=args.cache,
                             follow_symlinks=args.follow_symlinks)
    print(f"locked {args.name} in {lock}: {len(entry['document'])} documents, "
          f"{sum(d['pages'] for d in entry['document'])} pages")
    return 0


def cmd_corpus_add(args) -> int:
    from . import api

    opened = api.add_corpus(args.name, args.dir, lock=args.lock, description=args.description, cache=args.cache)
    print(f"{opened.name}: {len(opened.documents)} documents, {opened.corpus.pages} pages, ready as --corpus "
          f"{opened.name}")
    return 0


def cmd_corpus_stats(args) -> int:
    from . import corpora

    if args.name:
        args.corpus, args.docs = args.name, None
    elif not args.docs:
        raise UsageError("give a corpus NAME or --docs DIR")
    opened = open_corpus(args)
    ingest, store = opened.ingest, opened.store
    s = store.stats(ingest.corpus)
    label = ingest.corpus.name
    print(f"corpus      {label}\ndocuments   {s['documents']}\npages       {s['pages']}\n"
          f"characters  {s['characters']}\nempty pages {s['empty_pages']}  (no extractable text)\n"
          f"errors      {len(ingest.errors)}\npage errors {s['page_errors']}  (unreadable pages, kept empty)\n"
          f"hidden text {s['hidden_pages']} pages, {s['hidden_characters']} characters  "
          "(invisible, white or tiny: indexed, but no reader sees it)")
    if args.hidden:
        for d in ingest.corpus.documents:
            report = store.report(d)
            for page, kinds in report.hidden.items():
                print(f"  {d.name}#{page}: {', '.join(f'{n} {k}' for k, n in kinds.items())}: "
                      f"{report.hidden_sample[page]!r}")
    if args.corpus:
        pinned = sum(d.pages for d in corpora.load(args.corpus, args.root).documents)
        print(f"lock pages  {pinned}  ({'matches' if pinned == s['pages'] else 'DOES NOT MATCH'})")
        return 0 if pinned == s["pages"] and not ingest.errors else 1
    return 0


# ---- qrels ----------------------------------------------------------------------------------------------

def _qrels_corpus(args, qs: qrels.QuerySet) -> None:
    """Fill --corpus from the query set's header when neither --corpus nor --docs was given."""
    if not (args.corpus or args.docs):
        if not qs.corpus:
            raise UsageError(f"{args.file} names no corpus in [set]: give --corpus NAME or --docs DIR")
        args.corpus = qs.corpus


def cmd_qrels_check(args) -> int:
    from . import qrels, validity

    qs = qrels.load(args.file)
    _qrels_corpus(args, qs)
    opened = open_corpus(args, quiet=True)
    ingest, store = opened.ingest, opened.store
    pages = store.corpus_texts(ingest.corpus)
    vocab = validity.vocabulary(pages)
    rank = validity.bm25_ranker(ingest.corpus, store) if args.strict or args.verbose else None
    problems = qrels.check(qs, pages, strict=args.strict)
    if args.strict and rank:
        problems += validity.check(qs, pages, rank, vocab)
    for line in qrels.shown(problems):
        print(line)
    for q in qs.by_class().get("abstain", []):
        unknown = validity.unknown_words(q, vocab)
        print(f"  abstain {q.id} [{q.kind or 'no kind'}]: "
              + (f"not in the corpus: {' '.join(sorted(unknown))}" if unknown
                 else "every content word is in the corpus"))
    if args.verbose and rank:
        for q in qs.queries:
            if q.cls == "trap" and q.distractor:
                print(f"  trap {validity.trap_ranks(q, rank(q.text))}")
            if q.cls == "described":
                share, shared = qrels.described_overlap(q, pages)
                best = validity.best_gold(q, rank(q.text))
                print(f"  described {q.id}: overlap {share:.0%} {' '.join(shared)}; "
                      f"BM25 ranks its best gold page at {best[0] if best else 'nowhere'}")
    errors = [p for p in problems if not p.warning]
    counts = {c: len(v) for c, v in qs.by_class().items()}
    pool = (f"pooled from the top {qs.pool_depth} of {', '.join(qs.pool_arms) or '(arms not recorded)'}"
            if qs.pool_depth else "pool depth not recorded in [set]")
    if found := sum(map(len, qs.found.values())):
        pool += f"; {found} page(s) judged outside the pool, found by search"
    print(f"{args.file}: {len(qs.queries)} queries ({', '.join(f'{c} {n}' for c, n in counts.items())}), "
          f"{sum(len(q.judgments) for q in qs.queries)} judgments ({pool}), {len(errors)} problem(s), "
          f"{len(problems) - len(errors)} warning(s)")
    return 1 if errors else 0


def cmd_qrels_plan(args) -> int:
    from . import api, effort, planning, recorded, runner

    qs = api.queries(args.file)
    frame = runner.rescore(qs, args.results)
    try:
        planning.check(frame, args.measure)
    except ValueError as e:
        raise UsageError(f"{args.results} with {args.file}: {e}") from None
    table = planning.plan(frame, args.measure, args.delta)
    print(planning.text(table, args.measure, args.delta))
    if args.judge:
        try:
            predicted = recorded.judge_rows(args.judge, frame, args.results, args.measure)
        except ValueError as e:
            raise UsageError(str(e)) from None
        table = planning.with_judge(frame, predicted, table, args.measure, args.delta)
        print(planning.judge_text(table))
    print(planning.hours_text(table, qs, effort.reading_model(effort.beside(args.file))))
    return 0


def cmd_qrels_regrade(args) -> int:
    from . import judging, qrels

    qs = qrels.load(args.file)
    _qrels_corpus(args, qs)
    out = judging.regrade_file(args.file, open_corpus(args, quiet=True), args.out, args.n, args.seed)
    print(f"{out}: a blind sample of {sum(len(p) for p in qrels.load(out).pooled.values())} judged pages of "
          f"{args.file} for a second assessor; then `evalkit qrels agree {args.file} {out}`")
    return 0


def cmd_qrels_split(args) -> int:
    from . import qrels

    a, b = qrels.write_split(args.file, tuple(args.out), args.seed)
    for out, half in zip(args.out, (a, b), strict=True):
        counts = ", ".join(f"{len(qs)} {c}" for c, qs in half.by_class().items() if qs)
        print(f"{out}: {len(half.queries)} queries of {args.file} ({counts})")
    corpus = a.corpus or "CORPUS"
    print(f"tune on one half, gate on the other, then the reverse: evalkit tune ... --tune-on {corpus}={args.out[0]} "
          f"--held-out {corpus}={args.out[1]}")
    return 0


def cmd_qrels_effort(args) -> int:
    from . import effort, qrels

    qs = qrels.load(args.file)
    log = effort.read(args.log or effort.log_path(args.file))
    print(effort.table(log, effort.effort(log.actions, {q.id: q.cls for q in qs.queries})))
    return 0


def cmd_qrels_agree(args) -> int:
    from . import agreement, qrels

    a, b = qrels.load(args.a), qrels.load(args.b)
    ids_a, ids_b = {q.id for q in a.queries}, {q.id for q in b.queries}
    try:
        rows = agreement.agree(a, b)
    except ValueError as e:
        raise UsageError(f"{args.a} / {args.b}: {e}") from None
    reworded = agreement.worded_differently(a, b)
    print(f"A = {args.a} ({len(ids_a)} queries), B = {args.b} ({len(ids_b)} queries): {len(ids_a & ids_b)} in both, "
          f"{len(ids_a - ids_b)} only in A, {len(ids_b - ids_a)} only in B"
          + (f"; not compared, worded differently: {', '.join(reworded)}" if reworded else ""))
    print(agreement.table(rows).to_string(float_format=lambda v: f"{v:.3f}", na_rep="n/a"))
    print("\nall classes: rows = A's gain, columns = B's gain (pages both judged)")
    print(agreement.confusion_table(rows[-1]).to_string())
    return 0


def cmd_qrels_export(args) -> int:
    from . import qrels

    qs = qrels.load(args.file)
    out = Path(args.out or Path(args.file).with_suffix(""))
    written = []
    for level in ("page", "doc"):
        path = out.with_name(f"{out.name}.{level}.qrels")
        path.write_text(qrels.to_trec(qs, level))
        written.append(path)
    topics = out.with_name(f"{out.name}.topics.tsv")
    topics.write_text(qrels.topics_tsv(qs))
    for p in [*written, topics]:
        print(p)
    return 0


def cmd_qrels_import(args) -> int:
    from . import qrels

    qs = qrels.from_trec(Path(args.qrels).read_text(), Path(args.topics).read_text(),
                         name=args.name or Path(args.out).stem, corpus=args.corpus)
    Path(args.out).write_text(qrels.to_toml(qs))
    print(f"{args.out}: {len(qs.queries)} queries")
    return 0


POOL_ARMS = ["keyword", "global-index", "semantic"]  # `qrels pool`'s arms when neither --arms nor [set] names any


def cmd_qrels_pool(args) -> int:
    from . import arms, pooling, qrels

    qs = qrels.load(args.file)
    _qrels_corpus(args, qs)
    opened = open_corpus(args)
    ingest, store = opened.ingest, opened.store
    docs = {d.name: d for d in ingest.corpus.documents}
    specs = split_top(args.arms, ",") if args.arms else list(qs.pool_arms) or POOL_ARMS
    strat = pooling.strategy(args.strategy or f"depth(k={args.depth or qs.pool_depth or 10})")
    built = [arms.make(spec, ingest.corpus, store) for spec in specs]
    unjudged_total, answerable = 0, {}
    for q in qs.queries:
        judged = [((j.doc, j.page), j.gain) for j in q.judgments]
        rankings = {arm.label: [(h.doc, h.page) for h in arm.search(q.text, max(strat.depth, 10)).hits]
                    for arm in built}
        if q.answerable:
            answerable[q.id] = (rankings, judged)
        pending = set(strat.for_query(q.id).pending(rankings, judged))
        pooled: dict[tuple[str, int], list[str]] = {}
        for label, ranking in rankings.items():
            for rank, page in enumerate(ranking[:strat.depth], 1):
                if page in pending:
                    pooled.setdefault(page, []).append(f"{label}@{rank}")
        if not pooled:
            continue
        unjudged_total += len(pooled)
        t = esc.terminal  # one line per field, whatever the query file or the PDF text holds
        print(f"{t(q.id)} [{t(q.cls)}] {t(q.text)}")
        for (doc, number), where in sorted(pooled.items(), key=lambda kv: -len(kv[1])):
            print(f"    {t(doc)}#{number}  ({t(', '.join(where))})\n        "
                  f"{t(snippet(store.page(docs[doc], number).text, q.text))}")
    print(f"{unjudged_total} unjudged page(s) in the top {strat.depth} of {len(built)} arm(s)"
          + ("" if strat.name == "depth" else f", the next one per query by {strat.label}"))
    if strat.name != "depth" and answerable:
        print(pooling.describe(pooling.set_estimate(answerable, strat.depth)))
    return 0


def cmd_qrels_simulate(args) -> int:
    from . import dirs, effort, qrels, simulate

    if args.judge:
        return _simulate_judge(args)
    qs = qrels.load(args.file)
    rules = None if args.no_gate else args.rules or dirs.rules_path()
    sim = simulate.simulate(qs, args.results, split_top(args.strategies, ","), rules)
    out = args.out or Path(args.results) / "simulation"
    for path in simulate.write(sim, out):
        print(path)
    print(simulate.render(sim, rules, effort.reading_model(effort.beside(args.file))))
    return 0


def _simulate_judge(args) -> int:
    """``qrels simulate --judge``: deciding with few grades, replayed (docs/deciding-with-few-grades.md)."""
    from . import api, replay

    src, _ = api.judge_source(args.file, args.results)
    rep, summary = replay.simulate(src, args.draws, args.seed)
    print(replay.render(rep, summary))
    return 0


def cmd_qrels_judge(args) -> int:
    from . import api
    from .autojudge import model, session

    spec = model.Spec(args.model, args.calibration, args.seed)
    pairs = [pair.partition("=") for pair in args.train_on]
    for file, sep, where in pairs:
        if not sep or not file or not where:
            raise UsageError(f"--train-on wants QRELS=RESULTS, e.g. qrels/rmanuals.toml=results/rmanuals, "
                             f"not {file + sep + where!r}")
    chosen = split_top(args.arms, ",") if args.arms else None
    src, store = api.judge_source(args.file, args.results, arms=chosen, vectors=not args.no_vectors, docs=args.docs)
    others = [api.judge_source(file, where, store=store, arms=chosen, vectors=not args.no_vectors)[0]
              for file, _, where in pairs]
    out = session.run(src, spec, others, args.train_share, args.folds, store.db)
    print(session.render(out))
    for path in session.write(out, args.out or Path(args.results) / "judge", " ".join(["evalkit", *sys.argv[1:]])):
        print(path)
    return 0


def cmd_qrels_draft(args) -> int:
    from . import draft

    opened = open_corpus(args, quiet=True)
    ingest, store = opened.ingest, opened.store
    neighbours = None
    if args.neighbours:
        other = argparse.Namespace(**{**vars(args), "corpus": args.neighbours, "docs": None})
        neighbours = store.corpus_texts(open_corpus(other, quiet=True, store=store).corpus)
    drafts = draft.draft(store.corpus_texts(ingest.corpus), neighbours, args.per_class)
    out = args.out or Path("qrels") / "drafts" / f"{ingest.corpus.name}.toml"
    try:
        draft.write(drafts, ingest.corpus.name, out, args.force)
    except ValueError as e:
        raise UsageError(str(e)) from None
    counts = {c: sum(d.cls == c for d in drafts) for c in draft.CLASSES}
    print(f"{out}: {len(drafts)} drafts ({', '.join(f'{c} {n}' for c, n in counts.items())})"
          + ("" if neighbours else "; no abstain drafts without --neighbours"))
    return 0


def cmd_arms(args) -> int:
    from . import arms

    builtin, known = arms.builtin(), arms.registry()
    for name in sorted(known):
        try:
            cls = known[name]
        except arms.ArmError as e:  # a plug-in that cannot be imported is listed as such, not fatal
            print(f"{name:<14} {e}")
            continue
        origin = "built-in" if name in builtin else f"plug-in {cls.__module__}"
        params = ", ".join(f"{k}={v!r}" for k, v in cls.defaults.items()) or "no parameters"
        doc = (cls.__doc__ or sys.modules[cls.__module__].__doc__ or "").strip().splitlines()
        print(f"{name:<14} {origin}: {params}\n{'':<14} {doc[0] if doc else ''}")
    return 0


def cmd_config(args) -> int:
    from . import config

    if args.name:
        written = config.use_model(args.name, args.dir)
        print(f"model {args.name}" + (f" from {args.dir}" if args.dir else "") + f": written to {written}")
        return 0
    m = config.model()
    print(f"model {m['name'] or '(the semantic arm default)'}" + (f" from {m['dir']}" if m["dir"] else "")
          + f" (environment, else {config.path()})")
    return 0


# ---- search ---------------------------------------------------------------------------------------------

def cmd_search(args) -> int:
    from . import arms, runner

    opened = open_corpus(args)
    ingest, store = opened.ingest, opened.store
    arm = arms.make(args.arm, ingest.corpus, store)
    try:
        result = runner.answer(arm, args.query, args.k)
    finally:
        arm.close()  # an MCP arm's server, a hybrid's parts: not left running until the interpreter exits
    t = esc.terminal  # one line per field, whatever the PDF text or a server's answer holds
    print(f"{t(arm.label)} on {t(ingest.corpus.name)}: {t(repr(args.query))}")
    if result.error:  # a run records it as this query's error: never "no hits"
        print(f"error: {t(result.error)}")
        return 1
    if result.refused:
        print(f"refused: {t(result.reason)}")
        return 0
    if not result.hits:
        print("no hits")
    docs = {d.name: d for d in ingest.corpus.documents}
    for rank, h in enumerate(result.hits, 1):
        text = store.page(docs[h.doc], h.page).text
        print(f"{rank:>3}  {t(h.doc)}#{h.page}  {h.score:.4f}\n     {t(snippet(text, args.query))}")
    return 0


def cmd_page(args) -> int:
    from .judging import escape
    from .records import split_page_id

    try:
        doc, number = split_page_id(args.page)
    except ValueError:
        raise UsageError(f"{args.page!r} is not a page id DOC#N (e.g. booktabs.pdf#6)") from None
    opened = open_corpus(args, quiet=True)
    page = opened.page(doc, number)  # a document or page the corpus lacks: PageError, one line
    print(f"{args.page} of {len(opened.texts(doc))} ({opened.name})\n{escape(page.text)}")
    return 0


# ---- run and summary -------------------------------------------------------------------------------------

def cmd_run(args) -> int:
    from . import api

    res = api.run(args.corpus, args.qrels, split_top(args.arms, ","), args.out, k=args.k, resume=args.resume,
                  **opening(args))
    print(res.table().to_string(float_format=lambda v: f"{v:.3f}", na_rep="n/a"))
    print(f"results: {res.path}")
    return 0


def cmd_robustness(args) -> int:
    from . import api, robustness, runner

    qs, opened = open_run(args)
    try:
        r = robustness.check(opened.corpus, opened.store, qs, args.arm, args.permutations, args.seed, k=args.k,
                             names=split_top(args.measures, ","))
    except ValueError as e:  # a bad arm, measure or permutation count; no answerable query
        raise UsageError(str(e)) from None
    print(r.text())
    print(f"robustness: {r.write(args.out or api.default_out(qs, opened) / 'robustness' / runner.slug(r.arm))}")
    return 0


def cmd_summary(args) -> int:
    from . import resultsdir
    from .results import Results

    res = Results.load(args.results)
    _ = res.manifest  # a damaged manifest is named before the tables are read
    table = res.table(by_class=args.by == "class")
    print(f"{esc.terminal(res.manifest['corpus']['name'])} × {esc.terminal(res.manifest['qrels']['name'])} "
          f"({res.manifest['qrels']['queries']} queries, {resultsdir.status(res.path, res.manifest)})")
    print(table.to_string(float_format=lambda v: f"{v:.3f}", na_rep="n/a"))
    if left := res.ungraded_note():
        print(f"evalkit: note: {esc.terminal(left)}")
    return 0


def cmd_report(args) -> int:
    from . import api

    from nbclient.exceptions import CellExecutionError

    from . import bench

    is_bench = (args.results / "bench.csv").exists()
    try:
        if is_bench:
            html = bench.render(args.results, out_html=args.out)
        else:
            html = api.report(args.results, out_html=args.out, pair=args.pair, baseline_arm=args.baseline_arm)
    except ValueError as e:  # --pair names an arm the run does not have
        raise UsageError(str(e)) from None
    except CellExecutionError as e:  # names the failing cell, its code and the error
        print(f"evalkit: the report notebook failed: {e}", file=sys.stderr)
        return 1
    if is_bench:
        print(f"report:   {html}\nnotebook: {args.results / 'bench.ipynb'}")
    else:
        print(f"report:   {html}\nnotebook: {args.results / 'report.ipynb'}\nfigures:  {args.results / 'figures'}")
    return 0


def cmd_best(args) -> int:
    from .results import Results

    from .reports.selection import best_arm

    try:
        print(best_arm(Results.load(args.results), args.measure, args.besides))
    except (ValueError, KeyError) as e:  # no such arm or measure, or nothing left to choose
        raise UsageError(f"{args.results}: {e}") from None
    return 0


# ---- bench ----------------------------------------------------------------------------------------------

def cmd_bench(args) -> int:
    from . import arms, bench, calibration, config, qrels
    from .arms.semantic import SemanticArm
    from .embeddings import ModelSpec

    if args.compare:
        print(bench.compare_text(*args.compare))
        return 0
    start = bench.begin()
    if not (args.corpus or args.docs):
        args.corpus = "latex"
    if not (args.qrels or args.corpus):
        raise UsageError("--docs needs --qrels: the queries to time")
    qfile = args.qrels or Path("qrels") / f"{args.corpus}.toml"
    queries = [q.text for q in qrels.load(qfile).queries]
    out = args.out or Path("results") / f"bench-{args.corpus or args.docs.name}"
    configured = config.model()
    spec = ModelSpec(configured["name"] or SemanticArm.defaults["model"], configured["dir"] or None,
                     SemanticArm.defaults["max_tokens"],
                     SemanticArm.defaults["window"])
    opened = open_corpus(args, quiet=True)
    ingest, store = opened.ingest, opened.store
    print(f"evalkit bench on {ingest.corpus.name} ({len(ingest.corpus.documents)} documents, {ingest.corpus.pages} "
          "pages), "
          f"{len(queries)} queries from {qfile}; load average {start['load_average_before'][0]:.2f}")
    figures = bench.measure(store, ingest.corpus, queries, split_top(args.arms, ","), runs=args.runs,
                            rounds=args.rounds, embed_docs=args.embed_docs, measure_queries=args.measure_queries,
                            spec=spec, judge=(qfile, args.judge_results) if args.judge_results else None)
    frame = None
    if args.scale:
        sizes = [int(n) for n in args.scale.split(",")]
        args.corpus, args.docs = args.scale_corpus, None
        big = open_corpus(args, quiet=True, store=store).ingest
        sub = bench.nested_subsets(big.corpus, [max(sizes)], args.seed)[0]
        if args.embed:  # the largest subset holds every smaller one
            arms.make("semantic", sub, store)
        print(f"scale on {big.corpus.name}: {sizes} documents (nested, seed {args.seed})")
        frame = bench.scale(store, big.corpus, sizes, queries, split_top(args.scale_arms, ","), seed=args.seed,
                            spec=spec)
        print(bench.exponents(frame).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    env = bench.bench_environment(start)
    bench.write(out, figures, env, frame)
    print(f"calibration: {calibration.summary(env)}")
    print(f"bench: {out / 'bench.csv'}" + (f", {out / 'scale.csv'}, {out / 'scale.png'}" if frame is not None else ""))
    return 0


# ---- compare and gate ----------------------------------------------------------------------------------

def _judge_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--judge`` and ``--qrels``, as compare and gate take them."""
    parser.add_argument("--judge", type=Path, metavar="PREDICTIONS",
                        help="a judge's predictions (csv or parquet: query, doc, page, p_ge1, p_ge2, p_eq3) for a "
                             "query "
                             f"set a person graded in part: {what} (docs/deciding.md)")
    parser.add_argument("--qrels", type=Path, help="with --judge: the query file the runs were scored with (default: "
                                                   "the one the candidate's manifest names)")


def cmd_compare(args) -> int:
    from . import api, comparison

    if args.baseline_arm:
        if len(args.sides) != 1:
            raise UsageError("with --baseline-arm ARM give one results directory: evalkit compare DIR --baseline-arm "
                             "ARM")
        base = comparison.side(args.sides[0], args.baseline_arm)
        cands = [comparison.side(args.sides[0], a) for a in base.results.arms if a != base.arm]
    elif len(args.sides) == 2:
        base, cands = comparison.side(args.sides[0]), [comparison.side(args.sides[1])]
    else:
        raise UsageError("give BASE and CAND (each DIR:ARM, or DIR holding one arm), or DIR --baseline-arm ARM")
    measures = tuple(split_top(args.measures, ","))
    if args.judge:
        from . import judged

        for c in cands:
            p, judge = api.judged_pair(base, c, args.judge, args.qrels, args.allow_different_queries)
            for note in comparison.notes(p):
                print(f"evalkit: warning: {note}", file=sys.stderr)
            print(judged.render(p, judged.compare(p, judge, measures), measures))
        return 0
    pairs = [comparison.pair(base, c, args.allow_different_queries) for c in cands]
    for p in pairs:
        for note in comparison.notes(p):
            print(f"evalkit: warning: {note}", file=sys.stderr)
    print(comparison.render(pairs, measures, n_resamples=args.resamples, seed=args.seed))
    return 0


@contextmanager
def unrecorded_verdicts() -> Iterator[None]:
    """A verdict the library could not write to gate.json (:class:`evalkit.gating.NotRecorded`) as one
    line on stderr after the block: it is still the verdict, and the exit code is still its own."""
    import warnings

    from .gating import NotRecorded

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", NotRecorded)
        yield
    for w in said:
        if issubclass(w.category, NotRecorded):
            print(f"evalkit: warning: {esc.terminal(w.message)}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def cmd_gate(args) -> int:
    from . import api

    with unrecorded_verdicts():
        verdict = api.gate(args.baseline, args.candidate, args.rules, cache=args.cache, log=print,
                           allow_different_queries=args.allow_different_queries, judge=args.judge, queries=args.qrels,
                           undecided=args.undecided)  # recorded for the report
        print(verdict.text())
    outputs = [(args.json, verdict.to_json), (args.junit, verdict.junit), (args.markdown, verdict.markdown)]
    for path, render in outputs:
        if path:
            try:
                Path(path).write_text(render())
            except OSError as e:
                raise UsageError(f"cannot write {path}: {e.strerror}") from None
    return verdict.exit_code


# ---- tune ------------------------------------------------------------------------------------------------


def _query_set_on(args, where: str):
    """``CORPUS=QRELS`` (a corpus of the lock, or a folder of PDFs, and its query file), opened and checked as
    `evalkit run` does."""
    from .tune import QuerySetOn

    name, eq, path = where.partition("=")
    if not eq or not name or not path:
        raise UsageError(f"want CORPUS=QRELS, e.g. latex=qrels/latex.toml, not {where!r}")
    folder = Path(name).is_dir()
    one = argparse.Namespace(**{**vars(args), "corpus": None if folder else name,
                                "docs": Path(name) if folder else None,
                                "qrels": Path(path)})
    qs, opened = open_run(one)
    return QuerySetOn(opened.corpus, opened.store, qs)


def cmd_tune(args) -> int:
    from . import runner
    from .tune import TuneError, grid, tune

    axes = {}
    for g in args.grid:
        key, eq, values = g.partition("=")
        if not eq or not split_top(values, ","):
            raise UsageError(f"--grid wants NAME=V1,V2,..., not {g!r}")
        axes[key.strip()] = split_top(values, ",")
    candidates = grid(args.arm, axes) if axes else split_top(args.arm, ",")
    checked = runner.check_arms(candidates, args.k)  # before a corpus opens
    try:
        with unrecorded_verdicts():
            tuned = tune(checked, _query_set_on(args, args.tune_on), _query_set_on(args, args.held_out), args.out,
                         args.measure, args.baseline_arm, args.rules, args.k,
                         keep=dict.fromkeys(args.keep, args.keep_margin))
    except TuneError as e:
        raise UsageError(str(e)) from None
    print(tuned.text())
    return tuned.exit_code


def cmd_learn(args) -> int:
    from .arms.learned import fit

    qs, opened = open_run(args)
    print(fit(opened.corpus, opened.store, qs.queries, seed=args.seed, negatives=args.negatives))
    return 0


# ---- refusal ---------------------------------------------------------------------------------------------

REFUSAL_ACTIONS = ("show", "calibrate", "fit")


def cmd_refusal_show(args) -> int:
    from . import refusal_report
    from .results import Results

    try:
        print(refusal_report.text(Results.load(args.results), args.arm, args.threshold, curve=args.curve))
    except refusal_report.RefusalError as e:
        raise UsageError(str(e)) from None
    return 0


def cmd_refusal_calibrate(args) -> int:
    from . import refusal_report
    from .results import Results

    res = Results.load(args.results)
    try:
        spec, m = refusal_report.calibrated(res, args.arm, args.max_wrongful)
    except (refusal_report.RefusalError, ValueError) as e:
        raise UsageError(str(e)) from None
    print(f"threshold chosen on {res.manifest['qrels']['name']} for wrongful refusal <= {args.max_wrongful:g}; "
          f"here (self-tuned, optimistic): correct refusal {m['correct_refusal']}, "
          f"wrongful refusal {m['wrongful_refusal']}")
    print(spec)
    return 0


def cmd_refusal_fit(args) -> int:
    from . import qrels

    from .arms.policies import fit_evidence, make_policy

    qs = qrels.load(args.qrels)
    args.file = args.qrels
    _qrels_corpus(args, qs)
    opened = open_corpus(args, quiet=True)
    policy = make_policy(args.policy, opened.ingest.corpus, opened.store)
    try:
        policy.params["weights"] = fit_evidence(policy, qs.queries)
    except TypeError as e:  # not the evidence policy
        raise UsageError(str(e)) from None
    except ValueError as e:
        raise UsageError(f"{args.qrels}: {e}") from None
    print(f"fitted on {qs.name} ({len(qs.queries)} queries)")
    print(policy.label)
    return 0


def refusal_argv(argv: list[str]) -> list[str]:
    """``evalkit refusal RESULTS ...`` is ``evalkit refusal show RESULTS ...``."""
    if len(argv) >= 2 and argv[0] == "refusal" and argv[1] not in (*REFUSAL_ACTIONS, "-h", "--help"):
        return [argv[0], "show", *argv[1:]]
    return argv


# ---- the parser -----------------------------------------------------------------------------------------

# `--baseline` is a results directory and its arm (DIR:ARM) in gate; where an option names an arm alone it is
# --baseline-arm, as ek.gate's and ek.compare's baseline_arm
OLD_NAME = " (--baseline: its old name, until the next release)"


def parser() -> argparse.ArgumentParser:
    """The whole command line, one group of commands at a time (docs/cli.md is rendered from it)."""
    p = argparse.ArgumentParser(prog="evalkit", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"evalkit {__version__}")
    p.add_argument("--debug", action="store_true", help="let errors through with their Python traceback")
    sub = p.add_subparsers(dest="command", required=True)
    _corpus_commands(sub)
    qp = sub.add_parser("qrels", help="check, export and import graded query sets").add_subparsers(dest="action",
                                                                                                   required=True)
    for group in (_qrels_grading, _qrels_exchange, _qrels_pooling, _qrels_judging):
        group(qp)
    for commands in (_look_commands, _run_commands, _bench_command, _results_commands, _compare_commands,
                     _tune_commands, _refusal_commands):
        commands(sub)
    return p


def _corpus_commands(sub: Subparsers) -> None:
    cp = sub.add_parser("corpus", help="fetch, verify, lock and describe corpora").add_subparsers(dest="action",
                                                                                                  required=True)
    f = cp.add_parser("fetch", help="materialise a pinned corpus into a folder, verifying every sha256")
    f.add_argument("name")
    f.add_argument("--dest", type=Path, help="target folder (default: <data dir>/corpora/NAME)")
    f.set_defaults(func=cmd_corpus_fetch)
    v = cp.add_parser("verify", help="report missing / changed / extra files; exit 1 if any")
    v.add_argument("name")
    v.add_argument("--root", type=Path)
    v.set_defaults(func=cmd_corpus_verify)
    for action, func, about in (
            ("lock", cmd_corpus_lock,
             "write or update a lock entry from a folder of PDFs (paths relative to the lock)"),
            ("add", cmd_corpus_add, "a folder of your own PDFs as a corpus in one step: pinned in ./corpora.lock "
                                    "(paths relative to it), read from the folder itself, no fetch needed")):
        lk = cp.add_parser(action, help=about)
        lk.add_argument("name")
        lk.add_argument("dir", type=Path)
        lk.add_argument("--lock", type=Path, help="lock file (default: ./corpora.lock)")
        lk.add_argument("--description")
        lk.add_argument("--cache", type=Path)
        add_symlinks_arg(lk)
        lk.set_defaults(func=func)
    st = cp.add_parser("stats", help="documents, pages, characters, empty pages, extraction errors")
    st.add_argument("name", nargs="?")
    st.add_argument("--docs", type=Path)
    st.add_argument("--root", type=Path)
    st.add_argument("--cache", type=Path)
    st.add_argument("--hidden", action="store_true", help="list every page holding hidden text")
    add_symlinks_arg(st)
    add_hidden_text_arg(st)
    st.set_defaults(func=cmd_corpus_stats, corpus=None)


def _qrels_grading(qp: Subparsers) -> None:
    """check, agree, effort, regrade, split: a query set's grades and the people who gave them."""
    ck = qp.add_parser("check", help="validate a query file against its corpus; exit 1 on any problem")
    ck.add_argument("file", type=Path)
    add_corpus_args(ck, required=False)
    ck.add_argument("--strict", action="store_true",
                    help="also require evidence found on its page, limited described overlap, live traps, "
                         "abstain kinds and mix, and no wording lifted from judged pages (qrels/README.md)")
    ck.add_argument("-v", "--verbose", action="store_true",
                    help="also print, per trap, the best distractor and gold ranks under corpus-wide BM25, and per "
                         "described query its overlap and its best gold rank")
    ck.set_defaults(func=cmd_qrels_check)
    ag = qp.add_parser("agree", help="assessor agreement of two gradings: weighted kappa, exact agreement, confusion")
    ag.add_argument("a", type=Path, help="the first assessor's query file")
    ag.add_argument("b", type=Path, help="the second assessor's query file (e.g. a regraded sample)")
    ag.set_defaults(func=cmd_qrels_agree)
    ef = qp.add_parser("effort", help="a person's judging time from the workbench's time log: person-seconds per "
                                      "query written, draft accepted and page graded, by class and by display")
    ef.add_argument("file", type=Path, help="the query file (its classes; the log is .FILE.time beside it)")
    ef.add_argument("--log", type=Path, help="the time log (default: .FILE.time beside the query file)")
    ef.set_defaults(func=cmd_qrels_effort)
    rg = qp.add_parser("regrade", help="a second assessor's file: a blind random sample of the judged pages, "
                                       "grades blank, to judge in its own workbench and compare with `qrels agree`")
    rg.add_argument("file", type=Path)
    rg.add_argument("--out", required=True, type=Path, help="the second assessor's query file (must not exist)")
    rg.add_argument("-n", type=at_least(1), default=20, help="pages in the sample (default 20)")
    rg.add_argument("--seed", type=int, default=0, help="the sample's random seed (default 0)")
    add_corpus_args(rg, required=False)
    rg.set_defaults(func=cmd_qrels_regrade)
    sp = qp.add_parser("split", help="two disjoint halves of a query set, stratified by class, to tune on one and "
                                     "gate on the other (`evalkit tune`) when there is one set")
    sp.add_argument("file", type=Path)
    sp.add_argument("--out", nargs=2, required=True, type=Path, metavar=("A", "B"),
                    help="the two halves' query files (must not exist)")
    sp.add_argument("--seed", type=int, default=0, help="the split's random seed (default 0)")
    sp.set_defaults(func=cmd_qrels_split)


def _qrels_exchange(qp: Subparsers) -> None:
    """export, import: TREC files."""
    ex = qp.add_parser("export", help="write TREC qrels (page and document level) and a topics file")
    ex.add_argument("file", type=Path)
    ex.add_argument("--format", choices=["trec"], default="trec")
    ex.add_argument("--out", help="path prefix (default: FILE without .toml)")
    ex.set_defaults(func=cmd_qrels_export)
    im = qp.add_parser("import", help="build a query file from page-level TREC qrels and a topics file")
    im.add_argument("qrels", type=Path)
    im.add_argument("topics", type=Path, help="id<TAB>text or id<TAB>class<TAB>text per line")
    im.add_argument("--out", required=True, type=Path)
    im.add_argument("--name")
    im.add_argument("--corpus", help="corpus name to record in [set]")
    im.set_defaults(func=cmd_qrels_import)


def _qrels_pooling(qp: Subparsers) -> None:
    """pool, plan, simulate: which pages to judge next, and how many queries a set needs."""
    po = qp.add_parser("pool", help="list retrieved pages that have no judgment, to complete a query set")
    po.add_argument("file", type=Path)
    add_corpus_args(po, required=False)
    po.add_argument("--arms", help="comma-separated arm specs (default: the set's [set] pool_arms, else "
                                   f"{','.join(POOL_ARMS)})")
    po.add_argument("--depth", type=at_least(1), help="top k of each arm (default: the set's [set] pool_depth, else "
                                                      "10)")
    po.add_argument("--strategy", help="pooling strategy spec: depth(k=10) (the default: every unjudged page of the "
                                       "pool), mtf(k=10), maxmean(k=10) or judge(predictions=PATH) (the next page each "
                                       "query's judgments, or the "
                                       "judge's predictions of `qrels judge`, call for)")
    po.set_defaults(func=cmd_qrels_pool)
    pl = qp.add_parser("plan", help="the power planner: per class, the MDD the set can see now and the queries "
                                    "needed to see a chosen Δ, from the arms' answers in a results directory")
    pl.add_argument("file", type=Path)
    pl.add_argument("--results", type=Path, required=True, help="a results directory of two or more arms")
    pl.add_argument("--measure", default="nDCG@10(doc)")
    pl.add_argument("--delta", type=float, default=0.05, help="the difference to detect (default 0.05)")
    pl.add_argument("--judge", type=Path, metavar="PREDICTIONS", help="a judge's predictions (csv or parquet: query, "
                    "doc, page, p_ge1, p_ge2, p_eq3): how many queries to grade whole when it predicts the rest")
    pl.set_defaults(func=cmd_qrels_plan)
    si = qp.add_parser("simulate", help="replay judging with the recorded judgments as the assessor: pages read per "
                                        "pooling strategy against the arms' order and the gate's decisions")
    si.add_argument("file", type=Path)
    si.add_argument("--results", required=True, type=Path, help="a results directory run with this query set")
    si.add_argument("--strategies", default=",".join(defaults.STRATEGIES),
                    help="comma-separated pooling strategy specs")
    si.add_argument("--rules", type=Path, help="the gate rules whose decisions must not change (default: ./gate.toml, "
                                               "else the rules shipped with evalkit)")
    si.add_argument("--no-gate", action="store_true", help="do not check gate decisions (faster)")
    si.add_argument("--out", type=Path, help="where the tables and the figure go (default: RESULTS/simulation)")
    si.add_argument("--judge", action="store_true", help="instead: replay deciding with few grades with the local "
                    "judge, at 1, 2, 3, 5 and 10 person-graded pages per query (whole queries at random), the judge "
                    "refitted in each draw on the graded queries only; coverage and verdicts against the full "
                    "judgments")
    si.add_argument("--draws", type=at_least(1), default=20,
                    help="with --judge: random draws per budget (default 20)")
    si.add_argument("--seed", type=int, default=0, help="with --judge: the draws' seed")
    si.set_defaults(func=cmd_qrels_simulate)


def _qrels_judging(qp: Subparsers) -> None:
    """judge, draft: the local judge's grades, and candidate queries drawn from the corpus."""
    ju = qp.add_parser("judge", help="the local judge: its predicted grades for every pooled page, and its agreement "
                                     "with the person's grades on queries it did not train on, per class "
                                     "(docs/judge.md)")
    ju.add_argument("file", type=Path)
    ju.add_argument("--results", required=True, type=Path, help="a results directory run with this query set")
    ju.add_argument("--docs", type=Path, metavar="DIR", help="the folder of PDFs the run read, for a run of a folder "
                    "(`evalkit run --docs DIR`) rather than of a corpus in a lock file")
    ju.add_argument("--train-on", action="append", default=[], metavar="QRELS=RESULTS",
                    help="train on another query file with its results directory (repeatable); without it and "
                         "without --train-share, the judge is cross-fitted by query on FILE itself")
    ju.add_argument("--train-share", type=between(0, 1), metavar="F",
                    help="train on this share of FILE's queries (per class), test on the rest (e.g. 0.2)")
    ju.add_argument("--folds", type=at_least(2), default=5, help="cross-fitting folds, by query (default 5)")
    ju.add_argument("--model", default="hgb", choices=["hgb", "logistic"], help="boosted trees (default) or logistic")
    ju.add_argument("--calibration", default="isotonic", choices=["isotonic", "platt", "none"])
    ju.add_argument("--arms", help="comma-separated arm labels whose ranks the judge reads and whose top pages are "
                                   "pooled (default: every arm of RESULTS)")
    ju.add_argument("--no-vectors", action="store_true", help="no semantic signal: for a corpus whose pages are not "
                                                              "embedded (the judge reads words, position and ranks)")
    ju.add_argument("--seed", type=int, default=0)
    ju.add_argument("--out", type=Path, help="where predictions.parquet and judge.json go (default: RESULTS/judge)")
    ju.set_defaults(func=cmd_qrels_judge)
    dr = qp.add_parser("draft", help="candidate queries from the corpus itself (no language model), for an assessor to "
                                     "edit")
    add_corpus_args(dr)
    dr.add_argument("--neighbours", metavar="NAME", help="a neighbouring corpus whose names and headings this one "
                                                          "lacks (abstain drafts)")
    dr.add_argument("--per-class", type=at_least(1), default=30)
    dr.add_argument("--out", type=Path, help="the drafts file (default: qrels/drafts/<corpus>.toml)")
    dr.add_argument("--force", action="store_true", help="overwrite an existing drafts file")
    dr.set_defaults(func=cmd_qrels_draft)


def _look_commands(sub: Subparsers) -> None:
    """config, arms, search, page: settings, the arms there are, and one query or one page looked at."""
    cf = sub.add_parser("config", help="settings kept once for every command and notebook (the embedding model)")
    cf.add_argument("setting", choices=["model"])
    cf.add_argument("name", nargs="?", help="the model's name (without it: print the current setting)")
    cf.add_argument("--dir", default="", help="load it from this folder, or `packaged` (all-MiniLM-L6-v2 from "
                                              "PyPI packages: docs/getting-started.md, 'Offline model')")
    cf.set_defaults(func=cmd_config)
    ar = sub.add_parser("arms", help="list the arms this installation knows, with their parameters")
    ar.set_defaults(func=cmd_arms)
    se = sub.add_parser("search", help="run one arm on one query and print ranked pages with snippets")
    se.add_argument("query")
    add_corpus_args(se)
    se.add_argument("--arm", default="keyword", help="an arm spec, e.g. hybrid or keyword(idf_scope=corpus)")
    se.add_argument("-k", type=at_least(1), default=10)
    se.set_defaults(func=cmd_search)
    pg = sub.add_parser("page", help="print a whole page as the arms see it (the page store's text), to judge it")
    pg.add_argument("page", metavar="DOC#N", help="a page id, e.g. booktabs.pdf#6 (1-based, physical)")
    add_corpus_args(pg)
    pg.set_defaults(func=cmd_page)


def _run_commands(sub: Subparsers) -> None:
    rn = sub.add_parser("run", help="run arms over a query set into a results directory")
    add_corpus_args(rn)
    rn.add_argument("--qrels", required=True, type=Path)
    rn.add_argument("--arms", default="keyword,global-index,score-merge,semantic,hybrid",
                    help="comma-separated arm specs")
    rn.add_argument("--out", type=Path, help="results directory (default: results/<corpus>)")
    rn.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    rn.add_argument("-k", type=at_least(1), default=defaults.DEPTH, help="hits kept per query")
    rn.set_defaults(func=cmd_run)


def _bench_command(sub: Subparsers) -> None:
    be = sub.add_parser("bench",
                        help="speed: extraction, embedding, per-arm latency, measures; --scale: the cost curve")
    add_corpus_args(be, required=False)  # default: --corpus latex
    be.add_argument("--qrels", type=Path, help="queries to time (default: qrels/<corpus>.toml)")
    be.add_argument("--out", type=Path, help="bench directory (default: results/bench-<corpus>)")
    be.add_argument("--arms", default=",".join(defaults.LATENCY_ARMS))
    be.add_argument("--runs", type=int, default=3, help="cold extraction runs (the median is reported)")
    be.add_argument("--rounds", type=int, default=3, help="timed passes over the queries per arm and k")
    be.add_argument("--embed-docs", type=int, default=5, help="documents for the cold embedding figure (0: skip)")
    be.add_argument("--measure-queries", type=int, default=10_000,
                    help="random queries for measures vs pytrec_eval (0: skip)")
    be.add_argument("--scale", metavar="N,N,…", help="nested subset sizes for the cost curve, e.g. 25,50,100,200,400")
    be.add_argument("--scale-corpus", default="texdocs", metavar="NAME", help="corpus the subsets are drawn from")
    be.add_argument("--scale-arms", default=",".join(defaults.SCALE_ARMS))
    be.add_argument("--embed", action="store_true", help="embed the largest subset first (else vector arms need cached "
                                                         "vectors)")
    be.add_argument("--seed", type=int, default=0)
    be.add_argument("--judge-results", type=Path, metavar="DIR",
                    help="also time the local judge: training on 500 grades and warm judging per page, over this "
                         "results directory of the corpus run with --qrels")
    be.add_argument("--compare", nargs=2, type=Path, metavar=("DIR1", "DIR2"),
                    help="print two bench directories' figures side by side, absolute and calibrated, and stop")
    be.set_defaults(func=cmd_bench)


def _results_commands(sub: Subparsers) -> None:
    """robustness, summary, report, best: what one run says."""
    rb = sub.add_parser("robustness", help="rename every document at random, re-run one arm and report how far "
                                           "each measure moves (a name-independent arm moves 0)")
    add_corpus_args(rb)
    rb.add_argument("--qrels", required=True, type=Path)
    rb.add_argument("--arm", required=True, help="an arm spec, e.g. keyword or hybrid(keyword=global-index)")
    rb.add_argument("--permutations", type=int, default=5, help="random renamings (default: 5)")
    rb.add_argument("--seed", type=int, default=0)
    rb.add_argument("--measures", default=",".join(defaults.ROBUSTNESS_MEASURES), help="comma-separated measure names")
    rb.add_argument("--out", type=Path, help="folder for robustness.json (default: results/<corpus>/robustness/<arm>)")
    rb.add_argument("-k", type=int, default=defaults.DEPTH, help="hits kept per query")
    rb.set_defaults(func=cmd_robustness)
    sm = sub.add_parser("summary", help="print the comparison table of a results directory")
    sm.add_argument("results", type=Path)
    sm.add_argument("--by", choices=["class"], help="one row per arm and class")
    sm.set_defaults(func=cmd_summary)
    rp = sub.add_parser("report", help="execute the report notebook on a results directory (or a bench directory): "
                                       "HTML, notebook, figures")
    rp.add_argument("results", type=Path)
    rp.add_argument("--out", type=Path, help="HTML file (default: RESULTS/report.html)")
    rp.add_argument("--pair", metavar="A,B", help="two arms for the per-query deltas (default: the best arm vs the "
                                                  "baseline)")
    rp.add_argument("--baseline-arm", "--baseline", metavar="ARM",
                    help="the arm the conclusion compares against (default: the baseline of RESULTS/gate.json)"
                         + OLD_NAME)
    rp.set_defaults(func=cmd_report)
    be = sub.add_parser("best", help="print the arm with the highest mean of a measure over answerable queries")
    be.add_argument("results", type=Path)
    be.add_argument("--measure", default="nDCG@10(doc)", help="the measure to rank arms by")
    be.add_argument("--besides", metavar="ARM", help="leave this arm out (a baseline: gate the best other arm)")
    be.set_defaults(func=cmd_best)


def _compare_commands(sub: Subparsers) -> None:
    co = sub.add_parser("compare", help="paired per-query comparison of two arms: Δ, CI, p, Holm, win/tie/loss, MDD")
    co.add_argument("sides", nargs="+", metavar="SIDE", help="BASE CAND, each DIR:ARM (or DIR holding one arm); or DIR "
                                                             "with --baseline-arm")
    co.add_argument("--baseline-arm", "--baseline", metavar="ARM",
                    help="compare every other arm of DIR against ARM" + OLD_NAME)
    co.add_argument("--measures", default=",".join(defaults.COMPARE_MEASURES), help="comma-separated measures")
    co.add_argument("--allow-different-queries", action="store_true",
                    help="compare the queries two different query sets share (the rest are listed)")
    co.add_argument("--resamples", type=int, default=10_000, help="bootstrap and sign-flip resamples (seeded)")
    co.add_argument("--seed", type=int, default=0)
    _judge_options(co, "each difference the judge can predict with its prediction-powered interval and how many more "
                       "queries to grade whole to decide it")
    co.set_defaults(func=cmd_compare)
    ga = sub.add_parser("gate", help="decide whether a candidate may replace a baseline: exit 0 pass, 1 fail, 2 cannot "
                                     "tell")
    ga.add_argument("--baseline", required=True, metavar="DIR:ARM",
                    help="results directory and arm (DIR alone: its only arm)")
    ga.add_argument("--candidate", required=True, metavar="DIR:ARM")
    ga.add_argument("--rules", type=Path, help="rules file (default: ./gate.toml, else the rules shipped with evalkit)")
    ga.add_argument("--json", type=Path, metavar="FILE", help="also write the verdict as JSON")
    ga.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML, one test case per rule")
    ga.add_argument("--markdown", type=Path, metavar="FILE", help="also write Markdown (e.g. $GITHUB_STEP_SUMMARY)")
    _judge_options(ga, "rules on measures answer pass, fail or undecided (naming the queries to grade next), from "
                       "the person's graded queries corrected by the judge")
    ga.add_argument("--undecided", choices=("fail", "pass"), default="fail",
                    help="what an undecided rule does: fail (exit 1, the default: CI must not ship on an undecided "
                         "verdict) or pass (exit 0)")
    ga.add_argument("--allow-different-queries", action="store_true",
                    help="gate on the queries two different query sets share (the rest are listed)")
    ga.add_argument("--cache", type=Path, help="page store the latency rule re-times the arms on "
                                               "(default: $EVALKIT_CACHE/evalkit.sqlite)")
    ga.set_defaults(func=cmd_gate)


def _tune_commands(sub: Subparsers) -> None:
    tu = sub.add_parser("tune", help="sweep an arm's parameters on one query set, gate the choice on another")
    tu.add_argument("--arm", required=True, help="the arm to sweep (with --grid), or comma-separated candidate specs")
    tu.add_argument("--grid", action="append", default=[], metavar="NAME=V1,V2",
                    help="values of one parameter of --arm; repeat for more (every combination runs)")
    tu.add_argument("--tune-on", required=True, metavar="CORPUS=QRELS",
                    help="where the candidates run and one is chosen "
                    "(CORPUS: a corpus of the lock or a folder of PDFs)")
    tu.add_argument("--held-out", required=True, metavar="CORPUS=QRELS", help="where the chosen arm is gated")
    tu.add_argument("--measure", default="nDCG@10(doc)",
                    help="what the choice maximises (mean over answerable queries)")
    tu.add_argument("--baseline-arm", "--baseline", default="hybrid(keyword=global-index)", metavar="SPEC",
                    help="the arm the chosen one is gated against" + OLD_NAME)
    tu.add_argument("--keep", action="append", default=[], metavar="MEASURE",
                    help="choose only among arms whose mean of MEASURE on the tuning set is at least the baseline's "
                         "minus --keep-margin (e.g. choose by nDCG@10(doc) keeping nDCG@10); repeat for more")
    tu.add_argument("--keep-margin", type=float, default=0.02, help="how far below the baseline a kept measure may "
                                                                    "fall (default 0.02, the shipped gate's margin)")
    tu.add_argument("--rules", type=Path, help="rules file (default: ./gate.toml, else the rules shipped with evalkit)")
    tu.add_argument("--out", type=Path, default=Path("results/tune"), help="results directories go here")
    tu.add_argument("-k", type=at_least(1), default=defaults.DEPTH, help="hits kept per query")
    tu.add_argument("--root", type=Path, help="where the corpora live (default: the evalkit data dir)")
    tu.add_argument("--cache", type=Path, help="page store / index database (default: $EVALKIT_CACHE/evalkit.sqlite)")
    add_hidden_text_arg(tu)
    tu.set_defaults(func=cmd_tune)
    le = sub.add_parser("learn", help="fit the learned arm's weights on a development query set; print its spec")
    add_corpus_args(le)
    le.add_argument("--qrels", required=True, type=Path)
    le.add_argument("--seed", type=int, default=0, help="draws the negative pages of each query")
    le.add_argument("--negatives", type=at_least(1), default=50, help="non-relevant candidate pages kept per query")
    le.set_defaults(func=cmd_learn)


def _refusal_commands(sub: Subparsers) -> None:
    rf = sub.add_parser("refusal", help="refusal measures of arms that record a confidence; calibrate; fit",
                        description="evalkit refusal [show] RESULTS --arm SPEC | calibrate RESULTS --arm SPEC "
                                    "--max-wrongful R | fit --qrels FILE").add_subparsers(dest="action", required=True)
    sh = rf.add_parser("show", help="correct and wrongful refusal with Wilson intervals, AUROC, AURC, nAUC")
    sh.add_argument("results", type=Path)
    sh.add_argument("--arm", required=True, help="an admit(...) arm of the run (its label or spec)")
    sh.add_argument("--threshold", type=float, help="evaluate this threshold instead of the arm's own")
    sh.add_argument("--curve", action="store_true", help="also print the trade-off at every threshold")
    sh.set_defaults(func=cmd_refusal_show)
    ca = rf.add_parser("calibrate", help="choose a threshold for a target wrongful-refusal rate; print the spec")
    ca.add_argument("results", type=Path)
    ca.add_argument("--arm", required=True, help="an admit(...) arm of the run, best run record-only (no threshold)")
    ca.add_argument("--max-wrongful", type=float, default=0.05, help="highest wrongful-refusal rate allowed")
    ca.set_defaults(func=cmd_refusal_calibrate)
    fi = rf.add_parser("fit", help="fit the evidence policy's weights on a development query set; print the policy")
    fi.add_argument("--qrels", required=True, type=Path)
    add_corpus_args(fi, required=False)
    fi.add_argument("--policy", default="evidence", help="an evidence(...) policy spec (its other parameters are kept)")
    fi.set_defaults(func=cmd_refusal_fit)


def _number(text: str, whole: bool, low: float, high: float | None) -> float:
    want = "a whole number" if whole else f"a number between {low:g} and {high:g}"
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"want {want}, not {text!r}") from None
    if high is None and value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low:g}, not {value}")
    if high is not None and not low < value < high:
        raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}, not {value}")
    return value


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type for counts: -k (a negative k would cut hits from the end, 0 keeps none), folds (one
    fold would train on nothing)."""
    return lambda text: int(_number(text, True, low, None))


def between(low: float, high: float) -> Callable[[str], float]:
    """An argparse type for a share strictly between ``low`` and ``high``."""
    return lambda text: _number(text, False, low, high)


# the library's errors that are bad input, by the module that defines each: a command that never loaded the
# module cannot have raised its error, so telling them apart loads nothing
BAD_INPUT = {"evalkit.corpora": "CorpusError", "evalkit.config": "ConfigError", "evalkit.qrels": "QrelsError",
             "evalkit.specs": "ArmError", "evalkit.arms": "ArmFailure", "evalkit.runner": "RunError",
             "evalkit.resultsdir": "ResultsError", "evalkit.cache": "CacheError",
             "evalkit.comparison": "CompareError", "evalkit.executor": "ExecutorError",
             "evalkit.judging_file": "JudgingError", "evalkit.autojudge.features": "FeatureError",
             "evalkit.autojudge.model": "JudgeModelError"}


def bad_input(e: Exception) -> bool:
    return isinstance(e, UsageError) or any(isinstance(e, getattr(sys.modules[m], name))
                                            for m, name in BAD_INPUT.items() if m in sys.modules)


def _dispatch(args: argparse.Namespace) -> int:
    if not hasattr(args, "executor"):
        return args.func(args)
    from . import executor

    with executor.use(args.executor):
        return args.func(args)


def fail(message: object, code: int) -> int:
    """Print ``message`` as the one line ``evalkit: ...`` on stderr (control characters and line breaks from
    data shown as escapes, so it stays one line) and return the exit code."""
    print(f"evalkit: {esc.terminal(message)}", file=sys.stderr)
    return code


INTERRUPTED = 130  # the shell's code for a command ended by Ctrl-C (128 + SIGINT)


def interrupted(command: str | None = None) -> int:
    return fail("interrupted" + (" (a run continues where it stopped with --resume)" if command == "run" else ""),
                INTERRUPTED)


READER_GONE = 141  # the shell's code for a command whose output's reader went away (128 + SIGPIPE)


def reader_gone() -> bool:
    """Whether standard output is a pipe nobody reads any more (``evalkit summary | head``): the kernel
    flags its write end with an error, which tells it apart from a broken pipe to a server of an arm."""
    try:
        poll = select.poll()
        poll.register(1, select.POLLOUT)  # standard output, whatever wraps sys.stdout
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except OSError:  # no standard output at all
        return False


def quiet_exit() -> int:
    """Stop without a word, as Unix tools do when their reader has gone: what is still buffered, and the
    interpreter's flush at exit, go to /dev/null instead of raising 'Broken pipe' again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    return READER_GONE


def main(argv: list[str] | None = None) -> int:
    """Bad input is one line on stderr and exit 2; anything else is one line and exit 1 (2 for ``gate``,
    whose exit 1 is a verdict: FAIL); Ctrl-C is one line and exit 130; a reader of the output that goes away
    (``| head``) ends it quietly with 141; ``--debug`` lets every exception through with its traceback. What a command
    prints passes
    :func:`evalkit.escape.terminal_streams`: escape sequences from data reach the terminal inert."""
    try:
        with esc.terminal_streams():
            code = _main(argv)
        sys.stdout.flush()  # a reader that has gone shows here, not as a traceback at exit
        return code
    except KeyboardInterrupt:
        return interrupted()
    except BrokenPipeError:
        if reader_gone():
            return quiet_exit()
        raise


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(refusal_argv(sys.argv[1:] if argv is None else list(argv)))
    if args.debug:
        return _dispatch(args)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return interrupted(args.command)
    except Exception as e:  # noqa: BLE001 - bad input, an OS or database error named, else a bug: one line
        return failed(args, e)


def failed(args: argparse.Namespace, e: Exception) -> int:
    """The one line and exit code for what a command raised: bad input 2; a path that is a folder,
    unreadable, missing, on a full disk, named with why, 2; a full disk, read-only folder, busy lock or
    damage in the page store, 2; anything else is a bug, or out of memory: 1 (2 for ``gate``, whose 1 is
    a verdict)."""
    import sqlite3

    if bad_input(e):
        return fail(e, 2)
    if isinstance(e, OSError):
        if isinstance(e, BrokenPipeError) and reader_gone():
            raise e  # not an error: main ends quietly
        from . import oserrors

        return fail(oserrors.describe(e), 2)
    if isinstance(e, sqlite3.DatabaseError):
        from .cache import explain
        from .pages import store_path

        return fail(explain(store_path(getattr(args, "cache", None), getattr(args, "hidden_text", "index")), e), 2)
    return fail(f"unexpected {type(e).__name__}: {e} (run with --debug for the traceback)",
                2 if args.command == "gate" else 1)


if __name__ == "__main__":
    sys.exit(main())
