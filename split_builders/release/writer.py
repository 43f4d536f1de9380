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
runs it holds a lock beside the output folder (:class:`~split_builders.release.places.OutputLock`), so a
second build into the same place fails at once instead of silently replacing the first one's folder. Folders
are created with the permissions the umask gives (0755 by default), not the 0700 of a private temporary folder.
A folder is replaced only when it holds nothing but what resplit wrote
(:func:`~split_builders.release.places.check_replaceable`), and a staged release an interrupted build left is
put in place only when it is complete (:func:`~split_builders.release.places.staged_problem`).
Every method's configs go through here; methods never write files themselves.

Where a command may write, the lock, the staging folders and what resplit wrote in a release folder (the one
output policy of every command that writes) are :mod:`split_builders.release.places`.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np

from loading_scripts.tables import arrow_table, quiet_datasets
from split_builders._version import __version__
from split_builders.splits import ConfigSplit
from split_builders.overlap import in_threads
from split_builders.progress import progress_bar
from split_builders.errors import (InvalidParameterError, OutputExistsError, cannot_write, disk_full, is_disk_full,
                                   is_unwritable)
from split_builders.release.places import (_folder_mode, _remove_marker, check_output_place, check_replaceable,
                                           new_staging)
from split_builders.release.provenance import file_sha256


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


def _yaml_metadata(rows, configs, written, *, license, pretty_name, provenance, evidence=None, hub=None,
                   figures=None) -> dict:
    """The README's YAML: the Hub metadata first (``hub``: :func:`split_builders.release.card.hub_metadata`;
    ``license`` and ``pretty_name`` where it has none; a license nobody stated is ``unknown``), then
    ``configs`` and ``dataset_info`` (what ``datasets`` reads), then the ``resplit`` provenance, with
    ``figures`` (``{relative path: sha256}`` of the files the card's drawing wrote) as ``resplit.figures``: this
    build's, never what ``provenance`` copied from another release (``audit --write-clean``)."""
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
    from split_builders.release.provenance import CONFIG_KEYS, RECORD_KEYS

    taken = [name for name in records if name in {*RECORD_KEYS, *provenance, *CONFIG_KEYS}]
    if taken:  # the registry refuses such a view; a record must never replace what provenance says
        raise InvalidParameterError(f"the evidence view {taken[0]!r} is named like a key of the release's provenance; "
                                    "rename the view")
    metadata["resplit"] = {
        "version": __version__,
        **{key: value for key, value in provenance.items() if key != "figures"},
        **{name: settings for name, (settings, _) in records.items()},
        "figures": dict(sorted((figures or {}).items())),
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
                  hub: dict | None = None, extras=None, harness_files=None, flag: str = "--out") -> Path:
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
        figures under ``staging_dir`` (their sha256s are recorded as ``resplit.figures``, which ``verify``
        compares). ``written`` maps config -> split -> WrittenSplit.
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
    harness_files : callable, optional
        ``harness_files(release_folder, configs=...)``: ``{relative path: sha256 or None}`` of the files the
        readers' export wrote there (``lm_eval/``, the inspect-ai tasks, ``croissant.json``:
        :func:`split_builders.publishing.readers.written_files`), which an ``overwrite`` may replace; without
        it, ``lm_eval/utils.py``, ``lm_eval/_*.yaml`` and ``lm_eval/<config>.yaml``. Anything else in ``out_dir`` that resplit did not
        write is never replaced: the build is refused (:func:`check_replaceable`).
    hub : dict, optional
        The card's Hub metadata (:func:`split_builders.release.card.hub_metadata`): license, language,
        task categories and ids, size category, source datasets, tags; it wins over ``license`` and
        ``pretty_name``.
    flag : str
        The command-line flag that named ``out_dir``, for messages (``--out``, ``--write-clean``).
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    out_dir = check_output_place(out_dir, flag, overwrite=overwrite, harness_files=harness_files)
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
    place = out_dir  # never a link: check_output_place refuses one (resplit never writes through a link)
    try:
        place.parent.mkdir(parents=True, exist_ok=True)
        staging = new_staging(place)  # marked as resplit's before anything is written into it
        # Writing is the slow step of releases with many configs (66 for a CheckList suite): configs are written a
        # few at a time in threads (Arrow's Parquet writer and sha256 release the GIL); each file's bytes are the
        # same as written alone.
        step = "the release's data files"
        with quiet_datasets(), progress_bar(total=len(configs), description="writing configs", unit="config",
                                            enabled=progress and len(configs) > 1) as bar:  # one switch for all threads
            def write(config):
                done = _write_config(rows, config, staging)
                bar.update(1)
                return done

            written = dict(zip(names, in_threads(write, configs)))
        step = "the card's figures"
        before = _files(staging)
        body = render_card(staging, written)
        figures = {name: file_sha256(staging / name) for name in _files(staging) - before}  # what verify compares
        metadata = _yaml_metadata(rows, configs, written, license=license, pretty_name=pretty_name,
                                  provenance=provenance, evidence=evidence, hub=hub, figures=figures)
        yaml_text = DatasetCardData(**metadata).to_yaml()
        card = DatasetCard(f"---\n{yaml_text}\n---\n\n{body.strip()}\n")  # parses the YAML back: a check
        step = "the card (README.md)"
        (staging / "README.md").write_text(str(card), encoding="utf-8")
        if extras is not None:
            step = "the harness tasks (lm_eval/)"
            extras(staging)
        os.chmod(staging, _folder_mode())  # mkdtemp's folder is private (0700)
        step = "the release into place"
        _move_into_place(staging, place, harness_files=harness_files, flag=flag)
    except OSError as error:
        if not is_unwritable(error):
            raise
        if not is_disk_full(error):  # no permission, a read-only file system: the old release (if any) is as it was
            raise cannot_write(error, f"{step} of {flag} {str(out_dir)!r}", where=_refusing_folder(error, place),
                               instead=f"another {flag}", kept=f"nothing was changed at {flag}") from None
        done = sum(f.stat().st_size for f in staging.rglob("*") if f.is_file()) if staging and staging.exists() else 0
        raise disk_full(out_dir.parent, f"{step} of {flag} {str(out_dir)!r} ({done / 2**20:.1f} MB written before "
                                        f"the disk filled; nothing was left at {flag})") from None
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def _files(folder: Path) -> set:
    """The relative paths (POSIX) of the regular files under ``folder``."""
    return {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}


def _refusing_folder(error: OSError, place: Path) -> Path:
    """The folder whose permissions refused a write into ``place`` (what the message asks to make writable): the
    parent where it is read-only; else the release replaced, where it is read-only itself (moving a folder to
    another parent rewrites its own ``..`` entry, so ``--overwrite`` needs it writable too) or is the path refused
    (where access cannot be told beforehand: ACLs, an immutable flag, a superuser); else the parent."""
    for folder in (place.parent, place):
        if folder.is_dir() and not os.access(folder, os.W_OK):
            return folder
    named = {Path(os.fsdecode(name)) for name in (error.filename, error.filename2) if name is not None}
    return place if place.is_dir() and place in named else place.parent


def _move_into_place(staging: Path, out_dir: Path, *, harness_files=None, flag: str = "--out") -> None:
    """Replace ``out_dir`` by ``staging`` with renames only (no moment with a half folder).

    The place is checked once more here (files may have been put there while the build ran): a file, or a
    folder that holds anything resplit did not write, is refused and left as it is (:func:`check_replaceable`).
    The release replaced is parked in a marked folder (``.<name>.old-*``, :func:`new_staging`) until the new one
    is in place; the staging folder's marker is removed once it is ``out_dir``. Ctrl-C and SIGTERM wait while
    the renames run, so an interrupt never falls between them."""
    import signal

    if out_dir.exists() and not out_dir.is_dir():
        raise OutputExistsError(f"{flag} {str(out_dir)!r} exists and is a file, not a folder; choose another {flag} "
                                "(nothing was changed)")
    if out_dir.exists():
        check_replaceable(out_dir, harness_files=harness_files, flag=flag)
    blocked = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        if out_dir.exists():
            trash = new_staging(out_dir, "old")
            try:
                os.replace(out_dir, trash / "old")
            except OSError:  # refused (permissions): the old release stays where it is
                shutil.rmtree(trash, ignore_errors=True)  # empty but for its marker
                raise
            try:
                os.replace(staging, out_dir)
            except OSError:
                # The old release back in its place (where even that fails, it stays parked in its marked folder,
                # which the next command writing here puts back).
                os.replace(trash / "old", out_dir)
                shutil.rmtree(trash, ignore_errors=True)
                raise
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(staging, out_dir)
        _remove_marker(out_dir)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
