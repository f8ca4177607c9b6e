"""The `evalkit` command for the docs' shell examples, without paying its imports per command.

Importing what evalkit's commands use takes seconds of CPU, and the docs' examples call it a few dozen times, so
`tests/test_docs.py` puts a small client on PATH as `evalkit`: it hands its arguments, working directory,
environment and standard streams (by /proc/PID/fd) to this server, which has imported evalkit's modules once,
forks, and runs `evalkit.cli.main` in the child: the same code path as `python -m evalkit`, in a process of
its own, with the example's files, streams and exit code.

    python -m tests.cli_server SOCKET      # serves until killed
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys

CLIENT = '''import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect({sock!r})
s.sendall(json.dumps({{"pid": os.getpid(), "cwd": os.getcwd(), "env": dict(os.environ),
                      "argv": sys.argv[1:]}}).encode())
s.shutdown(socket.SHUT_WR)
code = int(s.recv(16) or b"1")
# `evalkit gate` and `evalkit tune` exit 1 on a failed rule: a verdict, not a broken example (2 still fails)
sys.exit(0 if code == 1 and sys.argv[1:2] in (["gate"], ["tune"]) else code)
'''


def client(path: str, sock: str) -> None:
    """Write the `evalkit` client script to ``path``: a Python started without site packages (fast)."""
    with open(path, "w") as f:
        f.write(f"#!{sys.executable} -IS\n" + CLIENT.format(sock=sock))
    os.chmod(path, 0o755)


def run(request: dict) -> int:
    """One command in this (forked) process, as the client would have run it."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for n, flags in ((0, os.O_RDONLY), (1, os.O_WRONLY | os.O_APPEND), (2, os.O_WRONLY | os.O_APPEND)):
        fd = os.open(f"/proc/{request['pid']}/fd/{n}", flags)
        os.dup2(fd, n)
        os.close(fd)
    sys.argv = ["evalkit", *request["argv"]]
    from evalkit import cli

    try:
        return cli.main(request["argv"])
    except SystemExit as e:  # argparse: --help, --version, a usage error
        return e.code if isinstance(e.code, int) else 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def serve(path: str) -> None:
    # the command line loads a command's modules when it runs: load the heavy ones once, here, for every child
    from evalkit import api, cli, comparison, gating, runner  # noqa: F401

    server = socket.socket(socket.AF_UNIX)
    server.bind(path + ".new")
    server.listen()
    os.rename(path + ".new", path)  # the path appears once connections are taken
    while True:
        conn, _ = server.accept()
        request = json.loads(b"".join(iter(lambda: conn.recv(65536), b"")))  # noqa: B023 (called in this iteration only)
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = 1
            try:
                code = run(request)
            finally:
                conn.sendall(str(code).encode())
                os._exit(0)
        conn.close()
        while True:  # reap the children that have finished
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


if __name__ == "__main__":
    serve(sys.argv[1])
