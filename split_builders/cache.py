"""resplit's on-disk cache: one root, atomic writes, entries that check themselves.

Everything expensive that resplit keeps between runs (LM scores and their checkpoints, fine-tuned
folds, PVI folds) is stored as a cache *entry*: one file holding a sha256 of its payload and the
payload (a NumPy ``.npz`` of plain arrays, never pickles). An entry is written to a temporary file
beside it and renamed into place, so it is complete or absent; on reading, a payload whose checksum
does not match (flipped bytes, a truncated copy) is reported, removed and treated as missing, so
the caller recomputes it instead of using garbage. Folder entries (the converted default model) are
checked by their owner, which reports and removes a damaged one with :func:`discard_folder`.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from loading_scripts.files import cache_root
from split_builders.errors import cache_unwritable, disk_full, is_disk_full

__all__ = ["cache_root", "atomic_write", "save_arrays", "load_arrays", "discard_folder"]

MAGIC = b"resplit-cache-entry v1 sha256:"


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` through a temporary file in the same folder, then rename: never a half file.

    A full disk is one line (:class:`~split_builders.errors.DiskFullError`) naming the cache folder and
    the space the entry needs (a folder that cannot be written, one line naming it:
    :func:`~split_builders.errors.cache_unwritable`); the half-written temporary file is removed and every entry written
    before (finished scores, checkpoints) is kept, so a rerun with space resumes from them."""
    path = Path(path)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError as error:
        if is_disk_full(error):
            raise disk_full(path.parent, f"the cache entry {path.name} (the entries written before are kept)",
                            needed=len(data)) from None
        # a read-only folder, one this user may not write, a file where a folder should be: one line too
        raise cache_unwritable(path.parent, f"the cache entry {path.name}", error) from None
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)


def save_arrays(path, **arrays) -> None:
    """Store named arrays as one checksummed cache entry at ``path``."""
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(value) for name, value in arrays.items()})
    payload = buffer.getvalue()
    atomic_write(path, MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def load_arrays(path) -> dict | None:
    """The arrays of the entry at ``path``; None when it is absent or damaged (a damaged entry is
    reported on stderr and removed, so that it is recomputed)."""
    path = Path(path)
    if not path.is_file():
        return None
    data = path.read_bytes()
    header, _, payload = data.partition(b"\n")
    if not header.startswith(MAGIC) or hashlib.sha256(payload).hexdigest().encode() != header[len(MAGIC):]:
        _discard(path, "its checksum does not match its content")
        return None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as stored:
            return {name: stored[name] for name in stored.files}
    except (ValueError, OSError, EOFError) as error:
        _discard(path, f"it cannot be read ({error})")
        return None


def _discard(path: Path, why: str) -> None:
    print(f"resplit: cache entry {path} is damaged ({why}); recomputing it", file=sys.stderr, flush=True)
    path.unlink(missing_ok=True)


def discard_folder(path, why: str, *, remedy: str = "recomputing it") -> None:
    """Report a damaged folder entry of the cache (a converted model, say: a partial copy, a file that does
    not parse) on stderr and remove it, so that it is made again. Only a folder inside :func:`cache_root` is
    removed (resplit wrote it); anything else is left and refused."""
    import shutil

    path = Path(path)
    root = cache_root().expanduser().absolute().resolve()
    if root not in path.expanduser().absolute().resolve().parents:
        raise ValueError(f"{path} is not inside resplit's cache {root}: not removed")
    print(f"resplit: cache entry {path} is damaged ({why}); removed it, {remedy}", file=sys.stderr, flush=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
