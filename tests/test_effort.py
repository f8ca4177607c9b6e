"""The judging time log: read line by line, bad lines named, and summed into person-seconds per unit of work."""
import json

import pytest

from evalkit import effort
from evalkit.cli import main
from evalkit.qrels import QrelsError

from .conftest import one_line_error, query, query_file

QUERIES = (
    query("n1", "needle", "walrus migration", ("a.pdf", 2, 3)),
    query("d1", "described", "where the big animals go in winter", ("a.pdf", 1, 0)),
)


def line(action, query, seconds, doc=None, page=None, display=None, **extra):
    d = {"t": "2026-12-02T03:50:00Z", "action": action, "query": query, "doc": doc, "page": page,
         "display": display, "seconds": seconds, **extra}
    return json.dumps({k: v for k, v in d.items() if v is not None})


# n1 written by hand (saved twice: 40 s + 20 s); d1 accepted from a draft after one rejected draft (a trap);
# three pages graded, two shown as passages (one regraded), one as the whole page with its evidence taken
LOG = [line("query", "n1", 40), line("query", "n1", 20),
       line("draft-reject", "t9", 6, **{"class": "trap"}), line("draft-accept", "d1", 10),
       line("grade", "n1", 12, "a.pdf", 2, "passage"), line("grade", "n1", 3, "a.pdf", 2, "passage"),
       line("grade", "n1", 30, "b.pdf", 1, "page"), line("evidence", "n1", 15, "b.pdf", 1, "page"),
       line("grade", "d1", 9, "a.pdf", 1, "passage"), line("undo", "d1", 2)]


def rows(log_lines):
    log = [effort.parse(x, f"log:{i}") for i, x in enumerate(log_lines, 1)]
    return {(r.unit, r.by, r.group): (r.n, r.seconds) for r in effort.effort(log, {"n1": "needle", "d1": "described"})}


def test_seconds_are_summed_per_unit_of_work_by_class_and_display():
    assert rows(LOG) == {
        ("query written", "all", "all"): (1, 60), ("query written", "class", "needle"): (1, 60),
        # a rejected draft's seconds are part of what the accepted one cost
        ("draft accepted", "all", "all"): (1, 16), ("draft accepted", "class", "described"): (1, 10),
        ("draft accepted", "class", "trap"): (0, 6),
        ("page graded", "all", "all"): (3, 69), ("page graded", "class", "needle"): (2, 60),
        ("page graded", "class", "described"): (1, 9),
        ("page graded", "display", "passage"): (2, 24), ("page graded", "display", "page"): (1, 45)}


@pytest.mark.parametrize("bad, message", [
    ('{"t": "2026-12-02T03:50:00Z", "action": "grade", "query": "n1", "seconds": 3}', "field 'page' is None"),
    (line("grade", "n1", 3, "a.pdf", 2, "thumbnail"), "field 'display' is 'thumbnail', want passage or page"),
    (line("grade", "n1", -1, "a.pdf", 2, "page"), "field 'seconds' is -1.0"),
    (line("grade", "n1", True, "a.pdf", 2, "page"), "field 'seconds' is True"),
    (line("grade", "n1", 3, "a.pdf", 0, "page"), "field 'page' is 0"),
    (line("read", "n1", 3), "field 'action' is 'read', want one of query, draft-accept"),
    (line("query", "n1", 3).replace("03:50:00Z", "03:50:00"), "want a time zone"),
    (line("query", "n1", 3).replace("2026-12-02T03:50:00Z", "yesterday"), "field 't' is 'yesterday'"),
    ("[1, 2]", "not a JSON object"),
])
def test_a_bad_line_is_named_by_file_line_and_field(tmp_path, bad, message):
    log = tmp_path / ".q.toml.time"
    log.write_text("\n".join([LOG[0], bad, LOG[1]]) + "\n")
    with pytest.raises(QrelsError, match=rf"^{log}:2: .*{message}"):
        effort.read(log)


def test_a_last_line_cut_short_by_a_killed_kernel_is_left_out_and_said(tmp_path):
    log = tmp_path / ".q.toml.time"
    log.write_text("\n".join(LOG) + "\n" + LOG[0][:25])
    read = effort.read(log)
    assert len(read.actions) == len(LOG) and read.unfinished
    assert "an unfinished last line left out" in effort.table(read, effort.effort(read.actions, {})).splitlines()[0]
    log.write_text(LOG[0][:25] + "\n" + LOG[1] + "\n")  # the same cut in the middle is bad data
    with pytest.raises(QrelsError, match=":1: not a JSON object"):
        effort.read(log)


def test_qrels_effort_reads_the_log_beside_the_query_file(tmp_path, capsys):
    q = tmp_path / "q.toml"
    query_file(q, *QUERIES, name="tiny")
    assert effort.log_path(q) == tmp_path / ".q.toml.time"
    assert main(["qrels", "effort", str(q)]) == 2
    one_line_error(capsys, f"{tmp_path / '.q.toml.time'}: no time log")
    effort.log_path(q).write_text("\n".join(LOG) + "\n")
    assert main(["qrels", "effort", str(q)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"time log {effort.log_path(q)}: 10 actions, 2026-12-02 03:50 UTC to 2026-12-02 03:50 UTC; "
                      "147 person-seconds (0.04 person-hours)")
    assert out[2].split() == ["query", "written", "all", "all", "1", "60", "60.0"]
    assert ["page", "graded", "display", "passage", "2", "24", "12.0"] in [x.split() for x in out]
    effort.log_path(q).write_text(LOG[0] + "\n" + line("grade", "n1", 3, "a.pdf", 2, "tile") + "\n")
    assert main(["qrels", "effort", str(q)]) == 2
    one_line_error(capsys, ".q.toml.time:2: field 'display' is 'tile'")


def test_the_reading_model_takes_the_median_seconds_of_a_graded_page_from_the_log(tmp_path):
    q = tmp_path / "q.toml"
    query_file(q, *QUERIES, name="tiny")
    assert effort.beside(q) is None
    alone = effort.reading_model(None)
    # 80 words at 250 words/min: 0.32 min = 19.2 s a page; 100 pages = 1920 s
    assert (alone.words, alone.wpm, alone.decision) == (80, 250, None)
    assert alone.hours(100) == pytest.approx(1920 / 3600)
    assert alone.statement == ("person-hours: 80 words shown per page at 250 words/min "
                               "(reading alone; no time log yet; 19.2 s per page)")
    effort.log_path(q).write_text(LOG[0] + "\n")  # a log without a grade claims no decision time either
    assert effort.reading_model(effort.beside(q)).source == "reading alone; no grade in .q.toml.time yet"
    # per graded page: 12 + 3, 30 + 15 (its evidence), 9 seconds; a page only skipped was not graded and is left
    # out; less reading 80 words at 250 words/min (19.2 s; these lines, as an older log's, record no words):
    # 0, 25.8, 0 -> median 0
    effort.log_path(q).write_text("\n".join([*LOG, line("skip", "n1", 100, "c.pdf", 5, "passage")]) + "\n")
    model = effort.reading_model(effort.beside(q))
    assert model.decision == 0
    # with the words each showed: b.pdf 1 showed 500 words whole (120 s of reading: more than its 45 s, so 0),
    # a.pdf 2 showed 25 (6 s: 15 - 6 = 9), d1's a.pdf 1 showed 10 (2.4 s: 9 - 2.4 = 6.6) -> median 6.6
    shown = {("a.pdf", 2): 25, ("b.pdf", 1): 500, ("a.pdf", 1): 10}
    worded = [json.dumps({**d, "words": shown[d["doc"], d["page"]]} if "doc" in d else d)
              for d in map(json.loads, LOG)]
    effort.log_path(q).write_text("\n".join(worded) + "\n")
    model = effort.reading_model(effort.beside(q))
    assert model.decision == pytest.approx(6.6)
    assert model.hours(100) == pytest.approx(100 * (19.2 + 6.6) / 3600)
    assert model.statement == ("person-hours: 80 words shown per page at 250 words/min + median decision 6.6 s "
                               "(measured over 3 graded pages in .q.toml.time, less their reading; 25.8 s per page)")
