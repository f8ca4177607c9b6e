"""A full or read-only disk named in one line with the file and the real cause, on real file systems: a tiny
tmpfs in a mount namespace of the test's own (tests/conftest.py:evalkit_in_namespace), never a stand-in."""
import errno

import pytest

from evalkit import oserrors

from .conftest import evalkit_in_namespace

FILL = "dd if=/dev/zero of={mnt}/fill bs=1k count=100000 2>/dev/null || true"  # until the disk is full


def test_an_error_without_a_file_gets_the_path_being_written_and_a_cause_in_words(tmp_path):
    with pytest.raises(OSError) as e, oserrors.naming(tmp_path / "x.json"):
        raise OSError(errno.ENOSPC, "No space left on device")  # what write() raises
    assert oserrors.describe(e.value) == f"{tmp_path / 'x.json'}: no space left on device (the disk is full: " \
                                         "free some space, or write to another disk)"
    with pytest.raises(FileNotFoundError) as e, oserrors.naming(tmp_path / "x.json"):
        open(tmp_path / "absent")  # an error that names its own file keeps it
    assert oserrors.describe(e.value) == f"{tmp_path / 'absent'}: No such file or directory"


@pytest.mark.slow
def test_a_full_disk_under_out_names_the_file_and_leaves_no_temporary_file(tiny, tmp_path):
    home, argv = tiny
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    argv[argv.index("--out") + 1] = str(mnt / "res")
    p = evalkit_in_namespace(f"mount -t tmpfs -o size=256k tmpfs {mnt}; {FILL.format(mnt=mnt)}", argv,
                             after=f"find {mnt} -name '.*.tmp'")
    err = p.stderr.splitlines()
    assert p.returncode == 2 and err[-1].startswith("evalkit: "
                                                    f"{mnt / 'res'}/"), p.stderr  # the lock, on a disk this full
    assert err[-1].endswith(": no space left on device (the disk is full: free some space, or write to another disk)")
    assert "Errno" not in p.stderr and not any(line.endswith(".tmp") for line in err), p.stderr


@pytest.mark.slow
def test_a_full_disk_while_assembling_the_model_leaves_no_temporary_file_copy(tiny, tmp_path, monkeypatch):
    home, _ = tiny
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    monkeypatch.setenv("EVALKIT_CACHE", str(mnt / "cache"))  # where the packaged model is assembled
    p = evalkit_in_namespace(f"mount -t tmpfs -o size=4m tmpfs {mnt}",
                             ["search", "walrus", "--docs", str(home / "docs"), "--arm", "semantic",
                              "--cache", str(tmp_path / "pages.sqlite")], after=f"find {mnt} -name '.*.tmp'")
    err = p.stderr.splitlines()
    assert p.returncode == 2 and err[-1] == (f"evalkit: {mnt}/cache/models/all-MiniLM-L6-v2-packaged/model.onnx: no "
                                             "space "
                                             "left on device (the disk is full: free some space, or write to another "
                                             "disk)"), p.stderr
    assert not any(line.endswith(".tmp") for line in err), p.stderr


@pytest.mark.slow
def test_an_io_error_on_a_full_cache_disk_says_the_disk_is_full(tiny, tmp_path):
    """SQLite answers "disk I/O error" when its shared-memory file cannot be made on a full disk; the line
    said to run again "once nothing else uses it", as if another user were the cause."""
    from evalkit.cli import main

    home, _ = tiny
    assert main(["corpus", "stats", "--docs", str(home / "docs"), "--cache", str(tmp_path / "c.sqlite")]) == 0
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = evalkit_in_namespace(f"mount -t tmpfs -o size=1m tmpfs {mnt}; cp {tmp_path / 'c.sqlite'} {mnt}; "
                             f"{FILL.format(mnt=mnt)}",
                             ["search", "walrus", "--docs", str(home / "docs"), "--cache", str(mnt / "c.sqlite")])
    last = p.stderr.splitlines()[-1]
    assert p.returncode == 2 and last.startswith(f"evalkit: the cache {mnt / 'c.sqlite'} cannot be written: the disk "
                                                 "holding it is full"), p.stderr
    assert "nothing else uses it" not in last and "damaged" not in last
