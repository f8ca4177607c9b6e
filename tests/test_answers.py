import math

import pytest

from evalkit.answers import AnswerError, collapse, from_output, page_starts, place, problem
from evalkit.records import Answer, Chunk, Hit

PAGES = {"a.pdf": 2, "b.pdf": 1}
TEXTS = {"a.pdf": ["alpha beta gamma", "delta epsilon"], "b.pdf": ["zeta eta theta"]}


@pytest.mark.parametrize("hits, needle", [
    ((Hit("c.pdf", 1, 1.0),), "document 'c.pdf', which is not in the corpus"),
    ((Hit("a.pdf", 3, 1.0),), "page 3 of 'a.pdf' is outside 1..2"),
    ((Hit("a.pdf", 0, 1.0),), "page 0 of 'a.pdf' is outside 1..2"),
    ((Hit("a.pdf", True, 1.0),), "page True"),
    ((Hit("a.pdf", 1, math.nan),), "score nan, not a finite number"),
    ((Hit("a.pdf", 1, math.inf),), "score inf"),
    ((Hit("a.pdf", 1, 2.0), Hit("b.pdf", 1, 1.0), Hit("a.pdf", 1, 0.5)), "hit 3 repeats page a.pdf#1"),
])
def test_problem_names_the_hit_and_why(hits, needle):
    assert needle in problem(Answer(hits), PAGES)


def test_a_valid_answer_has_no_problem_and_a_veto_confidence_is_a_number():
    assert problem(Answer((Hit("a.pdf", 2, 0.3), Hit("b.pdf", 1, 0.2)), confidence=-math.inf), PAGES) == ""
    assert "confidence nan" in problem(Answer((), confidence=math.nan), PAGES)


def test_spans_map_to_the_pages_they_overlap():
    texts = TEXTS["a.pdf"]  # "alpha beta gamma" (0..16), "\f" at 16, "delta epsilon" (17..30)
    assert page_starts(texts) == [0, 17]
    assert place(Chunk("a.pdf", start=0, end=5), texts) == (1,)
    assert place(Chunk("a.pdf", start=12, end=22), texts) == (1, 2)
    assert place(Chunk("a.pdf", start=17, end=30), texts) == (2,)
    with pytest.raises(AnswerError, match="outside its text"):
        place(Chunk("a.pdf", start=20, end=99), texts)


def test_text_is_found_across_extractors_and_page_breaks():
    texts = ["The ﬁrst page ends with a hyph-\nenated", "word and goes on"]
    assert place(Chunk("a.pdf", text="the first page"), texts) == (1,)
    assert place(Chunk("a.pdf", text="hyphenated word"), texts) == (1, 2)
    with pytest.raises(AnswerError, match="not found on any of its 2 pages"):
        place(Chunk("a.pdf", text="nowhere at all"), texts)
    with pytest.raises(AnswerError, match="page 3 is outside 1..2"):
        place(Chunk("a.pdf", page=3), texts)


def test_chunks_collapse_to_their_best_rank_in_order():
    chunks = [Chunk("a.pdf", score=0.9, pages=(2,)), Chunk("b.pdf", score=0.8, pages=(1,)),
              Chunk("a.pdf", score=0.7, pages=(1, 2))]
    assert collapse(chunks) == (Hit("a.pdf", 2, 0.9), Hit("b.pdf", 1, 0.8), Hit("a.pdf", 1, 0.7))
    assert collapse([Chunk("a.pdf", pages=(1,)), Chunk("b.pdf", pages=(1,))]) == (
        Hit("a.pdf", 1, 2.0), Hit("b.pdf", 1, 1.0))
    with pytest.raises(AnswerError, match="some chunks have a score"):
        collapse([Chunk("a.pdf", score=1.0, pages=(1,)), Chunk("b.pdf", pages=(1,))])


def test_from_output_reads_pairs_numpy_numbers_and_chunks():
    np = pytest.importorskip("numpy")
    r = from_output([("a.pdf", np.int64(2), np.float32(0.5)), ("b.pdf", 1)], TEXTS.__getitem__)
    assert r.hits == (Hit("a.pdf", 2, 0.5), Hit("b.pdf", 1, 1.0)) and type(r.hits[0].page) is int
    repeated = [("a.pdf", 1, 3.0), ("a.pdf", 2, 2.0), ("a.pdf", 1, 1.0)]
    assert problem(from_output(repeated, TEXTS.__getitem__), PAGES)  # undeclared repeats are an error
    assert from_output(repeated, TEXTS.__getitem__, collapse_pages=True).hits == (
        Hit("a.pdf", 1, 3.0), Hit("a.pdf", 2, 2.0))
    r = from_output([{"doc": "b.pdf", "text": "eta theta", "score": 2.0}, Chunk("a.pdf", "delta", 1.0)],
                    TEXTS.__getitem__)
    assert r.hits == (Hit("b.pdf", 1, 2.0), Hit("a.pdf", 2, 1.0))
    assert [c.pages for c in r.chunks] == [(1,), (2,)]
    with pytest.raises(AnswerError, match="'c.pdf', which is not in the corpus"):
        from_output([Chunk("c.pdf", "x")], TEXTS.__getitem__)
    with pytest.raises(AnswerError, match="type str"):
        from_output(["a.pdf#1"], TEXTS.__getitem__)
