"""evalkit: measure retrieval over folders of PDFs.

``import evalkit as ek`` gives the front door (:mod:`evalkit.api`): ``ek.corpus``, ``ek.add_corpus``, ``ek.queries``,
``ek.arm``, ``ek.run``, ``ek.Results`` (``.table``, ``.compare``, ``.refusal``), ``ek.compare``, ``ek.gate``,
``ek.report``, ``ek.judge`` (the judging workbench), ``ek.use_model``, and the records a retriever answers with
(``ek.Hit``, ``ek.Chunk``, ``ek.Answer``). Names load on first use, so importing one module of evalkit
(``evalkit.gate`` in CI) does not import the rest.
"""
TYPE_CHECKING = False  # not typing's: the `evalkit` command imports nothing before its Ctrl-C guard (__main__)

_EXPORTS = {
    "corpus": "api", "add_corpus": "api", "queries": "api", "check_fit": "api", "arm": "api", "run": "api",
    "compare": "api", "gate": "api", "report": "api", "OpenCorpus": "api", "judge": "judging_widget",
    "use_model": "config", "Hit": "records", "Chunk": "records", "Answer": "records", "Query": "records",
    "Judgment": "records", "Results": "results", "QuerySet": "qrels", "__version__": "version",
    "fit": "api", "Result": "records",  # the old names of check_fit and Answer: they warn, and go in the next release
}
__all__ = ["Answer", "Chunk", "Hit", "Judgment", "OpenCorpus", "Query", "QuerySet", "Results", "add_corpus", "arm",
           "check_fit", "compare", "corpus", "gate", "judge", "queries", "report", "run", "use_model"]

if TYPE_CHECKING:
    from typing import Any

    from .api import OpenCorpus, add_corpus, arm, check_fit, compare, corpus, fit, gate, queries, report, run
    from .config import use_model
    from .judging_widget import judge
    from .qrels import QuerySet
    from .records import Answer, Chunk, Hit, Judgment, Query
    from .results import Results
    from .version import __version__


def __getattr__(name: str) -> "Any":
    if name in _EXPORTS:
        from importlib import import_module  # here, not above: the command loads nothing before its Ctrl-C guard

        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
