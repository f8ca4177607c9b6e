"""Where the heavy work runs: in this process (the default) or on a Dask distributed cluster.

Three kinds of work spread out, each a task that is a pure function of what it is sent: extraction (one
PDF's bytes -> its pages, :func:`evalkit.extraction.extract_bytes`), embedding (one chunk of page windows
-> vectors, :func:`evalkit.embeddings.embed_chunk`) and arm runs (a few queries -> their answers,
:func:`evalkit.runner.search_task`). The parent stays the only writer of the SQLite cache and writes every
result in the order a local run would, so a distributed run's cache rows and TREC files are byte-identical
to a local run's (tested against a local cluster).

Why Dask distributed rather than Ray: it is pure Python from PyPI (a few MB, no per-node daemons or
object store to run beside evalkit), a scheduler is one command (``dask scheduler``, then ``dask worker
tcp://HOST:8786`` on each machine), and ``LocalCluster`` starts a real multi-process cluster inside a test.
Workers need evalkit installed (with the same model files, for embedding); arm runs also need the cache
file and the corpus at the same paths (a shared file system), because an arm reads its indexes and
vectors from the cache.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol

SCHEMES = ("dask://", "tcp://")


class ExecutorError(Exception):
    """An executor that cannot be reached or used; the message names the address."""


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[..., Any], calls: Iterable[tuple]) -> Iterator[tuple[int, Any]]:
        """``(index, fn(*calls[index]))`` for every call, in completion order."""

    def each_worker(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        """``fn(*args)`` run once in every worker process, by worker address (to ask what a worker holds)."""

    def close(self) -> None: ...


CONNECT_TIMEOUT = "10s"  # how long an unreachable scheduler is tried before it is named


class DaskExecutor:
    """Tasks on a Dask distributed scheduler, at most ``in_flight`` at once (so a large corpus's bytes are
    not all in the scheduler's memory together)."""

    def __init__(self, address: str, in_flight: int | None = None):
        try:
            from distributed import Client
        except ImportError:
            raise ExecutorError(f"the Dask executor at {address} needs the distributed package, not installed here: "
                                "pip install 'evalkit[distributed]'") from None
        try:
            self.client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {e}") from None
        self.name = f"dask {address}"
        workers = self.client.scheduler_info().get("workers", {})
        self.in_flight = in_flight or max(4, 4 * sum(w.get("nthreads", 1) for w in workers.values()))

    def map(self, fn: Callable[..., Any], calls: Iterable[tuple]) -> Iterator[tuple[int, Any]]:
        from distributed import as_completed

        pending = iter(enumerate(calls))
        running = as_completed()
        index = {}
        for i, args in _take(pending, self.in_flight):
            future = self.client.submit(fn, *args, pure=False)
            index[future.key] = i
            running.add(future)
        for future in running:
            yield index.pop(future.key), future.result()
            for i, args in _take(pending, 1):
                nxt = self.client.submit(fn, *args, pure=False)
                index[nxt.key] = i
                running.add(nxt)

    def each_worker(self, fn: Callable[..., Any], *args: Any) -> dict[str, Any]:
        return self.client.run(fn, *args)

    def close(self) -> None:
        self.client.close()


def _take(it: Iterator, n: int) -> list:
    out = []
    for item in it:
        out.append(item)
        if len(out) == n:
            break
    return out


_CURRENT: ContextVar[Executor | None] = ContextVar("evalkit_executor", default=None)


def current() -> Executor | None:
    """The executor the heavy work should use, or None: in this process."""
    return _CURRENT.get()


def connect(spec: str | None) -> Executor | None:
    """``None`` or ``"local"``: in this process; ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``): a Dask
    scheduler."""
    if not spec or spec == "local":
        return None
    if spec.startswith(SCHEMES):
        return DaskExecutor("tcp://" + spec.split("://", 1)[1])
    raise ExecutorError(f"unknown executor {spec!r}: want local or dask://HOST:PORT")


@contextlib.contextmanager
def use(spec: str | Executor | None) -> Iterator[Executor | None]:
    """Run the enclosed work on ``spec`` (an address, or an executor already connected)."""
    ex = connect(spec) if spec is None or isinstance(spec, str) else spec
    token = _CURRENT.set(ex)
    try:
        yield ex
    finally:
        _CURRENT.reset(token)
        if ex is not None and isinstance(spec, str):
            ex.close()
