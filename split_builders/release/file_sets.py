"""A set of files resplit writes into a folder that may hold others (``resplit report --out DIR``), under the one
output policy (:mod:`split_builders.release.places`).

The set is listed in the folder by a hidden list file (``LISTING``: ``{file name: sha256}``, sealed with its own
fingerprint, :func:`~split_builders.release.provenance.sealed`), the mechanism of the harness and inspect-ai
exports (a file resplit wrote that lists what it wrote, with digests). So:

- a file of the set is replaced only with ``overwrite``, and only where the list names it with the sha256 it has
  (resplit wrote it and nobody changed it since); a file of the user's (not listed, or changed since) where one goes
  is refused in one line naming it, as are a symbolic link and a folder there;
- a file an earlier set listed that this one does not write (a table the new report has no rows for) is removed
  when unchanged, kept (the user's now) when changed;
- the new set is written in full into a staging folder first (resplit's marker in it,
  :func:`~split_builders.release.places.new_staging`), then moved: the folder as a whole where ``out`` did not
  exist, else file by file after the list names both versions, so a command killed at any point leaves either
  the earlier set or the new one, never a part of it, and nothing the next command cannot recognise.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from split_builders.errors import OutputExistsError, cannot_write, is_unwritable
from split_builders.release.places import (_folder_mode, _remove_marker, check_output_place, is_staging, new_staging,
                                           refuse_link)
from split_builders.release.provenance import EDITED, UNSEALED, file_sha256, sealed, sealed_digest

LISTING = ".resplit-files.json"


def listed_files(folder) -> dict | None:
    """``{file name: [sha256, ...]}`` the list file of ``folder`` names (each file as resplit wrote it: one digest,
    or two while a set is being replaced); None without an intact list file (none, unreadable, or edited)."""
    path = Path(folder) / LISTING
    if path.is_symlink() or not path.is_file() or sealed_digest(path) in (None, EDITED):
        return None
    try:
        files = json.loads(path.read_text(encoding="utf-8")).get("files")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None
    if not isinstance(files, dict):
        return None
    return {str(name): [digest] if isinstance(digest, str) else list(digest) for name, digest in files.items()}


def _is_listed(path: Path, listed: dict | None) -> bool:
    """Whether ``path`` is a file of the set ``listed`` names, unchanged since resplit wrote it."""
    return (listed is not None and path.name in listed and path.is_file() and not path.is_symlink()
            and file_sha256(path) in listed[path.name])


def _listing(files: dict) -> str:
    return sealed(json.dumps({"written_by": "resplit", "files": files, "fingerprint": UNSEALED}, indent=1,
                             sort_keys=True) + "\n")


def check_file_set(out, names, *, overwrite: bool = False, flag: str = "--out", what: str = "the report") \
        -> tuple[Path, dict | None]:
    """``(out, listed)``: the folder ``out`` where the files ``names`` go, checked (before any work, and again when
    they are written), and what its list file names (:func:`listed_files`). Refused in one line naming ``flag``: a
    place :func:`~split_builders.release.places.check_output_place` refuses; a link, a folder or a file of the
    user's (not listed, or changed since resplit wrote it) where one of the files goes; an existing file of an
    earlier set without ``overwrite``."""
    out = check_output_place(out, flag, kind="files", overwrite=overwrite)
    listed = listed_files(out) if out.is_dir() else None
    users, existing = [], []
    for name in [*names, LISTING]:
        path = out / name
        refuse_link(path, flag)
        if path.is_dir():
            users.append(f"{name} (a folder)")
        elif path.exists() and name == LISTING:
            if listed is None:
                users.append(f"{name} (not a list resplit wrote, or changed since)")
        elif path.exists():
            if _is_listed(path, listed):
                existing.append(name)
            else:
                users.append(name + (" (changed since resplit wrote it)" if listed and name in listed else
                                     " (not written by resplit)"))
    if users:
        raise OutputExistsError(f"{flag} {str(out)!r} holds {', '.join(users[:4])} where {what} goes; move "
                                f"{'it' if len(users) == 1 else 'them'} elsewhere or choose another {flag} (nothing "
                                "was written)")
    if existing and not overwrite:
        raise OutputExistsError(f"{flag} {str(out)!r} already holds {', '.join(existing[:4])} of an earlier "
                                f"{what.removeprefix('the ')}; pass --overwrite to replace them or choose another "
                                f"{flag} (nothing was written)")
    return out, listed


def write_file_set(out, writes: dict, *, overwrite: bool = False, flag: str = "--out", what: str = "the report") \
        -> list[Path]:
    """Write the files ``writes`` (``{file name: write}``, ``write(path)`` writes one file) into the folder ``out``
    as the module says, after :func:`check_file_set`; the paths written."""
    out, listed = check_file_set(out, writes, overwrite=overwrite, flag=flag, what=what)
    out.parent.mkdir(parents=True, exist_ok=True)
    leftovers = [*out.parent.glob(f".{out.name}.tmp-*"), *(out.glob(f".{LISTING}.tmp-*") if out.is_dir() else ())]
    for leftover in leftovers:
        if is_staging(leftover):  # what a killed command left while it wrote (never put in place)
            shutil.rmtree(leftover, ignore_errors=True)
    stale = [out / name for name in (listed or {}) if name not in writes and name != LISTING
             and _is_listed(out / name, listed)]
    anchor = out if not out.is_dir() else out / LISTING
    staging = new_staging(anchor)
    try:
        for name, write in writes.items():
            write(staging / name)
        digests = {name: file_sha256(staging / name) for name in writes}
        (staging / LISTING).write_text(_listing(digests), encoding="utf-8")
        for path in staging.iterdir():
            os.chmod(path, 0o666 & _folder_mode())
        if not out.exists():
            os.chmod(staging, _folder_mode())
            os.replace(staging, out)  # the whole set at once
            _remove_marker(out)
            return [out / name for name in writes]
        # file by file: first a list naming both versions of every file, so a kill between two renames leaves
        # files the next command knows as resplit's
        both = {name: sorted({digests[name], *(listed or {}).get(name, [])}) for name in writes}
        both.update({p.name: listed[p.name] for p in stale})
        _put_text(out / LISTING, _listing(both))
        for name in writes:
            os.replace(staging / name, out / name)
        for path in stale:
            path.unlink(missing_ok=True)
        os.replace(staging / LISTING, out / LISTING)
    except OSError as error:
        if not is_unwritable(error):
            raise
        raise cannot_write(error, what, where=out if out.is_dir() else out.parent, instead=f"another {flag}",
                           kept="no file there was replaced") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return [out / name for name in writes]


def _put_text(path: Path, text: str) -> None:
    from split_builders.release.places import write_file

    write_file(path, lambda staging: Path(staging).write_text(text, encoding="utf-8"), overwrite=True)
