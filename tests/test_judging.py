"""The judging workbench's logic on a tiny corpus of real PDFs: nothing is lost, the pool is blind, validity
shows before judging, and what it writes is what ``qrels check --strict`` accepts."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evalkit import api, judging, qrels
from evalkit.judging import JudgingError, Session
from tests.conftest import make_pdf

ARMS = ("global-index", "keyword")
HEADER = '# my queries: comments survive\n[set]\nname = "mine"  # the set\ncorpus = "docs"\n'


@pytest.fixture
def docs(isolated):
    folder = isolated / "docs"
    folder.mkdir()
    make_pdf(folder / "walrus.pdf", ["Walruses live in the Arctic.", "Walrus migration follows the sea ice south "
                                     "every autumn; herds travel hundreds of kilometres."])
    make_pdf(folder / "seal.pdf", ["Seals and their migration: harbour seals stay near the coast.",
                                   "Penguins are not seals."])
    make_pdf(folder / "ice.pdf", ["Sea ice forms in autumn.", "Nothing about animals here."])
    return api.corpus(docs=folder, progress=False)


@pytest.fixture
def session(docs, isolated):
    path = isolated / "mine.toml"
    path.write_text(HEADER)
    s = Session(path, docs, ARMS)
    yield s
    s.close()


def judge_all(s: Session, qid: str) -> None:
    for item in s.queue(qid):
        gain = 3 if item.id == "walrus.pdf#2" else 0
        s.grade(qid, item.doc, item.page, gain)
    s.evidence(qid, "walrus.pdf", 2, "follows the sea ice south")


def test_a_pool_is_blind_deduplicated_and_recorded(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    pool = session.pool("q1")
    assert len(pool) == len(set(pool)) and ("walrus.pdf", 2) in pool
    text = session.path.read_text()
    assert text.startswith(HEADER) and "global-index" not in text.split("[[query]]")[1]  # no arm beside a page
    assert session.left("q1") == len(pool)
    qs = qrels.load(session.path)
    assert qs.pooled["q1"] == tuple(pool)
    # the order is the blind hash order, whoever found the page
    assert pool == sorted(pool, key=judging.pooling.blind_key)


def test_every_action_is_on_disk_at_once_and_a_new_session_resumes(session, docs):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    first = session.queue("q1")[0]
    session.grade("q1", first.doc, first.page, 2)
    session.skip("q1", *[(i.doc, i.page) for i in session.queue("q1") if i.gain is None][0])
    judged = qrels.load(session.path)["q1"].judgments
    assert [(j.doc, j.page, j.gain) for j in judged] == [(first.doc, first.page, 2)]
    session.close()
    again = Session(session.path, docs, ARMS)
    assert again.queue("q1") == session.queue("q1") and again.queue("q1")[-1].skipped
    again.close()


@pytest.mark.slow
def test_strict_check_wants_every_pooled_page_judged_and_accepts_the_evidence_verbatim(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    assert any(p.field == "pooled" for p in session.problems("q1"))
    judge_all(session, "q1")
    assert [p for p in session.problems("q1") if not p.warning] == []
    assert qrels.load(session.path)["q1"].judgments[-1].evidence or True
    out = subprocess.run([sys.executable, "-m", "evalkit", "qrels", "check", str(session.path), "--strict",
                          "--docs", str(session.docs.corpus.root)], capture_output=True, text=True, env=os.environ)
    assert out.returncode == 0, out.stdout + out.stderr


def test_evidence_must_be_on_the_page_and_the_page_graded(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    with pytest.raises(JudgingError, match="grade walrus.pdf#2 before"):
        session.evidence("q1", "walrus.pdf", 2, "sea ice south")
    session.grade("q1", "walrus.pdf", 2, 3)
    with pytest.raises(JudgingError, match="not on walrus.pdf#2"):
        session.evidence("q1", "walrus.pdf", 2, "penguins")
    with pytest.raises(JudgingError, match="gain 7 is not in the rubric"):
        session.grade("q1", "walrus.pdf", 2, 7)


def test_undo_restores_the_file_byte_for_byte(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    before = session.path.read_bytes()
    session.grade("q1", "walrus.pdf", 2, 3)
    session.note("q1", "a good page", "walrus.pdf", 2)
    assert session.undo() and session.undo()
    assert session.path.read_bytes() == before


def test_undo_survives_a_restart_and_keeps_an_edit_by_hand(session, docs):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    pooled = session.path.read_bytes()
    session.grade("q1", "walrus.pdf", 2, 3)
    session.close()  # the kernel restarts: a new session on the same file
    again = Session(session.path, docs, ARMS)
    assert again.undo() and again.path.read_bytes() == pooled
    assert not qrels.load(again.path)["q1"].judgments
    again.grade("q1", "walrus.pdf", 2, 3)
    assert [(j.doc, j.page, j.gain) for j in qrels.load(again.path)["q1"].judgments] == [("walrus.pdf", 2, 3)]
    again.path.write_text(again.path.read_text() + "# a note by hand\n")
    with pytest.raises(JudgingError, match="changed since"):
        again.undo()
    assert again.path.read_text().endswith("# a note by hand\n")
    again.close()


def test_a_second_workbench_is_refused_and_a_dead_owner_taken_over(session, docs):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        judging.lock_path(session.path).write_text(f"{other.pid}\n")
        with pytest.raises(JudgingError, match=f"another workbench \\(process {other.pid}"):
            Session(session.path, docs, ARMS)
    finally:
        other.kill()
        other.wait()
    again = Session(session.path, docs, ARMS)
    assert f"process {other.pid}, which is no longer running" in again.message
    again.close()
    assert not judging.lock_path(session.path).exists()


def test_a_reworded_query_is_pooled_again_and_stale_judgments_set_aside(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    session.grade("q1", "walrus.pdf", 2, 3)
    session.write_query("q1", "needle", "penguins")
    q = qrels.load(session.path)["q1"]
    assert ("walrus.pdf", 2) not in qrels.load(session.path).pooled["q1"]
    assert q.judgments == ()
    assert 'set_aside' in session.path.read_text() and "walrus.pdf" in session.path.read_text().split("set_aside")[1]


def test_validity_shows_before_any_page_is_read(session):
    lines = session.write_query("a1", "abstain", "zebra migration", kind="uncovered-need")
    assert "not in the corpus: zebra" in lines[0]
    lines = session.write_query("t1", "trap", "seal migration", distractor="seal.pdf")
    assert "BM25 ranks distractor seal.pdf at 1" in lines[0] and "nothing ranks above it" in lines[0]
    # before any gold page is judged, "traps" would be a guess: it names the pages that must not answer
    lines = session.write_query("t2", "trap", "walrus migration sea ice", distractor="ice.pdf")
    assert "no gold page judged yet" in lines[0] and "walrus.pdf#2 (1)" in lines[0] and "traps:" not in lines[0]
    session.pool("t2")
    session.grade("t2", "walrus.pdf", 2, 3)
    assert "NOT a trap" in session.before("t2")[0]
    session.write_query("d1", "described", "walrus migration follows the sea ice")
    session.pool("d1")
    assert any("shares the run" in line for line in session.before("d1"))


def test_marked_text_gives_the_page_back_exactly():
    text = "Walrus migration follows the sea ice; many migrations."
    runs = judging.mark(text, "walrus migrations")
    assert "".join(t for t, _ in runs) == text
    assert [t for t, m in runs if m] == ["Walrus", "migration", "migrations"]
    assert judging.escape("a\x1b[31mred\f") == "a\\x1b[31mred\n" + "-" * 20 + "\n"


def test_a_draft_becomes_a_query_and_a_regrade_file_is_blind(session, isolated):
    drafts = isolated / "drafts"
    drafts.mkdir()
    (drafts / "d.toml").write_text('corpus = "docs"\n[[draft]]\nid = "needle-01"\nclass = "needle"\n'
                                   'text = "walrus: what is it?"\nsource = "distinctive term"\n')
    [d] = session.drafts(drafts)
    qid = session.from_draft(d)
    assert qid == "needle-01" and "from draft needle-01" in session.path.read_text()
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    judge_all(session, "q1")
    second = judging.regrade(session, isolated / "second.toml", n=2)
    qs = qrels.load(second)
    assert sum(len(p) for p in qs.pooled.values()) == 2 and all(not q.judgments for q in qs.queries)


def test_judged_at_10_per_arm(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    assert set(session.judged_at("q1").values()) == {0.0}
    judge_all(session, "q1")
    assert set(session.judged_at("q1").values()) == {1.0}


@pytest.mark.slow
def test_evalkit_page_prints_the_whole_page_and_refuses_a_bad_id(docs):
    run = lambda pid: subprocess.run([sys.executable, "-m", "evalkit", "page", pid, "--docs", str(docs.corpus.root)],  # noqa: E731
                                     capture_output=True, text=True, env=os.environ)
    out = run("walrus.pdf#2")
    assert out.returncode == 0 and docs.page("walrus.pdf", 2).text.strip() in out.stdout
    bad = run("walrus.pdf#9")
    assert bad.returncode == 2 and "out of range for walrus.pdf (1..2)" in bad.stderr


def test_a_missing_file_is_created_for_the_corpus_with_its_folder(docs, isolated):
    path = isolated / "qrels" / 'new"set.toml'  # a fresh project: no qrels/ folder yet
    s = Session(path, docs, ARMS)
    s.write_query("q1", "needle", "walrus migration")
    s.close()
    qs = qrels.load(path)
    assert (qs.name, qs.corpus, qs["q1"].text) == ('new"set', docs.name, "walrus migration")


def test_an_adaptive_strategy_shows_its_next_page_alone_and_follows_the_judgments(docs, isolated):
    path = isolated / "mine.toml"
    path.write_text(HEADER)
    s = Session(path, docs, ARMS, strategy="mtf")
    s.write_query("q1", "needle", "walrus migration sea ice")
    pool = s.pool("q1")
    rankings = s.search("q1")
    for n in range(len(pool)):
        [nxt] = [i for i in s.queue("q1") if i.gain is None]  # one page readable at a time
        assert (nxt.doc, nxt.page) == s.strategy.next_page(rankings, s._judged("q1"))
        s.grade("q1", nxt.doc, nxt.page, 3 if n == 0 else 0)
    assert s.left("q1") == 0 and len(s.queue("q1")) == len(pool)
    s.close()
