"""Contamination across datasets, row by row: each evaluation row of a target against every row of other
datasets (``resplit audit TARGET --against OTHER ...``).

Every validation and test row of the target gets one **tier**:

- ``clean``: no row of any other dataset has the same input;
- ``input_contaminated``: its input (the declared text / query fields, less a target program) has an exact
  duplicate (after the audit's normalisation) or a near-duplicate (character ``NGRAM``-gram Jaccard >=
  ``threshold``, confirmed with the exact Jaccard) in some other dataset;
- ``input_label_contaminated``: and one of those matching rows has the same label (or target program),
  compared by value (class names where the columns are class numbers).

Each contaminated row names its match: the other dataset, its split, the matching row's ``source_id`` (its
row number in that split where it has none) and the Jaccard; the best match is the highest Jaccard among the
rows with the same label (input_label) or among all matching rows (input), ties to the first one read.

**Memory is bounded by the evaluation rows**: only the target's distinct evaluation inputs are indexed
(:class:`~.near_duplicates.BandIndex`); every other dataset is read a chunk of rows at a time
(``pyarrow.parquet.ParquetFile.iter_batches`` for Parquet, Arrow's memory-mapped tables for what ``datasets``
reads), each chunk normalised, exact matches found by hash (Arrow's ``index_in``), MinHashed and sent through
the index, candidates confirmed with the exact Jaccard; only the best match per input and label is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.evidence.near_duplicates import (NGRAM, NUM_PERM, BandIndex, cross_jaccard, examples_text,
                                                     signatures_of)
from split_builders.evidence.pools import Pool, value_codes

TIERS = ("clean", "input_contaminated", "input_label_contaminated")
EVALUATION_SPLITS = ("validation", "test")
CHUNK_ROWS = 50_000  # rows of another dataset read, normalised and MinHashed at once
ROW_COLUMNS = ("config", "split", "source_id", "tier", "match_dataset", "match_split", "match_id", "jaccard")
_NO_LABEL = -1


# ---------------------------------------------------------------------------------------------
# The other datasets: each split a stream of Arrow tables
# ---------------------------------------------------------------------------------------------


@dataclass
class OtherSplit:
    """One split of another dataset: its ``dataset`` name (as given), ``split`` name, ``columns``, the class
    names of its label where they are numbers, and ``batches()``: its rows, a chunk at a time, in order."""

    dataset: str
    split: str
    columns: list
    batches: Callable
    label_names: dict = field(default_factory=dict)
    record: dict = field(default_factory=dict)


def _class_names(schema) -> dict:
    """``{column: class names}`` of the ``ClassLabel`` columns the Hub metadata of an Arrow schema declares."""
    try:
        import datasets

        features = datasets.Features.from_arrow_schema(schema)
    except Exception:  # no or foreign metadata: no class names
        return {}
    return {name: tuple(f.names) for name, f in features.items() if hasattr(f, "names") and f.names}


def _parquet_split(dataset: str, split: str, path: Path, record: dict | None = None) -> OtherSplit:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def unreadable(error) -> InvalidParameterError:  # empty, cut short, a folder, not Parquet: one line
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        return InvalidParameterError(f"--against {dataset}: {str(path)!r} ({split}) is not a readable Parquet file "
                                     f"({detail}); restore it, or name the datasets to check against without it")

    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError, ValueError) as error:
        raise unreadable(error) from None

    def batches(columns=None):
        wanted = [c for c in (columns or schema.names) if c in schema.names]
        try:
            handle = pq.ParquetFile(path)
            for batch in handle.iter_batches(batch_size=CHUNK_ROWS, columns=wanted):
                yield pa.Table.from_batches([batch])
        except (pa.ArrowException, OSError, ValueError) as error:
            raise unreadable(error) from None

    return OtherSplit(dataset, split, list(schema.names), batches, _class_names(schema), dict(record or {}))


def _table_split(dataset: str, split: str, table, label_names: dict | None = None) -> OtherSplit:
    def batches(columns=None):
        wanted = [c for c in (columns or table.column_names) if c in table.column_names]
        chosen = table.select(wanted)
        for start in range(0, chosen.num_rows, CHUNK_ROWS):
            yield chosen.slice(start, CHUNK_ROWS)

    names = {**_class_names(table.schema), **(label_names or {})}
    return OtherSplit(dataset, split, list(table.column_names), batches, names)


def _dataset_names(data) -> dict:
    return {name: tuple(f.names) for name, f in data.features.items() if hasattr(f, "names") and f.names}


def _file_splits(name: str, path: Path) -> list[OtherSplit]:
    """A CSV / TSV / JSONL / JSON / Parquet file: one split named as the file (less its format and ``.gz``). A
    Parquet file is read as its own columns and streamed, whatever its size; in the other formats SNLI's and
    BoolQ's official layouts are read by their readers (:func:`loading_scripts.load_source`) into canonical rows
    (``premise``, ``hypothesis``, ``label``), other tables as their columns."""
    from loading_scripts import load_source
    from loading_scripts.errors import FieldError
    from loading_scripts.files import read_table, table_format
    from loading_scripts.tables import arrow_table

    kind = table_format(path)
    if kind is None:
        raise InvalidParameterError(f"--against {name}: not a CSV, TSV, JSONL, JSON or Parquet file")
    stem = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    split = stem.rsplit(".", 1)[0] or stem
    if kind == "parquet" and path.suffix.lower() != ".gz":  # its own columns, streamed
        return [_parquet_split(name, split, path)]
    try:  # a known layout (SNLI, BoolQ): canonical rows
        data = load_source(str(path)).dataset
    except FieldError:  # a plain table: its own columns
        data = read_table(path)
    return [_table_split(name, split, arrow_table(data), _dataset_names(data))]


def _folder_tables(name: str, folder: Path, cache_dir: Path) -> list:
    """``[(split, table, class names)]`` of a folder laid out as a Hub dataset, read by ``datasets``
    (memory-mapped Arrow): every config's splits, named ``config/split`` where there are several configs."""
    import datasets
    from datasets.exceptions import DatasetsError

    from loading_scripts.tables import arrow_table, quiet_datasets

    out = []
    try:
        with quiet_datasets():
            configs = datasets.get_dataset_config_names(str(folder))
            for config in configs:
                loaded = datasets.load_dataset(str(folder), config, cache_dir=str(cache_dir))
                for split, data in loaded.items():
                    label = split if len(configs) == 1 else f"{config}/{split}"
                    out.append((label, arrow_table(data), _dataset_names(data)))
    except (FileNotFoundError, DatasetsError, ValueError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidParameterError(f"{name}: neither a resplit release nor a dataset folder with data "
                                    f"files ({detail})") from None
    return out


def _folder_splits(name: str, folder: Path, cache_dir: Path) -> list[OtherSplit]:
    return [_table_split(name, split, table, names) for split, table, names in _folder_tables(name, folder, cache_dir)]


def _release_splits(name: str, folder: Path) -> list[OtherSplit]:
    """A resplit release: every config's splits, each Parquet file streamed."""
    from split_builders.release.folder import Released

    released = Released(folder)
    released.check_files()  # a data file missing, a folder, empty or changed: one line, as every reader says it
    single = len(released.configs) == 1
    return [_parquet_split(name, split if single else f"{config}/{split}", released.folder / path, released.record)
            for config, splits in released.files.items() for split, path in splits.items()]


def open_other(other: str, *, work, revision: str | None = None, splits=None) -> list[OtherSplit]:
    """The splits of ``other``: a release folder, a dataset folder, a table file, or a Hub id (``org/name``,
    at ``revision`` or ``org/name@revision``); ``splits`` keeps the splits of these names (``config/split``
    names or plain split names)."""
    from split_builders.evidence.inputs import locate_target

    path = Path(other).expanduser()
    if path.is_file():
        found = _file_splits(other, path)
    else:
        folder, is_release = locate_target(other, work=work, revision=revision)
        found = _release_splits(other, folder) if is_release else \
            _folder_splits(other, folder, Path(work) / "against-cache")
    if splits:
        kept = [s for s in found if s.split in splits or s.split.rsplit("/", 1)[-1] in splits]
        if not kept:
            raise InvalidParameterError(f"--against {other} has no split named {', '.join(splits)} (splits: "
                                        f"{', '.join(s.split for s in found)}); name one with --against-splits")
        found = kept
    return found


# ---------------------------------------------------------------------------------------------
# Labels compared by value
# ---------------------------------------------------------------------------------------------


def label_strings(column, names=None):
    """A label column as strings: class numbers as their class names (``names``), other values as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if names and (pa.types.is_integer(column.type)):
        valid = pc.and_(pc.greater_equal(column, 0), pc.less(column, len(names)))
        index = pc.if_else(valid, column, pa.scalar(None, column.type))
        return pa.array(list(names), pa.large_string()).take(index)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        from split_builders.evidence.pools import as_text

        return as_text(column)
    return column.cast(pa.large_string())


def class_names_of(other: OtherSplit, column: str, names) -> tuple:
    """``(class names, why not)`` to read the label ``column`` of ``other`` with: the names it declares (a
    ``ClassLabel``); else, where its labels are class numbers (whole numbers) and the release has class names
    ``names``, those names when every number is one of the release's classes, or why they cannot be compared
    (``(None, reason)``); ``(None, None)`` where the labels are compared as they are (text, or a release without
    names)."""
    import pyarrow as pa

    if other.label_names.get(column):
        return tuple(other.label_names[column]), None
    if not names:
        return None, None
    low, high, kind = None, None, None
    for chunk in other.batches([column]):
        values = chunk.column(column)
        kind = kind or values.type
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
            return None, None
        numbers = np.asarray(values.drop_null().to_numpy(), dtype=np.float64)
        numbers = numbers[~np.isnan(numbers)]
        if numbers.size and not (numbers == np.round(numbers)).all():
            return None, None  # measurements, not classes: compared as they are
        if numbers.size:
            low = numbers.min() if low is None else min(low, numbers.min())
            high = numbers.max() if high is None else max(high, numbers.max())
    if kind is None or low is None:
        return None, None
    if low < 0 or high >= len(names):
        return None, (f"its labels are numbers from {low:g} to {high:g}, not class numbers of the release's "
                      f"{len(names)} classes {', '.join(names)}")
    return tuple(names), None


def _class_numbers(column, names):
    """A label column of whole numbers as integers where they are read as class ``names``; else as it is."""
    import pyarrow as pa

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not names or not pa.types.is_floating(column.type):
        return column
    values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    missing = np.isnan(values)
    return pa.array(np.where(missing, 0, values).astype(np.int64), pa.int64(), mask=missing)


class LabelCodes:
    """One integer per distinct label value, shared by the target and every other dataset (null: -1)."""

    def __init__(self):
        self.codes: dict = {}

    def of(self, strings) -> np.ndarray:
        codes, values = value_codes(strings, values=True)
        table = np.array([self.codes.setdefault(v, len(self.codes)) for v in values] + [_NO_LABEL], dtype=np.int64)
        return table[codes]  # -1 indexes the appended null code


# ---------------------------------------------------------------------------------------------
# The target's evaluation rows, indexed; the best match of each input (and label) kept while streaming
# ---------------------------------------------------------------------------------------------


@dataclass
class Matches:
    """The best match kept per key (an input text, or an input text and a label): Jaccard, order read
    (earlier wins a tie), which other split and which row of it."""

    key: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    jaccard: np.ndarray = field(default_factory=lambda: np.empty(0, np.float64))
    order: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    split: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    row: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    def add(self, key, jaccard, order, split, row) -> None:
        key = np.concatenate([self.key, key])
        jaccard = np.concatenate([self.jaccard, jaccard])
        order = np.concatenate([self.order, order])
        split = np.concatenate([self.split, split])
        row = np.concatenate([self.row, row])
        best = np.lexsort((order, -jaccard, key))
        key = key[best]
        first = np.concatenate([[True], key[1:] != key[:-1]]) if key.size else np.zeros(0, bool)
        keep = best[first]
        self.key, self.jaccard, self.order, self.split, self.row = (
            key[first], jaccard[keep], order[keep], split[keep], row[keep])

    def find(self, keys) -> np.ndarray:
        """Position of each key among the kept ones, -1 where none."""
        at = np.searchsorted(self.key, keys)
        at = np.minimum(at, max(self.key.size - 1, 0))
        hit = (self.key.size > 0) & (self.key[at] == keys) if self.key.size else np.zeros(len(keys), bool)
        return np.where(hit, at, -1)


def _kept(matches: Matches, attr: str, at: np.ndarray) -> np.ndarray:
    """The kept matches' ``attr`` at positions ``at`` (anything where ``at`` is -1: masked by the caller)."""
    values = getattr(matches, attr)
    return values[np.maximum(at, 0)] if values.size else np.zeros(at.size, dtype=values.dtype)


def target_input(target: str, *, work, revision: str | None = None, configs=None):
    """The :class:`~.inputs.EvidenceInput` of a target checked against other datasets: a release folder (or Hub
    release), or a dataset folder (or Hub dataset) whose evaluation splits need no train split beside them;
    ``configs`` (``--configs``) keeps only these configs."""
    from split_builders.evidence.inputs import EvidenceInput, locate_target

    folder, is_release = locate_target(target, work=work, revision=revision)
    if is_release:  # read as every view reads a release (its data files checked against their recorded sha256)
        return EvidenceInput.from_target(str(folder), work=work, configs=configs)
    by_config: dict = {}
    for split, table, _ in _folder_tables(target, folder, Path(work) / "target-cache"):
        config, _, name = split.rpartition("/")
        by_config.setdefault(config or "default", {})[name] = table
    if configs:
        unknown = [c for c in configs if c not in by_config]
        if unknown:
            raise InvalidParameterError(f"--configs {', '.join(unknown)}: {target} has no such config (configs: "
                                        f"{', '.join(by_config)})")
        by_config = {c: by_config[c] for c in configs}
    return EvidenceInput.from_splits(by_config, where=str(target))


def input_fields(fields, table) -> list:
    """The target's input fields: its text fields (of a text type) less the target program."""
    from split_builders.evidence.audit import Audited

    return list(Audited.of(fields, table).text)


def other_label_field(label: str | None, columns, requested: str | None = None) -> str | None:
    """The label column of another dataset's split, resolved as the readers resolve a label: ``requested``
    (``--against-label-field``), else the target's label name, else the first of ``label`` / ``labels`` /
    ``gold_label`` it has (:data:`~.fields.LABEL_NAMES`); None where it has none (labels are not compared)."""
    from split_builders.evidence.fields import LABEL_NAMES

    if not label:
        return None
    if requested:
        return requested if requested in columns else None
    if label in columns:
        return label
    return next((name for name in LABEL_NAMES if name in columns), None)


def evaluation_pool(parts: dict, fields, *, where: str, against: str, label_names=None) -> tuple:
    """The evaluation rows (validation and test) of ``parts`` as one :class:`Pool` of their input fields and label:
    ``(pool, inputs, label, names_of)``, ``names_of`` the class names per label column. The one selection both
    ``--against`` and ``--against-corpus`` index; a target without evaluation splits is refused, naming ``against``."""
    evaluated = {c: {s: p for s, p in splits.items() if s in EVALUATION_SPLITS} for c, splits in parts.items()}
    evaluated = {c: s for c, s in evaluated.items() if s}
    if not evaluated:
        raise InvalidParameterError(f"{where} has no validation or test split to check against {against}")
    first = next(iter(next(iter(evaluated.values())).values())).table
    inputs = input_fields(fields, first)
    label = fields.label or fields.target
    names_of = dict(label_names or {})
    if label and fields.label_names and label == fields.label:
        names_of.setdefault(label, tuple(fields.label_names))
    names_of = {**_class_names(first.schema), **names_of}
    columns = list(dict.fromkeys([*inputs, *([label] if label and label in first.column_names else [])]))
    return Pool(evaluated, columns), inputs, label, names_of


def contamination(parts: dict, fields, others: list[str], *, work, threshold: float, revision: str | None = None,
                  against_fields=None, against_splits=None, label_names=None, where: str = "the target",
                  progress: bool = False, against_label_field: str | None = None) -> tuple[dict, object]:
    """Tiers of every evaluation row of ``parts`` (``{config: {split: Part}}``) against the datasets
    ``others``: ``(report, rows)``, ``report["against"][config][split]`` holding ``rows``, ``clean``,
    ``input_contaminated``, ``input_label_contaminated``, ``exact`` (rows whose input has an identical
    normalised input) and ``rates``, and ``rows`` a ``pyarrow.Table`` of :data:`ROW_COLUMNS`, one row per
    evaluation row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from loading_scripts.source import check_unique_ids, source_id_values
    from split_builders.progress import progress_bar

    pool, inputs, label, names_of = evaluation_pool(parts, fields, where=where, against="other datasets",
                                                    label_names=label_names)
    target_labelled = bool(label and label in pool.table.column_names)
    text_codes, texts = value_codes(examples_text(pool.table, inputs), values=True)
    labels = LabelCodes()
    row_label = (labels.of(label_strings(pool.table.column(label), names_of.get(label)))
                 if label and label in pool.table.column_names else np.full(pool.table.num_rows, _NO_LABEL))
    signatures, filled = signatures_of(texts)
    filled &= np.array([bool(t) for t in texts], dtype=bool)
    index = BandIndex(signatures, filled, threshold=threshold)
    value_set = pa.array(texts, pa.large_string())

    splits = []
    for other in others:
        splits += open_other(other, work=work, revision=revision, splits=against_splits)
    best_input, best_label = Matches(), Matches()
    exact_hit = np.zeros(len(texts), dtype=bool)  # an identical normalised input in some other dataset
    stride = np.int64(1) << np.int64(40)
    scale = np.int64(1) << np.int64(31)  # keys of an input and a label: text * scale + label (each < 2**31)
    checked, skipped = [], []
    not_classes, read_as = {}, []  # splits whose labels are numbers: not the release's classes, or read as them
    other_inputs = list(against_fields) if against_fields else inputs
    if len(other_inputs) != len(inputs):
        raise InvalidParameterError(f"--against-fields names {len(other_inputs)} column(s); the target's input "
                                    f"has {len(inputs)} ({', '.join(inputs)})")
    usable = [s for s in splits if all(c in s.columns for c in other_inputs)]
    if not usable:
        other = splits[0]
        missing = [c for c in other_inputs if c not in other.columns]
        raise InvalidParameterError(
            f"--against {other.dataset} ({other.split}) has no column {', '.join(missing)} (columns: "
            f"{', '.join(other.columns)}); name its input columns, in the order of {', '.join(inputs)}, "
            "with --against-fields")
    if against_label_field and not any(against_label_field in s.columns for s in usable):
        other = usable[0]
        raise InvalidParameterError(f"--against-label-field {against_label_field}: {other.dataset} ({other.split}) "
                                    f"has no such column (columns: {', '.join(other.columns)})")
    for number, other in enumerate(splits):
        missing = [c for c in other_inputs if c not in other.columns]
        if missing:  # a config of other columns (CURRICULUM's hypothesis-only configs): said, not read
            skipped.append({"dataset": other.dataset, "split": other.split,
                            "reason": f"no column {', '.join(missing)}"})
            continue
        other_label = other_label_field(label, other.columns, against_label_field) if target_labelled else None
        other_names, why = (class_names_of(other, other_label, names_of.get(label)) if other_label
                            else (None, None))
        if why:  # numbers that are not the release's classes: said, never compared as text
            not_classes[f"{other.dataset} ({other.split})"] = why
            other_label = None
        elif other_names is not None and other_label not in other.label_names:
            read_as.append(f"{other.dataset} ({other.split})")
        seen, id_chunks = 0, []
        where_ids = f"--against {other.dataset} ({other.split})"
        bar = progress_bar(total=None, description=f"against {other.split}", unit="row", enabled=progress)
        with bar:
            for chunk in other.batches([*other_inputs, *([other_label] if other_label else []),
                                        *(["source_id"] if "source_id" in other.columns else [])]):
                n = chunk.num_rows
                if "source_id" in chunk.column_names:  # checked as every reader checks ids
                    ids = source_id_values(chunk.column("source_id"), where_ids, first_row=seen)
                    id_chunks.append(ids)
                else:
                    ids = np.arange(seen, seen + n, dtype=np.int64)
                renamed = chunk.select(other_inputs).rename_columns(inputs)
                normalised = examples_text(renamed, inputs)
                chunk_label = (labels.of(label_strings(_class_numbers(chunk.column(other_label), other_names),
                                                       other_names))
                               if other_label else np.full(n, _NO_LABEL, dtype=np.int64))
                # exact: the same normalised input (hash lookup)
                same = np.asarray(pc.index_in(normalised, value_set=value_set).fill_null(-1)
                                  .to_numpy(zero_copy_only=False), dtype=np.int64)
                exact_rows = np.flatnonzero((same >= 0) & filled[np.maximum(same, 0)])
                t_exact, o_exact = same[exact_rows], exact_rows
                exact_hit[t_exact] = True
                # near: the chunk's distinct inputs through the index, confirmed with the exact Jaccard
                codes, values = value_codes(normalised, values=True)
                values = [v or "" for v in values]
                chunk_signatures, chunk_filled = signatures_of(values)
                chunk_filled &= np.array([bool(v) for v in values], dtype=bool)
                pairs = index.candidates(chunk_signatures, chunk_filled)
                jaccard = cross_jaccard(texts, values, pairs)
                kept = jaccard >= threshold
                pairs, jaccard = pairs[kept], jaccard[kept]
                # every chunk row of each matched distinct input
                order = np.argsort(codes, kind="stable")
                sorted_codes = codes[order]
                lo = np.searchsorted(sorted_codes, pairs[:, 1], "left")
                hi = np.searchsorted(sorted_codes, pairs[:, 1], "right")
                count = hi - lo
                t_near = np.repeat(pairs[:, 0], count)
                j_near = np.repeat(jaccard, count)
                o_near = order[np.repeat(lo, count) + np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count,
                                                                                                 count)]
                t = np.concatenate([t_exact, t_near])
                o = np.concatenate([o_exact, o_near])
                j = np.concatenate([np.ones(t_exact.size), j_near])
                read = np.int64(number) * stride + seen + o
                split_no = np.full(t.size, number, dtype=np.int64)
                best_input.add(t, j, read, split_no, ids[o])
                has_label = chunk_label[o] >= 0
                best_label.add(t[has_label] * scale + chunk_label[o][has_label], j[has_label], read[has_label],
                               split_no[has_label], ids[o][has_label])
                seen += n
                bar.update(n)
        if id_chunks:
            check_unique_ids(np.concatenate(id_chunks), where_ids)
        checked.append({"dataset": other.dataset, "split": other.split, "rows": int(seen),
                        "fields": other_inputs, "label": other_label})

    # each evaluation row's tier and match
    report_splits: dict = {}
    tables = []
    # labels compared with none of the datasets read: said, never counted as 0 input-and-label rows
    uncompared = [f"{c['dataset']} ({c['split']})" for c in checked if target_labelled and not c["label"]]
    not_compared = bool(target_labelled and checked and len(uncompared) == len(checked))
    notes = [labels_note(uncompared, all_of_them=not_compared, reasons=not_classes)] if uncompared else []
    if read_as:
        names = names_of.get(label) or ()
        notes.append(f"labels of {', '.join(read_as)} are class numbers without names: read as the release's "
                     f"classes in order ({', '.join(f'{i} {n}' for i, n in enumerate(names))})")
    for (config, split), rows in pool.rows.items():
        ids = pool.ids[(config, split)]
        text = text_codes[rows]
        valid = text >= 0
        found_input = np.where(valid, best_input.find(np.maximum(text, 0)), -1)
        with_label = (row_label[rows] >= 0) & valid
        keys = np.maximum(text, 0) * scale + np.maximum(row_label[rows], 0)
        found_label = np.where(with_label, best_label.find(keys), -1)
        use_label = found_label >= 0
        tier = np.where(use_label, 2, np.where(found_input >= 0, 1, 0))
        match_split, match_row, jaccard = (
            np.where(use_label, _kept(best_label, attr, found_label), _kept(best_input, attr, found_input))
            for attr in ("split", "row", "jaccard"))
        contaminated = tier > 0
        n = int(len(rows))
        counts = {name: int((tier == k).sum()) for k, name in enumerate(TIERS)}
        entry = {"rows": n, **counts, "exact": int((valid & exact_hit[np.maximum(text, 0)]).sum())}
        entry["rates"] = {name: round(counts[name] / n, 4) if n else 0.0 for name in TIERS}
        if not_compared:
            entry["input_label_contaminated"] = entry["rates"]["input_label_contaminated"] = None
        report_splits.setdefault(config, {})[split] = entry
        tables.append(pa.table({
            "config": pa.array([config] * n, pa.string()),
            "split": pa.array([split] * n, pa.string()),
            "source_id": pa.array(ids, pa.int64()),
            "tier": pa.array(np.asarray(TIERS, dtype=object)[tier], pa.string()),
            "match_dataset": pa.array([splits[k].dataset if c else None
                                       for k, c in zip(match_split.tolist(), contaminated.tolist())], pa.string()),
            "match_split": pa.array([splits[k].split if c else None
                                     for k, c in zip(match_split.tolist(), contaminated.tolist())], pa.string()),
            "match_id": pa.array(np.where(contaminated, match_row, 0), pa.int64(), mask=~contaminated),
            "jaccard": pa.array(np.round(np.where(contaminated, jaccard, 0.0), 6), pa.float64(), mask=~contaminated),
        }))
    report = {"threshold": threshold, "ngram": NGRAM, "num_perm": NUM_PERM, "bands": index.bands,
              "rows_per_band": index.rows, "input_fields": inputs, "label_field": label,
              **({"labels_compared": False} if uncompared else {}),
              **({"labels_note": "; ".join(notes)} if notes else {}),
              "checked": checked, **({"skipped": skipped} if skipped else {}), "against": report_splits}
    return report, pa.concat_tables(tables)


def labels_note(uncompared: list, *, all_of_them: bool, reasons: dict | None = None) -> str:
    """What the report, the terminal and the card say where labels could not be compared (``reasons``: why, by
    split, where it is not the lack of a label column)."""
    if reasons:
        where = ", ".join(f"{u} ({reasons.get(u, 'no label column')})" for u in uncompared)
        if all_of_them:
            return (f"labels not compared: {where}; input_label_contaminated is unknown, not 0: name the label column "
                    "with --against-label-field, or give class names")
        return f"labels not compared for {where}: its matches count as input-contaminated only"
    where = ", ".join(uncompared)
    if all_of_them:
        return (f"labels not compared: {where} has no label column (none named like the target's, nor label, "
                "labels or gold_label); input_label_contaminated is unknown, not 0: name it with "
                "--against-label-field")
    return f"labels not compared for {where} (no label column): its matches count as input-contaminated only"


def write_rows(rows, path) -> None:
    """``rows`` (:data:`ROW_COLUMNS`) as one Parquet file at ``path``, written beside it and moved into place."""
    import os
    import tempfile

    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        pq.write_table(rows, staging)
        os.replace(staging, path)
    finally:
        if os.path.exists(staging):
            os.remove(staging)


def format_against(report: dict) -> list[str]:
    """The terminal table of ``resplit audit TARGET --against ...``."""
    from split_builders.evidence.view import aligned

    checked = ", ".join(f"{c['dataset']} ({c['split']}, {c['rows']} rows)" for c in report["checked"])
    out = [f"input: {', '.join(report['input_fields'])}; label: {report['label_field'] or 'none'}; near-duplicate: "
           f"Jaccard >= {report['threshold']:g} of character {report['ngram']}-grams; checked against: {checked}"]
    table = []
    for config, splits in report["against"].items():
        for split, entry in splits.items():
            n = entry["rows"]
            cell = lambda count: ("not compared" if count is None else  # noqa: E731
                                  f"{count} ({100 * count / n:.1f}%)" if n else str(count))
            grams = [cell(entry["ngram_overlap"])] if "ngram_overlap" in entry else []
            table.append([config, split, str(n), *(cell(entry[t]) for t in TIERS), cell(entry["exact"]), *grams])
    word = report.get("corpus", {}).get("word_ngram")
    out += aligned(["config", "split", "rows", "clean", "input", "input+label", "exact input",
                    *([f"{word}-gram"] if word else [])], table)
    out += [f"not read: {s['dataset']} ({s['split']}): {s['reason']}" for s in report.get("skipped", [])]
    return out + ([report["labels_note"]] if report.get("labels_note") else [])
