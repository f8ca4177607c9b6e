import shutil
from pathlib import Path

import pytest

from evalkit import corpora, dirs
from evalkit.corpora import CorpusError
from evalkit.pages import PageStore

from .conftest import make_pdf


def _folder(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    make_pdf(src / "alpha.pdf", ["first page about margins", "second page"])
    make_pdf(src / "beta.pdf", ["beta text"])
    return src


def _lock(src: Path, name: str = "mine", **kw) -> dict:
    with PageStore() as store:
        return corpora.lock_corpus(store.ingest(corpora.from_dir(src, name), progress=False).corpus, **kw)


def test_lock_round_trip(isolated):
    src = _folder(isolated)
    _lock(src, description="two tiny PDFs")
    loaded = corpora.load("mine", root=src)
    assert [(d.name, d.pages) for d in loaded.documents] == [("alpha.pdf", 2), ("beta.pdf", 1)]
    assert [d.sha256 for d in loaded.documents] == [d.sha256 for d in corpora.from_dir(src).documents]
    assert loaded.description == "two tiny PDFs"
    assert all(d.source.startswith("file:") and d.bytes > 0 for d in loaded.documents)
    # updating keeps other corpora and is idempotent
    _lock(src, "other")
    _lock(src)
    assert set(corpora.read_lock()) == {"mine", "other"}
    assert corpora.load("mine", root=src).documents == loaded.documents


def test_unknown_corpus_names_the_known_ones(isolated):
    src = _folder(isolated)
    _lock(src)
    with pytest.raises(CorpusError, match="'nope' is not in .*known: mine"):
        corpora.load("nope")


def test_fetch_then_verify_then_tamper(isolated):
    src = _folder(isolated)
    _lock(src)
    c = corpora.load("mine")  # default root under the data dir
    assert sorted(corpora.fetch(c)) == ["alpha.pdf", "beta.pdf"]
    assert corpora.verify(c).ok
    assert corpora.fetch(c) == []  # nothing to do the second time

    (c.root / "beta.pdf").write_bytes(b"%PDF-1.4 tampered")
    (c.root / "stray.pdf").write_bytes(b"x")
    (c.root / "alpha.pdf").unlink()
    v = corpora.verify(c)
    assert (v.missing, v.changed, v.extra, v.ok) == (("alpha.pdf",), ("beta.pdf",), ("stray.pdf",), False)

    assert sorted(corpora.fetch(c)) == ["alpha.pdf", "beta.pdf"]  # repairs
    assert corpora.verify(c).extra == ("stray.pdf",)


def test_fetch_rejects_a_source_that_does_not_match_and_leaves_nothing(isolated):
    src = _folder(isolated)
    _lock(src)
    make_pdf(src / "beta.pdf", ["beta text, edited after locking"])
    c = corpora.load("mine")
    with pytest.raises(CorpusError, match="beta.pdf: sha256 mismatch"):
        corpora.fetch(c)
    assert sorted(p.name for p in c.root.iterdir()) == ["alpha.pdf"]  # no partial beta


def test_lock_rejects_duplicate_names(isolated):
    lock = isolated / "corpora.lock"
    lock.write_text('[[corpus.x.document]]\nname="a.pdf"\nsha256="1"\npages=1\n'
                    '[[corpus.x.document]]\nname="a.pdf"\nsha256="2"\npages=1\n')
    with pytest.raises(CorpusError, match="not unique"):
        corpora.load("x")


def test_a_lock_is_written_in_the_working_directory_and_the_shipped_corpora_stay_known(isolated, monkeypatch):
    monkeypatch.delenv("EVALKIT_LOCK")
    monkeypatch.chdir(isolated)
    shipped = dirs.shipped_lock()
    before = shipped.read_bytes()
    assert not (isolated / "corpora.lock").exists() and dirs.lock_paths() == (shipped,)
    _lock(_folder(isolated))
    assert set(corpora.read_lock(isolated / "corpora.lock")) == {"mine"}  # the user's file holds only theirs
    assert shipped.read_bytes() == before
    assert dirs.lock_paths() == (shipped, isolated / "corpora.lock")
    assert {"mine", "latex", "rmanuals"} <= set(corpora.read_lock())
    assert corpora.load("latex").documents == corpora.load("latex", lock=shipped).documents
    with pytest.raises(CorpusError, match=f"'nope' is not in {shipped} \\+ {isolated / 'corpora.lock'}"):
        corpora.load("nope")


def test_a_corpus_in_the_working_directory_lock_wins_over_a_shipped_one_of_the_same_name(isolated, monkeypatch):
    monkeypatch.delenv("EVALKIT_LOCK")
    monkeypatch.chdir(isolated)
    _lock(_folder(isolated), "latex")
    assert [d.name for d in corpora.load("latex").documents] == ["alpha.pdf", "beta.pdf"]


def test_copies_map_each_identical_copy_to_the_first_name(isolated):
    src = _folder(isolated)
    assert corpora.from_dir(src).copies() == {}
    for name in ("gamma.pdf", "aardvark.pdf"):
        shutil.copy(src / "beta.pdf", src / name)
    shutil.copy(src / "alpha.pdf", src / "zeta.pdf")
    assert corpora.from_dir(src).copies() == {"beta.pdf": "aardvark.pdf", "gamma.pdf": "aardvark.pdf",
                                             "zeta.pdf": "alpha.pdf"}


def test_digest_depends_on_names_and_bytes(isolated):
    src = _folder(isolated)
    a = corpora.from_dir(src)
    (src / "beta.pdf").rename(src / "gamma.pdf")
    assert corpora.from_dir(src).digest() != a.digest()


@pytest.mark.slow
def test_default_corpora_fetch_from_debian_and_verify(latex, real_env, monkeypatch):
    c, _ = latex
    assert len(c.documents) == 100 and 1800 <= c.pages <= 2800
    for k, v in real_env.items():
        monkeypatch.setenv(k, v)
    r = corpora.load("rmanuals")
    corpora.fetch(r)
    assert corpora.verify(r).ok
    names = {d.name for d in r.documents}
    assert {"R-intro.pdf", "R-lang.pdf", "R-data.pdf", "R-admin.pdf", "R-exts.pdf", "R-ints.pdf",
            "R-FAQ.pdf", "refman.pdf"} == names


@pytest.mark.parametrize("name, doc, says", [
    ("mine", "../../escaped.pdf", "document #1 name '../../escaped.pdf' holds a path separator"),
    ("mine", "/tmp/evalkit-absolute.pdf", "holds a path separator"),
    ("mine", "..", "is '..', a folder"),
    ("mine", "a/../../b.pdf", "document #1 name 'a/../../b.pdf' holds a path separator"),
    ("mine", ".bashrc", "document #1 name '.bashrc' is not a PDF's name"),
    ("../../escaped", "alpha.pdf", "corpus name '../../escaped' holds a path separator")])


def test_fetch_never_writes_outside_the_data_folder(isolated, name, doc, says):
    src = _folder(isolated)
    entry = {"document": [{"name": doc, "sha256": corpora.sha256_file(src / "alpha.pdf"), "pages": 2,
                           "source": f"file:{src / 'alpha.pdf'}"}]}
    corpora.write_lock({name: entry})
    before = set(isolated.rglob("*")) | set(Path("/tmp").glob("evalkit-absolute*"))
    with pytest.raises(CorpusError, match=says):
        corpora.fetch(corpora.load(name))
    assert set(isolated.rglob("*")) | set(Path("/tmp").glob("evalkit-absolute*")) == before


def test_a_lock_entry_must_have_a_name_that_is_a_folder_name(isolated):
    src = _folder(isolated)
    with pytest.raises(CorpusError, match="corpus name 'a/b' holds a path separator"):
        _lock(src, "a/b")
    assert not (isolated / "corpora.lock").exists()


def test_symbolic_links_are_left_out_unless_followed(isolated):
    src = _folder(isolated)
    (src / "link.pdf").symlink_to(src / "alpha.pdf")
    assert corpora.symlinks(src) == ["link.pdf"]
    assert [d.name for d in corpora.from_dir(src).documents] == ["alpha.pdf", "beta.pdf"]
    assert [d.name for d in corpora.from_dir(src, follow_symlinks=True).documents] == ["alpha.pdf", "beta.pdf",
                                                                                       "link.pdf"]
    only = isolated / "only-links"
    only.mkdir()
    (only / "a.pdf").symlink_to(src / "alpha.pdf")
    with pytest.raises(CorpusError, match="holds no .pdf files but 1 symbolic link.*--follow-symlinks"):
        corpora.from_dir(only)


def test_relative_sources_verify_and_fetch_wherever_the_repository_is_checked_out(isolated, monkeypatch):
    repo = isolated / "repo"
    repo.mkdir()
    src = _folder(repo)
    with PageStore() as store:
        corpora.lock_corpus(store.ingest(corpora.from_dir(src, "mine"), progress=False).corpus, repo / "corpora.lock",
                            usable=True)
    moved = isolated / "elsewhere" / "checkout"
    shutil.move(repo, moved)  # another machine: the same repository at another path
    c = corpora.load("mine", lock=moved / "corpora.lock")
    assert c.root == moved / "src" and corpora.verify(c).ok and c.base == moved
    assert {d.source for d in c.documents} == {"file:src/alpha.pdf", "file:src/beta.pdf"}
    into = corpora.load("mine", root=isolated / "fetched", lock=moved / "corpora.lock")
    assert corpora.fetch(into) == ["alpha.pdf", "beta.pdf"] and corpora.verify(into).ok


def test_old_absolute_file_sources_still_fetch(isolated):
    src = _folder(isolated)
    lock = isolated / "old.lock"
    c = corpora.from_dir(src, "old")
    entry = {"document": [{"name": d.name, "sha256": d.sha256, "bytes": d.bytes, "pages": 1, "source": d.source}
                          for d in c.documents]}
    assert all(d.source.startswith(f"file:{src.resolve()}") for d in c.documents)
    corpora.write_lock({"old": entry}, lock)
    into = corpora.load("old", root=isolated / "fetched", lock=lock)
    assert into.root == isolated / "fetched" and corpora.fetch(into) == ["alpha.pdf", "beta.pdf"]


def test_relocking_a_shipped_corpus_keeps_its_package_sources(isolated):
    src = _folder(isolated)
    lock = isolated / "corpora.lock"
    _lock(src)
    entries = corpora.read_lock(lock)
    entries["mine"]["document"][0]["source"] = "deb:pkg=1:/usr/share/doc/alpha.pdf"
    corpora.write_lock(entries, lock)
    _lock(src)
    assert [d["source"] for d in corpora.read_lock(lock)["mine"]["document"]] == [
        "deb:pkg=1:/usr/share/doc/alpha.pdf", "file:src/beta.pdf"]


def test_locking_another_folder_drops_the_root_of_the_first(isolated):
    lock = isolated / "corpora.lock"
    with PageStore() as store:
        def pin(folder, usable):
            corpora.lock_corpus(store.ingest(corpora.from_dir(folder, "mine"), progress=False).corpus, lock,
                                usable=usable)
            return corpora.read_lock(lock)["mine"].get("root")

        src = _folder(isolated)
        assert pin(src, True) == "src" and pin(src, False) == "src"  # re-locking the same folder keeps it
        other = isolated / "other"
        shutil.copytree(src, other)
        assert pin(other, False) is None and corpora.load("mine", lock=lock).root == corpora.default_root("mine")


# The first `corpus add` stops between reading the lock and writing it back until the second has read it
# too (the race: both then write what they read plus their own entry) or is waiting for the lock (it cannot
# read before the first is done): /proc/locks lists a process waiting for a flock with "->".
ADD_STOPPING_AFTER_READ = '''
import sys, time
from pathlib import Path
from evalkit import cli, corpora
me, folder, signals = sys.argv[1], sys.argv[2], Path(sys.argv[3])
read = corpora.read_lock

def waiting(pid_file):
    pid = pid_file.read_text().strip() if pid_file.exists() else None
    return bool(pid) and any(l.split()[1:2] == ["->"] and l.split()[5] == pid for l in open("/proc/locks"))

def stopping(path=None):
    entries = read(path)
    (signals / f"{me}-read").touch()
    for _ in range(30000 if me == "first" else 0):
        if (signals / "second-read").exists() or waiting(signals / "second-pid"):
            break
        time.sleep(0.01)
    return entries

corpora.read_lock = stopping
sys.exit(cli.main(["corpus", "add", me, folder, "--cache", str(signals / f"{me}.sqlite")]))
'''


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs Linux's /proc/locks to see a waiting process")
def test_two_corpus_adds_at_once_keep_both_entries(isolated):
    import subprocess
    import sys
    import time

    signals = isolated / "signals"
    signals.mkdir()
    _lock(_folder(isolated), "old")
    folders = {}
    for me in ("first", "second"):
        folders[me] = isolated / me
        folders[me].mkdir()
        make_pdf(folders[me] / f"{me}.pdf", [f"the {me} document"])

    def add(me: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", ADD_STOPPING_AFTER_READ, me, str(folders[me]), str(signals)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = add("first")
    # the first has read the lock (not yet there) and stops before writing it; both waits are bounded at
    # 5 minutes, which a busy machine may need to get there (never early), and pass the moment it does
    for _ in range(30000):
        if (signals / "first-read").exists() or first.poll() is not None:
            break
        time.sleep(0.01)
    second = add("second")
    (signals / "second-pid").write_text(str(second.pid))
    outs = [p.communicate(timeout=600) for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outs
    assert set(corpora.read_lock(isolated / "corpora.lock")) == {"old", "first", "second"}
