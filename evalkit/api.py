"""The front door, ``import evalkit as ek``: everything the command line does, from a notebook or a script.

    docs = ek.corpus("latex")                      # or ek.corpus(docs="my/pdfs")
    qs = ek.queries("qrels/latex.toml")
    res = ek.run(docs, qs, ["global-index", ek.arm(my_retriever, name="mine")])
    res.table(by_class=True); ek.compare(res, "global-index")
    ek.gate(res, res, baseline_arm="global-index", candidate_arm="mine")

Loaded objects remember where they came from (a query set its file, a corpus its page store), and every
check the command line makes lives here, so a notebook gets the same refusals: a corpus is verified
before it is read, a query set must fit its corpus, arms are checked before anything is written.
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import answers, corpora, defaults, dirs, qrels
from .corpora import Corpus, CorpusError
from .pages import Ingest, PageStore
from .qrels import QrelsError, QuerySet
from .records import Answer, Page, page_id

if TYPE_CHECKING:  # each function imports what it runs: opening a corpus loads no pandas, SciPy or arm
    import pandas as pd

    from . import comparison as _compare
    from . import gating as _gate
    from . import judged
    from .results import Results


class PageError(CorpusError, KeyError):
    """A document or page a corpus does not have: bad input (a CorpusError), and a KeyError as the page
    store's own lookups raise."""

    def __str__(self) -> str:
        return str(self.args[0])  # the message itself, not KeyError's quoted form


@dataclass(frozen=True, eq=False)
class OpenCorpus:
    """A corpus whose pages are in a page store: what arms, runs and judging read. ``corpus`` holds the
    readable documents; ``ingest`` says what was extracted now and what could not be read."""

    corpus: Corpus
    store: PageStore
    ingest: Ingest
    pinned: bool = True  # opened by its name in a lock; a folder's name (``docs=``) says nothing of its contents

    @property
    def name(self) -> str:
        return self.corpus.name

    @property
    def documents(self) -> list[str]:
        return [d.name for d in self.corpus.documents]

    def texts(self, doc: str) -> list[str]:
        """A document's page texts as the arms see them, page 1 first."""
        return self.store.texts(self.corpus.document(doc))

    def text(self, doc: str) -> str:
        """A document's whole text: its pages joined by ``"\\f"``. A chunk's ``start``/``end`` are offsets
        into this string (:class:`evalkit.Chunk`)."""
        return answers.PAGE_BREAK.join(self.texts(doc))

    def page(self, doc: str, number: int) -> Page:
        """One page (1-based, physical) as the arms see it; :class:`PageError` naming a document or page the
        corpus does not have."""
        if doc not in self.documents:
            raise PageError(f"{doc!r} is not a document of corpus {self.name!r}")
        pages = self.corpus.document(doc).pages or len(self.texts(doc))
        if not 1 <= number <= pages:
            raise PageError(f"{page_id(doc, number)}: page {number} is out of range for {doc} (1..{pages})")
        return self.store.page(self.corpus.document(doc), number)

    def search(self, arm: str, query: str, k: int = 10) -> Answer:
        """One query on one arm (built-in, plug-in or registered with :func:`arm`)."""
        from .arms import make as make_arm

        built = make_arm(arm, self.corpus, self.store)
        try:
            built.prepare()
            return built.search(query, k)
        finally:
            built.close()

    def __repr__(self) -> str:
        return (f"<corpus {self.name}: {len(self.corpus.documents)} documents, {self.corpus.pages} pages, "
                f"store {self.store.path}>")


def corpus(name: str | None = None, *, docs: str | Path | None = None, root: str | Path | None = None,
           cache: str | Path | None = None, hidden_text: str = "index", lock: str | Path | None = None,
           progress: bool = True, store: PageStore | None = None, follow_symlinks: bool = False) -> OpenCorpus:
    """A corpus ready to search: ``name`` from the lock file (verified against its sha256s first), or any
    folder of PDFs (``docs``). Pages are extracted once into the page store (``cache``: default
    ``$EVALKIT_CACHE``, or an open ``store``); unreadable files are reported on stderr and left out. Links
    in a folder are followed only with ``follow_symlinks``."""
    if (name is None) == (docs is None):
        raise CorpusError("give a corpus name from the lock file or docs=FOLDER, not both or neither")
    if name is not None:
        c = corpora.load(name, Path(root) if root else None, Path(lock) if lock else None)
        v = corpora.verify(c)
        if v.missing or v.changed:
            raise CorpusError(f"corpus {c.name!r} in {c.root} is incomplete ({len(v.missing)} missing, "
                              f"{len(v.changed)} changed): run `evalkit corpus fetch {c.name}`")
    else:
        c = folder(Path(docs), None, follow_symlinks)  # type: ignore[arg-type]
    store = store or PageStore(Path(cache) if cache else None, hidden_text)
    ingest = store.ingest(c, progress=progress)
    for doc, error in ingest.errors.items():
        print(f"skipped {doc}: {error}", file=sys.stderr)
    for doc, lost in ingest.problems.items():
        print(f"{doc}: {'; '.join(lost)}", file=sys.stderr)
    print(where(c, store, ingest), file=sys.stderr)
    return OpenCorpus(ingest.corpus, store, ingest, pinned=name is not None)


def where(c: Corpus, store: PageStore, ingest: Ingest) -> str:
    """The one line saying which folder and cache a corpus was read from, and how much was reused."""
    stored = len(c.documents) - len(ingest.extracted)
    return (f"corpus {c.name}: PDFs in {c.root}; cache {store.path}: {stored} of {len(c.documents)} documents "
            f"reused, {len(ingest.extracted)} extracted")


def pin(name: str, docs: str | Path, *, lock: str | Path | None = None, description: str | None = None,
        cache: str | Path | None = None, store: PageStore | None = None, usable: bool = False,
        progress: bool = True, follow_symlinks: bool = False) -> tuple[Path, dict, Ingest]:
    """Pin every PDF of the folder ``docs`` (sha256, bytes, pages) as corpus ``name`` in ``lock`` (default
    ./corpora.lock, never the installation), sources relative to the lock; with ``usable`` the folder is
    the corpus's root too. Unreadable files and identical copies lock nothing (CorpusError saying which to
    remove). Returns the lock written, the entry and the page store's ingest (what it extracted now)."""
    folder_path = Path(docs)
    c = folder(folder_path, name, follow_symlinks)
    copies = c.copies()
    with nullcontext(store) if store else PageStore(Path(cache) if cache else None) as s:
        ingest = s.ingest(c, progress=progress)
    unreadable = {n: e for n, e in ingest.errors.items() if n not in copies}
    for n, e in unreadable.items():
        print(f"not locked {n}: {e}", file=sys.stderr)
    for n, original in copies.items():
        print(f"not locked {n}: an identical copy of {original} (the same bytes)", file=sys.stderr)
    if unreadable or copies:
        raise CorpusError(f"nothing locked from {folder_path}: {corpora.lock_problems(unreadable, copies)}")
    target = Path(lock) if lock else dirs.lock_target()
    return target, corpora.lock_corpus(ingest.corpus, target, description, usable), ingest


def add_corpus(name: str, docs: str | Path, *, lock: str | Path | None = None, description: str | None = None,
               cache: str | Path | None = None, hidden_text: str = "index", progress: bool = True) -> OpenCorpus:
    """A folder of one's own as a pinned corpus in one step: :func:`pin` it with the folder as its root (no
    fetch), say on stderr where the lock was written and what was extracted, and return it opened as the
    lock names it (so it is the corpus ``ek.corpus(name)`` opens later)."""
    store = PageStore(Path(cache) if cache else None, hidden_text)
    target, entry, pinned = pin(name, docs, lock=lock, description=description, store=store, usable=True,
                                progress=progress)
    c = corpora.load(name, lock=target)
    read = target.resolve() in {p.resolve() for p in dirs.lock_paths()}
    print(f"pinned {name} in {target}: {len(entry['document'])} documents, {c.pages} pages in {entry['root']} "
          f"(paths relative to the lock){'' if read else f'; other commands read it with EVALKIT_LOCK={target}'}",
          file=sys.stderr)
    print(where(c, store, pinned), file=sys.stderr)
    ingest = store.ingest(c, progress=False)  # every document was stored just now
    return OpenCorpus(ingest.corpus, store, ingest)


def folder(docs: Path, name: str | None = None, follow_symlinks: bool = False) -> Corpus:
    """A folder of PDFs as a corpus (:func:`evalkit.corpora.from_dir`), naming on stderr each symbolic link
    it leaves out."""
    if not follow_symlinks:
        for link in corpora.symlinks(docs):
            print(f"skipped {link}: a symbolic link (pass --follow-symlinks to read it)", file=sys.stderr)
    return corpora.from_dir(docs, name, follow_symlinks)


def queries(path: str | Path) -> QuerySet:
    """A query set read from its file (it remembers the file: runs record it, reports re-read it)."""
    return qrels.load(path)


def check_fit(qs: QuerySet, corpus: OpenCorpus | str) -> None:
    """Refuse a query set that does not fit a corpus: written for another corpus, or judging pages and
    documents it lacks (QrelsError naming the file and the first problem). Given only a corpus name, the
    cheap half: whether the set was written for it."""
    if isinstance(corpus, str) or corpus.pinned:
        _written_for(qs, corpus if isinstance(corpus, str) else corpus.name)
    if not isinstance(corpus, str):
        _judges_pages_of(qs, corpus)


def fit(qs: QuerySet, docs: OpenCorpus | str) -> None:
    """Deprecated name of :func:`check_fit` (``fit`` trains elsewhere: the learned arm, `evalkit refusal fit`);
    it goes in the next release."""
    warnings.warn("ek.fit is deprecated and goes in the next release: use ek.check_fit (the same check)",
                  DeprecationWarning, stacklevel=2)
    check_fit(qs, docs)


def _written_for(qs: QuerySet, name: str) -> None:
    if qs.corpus and qs.corpus != name:
        raise QrelsError(f"{qs.path or qs.name} is a query set for corpus {qs.corpus!r}, not {name!r}")


def _judges_pages_of(qs: QuerySet, opened: OpenCorpus) -> None:
    problems = [p for p in qrels.check(qs, opened.store.corpus_texts(opened.corpus)) if not p.warning]
    if problems:  # an ungraded query is a warning: a run records its answers for the judge
        raise QrelsError(f"{qs.path or qs.name} does not fit corpus {opened.name!r} ({len(problems)} problem(s)), "
                         f"e.g. {problems[0]}; see `evalkit qrels check`")


def corpus_for(qs: QuerySet, name: str | None = None, **opening: Any) -> OpenCorpus:
    """The corpus ``name`` (or ``docs=FOLDER``) opened as :func:`corpus` opens it with ``opening``, for the
    query set ``qs``: refused, as :func:`check_fit` refuses, by name before it is opened (a set written for another
    corpus costs nothing) and by the pages it judges once it is open."""
    if name is not None:
        _written_for(qs, name)
    opened = corpus(name, **opening)
    _judges_pages_of(qs, opened)
    return opened


def arm(retriever: Any, name: str | None = None, *, collapse: bool = False, **params: Any) -> str:
    """Make a retriever an arm of this process and return its spec, usable wherever an arm name is (runs,
    comparisons, gates). ``retriever`` is a function ``(query, k, **params) -> hits``, an object with
    ``search(query, k)``, or a LangChain or LlamaIndex retriever. Hits are :class:`evalkit.Hit`, ``(doc,
    page[, score])`` with 1-based physical pages, or :class:`evalkit.Chunk` (mapped to the pages they lie
    on). The spec is ``NAME@DIGEST``: a digest of the code, its settings and ``params``."""
    from .arms.function import register

    return register(retriever, name, collapse=collapse, **params)


def default_out(qs: QuerySet, opened: OpenCorpus) -> Path:
    """``results/<set>``, or ``results/<corpus>-<set>`` when the names differ, under the working directory."""
    return Path("results") / (qs.name if qs.name == opened.name else f"{opened.name}-{qs.name}")


def run(corpus: OpenCorpus | str | None = None, qs: QuerySet | str | Path | None = None, arms: Sequence[Any] = (),
        out: str | Path | None = None, *, k: int = defaults.DEPTH, resume: bool = False, progress: bool = True,
        **opening: Any) -> Results:
    """Run every arm over every query into a results directory and return it loaded. ``corpus`` is an opened
    corpus, or a corpus name (``None`` with ``docs=FOLDER``) opened here with ``opening`` as :func:`corpus_for`
    opens it, once the arms are checked. Arms are specs (``"hybrid(keyword=global-index)"``) or retrievers
    (registered with :func:`arm` under their own name). With ``resume``, an earlier run in ``out`` is continued
    (see :func:`evalkit.runner.run`). An ungraded query (no judgment yet) is asked and recorded, not measured:
    the judge's gate measures it (``gate(..., judge=...)``)."""
    from . import runner
    from .results import Results

    if isinstance(opening.get("docs"), OpenCorpus):  # the opened corpus's old name: kept for one release
        warnings.warn("ek.run(docs=CORPUS) is deprecated and goes in the next release: pass the opened corpus as "
                      "ek.run(corpus=...) (docs= is a folder of PDFs, as in ek.corpus)", DeprecationWarning,
                      stacklevel=2)
        corpus = opening.pop("docs")
    if qs is None:
        raise TypeError("ek.run needs a query set: ek.run(corpus, qs, arms)")
    checked = runner.check_arms([a if isinstance(a, str) else arm(a) for a in arms], k)  # before the corpus opens
    qs = queries(qs) if not isinstance(qs, QuerySet) else qs
    if isinstance(corpus, OpenCorpus):
        check_fit(qs, corpus)
        opened = corpus
    else:
        opened = corpus_for(qs, corpus, progress=progress, **opening)
    path = runner.run(opened.corpus, opened.store, qs, checked, Path(out) if out else default_out(qs, opened),
                      k=k, resume=resume, progress=progress)
    return Results.load(path)


def side(where: Results | str | Path | _compare.Side, arm_name: str | None = None) -> _compare.Side:
    """One arm of one run: a :class:`Results` with an arm name, or ``"DIR:ARM"`` / ``DIR`` as on the command line."""
    from . import comparison as _compare
    from .results import Results

    if isinstance(where, _compare.Side):
        return where
    if isinstance(where, Results):
        if arm_name is None:
            raise _compare.CompareError(f"name an arm of {where.path}: one of {', '.join(where.arms)}")
        return _compare.Side(where, where.arm(arm_name))
    return _compare.side(where, arm_name)


def compare(res: Results, baseline_arm: str | None = None, candidates: Sequence[str] | str | None = None,
            measures: Sequence[str] = defaults.COMPARE_MEASURES, judge: str | Path | None = None,
            queries: str | Path | None = None, *, baseline: str | None = None, **kw: Any) -> pd.DataFrame:
    """Paired comparison of candidates (default: every other arm of ``res``) against ``baseline_arm``: per
    measure and class, both means, the difference with its CI, p and p(Holm) over each measure's rows, and
    the minimal detectable difference, indexed by candidate, measure and class. Keyword arguments go to
    :func:`evalkit.comparison.table`. With ``judge`` (a judge's predictions file; ``queries`` as for
    :func:`gate`), on a partially graded set: per measure the judge predicts and class, the prediction-powered
    interval of the difference, graded queries, judge-person r, verdict and more queries to grade
    (:func:`evalkit.judged.table`). ``baseline=``: ``baseline_arm``'s old keyword, for one release."""
    import pandas as pd

    from . import comparison as _compare

    base = side(res, _baseline_arm(baseline_arm, baseline, "compare"))
    names = [candidates] if isinstance(candidates, str) else candidates or [a for a in res.arms if a != base.arm]
    if judge:
        from . import judged

        found = [judged.table(judged.compare(*judged_pair(base, side(res, c), judge, queries), tuple(measures)))
                 for c in names]
        return pd.concat(found, ignore_index=True).set_index(["candidate", "measure", "class"])
    tables = [_compare.table(_compare.pair(base, side(res, c)), tuple(measures),
                             **kw).assign(candidate=side(res, c).arm)
              for c in names]
    frame = _compare.with_holm(pd.concat(tables, ignore_index=True))
    columns = ["n", "base", "cand", "delta", "low", "high", "p", "p_holm", "wins", "ties", "losses", "mdd"]
    return frame.set_index(["candidate", "measure", "class"])[columns]


def gate(baseline: Results | str | Path | _compare.Side, candidate: Results | str | Path | _compare.Side,
         rules: str | Path | None = None, *, baseline_arm: str | None = None, candidate_arm: str | None = None,
         allow_different_queries: bool = False, record: bool = True, cache: str | Path | None = None,
         log: Callable[[str], None] | None = None, judge: str | Path | None = None,
         queries: str | Path | None = None, undecided: str = "fail") -> _gate.Verdict:
    """Evaluate the pre-registered ``rules`` (default: ``./gate.toml``, else the shipped rules) for a candidate
    against a baseline (each a results directory and an arm). ``ek.gate(res, res, baseline_arm="global-index",
    candidate_arm="mine")`` gates two arms of one run. A latency rule re-times both arms side by side here (page store:
    ``cache``; ``log`` hears what is being timed). With ``record``, the verdict is written to the candidate's
    ``gate.json`` for its report (a folder that cannot take it gives the warning :class:`evalkit.gating.NotRecorded`).
    ``judge``: a judge's predictions file, for a query set a person graded in part; the rules on measures then answer
    pass, fail or undecided (:mod:`evalkit.judged`; ``queries``: the query file the runs were scored with, default the
    one the candidate's manifest names; ``undecided``: "fail" (exit 1, the default) or "pass" (exit 0))."""
    from . import gating as _gate
    from . import timing

    base, cand = side(baseline, baseline_arm), side(candidate, candidate_arm)
    timed = timing.for_gate(base, cand, rules, Path(cache) if cache else None, allow_different_queries, log=log)
    verdict = _gate.evaluate(base, cand, rules, allow_different_queries, timed, undecided=undecided,
                             judge=judge_loader(judge, queries, cand) if judge else None)
    if record:
        _gate.record(verdict, cand.results.path)
    return verdict


def judge_loader(predictions: str | Path, queries: str | Path | None, cand: _compare.Side) -> judged.Loader:
    """The judge :func:`evalkit.gating.evaluate` is given: the predictions and the query file ``queries`` (default:
    the one the candidate's manifest names); CompareError (exit 2) naming the file that cannot be used."""
    from . import comparison as _compare
    from . import judged
    from .autojudge.record import refused_classes

    path = Path(queries or cand.results.manifest["qrels"].get("path") or "")
    try:
        return judged.Loader(predictions, qrels.load(path), refused_classes(predictions))
    except (QrelsError, OSError) as e:
        raise _compare.CompareError(f"--judge needs the query file the runs were scored with: {path}: {e}") from None


def judged_pair(base: _compare.Side, cand: _compare.Side, predictions: str | Path, queries: str | Path | None,
                allow_different_queries: bool = False) -> tuple[_compare.Pair, judged.Judge]:
    """The pair of ``base`` and ``cand`` over every query, ungraded ones included, and its judge: what
    ``compare --judge`` estimates from."""
    from . import comparison as _compare

    loader = judge_loader(predictions, queries, cand)
    pair = _compare.pair(*loader.sides(base, cand), allow_different_queries)
    return pair, loader(pair)


def judge_source(file: str | Path, results: str | Path, store: PageStore | None = None, depth: int = 10,
                 arms: Sequence[str] | None = None, vectors: bool = True,
                 docs: str | Path | None = None) -> tuple[Any, PageStore]:
    """A query file, the results directory run on it and its corpus (the folder ``docs`` for a run of a
    folder of PDFs, else the one named by the file's ``[set]``, else by the run) read into the local judge's
    rows (:class:`evalkit.autojudge.session.Source`: the ranks of every arm, or of ``arms``; ``vectors=False``:
    no semantic signal); and the page store, whose SQLite file caches fitted judges. Here, where corpora are
    opened: the judge itself never opens one. A folder is never taken from the run's manifest (data, maybe
    from elsewhere): the user names it, and it must hold the documents the run read."""
    from .arms.signals import CorpusSignals
    from .autojudge.session import load
    from .results import Results

    qs = qrels.load(file)
    res = Results.load(results)
    ran = res.manifest["corpus"]
    if docs is not None:
        opened = corpus(docs=docs, store=store, progress=False)
        if opened.corpus.digest() != ran.get("digest"):
            raise CorpusError(f"{docs}: not the documents the run in {res.path} read (corpus {ran['name']!r}): "
                              "pass the folder that run read, unchanged")
    else:
        name = qs.corpus or ran["name"]
        try:
            corpora.locate(name)
        except CorpusError as e:
            raise CorpusError(f"{e}; a run of a folder of PDFs (`evalkit run --docs DIR`): pass that folder, "
                              f"--docs DIR (the run read {ran.get('root', 'a folder')})") from None
        opened = corpus(name, store=store, progress=False)
    return load(qs, res, CorpusSignals(opened.corpus, opened.store, vectors=vectors), depth, arms), opened.store


def report(res: Results | str | Path, out_html: str | Path | None = None,
           pair: Sequence[str] | str | None = None, baseline_arm: str | None = None, *,
           baseline: str | None = None) -> Path:
    """Execute the report notebook on a results directory (its conclusion and default delta pair against
    ``baseline_arm``, default: the stored gate verdict's); returns the HTML page's path. ``baseline=``:
    ``baseline_arm``'s old keyword, for one release."""
    if baseline is not None:
        baseline_arm = _baseline_arm(baseline_arm, baseline, "report")
    from . import gating as _gate
    from . import resultsdir
    from .reports import render
    from .results import Results

    path = res.path if isinstance(res, Results) else Results.load(res).path
    if why := _gate.stale_judge(path):
        raise ValueError(f"{path / _gate.GATE_FILE}: {why}; gate again with the new predictions")
    with resultsdir.owned(path, "evalkit report"):  # never while a run is writing there
        return render(path, out_html=out_html, pair=pair, baseline=baseline_arm)


def _baseline_arm(baseline_arm: str | None, baseline: str | None, function: str) -> str:
    """``baseline_arm``, or the arm given by its old keyword ``baseline`` (a DeprecationWarning: in ek.gate,
    ``baseline`` is a results directory)."""
    if baseline is not None:
        warnings.warn(f"ek.{function}(baseline=ARM) is deprecated and goes in the next release: it is baseline_arm= "
                      "now, as in ek.gate (where baseline is a results directory)", DeprecationWarning, stacklevel=3)
        baseline_arm = baseline_arm or baseline
    if baseline_arm is None:
        raise TypeError(f"ek.{function} needs the arm to compare against: baseline_arm=")
    return baseline_arm
