"""Corpora pinned by ``corpora.lock``: read and write the lock, fetch, verify, and open a folder of PDFs.

A lock entry names every document with its sha256, size, page count and source. Sources are URIs:
``deb:PACKAGE=VERSION:/path/in/package`` (fetched with ``apt-get download`` + ``dpkg-deb -x``, which
need no root, or copied from the installed package when its bytes match) or ``file:PATH``. A relative
``file:`` path (what ``corpus lock`` and ``corpus add`` write) and an entry's ``root`` resolve against the
lock file's folder, so a repository that commits its PDFs beside its lock verifies them on any machine.
A lock is data, perhaps someone else's: the paths it names may lead only into its own folder, the data
folder, or a folder the user pinned for it (:func:`within`); a folder the caller passes is taken as it is.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from . import dirs, ids
from .atomic import holding, replacing, write_atomic
from .records import Document


class CorpusError(Exception):
    """A corpus cannot be read, fetched or verified; the message names the corpus and document."""


@dataclass(frozen=True)
class Corpus:
    """A named set of documents in a folder. ``documents`` are sorted by name."""

    name: str
    root: Path
    documents: tuple[Document, ...]
    description: str = ""
    base: Path | None = None  # the folder of the lock it was read from: relative file: sources resolve here

    def path(self, doc: Document | str) -> Path:
        return self.root / (doc if isinstance(doc, str) else doc.name)

    def document(self, name: str) -> Document:
        for d in self.documents:
            if d.name == name:
                return d
        raise KeyError(name)

    @property
    def pages(self) -> int:
        return sum(d.pages for d in self.documents)

    def copies(self) -> dict[str, str]:
        """Each byte-identical copy's name -> the first name (in name order) with the same bytes: one
        document under two names, which a lock must not pin twice."""
        first: dict[str, str] = {}
        return {d.name: first[d.sha256] for d in self.documents if first.setdefault(d.sha256, d.name) != d.name}

    def digest(self) -> str:
        """sha256 over (name, sha256) pairs: identifies exactly which bytes a result was computed on."""
        h = hashlib.sha256()
        for d in self.documents:
            h.update(f"{d.name}\0{d.sha256}\n".encode())
        return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- the lock file -------------------------------------------------------------------------------------

def read_lock(path: Path | None = None) -> dict[str, dict]:
    """The corpora of the lock ``path``; by default those of :func:`evalkit.dirs.lock_paths`, a user's
    ./corpora.lock over the lock shipped with evalkit."""
    entries: dict[str, dict] = {}
    for p in [path] if path else dirs.lock_paths():
        entries.update(_read_lock_file(p))
    return entries


def _read_lock_file(path: Path) -> dict[str, dict]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f).get("corpus", {})
    except FileNotFoundError:
        raise CorpusError(f"no lock file at {path}") from None
    except tomllib.TOMLDecodeError as e:
        raise CorpusError(f"{path}: not valid TOML: {e}") from None


def write_lock(entries: dict[str, dict], path: Path | None = None) -> None:
    """Write ``entries`` to ``path`` (default: :func:`evalkit.dirs.lock_target`, never the installation)."""
    path = path or dirs.lock_target()
    text = ("# Pinned corpora: every document's sha256, size, pages and source (paths relative to this file).\n"
            "# Written by `evalkit corpus lock` or `evalkit corpus add`.\n")
    text += tomli_w.dumps({"corpus": {k: entries[k] for k in sorted(entries)}})
    write_atomic(path, text)


@contextmanager
def updating(path: Path) -> Iterator[dict[str, dict]]:
    """The entries of the lock ``path`` (none if it does not exist yet) to change in place, written back
    when the block ends; read, changed and written while holding the lock's folder, so two ``corpus add``
    at once keep both entries."""
    with holding(path.parent):
        entries = read_lock(path) if path.exists() else {}
        yield entries
        write_lock(entries, path)


def locate(name: str, path: Path | None = None) -> tuple[dict, Path]:
    """The lock entry ``name`` and the lock file it was read from (of several, the last that holds it)."""
    files = [path] if path else list(dirs.lock_paths())
    known: set[str] = set()
    for p in reversed(files):
        entries = _read_lock_file(p)
        if name in entries:
            return entries[name], p
        known |= set(entries)
    where = path or " + ".join(map(str, files))
    raise CorpusError(f"corpus {name!r} is not in {where} (known: {', '.join(sorted(known)) or 'none'})")


def relative_to_lock(path: Path, lock: Path) -> str:
    """``path`` as written in ``lock``: relative to the lock's folder with ``/`` separators (absolute only
    where no relative path exists, another drive on Windows)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(lock).resolve().parent)).as_posix()
    except ValueError:
        return Path(path).resolve().as_posix()


def resolve(written: str, base: Path | None) -> Path:
    """A path written in a lock (``root``, a ``file:`` source) as a path on this machine."""
    p = Path(written)
    return p if p.is_absolute() or base is None else base / p


def _documents(entry: dict, corpus: str, lock: Path, scope: list[Path]) -> tuple[Document, ...]:
    """The documents of a lock entry, refused (naming the lock, the corpus and the field) when one lacks a
    field, its name is not a PDF's file name (a name is joined onto the corpus's folder: with ``..``, a
    separator or another kind of file, a fetch would write something else, somewhere else) or its ``file:``
    source lies outside ``scope``, where the lock may point (:func:`within`)."""
    docs = []
    for i, d in enumerate(entry.get("document", [])):
        where = f"{lock}: corpus {corpus!r}: document #{i + 1}"
        missing = [k for k in ("name", "sha256", "pages") if k not in d]
        if missing:
            raise CorpusError(f"{where} lacks {', '.join(missing)}")
        why = ids.unsafe(d["name"]) or (None if d["name"].lower().endswith(".pdf") else "is not a PDF's name (*.pdf)")
        if why:
            raise CorpusError(f"{where} name {d['name']!r} {why}")
        source = d.get("source", "")
        if str(source).startswith("file:"):
            within(source.removeprefix("file:"), lock, scope, corpus, f"document #{i + 1} source")
        docs.append(Document(d["name"], d["sha256"], int(d["pages"]), source, int(d.get("bytes", 0))))
    names = [d.name for d in docs]
    if len(set(names)) != len(names):
        raise CorpusError(f"{lock}: corpus {corpus!r}: document names are not unique")
    return tuple(sorted(docs, key=lambda d: d.name))


def check_name(name: object, where: str = "corpus name") -> str:
    """``name`` if it can name a folder under the data dir (no ``..``, no separator), else CorpusError."""
    if why := ids.unsafe(name):
        raise CorpusError(f"{where} {name!r} {why}")
    assert isinstance(name, str)  # ids.unsafe refuses anything else
    return name


def default_root(name: str) -> Path:
    return dirs.data_dir() / "corpora" / check_name(name)


def load(name: str, root: Path | None = None, lock: Path | None = None) -> Corpus:
    """The corpus ``name`` as pinned by the lock, expected in ``root`` (named by the caller: taken as it
    is): by default the entry's own ``root`` (a folder added with ``corpus add``, relative to the lock,
    refused where the lock may not point: :func:`within`), else the data dir."""
    entry, where = locate(check_name(name), lock)
    if not isinstance(entry, dict):
        raise CorpusError(f"{where}: corpus {name!r} is not a table")
    scope = _scope(where)
    folder = root or (within(entry["root"], where, scope, name, "root") if "root" in entry else default_root(name))
    return Corpus(name, Path(folder), _documents(entry, name, where, scope), entry.get("description", ""),
                  Path(where).resolve().parent)


# ---- where a lock may point -------------------------------------------------------------------------------
# A lock is data: one from a cloned repository was written by someone else. Every path it names (a root,
# a file: source) must lead, links followed, into the lock's own folder (PDFs committed beside it), the data
# folder, or a folder this user pinned for this very lock with `corpus add`/`corpus lock` (recorded in the
# data folder, where a cloned repository cannot write). A folder passed on the command line is the user's.

NAMED = "named-folders.toml"


def within(written: object, lock: Path, scope: list[Path], corpus: str, field: str) -> Path:
    """The path ``written`` in ``lock`` (corpus ``corpus``, as ``field``) on this machine, if it leads into
    ``scope`` (:func:`_scope`); else CorpusError naming the lock, the corpus and the field."""
    where = f"{lock}: corpus {corpus!r}: {field} {written!r}"
    if not isinstance(written, str) or not written or "\0" in written:
        raise CorpusError(f"{where} is not a path")
    path = resolve(written, Path(lock).resolve().parent)
    if not any(path.resolve().is_relative_to(f) for f in scope):
        hint = ("name the corpus's folder yourself with --root DIR (fetch: --dest DIR)" if field == "root"
                else "a lock reads files beside it; pin a folder of your own with `evalkit corpus add NAME DIR`")
        raise CorpusError(f"{where} leads outside the lock's folder and the data folder ({dirs.data_dir()}), "
                          f"to {path.resolve()}: {hint}")
    return path


def _scope(lock: Path) -> list[Path]:
    """The folders a path written in ``lock`` may lead into."""
    lock = Path(lock).resolve()
    named = [Path(n["folder"]) for n in _named() if n.get("lock") == str(lock)]
    return [lock.parent, dirs.data_dir().resolve(), *named]


def _named() -> list[dict]:
    path = dirs.data_dir() / NAMED
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")).get("named", [])
    except FileNotFoundError:
        return []
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CorpusError(f"{path}: not valid TOML: {e}") from None


def name_folder(folder: Path, lock: Path) -> None:
    """Record that this user pinned ``folder`` in ``lock`` (when it lies outside the lock's folder and the
    data folder): that lock may point there from now on, a lock from elsewhere still may not."""
    folder, lock = Path(folder).resolve(), Path(lock).resolve()
    if any(folder.is_relative_to(f) for f in _scope(lock)):
        return
    data = dirs.data_dir()
    data.mkdir(parents=True, exist_ok=True)
    with holding(data):
        named = [*_named(), {"lock": str(lock), "folder": str(folder)}]
        write_atomic(data / NAMED, "# Folders pinned with `evalkit corpus add`/`corpus lock` outside their lock's "
                                   "folder: that lock may point there.\n" + tomli_w.dumps({"named": named}))


def symlinks(root: Path) -> list[str]:
    """The .pdf names in ``root`` that are symbolic links: read only when asked (``--follow-symlinks``), since
    a link can point anywhere on the machine."""
    return [p.name for p in sorted(Path(root).iterdir()) if p.suffix.lower() == ".pdf" and p.is_symlink()]


def from_dir(root: Path, name: str | None = None, follow_symlinks: bool = False) -> Corpus:
    """Any folder of PDFs, hashed now (for corpora that are not in the lock); symbolic links are left out
    unless ``follow_symlinks``. Page counts are filled in by the page store; here they are 0."""
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{root} is not a folder")
    docs = [Document(p.name, sha256_file(p), 0, f"file:{p.resolve()}", p.stat().st_size)
            for p in sorted(root.iterdir()) if p.is_file() and p.suffix.lower() == ".pdf"
            and (follow_symlinks or not p.is_symlink())]
    if not docs:
        links = "" if follow_symlinks or not (found := symlinks(root)) else \
            f" but {len(found)} symbolic link(s) to PDFs: pass --follow-symlinks to read them"
        raise CorpusError(f"{root} holds no .pdf files{links}")
    if clashes := ids.normalization_clashes([d.name for d in docs]):
        a, b = clashes[0]
        raise CorpusError(f"{root}: {a!r} and {b!r} are the same name in different Unicode forms (NFC/NFD); "
                          "rename one so judgments cannot silently name the other")
    return Corpus(name or root.resolve().name, root, tuple(docs))


# ---- verify ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verification:
    missing: tuple[str, ...]
    changed: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.missing or self.changed or self.extra)


def verify(corpus: Corpus) -> Verification:
    missing, changed = [], []
    for d in corpus.documents:
        p = corpus.path(d)
        if not p.exists():
            missing.append(d.name)
        elif sha256_file(p) != d.sha256:
            changed.append(d.name)
    names = {d.name for d in corpus.documents}
    extra = sorted(p.name for p in corpus.root.glob("*.pdf")) if corpus.root.is_dir() else []
    return Verification(tuple(missing), tuple(changed), tuple(n for n in extra if n not in names))


# ---- fetch ----------------------------------------------------------------------------------------------

def fetch(corpus: Corpus, progress=None) -> list[str]:
    """Materialise every document of ``corpus`` into its folder; returns the names written.

    Each file is verified against its sha256 before it is renamed into place, so an interrupted or failed
    fetch leaves only complete, verified files. A mismatch raises CorpusError naming the document.
    """
    corpus.root.mkdir(parents=True, exist_ok=True)
    todo = [d for d in corpus.documents
            if not (corpus.path(d).exists() and sha256_file(corpus.path(d)) == d.sha256)]
    by_package: dict[str, list[tuple[Document, str]]] = defaultdict(list)
    for d in todo:
        scheme, _, rest = d.source.partition(":")
        if scheme == "deb":
            package, _, inner = rest.partition(":")
            by_package[package].append((d, inner))
        elif scheme == "file":
            _install(resolve(rest, corpus.base), corpus.path(d), d)
        else:
            raise CorpusError(f"{d.name}: cannot fetch source {d.source!r} (want deb:… or file:…)")
    for package, docs in by_package.items():
        _fetch_deb(package, docs, corpus.root)
    return [d.name for d in todo]


def _fetch_deb(package: str, docs: list[tuple[Document, str]], root: Path) -> None:
    pending = []
    for d, inner in docs:  # the installed package's own file, when its bytes are the pinned ones
        installed = Path(inner)
        if installed.is_file() and sha256_file(installed) == d.sha256:  # a file: not a device that never ends
            _install(installed, root / d.name, d)
        else:
            pending.append((d, inner))
    if not pending:
        return
    debs = dirs.data_dir() / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    name, _, version = package.partition("=")
    deb = next(iter(sorted(debs.glob(f"{name}_{version.replace(':', '%3a')}_*.deb"))), None) if version else None
    if deb is None:
        deb = _apt_download(package, debs)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        run = subprocess.run(["dpkg-deb", "-x", str(deb), tmp], capture_output=True, text=True)
        if run.returncode != 0:
            raise CorpusError(f"dpkg-deb -x {deb.name} failed: {run.stderr.strip()}")
        for d, inner in pending:
            src = Path(tmp) / inner.lstrip("/")
            if not src.resolve().is_relative_to(Path(tmp).resolve()):
                raise CorpusError(f"{d.name}: source path {inner!r} leads outside {deb.name}")
            if not src.exists():
                raise CorpusError(f"{d.name}: {inner} is not in {deb.name}")
            _install(src.resolve(), root / d.name, d)


def _apt_download(package: str, folder: Path) -> Path:
    """``apt-get download`` (no root needed); on a machine whose package lists were never fetched, and only
    when running as root, ``apt-get update`` once and try again."""
    def download() -> subprocess.CompletedProcess:
        return subprocess.run(["apt-get", "download", package], cwd=folder, capture_output=True, text=True)

    run = download()
    if run.returncode != 0 and hasattr(os, "geteuid") and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True)
        run = download()
    if run.returncode != 0:
        raise CorpusError(f"apt-get download {package} failed: {run.stderr.strip() or run.stdout.strip()}")
    name = package.partition("=")[0]
    return max(folder.glob(f"{name}_*.deb"), key=os.path.getmtime)


def _install(src: Path, dest: Path, doc: Document) -> None:
    """Copy ``src`` to ``dest`` through a temporary name, verifying the pinned sha256 first."""
    if not src.exists():
        raise CorpusError(f"{doc.name}: source file {src} does not exist")
    with replacing(dest) as tmp:  # nothing is left behind by a mismatch or a full disk
        shutil.copyfile(src, tmp)
        got = sha256_file(tmp)
        if got != doc.sha256:
            raise CorpusError(f"{doc.name}: sha256 mismatch (lock {doc.sha256[:12]}…, fetched {got[:12]}…)")


# ---- lock from a folder -----------------------------------------------------------------------------------

def lock_problems(unreadable: dict[str, str], copies: dict[str, str]) -> str:
    """Why nothing was locked from a folder, and what to remove, in one line."""
    why, remove = [], []
    if unreadable:
        why.append(f"{len(unreadable)} file(s) cannot be read")
        remove.append("the unreadable files")
    if len(copies) == 1:
        (name, original), = copies.items()
        why.append(f"{name} and {original} are identical copies (a lock pins each document once)")
        remove.append("one of the two")
    elif copies:
        why.append(f"{len(copies)} files are identical copies of others (a lock pins each document once)")
        remove.append("the copies")
    return f"{'; '.join(why)}: remove {' and '.join(remove)} and lock again"


def lock_corpus(c: Corpus, lock: Path | None = None, description: str | None = None, usable: bool = False) -> dict:
    """Write or update the lock entry ``c.name`` in ``lock`` (default: :func:`evalkit.dirs.lock_target`)
    from a corpus read from a folder (page counts filled in by the page store). Unchanged files keep a
    source other than ``file:`` (a Debian package); the others get ``file:`` relative to the lock. With
    ``usable``, the entry's ``root`` is the folder itself (relative to the lock): no fetch is needed."""
    check_name(c.name)
    lock = lock or dirs.lock_target()
    name_folder(c.root, lock)
    with updating(lock) as entries:
        entries[c.name] = _entry(c, entries.get(c.name, {}), lock, description, usable)
        return entries[c.name]


def _entry(c: Corpus, prev: dict, lock: Path, description: str | None, usable: bool) -> dict:
    """The lock entry of ``c`` written into ``lock``, updating ``prev`` (the entry it replaces, or {})."""
    old = {d["name"]: d for d in prev.get("document", [])}
    docs = []
    for d in c.documents:
        was = old.get(d.name, {})
        kept = was.get("sha256") == d.sha256 and not was.get("source", "file:").startswith("file:")
        source = was["source"] if kept else f"file:{relative_to_lock(c.path(d), lock)}"
        docs.append({"name": d.name, "sha256": d.sha256, "bytes": d.bytes, "pages": d.pages, "source": source})
    entry = {k: v for k, v in prev.items() if k != "document"}
    if description is not None:
        entry["description"] = description
    root = relative_to_lock(c.root, lock)
    if usable:
        entry["root"] = root
    elif entry.get("root") != root:  # locked from another folder: the old root no longer holds these files
        entry.pop("root", None)
    entry["document"] = docs
    return entry
