"""A tiny MCP server for the mcp arm's tests, on the SDK's own server API (FastMCP, stdio).

The query decides the behaviour, so one server exercises every path: hits, a refusal, a tool error, an
inline error, an unreadable answer, a document the corpus does not hold, a slow call and a crash.
``STATE`` (a folder) holds a warm-up counter and the crash-once marker.
"""
import fcntl
import os
import sys
import time
from pathlib import Path

sys.modules.setdefault("rfc3987_syntax", None)  # 3 CPU-s of every start, as in evalkit/__main__.py
from mcp.server.fastmcp import FastMCP  # noqa: E402

STATE = Path(os.environ["MCP_TEST_STATE"])
server = FastMCP("evalkit-test-server")


@server.tool()
def warm(folder: str) -> dict:
    """Reports done on its second call, as a server that warms a folder in budgeted steps."""
    counter = STATE / "warm-calls"
    with open(STATE / "warm-calls.lock", "w") as lock:  # servers on two workers share the counter: one at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        n = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(n))
    return {"done": n >= 2, "folder": folder}


@server.tool()
def search(query: str, k: int, folder: str) -> dict:
    if query == "crash" or (query == "crash once" and not (STATE / "crashed").exists()):
        (STATE / "crashed").touch()
        os._exit(3)
    if query == "slow":  # never answered: only the client's timeout ends the call
        time.sleep(3600)
    if query == "tool error":
        raise ValueError("the index is locked")
    if query == "inline error":
        return {"problem": "index missing", "results": {"items": []}}
    if query == "refuse":
        return {"results": {"items": []}, "verdict": "no evidence"}
    if query == "junk":  # a server that prints to its stdout, the protocol's channel
        print("loading index... done", flush=True)
    if query == "far page":
        return {"results": {"items": [{"file": f"file://{folder}/a.pdf", "n": 9999, "s": 1.0}]}}
    if query == "stranger":
        return {"results": {"items": [{"file": f"file://{folder}/elsewhere.pdf", "n": 1, "s": 1.0}]}}
    items = [{"file": f"file://{folder}/b%20doc.pdf", "n": 2, "s": 0.9},
             {"file": f"file://{folder}/a.pdf", "n": 1, "s": 0.5},
             {"file": f"file://{folder}/b%20doc.pdf", "n": 1, "s": 0.5}]
    return {"results": {"items": items[:k]}, "verdict": "ok", "query": query}


@server.tool(structured_output=False)
def search_text(query: str) -> str:
    """Answers in text content only: JSON for a normal query, prose otherwise."""
    if query == "prose":
        return "I found nothing useful."
    return '{"results": {"items": [{"file": "a", "n": 3}]}}'


if __name__ == "__main__":
    print("test server starting", file=sys.stderr)
    server.run("stdio")
