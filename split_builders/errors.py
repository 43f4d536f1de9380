"""Errors resplit raises on bad input (those a reader raises are defined in :mod:`loading_scripts.errors`).

Every error names the problem and, where it helps, the allowed values; the CLI prints the
message without a traceback. They subclass ``ValueError`` (or ``FileExistsError``) so code
that catches the built-in kinds keeps working.
"""

from __future__ import annotations

# The errors a reader raises live with the readers (loading_scripts never imports split_builders).
from loading_scripts.errors import EmptyTextError, FieldError, InvalidParameterError, ResplitError, SourceLoadError

__all__ = ["ResplitError", "FieldError", "InvalidParameterError", "EmptyTextError", "SourceLoadError", "ModelLoadError",
           "OutputExistsError", "PublishError", "UnparseableProgramError", "AtomConstraintError", "OutputLockedError",
           "InvalidReleaseError"]


class ModelLoadError(ResplitError, OSError):
    """A language model could not be found or loaded."""


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
