"""The judging workbench's logic on a tiny corpus of real PDFs: nothing is lost, the pool is blind, validity
shows before judging, and what it writes is what ``qrels check --strict`` accepts."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import tomllib

import pytest

from evalkit import api, judging, judging_file, qrels, undo
from evalkit.judging import JudgingError, Session
from tests.conftest import make_pdf, one_line_error

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
    assert [p.message[:14] for p in session.problems("q1")] == ["not graded yet"]  # said once, not page by page
    first = session.queue("q1")[0]
    session.grade("q1", first.doc, first.page, 3 if first.id == "walrus.pdf#2" else 0)
    assert any(p.field == "pooled" and "not judged yet" in p.message for p in session.problems("q1"))
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


HOLDER = """
import sys
import evalkit as ek
from evalkit.judging import JudgingError, Session
docs = ek.corpus(docs=sys.argv[2], progress=False)
for _ in sys.stdin:  # "go": open the file, say whether it got in, hold it until the next line, close it
    try:
        s = Session(sys.argv[1], docs, ())
        print("in", flush=True)
    except JudgingError as e:
        s = None
        print("refused", e, flush=True)
    sys.stdin.readline()
    if s is not None:
        s.close()
    print("closed", flush=True)
"""


def holders(session, n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOLDER, str(session.path), str(session.docs.corpus.root)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ)
            for _ in range(n)]


def say(procs: list[subprocess.Popen], line: str) -> list[str]:
    for p in procs:
        p.stdin.write(line + "\n")
        p.stdin.flush()
    return [p.stdout.readline().strip() for p in procs]


def test_a_second_workbench_of_this_process_is_refused_and_one_closed_or_dropped_frees_the_file(session, docs):
    with pytest.raises(JudgingError, match="open in another workbench of this process"):
        Session(session.path, docs, ARMS)
    session.write_query("q1", "needle", "walrus migration sea ice")  # the first still writes
    assert judging_file.lock_path(session.path).exists()
    session.close()
    with pytest.raises(JudgingError, match="writes nothing more: it was closed"):
        session.grade("q1", "walrus.pdf", 2, 3)
    again = Session(session.path, docs, ARMS)
    del again  # dropped without close (a garbage-collected widget): the lock goes with it
    gc.collect()
    third = Session(session.path, docs, ARMS)
    third.grade("q1", "walrus.pdf", 2, 3)
    third.close()
    assert not judging_file.lock_path(session.path).exists()
    assert [(j.doc, j.page, j.gain) for j in qrels.load(session.path)["q1"].judgments] == [("walrus.pdf", 2, 3)]


def test_a_workbench_of_another_process_is_refused_by_name_and_taken_over_once_it_is_killed(session, docs):
    session.close()
    [other] = holders(session, 1)
    try:
        assert say([other], "go") == ["in"]
        with pytest.raises(JudgingError, match=f"open in another workbench \\(pid {other.pid} on "):
            Session(session.path, docs, ARMS)
    finally:
        other.kill()  # SIGKILL: it never releases anything
        other.wait()
    again = Session(session.path, docs, ARMS)
    assert f"process {other.pid}, which is no longer running" in again.message
    again.close()
    assert not judging_file.lock_path(session.path).exists()


def test_two_workbenches_opening_at_the_same_instant_never_both_get_in(session):
    session.close()
    procs = holders(session, 2)
    try:
        for _ in range(20):
            got = say(procs, "go")  # both are waiting on this line: they try at the same instant
            assert sorted(g.split()[0] for g in got) == ["in", "refused"], got
            assert say(procs, "end") == ["closed", "closed"]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait(timeout=600)


def test_a_reworded_query_is_pooled_again_and_only_pages_below_gain_2_set_aside(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    session.grade("q1", "walrus.pdf", 2, 3)
    session.grade("q1", "ice.pdf", 1, 0)
    session.write_query("q1", "needle", "penguins")
    qs = qrels.load(session.path)
    assert {("walrus.pdf", 2), ("ice.pdf", 1)}.isdisjoint(qs.pooled["q1"])
    assert [(j.doc, j.page, j.gain) for j in qs["q1"].judgments] == [("walrus.pdf", 2, 3)]  # never set aside unasked
    aside = tomllib.loads(session.path.read_text())["query"][0]["set_aside"]
    assert aside == [{"doc": "ice.pdf", "page": 1, "gain": 0, "reread": "walrus migration sea ice"}]


def test_pooling_again_keeps_every_grade_of_the_query_as_it_reads_now(session, docs, isolated):
    """A pool drawn again for the same wording, by the same arms or others (a notebook with arms of its own),
    sets nothing aside: a page found by a search outside the pool and graded 0, or one only the earlier arms
    drew, was read for this very text."""
    session.write_query("q1", "needle", "walrus migration sea ice")
    pool = session.pool("q1")
    judge_all(session, "q1")
    arm, found = session.find("Penguins are not seals")
    outside = next(p for p in found if p not in pool)
    session.grade("q1", *outside, 0, found_by=f"search:{arm}")
    graded = sorted((j.doc, j.page, j.gain) for j in qrels.load(session.path)["q1"].judgments)
    session.pool("q1")
    session.close()
    other = Session(session.path, docs, ["global-index"], "depth(k=1)")
    other.pool("q1")
    other.close()
    assert sorted((j.doc, j.page, j.gain) for j in qrels.load(session.path)["q1"].judgments) == graded
    assert "set_aside" not in tomllib.loads(session.path.read_text())["query"][0]


def test_a_reword_sends_every_graded_page_back_to_be_read_and_keeps_the_old_grade_as_previous(session):
    session.write_query("q1", "needle", "walrus migration")
    session.pool("q1")
    judge_all(session, "q1")
    graded = [i.id for i in session.queue("q1")]
    assert session.left("q1") == 0
    session.write_query("q1", "needle", "how large is a walrus")
    queue = session.queue("q1")
    again = [i.id for i in queue if i.reread == "walrus migration"]
    assert set(again) == set(graded) & {i.id for i in queue} and "walrus.pdf#2" in again
    assert session.left("q1") == len(again) + sum(i.gain is None for i in queue)
    assert qrels.load(session.path)["q1"].judgments[-1].gain == 3  # it still counts until read again
    strict = [p.message for p in session.problems("q1") if p.field == "judgments"]
    assert any("graded under an earlier wording, to read again" in m and "walrus.pdf#2" in m for m in strict)
    session.grade("q1", "walrus.pdf", 2, 1)
    j = tomllib.loads(session.path.read_text())["query"][0]["judgments"]
    [w] = [x for x in j if x["doc"] == "walrus.pdf" and x["page"] == 2]
    assert w == {"doc": "walrus.pdf", "page": 2, "gain": 1,
                 "previous": {"gain": 3, "text": "walrus migration", "evidence": "follows the sea ice south"}}
    assert session.left("q1") == len(again) - 1 + sum(i.gain is None for i in queue)


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
    lines = session.write_query("d1", "described", "walrus migration follows the sea ice")
    # not pooled: no overlap is claimed; the pages BM25 ranks first are named, as a trap's are
    assert "no pool yet" in lines[1] and "keyword-easy if one of the pages BM25 ranks first answers: " \
        "walrus.pdf#2 (1)" in lines[0], lines
    session.pool("d1")
    assert any("shares the run" in line for line in session.before("d1"))
    session.grade("d1", "walrus.pdf", 2, 3)
    assert "keyword-easy: BM25 ranks gold page walrus.pdf#2 at 1" in session.before("d1")[0]
    session.write_query("d2", "described", "how far do tusked animals travel when the frozen sea moves")
    session.pool("d2")
    session.grade("d2", "seal.pdf", 1, 2)  # a gold page BM25 does not put first: not keyword-easy
    assert "BM25 ranks no gold page in its top 3" in session.before("d2")[0], session.before("d2")


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
    assert qid == "needle-01" and 'drafted = "needle-01: distinctive term"' in session.path.read_text()
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


def test_evalkit_page_prints_the_whole_page_and_refuses_a_bad_id(docs, capsys):
    """The command in this process (what it prints and returns is tested, not an interpreter's start)."""
    from evalkit.cli import main

    assert main(["page", "walrus.pdf#2", "--docs", str(docs.corpus.root)]) == 0
    assert docs.page("walrus.pdf", 2).text.strip() in capsys.readouterr().out
    assert main(["page", "walrus.pdf#9", "--docs", str(docs.corpus.root)]) == 2
    one_line_error(capsys, "out of range for walrus.pdf (1..2)")


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


def test_the_workbench_opens_a_query_file_with_a_byte_order_mark_and_crlf(docs, isolated):
    """Editors on Windows write UTF-8 with a BOM and CRLF line endings: the workbench reads it like any file."""
    path = isolated / "windows.toml"
    text = HEADER + '[[query]]\nid = "q1"\nclass = "needle"\ntext = "walrus migration"\n'
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    s = Session(path, docs, ARMS)
    try:
        assert s.ids() == ["q1"] and s.query_set().name == "mine"
    finally:
        s.close()


def test_a_hand_edit_made_while_the_workbench_is_open_is_kept(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    edited = session.path.read_text().replace('name = "mine"', 'name = "renamed"') + \
        '\n# added by hand\n[[query]]\nid = "q2"\nclass = "needle"\ntext = "seal migration"\n'
    session.path.write_text(edited)
    session.grade("q1", "walrus.pdf", 2, 3)
    qs = qrels.load(session.path)
    assert qs.name == "renamed" and [q.id for q in qs.queries] == ["q1", "q2"]
    assert "# added by hand" in session.path.read_text()
    assert [(j.doc, j.page, j.gain) for j in qs["q1"].judgments] == [("walrus.pdf", 2, 3)]
    assert session.undo() and session.path.read_text() == edited  # undo takes the grade back, not the edit


def test_an_action_the_hand_edit_left_without_its_query_is_refused_and_writes_nothing(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    edited = session.path.read_text().replace('id = "q1"', 'id = "renamed"')
    session.path.write_text(edited)
    with pytest.raises(JudgingError, match="no query 'q1'"):
        session.grade("q1", "walrus.pdf", 2, 3)
    assert session.path.read_text() == edited and session.ids() == ["renamed"]


KILLED = """
import sys, time
import evalkit as ek
from evalkit import judging, undo
from evalkit.judging import Session
s = Session(sys.argv[1], ek.corpus(docs=sys.argv[2], progress=False), ())
real, calls = judging.write_atomic, []
def pausing(path, text):  # the action's writes, in order; the one named by argv[3] never happens
    calls.append(path)
    if len(calls) == int(sys.argv[3]):
        print("paused before", path.name, flush=True)
        time.sleep(3600)
    real(path, text)
judging.write_atomic = undo.write_atomic = pausing
s.grade("q1", "walrus.pdf", 2, 3)
"""


@pytest.mark.parametrize("write", [1, 2])
def test_a_kill_between_the_two_writes_of_an_action_leaves_undo_usable(session, docs, write):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    pooled = session.path.read_text()
    session.grade("q1", "walrus.pdf", 1, 0)
    graded = session.path.read_text()
    session.close()
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(session.path), str(docs.corpus.root), str(write)],
                             stdout=subprocess.PIPE, text=True, env=os.environ)
    try:
        assert child.stdout.readline().startswith("paused before")
    finally:
        child.kill()  # SIGKILL between the journal's write and the file's (or before both)
        child.wait()
    again = Session(session.path, docs, ARMS)
    landed = again.path.read_text() != graded
    assert again.undo()  # never "edited by hand?"
    assert again.path.read_text() == (graded if landed else pooled)
    again.grade("q1", "walrus.pdf", 2, 2)
    assert again.undo() and again.path.read_text() == (graded if landed else pooled)
    again.close()


def one_line_refusal(s: Session, match: str) -> None:
    before = s.path.read_bytes()
    for act in (lambda: s.grade("q1", "walrus.pdf", 2, 3), s.undo):
        with pytest.raises(JudgingError, match=match) as e:
            act()
        assert "\n" not in str(e.value) and s.path.read_bytes() == before


def test_a_broken_journal_or_query_file_is_refused_in_one_line_and_nothing_is_half_done(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    journal = undo.journal_path(session.path)
    journal.unlink()
    journal.mkdir()
    one_line_refusal(session, "undo journal cannot be read \\(a folder\\)")
    journal.rmdir()
    journal.write_bytes(b"\xff\xfe not json\n")
    one_line_refusal(session, "undo journal cannot be read \\(not UTF-8\\)")
    journal.unlink()
    good = session.path.read_text()
    session.path.write_text(good + "[[query]\n")  # broken by hand
    one_line_refusal(session, "mine.toml: not valid TOML")
    session.path.write_text(good.replace('class = "needle"', "class = 5"))
    one_line_refusal(session, "mine.toml: query 'q1': field 'class' is missing or not a str")
    session.path.write_text(good)
    session.grade("q1", "walrus.pdf", 2, 3)  # fixed by hand: the workbench goes on
    assert qrels.load(session.path)["q1"].judgments[0].gain == 3


def test_a_lone_surrogate_is_refused_where_it_comes_in_and_blocks_nothing_after(session):
    session.write_query("q1", "needle", "walrus migration sea ice")
    session.pool("q1")
    session.grade("q1", "walrus.pdf", 2, 3)
    before = session.path.read_bytes()
    with pytest.raises(JudgingError, match="lone surrogate \\(U\\+D83D"):
        session.note("q1", "seal \ud83d", "walrus.pdf", 2)
    assert session.path.read_bytes() == before
    session.note("q1", "a seal", "walrus.pdf", 2)
    session.grade("q1", "walrus.pdf", 1, 0)
    assert [j.gain for j in qrels.load(session.path)["q1"].judgments] == [3, 0]


def test_crlf_line_endings_and_a_byte_order_mark_are_kept_and_undone_byte_for_byte(docs, isolated):
    path = isolated / "windows.toml"
    original = b"\xef\xbb\xbf" + HEADER.replace("\n", "\r\n").encode()
    path.write_bytes(original)
    s = Session(path, docs, ARMS)
    s.write_query("q1", "needle", "walrus migration sea ice")
    s.pool("q1")
    s.grade("q1", "walrus.pdf", 2, 3)
    raw = path.read_bytes()
    assert raw.startswith(original) and raw.count(b"\n") == raw.count(b"\r\n") > HEADER.count("\n")
    assert tomllib.loads(raw.decode("utf-8-sig"))["query"][0]["judgments"][0]["gain"] == 3
    while s.undo():
        pass
    assert path.read_bytes() == original
    s.close()


def test_passages_are_the_best_windows_verbatim_in_page_order():
    filler = " ".join(f"word{i}" for i in range(200))
    text = f"{filler} the walrus herds cross the sea ice\nin spring. {filler} walrus alone. {filler}"
    got = judging.passages(text, "walrus on sea ice", size=10, n=2)
    assert len(got) == 2 and all(p in text for p in got)  # verbatim
    assert "sea ice" in got[0] and "walrus" in got[1] and text.index(got[0]) < text.index(got[1])
    assert judging.passages(filler, "walrus", size=10) == [filler[:filler.index(" word10")]]  # no match: the start
    assert judging.passages("a short page on walrus", "walrus") == ["a short page on walrus"]
    assert judging.passages("  ", "walrus") == []


def test_drafts_stream_accepted_edited_rejected_each_once(session, isolated):
    drafts = isolated / "drafts"
    drafts.mkdir()
    (drafts / "d.toml").write_text('corpus = "docs"\n' + "".join(
        f'[[draft]]\nid = "{c}-0{n}"\nclass = "{c}"\ntext = "walrus {c} {n}?"\nsource = "src {n}"\n'
        for c in ("needle", "abstain") for n in (1, 2)))
    assert [d["id"] for d in session.fresh_drafts(drafts, "abstain")] == ["abstain-01", "abstain-02"]
    first, second, third, _ = session.fresh_drafts(drafts)
    session.reject_draft(first)
    session.from_draft(second, text="  where do walruses go in autumn?  ")
    session.from_draft(third)
    assert [d["id"] for d in session.fresh_drafts(drafts)] == ["abstain-02"]
    qs = qrels.load(session.path)
    assert qs["needle-02"].text == "where do walruses go in autumn?" and qs["abstain-01"].kind == "uncovered-need"
    assert 'drafted = "needle-02: src 2"' in session.path.read_text()
    assert session.balance() == {**dict.fromkeys(judging.CLASSES, 0), "needle": 1, "abstain": 1}
    session.undo()  # the accept undone: the draft is offered again
    assert [d["id"] for d in session.fresh_drafts(drafts)] == ["abstain-01", "abstain-02"]
