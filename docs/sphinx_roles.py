"""A Griffe extension for the API page (mkdocs.yml): evalkit's docstrings name code with Sphinx roles
(:func:`evalkit.runner.run`, :class:`~evalkit.results.Results`), which mkdocstrings would print as they are,
role and all. Each is shown as the inline code it names, the last part only where Sphinx's ``~`` asks for it."""
from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:attr|class|const|data|exc|func|meth|mod|obj):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every role written as inline code: ``:func:`~a.b``` -> ```b```."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
