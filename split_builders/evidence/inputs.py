"""The one input of every evidence view: a release's rows per config and split, its ``resplit:`` record, the
configs' recorded parameters and the resolved :class:`~split_builders.contracts.Fields`.

An :class:`EvidenceInput` is made one way from each thing evidence is computed on: the rows and configs a
build is about to release (:meth:`EvidenceInput.from_build`), a release folder (:meth:`~EvidenceInput.from_release`),
any dataset with splits (:meth:`~EvidenceInput.from_splits`), or a target named on the command line: a
release folder, a folder laid out as a Hub dataset, or a Hub dataset id (:meth:`~EvidenceInput.from_target`).
Every split is a :class:`~split_builders.evidence.pools.Part` (rows of a shared base table, with their
``source_id``), so a build and its release give a view the same rows, and its card the numbers that
``resplit audit | diagnose | probe`` recompute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.contracts import Fields
from split_builders.errors import InvalidParameterError, InvalidReleaseError, ResplitError, SourceLoadError
from split_builders.evidence.fields import resolve_fields
from split_builders.evidence.pools import Part, distinct, rows_of

EVALUATION_SPLITS = ("validation", "test")


@dataclass
class EvidenceInput:
    """What a view computes on.

    Attributes
    ----------
    parts : dict
        ``{config: {split: Part}}``: every config's splits.
    record : dict
        The release's ``resplit:`` provenance (empty for a dataset resplit did not build).
    parameters : dict
        ``{config: parameters}`` the configs record (``grouped_by``, ``train_size``).
    where : str
        What the rows are, for messages (a folder, a Hub id, ``the release``).
    """

    parts: dict
    record: dict = field(default_factory=dict)
    parameters: dict = field(default_factory=dict)
    where: str = "the release"
    _fields: Fields | None = field(default=None, repr=False)

    @classmethod
    def from_build(cls, rows, configs, *, record: dict) -> "EvidenceInput":
        """The configs a build releases: ``rows`` (a ``datasets.Dataset``, or None) and ``configs``
        (``ConfigSplit``, with positions into ``rows`` or their own ``rows``)."""
        from loading_scripts.tables import arrow_table

        tables, parts = {}, {}
        for config in configs:
            data = config.rows if config.rows is not None else rows
            if id(data) not in tables:
                tables[id(data)] = arrow_table(data)
            parts[config.name] = {split: Part(tables[id(data)], np.sort(np.asarray(config.indices[split],
                                                                                    dtype=np.int64)))
                                  for split in config.splits}
        return cls(parts, dict(record or {}), {c.name: dict(c.parameters or {}) for c in configs})

    @classmethod
    def from_release(cls, released) -> "EvidenceInput":
        """A release folder (a :class:`split_builders.release.folder.Released`)."""
        parts = {config: {split: Part(released.table(config, split)) for split in released.files[config]}
                 for config in released.configs}
        recorded = released.record.get("configs") or {}
        parameters = {c: dict((recorded.get(c) or {}).get("parameters") or {}) for c in released.configs}
        return cls(parts, dict(released.record), parameters, str(released.folder))

    @classmethod
    def from_splits(cls, datasets_by_config: dict, *, record: dict | None = None,
                    where: str = "the dataset") -> "EvidenceInput":
        """Any dataset: ``{config: {split: datasets.Dataset or pyarrow.Table}}``."""
        import pyarrow as pa

        from loading_scripts.tables import arrow_table

        parts = {config: {split: Part(data if isinstance(data, pa.Table) else arrow_table(data))
                          for split, data in splits.items()}
                 for config, splits in datasets_by_config.items()}
        return cls(parts, dict(record or {}), {}, where)

    @classmethod
    def from_target(cls, target: str, *, work, revision: str | None = None, configs=None) -> "EvidenceInput":
        """``target``: a release folder of any family, a folder laid out as a Hub dataset (train / validation /
        test data files, or YAML ``configs:``), or a Hub dataset id (``org/name``, at ``revision`` or
        ``org/name@revision``) downloaded into ``work``. ``configs`` (``--configs``): only these configs are
        read (an unknown one is refused, naming the others). A release is read through
        :class:`~split_builders.release.folder.Released` (every data file checked against the sha256 its card
        records: a damaged release is refused in one line naming the file)."""
        from split_builders.release.folder import Released, data_files

        path, is_release = locate_target(target, work=work, revision=revision)
        if is_release:
            released = Released(path, configs=configs)
            if len(data_files(released.metadata)) > 1:
                released.hint = "; or read only other configs with --configs"
            return cls.from_release(released)
        return cls.from_splits(read_splits(path, Path(work) / "datasets-cache", configs=configs), where=str(target))

    @property
    def fields(self) -> Fields:
        """The resolved fields of these rows (:func:`~split_builders.evidence.fields.resolve_fields`)."""
        if self._fields is None:
            self._fields = self.resolve()
        return self._fields

    def resolve(self, requested=None) -> Fields:
        """The fields of these rows, with ``requested`` (``--fields``) as the text fields where given."""
        return resolve_fields(self.sample(), self.record, requested=requested, where=self.where)

    def sample(self):
        """Every row the configs use, once per base table (a ``pyarrow.Table``): what fields are resolved on."""
        import pyarrow as pa

        used = {}
        for splits in self.parts.values():
            for part in splits.values():
                used.setdefault(id(part.table), (part.table, []))[1].append(part.rows)
        tables = [rows_of(table, None if any(r is None for r in rows) else distinct(np.concatenate(rows)))
                  for table, rows in used.values()]
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="permissive")

    def evaluated(self, purpose: str) -> dict:
        """The configs with a train split and an evaluation split (refused in one line where there is none)."""
        return evaluated_configs(self.parts, where=self.where, purpose=purpose)

    def tables(self, config: str) -> dict:
        """``{split: pyarrow.Table}`` of one config's rows."""
        return {split: part.taken() for split, part in self.parts[config].items()}


def evaluated_configs(parts: dict, *, where: str, purpose: str) -> dict:
    """The configs of ``parts`` (``{config: {split: ...}}``) with a train split and an evaluation split, the
    ones every view looks at; refused in one line where there is none."""
    configs = {c: s for c, s in parts.items() if "train" in s and any(e in s for e in EVALUATION_SPLITS)}
    if not configs:
        raise InvalidParameterError(f"{where} has no config with a train split and a validation or test split "
                                    f"to {purpose}")
    return configs


def locate_target(target: str, *, work, revision: str | None = None):
    """``(folder, is_release)`` of ``target``: a folder here, or a Hub dataset id (``org/name``, at
    ``revision`` or ``org/name@revision``) downloaded into ``work``; ``is_release`` when its README's
    YAML has ``resplit:`` provenance and ``configs:``."""
    from split_builders.release.folder import front_matter, resolve_target

    path = Path(target).expanduser()
    if path.exists():
        if revision:  # a folder here has no revisions: reading it as given would ignore the option
            raise InvalidParameterError(f"--revision {revision} is for a Hub id; {target!r} is a folder here, which "
                                        "has no revisions: drop --revision, or give the Hub id")
        if not path.is_dir():
            raise InvalidParameterError(f"{target!r} is a file; give a release folder, a dataset folder with "
                                        "train / validation / test data files, or a Hub id")
    else:
        repo_id, _, at = target.partition("@")
        if repo_id.count("/") != 1 or repo_id.startswith((".", "/", "~")):
            raise InvalidParameterError(f"{target!r} does not exist (neither a folder here nor a Hub id org/name)")
        revision = revision or at or None
        try:
            path = resolve_target(repo_id + (f"@{revision}" if revision else ""), Path(work))
        except InvalidParameterError as error:
            raise InvalidParameterError(f"{target!r} is no folder here, and as a Hub id: {error}") from None
    readme = path / "README.md"
    metadata = front_matter(readme)[0] if readme.is_file() else None
    return path, bool(isinstance(metadata, dict) and isinstance(metadata.get("resplit"), dict)
                      and metadata.get("configs"))


def read_splits(folder, cache_dir, *, configs=None) -> dict:
    """``{config: {split: pyarrow.Table}}`` of a folder laid out as a Hub dataset: its configs and each
    split's data files as ``datasets`` resolves them (its data-file patterns: ``train.jsonl``,
    ``data/test-*.parquet``, ``dev.csv`` as validation, YAML ``configs:``), each file read strictly by
    :func:`loading_scripts.files.read_table` (a ragged CSV line, a file with a header and no rows, text that
    is not UTF-8: one line naming the file, the line and what to do; ``datasets``' CSV reader would pad
    short records silently). Files of other formats are read by ``datasets`` into ``cache_dir``.
    ``configs``: only these configs are read."""
    import datasets
    from datasets.exceptions import DatasetsError

    from loading_scripts.tables import quiet_datasets

    problem = (f"{folder} is neither a resplit release (a README.md with `resplit:` in its YAML) nor a dataset "
               "folder with train / validation / test data files (parquet, jsonl, json, csv)")
    if (Path(folder) / "README.md").is_file():
        problem += ("; its README.md has no `resplit:` YAML: if the folder is a resplit release, its card is damaged "
                    "(restore README.md or rebuild the release)")
    out = {}
    try:
        with quiet_datasets(logs=True):  # a file that fails is said in one line, not in datasets' log too
            names = datasets.get_dataset_config_names(str(folder))
            if configs:
                unknown = [c for c in dict.fromkeys(configs) if c not in names]
                if unknown:
                    raise InvalidParameterError(f"{folder} has no config {', '.join(map(repr, unknown))}; its "
                                                f"configs: {', '.join(names)}")
                names = list(dict.fromkeys(configs))
            for name in names:
                out[name] = _read_config(folder, name, cache_dir)
    except FileNotFoundError:  # no data files (datasets' EmptyDatasetError)
        raise InvalidReleaseError(problem) from None
    except (DatasetsError, ValueError) as error:
        if isinstance(error, ResplitError):
            raise
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidReleaseError(f"{problem} ({detail})") from None
    if not any("train" in splits for splits in out.values()):
        found = sorted({s for splits in out.values() for s in splits})
        raise InvalidReleaseError(f"{folder} has no train split (splits: {', '.join(found) or 'none'}); the audit "
                                  "compares validation and test rows with train rows")
    return out


def _read_config(folder, name: str, cache_dir) -> dict:
    """``{split: pyarrow.Table}`` of one config of a dataset folder (:func:`read_splits`)."""
    import datasets
    import pyarrow as pa

    from loading_scripts.files import read_table, table_format
    from loading_scripts.tables import arrow_table

    files = datasets.load_dataset_builder(str(folder), name, cache_dir=str(cache_dir)).config.data_files or {}
    paths = {str(split): [Path(str(f)) for f in listed] for split, listed in files.items()}
    if not paths or not all(table_format(p) and p.is_file() for listed in paths.values() for p in listed):
        loaded = datasets.load_dataset(str(folder), name, cache_dir=str(cache_dir))
        return {split: arrow_table(part) for split, part in loaded.items()}
    out = {}
    for split, listed in paths.items():
        tables = []
        for path in listed:
            try:
                tables.append(arrow_table(read_table(path)))
            except SourceLoadError as error:
                raise SourceLoadError(f"{error} (the {split} split of the dataset folder {folder}): fix the file, or "
                                      "move it out of the folder") from None
        try:
            out[split] = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            names = ", ".join(p.name for p in listed)
            raise SourceLoadError(f"the {split} split of the dataset folder {folder} is read from {names}, whose "
                                  f"columns do not agree ({str(error).splitlines()[0]}); give every file of a split "
                                  "the same columns") from None
    return out
