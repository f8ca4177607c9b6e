"""Which arms a report is about: the pair compared per query, the best arm and the baseline."""
from __future__ import annotations

import pytest

from evalkit.reports import selection

from .conftest import _known


@pytest.mark.slow
def test_resolve_pair(res):
    assert selection.resolve_pair(res) == ("keyword", "global-index")
    assert selection.resolve_pair(res, "global-index,keyword") == ("global-index", "keyword")
    assert selection.resolve_pair(res, ["global-index", "keyword"]) == ("global-index", "keyword")
    with pytest.raises(ValueError, match="two different arms"):
        selection.resolve_pair(res, "keyword,keyword")
    with pytest.raises(ValueError, match="two different arms"):
        selection.resolve_pair(res, "keyword")


def test_the_default_pair_is_the_best_arm_against_the_baseline(tmp_path):
    res = _known(tmp_path)
    assert selection.best_arm(res) == "close"
    assert selection.best_arm(res, besides="close") == "good"
    assert selection.resolve_pair(res, baseline="base") == ("base", "close")
    assert selection.resolve_pair(res, baseline="close") == ("close", "good")  # a leading baseline: the runner-up
    assert selection.resolve_pair(res) == ("good", "close")  # no baseline: runner-up against the best
    assert selection.resolve_baseline(res, "good") == "good" and selection.resolve_baseline(res) is None
    with pytest.raises(ValueError, match="no arm 'nope'"):
        selection.resolve_baseline(res, "nope")


def test_best_on_the_command_line(tmp_path, capsys):
    from evalkit.cli import main

    res = _known(tmp_path)
    assert main(["best", str(res.path), "--besides", "close"]) == 0
    assert capsys.readouterr().out == "good\n"
    assert main(["best", str(res.path), "--measure", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
