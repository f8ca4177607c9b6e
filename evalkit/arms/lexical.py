"""SQLite FTS5 indexes and the query analysis shared by the lexical arms.

The arms read one corpus-wide FTS5 table per corpus digest (contentless: the text stays in the page
store), with a side table mapping rowids to (document, page). FTS5 tokenizes and finds each query term's
pages; BM25 is then computed in NumPy with FTS5's own formula, either with the corpus-wide statistics or
with each document's own (IDF, average page length), exactly as a per-document search tool's one FTS5
table per document would score them. Those per-document tables can still be built
(:func:`ensure_document_indexes`): the tests check the NumPy scores against them to the bit.

Query semantics: the query's words (stop words dropped, unless nothing else is left) are OR-ed, each as a
quoted FTS5 string, so no user punctuation (quotes, ``NEAR(``, ``*``, ``-``) is ever read as syntax and a
page needs only one of the words to match; BM25 ranks pages with more and rarer words first. A question
in natural language rarely has all its words on the answering page, which is why this is not AND.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..corpus import Corpus
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


def settings(store: PageStore) -> str:
    """What an index's content depends on besides the documents: the text extractor and the tokenizer."""
    return f"{store.extractor}|{TOKENIZE}"


def _settings_ok(store: PageStore, name: str) -> bool:
    row = store.db.execute("SELECT settings FROM fts_indexes WHERE name=?", (name,)).fetchone()
    return row is not None and row[0] == settings(store)


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
        if _settings_ok(store, name):
            continue
        with db:
            db.execute("BEGIN IMMEDIATE")
            if not _settings_ok(store, name):  # another process may have built it while this one waited
                db.execute(f"DROP TABLE IF EXISTS {name}")
                db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, content='', tokenize='{TOKENIZE}')")
                db.executemany(f"INSERT INTO {name}(rowid, text) VALUES (?, ?)", enumerate(store.texts(d), 1))
                db.execute("INSERT OR REPLACE INTO fts_indexes VALUES (?, 'document', ?, ?, NULL)",
                           (name, d.sha256, settings(store)))
    return tables


def ensure_global_index(store: PageStore, corpus: Corpus) -> str:
    """Build (once per corpus digest) the corpus-wide FTS5 table; returns its name. The index of an earlier
    state of the same folder is dropped; folders are told apart by their full path, never by their base
    name (``a/docs`` and ``b/docs`` keep an index each)."""
    db = store.db
    db.executescript(_REGISTRY)
    digest = corpus.digest()
    name = f"fts_global_{digest[:24]}"
    if _settings_ok(store, name):
        return name
    folder = str(corpus.root.resolve())
    with db:
        db.execute("BEGIN IMMEDIATE")
        if _settings_ok(store, name):  # another process built it while this one waited
            return name
        for (old,) in db.execute("SELECT name FROM fts_indexes WHERE kind='global' AND corpus=? AND name<>?",
                                 (folder, name)).fetchall():  # the same folder, changed: drop its old index
            db.execute(f"DROP TABLE IF EXISTS {old}")
            db.execute("DELETE FROM fts_global_pages WHERE name=?", (old,))
            db.execute("DELETE FROM fts_indexes WHERE name=?", (old,))
        db.execute(f"DROP TABLE IF EXISTS {name}")
        db.execute("DELETE FROM fts_global_pages WHERE name=?", (name,))
        db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, content='', tokenize='{TOKENIZE}')")
        rowid = 0
        for d in corpus.documents:
            rows = []
            for page, text in enumerate(store.texts(d), 1):
                rowid += 1
                rows.append((rowid, text, d.name, d.sha256, page))
            db.executemany(f"INSERT INTO {name}(rowid, text) VALUES (?, ?)", [r[:2] for r in rows])
            db.executemany("INSERT INTO fts_global_pages VALUES (?, ?, ?, ?, ?)", [(name, r[0], *r[2:]) for r in rows])
        db.execute("INSERT OR REPLACE INTO fts_indexes VALUES (?, 'global', ?, ?, ?)", (name, digest, settings(store), folder))
    return name


# FTS5's bm25() constants (fts5_aux.c)
K1, B = 1.2, 0.75


def fts5_idf(rows: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """FTS5's IDF of a phrase in a table of ``rows`` rows, ``hits`` of which hold it; not above 0 becomes 1e-6.
    The logarithm is the C library's (math.log, as SQLite calls it): NumPy's vectorised log can differ
    in the last bit, and a bit is enough to reorder two pages."""
    idf = np.array([math.log(x) for x in (rows - hits + 0.5) / (hits + 0.5)], np.float64)
    return np.where(idf <= 0.0, 1e-6, idf)


def fts5_bm25_term(idf: np.ndarray, tf: np.ndarray, length: np.ndarray, avgdl: np.ndarray) -> np.ndarray:
    """One phrase's part of FTS5's bm25(), written as fts5_aux.c computes it (same operations, same order,
    so the sum over a query's phrases is the score FTS5 would return, to the bit)."""
    return idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl)))


def fts5_term_frequency(score: np.ndarray, idf: float, length: np.ndarray, avgdl: float) -> np.ndarray:
    """A phrase's count on each row, from the row's single-phrase bm25() score: FTS5 gives no term
    frequency through SQL, but that score is ``idf·tf(k1+1)/(tf + L)``, strictly increasing in tf, so
    tf = score·L/(idf(k1+1) − score), rounded (tf is a whole count)."""
    norm = K1 * (1 - B + B * length / avgdl)
    return np.rint(score * norm / (idf * (K1 + 1.0) - score))


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (FTS5's _docsize rows hold one per column)."""
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


@dataclass(frozen=True)
class Matches:
    """Where a query's terms occur in the corpus-wide index: per term (in query order) the rows holding it
    and its count on each; ``rows`` is their union, sorted."""

    term_rows: tuple[np.ndarray, ...]
    term_tf: tuple[np.ndarray, ...]
    rows: np.ndarray


class GlobalIndex:
    """The corpus-wide FTS5 index: BM25 over all pages, which documents contain which terms, and the
    per-row statistics (document, page, length in tokens) that let each document's own BM25 be computed
    from one index instead of one FTS5 table per document."""

    def __init__(self, store: PageStore, corpus: Corpus):
        self.db = store.db
        self.table = ensure_global_index(store, corpus)
        rows = self.db.execute("SELECT rowid, doc, page, sha256 FROM fts_global_pages WHERE name=? ORDER BY rowid",
                               (self.table,)).fetchall()
        self.docs = list(dict.fromkeys(doc for _, doc, _, _ in rows))  # documents in rowid order
        index = {d: i for i, d in enumerate(self.docs)}
        sha = dict((doc, s) for _, doc, _, s in rows)
        sha_rank = {s: i for i, s in enumerate(sorted(set(sha.values())))}
        size = len(rows) + 1  # arrays are indexed by rowid, which runs 1..pages
        self.doc = np.zeros(size, np.int64)
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
        self.doc_avgdl = np.bincount(self.doc[1:], self.length[1:], minlength=len(self.docs)) / np.maximum(self.doc_rows, 1)
        # the keyword arm and a hybrid over it analyse the same query: do it once
        self.matches = lru_cache(maxsize=256)(self._matches)
        self._content = lru_cache(maxsize=256)(self._content_weights)
        self.pages_with = lru_cache(maxsize=1024)(self._pages_with)

    def _matches(self, terms: tuple[str, ...]) -> Matches:
        """One FTS5 query per term. Rows come back as two strings (the subquery's ``LIMIT -1`` keeps SQLite
        from merging bm25() into the aggregate): FTS5 is fast, a Python tuple per row is not. The text
        form of a score keeps 15 digits, plenty to recover a whole count from it."""
        term_rows, term_tf = [], []
        for t in terms:
            rows, scores = self.db.execute(
                f"SELECT group_concat(r), group_concat(s) FROM (SELECT rowid AS r, -bm25({self.table}) AS s "
                f"FROM {self.table} WHERE {self.table} MATCH ? LIMIT -1)", (match_expression([t]),)).fetchone()
            rows = np.array(rows.split(",") if rows else [], np.int64)
            term_rows.append(rows)
            term_tf.append(fts5_term_frequency(np.array(scores.split(",") if scores else [], np.float64),
                                               self._idf(len(rows)), self.length[rows], self.avgdl))
        union = np.unique(np.concatenate(term_rows)) if term_rows else np.zeros(0, np.int64)
        return Matches(tuple(term_rows), tuple(term_tf), union)

    def bm25_scores(self, terms: list[str], scope: str = "corpus") -> tuple[np.ndarray, np.ndarray]:
        """(rows, score) of every page matching any term, score = -bm25() for the OR of the terms, as FTS5
        computes it over the corpus-wide table (``scope="corpus"``) or over the page's own document's table
        (``"doc"``: that document's row count, mean length and per-term page counts). Computed from the
        postings with FTS5's formula, so a query costs one FTS5 query per term (cached), not one per
        document, and matches FTS5 to the bit (tests/arms/test_keyword.py)."""
        m = self.matches(tuple(terms))
        score = np.zeros(len(m.rows))
        for rows, tf in zip(m.term_rows, m.term_tf):
            if scope == "doc":
                doc = self.doc[rows]
                hits = np.bincount(doc, minlength=len(self.docs)).astype(np.float64)  # pages holding the term
                held = np.flatnonzero(hits)
                idf = np.zeros(len(self.docs))
                idf[held] = fts5_idf(self.doc_rows[held], hits[held])
                idf, avgdl = idf[doc], self.doc_avgdl[doc]
            else:
                idf, avgdl = self._idf(len(rows)), self.avgdl
            score[np.searchsorted(m.rows, rows)] += fts5_bm25_term(idf, tf, self.length[rows], avgdl)
        return m.rows, score

    def _idf(self, hits: int) -> float:
        return float(fts5_idf(np.array([len(self.length) - 1.0]), np.array([float(hits)]))[0])

    def bm25(self, terms: list[str], k: int | None = None) -> list[tuple[str, int, float]]:
        """The top ``k`` (default all) matching pages as (doc, page, score), score = -bm25() (higher is
        better), best first. Equal scores are ordered by document sha256 and page: by content, never by file
        name (then rowid, for byte-identical documents)."""
        if not terms:
            return []
        rows, score = self.bm25_scores(terms)
        doc = self.doc[rows]
        order = np.lexsort((rows, self.page[rows], self.sha_rank[doc], -score))[:k]
        return [(self.docs[doc[i]], int(self.page[rows[i]]), float(score[i])) for i in order]

    def content_scores(self, terms: list[str]) -> dict[str, float]:
        """The content tie-break of documents: for each matching document, the sum over the query terms it
        contains of w_t = ln(1 + N/df_t), N = documents matching the query, df_t = matching documents
        containing t. A document holding more of the query's rarer words is ahead; its name plays no part."""
        docs, _ = self._content(tuple(terms))
        return {self.docs[i]: float(docs[i]) for i in np.flatnonzero(docs)}

    def page_content_scores(self, terms: list[str]) -> dict[tuple[str, int], float]:
        """The same sum of w_t, over the query terms each matching *page* contains."""
        m = self.matches(tuple(terms))
        _, pages = self._content(tuple(terms))
        return {(self.docs[self.doc[r]], int(self.page[r])): float(w) for r, w in zip(m.rows, pages)}

    @property
    def n_pages(self) -> int:
        return len(self.doc) - 1

    def _pages_with(self, term: str) -> frozenset[tuple[str, int]]:
        """The (doc, page) pairs whose text holds ``term`` (after the index's stemming); cached per term."""
        rows = self.matches((term,)).term_rows[0]
        return frozenset((self.docs[d], int(p)) for d, p in zip(self.doc[rows], self.page[rows]))

    def _content_weights(self, terms: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """w_t summed per document (array over documents) and per matching row (array over ``rows``), terms
        added in query order."""
        m = self.matches(terms)
        docs_with = [np.unique(self.doc[rows]) for rows in m.term_rows]
        n = len(np.unique(self.doc[m.rows]))
        docs, pages = np.zeros(len(self.docs)), np.zeros(len(m.rows))
        for rows, with_t in zip(m.term_rows, docs_with):
            if len(rows):
                w = math.log(1 + n / len(with_t))
                docs[with_t] += w
                pages[np.searchsorted(m.rows, rows)] += w
        return docs, pages
