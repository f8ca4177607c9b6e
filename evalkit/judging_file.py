"""The workbench's query file on disk: one writer at a time, read as its bytes are, and written back in its
own style only when evalkit can read what is written.

The lock is an exclusive ``flock`` on ``FILE.lock``, held by a session for its lifetime; the kernel drops
it when the process dies, however it dies, so a killed kernel's lock is free at once and only a living
workbench refuses a second one. The lock file names its holder, for the message of the one refused.
"""
from __future__ import annotations

import fcntl
import os
import re
import socket
from pathlib import Path

import tomlkit

from . import qrels
from .records import split_page_id

BOM = "\ufeff"


class JudgingError(Exception):
    """An action the workbench refuses; the message names the file, query or page and why."""


def check(text: str, doc: tomlkit.TOMLDocument, path: Path) -> None:
    """Raise :class:`evalkit.qrels.QrelsError` unless ``text`` (whose document is ``doc``) is a query file
    evalkit reads (a new one may have no query yet) with the workbench's fields as the session expects
    them. UTF-8 too: a lone surrogate cannot be written."""
    try:
        raw = text.removeprefix(BOM).encode("utf-8")
    except UnicodeEncodeError as e:
        raise qrels.QrelsError(f"{path}: character {e.start} is a lone surrogate, which UTF-8 cannot hold") from None
    if "query" not in doc:
        return
    qs = qrels.parse(raw, path)
    for q, entry in zip(qs.queries, doc["query"], strict=True):
        skipped, aside = entry.get("skipped", []), entry.get("set_aside", [])
        try:
            if not isinstance(aside, list) or not isinstance(skipped, list):
                raise ValueError
            [split_page_id(p) for p in skipped]
        except (ValueError, TypeError, AttributeError):
            raise qrels.QrelsError(f"{path}: query {q.id!r}: 'skipped' is not a list of page ids "
                                   "(\"doc.pdf#3\") or 'set_aside' not a list") from None


def styled(text: str, like: str) -> str:
    """``text`` (tomlkit's, line ends as they come) with the line ends and byte-order mark of ``like``,
    the file as read: a file saved from Windows stays CRLF."""
    text = text.replace("\r\n", "\n")
    body = like.removeprefix(BOM)
    if body.find("\n") > 0 and body[body.find("\n") - 1] == "\r":
        text = text.replace("\n", "\r\n")
    return BOM + text if like.startswith(BOM) else text


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def holder(text: str) -> int | None:
    m = re.match(r"\s*(?:pid )?(\d+)", text)
    return int(m.group(1)) if m else None


def acquire(path: Path) -> tuple[int, str]:
    """Take the workbench lock of ``path``: an exclusive ``flock`` on ``FILE.lock``, held until
    :func:`release` (or until the process dies: the kernel drops it, so a killed kernel's lock is free).
    Another holder, in this process or another, is refused, naming it. Returns the descriptor to keep and
    what the user should be told ("" when nothing)."""
    lock = lock_path(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            who = ("another workbench of this process (close it first: w.close())" if holder(text) == os.getpid()
                   else f"another workbench ({text or 'a process starting up'})")
            raise JudgingError(f"{path} is open in {who}; lock {lock}: one workbench per file") from None
        try:
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:  # not removed by its owner since we opened it
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    text = os.pread(fd, 4096, 0).decode(errors="replace").strip()
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    held = holder(text)
    return fd, (f"took over the lock of process {held}, which is no longer running: nothing was lost"
                if held and held != os.getpid() else "")


def release(path: Path, fd: int, owner: int) -> None:
    """Give the lock ``fd`` (from :func:`acquire`, in process ``owner``) back: its file removed while still
    held, so that whoever opened it meanwhile sees it gone and takes a new one. Only the owner removes it
    (not a forked child that inherited the descriptor)."""
    if os.getpid() != owner:
        return
    try:
        lock = lock_path(path)
        if os.stat(lock).st_ino == os.fstat(fd).st_ino:
            lock.unlink()
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
