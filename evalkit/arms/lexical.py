"""SQLite FTS5 indexes and the query analysis shared by the lexical arms.

Two kinds of index live in the cache database, both contentless (the text stays in the page store):
- one FTS5 table per document, keyed by the document's sha256: each has its own BM25 statistics
  (IDF, average page length), exactly as a per-document search tool would;
- one corpus-wide FTS5 table per corpus digest, with a side table mapping rowids to (document, page).

Query semantics: the query's words (stop words dropped, unless nothing else is left) are OR-ed, each as a
quoted FTS5 string, so no user punctuation (quotes, ``NEAR(``, ``*``, ``-``) is ever read as syntax and a
page needs only one of the words to match; BM25 ranks pages with more and rarer words first. A question
in natural language rarely has all its words on the answering page, which is why this is not AND.
"""
from __future__ import annotations

import math
from collections import defaultdict
from functools import lru_cache

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
    """Build the per-document FTS5 tables that are missing; document name -> table name."""
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


class GlobalIndex:
    """The corpus-wide FTS5 index: BM25 over all pages, and which documents contain which terms."""

    def __init__(self, store: PageStore, corpus: Corpus):
        self.db = store.db
        self.table = ensure_global_index(store, corpus)
        self.pages = {rowid: (doc, page, sha) for rowid, doc, page, sha in self.db.execute(
            "SELECT rowid, doc, page, sha256 FROM fts_global_pages WHERE name=?", (self.table,))}
        # the keyword arm and a hybrid over it ask for the same query's content scores: compute them once
        self._content = lru_cache(maxsize=256)(self._content_scores)
        self.pages_with = lru_cache(maxsize=1024)(self._pages_with)

    def bm25(self, terms: list[str]) -> list[tuple[str, int, float]]:
        """Every matching page as (doc, page, score), score = -bm25() (higher is better), best first.
        Equal scores are ordered by document sha256 and page: by content, never by file name."""
        if not terms:
            return []
        rows = self.db.execute(f"SELECT rowid, bm25({self.table}) FROM {self.table} WHERE {self.table} MATCH ?",
                               (match_expression(terms),))
        ranked = sorted(((score, self.pages[rowid]) for rowid, score in rows), key=lambda r: (r[0], r[1][2], r[1][1]))
        return [(doc, page, -score) for score, (doc, page, _) in ranked]

    def content_scores(self, terms: list[str]) -> dict[str, float]:
        """The content tie-break of documents: for each matching document, the sum over the query terms it
        contains of w_t = ln(1 + N/df_t), N = documents matching the query, df_t = matching documents
        containing t. A document holding more of the query's rarer words is ahead; its name plays no part."""
        return self._content(tuple(terms))[0]

    def page_content_scores(self, terms: list[str]) -> dict[tuple[str, int], float]:
        """The same sum of w_t, over the query terms each matching *page* contains."""
        return self._content(tuple(terms))[1]

    def _pages_with(self, term: str) -> frozenset[tuple[str, int]]:
        """The (doc, page) pairs whose text holds ``term`` (after the index's stemming); cached per term."""
        rows = self.db.execute(f"SELECT rowid FROM {self.table} WHERE {self.table} MATCH ?", (match_expression([term]),))
        return frozenset(self.pages[r][:2] for (r,) in rows)

    def _content_scores(self, terms: tuple[str, ...]) -> tuple[dict[str, float], dict[tuple[str, int], float]]:
        pages_with = {t: self.pages_with(t) for t in terms}
        docs_with = {t: {d for d, _ in ps} for t, ps in pages_with.items()}
        n = len(set().union(*docs_with.values())) if docs_with else 0
        docs: dict[str, float] = defaultdict(float)
        pages: dict[tuple[str, int], float] = defaultdict(float)
        for t, ps in pages_with.items():
            if ps:
                w = math.log(1 + n / len(docs_with[t]))
                for d in docs_with[t]:
                    docs[d] += w
                for p in ps:
                    pages[p] += w
        return dict(docs), dict(pages)
