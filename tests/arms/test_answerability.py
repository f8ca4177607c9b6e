"""admit(policy=judge): the policy refusing and admitting as calibrated on a tiny corpus of real PDFs, and its
spec checked. The threshold's guarantee is tested in test_conformal.py, the Clopper–Pearson bound in
tests/test_refusal.py."""
import pytest

from evalkit import arms, corpora
from evalkit.arms import ArmError
from evalkit.arms import answerability as A
from evalkit.arms.conformal import guarantee
from evalkit.pages import PageStore
from evalkit.records import Query
from evalkit.refusal import clopper_pearson_upper

from ..conftest import make_pdf

ANIMALS = ["walrus", "zebra", "otter", "badger", "heron", "lynx", "moose", "bison", "gecko", "iguana", "koala",
           "lemur", "marmot", "narwhal", "ocelot", "panda", "quokka", "raven", "sloth", "tapir", "viper", "wombat",
           "yak", "falcon", "gibbon", "hyena", "ibex", "jackal", "kestrel", "llama"]
ABSENT = ["cheetah", "dingo", "emu", "ferret", "gorilla", "hamster", "impala", "jaguar", "kiwi", "lobster",
          "mongoose", "newt", "orca", "puffin"]
NEW = ANIMALS[-4:]  # in the corpus, in no query of the file
ASK = "where does the {} live and what does it eat"


def test_summaries_and_split():
    assert A.summarise([0.2, 0.5, 0.1], "max") == 0.5
    assert A.summarise([0.2, 0.6], "mean") == pytest.approx(0.4)
    assert A.summarise([0.5, 0.5], "any") == pytest.approx(0.75)
    assert A.summarise([], "max") == 0.0
    with pytest.raises(ValueError, match="unknown summary 'median'"):
        A.summarise([0.1], "median")
    qs = [Query(f"a{i}", "needle", "x") for i in range(10)] + [Query(f"b{i}", "abstain", "y") for i in range(4)]
    train, cal = A.split(qs, 0.3, seed=0)
    assert len(cal) == 7 and all(q.answerable for q in cal)
    assert {q.id for q in train} == {q.id for q in qs} - {q.id for q in cal}
    assert A.split(qs, 0.3, seed=0) == (train, cal) and A.split(qs, 0.3, seed=1) != (train, cal)


def _queries(path, animals, absent):
    lines = ['[set]', 'name = "zoo"', 'corpus = "zoo"', ""]
    for i, t in enumerate([*animals, *absent]):
        gains = [(f"d{d}.pdf", p + 1, 3 if ANIMALS[d * 10 + p] == t else 0) for d in range(3) for p in range(10)]
        judged = ", ".join(f'{{ doc = "{d}", page = {p}, gain = {g} }}' for d, p, g in gains)
        cls = "abstain" if t in absent else "needle"
        lines += ["[[query]]", f'id = "z{i:02d}"', f'class = "{cls}"', f'text = "{ASK.format(t)}"',
                  f"judgments = [{judged}]", ""]
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def zoo(isolated):
    docs = isolated / "zoo"
    docs.mkdir()
    for d in range(3):
        make_pdf(docs / f"d{d}.pdf", [f"the {t} habitat and diet: where the {t} lives, what the {t} eats"
                                      for t in ANIMALS[d * 10:(d + 1) * 10]])
    store = PageStore()
    corpus = store.ingest(corpora.from_dir(docs, "zoo"), progress=False).corpus
    return corpus, store, _queries(isolated / "zoo.toml", ANIMALS[:-4], ABSENT)


@pytest.mark.slow
def test_the_judge_policy_admits_and_refuses_as_calibrated(zoo, capsys):
    corpus, store, file = zoo
    spec = f"admit(arm=global-index,policy=judge(qrels={file},vectors=0),threshold=0.2)"
    arm = arms.make(spec, corpus, store)
    arm.prepare()
    cal = arm.policy.calibration()
    assert cal.n == 13  # 26 answerable: 13 train the judge (with the 14 abstain), 13 calibrate
    note = capsys.readouterr().err
    k, bound, upper = cal.bound(0.2)
    assert f"calibrated on 13 answerable queries of {file}" in note
    assert f"refuses {k}/13" in note and f"<= {upper:.3f} at 95%" in note and f"<= {bound:.3f} (split" in note
    assert upper == pytest.approx(clopper_pearson_upper(k, 13)) and bound == guarantee(13, 0.2)
    for t in NEW:  # answerable, never seen: admitted with the inner arm's hits
        r = arm.search(ASK.format(t), 10)
        assert not r.refused and r.confidence >= 0.2
        assert r.hits == arms.make("global-index", corpus, store).search(ASK.format(t), 10).hits
    for t in ["capybara", "armadillo", "pelican"]:  # nothing answers: refused, the judge's reading in the reason
        r = arm.search(ASK.format(t), 10)
        assert r.refused and r.confidence < 0.2 and "the judge's mean P(gain >= 2) over the top 3 pages" in r.reason
        assert r.confidence == pytest.approx(1 / 14)  # below every calibration query's score
    asked = arm.search(ASK.format(ANIMALS[0]), 10)
    assert asked.confidence is not None and "in-sample" not in asked.reason
    verdict = arm.policy.assess(ASK.format(ANIMALS[0]), asked)
    assert "in-sample: the query is in the calibration file" in verdict.measure
    assert arm.describe()["admission"]["calibrated_on"] == 13
    # a calibration query asked at run time (one ranking, no pool, no grades) gets the score it was calibrated with
    inner = arms.make("global-index", corpus, store)
    _, held = A.split(arm.policy.queries.queries, 0.5, seed=0)
    again = [A.score(cal, q.text, [(h.doc, h.page) for h in inner.search(q.text, 10).hits], arm.policy._signals)
             for q in held]
    assert sorted(again) == pytest.approx(list(cal.scores))


def test_too_few_calibration_queries_refuse_nothing_and_say_so(zoo, capsys):
    corpus, store, file = zoo
    arm = arms.make(f"admit(arm=global-index,policy=judge(qrels={file},vectors=0,train=0.8),threshold=0.05)",
                    corpus, store)
    arm.prepare()
    assert arm.policy.calibration().n == 5  # least p-value 1/6 > 0.05
    assert "refuses 0/5" in capsys.readouterr().err
    assert not arm.search(ASK.format("capybara"), 10).refused


@pytest.mark.parametrize("policy,needle", [
    ("judge", "policy 'judge' needs qrels=FILE"),
    ("judge(qrels={file},train=1.5)", "parameter 'train' is the share of answerable queries"),
    ("judge(qrels={file},top=20)", "parameter 'top' (20) reads more pages than 'depth' (10)"),
    ("judge(qrels={file},summary=median)", "parameter 'summary' is 'max' or 'mean' or 'any', not 'median'"),
    ("judge(qrels={file},gain=5)", "parameter 'gain' is 1 or 2 or 3, not 5"),
    ("judge(qrels={missing})", "policy 'judge': qrels={missing}: No such file or directory"),
    ("judge(qrels={other})", "holds queries of corpus 'latex', not 'zoo'"),
])
def test_bad_judge_specs_are_refused_by_name(zoo, policy, needle):
    corpus, store, file = zoo
    other = file.with_name("other.toml")
    other.write_text(file.read_text().replace('corpus = "zoo"', 'corpus = "latex"'))
    fill = {"file": file, "missing": file.with_name("nope.toml"), "other": other}
    with pytest.raises(ArmError) as e:
        arms.make(f"admit(arm=global-index,policy={policy.format(**fill)})", corpus, store)
    assert needle.format(**fill) in str(e.value)


def test_a_bad_judge_spec_is_one_line_and_exit_2(zoo, capsys):
    from evalkit.cli import main

    from ..conftest import one_line_error

    corpus, store, file = zoo
    argv = ["run", "--docs", str(file.parent / "zoo"), "--qrels", str(file), "--out", str(file.parent / "res"),
            "--arms", f"admit(arm=global-index,policy=judge(qrels={file},train=2))"]
    assert main(argv) == 2
    one_line_error(capsys, "policy 'judge': parameter 'train'")
    assert not (file.parent / "res").exists()


def test_the_judge_is_a_policy_never_an_arm():
    with pytest.raises(ArmError, match="unknown arm 'judge'"):
        arms.validate("judge")
    assert "judge" not in arms.registry()
