"""The report's section on the local judge: read from the judge/ folder `evalkit qrels judge` writes into a run,
it names the judge, shows its agreement per class as measured, and says in words where it is refused."""
from __future__ import annotations

import json

import pytest

from evalkit.autojudge import agreement, record, session
from evalkit.reports import judge as rj
from evalkit.results import Results

from ..test_autojudge import LOGISTIC, write_case


@pytest.fixture
def judged_run(tmp_path):
    """A run whose judge, trained on another file where no trap was graded, is refused for the trap class
    (it takes the distractor's look-alike pages for answers) and accepted for needles."""
    (tmp_path / "needles").mkdir()
    (tmp_path / "run").mkdir()
    needles = session.load(*write_case(tmp_path / "needles", n=12, kinds=("needle",)))
    qs, res, signals = write_case(tmp_path / "run")
    out = session.run(session.load(qs, res, signals), LOGISTIC, train_on=[needles])
    session.write(out, res.path / record.FOLDER, "evalkit qrels judge syn.toml --results results")
    return res, out


def test_the_report_names_the_judge_and_says_where_it_is_refused(judged_run):
    res, out = judged_run
    text = rj.judge_overview(res)
    sha = record.sha256(res.path / record.FOLDER / record.PREDICTIONS)
    assert out.identity[:16] in text and sha in text and "logistic+isotonic, seed 0" in text
    assert out.trained in text.replace("\\", "")  # what it was trained on (Markdown backslashes aside)
    assert out.verdicts["trap"].startswith("refused") and out.verdicts["needle"] == "accepted"
    why = out.verdicts["trap"].removeprefix("refused: ")
    assert f"- trap: {why[:20]}" in text.replace("\\", "")  # the reason, in words, as the judge measured it
    assert "**Accepted** for: needle" in text
    assert f"the judge {out.baseline['judge']:.3f}, the stopping estimate's prior {out.baseline['prior']:.3f}" \
        in text.replace("\\", "")  # against the baselines, as measured


def test_the_agreement_table_is_the_judge_s_measured_one_with_its_verdicts(judged_run):
    res, out = judged_run
    table = rj.judge_agreement(res)
    assert list(table.index) == list(out.table.index)  # each class, the trap's distractor pages, all
    assert agreement.DISTRACTOR_ROW in table.index
    for cls in out.table.index:
        for key, shown in record.COLUMNS.items():
            want, got = out.table.loc[cls, key], table.loc[cls, shown]
            assert got == pytest.approx(want, nan_ok=True)
    assert table.loc["trap", "verdict"] == out.verdicts["trap"] and table.loc["all", "verdict"] == ""
    html = rj.judge_agreement_styled(res).to_html()
    assert "calibration error" in html and "AUROC gain ≥ 2" in html


def test_a_run_without_a_judge_says_how_to_make_one(tmp_path):
    qs, res, _ = write_case(tmp_path)
    assert rj.judge_overview(res) == rj.ABSENT and rj.judge_agreement(res) is None
    assert rj.judge_agreement_styled(res) is None  # said once, by the overview above it


def test_what_the_judge_record_holds_is_shown_as_text_never_as_markup(judged_run):
    res, _ = judged_run
    meta = res.path / record.FOLDER / record.META
    d = json.loads(meta.read_text())
    d["trained"] = "<img src=x onerror=alert(1)> *bold* [link](http://x)"
    d["verdicts"]["<b>cls</b>"] = "refused: <script>alert(1)</script>"
    d["agreement"][0]["class"] = "<i>needle</i>"
    meta.write_text(json.dumps(d))
    again = Results.load(res.path)
    text = rj.judge_overview(again)
    assert "<img" not in text and "<script" not in text and "<b>" not in text and "[link](" not in text
    html = rj.judge_agreement_styled(again).to_html()
    assert "<i>needle" not in html and "&lt;i&gt;needle" in html and "<script" not in html


def test_a_judge_record_evalkit_cannot_read_is_one_line_naming_the_file(judged_run):
    res, _ = judged_run
    meta = res.path / record.FOLDER / record.META
    meta.write_text('{"judge": "x"}')
    with pytest.raises(record.JudgeRecordError, match=f"^{meta}: not a judge record") as e:
        rj.judge_overview(res)
    assert "\n" not in str(e.value)
