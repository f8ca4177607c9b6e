"""What a notebook shows as more than text: a string it renders as Markdown. A module of its own, so a
module that returns prose for the report (completeness, bench) does not import the report and its figures."""


class Markdown(str):
    """A string a notebook shows as Markdown (the last expression of a cell)."""

    def _repr_markdown_(self) -> str:
        return str(self)
