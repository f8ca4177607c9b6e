"""notebooks/your-pdfs.ipynb executed end to end on a tiny folder of real PDFs: the queries are written and
the ones the notebook picks at random are graded whole through :mod:`evalkit.judging`'s API (the browser test
drives the widget itself), then the notebook opens the workbench on them, runs the built-in arms, trains the
local judge, plans, gates one arm against the other with the judge and renders the report."""
from __future__ import annotations

import os
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from evalkit import api, gating, judged, notebooks, qrels
from evalkit.cli import main
from evalkit.judging import Session
from evalkit.replay import to_grade
from tests.conftest import HANG_S, ROOT, make_pdf

pytestmark = pytest.mark.slow
ARMS = ["global-index", "keyword"]
GRADE = 1  # pages per query: the tiny PDFs pool 1-4 pages a query, so 3 would pay for every query


TOPICS = {"walrus migration sea ice": "walrus.pdf#2", "walruses arctic": "walrus.pdf#1",
          "seals migration": "seal.pdf#1", "penguins fly": "seal.pdf#2", "sea ice south": "walrus.pdf#2",
          "arctic walrus": "walrus.pdf#1", "penguins seals": "seal.pdf#2", "walrus follows ice": "walrus.pdf#2",
          "penguins not seals": "seal.pdf#2", "migration of seals": "seal.pdf#1"}


def judged_set(folder, docs) -> list[str]:
    """Ten answerable queries written, none graded, and an abstain one; every pool drawn; the queries the
    notebook picks (GRADE, SEED 0) graded whole, the answer page 3 and every other page 0; the others left
    ungraded (the run answers them, the judge predicts them). Returns the picked ones."""
    s = Session(folder / "mine.toml", docs, ARMS)
    for i, text in enumerate(TOPICS):
        s.write_query(f"q{i}", "needle", text)
    s.write_query("a1", "abstain", "how do rockets reach orbit", kind="uncovered-need")
    pools = {f"q{i}": len(s.pool(f"q{i}")) for i in range(len(TOPICS))}
    mine = to_grade(pools, GRADE, 0)
    for qid in mine:
        answer = TOPICS[s.query_set()[qid].text]
        for item in s.queue(qid):
            s.grade(qid, item.doc, item.page, 3 if item.id == answer else 0)
    s.close()
    return mine


def _statuses(lines: list[str]) -> list[str]:
    """Each rule's status and name, the latency rule's apart: each gate re-times the arms at its own moment,
    and near max_ratio two timings of a handful of queries may land on either side of it (so may the
    headline's counts). The rule is there, timed side by side, in both."""
    rules = [line for line in lines if not line.startswith("evalkit gate:")]
    assert sum("latency ratio" in line and "re-timed side by side over" in line for line in rules) == 1, rules
    return [" ".join(line.split()[:4]) for line in rules if "latency ratio" not in line]


def test_your_pdfs_notebook_runs_from_folder_to_gate(isolated, monkeypatch, capsys):
    folder = isolated / "pdfs"
    folder.mkdir()
    make_pdf(folder / "walrus.pdf", ["Walruses live in the Arctic.", "Walrus migration follows the sea ice south."])
    make_pdf(folder / "seal.pdf", ["Seals and their migration.", "Penguins are not seals; penguins do not fly."])
    monkeypatch.chdir(isolated)
    monkeypatch.delenv("EVALKIT_LOCK", raising=False)
    assert main(["corpus", "add", "mine", "pdfs"]) == 0  # the README's step before the notebook
    mine = judged_set(isolated, api.corpus("mine", lock=isolated / "corpora.lock", progress=False))
    assert 4 <= len(mine) < len(TOPICS)  # a few whole queries, not all
    nb = nbformat.read(ROOT / "notebooks" / "your-pdfs.ipynb", as_version=4)
    # the notebook's own CORPUS and LOCK; only the arms are narrowed to the lexical ones the set was pooled with
    assert 'CORPUS = "mine"' in nb.cells[1].source and 'LOCK = "../corpora.lock"' in nb.cells[1].source
    (isolated / "notebooks").mkdir()  # Jupyter runs it in its folder, notebooks/ of the checkout
    notebooks.inject_parameters(nb, ARMS=ARMS, QUERIES="../mine.toml", GRADE=GRADE)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]))  # `!evalkit`
    NotebookClient(nb, timeout=HANG_S, startup_timeout=HANG_S, kernel_name="python3",
                   resources={"metadata": {"path": str(isolated / "notebooks")}}).execute()
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"grade these {len(mine)} of {len(TOPICS)} queries whole" in out
    assert f"graded whole: {len(mine)} of the {len(mine)} picked" in out
    assert not judged.graded_queries(qrels.load(isolated / "mine.toml")) - set(mine)  # the others: ungraded
    assert "AUROC for gain >= 2" in out  # the local judge was trained and measured
    assert "with the judge predicting the pages nobody graded" in out  # qrels plan --judge
    predictions = isolated / "results" / "mine" / "judge" / "predictions.parquet"
    assert set(mine) <= judged.graded_queries(qrels.load(isolated / "mine.toml"))
    assert (isolated / "results" / "mine" / "gate.json").exists()
    html = next((isolated / "results" / "mine").glob("*.html")).read_text()
    assert "Gate</strong>: <code>keyword</code> against <code>global-index</code>" in html  # gated before the report
    assert "no verdict" not in html
    # the shell's gate in the checkout, on the same results: the same verdict, rule by rule (latency re-timed)
    notebook_says = [line for line in out.splitlines() if line.startswith(("evalkit gate:", *gating.MARK.values()))]
    assert gating.read(isolated / "results" / "mine" / gating.GATE_FILE).judge["sha256"] == judged.sha256(predictions)
    assert main(["gate", "--baseline", "results/mine:global-index", "--candidate", "results/mine:keyword",
                 "--judge", str(predictions), "--qrels", "mine.toml"]) in (0, 1)
    shell_says = [line for line in capsys.readouterr().out.splitlines()
                  if line.startswith(("evalkit gate:", *gating.MARK.values()))]
    assert _statuses(shell_says) == _statuses(notebook_says) and len(_statuses(notebook_says)) == 5
    assert qrels.load(isolated / "mine.toml")[mine[0]].judgments  # the file the workbench opened is intact
