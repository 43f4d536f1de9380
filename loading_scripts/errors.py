"""Errors a reader raises on bad input; :mod:`split_builders.errors` adds the library's own.

Every error names the problem and, where it helps, the allowed values; the CLI prints the message
without a traceback. They subclass ``ValueError`` (or ``KeyError``, ``OSError``) so code that catches
the built-in kinds keeps working.
"""

from __future__ import annotations


class ResplitError(Exception):
    """Base class of every error resplit raises on purpose."""


class FieldError(ResplitError, KeyError):
    """A field (column) that was asked for is not in the data."""

    def __init__(self, missing, available, *, role: str | None = None, source: str | None = None):
        self.missing = missing
        self.available = list(available)
        what = f"{role} field" if role else "field"
        where = f" in {source}" if source else ""
        message = (
            f"{what} {missing!r} not found{where}; available fields: "
            + ", ".join(repr(a) for a in self.available)
        )
        super().__init__(message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class InvalidParameterError(ResplitError, ValueError):
    """A parameter value outside its allowed range."""


class EmptyTextError(ResplitError, ValueError):
    """A text that must be scored or measured is empty."""


class SourceLoadError(ResplitError, OSError):
    """A source dataset could not be found or read."""


class SourceNote(UserWarning):
    """Something a reader did to the rows that a user should know and the card should say (labels of
    mixed types read as text, say): a warning, so that code calling a reader directly sees it too;
    :func:`split_builders.build` collects the notes of a build's ``load`` into the card (and
    ``--strict`` refuses them)."""
