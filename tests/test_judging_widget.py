"""The workbench widget's Python half, driven with the messages its view sends (the browser test drives the
view itself): keys become judgments in the file, and the view gets text only."""
from __future__ import annotations

import json

import pytest

import evalkit as ek
from evalkit import judging_file, qrels
from tests.test_judging import ARMS, HEADER, docs  # noqa: F401 - fixture


def send(w, **msg):
    w._on_msg(w, msg, [])


def pooled(docs, isolated, text: str):  # noqa: F811
    """A workbench on a new file with query q1 written and pooled, as the keys do it."""
    path = isolated / "mine.toml"
    path.write_text(HEADER)
    w = ek.judge(path, docs, ARMS)
    send(w, action="write", id="q1", **{"class": "needle"}, text=text)
    send(w, action="pool")
    return path, w


def goto(w, pid: str) -> None:
    send(w, action="move", value=-99)
    for _ in range(99):
        if w.view["item"]["id"] == pid:
            return
        send(w, action="move", value=1)
    raise AssertionError(f"{pid} is not in the queue")


def test_keys_become_judgments_and_a_reopened_workbench_resumes(docs, isolated):  # noqa: F811
    path, w = pooled(docs, isolated, "walrus migration sea ice")
    assert w.view["left"] == len(qrels.load(path).pooled["q1"]) and w.view["segments"]
    first = w.view["item"]["id"]
    send(w, action="grade", value=2)
    send(w, action="rubric")
    assert w.view["show_rubric"] and w.view["rubric"]["3"] == qrels.DEFAULT_GAINS[3]
    send(w, action="evidence", text="not on any page at all")
    assert "not on" in w.view["message"]
    send(w, action="image")
    assert w.view["image"].startswith("iVBOR")  # a PNG
    w.close()
    with pytest.warns(DeprecationWarning, match="corpus="):
        again = ek.judge(path, docs=docs, arms=ARMS)  # the corpus's old keyword, for one release
    assert again.view["item"]["id"] != first and again.view["item"]["gain"] is None
    assert qrels.load(path)["q1"].judgments[0].gain == 2
    again.close()


def test_a_hand_edit_is_kept_and_told_and_a_page_it_removed_is_not_graded(docs, isolated):  # noqa: F811
    path, w = pooled(docs, isolated, "walrus migration sea ice")
    shown = w.view["item"]["id"]
    path.write_text(path.read_text().replace('name = "mine"', 'name = "renamed"') + "# mine\n")
    send(w, action="grade", value=2)
    assert "changed on disk" in w.view["message"]
    qs = qrels.load(path)
    assert qs.name == "renamed" and path.read_text().endswith("# mine\n")
    assert [(f"{j.doc}#{j.page}", j.gain) for j in qs["q1"].judgments] == [(shown, 2)]
    shown = w.view["item"]["id"]  # the next page; the hand edit now takes it out of the pool
    edited = path.read_text().replace(f'"{shown}",', "").replace(f'"{shown}"', "")
    path.write_text(edited)
    send(w, action="grade", value=3)
    assert w.view["message"].count("\n") == 0 and f"{shown} is no longer a page of query 'q1'" in w.view["message"]
    assert path.read_text() == edited
    path.write_text(edited.replace("pooled = [", 'pooled = ["nosuch.pdf#1", ', 1))  # a page the corpus lacks
    send(w, action="move", value=-99)
    assert w.view["item"] is None and "nosuch.pdf#1 is not a page of corpus" in w.view["message"]
    w.close()


def test_running_the_cell_again_replaces_the_earlier_workbench_which_then_writes_nothing(docs, isolated):  # noqa: F811
    path, first = pooled(docs, isolated, "walrus migration sea ice")
    send(first, action="grade", value=2)
    second = ek.judge(path, docs, ARMS)  # the same cell run again
    assert "earlier workbench of this kernel on this file is closed" in second.view["message"]
    written = path.read_bytes()
    send(first, action="grade", value=3)
    assert "replaced by a newer workbench" in first.view["message"] and path.read_bytes() == written
    first.close()  # closing the old one leaves the new one's lock alone
    assert judging_file.lock_path(path).exists()
    send(second, action="grade", value=1)
    send(second, action="note", text="checked twice")
    assert [j.gain for j in qrels.load(path)["q1"].judgments] == [2, 1]
    assert second.view["left"] == len(qrels.load(path).pooled["q1"]) - 2
    second.close()


def test_a_lone_surrogate_or_a_broken_file_is_a_message_and_the_next_key_works(docs, isolated):  # noqa: F811
    path, w = pooled(docs, isolated, "walrus migration sea ice")
    send(w, action="note", text="half an emoji \ud83d")  # what a browser may send
    assert "lone surrogate" in w.view["message"] and "\n" not in w.view["message"]
    good = path.read_text()
    path.write_text(good + "[[query]\n")
    send(w, action="grade", value=2)
    assert "not valid TOML" in w.view["message"] and "\n" not in w.view["message"]
    path.write_text(good)
    send(w, action="grade", value=2)
    assert w.view["message"] == "" and [j.gain for j in qrels.load(path)["q1"].judgments] == [2]
    w.close()


def test_a_reworded_query_shows_its_graded_pages_again_with_the_grade_they_had(docs, isolated):  # noqa: F811
    path, w = pooled(docs, isolated, "walrus migration")
    for _ in range(w.view["left"]):
        send(w, action="grade", value=3 if w.view["item"]["id"] == "walrus.pdf#2" else 0)
    assert w.view["left"] == 0
    send(w, action="write", id="q1", **{"class": "needle"}, text="how large is a walrus")
    assert w.view["left"] > 0 and w.view["item"]["reread"] == "walrus migration"
    goto(w, "walrus.pdf#2")
    assert w.view["item"]["gain"] == 3 and w.view["item"]["reread"] == "walrus migration"
    send(w, action="grade", value=1)
    goto(w, "walrus.pdf#2")
    assert w.view["item"]["previous"] == "3 under 'walrus migration'" and not w.view["item"]["reread"]
    assert w.view["item"]["evidence"] == ""  # the quote was for the earlier wording: taken again
    w.close()


def test_each_key_logs_the_persons_seconds_beside_the_file(docs, isolated):  # noqa: F811
    from evalkit import effort
    from tests.test_judging_time import Clock

    path, w = pooled(docs, isolated, "walrus migration sea ice")
    clock = w.session.timer.clock = Clock()
    send(w, action="move", value=1)  # another page shown: its clock starts
    shown = w.view["item"]
    clock.tick(9)
    send(w, action="grade", value=0)
    clock.tick(5)
    send(w, action="skip")
    log = effort.read(effort.log_path(path)).actions
    assert [(a.action, a.query) for a in log[:2]] == [("query", "q1"), ("grade", "q1")]  # the query written
    grade = log[1]
    assert (f"{grade.doc}#{grade.page}", grade.seconds, grade.display) == (shown["id"], 9.0, w.shows)
    assert log[2].action == "skip" and log[2].seconds == 5.0
    assert "time" not in path.read_text()
    w.close()


LONG = " ".join(f"filler{i} text" for i in range(150))


def long_page(isolated):  # noqa: F811
    """A workbench on a corpus of one long page (query words in its middle) and one short page."""
    from tests.conftest import make_pdf

    folder = isolated / "long"
    folder.mkdir()
    make_pdf(folder / "long.pdf", [f"{LONG} the walrus herds cross the sea ice in spring. {LONG}", "A walrus page."])
    path = isolated / "long.toml"
    w = ek.judge(path, ek.corpus(docs=folder, progress=False), ["keyword"])
    send(w, action="write", id="q1", **{"class": "needle"}, text="walrus on the sea ice")
    send(w, action="pool")
    return path, w


def test_passage_first_the_whole_page_one_key_away_and_the_display_timed(isolated):
    from evalkit import effort
    from evalkit.text import words

    path, w = long_page(isolated)
    goto(w, "long.pdf#1")
    v = w.view
    assert v["display"] == "passage" and not v["short"]
    runs = ["".join(r for r, _ in p) for p in v["passages"]]
    assert any("walrus herds cross the sea ice" in r for r in runs) and sum(map(len, runs)) < len(LONG)
    assert ["walrus", True] in [list(r) for p in v["passages"] for r in p]  # the query's words marked
    send(w, action="note", text="seen in its passages")  # timed with the words the passages show
    send(w, action="whole")
    assert w.view["display"] == "page" and not w.view["passages"] and len(w.view["segments"]) > 1
    send(w, action="grade", value=3)  # graded from the whole page
    goto(w, "long.pdf#2")
    assert w.view["display"] == "page" and w.view["short"]  # a short page is its own passage: shown whole
    goto(w, "long.pdf#1")
    assert w.view["display"] == "passage"  # another page shown: passage first again
    actions = [a for a in effort.read(effort.log_path(path)).actions if a.page == 1]
    assert [(a.action, a.display) for a in actions] == [("note", "passage"), ("grade", "page")]
    whole = words(f"{LONG} the walrus herds cross the sea ice in spring. {LONG}")
    assert [a.words for a in actions] == [sum(len(words(r)) for r in runs), len(whole)]
    w.close()


def test_evidence_before_the_grade_is_kept_for_it_and_a_stray_digit_does_not_regrade(docs, isolated):  # noqa: F811
    path, w = pooled(docs, isolated, "walrus migration sea ice")
    goto(w, "walrus.pdf#2")
    send(w, action="evidence", text="follows the sea ice south")
    assert "kept for the grade" in w.view["message"] and w.view["item"]["kept"]
    assert not qrels.load(path)["q1"].judgments  # nothing written before the grade
    send(w, action="grade", value=3)  # grade and evidence, one write; on to the next page
    assert w.view["item"]["id"] != "walrus.pdf#2"
    [j] = qrels.load(path)["q1"].judgments
    assert (j.page, j.gain, j.evidence) == (2, 3, "follows the sea ice south")
    goto(w, "walrus.pdf#2")
    send(w, action="evidence", text="herds travel")  # on a graded page: stored, the page stays
    assert w.view["item"]["id"] == "walrus.pdf#2" and qrels.load(path)["q1"].judgments[0].evidence == "herds travel"
    send(w, action="grade", value=1)  # a stray digit: asks
    assert "press 1 again" in w.view["message"] and qrels.load(path)["q1"].judgments[0].gain == 3
    send(w, action="grade", value=1)  # pressed again: regraded
    assert qrels.load(path)["q1"].judgments[0].gain == 1
    goto(w, "walrus.pdf#2")
    send(w, action="grade", value=1)  # the grade it has: moves on, writes nothing
    assert w.view["item"]["id"] != "walrus.pdf#2" and "again" not in w.view["message"]
    w.close()


def test_a_page_found_by_search_outside_the_pool_is_graded_and_recorded_as_found(docs, isolated):  # noqa: F811
    from evalkit import effort

    path, w = pooled(docs, isolated, "walrus migration sea ice")
    pool = set(qrels.load(path).pooled["q1"])
    assert w.view["search_arm"] == ARMS[0]  # the first pooled arm unless told
    send(w, action="find", text="penguins", arm="keyword")
    assert w.view["found"] == {"arm": "keyword", "n": w.view["found"]["n"]} and w.view["item"]["id"] == "seal.pdf#2"
    assert ("seal.pdf", 2) not in pool
    send(w, action="grade", value=0)
    qs = qrels.load(path)
    assert qs.found["q1"] == {("seal.pdf", 2): "search:keyword"} and set(qs.pooled["q1"]) == pool
    send(w, action="unfind")
    assert w.view["found"] is None and w.view["item"]["id"] != "seal.pdf#2"
    send(w, action="find", text="penguins", arm="no-such-arm")
    assert "no-such-arm" in w.view["message"] and "unknown arm" in w.view["message"]
    log = effort.read(effort.log_path(path)).actions
    assert [a.action for a in log][-2:] == ["search", "grade"] and log[-1].page == 2
    w.close()



def test_drafts_stream_one_key_each_with_the_class_balance_and_the_time(docs, isolated):  # noqa: F811
    from evalkit import effort
    from evalkit.draft import Draft, to_toml

    path, w = pooled(docs, isolated, "walrus migration sea ice")
    w.drafts_dir = isolated / "drafts"
    w.drafts_dir.mkdir()
    (w.drafts_dir / "docs.toml").write_text(to_toml(  # as `evalkit qrels draft` writes them
        [Draft(f"{c}-0{n}", c, f"<b>walrus</b> {c} {n}?", f"src {n}", (("walrus.pdf", 2),)) for c in ("needle", "trap")
         for n in (1, 2)], "docs"))
    send(w, action="draft")
    dv = w.view["draft"]
    assert dv["current"]["id"] == "needle-01" and dv["current"]["pages"] == ["walrus.pdf#2"] and dv["left"] == 4
    assert dv["balance"]["needle"] == [1, 2] and dv["balance"]["trap"] == [0, 2]  # queries, drafts left
    assert dv["current"]["text"] == "<b>walrus</b> needle 1?"  # text, never markup (the view sets it as text)
    send(w, action="draft_accept")
    send(w, action="draft_reject")
    send(w, action="draft_class", value="trap")
    assert w.view["draft"]["current"]["id"] == "trap-01" and w.view["draft"]["left"] == 2
    send(w, action="draft_accept", text="which walrus page is a trap?")
    send(w, action="draft_accept")
    assert w.view["draft"]["current"] is None and "no trap left" not in w.view["message"]
    send(w, action="draft_accept")
    assert "no trap left" in w.view["message"]
    qs = qrels.load(path)
    assert [q.id for q in qs.queries] == ["q1", "needle-01", "trap-01", "trap-02"]
    assert qs["trap-01"].text == "which walrus page is a trap?" and 'drafted = "trap-01: src 1"' in path.read_text()
    log = [(a.action, a.query, a.cls) for a in effort.read(effort.log_path(path)).actions
           if a.action.startswith("draft")]
    assert log == [("draft-accept", "needle-01", None), ("draft-reject", "needle-02", "needle"),
                   ("draft-accept", "trap-01", None), ("draft-accept", "trap-02", None)]
    send(w, action="draft")
    assert w.view["draft"] is None and w.view["item"]
    w.close()


@pytest.mark.slow
def test_the_workbench_shows_the_judge_blind_and_after_each_grade_whether_the_gate_can_decide(docs,  # noqa: F811
                                                                                             isolated):
    """Given a run to gate, the workbench shows the judge's agreement and refusals and "can I decide yet?";
    the judge's opinion of a page reaches the view only once the person has graded the page, and the line
    is computed again after a grade, not after a key that changes none."""
    from .test_judging_gate import gain, gated

    path, res, _, rules = gated(isolated)
    w = ek.judge(path, docs, ARMS, results=res, baseline_arm="base", candidate_arm="cand", rules=rules)
    assert "refused for" in w.view["judge"]["summary"] and w.view["judge"]["classes"]
    first = w.view["decide"]
    assert first["status"] == "undecided" and first["grade"] == "undecided: grade 1 more query (6 pages): " + \
        first["next"].split()[1].rstrip(",")
    ask = first["next"].split()[1].rstrip(",")
    while w.view["query"]["id"] != ask:
        send(w, action="query", value=1)
    decided = []
    real = w.beside.decider.decide
    w.beside.decider.decide = lambda qs: decided.append(1) or real(qs)
    send(w, action="move", value=1)
    send(w, action="whole")
    send(w, action="move", value=-1)
    assert decided == [] and w.view["decide"] == first  # no grade changed: nothing computed
    shown = w.view["item"]
    state = json.dumps(w.get_state(["view"]))
    assert shown["judge"] == "" and "the judge: " not in state and "P(gain" not in state  # blind before a grade
    doc, page = shown["id"].split("#")
    send(w, action="grade", value=gain(ask, (doc, int(page))))
    assert decided == [1] and w.view["decide"]["next"] != first["next"]
    assert "(5 of its 6 pooled pages left)" in w.view["decide"]["next"]
    goto(w, shown["id"])
    assert w.view["item"]["judge"].startswith("the judge: most likely grade ")  # graded: now it may be seen
    for _ in range(10):  # the rest of the query asked for (the page graded moves on with the same grade)
        doc, page = w.view["item"]["id"].split("#")
        send(w, action="grade", value=gain(ask, (doc, int(page))))
        if not w.view["left"]:
            break
    assert w.view["left"] == 0 and w.view["decide"]["status"] == "pass"
    assert w.view["decide"]["text"].startswith("decided: PASS")
    w.close()
