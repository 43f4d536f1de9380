"""Griffe extension (mkdocstrings loads it, ``mkdocs.yml``): the docstrings' Sphinx roles as Markdown code.

The docstrings are written for Python's ``help()`` and Sphinx alike (``:func:`~split_builders.api.option```);
mkdocstrings renders Markdown, where a role would show as raw text. Each role becomes a code span of the name it
shows (the last part after ``~``, the whole dotted path otherwise): ``option``, ``split_builders.api``.
"""

from __future__ import annotations

import re

from griffe import Extension

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|term|ref|doc):"
                  r"`(~?)([^`<]*?)(?:\s*<[^>]*>)?`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role as a Markdown code span."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


class SphinxRoles(Extension):
    """Rewrites each object's docstring as it is loaded."""

    def on_object(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
