"""Reading a release folder: its card's metadata, its data files, its rows and their identities.

``verify``, ``diff`` and ``publish`` read releases through this module and nothing else; it knows no
split family. Every released row of every family carries ``source_id``, the identity a row keeps
across the configs, splits and versions of a release.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import numpy as np
import yaml

from split_builders.errors import InvalidParameterError, InvalidReleaseError
from split_builders.splits import row_ids


def front_matter(readme: Path) -> tuple[dict | None, str]:
    """The YAML block at the top of a README (None when there is none) and the Markdown after it."""
    parts = readme.read_text(encoding="utf-8").split("---\n", 2)
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
    """config -> split -> relative path of its data file, from the card's ``configs:``."""
    return {c["config_name"]: {f["split"]: f["path"] for f in c["data_files"]} for c in metadata["configs"]}


# Files a release holds that its card need not name: what ``push`` adds (the version's CHANGELOG), and
# folders resplit writes whole (evaluation-harness tasks).
UNNAMED_FILES = ("CHANGELOG.md",)
UNNAMED_FOLDERS = ("lm_eval/",)
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
        if relative not in named and not relative.startswith(UNNAMED_FOLDERS):
            extra.append(relative)
    return extra


def describe_extra(extra: list[str]) -> str:
    shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
    return f"{len(extra)} file(s) that the card does not name: {shown}"


class Released:
    """A release folder's card and rows, read with Arrow (no ``datasets`` cache involved)."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.metadata, self.body = read_card(self.folder)
        self.record = self.metadata.get("resplit") or {}
        self.files = data_files(self.metadata)

    def extra_files(self) -> list[str]:
        """Files of the folder its card does not name (:func:`extra_files`)."""
        return extra_files(self.folder, self.metadata, self.body)

    @property
    def configs(self) -> list[str]:
        return list(self.files)

    def table(self, config: str, split: str):
        import pyarrow.parquet as pq

        return pq.read_table(self.folder / self.files[config][split])

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
        _, first = np.unique(ids, return_index=True)
        return table.take(np.sort(first))


def resolve_target(target: str, work: Path) -> Path:
    """A local folder, or ``HUB_ID[@REVISION]`` downloaded (through ``huggingface_hub``) into ``work``."""
    from loading_scripts.files import looks_like_path

    path = Path(target).expanduser()
    repo_id, _, revision = target.partition("@")
    if path.exists() or looks_like_path(repo_id):
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
