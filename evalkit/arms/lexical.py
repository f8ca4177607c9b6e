"""SQLite FTS5 indexes and the query analysis shared by the lexical arms.

The arms read one corpus-wide FTS5 table per corpus digest (contentless: the text stays in the page
store), with a side table mapping rowids to (document, page) and a postings table built with it: per
index term, the rowids holding it and its count on each, as packed arrays. A query's words are tokenized
by FTS5's own tokenizer (:class:`Tokenizer`), each term's postings are one blob read, and BM25 is then
computed in NumPy with FTS5's own formula, either with the corpus-wide statistics or with each document's
own (IDF, average page length), exactly as a per-document search tool's one FTS5 table per document
would score them. Those per-document tables can still be built (:func:`ensure_document_indexes`): the
tests check the NumPy scores against them to the bit.

Query semantics: the query's words (stop words dropped, unless nothing else is left) are OR-ed, each as a
quoted FTS5 string, so no user punctuation (quotes, ``NEAR(``, ``*``, ``-``) is ever read as syntax and a
page needs only one of the words to match; BM25 ranks pages with more and rarer words first. A question
in natural language rarely has all its words on the answering page, which is why this is not AND.
"""
from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..corpora import Corpus
from ..pages import PageStore
from ..text import STOPWORDS, words

TOKENIZE = "porter unicode61 remove_diacritics 2"

_REGISTRY = """
CREATE TABLE IF NOT EXISTS fts_indexes (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL, corpus TEXT);
CREATE TABLE IF NOT EXISTS fts_global_pages (
    name TEXT NOT NULL, rowid INTEGER NOT NULL, doc TEXT NOT NULL, sha256 TEXT NOT NULL, page INTEGER NOT NULL,
    PRIMARY KEY (name, rowid)) WITHOUT ROWID;
"""


def query_terms(text: str) -> list[str]:
    """The distinct words of a query, in order; stop words go unless nothing else is left."""
    ws = list(dict.fromkeys(words(text)))
    content = [w for w in ws if w not in STOPWORDS]
    return content or ws


def match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH string that ORs the terms, each a quoted string (so nothing is read as syntax)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def settings(store: PageStore, kind: str) -> str:
    """What an index's content depends on besides the documents: the text extractor and the tokenizer, and
    for the corpus-wide index the layout of its postings table (an index built without it is rebuilt)."""
    return f"{store.extractor}|{TOKENIZE}" + (f"|{POSTINGS_LAYOUT}" if kind == "global" else "")


def _settings_ok(store: PageStore, name: str, kind: str) -> bool:
    row = store.db.execute("SELECT settings FROM fts_indexes WHERE name=?", (name,)).fetchone()
    return row is not None and row[0] == settings(store, kind)


_SNAPSHOT = threading.Lock()


@contextmanager
def snapshot(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction around an FTS5 query on a cache other processes write. FTS5 connects a table by
    reading its config in a read transaction of its own, after the statement read the schema in another; a
    schema change committed in between (another process building an index in the same cache: a notebook
    and a shell) fails the statement with "vtable constructor failed" (SQLITE_SCHEMA, which SQLite does not
    retry there). Pinned to one snapshot first, both reads agree. Nothing at query time writes through the
    store's connection, so this read transaction holds no one's writes; one thread at a time opens one
    (an arm's connection may serve several)."""
    with _SNAPSHOT:
        if db.in_transaction:  # already one snapshot
            yield db
            return
        db.execute("BEGIN")
        try:
            db.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchone()  # the read that starts the snapshot
            yield db
        finally:
            db.execute("COMMIT")


def document_table(sha256: str) -> str:
    return f"fts_doc_{sha256[:24]}"


def ensure_document_indexes(store: PageStore, corpus: Corpus) -> dict[str, str]:
    """Build the per-document FTS5 tables that are missing; document name -> table name. No arm reads them
    (the keyword arm computes the same scores from the corpus-wide table): they are the reference its
    tests compare with, and what a per-document tool's index costs to build (benchmarks)."""
    db = store.db
    db.executescript(_REGISTRY)
    tables = {}
    for d in corpus.documents:
        name = document_table(d.sha256)
        tables[d.name] = name
        if _settings_ok(store, name, "document"):
            continue
        with db:
            db.execute("BEGIN IMMEDIATE")
            if not _settings_ok(store, name, "document"):  # another process may have built it while this one waited
                db.execute(f"DROP TABLE IF EXISTS {name}")
                db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, content='', tokenize='{TOKENIZE}')")
                db.executemany(f"INSERT INTO {name}(rowid, text) VALUES (?, ?)", enumerate(store.texts(d), 1))
                db.execute("INSERT OR REPLACE INTO fts_indexes VALUES (?, 'document', ?, ?, NULL)",
                           (name, d.sha256, settings(store, "document")))
    return tables


def ensure_global_index(store: PageStore, corpus: Corpus) -> str:
    """Build (once per corpus digest) the corpus-wide FTS5 table; returns its name. The index of an earlier
    state of the same folder is dropped; folders are told apart by their full path, never by their base
    name (``a/docs`` and ``b/docs`` keep an index each)."""
    db = store.db
    db.executescript(_REGISTRY)
    digest = corpus.digest()
    name = f"fts_global_{digest[:24]}"
    if _settings_ok(store, name, "global"):
        store.note("corpus-wide index", corpus.pages, 0, of=digest)
        return name
    store.note("corpus-wide index", 0, corpus.pages, of=digest)
    folder = str(corpus.root.resolve())
    with db:
        db.execute("BEGIN IMMEDIATE")
        if _settings_ok(store, name, "global"):  # another process built it while this one waited
            return name
        for (old,) in db.execute("SELECT name FROM fts_indexes WHERE kind='global' AND corpus=? AND name<>?",
                                 (folder, name)).fetchall():  # the same folder, changed: drop its old index
            _drop_global(db, old)
            db.execute("DELETE FROM fts_indexes WHERE name=?", (old,))
        _drop_global(db, name)
        db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, content='', tokenize='{TOKENIZE}')")
        rowid = 0
        for d in corpus.documents:
            rows = []
            for page, text in enumerate(store.texts(d), 1):
                rowid += 1
                rows.append((rowid, text, d.name, d.sha256, page))
            db.executemany(f"INSERT INTO {name}(rowid, text) VALUES (?, ?)", [r[:2] for r in rows])
            db.executemany("INSERT INTO fts_global_pages VALUES (?, ?, ?, ?, ?)", [(name, r[0], *r[2:]) for r in rows])
        build_postings(db, name)
        db.execute("INSERT OR REPLACE INTO fts_indexes VALUES (?, 'global', ?, ?, ?)",
                   (name, digest, settings(store, "global"), folder))
    return name


def _drop_global(db: sqlite3.Connection, name: str) -> None:
    """Drop a corpus-wide index: its FTS5 table, postings table and rowid map."""
    db.execute(f"DROP TABLE IF EXISTS {name}")
    db.execute(f"DROP TABLE IF EXISTS {postings_table(name)}")
    db.execute("DELETE FROM fts_global_pages WHERE name=?", (name,))


# ---- postings ------------------------------------------------------------------------------------------------

POSTINGS_LAYOUT = "postings-1"  # per term: rowids and counts as little-endian int32 arrays
POSTINGS_DTYPE = np.dtype("<i4")
CHUNK_INSTANCES = 1 << 22  # occurrences read from fts5vocab per query while building: bounds the memory


def postings_table(name: str) -> str:
    return f"{name}_postings"


def run_lengths(counts: np.ndarray, rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From FTS5's occurrence stream (``rowids``: the row of every occurrence, grouped by term in index
    order, ascending within a term; ``counts``: occurrences per term) the (term index, rowid, count) of
    every distinct (term, row) pair, in the same order. Runs are found in NumPy: SQLite would have to sort
    millions of occurrences to GROUP BY them."""
    term = np.repeat(np.arange(len(counts)), counts)
    start = np.flatnonzero(np.r_[True, (term[1:] != term[:-1]) | (rowids[1:] != rowids[:-1])])
    return term[start], rowids[start], np.diff(np.r_[start, len(rowids)])


def _term_chunks(counts: np.ndarray, limit: int) -> Iterator[tuple[int, int]]:
    """Consecutive [i, j) ranges of terms holding at most ``limit`` occurrences each (a single term with more
    is a range of its own)."""
    ends, i = np.cumsum(counts), 0
    while i < len(counts):
        j = max(i + 1, int(np.searchsorted(ends, (ends[i - 1] if i else 0) + limit, side="right")))
        yield i, j
        i = j


def build_postings(db: sqlite3.Connection, name: str, limit: int = CHUNK_INSTANCES) -> None:
    """Write the postings table of the FTS5 table ``name``: per term, the rowids holding it and its count on
    each. Read from fts5vocab: its 'row' table lists the terms in index order with their occurrence
    counts, its 'instance' table every occurrence's rowid in the same order (read as one string per chunk
    of terms: FTS5 is fast, a Python tuple per occurrence is not)."""
    vocab_row, vocab_instance = f"temp.{name}_vocab_row", f"temp.{name}_vocab_instance"
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab_row} USING fts5vocab(main, {name}, row)")
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab_instance} USING fts5vocab(main, {name}, instance)")
    table = postings_table(name)
    db.execute(f"CREATE TABLE {table} (term TEXT PRIMARY KEY, rows BLOB NOT NULL, tf BLOB NOT NULL)")
    vocab = db.execute(f"SELECT term, cnt FROM {vocab_row}").fetchall()
    terms = [t for t, _ in vocab]
    counts = np.array([c for _, c in vocab], np.int64)
    for i, j in _term_chunks(counts, limit):
        text = db.execute(f"SELECT group_concat(doc) FROM {vocab_instance} WHERE term >= ? AND term <= ?",
                          (terms[i], terms[j - 1])).fetchone()[0]
        term, rows, tf = run_lengths(counts[i:j], np.fromstring(text, np.int64, sep=","))
        rows, tf = rows.astype(POSTINGS_DTYPE), tf.astype(POSTINGS_DTYPE)
        edges = np.searchsorted(term, np.arange(j - i + 1))
        db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)",
                       ((terms[i + t], rows[a:b].tobytes(), tf[a:b].tobytes())
                        for t, (a, b) in enumerate(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))))
    db.execute(f"DROP TABLE {vocab_row}")
    db.execute(f"DROP TABLE {vocab_instance}")


# FTS5's bm25() constants (fts5_aux.c)
K1, B = 1.2, 0.75


def fts5_idf(rows: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """FTS5's IDF of a phrase in a table of ``rows`` rows, ``hits`` of which hold it; not above 0 becomes 1e-6.
    The logarithm is the C library's (math.log, as SQLite calls it): NumPy's vectorised log can differ
    in the last bit, and a bit is enough to reorder two pages."""
    idf = np.array([math.log(x) for x in (rows - hits + 0.5) / (hits + 0.5)], np.float64)
    return np.where(idf <= 0.0, 1e-6, idf)


def idf_table(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every IDF a table of ``rows[d]`` rows can give, for each d: ``table[start[d] + hits]`` is
    :func:`fts5_idf` of ``hits`` rows out of ``rows[d]``, for hits = 0..rows[d]. Computed once per index
    (pages + documents logarithms), so a query looks its per-document IDFs up instead of taking them."""
    sizes = rows.astype(np.int64) + 1
    start = np.cumsum(sizes) - sizes
    hits = np.arange(sizes.sum()) - np.repeat(start, sizes)
    return fts5_idf(np.repeat(sizes - 1, sizes).astype(np.float64), hits.astype(np.float64)), start


def fts5_length_norm(length: np.ndarray, avgdl: np.ndarray | float) -> np.ndarray:
    """The length part of FTS5's bm25() denominator, k1·(1 − b + b·|D|/avgdl), computed as fts5_aux.c does;
    it depends on the row alone (and its table's mean length), so an index computes it once per row."""
    return K1 * (1 - B + B * length / avgdl)


def fts5_bm25_term(idf: np.ndarray | float, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """One phrase's part of FTS5's bm25(), written as fts5_aux.c computes it (same operations, same order,
    so the sum over a query's phrases is the score FTS5 would return, to the bit)."""
    return idf * ((tf * (K1 + 1.0)) / (tf + norm))


def fts5_term_frequency(score: np.ndarray, idf: float, norm: np.ndarray) -> np.ndarray:
    """A phrase's count on each row, from the row's single-phrase bm25() score: FTS5 gives no term
    frequency through SQL, but that score is ``idf·tf(k1+1)/(tf + norm)``, strictly increasing in tf, so
    tf = score·norm/(idf(k1+1) − score), rounded (tf is a whole count)."""
    return np.rint(score * norm / (idf * (K1 + 1.0) - score))


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (FTS5's _docsize rows hold one per column)."""
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


class Tokenizer:
    """FTS5's own tokenizer, applied to query words: they are written to an in-memory contentless FTS5 table
    with the index's tokenizer and read back through fts5vocab ('instance'), so a query word becomes the
    index terms its pages' words became, with no second tokenizer or stemmer to keep in step with SQLite's.
    (FTS5 tokenizes a quoted MATCH string the same way: porter and unicode61 have no query-only tokens.)"""

    def __init__(self):
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.db.execute(f"CREATE VIRTUAL TABLE q USING fts5(text, content='', tokenize='{TOKENIZE}')")
        self.db.execute("CREATE VIRTUAL TABLE q_vocab USING fts5vocab(q, instance)")
        self.lock = threading.Lock()  # one arm may serve several threads (an executor's worker)

    def __call__(self, words: Sequence[str]) -> list[tuple[str, ...]]:
        """Each word's tokens, in order: usually one; none for a word of separators; several for a word
        FTS5 splits where Python's word pattern does not (a phrase, to FTS5)."""
        with self.lock, self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO q(rowid, text) VALUES (?, ?)", enumerate(words))
            found = self.db.execute("SELECT doc, term FROM q_vocab ORDER BY doc, offset").fetchall()
            self.db.execute("INSERT INTO q(q) VALUES ('delete-all')")
        tokens: list[list[str]] = [[] for _ in words]
        for i, term in found:
            tokens[i].append(term)
        return [tuple(t) for t in tokens]


@dataclass(frozen=True)
class Matches:
    """Where a query's terms occur in the corpus-wide index: per term (in query order) the rows holding it
    and its count on each; ``rows`` is their union, sorted."""

    term_rows: tuple[np.ndarray, ...]
    term_tf: tuple[np.ndarray, ...]
    rows: np.ndarray


NO_POSTINGS = (np.zeros(0, POSTINGS_DTYPE), np.zeros(0, POSTINGS_DTYPE))
# Queries analysed by one index kept for the next call: the keyword arm asks for its query's matches three
# times (scores, document and page tie-breaks) and a hybrid over it once more. A few queries, not hundreds:
# each holds the postings of its terms, up to every page of the corpus per term.
RECENT_QUERIES = 4
RECENT_TERMS = 32  # the refusal policies ask for each query term's pages several times per query


class GlobalIndex:
    """The corpus-wide FTS5 index: BM25 over all pages, which documents contain which terms, and the
    per-row statistics (document, page, length in tokens) that let each document's own BM25 be computed
    from one index instead of one FTS5 table per document."""

    def __init__(self, store: PageStore, corpus: Corpus):
        self.db = store.db
        self.table = ensure_global_index(store, corpus)
        self.postings = postings_table(self.table)
        self.tokenize = Tokenizer()
        rows = self.db.execute("SELECT rowid, doc, page, sha256 FROM fts_global_pages WHERE name=? ORDER BY rowid",
                               (self.table,)).fetchall()
        self.docs = list(dict.fromkeys(doc for _, doc, _, _ in rows))  # documents in rowid order
        index = {d: i for i, d in enumerate(self.docs)}
        sha = dict((doc, s) for _, doc, _, s in rows)
        sha_rank = {s: i for i, s in enumerate(sorted(set(sha.values())))}
        size = len(rows) + 1  # arrays are indexed by rowid, which runs 1..pages
        # the smallest integer type for document numbers: NumPy sorts 8- and 16-bit integers by radix
        self.doc = np.zeros(size, np.min_scalar_type(max(len(self.docs) - 1, 0)))
        self.page = np.zeros(size, np.int64)
        for rowid, doc, page, _ in rows:
            self.doc[rowid], self.page[rowid] = index[doc], page
        self.sha_rank = np.array([sha_rank[sha[d]] for d in self.docs], np.int64)
        self.length = np.zeros(size, np.float64)  # tokens per row, as FTS5 keeps them in its _docsize table
        for rowid, blob in self.db.execute(f"SELECT id, sz FROM {self.table}_docsize"):
            self.length[rowid] = _varint(blob)
        self.avgdl = self.length[1:].sum() / len(rows) if rows else 1.0
        # each document's row count and mean length: the statistics its own FTS5 table would hold
        self.doc_rows = np.bincount(self.doc[1:], minlength=len(self.docs)).astype(np.float64)
        self.doc_avgdl = np.bincount(self.doc[1:], self.length[1:],
                                     minlength=len(self.docs)) / np.maximum(self.doc_rows, 1)
        self.doc_idf, self.doc_idf_start = idf_table(self.doc_rows)
        # bm25()'s length normalisation of each row, with the corpus's mean length and with its document's
        self.norm = {"corpus": fts5_length_norm(self.length, self.avgdl),
                     "doc": fts5_length_norm(self.length, self.doc_avgdl[self.doc])}
        self.matches = lru_cache(maxsize=RECENT_QUERIES)(self._matches)
        self.content_weights = lru_cache(maxsize=RECENT_QUERIES)(self._content_weights)
        self.pages_with = lru_cache(maxsize=RECENT_TERMS)(self._pages_with)

    def _matches(self, terms: tuple[str, ...]) -> Matches:
        """Each term's postings: one blob read per term that FTS5 tokenizes to one index term; a term it
        splits into several is a phrase, and only FTS5 knows where its tokens stand (:meth:`_phrase`)."""
        tokens = self.tokenize(terms)
        single = [t[0] for t in tokens if len(t) == 1]
        found: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray]] = {(term,): (np.frombuffer(rows, POSTINGS_DTYPE),
                                                                                 np.frombuffer(tf, POSTINGS_DTYPE))
                 for term, rows, tf in self.db.execute(
                     f"SELECT term, rows, tf FROM {self.postings} WHERE term IN ({','.join('?' * len(single))})",
                     single)}
        postings = [self._phrase(w) if len(t) > 1 else found.get(t, NO_POSTINGS)
                    for w, t in zip(terms, tokens, strict=True)]
        union = np.zeros(len(self.doc), bool)
        for rows, _ in postings:
            union[rows] = True
        return Matches(tuple(r for r, _ in postings), tuple(tf for _, tf in postings), np.flatnonzero(union))

    def _phrase(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding a query word that FTS5 reads as a phrase, and the phrase's count on each, from one
        FTS5 query. Rows come back as two strings (the subquery's ``LIMIT -1`` keeps SQLite from merging
        bm25() into the aggregate); FTS5 gives no count through SQL, but bm25() of the phrase alone
        determines it (:func:`fts5_term_frequency`)."""
        with snapshot(self.db) as db:
            rows, scores = db.execute(
                f"SELECT group_concat(r), group_concat(s) FROM (SELECT rowid AS r, -bm25({self.table}) AS s "
                f"FROM {self.table} WHERE {self.table} MATCH ? LIMIT -1)", (match_expression([term]),)).fetchone()
        rows = np.array(rows.split(",") if rows else [], np.int64)
        tf = fts5_term_frequency(np.array(scores.split(",") if scores else [], np.float64),
                                 self._idf(len(rows)), self.norm["corpus"][rows])
        return rows, tf

    def bm25_scores(self, terms: list[str], scope: str = "corpus") -> tuple[np.ndarray, np.ndarray]:
        """(rows, score) of every page matching any term, score = -bm25() for the OR of the terms, as FTS5
        computes it over the corpus-wide table (``scope="corpus"``) or over the page's own document's table
        (``"doc"``: that document's row count, mean length and per-term page counts). Computed from the
        postings with FTS5's formula, so a query costs one read per term, not one FTS5 query per document,
        and matches FTS5 to the bit (tests/arms/test_keyword.py). Scores accumulate over all rows, term by
        term in query order, as FTS5 adds its phrases."""
        m = self.matches(tuple(terms))
        score = np.zeros(len(self.doc))
        for rows, tf in zip(m.term_rows, m.term_tf, strict=True):
            if scope == "doc":
                doc = self.doc[rows]
                hits = np.bincount(doc, minlength=len(self.docs))  # pages of each document holding the term
                idf = self.doc_idf[self.doc_idf_start[doc] + hits[doc]]
            else:
                idf = self._idf(len(rows))
            score[rows] += fts5_bm25_term(idf, tf, self.norm[scope][rows])
        return m.rows, score[m.rows]

    def weighted_bm25(self, weights: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """(rows, score) of every page holding any of the *index* terms in ``weights`` (already tokenized and
        stemmed, as a relevance model gives them), score = Σ_t weight_t · BM25_t over the corpus-wide table:
        an expanded query whose terms count unequally (:mod:`evalkit.arms.feedback`)."""
        terms = sorted(weights)
        found = {t: (np.frombuffer(r, POSTINGS_DTYPE), np.frombuffer(tf, POSTINGS_DTYPE))
                 for t, r, tf in self.db.execute(
            f"SELECT term, rows, tf FROM {self.postings} WHERE term IN ({','.join('?' * len(terms))})", terms)}
        score = np.zeros(len(self.doc))
        for t in terms:  # in term order: the sum does not depend on how the caller built the dict
            rows, tf = found.get(t, NO_POSTINGS)
            score[rows] += weights[t] * fts5_bm25_term(self._idf(len(rows)), tf, self.norm["corpus"][rows])
        hit = np.flatnonzero(score > 0)
        return hit, score[hit]

    def _idf(self, hits: int) -> float:
        return float(fts5_idf(np.array([len(self.length) - 1.0]), np.array([float(hits)]))[0])

    def bm25(self, terms: list[str], k: int | None = None) -> list[tuple[str, int, float]]:
        """The top ``k`` (default all) matching pages as (doc, page, score), score = -bm25() (higher is
        better), best first. Equal scores are ordered by document sha256 and page: by content, never by file
        name (then rowid, for byte-identical documents)."""
        if not terms:
            return []
        rows, score = self.bm25_scores(terms)
        if k is not None and k < len(score):  # only the k best scores (and pages tied with the k-th) are sorted
            keep = score >= -np.partition(-score, k - 1)[k - 1]
            rows, score = rows[keep], score[keep]
        doc = self.doc[rows]
        order = np.lexsort((rows, self.page[rows], self.sha_rank[doc], -score))[:k]
        return [(self.docs[doc[i]], int(self.page[rows[i]]), float(score[i])) for i in order]

    def content_scores(self, terms: list[str]) -> dict[str, float]:
        """The content tie-break of documents: for each matching document, the sum over the query terms it
        contains of w_t = ln(1 + N/df_t), N = documents matching the query, df_t = matching documents
        containing t. A document holding more of the query's rarer words is ahead; its name plays no part."""
        docs, _ = self.content_weights(tuple(terms))
        return {self.docs[i]: float(docs[i]) for i in np.flatnonzero(docs)}

    @property
    def n_pages(self) -> int:
        return len(self.doc) - 1

    def _pages_with(self, term: str) -> frozenset[tuple[str, int]]:
        """The (doc, page) pairs whose text holds ``term`` (after the index's stemming); cached per term."""
        rows = self.matches((term,)).term_rows[0]
        return frozenset((self.docs[d], int(p)) for d, p in zip(self.doc[rows], self.page[rows], strict=True))

    def _content_weights(self, terms: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The sum of w_t (:meth:`content_scores`) per document (an array over documents) and per page (an
        array over rowids: the page's own query terms), terms added in query order; cached per query as
        ``content_weights``."""
        m = self.matches(terms)
        docs_with = [np.flatnonzero(np.bincount(self.doc[rows], minlength=len(self.docs))) for rows in m.term_rows]
        n = np.count_nonzero(np.bincount(self.doc[m.rows], minlength=len(self.docs)))
        docs, pages = np.zeros(len(self.docs)), np.zeros(len(self.doc))
        for rows, with_t in zip(m.term_rows, docs_with, strict=True):
            if len(rows):
                w = math.log(1 + n / len(with_t))
                docs[with_t] += w
                pages[rows] += w
        return docs, pages
