import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalkit import agreement, qrels
from evalkit.cli import main

from .conftest import query, query_file

# Six pages graded by two assessors: four agree, two are one step apart (3/2 and 2/3).
PAIRS = [(0, 0), (1, 1), (2, 2), (3, 3), (3, 2), (2, 3)]


def test_weighted_kappa_by_hand():
    m = agreement.confusion(PAIRS)
    assert m.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    # Both assessors' marginals are (1, 1, 2, 2) over grades 0..3, N = 6.
    # Linear: observed disagreement sum |i-j| * n_ij = 2; expected = sum |i-j| r_i c_j / N = 42 / 6 = 7.
    assert agreement.weighted_kappa(m, 1) == pytest.approx(1 - 2 / 7)
    # Quadratic: observed 2; expected = sum (i-j)^2 r_i c_j / N = 82 / 6.
    assert agreement.weighted_kappa(m, 2) == pytest.approx(1 - 2 / (82 / 6))


def test_two_grades_give_cohens_kappa():
    # a = 1 1 0 0, b = 1 0 0 0: p_o = 3/4, p_e = 2/4 * 1/4 + 2/4 * 3/4 = 1/2, kappa = (3/4 - 1/2) / (1/2) = 1/2
    m = agreement.confusion([(1, 1), (1, 0), (0, 0), (0, 0)])
    assert agreement.weighted_kappa(m, 1) == agreement.weighted_kappa(m, 2) == pytest.approx(0.5)


def test_perfect_single_grade_and_empty():
    assert agreement.weighted_kappa(agreement.confusion([(3, 3), (1, 1), (0, 0)]), 1) == 1.0
    assert math.isnan(agreement.weighted_kappa(agreement.confusion([(2, 2), (2, 2)]), 1))  # chance agrees fully
    assert math.isnan(agreement.weighted_kappa(agreement.confusion([]), 1))
    with pytest.raises(ValueError, match=r"\(4, 1\) is outside"):
        agreement.confusion([(4, 1)])


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40), st.sampled_from([1, 2]))
def test_weighted_kappa_matches_a_brute_force_over_pairs(pairs, power):
    """Expected disagreement = the mean weight over every (A's grade of page i, B's grade of page j), i and j
    independent: the chance model, computed without marginals or matrices."""
    a, b = np.array(pairs).T
    observed = np.mean(np.abs(a - b) ** power)
    chance = np.mean(np.abs(a[:, None] - b[None, :]) ** power)
    want = math.nan if chance == 0 else 1 - observed / chance
    got = agreement.weighted_kappa(agreement.confusion(pairs), power)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


A = (
    query("n1", "needle", "margins", ("a.pdf", 1, 0), ("a.pdf", 2, 1), ("a.pdf", 3, 2), ("a.pdf", 4, 3),
          ("a.pdf", 5, 3)),
    query("s1", "spread", "tables", ("b.pdf", 1, 2), ("b.pdf", 2, 3)),
    query("x1", "needle", "only in A", ("a.pdf", 9, 3)),
)
B = (
    query("n1", "needle", "margins", ("a.pdf", 1, 0), ("a.pdf", 2, 1), ("a.pdf", 3, 2), ("a.pdf", 4, 3),
          ("a.pdf", 5, 2), ("a.pdf", 6, 1)),
    query("s1", "spread", "tables", ("b.pdf", 1, 3), ("c.pdf", 1, 1)),
)


def _sets(tmp_path):
    query_file(tmp_path / "a.toml", *A)
    query_file(tmp_path / "b.toml", *B)
    return qrels.load(tmp_path / "a.toml"), qrels.load(tmp_path / "b.toml")


def test_agree_compares_the_pages_both_judged_per_class(tmp_path):
    rows = {r.cls: r for r in agreement.agree(*_sets(tmp_path))}
    assert list(rows) == ["needle", "spread", "all"]
    n, s, al = rows["needle"], rows["spread"], rows["all"]
    # needle: 5 pages both judged (0/0, 1/1, 2/2, 3/3, 3/2), a.pdf#6 only B; x1 is not in B at all
    assert (n.queries, n.pairs, n.exact, n.only_a, n.only_b) == (1, 5, 0.8, 0, 1)
    # spread: b.pdf#1 (2/3) both, b.pdf#2 only A, c.pdf#1 only B
    assert (s.queries, s.pairs, s.exact, s.only_a, s.only_b) == (1, 1, 0.0, 1, 1)
    assert s.kappa_linear == 0.0  # one pair 2/3: chance (A always 2, B always 3) predicts that very disagreement
    # all: the six pairs (0,0) (1,1) (2,2) (3,3) (3,2) (2,3): exactly the hand-computed case above
    assert al.confusion == tuple(map(tuple, agreement.confusion(PAIRS).tolist()))
    assert (al.pairs, al.exact, al.only_a, al.only_b) == (6, 4 / 6, 1, 2)
    assert al.kappa_linear == pytest.approx(1 - 2 / 7) and al.kappa_quadratic == pytest.approx(1 - 12 / 82)


def test_a_query_worded_differently_is_not_compared(tmp_path):
    a, b = _sets(tmp_path)
    query_file(tmp_path / "c.toml", B[0], {**B[1], "text": "rules in tables"})
    c = qrels.load(tmp_path / "c.toml")
    assert agreement.worded_differently(a, c) == ["s1"]
    rows = {r.cls: r for r in agreement.agree(a, c)}
    assert "spread" not in rows and rows["all"].pairs == 5


def test_cli_agree(isolated, capsys):
    _sets(isolated)
    assert main(["qrels", "agree", str(isolated / "a.toml"), str(isolated / "b.toml")]) == 0
    out = capsys.readouterr().out
    assert "(3 queries)" in out and "2 in both, 1 only in A, 0 only in B" in out
    all_row = next(line for line in out.splitlines() if line.startswith("all "))
    assert all_row.split() == ["all", "2", "6", "0.667", f"{1 - 2 / 7:.3f}", f"{1 - 12 / 82:.3f}", "1", "2"]
    assert "A 3    0    0    1    1" in out
    five = {**B[0], "judgments": [*B[0]["judgments"][:-1], {"doc": "a.pdf", "page": 6, "gain": 5}]}  # a.pdf#6 graded 5
    query_file(isolated / "c.toml", five, B[1])
    assert main(["qrels", "agree", str(isolated / "a.toml"), str(isolated / "c.toml")]) == 2
    assert "B's query 'n1' grades a.pdf#6 5, outside 0..3" in capsys.readouterr().err
    query_file(isolated / "c.toml", *({**q, "id": f"other-{q['id']}"} for q in A))
    assert main(["qrels", "agree", str(isolated / "a.toml"), str(isolated / "c.toml")]) == 2
    assert "no query id in common" in capsys.readouterr().err
