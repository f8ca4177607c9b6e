"""The one build step pyproject.toml cannot declare: ``corpora.lock`` lives at the repository's top level,
where a reader of the repository finds the pinned corpora, and travels in the wheel as
``evalkit/data/corpora.lock``, where the installed package reads it (:func:`evalkit.dirs.shipped_lock`).
An editable install copies nothing: it reads the checkout's own lock, so it never sees a stale copy."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

LOCK = "corpora.lock"


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            self.copy_file(LOCK, str(Path(self.build_lib) / "evalkit" / "data" / LOCK))


setup(cmdclass={"build_py": BuildPy})
