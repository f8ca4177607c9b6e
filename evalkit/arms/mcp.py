"""mcp: a retrieval tool behind an MCP server, called directly per query and scored like every other arm.

The server is started over stdio (command, arguments, environment) from a named definition in a TOML file
(``mcp(config=examples/arms.toml,name=pdf-mcp-keyword)``; see docs/mcp.md). Optionally a warm-up
tool is called until it reports it is done; then every query calls one tool with templated arguments and
the answer (``structuredContent``, else the JSON of its text content) is mapped by a small declarative
:class:`Mapping` to ranked (document, page, score), a refusal, or an error.

Errors are not refusals: a tool error, a timeout or an answer that cannot be read is a ``Answer`` with
``error`` set, recorded and counted as such. A server that dies is restarted once (with its warm-up);
a second death stops the arm with :class:`~evalkit.arms.ArmFailure`. A timed-out call leaves the server
in an unknown state, so it is restarted too, outside that budget.

The SDK's client is asynchronous and the arm protocol is not: the session lives on an event loop in a
thread of its own, every call waits on it with a deadline, and the process is closed by :meth:`close`,
at interpreter exit, or by the SDK's own shutdown (stdin closed, then SIGTERM, then SIGKILL).
"""
from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .. import dirs, ids
from ..records import Answer, Hit
from . import Arm, ArmError, ArmFailure

NAME_STYLES = ("name", "stem", "path", "uri")
TRANSPORT_SAMPLES = 20  # ping round trips timed after the queries (the transport's share of latency)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


# ---- the definition -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call:
    """A tool and its argument template; ``until`` (warm-up only) names a field that must become true."""

    tool: str
    arguments: dict[str, Any]
    until: str = ""
    attempts: int = 20


@dataclass(frozen=True)
class Mapping:
    """Where an answer keeps its hits and what its fields mean.

    ``hits`` and every field are dotted paths into the JSON answer (``""``: the answer itself is the list).
    ``names`` says how ``document`` names a corpus document: its file ``name``, its ``stem`` (no ``.pdf``),
    a filesystem ``path`` or a ``file:`` ``uri``. ``refuse_field``/``refuse_value``: the answer that means
    "no evidence". ``error``: a field whose presence (non-empty) makes the answer an error.
    """

    hits: str = "hits"
    document: str = "document"
    page: str = "page"
    score: str = ""
    names: str = "name"
    page_base: int = 1
    error: str = ""
    refuse_field: str = ""
    refuse_value: Any = True

    def result(self, payload: Any, documents: set[str]) -> Answer:
        """The Answer of one answer; ``documents`` are the corpus's document names. Anything that does not fit the
        mapping is an error Answer naming what and where."""
        if self.error and (message := _get(payload, self.error)):
            return Answer(error=f"the tool answered with an error: {_short(message)}")
        items = _get(payload, self.hits)
        if not isinstance(items, list):
            return Answer(error=f"no list of hits at {self.hits or 'the top level'!r} in the answer: {_short(payload)}")
        hits, seen = [], set()
        for rank, item in enumerate(items, 1):
            raw_doc, raw_page = _get(item, self.document), _get(item, self.page)
            doc = name_key(str(raw_doc), self.names) if raw_doc is not None else None
            if doc not in documents:
                return Answer(error=f"hit {rank}: {self.document}={_short(raw_doc)} is not a document of the corpus")
            if not isinstance(raw_page, int) or isinstance(raw_page, bool) or raw_page - self.page_base < 0:
                return Answer(error=f"hit {rank}: {self.page}={_short(raw_page)} is not a page number")
            page = raw_page - self.page_base + 1
            if (doc, page) in seen:
                return Answer(error=f"hit {rank}: repeats {doc}#{page}")
            seen.add((doc, page))
            if self.score:
                score = _get(item, self.score)
                if not isinstance(score, (int, float)) or isinstance(score, bool):
                    return Answer(error=f"hit {rank}: {self.score}={_short(score)} is not a number")
            else:  # no score in the answer: the tool's order, as strictly decreasing scores
                score = len(items) - rank + 1
            hits.append(Hit(doc, page, float(score)))
        if self.refuse_field and _get(payload, self.refuse_field) == self.refuse_value:
            return Answer(tuple(hits), refused=True, reason=f"{self.refuse_field} = {self.refuse_value!r}")
        return Answer(tuple(hits))


@dataclass(frozen=True)
class Definition:
    """One named arm definition of a TOML file (see :func:`load_definition`)."""

    name: str
    command: str
    search: Call
    mapping: Mapping
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    warmup: Call | None = None
    timeout: float = 60.0
    startup_timeout: float = 120.0
    warmup_timeout: float = 3600.0
    source: str = ""

    @property
    def digest(self) -> str:
        """sha256 of the definition as loaded: two runs with the same label and different definitions differ here."""
        return hashlib.sha256(self.source.encode()).hexdigest()


def load_definition(config: str | Path, name: str) -> Definition:
    """The arm ``name`` of a TOML file of ``[arm.NAME]`` tables; a missing file, name or key raises ArmError
    naming the file and the key."""
    path = Path(config)
    where = f"{path} [arm.{name}]"
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ArmError(f"arm 'mcp': config file {path} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ArmError(f"arm 'mcp': cannot read {path}: {e}") from None
    defs = data.get("arm", {})
    if why := ids.unsafe(name):  # it names the server's temporary folder
        raise ArmError(f"arm 'mcp': definition name {name!r} {why}")
    if name not in defs:
        raise ArmError(f"arm 'mcp': {path} defines no arm {name!r} (defined: {', '.join(sorted(defs)) or 'none'})")
    d = dict(defs[name])
    try:
        search = _call(d.pop("search"), where, "search")
        warmup = _call(d.pop("warmup"), where, "warmup") if "warmup" in d else None
        mapping = Mapping(**d.pop("result", {}))
        definition = Definition(name=name, command=str(d.pop("command")), search=search, mapping=mapping,
                                warmup=warmup, source=json.dumps(defs[name], sort_keys=True),
                                args=tuple(map(str, d.pop("args", ()))),
                                env={k: str(v) for k, v in d.pop("env", {}).items()},
                                files={k: str(v) for k, v in d.pop("files", {}).items()},
                                **{k: float(d.pop(k)) for k in ("timeout", "startup_timeout", "warmup_timeout")
                                   if k in d})
    except KeyError as e:
        raise ArmError(f"arm 'mcp': {where} needs {e.args[0]!r}") from None
    except (TypeError, ValueError) as e:
        raise ArmError(f"arm 'mcp': {where}: {e}") from None
    if d:
        raise ArmError(f"arm 'mcp': {where} has unknown key(s) {', '.join(sorted(d))}")
    for rel in definition.files:  # written into the server's temporary folder, and nowhere else
        if not rel or Path(rel).is_absolute() or any(ids.unsafe(part) for part in rel.split("/")):
            raise ArmError(f"arm 'mcp': {where} files key {rel!r} is not a relative path inside the server's folder")
    if mapping.names not in NAME_STYLES:
        raise ArmError(f"arm 'mcp': {where} result.names is one of {', '.join(NAME_STYLES)}, not {mapping.names!r}")
    return definition


def _call(table: dict, where: str, key: str) -> Call:
    table = dict(table)
    if "tool" not in table:
        raise ArmError(f"arm 'mcp': {where} {key} needs 'tool'")
    call = Call(tool=str(table.pop("tool")), arguments=dict(table.pop("arguments", {})),
                until=str(table.pop("until", "")), attempts=int(table.pop("attempts", 20)))
    if table:
        raise ArmError(f"arm 'mcp': {where} {key} has unknown key(s) {', '.join(sorted(table))}")
    return call


def fill(template: Any, values: dict[str, Any]) -> Any:
    """``template`` with ``{name}`` placeholders replaced from ``values``, recursively through lists and
    tables. A string that is exactly one placeholder takes the value's own type (``top_k = "{k}"`` sends an
    integer); an unknown placeholder raises ArmError."""
    if isinstance(template, dict):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    if not isinstance(template, str):
        return template

    def value(name: str) -> Any:
        if name not in values:
            raise ArmError(f"arm 'mcp': unknown placeholder {{{name}}} (known: "
                           f"{', '.join('{' + v + '}' for v in sorted(values))})")
        v = values[name]
        return v() if callable(v) else v  # a costly value (an assembled model folder) only when used

    if (m := _PLACEHOLDER.fullmatch(template)):
        return value(m.group(1))
    return _PLACEHOLDER.sub(lambda m: str(value(m.group(1))), template)


def name_key(value: str, style: str) -> str:
    """The key a document is looked up by: its file name, from a name, stem, path or ``file:`` URI."""
    if style == "uri":
        value = unquote(urlparse(value).path)
    if style in ("path", "uri"):
        return Path(value).name
    if style == "stem":
        return value + ".pdf" if not value.lower().endswith(".pdf") else value
    return value


def _get(obj: Any, path: str) -> Any:
    for part in path.split(".") if path else ():
        if isinstance(obj, dict):
            obj = obj.get(part)
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return None
    return obj


def _short(value: Any, n: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= n else text[:n] + "…"


def payload_of(result) -> Any:
    """The JSON answer of a CallToolResult: ``structuredContent``, else its text content parsed as JSON.
    Raises ValueError when there is neither."""
    if result.structuredContent is not None:
        return result.structuredContent
    texts = [c.text for c in result.content if getattr(c, "type", "") == "text"]
    if not texts:
        raise ValueError("the answer has no structured content and no text")
    try:
        return json.loads("".join(texts))
    except json.JSONDecodeError:
        raise ValueError(f"the answer is not JSON: {_short(''.join(texts))}") from None


# ---- the server -----------------------------------------------------------------------------------------

class ServerDied(Exception):
    """The server process ended or closed its connection."""


class CallTimeout(Exception):
    """A call did not answer within its deadline."""


class Server:
    """One MCP server process and its client session, driven from synchronous code.

    The session is opened, used and closed by tasks on a private event loop in a daemon thread; every
    public method submits a coroutine there and waits for it with a deadline, so no call can hang the run.
    """

    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: Path, errlog: Path,
                 startup_timeout: float):
        from mcp import StdioServerParameters

        self.params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
        self.errlog = errlog
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-client", daemon=True)
        self.thread.start()
        _sdk_log_to_server_logs()
        _LOGS[self.thread.ident] = errlog
        self.session: Any = None  # the SDK's ClientSession, once open
        self.info: dict[str, Any] = {}
        self.dead = False
        self._closing: asyncio.Event | None = None
        self._ready = threading.Event()
        self._ended = threading.Event()  # set when the task holding the process has left its contexts
        self._failure: BaseException | None = None
        self._main = asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        if not self._ready.wait(startup_timeout):
            self.close()
            raise ServerDied(f"the server did not start within {startup_timeout:g} s{self.log_tail()}")
        if self._failure is not None:
            self.close()
            raise ServerDied(f"the server did not start: {_describe(self._failure)}{self.log_tail()}")

    async def _hold(self) -> None:
        """Open the process and session, wait until closed, and close them in this same task (anyio's
        cancel scopes must be left by the task that entered them)."""
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        self._closing = asyncio.Event()
        try:
            with open(self.errlog, "a") as log:
                async with stdio_client(self.params, errlog=log) as (read, write), ClientSession(read, write) as s:
                    init = await s.initialize()
                    tools = (await s.list_tools()).tools
                    schema = [t.model_dump(mode="json", exclude_none=True) for t in sorted(tools, key=lambda t: t.name)]
                    self.info = {"name": init.serverInfo.name, "version": init.serverInfo.version,
                                 "protocol": str(init.protocolVersion), "tools": [t.name for t in tools],
                                 "tools_sha256": hashlib.sha256(json.dumps(schema,
                                                                           sort_keys=True).encode()).hexdigest()}
                    self.session = s
                    self._ready.set()
                    await self._closing.wait()
        except BaseException as e:  # noqa: BLE001 - reported to the waiting caller, never swallowed
            self._failure = e
        finally:
            self.dead = True
            self._ready.set()
            self._ended.set()

    def _wait(self, coro, deadline: float):
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(deadline)
        except TimeoutError:
            future.cancel()
            raise CallTimeout(f"no answer within {deadline:g} s") from None

    def call(self, tool: str, arguments: dict, timeout: float):
        """The CallToolResult of one call. A call still unanswered after ``timeout`` raises CallTimeout;
        a closed connection raises ServerDied."""
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        if self.dead or self.session is None:
            raise ServerDied(f"the server has exited{self.log_tail()}")
        try:
            # The SDK's read timeout ends the request cleanly; the outer deadline covers a loop that is stuck.
            return self._wait(self.session.call_tool(tool, arguments, read_timeout_seconds=timedelta(seconds=timeout)),
                              timeout + 5)
        except McpError as e:
            if e.error.code == CONNECTION_CLOSED or self.dead:
                self.dead = True
                raise ServerDied(f"the server closed the connection{self.log_tail()}") from None
            if "timed out" in e.error.message.lower():
                raise CallTimeout(f"no answer within {timeout:g} s") from None
            raise RuntimeError(f"MCP error {e.error.code}: {e.error.message}") from None
        except CallTimeout:
            raise
        except Exception as e:
            if self.dead:
                raise ServerDied(f"the server has exited{self.log_tail()}") from None
            raise RuntimeError(_describe(e)) from None

    def ping(self, timeout: float = 10.0) -> float:
        """Seconds for one ping round trip: the transport's cost with no tool work."""
        t0 = time.perf_counter()
        self._wait(self.session.send_ping(), timeout)
        return time.perf_counter() - t0

    def log_tail(self, lines: int = 5) -> str:
        try:
            tail = self.errlog.read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
        return f" (server log {self.errlog}: {' | '.join(tail)})" if tail else ""

    def close(self, timeout: float = 10.0) -> None:
        """Close the session and end the process (the SDK closes stdin, then terminates, then kills)."""
        if not self._ready.is_set():
            # still starting (a server that never answers initialize) and nothing to wait for: cancelling the
            # task runs the SDK's shutdown all the same
            self._main.cancel()
        elif self._closing is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._closing.set)
        if not self._ended.wait(timeout):
            self._main.cancel()  # its shutdown did not end in time: cancelling it ends the SDK's contexts
            self._ended.wait(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)
        _LOGS.pop(self.thread.ident, None)
        self.dead = True


_LOGS: dict[int | None, Path] = {}  # a server's event-loop thread -> its log file


class _ServerLog(logging.Handler):
    """The SDK's own log records (a line on the server's stdout that is not JSON-RPC, with a traceback) as one
    line in the log of the server whose thread emitted them: the protocol's noise is the server's, shown
    with its log when the arm fails, never a traceback on the user's terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        line = record.getMessage() + (f": {' '.join(_describe(exc).split())}" if exc else "")
        try:
            with open(_LOGS[record.thread], "a") as log:
                log.write(f"[MCP client {record.levelname.lower()}] {line}\n")
        except (KeyError, OSError):  # a record from no server of ours, or a log already removed
            pass


def _sdk_log_to_server_logs() -> None:
    sdk = logging.getLogger("mcp")
    if not any(isinstance(h, _ServerLog) for h in sdk.handlers):
        sdk.addHandler(_ServerLog())
        sdk.propagate = False


def _describe(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


# ---- the arm --------------------------------------------------------------------------------------------

class McpArm(Arm):
    """A tool behind an MCP server (stdio), from a named definition in a TOML file."""

    name = "mcp"
    defaults = {"config": "", "name": ""}
    # The definition's name labels the arm; where the file lives does not change results (its content is
    # recorded in the manifest as a digest, with the server's version and tool schema).
    unlabelled = frozenset({"config"})

    @classmethod
    def resolve(cls, params):
        """The parameters, and the definition they name loaded and checked, so a run refuses a wrong file or
        name before any arm runs."""
        resolved = super().resolve(params)
        if not resolved["config"] or not resolved["name"]:
            raise ArmError("arm 'mcp' needs config=FILE and name=DEFINITION, e.g. "
                           "mcp(config=examples/arms.toml,name=pdf-mcp-keyword)")
        load_definition(resolved["config"], resolved["name"])
        return resolved

    def __init__(self, corpus, store, **params) -> None:
        super().__init__(corpus, store, **params)
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise ArmFailure("arm 'mcp' needs the MCP Python SDK: pip install 'evalkit[mcp]'") from None
        self.config = Path(self.params["config"]).resolve()
        self.definition = load_definition(self.config, self.params["name"])
        self.documents = {d.name for d in corpus.documents}
        self.tmp = Path(tempfile.mkdtemp(prefix=f"evalkit-mcp-{self.definition.name}-"))
        self.values = {"corpus_dir": str(Path(corpus.root).resolve()), "corpus": corpus.name,
                       "corpus_digest": corpus.digest()[:16], "tmp": str(self.tmp),
                       "cache_dir": str(dirs.cache_dir()), "config_dir": str(self.config.parent),
                       "python": sys.executable, "fastembed_cache": _fastembed_cache}
        self.server: Server | None = None
        self.restarts = 0
        self.warmup_seconds: list[float] = []
        atexit.register(self.close)

    def prepare(self) -> None:
        """Start the server and run its warm-up, once: the runner asks before the first timed query, so
        neither is in a query's latency; a search on an arm nobody prepared starts it itself."""
        if self.server is None:
            self._start()

    # -- lifecycle

    def _start(self) -> None:
        d = self.definition
        values = self.values
        for rel, text in d.files.items():
            target = self.tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fill(text, values))
        env = {**os.environ, **fill(d.env, values)}
        command = _executable(fill(d.command, values))
        try:
            self.server = Server(command, fill(list(d.args), values), env, self.tmp, self.tmp / "server.log",
                                 d.startup_timeout)
        except ServerDied as e:
            raise self._failure(str(e)) from None
        if d.warmup:
            self._warm(d.warmup)

    def _warm(self, call: Call) -> None:
        """Call the warm-up tool until ``until`` is true (or once, without ``until``), within its attempts
        and the definition's ``warmup_timeout``."""
        assert self.server is not None  # started by _start, which calls this
        t0 = time.perf_counter()
        args = fill(call.arguments, self.values)
        for _ in range(call.attempts):
            left = self.definition.warmup_timeout - (time.perf_counter() - t0)
            if left <= 0:
                break
            try:
                raw = self.server.call(call.tool, args, left)
                if raw.isError:
                    raise ValueError(" ".join(c.text for c in raw.content if getattr(c, "type", "") == "text"))
                answer = payload_of(raw)
            except (ServerDied, CallTimeout, ValueError, RuntimeError) as e:
                raise self._failure(f"warm-up {call.tool} failed: {e}") from None
            if self.definition.mapping.error and (msg := _get(answer, self.definition.mapping.error)):
                raise ArmFailure(f"arm {self.label}: warm-up {call.tool} answered with an error: {_short(msg)}")
            if not call.until or _get(answer, call.until) is True:
                self.warmup_seconds.append(round(time.perf_counter() - t0, 3))
                return
        raise ArmFailure(f"arm {self.label}: warm-up {call.tool} did not report {call.until} = true after "
                         f"{call.attempts} call(s) in {time.perf_counter() - t0:.0f} s")

    def _failure(self, what: str) -> ArmFailure:
        """The arm cannot go on: ``what`` went wrong. Its server log is kept in the cache folder (the arm's
        own folder goes when it closes) and the message names the kept copy."""
        log = self.tmp / "server.log"
        kept = (dirs.cache_dir() / "mcp" / "logs"
                / f"{self.definition.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")
        try:
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, kept)
        except OSError:  # no log written, or nowhere to keep it: the message keeps the tail it quotes
            return ArmFailure(f"arm {self.label}: {what.replace(f'server log {log}', 'server log')}")
        return ArmFailure(f"arm {self.label}: {what.replace(str(log), str(kept))}")

    def _restart(self) -> None:
        if self.server is not None:
            self.server.close()
        self._start()

    def close(self) -> None:
        """End the server process and remove the arm's temporary folder (idempotent; also run at exit)."""
        if self.server is not None:
            self.server.close()
            self.server = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the protocol

    def search(self, query: str, k: int) -> Answer:
        self.prepare()
        assert self.server is not None  # started by prepare (or it raised)
        d = self.definition
        args = fill(d.search.arguments, {**self.values, "query": query, "k": k})
        while True:
            try:
                answer = self.server.call(d.search.tool, args, d.timeout)
                break
            except ServerDied as e:
                if self.restarts >= 1:
                    raise self._failure(f"the server died again after one restart: {e}") from None
                self.restarts += 1
                self._restart()
            except CallTimeout as e:
                self._restart()  # its state is unknown, and the next query must not queue behind this one
                return Answer(error=f"timeout: {e}")
            except Exception as e:  # noqa: BLE001 - a protocol error answering this query is this query's error
                return Answer(error=f"{d.search.tool} failed: {_describe(e)}")
        if answer.isError:
            text = " ".join(c.text for c in answer.content if getattr(c, "type", "") == "text")
            return Answer(error=f"{d.search.tool} returned an error: {_short(text)}")
        try:
            payload = payload_of(answer)
        except ValueError as e:
            return Answer(error=f"unreadable answer: {e}")
        result = d.mapping.result(payload, self.documents)
        return replace(result, hits=result.hits[:k])

    def describe(self) -> dict:
        """The server's name, version and tool-schema digest, the definition's digest, restarts, warm-up
        time, and the transport's round trip (ping, sampled now) for the manifest."""
        info: dict[str, Any] = {"definition": self.definition.name, "config": str(self.config),
                                "definition_sha256": self.definition.digest, "restarts": self.restarts,
                                "warmup_seconds": self.warmup_seconds}
        if self.server is not None and not self.server.dead:
            info["server"] = self.server.info
            try:
                samples = sorted(self.server.ping() for _ in range(TRANSPORT_SAMPLES))
                info["transport"] = {"ping_median_s": samples[len(samples) // 2],
                                     "ping_p95_s": samples[int(0.95 * (len(samples) - 1))], "samples": len(samples)}
            except Exception as e:  # noqa: BLE001 - a missing sample is recorded, not fatal
                info["transport"] = {"error": _describe(e)}
        return info


def _fastembed_cache() -> str:
    from ..embeddings import packaged_fastembed_cache

    return str(packaged_fastembed_cache())


def _executable(command: str) -> str:
    """A bare command is looked up next to the running interpreter first (the virtual environment evalkit
    runs in, active or not), then on PATH."""
    if os.sep in command:
        return command
    beside = Path(sys.executable).parent / command
    return str(beside) if beside.exists() else (shutil.which(command) or command)
