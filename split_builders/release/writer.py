"""The release writer: a folder laid out like a Hugging Face Hub dataset repository.

::

    OUT/
      README.md                                   YAML (configs, dataset_info, provenance) + card
      <config>/<split>-00000-of-00001-<hash8>.parquet
      figures/<config>.png

File names carry a short hash of their content because ``datasets`` caches a local folder by
its name and its data-file names, not their content: a rebuilt folder with new rows under the
old names would be read from the stale cache. The folder is written to a temporary sibling and
moved into place only when complete, so a failed build never leaves half a release; while a build
runs it holds a lock beside the output folder (:class:`OutputLock`), so a second build into the same
place fails at once instead of silently replacing the first one's folder. Folders are created with
the permissions the umask gives (0755 by default), not the 0700 of a private temporary folder.
Every method's configs go through here; methods never write files themselves.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np

from loading_scripts.tables import arrow_table, quiet_datasets
from split_builders._version import __version__
from split_builders.api import ConfigSplit
from split_builders.progress import progress_bar
from split_builders.errors import (InvalidParameterError, OutputExistsError, OutputLockedError, disk_full,
                                   is_disk_full)


@dataclass
class WrittenSplit:
    path: str
    num_examples: int
    num_bytes: int
    sha256: str


def parquet_bytes(dataset: datasets.Dataset) -> bytes:
    """The dataset as Parquet bytes (deterministic for the same rows and library versions)."""
    buffer = io.BytesIO()
    with quiet_datasets():
        dataset.to_parquet(buffer)
    return buffer.getvalue()


def _take(rows: datasets.Dataset, indices: np.ndarray) -> datasets.Dataset:
    """The rows at ``indices`` as a new in-memory Dataset with the same features.

    Arrow's ``take`` on the table: ``Dataset.select(...).flatten_indices()`` does the same through
    a row-batched rewrite that is ~70x slower on nested columns (seconds per split for a CheckList suite).
    """
    from datasets.table import InMemoryTable

    return datasets.Dataset(InMemoryTable(arrow_table(rows).take(indices)), info=rows.info.copy())


def _write_config(rows: datasets.Dataset, config: ConfigSplit, staging: Path) -> dict:
    rows = config.rows if config.rows is not None else rows
    written = {}
    (staging / config.name).mkdir(parents=True)
    for split in config.splits:
        subset = _take(rows, np.sort(np.asarray(config.indices[split], dtype=np.int64)))
        data = parquet_bytes(subset)
        digest = hashlib.sha256(data).hexdigest()
        relative = f"{config.name}/{split}-00000-of-00001-{digest[:8]}.parquet"
        (staging / relative).write_bytes(data)
        written[split] = WrittenSplit(relative, len(subset), subset.data.nbytes, digest)
    return written


def _yaml_metadata(rows, configs, written, *, license, pretty_name, provenance, evidence=None, hub=None) -> dict:
    """The README's YAML: the Hub metadata first (``hub``: :func:`split_builders.release.card.hub_metadata`;
    ``license`` and ``pretty_name`` where it has none; a license nobody stated is ``unknown``), then
    ``configs`` and ``dataset_info`` (what ``datasets`` reads), then the ``resplit`` provenance."""
    features = rows.features._to_yaml_list if rows is not None else None
    metadata = {**({"pretty_name": pretty_name} if pretty_name else {}), "license": license or "unknown",
                **(hub or {})}
    metadata["configs"] = [
        {"config_name": c.name, **({"default": True} if i == 0 else {}),
         "data_files": [{"split": s, "path": written[c.name][s].path} for s in c.splits]}
        for i, c in enumerate(configs)
    ]
    metadata["dataset_info"] = [
        {"config_name": c.name,  # a fresh list each: no YAML anchors
         "features": c.rows.features._to_yaml_list() if c.rows is not None else features(),
         "splits": [{"name": s, "num_bytes": written[c.name][s].num_bytes,
                     "num_examples": written[c.name][s].num_examples} for s in c.splits]}
        for c in configs
    ]
    # The evidence (audit, diagnostics, probe, ...): its settings, and per config its numbers beside the config's files.
    records = evidence or {}
    metadata["resplit"] = {
        "version": __version__,
        **provenance,
        **{name: settings for name, (settings, _) in records.items()},
        "configs": {
            c.name: {"method": c.method, "parameters": c.parameters,
                     "rows": {s: written[c.name][s].num_examples for s in c.splits},
                     "sha256": {s: written[c.name][s].sha256 for s in c.splits},
                     **{name: per_config[c.name] for name, (_, per_config) in records.items() if c.name in per_config}}
            for c in configs
        },
    }
    return metadata


def write_release(out_dir, rows: datasets.Dataset | None, configs: list[ConfigSplit], *, provenance: dict,
                  render_card, license: str | None = None, pretty_name: str | None = None,
                  overwrite: bool = False, progress: bool = False, evidence: dict | None = None,
                  hub: dict | None = None, extras=None) -> Path:
    """Write ``configs`` of ``rows`` as a Hub-style dataset folder at ``out_dir``.

    Parameters
    ----------
    out_dir : path
        The folder to create. It must not exist unless ``overwrite``.
    rows : datasets.Dataset or None
        Every row of the release (canonical fields plus per-example signal columns); None when
        every config brings its own ``rows``.
    configs : list of ConfigSplit
    provenance : dict
        Recorded under ``resplit:`` in the README's YAML (source, signal, seed, ...).
    render_card : callable
        ``render_card(staging_dir, written) -> str``: the card's Markdown body; may write
        figures under ``staging_dir``. ``written`` maps config -> split -> WrittenSplit.
    progress : bool
        A progress bar over the configs (stderr).
    evidence : dict, optional
        ``{name: (settings, {config: numbers})}``: what each evidence view the build ran records
        (:meth:`split_builders.evidence.view.View.record`), in order: the settings as ``resplit.<name>``, each
        config's numbers as ``resplit.configs.<config>.<name>``.
    license, pretty_name : str, optional
        The card's license (``unknown`` when not given) and title.
    extras : callable, optional
        ``extras(staging_dir)`` writes what is derived from the written data files and card (the build's harness
        tasks, ``lm_eval/``) before the folder moves into place.
    hub : dict, optional
        The card's Hub metadata (:func:`split_builders.release.card.hub_metadata`): license, language,
        task categories and ids, size category, source datasets, tags; it wins over ``license`` and
        ``pretty_name``.
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    out_dir = Path(out_dir)
    if out_dir.exists() and not overwrite:
        raise OutputExistsError(f"output folder {str(out_dir)!r} exists; pass --overwrite to replace it")
    if not configs:
        raise InvalidParameterError("a release needs at least one config")
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"config names repeat: {names}")
    for config in configs:
        if config.rows is None and rows is None:
            raise InvalidParameterError(f"config {config.name!r} has no rows of its own and the release has none")
        config.check(len(config.rows if config.rows is not None else rows))

    step = "the release folder"
    staging = None
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
        # Writing is the slow step of releases with many configs (66 for a CheckList suite).
        bar = progress_bar(configs, description="writing configs", unit="config",
                           enabled=progress and len(configs) > 1)
        step = "the release's data files"
        written = {c.name: _write_config(rows, c, staging) for c in bar}
        step = "the card's figures"
        body = render_card(staging, written)
        metadata = _yaml_metadata(rows, configs, written, license=license, pretty_name=pretty_name,
                                  provenance=provenance, evidence=evidence, hub=hub)
        yaml_text = DatasetCardData(**metadata).to_yaml()
        card = DatasetCard(f"---\n{yaml_text}\n---\n\n{body.strip()}\n")  # parses the YAML back: a check
        step = "the card (README.md)"
        (staging / "README.md").write_text(str(card), encoding="utf-8")
        if extras is not None:
            step = "the harness tasks (lm_eval/)"
            extras(staging)
        os.chmod(staging, _folder_mode())  # mkdtemp's folder is private (0700)
        _move_into_place(staging, out_dir)
    except OSError as error:
        if not is_disk_full(error):
            raise
        done = sum(f.stat().st_size for f in staging.rglob("*") if f.is_file()) if staging and staging.exists() else 0
        raise disk_full(out_dir.parent, f"{step} of --out {str(out_dir)!r} ({done / 2**20:.1f} MB written before "
                                        "the disk filled; nothing was left at --out)") from None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def check_output_file(path, flag: str) -> Path:
    """A file a command will write (a figure, a report): its folder must exist and be writable, and the
    path must not be a folder; checked before any work, refused in one line naming ``flag``."""
    path = Path(path).expanduser()
    folder = path.parent
    if path.is_dir():
        raise InvalidParameterError(f"{flag} {str(path)!r} is a folder; give a file name in it (e.g. "
                                    f"{str(path / 'figure.png')!r})")
    if not folder.exists():
        raise InvalidParameterError(f"{flag} {str(path)!r}: the folder {str(folder)!r} does not exist; create it "
                                    "first or give a path in an existing folder")
    if not folder.is_dir():
        raise InvalidParameterError(f"{flag} {str(path)!r}: {str(folder)!r} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"{flag} {str(path)!r}: the folder {str(folder)!r} is not writable")
    return path


def _folder_mode() -> int:
    """The mode a new folder gets under the current umask (0o755 for the usual 022)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


class OutputLock:
    """An exclusive lock on an output location, held from the first check to the final move.

    The lock is ``.<name>.lock`` beside the output folder, taken with ``flock`` (released by the
    kernel when the process ends, however it ends); it holds the owner's pid so that a refused build
    can name it. Holding the lock means no other build is writing here, so staging folders a killed
    build left behind (``.<name>.tmp-*``, ``.<name>.old-*``) are removed on acquiring it.
    """

    def __init__(self, out_dir):
        self.out_dir = Path(out_dir)
        self.path = self.out_dir.parent / f".{self.out_dir.name}.lock"
        self._handle = None

    def __enter__(self) -> "OutputLock":
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            handle.close()
            raise OutputLockedError(f"another build (pid {owner}) is writing {str(self.out_dir)!r}; wait for it "
                                    "to finish or choose another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle
        self.remove_stale_staging()
        return self

    def remove_stale_staging(self) -> list[Path]:
        """Recover what an interrupted build left beside the output folder, then remove the rest.

        A build killed between the two renames of a replacement leaves no folder at ``--out``, the
        old release parked in ``.<name>.old-*/old`` and the new one staged in ``.<name>.tmp-*``.
        Before anything is removed, the complete release is put back: the staged one if it is
        complete (its README.md, written last, is there), else the parked one. Returns the removed
        paths."""
        stale = [p for pattern in (f".{self.out_dir.name}.tmp-*", f".{self.out_dir.name}.old-*")
                 for p in self.out_dir.parent.glob(pattern)]
        if not self.out_dir.exists() and not self.out_dir.is_symlink():
            staged = [p for p in stale if p.name.startswith(f".{self.out_dir.name}.tmp-") and (p / "README.md").is_file()]
            parked = [p / "old" for p in stale if p.name.startswith(f".{self.out_dir.name}.old-") and (p / "old").is_dir()]
            complete = sorted(staged, key=lambda p: p.stat().st_mtime)[-1:] or parked[:1]
            if complete:
                os.replace(complete[0], self.out_dir)
                stale = [p for p in stale if p.exists() and p != complete[0]]
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
        return stale

    def __exit__(self, *exc) -> None:
        import fcntl

        if self._handle is not None:
            # The lock file stays (a few bytes): removing it would let two builds lock two different
            # files of the same name.
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _move_into_place(staging: Path, out_dir: Path) -> None:
    """Replace ``out_dir`` by ``staging`` with renames only (no moment with a half folder)."""
    if out_dir.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
        os.replace(out_dir, trash / "old")
        os.replace(staging, out_dir)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(staging, out_dir)
