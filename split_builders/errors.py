"""Errors resplit raises on bad input.

Every error names the problem and, where it helps, the allowed values; the CLI prints the
message without a traceback. They subclass ``ValueError`` (or ``FileExistsError``) so code
that catches the built-in kinds keeps working.
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


class ModelLoadError(ResplitError, OSError):
    """A language model could not be found or loaded."""


class SourceLoadError(ResplitError, OSError):
    """A source dataset could not be found or read."""


class OutputExistsError(ResplitError, FileExistsError):
    """The output folder exists and overwriting was not asked for."""


class PublishError(ResplitError, RuntimeError):
    """Publishing to the Hub failed or was refused; the message says what to do next."""


class UnparseableProgramError(ResplitError, ValueError):
    """A target program (SQL, FunQL, ...) that its parser cannot read."""


class AtomConstraintError(ResplitError, ValueError):
    """Some evaluation atoms cannot be brought into train (the atom constraint cannot be met)."""


class OutputLockedError(ResplitError, RuntimeError):
    """Another build is writing to the same output location."""


class InvalidReleaseError(PublishError, ValueError):
    """The folder is not a consistent resplit release (or metric Space folder)."""
