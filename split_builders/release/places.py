"""Where a command may write, and how: the one output policy of every command that writes (a build's ``--out``,
``audit --write-clean`` and ``--rows``, ``export lm-eval --out``). :func:`check_output_place` refuses, before any
work, places that are empty, the root, the home or working folder, an input of the command, a file where a folder
goes (or the reverse), an existing output without ``--overwrite``, and a folder holding files resplit did not write
(:func:`check_replaceable`, :func:`release_files`); :class:`OutputLock` is held while a release is written; files are
written beside their place then renamed (:func:`write_file`, :func:`write_files`), never through a symbolic link (one
where resplit would write is refused: :func:`refuse_link`); and a staging folder is recognised only by the marker
resplit writes into it first (:func:`new_staging`, :func:`is_staging`): anything else beside the output is never
removed. A staged release an interrupted build left is put in place only when it is complete
(:func:`staged_problem`). The release writer (:mod:`split_builders.release.writer`) writes through it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from split_builders.errors import (InvalidParameterError, OutputExistsError, OutputLockedError, ResplitError,
                                   cannot_write, is_disk_full, is_unwritable)
from split_builders.release.provenance import file_sha256 as _file_sha256

# -- the one output policy: where a command may write, and how ------------------------------------------------

# What a command writes at the place a flag names: a release folder replaced as a whole (a build's --out,
# --write-clean), one file (--rows), or files put into a folder that may hold others (export lm-eval --out).
OUTPUT_KINDS = ("folder", "file", "files")
_WHAT = {"folder": "the folder to write the release to", "file": "the file to write",
         "files": "the folder to write the files to"}


def check_output_place(path, flag: str, *, kind: str = "folder", overwrite: bool = False, harness_files=None,
                       inputs=(), reader: str = "this command") -> Path:
    """The place ``path`` (given as ``flag``) where a command writes, checked before any work; the path, with
    ``~`` expanded. Refused in one line naming ``flag`` and what to do (nothing is changed):

    - an empty path (``''``: the working folder by accident);
    - the root folder or the home folder itself, and for a ``folder`` (replaced as a whole) the working folder;
    - a symbolic link (:func:`refuse_link`: resplit never writes through one);
    - a path that is, or (for a folder) holds, one of ``inputs`` (what ``reader`` reads: the source, the target
      being audited, a dataset it is checked against);
    - a ``folder`` or ``files`` path that is a file, and a ``file`` path that is a folder;
    - an existing ``folder`` or ``file`` without ``overwrite``, and a ``folder`` that holds files resplit did not
      write (:func:`check_replaceable`, with ``harness_files`` as there: a harness task changed since resplit
      wrote it is the user's);
    - a place whose nearest existing folder is a file or not writable.

    ``kind``: ``folder`` (a release, replaced as a whole), ``file`` (one file, replaced only with ``overwrite``)
    or ``files`` (files put into a folder that may hold others, which the writer keeps).
    """
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"kind must be one of {OUTPUT_KINDS}, got {kind!r}")
    if path is None or not str(path).strip():
        raise InvalidParameterError(f"{flag} is empty: give {_WHAT[kind]}")
    path = Path(path).expanduser()
    where = path.absolute()
    resolved = where.resolve()
    if kind != "file":
        forbidden = {Path(where.anchor): "the root folder", Path.home().resolve(): "your home folder"}
        if kind == "folder":  # replaced as a whole
            forbidden.setdefault(Path.cwd().resolve(), "the working folder")
        if resolved in forbidden:
            example = "out/my-release" if kind == "folder" else "out/tasks"
            raise InvalidParameterError(f"{flag} {str(path)!r} is {forbidden[resolved]}; give a folder of its own "
                                        f"(e.g. {example})")
    if path.is_symlink() and not path.exists():
        raise InvalidParameterError(f"{flag} {str(path)!r} is a symbolic link to nothing; remove it or choose another "
                                    f"{flag}")
    refuse_link(path, flag)
    for item in inputs:
        item = Path(item).expanduser().absolute().resolve()
        if resolved == item:
            raise InvalidParameterError(f"{flag} {str(path)!r} is {str(item)!r}, which {reader} reads; choose another "
                                        f"{flag} (nothing was changed)")
        if kind != "file" and resolved in item.parents:
            raise InvalidParameterError(f"{flag} {str(path)!r} holds {str(item)!r}, which {reader} reads; choose "
                                        f"{flag} outside it")
    if path.exists():
        if kind == "file" and path.is_dir():
            raise InvalidParameterError(f"{flag} {str(path)!r} is a folder; give a file name (e.g. "
                                        f"{str(path / ('rows' + (path.suffix or '.parquet')))!r})")
        if kind != "file" and not path.is_dir():
            raise OutputExistsError(f"{flag} {str(path)!r} exists and is a file, not a folder; choose another {flag} "
                                    "(nothing was changed)")
        if kind != "files" and not overwrite:
            raise OutputExistsError(f"{flag} {str(path)!r} exists; pass --overwrite to replace it")
        if kind == "folder":  # only what resplit wrote (the files its card names, its harness tasks) is replaced
            check_replaceable(path, harness_files=harness_files, flag=flag)
    ancestor = where if kind == "files" and path.is_dir() else where.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InvalidParameterError(f"cannot write {flag} {str(path)!r}: {str(ancestor)!r} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"cannot write {flag} {str(path)!r}: {str(ancestor)!r} is not writable; choose "
                                    f"another {flag}")
    return path


def write_file(path, write, *, overwrite: bool = False, flag: str = "--out") -> Path:
    """Write the file ``path`` as every resplit writer does (:func:`write_files` with one file): ``write(temporary)``
    writes it beside its place, which is then renamed into place, so ``path`` is never half written."""
    return write_files({path: write}, overwrite=overwrite, flag=flag)[0]


def write_files(writes: dict, *, overwrite: bool = False, flag: str = "--out", what: str | None = None,
                instead: str | None = None) -> list[Path]:
    """Write the files of ``writes`` (``{path: write}``): every ``write(temporary)`` writes its file beside its place
    (``.<name>.<random>.tmp``), and only when all are written is each renamed into place, so no file is half
    written and a failure while writing replaces none. Without ``overwrite`` a rename never replaces a file that
    appeared meanwhile (refused in one line). The files get the permissions the umask gives. A place that is a
    symbolic link is refused before anything is written (:func:`refuse_link`: never followed, never replaced); a
    place the system refuses to write (no permission, a read-only file system, a full disk:
    :func:`~split_builders.errors.is_unwritable`) is one line naming ``what`` (default: the file) and
    ``instead`` (default: another ``flag``); nothing is left but what was there."""
    paths = [Path(path) for path in writes]
    for path in paths:
        _check_file_place(path, flag)
    staged = {}
    path = paths[0] if paths else None
    try:
        for path, write in zip(paths, writes.values()):
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, staged[path] = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(handle)
            write(staged[path])
            os.chmod(staged[path], 0o666 & _folder_mode())  # mkstemp's file is private (0600)
        for path in paths:
            _put(staged[path], path, overwrite=overwrite, flag=flag)
    except OSError as error:
        if not is_unwritable(error):
            raise
        where = what or f"{flag} {str(path)!r}"
        raise cannot_write(error, where, where=path.parent, instead=instead or f"another {flag}",
                           kept="nothing was left there" if len(paths) == 1 else "no file there was replaced") from None
    finally:
        for staging in staged.values():
            if os.path.exists(staging):
                os.remove(staging)
    return paths


def _put(staging, path: Path, *, overwrite: bool, flag: str) -> None:
    """Rename the written file ``staging`` to ``path``; without ``overwrite`` never over a file there."""
    _check_file_place(path, flag)  # again: a link or a folder that appeared meanwhile is refused too
    if overwrite:
        os.replace(staging, path)
        return
    try:
        os.link(staging, path)  # fails where the name exists, at the moment of the rename
    except FileExistsError:
        raise OutputExistsError(f"{flag} {str(path)!r} exists (it appeared while resplit ran); pass "
                                "--overwrite to replace it") from None
    except OSError as error:
        if is_disk_full(error) or path.exists():
            raise
        os.replace(staging, path)  # a file system without hard links


def _check_file_place(path: Path, flag: str) -> None:
    """Refuse a link (:func:`refuse_link`) or a folder where resplit writes the file ``path``."""
    refuse_link(path, flag)
    if path.is_dir():
        raise OutputExistsError(f"{flag}: {str(path)!r} is a folder where resplit writes a file; move it elsewhere or "
                                f"choose another {flag} (nothing was changed)")


def refuse_link(path, flag: str = "--out") -> None:
    """Refuse, in one line naming it, a symbolic link where resplit would write: resplit never writes through a
    link (the file it points to may be anyone's, anywhere) nor replaces one silently."""
    path = Path(path)
    if path.is_symlink():
        try:
            target = f" (to {os.readlink(path)!r})"
        except OSError:
            target = ""
        raise OutputExistsError(f"{flag} {str(path)!r} is a symbolic link{target}, and resplit never writes through "
                                f"a link; remove the link or choose another {flag} (nothing was changed)")


# The marker resplit writes into every staging folder (a release being written, ``.<name>.tmp-*``; an old one
# parked while it is replaced, ``.<name>.old-*``) as its first act: such a folder beside an output is resplit's,
# removed or put back by the next command writing there; a folder of the same name without it is the user's.
STAGING_MARKER = ".resplit-staging"
_MARKER_TEXT = "resplit staging folder: the next resplit command writing beside it removes it or puts it back\n"


def new_staging(out_dir, kind: str = "tmp") -> Path:
    """A new staging folder beside ``out_dir`` (``.<name>.<kind>-<random>``, private until complete), marked as
    resplit's (:data:`STAGING_MARKER`) before anything else is written into it."""
    out_dir = Path(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.{kind}-", dir=out_dir.parent))
    try:
        mark_staging(staging)
    except BaseException:  # an unmarked folder would be nobody's: it is not left behind
        staging.rmdir()
        raise
    return staging


def mark_staging(folder) -> Path:
    """Write :data:`STAGING_MARKER` into ``folder``: a folder resplit stages (or parks) a release in."""
    (Path(folder) / STAGING_MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
    return Path(folder)


def is_staging(folder) -> bool:
    """Whether ``folder`` is a staging folder resplit made: a folder (not a link) holding resplit's marker."""
    folder = Path(folder)
    marker = folder / STAGING_MARKER
    try:
        return (folder.is_dir() and not folder.is_symlink() and marker.is_file() and not marker.is_symlink()
                and marker.read_text(encoding="utf-8") == _MARKER_TEXT)
    except (OSError, UnicodeDecodeError):
        return False


def check_output_file(path, flag: str, *, figure: bool = False) -> Path:
    """A file a command will write (a figure, a report): its folder must exist and be writable, and the
    path must not be a folder or a symbolic link (:func:`refuse_link`); a ``figure`` must end in an extension
    matplotlib writes (``.png``, ``.pdf``, ``.svg``, ...). Checked before any work, refused in one line naming ``flag``."""
    path = Path(path).expanduser()
    folder = path.parent
    refuse_link(path, flag)
    if path.is_dir():
        raise InvalidParameterError(f"{flag} {str(path)!r} is a folder; give a file name in it (e.g. "
                                    f"{str(path / 'figure.png')!r})")
    if figure:
        check_figure_format(path, flag)
    if not folder.exists():
        raise InvalidParameterError(f"{flag} {str(path)!r}: the folder {str(folder)!r} does not exist; create it "
                                    "first or give a path in an existing folder")
    if not folder.is_dir():
        raise InvalidParameterError(f"{flag} {str(path)!r}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"{flag} {str(path)!r}: the folder {str(folder)!r} is not writable")
    return path


def check_figure_format(path, flag: str) -> str:
    """The format of the figure file ``path`` (its extension, lower case) when matplotlib can write it
    (``FigureCanvasBase.get_supported_filetypes``); else one line naming ``flag`` and the formats it can."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    extension = Path(path).suffix.lower().removeprefix(".")
    if extension == "pgf":  # matplotlib writes PGF through a TeX system, which must be installed
        import matplotlib

        tex = matplotlib.rcParams["pgf.texsystem"]
        if shutil.which(tex) is None:
            raise InvalidParameterError(f"{flag} {str(path)!r}: matplotlib writes .pgf through {tex}, which is not "
                                        "installed; install it or choose another format (e.g. .pdf or .png)")
    if extension in formats:
        return extension
    known = ", ".join(f".{name}" for name in sorted(formats))
    what = f"ends in .{extension}, which matplotlib cannot write" if extension else "has no file extension"
    raise InvalidParameterError(f"{flag} {str(path)!r} {what}; end it in one of {known} (e.g. "
                                f"{str(Path(path).with_suffix('.png'))!r})")


def _folder_mode() -> int:
    """The mode a new folder gets under the current umask (0o755 for the usual 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


class OutputLock:
    """An exclusive lock on an output location, held from the first check to the final move.

    The lock is ``.<name>.lock`` beside the output folder, taken with ``flock`` (released by the
    kernel when the process ends, however it ends); it holds the owner's pid and host so that a refused
    build can name it. Holding the lock means no other build is writing here, so staging folders a killed
    build left behind (``.<name>.tmp-*``, ``.<name>.old-*`` that hold resplit's marker: :func:`is_staging`) are
    removed on acquiring it; folders of those names without the marker are someone else's and left alone.
    ``flag`` names the output in messages (``--out``, ``--write-clean``).

    The lock file holds the owner's pid and host. It is removed when the lock is released (the command succeeded,
    was refused or failed). One that was there before and that this lock could take (its command was killed: the
    kernel released its lock) is stale: it is taken over with a note in :attr:`notes`, and removed on release too.
    Removing it is safe: it is removed while still locked, and a command that locked a file meanwhile removed finds
    the name no longer its file and locks again. A lock path that is a folder, a link or someone's file, or a place
    that cannot be written, is refused in one line.
    """

    def __init__(self, out_dir, *, harness_files=None, flag: str = "--out", holder: str = "build"):
        self.out_dir = Path(out_dir)  # never a link (refused by check_output_place and the writer)
        self.flag = flag
        self.holder = holder  # what holds such a lock, in the refusal's words (a build, a corpus run)
        self.harness_files = harness_files  # what the harness export wrote (as in :func:`staged_problem`)
        self.path = self.out_dir.parent / f".{self.out_dir.name}.lock"
        self._handle = None  # the lock file's descriptor while it is held
        self._created = False  # whether this lock made the lock file (then it removes it)
        self.notes: list[str] = []  # what recovering an interrupted build did (lines for the terminal)

    def __enter__(self) -> "OutputLock":
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            while self._handle is None:
                handle, created = self._open()
                if handle is None:  # removed between the look and the open: again
                    continue
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    owner = _holder(os.pread(handle, 256, 0))
                    os.close(handle)
                    raise OutputLockedError(f"another {self.holder} ({owner}) is writing {str(self.out_dir)!r}; wait "
                                            f"for it to finish or choose another {self.flag}") from None
                except OSError:  # no lock on this file system: nothing of ours is left
                    os.close(handle)
                    if created:
                        self.path.unlink(missing_ok=True)
                    raise
                if not self._is_ours(handle):  # its holder removed it before we locked it: lock the file there now
                    os.close(handle)
                    continue
                self._handle, self._created = handle, created
            if not self._created:
                left = os.pread(self._handle, 256, 0)
                if not _is_pid(left):
                    self.__exit__(None, None, None)
                    raise InvalidParameterError(f"{self.flag} {str(self.out_dir)!r}: {str(self.path)!r} is not "
                                                "resplit's lock file (it holds other text), and resplit writes its "
                                                f"lock there; move it elsewhere or choose another {self.flag} "
                                                "(nothing was changed)")
                # locked although it was there: the command that made it ended without removing it (killed); taken
                # over, and removed on release as if made here
                self._created = True
                if left.strip():  # (an empty one: its maker stopped before it wrote its pid)
                    self.notes.append(f"note: took over the lock {str(self.path)!r} that {_holder(left)} left (it "
                                      "is no longer running); it is removed when this command ends")
            os.ftruncate(self._handle, 0)
            os.pwrite(self._handle, _owner().encode(), 0)
        except OSError as error:
            self.__exit__(None, None, None)
            raise self._refusal(error) from None
        try:
            self.remove_stale_staging()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _open(self) -> tuple:
        """``(descriptor, created)`` of the lock file, made here where there is none (``(None, False)`` where it
        went away meanwhile); never through a symbolic link."""
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            return os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o666), True
        except FileExistsError:
            pass
        try:
            return os.open(self.path, flags), False
        except FileNotFoundError:
            return None, False

    def _is_ours(self, handle) -> bool:
        """Whether the lock path still names the file open as ``handle``."""
        try:
            there, held = os.stat(self.path, follow_symlinks=False), os.fstat(handle)
        except FileNotFoundError:
            return False
        return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)

    def _refusal(self, error: OSError) -> Exception:
        """The one line of a lock file that cannot be made or opened (``error``); an error of another kind as it
        is."""
        import errno

        if isinstance(error, ResplitError):
            return error
        if error.errno == errno.EISDIR:
            kind = "a folder"
        elif error.errno == errno.ELOOP:
            kind = "a symbolic link"
        elif is_unwritable(error):
            return cannot_write(error, f"the lock file of {self.flag} {str(self.out_dir)!r}", where=self.path.parent,
                                instead=f"another {self.flag}")
        else:
            return error
        return InvalidParameterError(f"{self.flag} {str(self.out_dir)!r}: {str(self.path)!r} is {kind}, where resplit "
                                     f"keeps a lock file while it writes; move it elsewhere or choose another "
                                     f"{self.flag} (nothing was changed)")

    def remove_stale_staging(self) -> list[Path]:
        """Recover what an interrupted build left beside the output folder, then remove the rest.

        A build killed between the two renames of a replacement leaves no folder at ``--out``, the
        old release parked in ``.<name>.old-*/old`` and the new one staged in ``.<name>.tmp-*``.
        Before anything is removed, a complete release is put back: the newest staged one that is
        complete (:func:`staged_problem`: every file its card names present, with the sha256 it records),
        else the parked one. Every other folder of those names that holds resplit's marker (:func:`is_staging`)
        is a build's leftover and is removed, each with a line in :attr:`notes` saying what and why; one without
        the marker is not resplit's and is left as it is. Returns the removed paths."""
        name = self.out_dir.name
        stale = [p for pattern in (f".{name}.tmp-*", f".{name}.old-*") for p in self.out_dir.parent.glob(pattern)
                 if is_staging(p)]
        _remove_marker(self.out_dir)  # a build stopped right after its last rename left its marker there
        problems = {p: staged_problem(p, harness_files=self.harness_files) for p in stale
                    if p.name.startswith(f".{name}.tmp-") and p.is_dir()}
        if not self.out_dir.exists() and not self.out_dir.is_symlink():
            staged = [p for p, problem in problems.items() if problem is None]
            parked = [p / "old" for p in stale if p.name.startswith(f".{name}.old-") and (p / "old").is_dir()]
            complete = sorted(staged, key=lambda p: p.stat().st_mtime)[-1:] or parked[:1]
            if complete:
                os.replace(complete[0], self.out_dir)
                _remove_marker(self.out_dir)
                what = "the release it was writing" if complete[0] in staged else "the release it was replacing"
                self.notes.append(f"note: an interrupted build left {str(self.out_dir)!r} missing; {what} was put "
                                  "back")
                stale = [p for p in stale if p.exists() and p != complete[0]]
        for path in stale:
            if path in problems and problems[path] is not None:
                self.notes.append(f"note: removed {path.name}, an unfinished release an interrupted build left "
                                  f"beside {str(self.out_dir)!r} ({problems[path]})")
            elif path in problems:
                self.notes.append(f"note: removed {path.name}, the release an interrupted build was writing; it did "
                                  f"not replace {str(self.out_dir)!r}")
            shutil.rmtree(path, ignore_errors=True)
        return stale

    def __exit__(self, *exc) -> None:
        import fcntl

        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        try:
            if self._created and self._is_ours(handle):
                os.unlink(self.path)  # while still locked (see the class): a lock file this lock made
        except OSError:  # it stays: the next command locks it as it is
            pass
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            os.close(handle)


def _owner() -> str:
    """What resplit writes into a lock file it holds: its process id and host (``<pid> <host>``)."""
    import socket

    return f"{os.getpid()} {socket.gethostname()}"


def _is_pid(text: bytes) -> bool:
    """Whether ``text`` (a lock file's first bytes) is what resplit writes there: a process id with its host
    (:func:`_owner`), a process id alone (an older resplit), or nothing."""
    words = text.split()
    return not words or (len(words) <= 2 and words[0].isdigit())


def _holder(text: bytes) -> str:
    """The holder a lock file names, in words (``pid 123 on host h``)."""
    words = text.decode("utf-8", "replace").split()
    if not words:
        return "pid unknown"
    return f"pid {words[0]}" + (f" on host {words[1]}" if len(words) > 1 else "")


def _remove_marker(folder: Path) -> None:
    """Remove resplit's staging marker from ``folder`` (a release now in place), where it is there."""
    if is_staging(folder):
        (folder / STAGING_MARKER).unlink(missing_ok=True)


# -- what resplit wrote in a release folder, and whether a staged one is complete ------------------------

# In ``lm_eval/`` the harness export writes one task file per config, its group file (``_<group>.yaml``) and
# ``utils.py`` (whose byte code Python may cache beside it when the harness runs the tasks); at the root, the
# inspect-ai tasks (``inspect_tasks.py``, byte code beside it too) and ``eval.yaml``.
_HARNESS_FOLDER = "lm_eval"
_BYTE_CODE = {"lm_eval/__pycache__/": "utils.", "__pycache__/": "inspect_tasks."}


def _harness_files_ours(relative: str, configs, listed) -> bool:
    """Whether the file at ``relative`` is one the readers' export wrote: one ``listed`` (``{relative path: sha256
    or None}``, what the export says it wrote), or without such a list, ``lm_eval/utils.py``, a group file
    ``lm_eval/_*.yaml`` or an ``lm_eval/<config>.yaml``; and the byte code Python caches of the task modules."""
    for folder, stem in _BYTE_CODE.items():
        name = relative.removeprefix(folder)
        if name != relative and "/" not in name:
            return name.startswith(stem) and name.endswith(".pyc")
    if listed is not None:
        return relative in listed
    parts = relative.split("/")
    if parts[0] != _HARNESS_FOLDER or len(parts) != 2:
        return False
    name = parts[1]
    return name == "utils.py" or (name.endswith(".yaml") and (name.startswith("_") or name[: -len(".yaml")] in configs))


def _written_files(folder: Path, configs, harness_files) -> dict:
    """``{relative path: sha256 or None}``: what the readers' export says it wrote in ``folder``."""
    return dict(harness_files(folder, configs=sorted(configs))) if harness_files is not None else {}


def _listed_harness_files(folder: Path, configs, harness_files) -> dict | None:
    """``{relative path: sha256 or None}`` of the files of ``folder`` that the readers' export wrote and that are
    unchanged since, by ``harness_files(folder, configs=...)``
    (:func:`split_builders.publishing.readers.written_files`); None without it."""
    if harness_files is None:
        return None
    listed = {}
    for name, digest in _written_files(folder, configs, harness_files).items():
        path = folder / name
        if path.is_file() and not path.is_symlink() and (digest is None or _file_sha256(path) == digest):
            listed[name] = digest
    return listed


def release_files(folder, *, harness_files=None) -> tuple[set, list[str]]:
    """What resplit wrote in the release ``folder`` and what it did not, as relative POSIX paths.

    Resplit's are the files its card names (README.md, every config's data files, its figures:
    :func:`~split_builders.release.folder.named_files`) and the harness tasks of ``lm_eval/`` (those
    ``harness_files`` says the export wrote and are unchanged since: :func:`_listed_harness_files`);
    everything else (hidden files included: a ``.git`` folder, say), and every folder holding none of
    resplit's files, is someone else's. A folder whose README.md is not a resplit card has nothing of
    resplit's."""
    from split_builders.release.folder import data_files, front_matter, named_files

    folder = Path(folder)
    ours, configs = set(), set()
    try:
        metadata, body = front_matter(folder / "README.md")
        if isinstance(metadata, dict) and isinstance(metadata.get("resplit"), dict) and metadata.get("configs"):
            ours, configs = named_files(metadata, body), set(data_files(metadata))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):  # not a card resplit can read
        ours = set()
    listed = _listed_harness_files(folder, configs, harness_files) if ours else None
    found, foreign = set(), []
    for root, folders, files in os.walk(folder):
        base = Path(root).relative_to(folder)
        for name in sorted(files) + sorted(d for d in folders if (Path(root) / d).is_symlink()):
            relative = (base / name).as_posix()
            if relative in ours or (ours and _harness_files_ours(relative, configs, listed)) or (
                    ours and relative == STAGING_MARKER and is_staging(folder)):  # a build stopped after its rename
                found.add(relative)
            else:
                foreign.append(relative)
    for root, folders, files in os.walk(folder):
        for name in folders:
            relative = (Path(root).relative_to(folder) / name).as_posix()
            if not (Path(root) / name).is_symlink() and not any(f.startswith(relative + "/") for f in found):
                if not any(f.startswith(relative + "/") for f in foreign):
                    foreign.append(relative + "/")
    return found, sorted(foreign)


def check_replaceable(folder, *, harness_files=None, flag: str = "--out") -> None:
    """Refuse, in one line naming them (and ``flag``), to replace a folder that holds files resplit did not write
    (:func:`release_files`, with ``harness_files`` as there); an empty folder or a release with only resplit's
    files is replaceable."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    ours, foreign = release_files(folder, harness_files=harness_files)
    if not foreign:
        return
    changed = _changed_harness_files(folder, harness_files) if ours else set()
    named = [f + (" (changed since resplit wrote it)" if f in changed else "") for f in foreign]
    shown = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    what = ("--overwrite replaces only what resplit wrote" if ours else
            "--overwrite replaces only a resplit release or an empty folder")
    raise OutputExistsError(f"{what}; {str(folder)!r} holds {len(foreign)} file(s) resplit did not write ({shown}); "
                            f"move them elsewhere or choose another {flag} (nothing was changed)")


def _changed_harness_files(folder: Path, harness_files) -> set:
    """The files of the readers' export that it lists with a sha256 they no longer have (edited since resplit wrote
    them: the user's now), as relative paths."""
    return {name for name, digest in _written_files(folder, (), harness_files).items()
            if digest is not None and (folder / name).is_file() and _file_sha256(folder / name) != digest}


def staged_problem(staged, *, harness_files=None) -> str | None:
    """Why the staged release ``staged`` (a build's temporary folder) is not complete, or None when it is.

    Complete means what the writer's last step leaves: the folder's permissions set (not the 0700 of a
    temporary folder, unless the umask gives that), a README.md that is a resplit card, every file the card
    names present, every data file with the sha256 the card records
    (``resplit.configs.<config>.sha256.<split>``), and ``lm_eval/`` where the card declares a harness task,
    with every file the export lists there (``harness_files``, as in :func:`release_files`) unchanged."""
    from split_builders.release.folder import data_files, front_matter, named_files

    staged = Path(staged)
    if (staged.stat().st_mode & 0o777) != _folder_mode():
        return "its writing did not finish (the folder is still private)"
    try:
        metadata, body = front_matter(staged / "README.md")
        record = metadata.get("resplit") if isinstance(metadata, dict) else None
        files = data_files(metadata) if isinstance(record, dict) else None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
        return "its README.md is missing or not a resplit card"
    if not files:
        return "its README.md is missing or not a resplit card"
    for name in sorted(named_files(metadata, body) - {"CHANGELOG.md"}):
        if not (staged / name).is_file():
            return f"{name} is missing"
    recorded = record.get("configs") if isinstance(record.get("configs"), dict) else {}
    for config, splits in files.items():
        hashes = (recorded.get(config) or {}).get("sha256") if isinstance(recorded.get(config), dict) else None
        for split, path in splits.items():
            if not isinstance(hashes, dict) or _file_sha256(staged / path) != hashes.get(split):
                return f"{path} does not have the sha256 its card records"
    harness = record["fields"].get("harness") if isinstance(record.get("fields"), dict) else None
    if harness and not (staged / _HARNESS_FOLDER).is_dir():
        return f"{_HARNESS_FOLDER}/ (its harness tasks) is missing"
    for name, digest in sorted(_written_files(staged, files, harness_files).items()):
        path = staged / name
        if not path.is_file() or (digest is not None and _file_sha256(path) != digest):
            return f"{name} is missing or not the file the export wrote"
    return None
