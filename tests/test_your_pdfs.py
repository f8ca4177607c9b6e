"""notebooks/your-pdfs.ipynb executed end to end on a tiny folder of real PDFs: the queries are judged through
:mod:`evalkit.judging`'s API (the browser test drives the widget itself), then the notebook opens the
workbench on them, runs the built-in arms, renders the report and gates one arm against the other."""
from __future__ import annotations

import os

import nbformat
import pytest
from nbclient import NotebookClient

from evalkit import api, gating, notebooks, qrels
from evalkit.cli import main
from evalkit.judging import Session
from tests.conftest import ROOT, make_pdf

pytestmark = pytest.mark.slow
ARMS = ["global-index", "keyword"]


def judged_set(folder, docs) -> None:
    s = Session(folder / "mine.toml", docs, ARMS)
    s.write_query("q1", "needle", "walrus migration sea ice")
    s.write_query("a1", "abstain", "how do penguins fly", kind="uncovered-need")
    for qid in ("q1", "a1"):
        s.pool(qid)
        for item in s.queue(qid):
            s.grade(qid, item.doc, item.page, 3 if (qid, item.id) == ("q1", "walrus.pdf#2") else 0)
    s.evidence("q1", "walrus.pdf", 2, "follows the sea ice south")
    s.close()


def _status(line: str) -> str:
    """A verdict line without its numbers: the headline, or a rule's status and name (re-timing moves the
    latency rule's milliseconds, never its status with a handful of queries)."""
    return line if line.startswith("evalkit gate:") else " ".join(line.split()[:4])


def test_your_pdfs_notebook_runs_from_folder_to_gate(isolated, monkeypatch, capsys):
    folder = isolated / "pdfs"
    folder.mkdir()
    make_pdf(folder / "walrus.pdf", ["Walruses live in the Arctic.", "Walrus migration follows the sea ice south."])
    make_pdf(folder / "seal.pdf", ["Seals and their migration.", "Penguins are not seals; penguins do not fly."])
    monkeypatch.chdir(isolated)
    monkeypatch.delenv("EVALKIT_LOCK", raising=False)
    assert main(["corpus", "add", "mine", "pdfs"]) == 0  # the README's step before the notebook
    judged_set(isolated, api.corpus("mine", lock=isolated / "corpora.lock", progress=False))
    nb = nbformat.read(ROOT / "notebooks" / "your-pdfs.ipynb", as_version=4)
    # the notebook's own CORPUS and LOCK; only the arms are narrowed to the lexical ones the set was pooled with
    assert 'CORPUS = "mine"' in nb.cells[1].source and 'LOCK = "../corpora.lock"' in nb.cells[1].source
    (isolated / "notebooks").mkdir()  # Jupyter runs it in its folder, notebooks/ of the checkout
    notebooks.inject_parameters(nb, ARMS=ARMS, QUERIES="../mine.toml")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(isolated / "notebooks")}}).execute()
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "qrels check --strict: no problem" in out
    assert (isolated / "results" / "mine" / "gate.json").exists()
    html = next((isolated / "results" / "mine").glob("*.html")).read_text()
    assert "Gate</strong>: <code>keyword</code> against <code>global-index</code>" in html  # gated before the report
    assert "no verdict" not in html
    # the shell's gate in the checkout, on the same results: the same verdict, rule by rule
    notebook_says = [line for line in out.splitlines() if line.startswith(("evalkit gate:", *gating.MARK.values()))]
    assert main(["gate", "--baseline", "results/mine:global-index", "--candidate", "results/mine:keyword"]) in (0, 1)
    shell_says = [line for line in capsys.readouterr().out.splitlines()
                  if line.startswith(("evalkit gate:", *gating.MARK.values()))]
    assert [_status(x) for x in shell_says] == [_status(x) for x in notebook_says] and notebook_says
    assert qrels.load(isolated / "mine.toml")["q1"].judgments  # the file the workbench opened is intact
