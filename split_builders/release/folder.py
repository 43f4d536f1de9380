"""Reading a release folder: its card's metadata, its data files, its rows and their identities.

Every command that reads a release (``audit``, ``diagnose``, ``probe``, ``show``, ``diff``, ``verify``,
``export``, ``push``) reads it through this module and nothing else; it knows no split family. A damaged
release is refused in one line (an :class:`~split_builders.errors.InvalidReleaseError` naming the file and
what to do), never a traceback: a README.md that is not UTF-8 or whose YAML is not a card, a data file that
is missing, empty, not a file, or whose bytes are not the ones the card records
(``resplit.configs.<config>.sha256.<split>``, checked as the file is read: a flipped byte inside a file
that still parses is not used silently). :class:`Released` reads only the configs it is asked for, so a
damaged config that is not asked for stops nothing. Every released row of every family carries
``source_id``, the identity a row keeps across the configs, splits and versions of a release.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import numpy as np
import yaml

from split_builders.errors import InvalidParameterError, InvalidReleaseError
from split_builders.splits import row_ids


def read_readme(readme: Path) -> str:
    """The text of a card (README.md), strictly UTF-8: a file that cannot be read or is not UTF-8 is
    refused in one line naming the line and the byte."""
    readme = Path(readme)
    try:
        raw = readme.read_bytes()
    except OSError as error:
        raise InvalidReleaseError(f"{readme}: cannot be read ({error.strerror or error}); restore the file or "
                                  "rebuild the release") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InvalidReleaseError(f"{readme}: line {line} is not UTF-8 (byte 0x{raw[error.start]:02x} at offset "
                                  f"{error.start}): the card is damaged or was saved in another encoding; restore "
                                  "README.md, save it as UTF-8, or rebuild the release") from None


def front_matter(readme: Path) -> tuple[dict | None, str]:
    """The YAML block at the top of a README (None when there is none) and the Markdown after it. Windows line
    endings (CRLF, a README saved by an editor there) read as plain ones; the file itself is never rewritten."""
    parts = read_readme(readme).replace("\r\n", "\n").split("---\n", 2)
    if len(parts) != 3:
        return None, parts[-1]
    try:
        metadata = yaml.safe_load(parts[1])
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        raise InvalidReleaseError(f"{readme}: its YAML front matter is not valid YAML{where}; rebuild the release "
                                  "or fix the file") from None
    return (metadata if isinstance(metadata, dict) else None), parts[2]


def check_release_folder(folder, *, what: str = "a release folder") -> Path:
    """``folder`` as a Path when it is a folder holding README.md; else one line saying what it is
    instead (missing, a file, a folder without README.md)."""
    folder = Path(folder).expanduser()
    if not folder.exists():
        raise InvalidReleaseError(f"folder not found: {str(folder)!r} (expected {what}, the folder a build's --out "
                                  "wrote)")
    if not folder.is_dir():
        raise InvalidReleaseError(f"{str(folder)!r} is a file, not {what}: give the folder that holds README.md and "
                                  "the data files (a build's --out)")
    if not (folder / "README.md").is_file():
        raise InvalidReleaseError(f"{str(folder)!r} has no README.md: not {what} (build one with `resplit <method> "
                                  f"--out {folder}`)")
    return folder


def read_card(folder: Path) -> tuple[dict, str]:
    """The README's YAML metadata and its Markdown body."""
    folder = check_release_folder(folder)
    readme = folder / "README.md"
    metadata, body = front_matter(readme)
    if metadata is None or not metadata.get("configs"):
        raise InvalidReleaseError(f"{readme} has no YAML `configs:` block: not a resplit release")
    return metadata, body


def data_files(metadata: dict) -> dict:
    """config -> split -> relative path of its data file, from the card's ``configs:`` (a list of
    ``{config_name, data_files: [{split, path}]}``); a card whose entries have another shape is refused in
    one line naming the entry."""
    configs = metadata.get("configs")
    if not isinstance(configs, list):
        raise InvalidReleaseError("the card's YAML `configs:` is not a list of configs: not a resplit release "
                                  "(rebuild it)")
    files = {}
    for number, entry in enumerate(configs, start=1):
        name = entry.get("config_name") if isinstance(entry, dict) else None
        listed = entry.get("data_files") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not isinstance(listed, list) or not all(
                isinstance(f, dict) and isinstance(f.get("split"), str) and isinstance(f.get("path"), str)
                for f in listed):
            raise InvalidReleaseError(f"the card's YAML `configs:` entry {number} is not a config name with its "
                                      "data files (config_name, data_files: [{split, path}]): the card is damaged; "
                                      "restore README.md or rebuild the release")
        files[name] = {f["split"]: f["path"] for f in listed}
    return files


# Files a release holds that its card need not name: what ``push`` adds (the version's CHANGELOG), and
# folders resplit writes whole (evaluation-harness tasks).
UNNAMED_FILES = ("CHANGELOG.md",)
# What the readers' export writes beside the card where a config has a task (inspect-ai tasks, Croissant
# metadata): not extra files, though a card need not name them (the writer tells them from a user's by sha256).
READER_FILES = ("inspect_tasks.py", "eval.yaml", "croissant.json")
UNNAMED_FOLDERS = ("lm_eval/", "__pycache__/")  # the byte code of inspect_tasks.py, once run
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|\bsrc=[\"']([^\"']+)[\"']")


def named_files(metadata: dict, body: str) -> set:
    """The relative paths a card names: README.md, every config's data files and every relative link
    or image of its Markdown (figures)."""
    names = {"README.md", *UNNAMED_FILES}
    names.update(path for splits in data_files(metadata).values() for path in splits.values())
    for match in _LINK.finditer(body):
        target = (match.group(1) or match.group(2)).split("#", 1)[0]
        if target and "://" not in target and not target.startswith(("/", "mailto:")):
            names.add(PurePosixPath(target).as_posix().removeprefix("./"))
    return names


def extra_files(folder, metadata: dict, body: str) -> list[str]:
    """Files under ``folder`` (relative, sorted) that its card does not name (:func:`named_files`); hidden
    files and folders (``.gitattributes``, ``.cache/``) are not counted."""
    folder = Path(folder)
    named = named_files(metadata, body)
    extra = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_dir() or any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        if relative not in named and relative not in READER_FILES and not relative.startswith(UNNAMED_FOLDERS):
            extra.append(relative)
    return extra


def describe_extra(extra: list[str]) -> str:
    shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
    return f"{len(extra)} file(s) that the card does not name: {shown}"


BLOCK = 1 << 20  # bytes hashed at a time


def _sha256(path: Path, *, keep: bool = False) -> tuple[str, bytearray | None]:
    """sha256 of a file, streamed in blocks of :data:`BLOCK`; with ``keep`` also its bytes (the file is read
    once, into one buffer of its size: the bytes that were hashed are the ones parsed)."""
    import hashlib
    import os

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if not keep:
            while block := handle.read(BLOCK):
                digest.update(block)
            return digest.hexdigest(), None
        kept = bytearray(os.fstat(handle.fileno()).st_size)
        view, filled = memoryview(kept), 0
        while filled < len(kept) and (n := handle.readinto(view[filled: filled + BLOCK])):
            digest.update(view[filled: filled + n])
            filled += n
        view.release()
        if filled < len(kept):  # the file shrank while it was read
            del kept[filled:]
        while block := handle.read(BLOCK):  # or grew
            digest.update(block)
            kept += block
        return digest.hexdigest(), kept


class Released:
    """A release folder's card and rows, read with Arrow (no ``datasets`` cache involved).

    Parameters
    ----------
    folder : path
        The release folder (README.md and the data files its card names).
    configs : list of str, optional
        Only these configs are read (``--configs``); the others are not touched, so a damaged config that was
        not asked for stops nothing. An unknown name is refused, listing the release's configs.
    check : bool
        Check every data file as it is read against the sha256 the card records
        (``resplit.configs.<config>.sha256.<split>``; once per file, streamed, on the same bytes that are
        parsed): a file that is missing, empty, not a file or not the one the card records is refused in one
        line. ``verify`` reads with ``check=False`` and reports each file's :meth:`problem` instead.
    hint : str
        What else the user can do, appended to the message of a damaged file (a command's ``--configs``).
    """

    def __init__(self, folder, *, configs=None, check: bool = True, hint: str = ""):
        self.folder = check_release_folder(folder)
        self.metadata, self.body = read_card(self.folder)
        record = self.metadata.get("resplit")
        self.record = record if isinstance(record, dict) else {}
        self.files = data_files(self.metadata)
        if configs:
            wanted = list(dict.fromkeys(configs))
            unknown = [c for c in wanted if c not in self.files]
            if unknown:
                raise InvalidParameterError(f"{self.folder} has no config {', '.join(map(repr, unknown))}; its configs: "
                                            f"{', '.join(self.files)}")
            self.files = {c: self.files[c] for c in wanted}
        self.check, self.hint = check, hint
        self._digests: dict = {}  # (config, split) -> ((size, mtime), sha256): each file hashed once

    def extra_files(self) -> list[str]:
        """Files of the folder its card does not name (:func:`extra_files`)."""
        return extra_files(self.folder, self.metadata, self.body)

    @property
    def configs(self) -> list[str]:
        return list(self.files)

    def path(self, config: str, split: str) -> Path:
        """The data file of one split, as the card names it (a path inside the folder)."""
        relative = self.files[config][split]
        pure = PurePosixPath(relative)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise InvalidReleaseError(f"{self.folder}: the card names {relative!r} as the data file of {config}/{split}"
                                      ", which is not a path inside the release folder: the card is damaged; restore "
                                      "README.md or rebuild the release")
        return self.folder / relative

    def recorded_sha256(self, config: str, split: str) -> str | None:
        """The sha256 the card records of one split's data file (None where it records none)."""
        entry = (self.record.get("configs") or {}).get(config)
        hashes = entry.get("sha256") if isinstance(entry, dict) else None
        value = hashes.get(split) if isinstance(hashes, dict) else None
        return value if isinstance(value, str) else None

    def file_problem(self, config: str, split: str) -> str | None:
        """What is wrong with one split's data file before its bytes are read (None when nothing is): it is
        missing, not a file (a folder, a FIFO), empty, or cannot be read."""
        return self._state(config, split)[0]

    def _state(self, config: str, split: str) -> tuple[str | None, tuple | None]:
        """``(problem, (size, mtime))`` of one data file before it is hashed."""
        import stat as kinds

        relative = self.files[config][split]
        path = self.path(config, split)
        try:
            stat = path.stat()
        except OSError as error:
            if not path.exists() and not path.is_symlink():
                return f"the data file {relative} of {config}/{split} is missing", None
            return f"the data file {relative} of {config}/{split} cannot be read ({error.strerror or error})", None
        if not kinds.S_ISREG(stat.st_mode):
            return f"the data file {relative} of {config}/{split} is not a file (a folder or a special file)", None
        if stat.st_size == 0:
            return f"the data file {relative} of {config}/{split} is empty (0 bytes)", None
        return None, (stat.st_size, stat.st_mtime_ns)

    def sha256(self, config: str, split: str) -> str:
        """sha256 of one split's data file, computed once (streamed; again only when the file changed on
        disk). A file that :meth:`file_problem` finds wrong is refused in one line."""
        problem, digest, _ = self._digest(config, split, keep=False)
        if problem:
            raise self._refuse(problem)
        return digest

    def _digest(self, config: str, split: str, *, keep: bool):
        """``(problem, sha256, bytes)``: the bytes that were hashed with ``keep`` (None where the digest was
        already known: the file is then read from disk)."""
        problem, state = self._state(config, split)
        if problem:
            return problem, None, None
        known = self._digests.get((config, split))
        if known is not None and known[0] == state:
            return None, known[1], None
        try:
            digest, data = _sha256(self.path(config, split), keep=keep)
        except OSError as error:
            return (f"the data file {self.files[config][split]} of {config}/{split} cannot be read "
                    f"({error.strerror or error})"), None, None
        self._digests[(config, split)] = (state, digest)
        return None, digest, data

    def problem(self, config: str, split: str) -> str | None:
        """What is wrong with one split's data file (None when nothing is): :meth:`file_problem`, or bytes
        other than the ones the card records (where it records a sha256)."""
        return self._problem(config, split)[0]

    def _problem(self, config: str, split: str) -> tuple[str | None, bytes | None]:
        expected = self.recorded_sha256(config, split)
        if expected is None:
            return self.file_problem(config, split), None
        problem, digest, data = self._digest(config, split, keep=True)
        if problem:
            return problem, None
        if digest != expected:
            return (f"the data file {self.files[config][split]} of {config}/{split} is not the one the card records "
                    f"(sha256 {digest[:12]}..., the card: {expected[:12]}...): it was changed, truncated or damaged "
                    "after the release was built"), None
        return None, data

    def _refuse(self, problem: str) -> InvalidReleaseError:
        """The one line of a damaged data file: the folder, the file and what is wrong (``problem``, kept on the
        error as ``.problem``), and what to do."""
        error = InvalidReleaseError(f"{self.folder}: {problem}; restore the file or rebuild the release (`resplit "
                                    f"verify {self.folder}` lists every file that differs){self.hint}")
        error.problem = problem
        return error

    def check_present(self) -> None:
        """Refuse (one line, the first such file, as :meth:`check_files` words it) a data file of the configs read
        that is missing, not a file or empty (:meth:`file_problem`), without reading any file's bytes."""
        for config, splits in self.files.items():
            for split in splits:
                problem = self.file_problem(config, split)
                if problem:
                    raise self._refuse(problem)

    def check_files(self) -> None:
        """Refuse (one line, the first damaged file) a release whose data files of the configs read are not
        all the ones the card records (:meth:`problem`)."""
        for config, splits in self.files.items():
            for split in splits:
                problem = self.problem(config, split)
                if problem:
                    raise self._refuse(problem)

    def table(self, config: str, split: str, columns=None, *, check: bool | None = None):
        """One split's rows (a ``pyarrow.Table``, ``columns`` only where given), its file checked first
        (``check``, default the reader's); a file that is damaged or does not parse is refused in one line."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        source = self.path(config, split)
        if self.check if check is None else check:
            problem, data = self._problem(config, split)
            if problem:
                raise self._refuse(problem)
            if data is not None:  # the bytes just hashed: parsed without a second read
                source = pa.BufferReader(pa.py_buffer(data))
        try:
            return pq.read_table(source, columns=list(columns) if columns is not None else None)
        except (pa.ArrowException, OSError, ValueError) as error:
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise self._refuse(f"the data file {self.files[config][split]} of {config}/{split} is not a readable "
                               f"Parquet file ({detail})") from None

    def source_ids(self, config: str, split: str) -> np.ndarray:
        """The row identities (:func:`row_ids`) of one split."""
        return row_ids(self.table(config, split))

    def rows(self, config: str):
        """Every row of ``config`` (all its splits) in ``source_id`` order, and the split of each."""
        import pyarrow as pa

        parts, names = [], []
        for split in self.files[config]:
            table = self.table(config, split)
            parts.append(table)
            names += [split] * table.num_rows
        table = pa.concat_tables(parts)
        order = np.argsort(row_ids(table), kind="stable")
        return table.take(order), np.asarray(names, dtype=object)[order]

    def all_rows(self, configs=None):
        """The union of the rows of ``configs`` (default: every config), one per ``source_id``, in
        ``source_id`` order: the release's rows before they were split."""
        import pyarrow as pa

        tables = [self.rows(c)[0] for c in (configs or self.configs)]
        table = pa.concat_tables(tables, promote_options="default")
        ids = row_ids(table)
        _, first = np.unique(ids, return_index=True)  # the first copy of each id, in source_id order
        return table.take(first)


def is_local_target(target: str) -> bool:
    """Whether a release ``target`` names a local folder (it exists, or looks like a path) rather than
    ``HUB_ID[@REVISION]``."""
    from loading_scripts.files import looks_like_path

    return Path(target).expanduser().exists() or looks_like_path(target.partition("@")[0])


def resolve_target(target: str, work: Path) -> Path:
    """A local folder, or ``HUB_ID[@REVISION]`` downloaded (through ``huggingface_hub``) into ``work``."""
    path = Path(target).expanduser()
    repo_id, _, revision = target.partition("@")
    if is_local_target(target):
        return check_release_folder(path)
    if repo_id.count("/") != 1:
        raise InvalidParameterError(f"{target!r} is neither an existing folder nor a Hub id org/name[@revision]")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision or None,
                                      local_dir=work / repo_id.replace("/", "--")))
    except (RepositoryNotFoundError, RevisionNotFoundError) as error:
        raise InvalidParameterError(f"{target}: no such dataset or revision on the Hub ({type(error).__name__})") from None
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as error:
        raise InvalidParameterError(f"{target}: could not download it ({str(error).splitlines()[0]})") from None
