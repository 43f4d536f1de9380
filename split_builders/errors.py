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
           "InvalidReleaseError", "DiskFullError", "UnknownOptionError", "PluginWarning"]


class UnknownOptionError(InvalidParameterError, TypeError):
    """A keyword that names no option of the method (``tset_size=``): a ``TypeError`` too, as Python's own
    unexpected keyword argument is."""


class PluginWarning(UserWarning):
    """An installed plug-in (an entry point of another distribution) that resplit leaves out: it failed to import,
    or its name is one resplit reserves. One line naming the distribution; every other command works."""


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


class DiskFullError(ResplitError, OSError):
    """No space (or quota) left where resplit writes: the release, the cache or a figure."""


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is the operating system's "no space left on device" (or "quota exceeded")."""
    import errno

    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full(where, what: str, needed: int | None = None) -> DiskFullError:
    """The one line for a full disk: the place, what was being written, and the space it needs."""
    import shutil

    try:
        free = shutil.disk_usage(where).free
    except OSError:
        free = None
    need = f"; it needs {_size(needed)} more" if needed else ""
    have = f" ({_size(free)} free)" if free is not None else ""
    return DiskFullError(f"no space left on the device of {str(where)!r}{have} while writing {what}{need}: free "
                         "some space there (or choose another location) and run the same command again")


def is_unwritable(error: BaseException) -> bool:
    """Whether ``error`` is the operating system refusing a write: no permission, a read-only file system, or a
    full disk (:func:`is_disk_full`)."""
    import errno

    return isinstance(error, OSError) and not isinstance(error, ResplitError) and (
        error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) or is_disk_full(error))


def cannot_write(error: OSError, what: str, *, where, instead: str, kept: str = "nothing was changed") -> ResplitError:
    """The one line for a write the operating system refused (``error``, :func:`is_unwritable`) while writing
    ``what`` in the folder ``where``: a full disk (:func:`disk_full`), else why and on which path, and what to do
    (make it writable or choose ``instead``); ``kept`` says what became of what was there."""
    if is_disk_full(error):
        return disk_full(where, f"{what} ({kept})")
    reason = (error.strerror or type(error).__name__).lower()
    on = f": {str(error.filename)!r}" if error.filename else ""
    return InvalidParameterError(f"cannot write {what} ({reason}{on}); make {str(where)!r} writable or choose "
                                 f"{instead} ({kept})")


def cache_unwritable(where, what: str, error: OSError) -> ResplitError:
    """The one line for resplit's cache folder refusing a write (``error``): a full disk
    (:func:`disk_full`), else the folder that cannot be written (read-only, not a folder, no permission) and how
    to choose another (``$RESPLIT_CACHE``)."""
    if is_disk_full(error):
        return disk_full(where, what)
    reason = error.strerror or type(error).__name__
    return InvalidParameterError(f"cannot write {what} into resplit's cache folder {str(where)!r} ({reason}): make "
                                 "it writable, or set $RESPLIT_CACHE to a folder you can write")


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"
