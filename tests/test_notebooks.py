import nbformat
import pytest

from evalkit import notebooks, reporting


def test_inject_parameters_follows_the_parameters_cell_and_replaces_an_earlier_one():
    nb = nbformat.read(reporting.NOTEBOOK, as_version=4)
    n = len(nb.cells)
    notebooks.inject_parameters(nb, results="/x", pair=None)
    notebooks.inject_parameters(nb, results="/y", pair=["a", "b"])
    assert len(nb.cells) == n + 1
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    assert nb.cells[at + 1].metadata["tags"] == ["injected-parameters"]
    assert nb.cells[at + 1].source == "# Parameters\nresults = '/y'\npair = ['a', 'b']\n"
    nb.cells[at].metadata["tags"] = []
    with pytest.raises(ValueError, match="no cell tagged 'parameters'"):
        notebooks.inject_parameters(nb, results="/z")
