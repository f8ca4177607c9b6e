"""The workbench's query file on disk, on its own: saving keeps a file's line ends and byte-order mark, and
the lock is one holder's, named to whoever is refused."""
from __future__ import annotations

import os

import pytest

from evalkit.judging_file import BOM, JudgingError, acquire, holder, lock_path, release, styled


@pytest.mark.parametrize("like, want", [
    ("a = 1\n", "x = 1\ny = 2\n"),
    ("a = 1\r\nb = 2\r\n", "x = 1\r\ny = 2\r\n"),
    (BOM + "a = 1\r\n", BOM + "x = 1\r\ny = 2\r\n"),
    (BOM + "a = 1\n", BOM + "x = 1\ny = 2\n"),
    ("", "x = 1\ny = 2\n"),
])
def test_what_is_saved_has_the_line_ends_and_mark_of_the_file_read(like, want):
    assert styled("x = 1\r\ny = 2\n", like) == want  # tomlkit keeps CRLF on lines it read, LF on new ones


def test_the_lock_is_one_holders_and_goes_with_it(tmp_path):
    f = tmp_path / "q.toml"
    fd, told = acquire(f)
    assert told == "" and holder(lock_path(f).read_text()) == os.getpid()
    with pytest.raises(JudgingError, match="q.toml is open in another workbench of this process"):
        acquire(f)
    release(f, fd, owner=os.getpid() + 1)  # not the owner (a forked child that inherited it): nothing done
    assert lock_path(f).exists()
    release(f, fd, owner=os.getpid())
    assert not lock_path(f).exists()
    fd, told = acquire(f)  # free again
    release(f, fd, owner=os.getpid())
