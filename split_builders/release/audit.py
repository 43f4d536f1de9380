"""The leakage audit: per config and evaluation split, the rows that have a match in the same config's train split.

For every validation and test row, the audit asks whether train holds

1. an **exact** duplicate: the same text after normalisation (Unicode NFKC, lower case, every run of
   whitespace one space, trimmed) of the whole example, i.e. of every audited text field and the
   target program joined;
2. a **near-duplicate**: a train row whose set of character n-grams (``NGRAM`` = 5, of the same
   normalised text) has a Jaccard similarity of at least ``threshold`` (0.8 by default) with the row's.
   Candidates come from ``datasketch``'s MinHash (``NUM_PERM`` permutations) and MinHashLSH, with its
   bands chosen so that a pair exactly at the threshold becomes a candidate with probability
   >= ``COLLISION_AT_THRESHOLD``; a candidate pair of a text some config evaluates and one some config
   trains on, whose MinHash estimate is not four standard errors below the threshold, is confirmed with
   the exact Jaccard of the n-gram sets.
   An exact duplicate has Jaccard 1, so it is a near-duplicate too: ``exact <= near_duplicate``;
3. the same value of each text field (``shared.<field>``, e.g. the same premise), and of the release's
   group field (``--group-field``) when it records one: the value as it is, byte for byte, the
   equality a grouped split keeps within one split;
4. the same target program (``program``) where the rows are semantic parsing examples (the program
   field the release records: likelihood's ``--target-field``, TMCD's ``target``).

The work is done on whole columns, once per release: the rows of every config are reduced to the
distinct rows (a row repeats across configs), each distinct text is normalised, shingled and
MinHashed once (datasketch's MinHash, computed for a chunk of texts at a time on whole columns), one
LSH index is built over the texts of each group of configs that share rows (all of them when every
config splits the same rows; one per phenomenon in CURRICULUM) and its candidate pairs confirmed once;
each config then only marks its train rows (numpy) and counts its evaluation rows. The result is
deterministic (fixed hash functions and MinHash seed).

:func:`audit_build` audits the rows and configs a build is about to release (the card and the
README's YAML record it), :func:`audit_release` a release folder, :func:`audit_splits` any dataset with
train / validation / test splits; all three go through :func:`audit`, so ``resplit audit`` on a
release reproduces the numbers of its card.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import numpy as np

from split_builders.api import Fields, check_number
from split_builders.errors import InvalidParameterError, InvalidReleaseError

DEFAULT_THRESHOLD = 0.8
NGRAM = 5
NUM_PERM = 64
MINHASH_SEED = 1
MINHASH_SCHEME = "affine32"
COLLISION_AT_THRESHOLD = 0.97
EVALUATION_SPLITS = ("validation", "test")
EXAMPLES = 3
LABEL_NAMES = ("label", "labels", "gold_label")
CATEGORICAL_VALUES = 100  # a string column with at most this many distinct values ...
CATEGORICAL_SHARE = 0.10  # ... that are at most this share of its rows is a category, not text
# Columns of these names are text whatever their values (a hypothesis template repeated on every row is still text).
TEXT_NAMES = ("premise", "hypothesis", "question", "passage", "context", "sentence", "sentence1", "sentence2", "text",
              "input", "query", "utterance", "document", "claim", "evidence", "answer_text")
SHARING_NOTE = 0.10  # an ungrouped build names a field shared by at least this share of a test split
_CHUNK = 20_000  # distinct texts shingled and MinHashed per batch (bounds memory)
_MEDIUM_BUCKET = 32  # an LSH bucket with more keys is compared block by block, not pair by pair
_BLOCK_BYTES = 1 << 25  # signature comparisons per block of a large bucket
_PERMUTATION_BYTES = 1 << 25  # permuted shingle hashes held at once while MinHashing a chunk


class NoTextError(InvalidParameterError):
    """The rows have no column the audit can compare as text."""


def check_threshold(value) -> float:
    """The near-duplicate threshold: a Jaccard similarity in (0, 1]."""
    return check_number(value, "--threshold", minimum=0, maximum=1, exclusive=("minimum",))


def lsh_parameters(threshold: float, num_perm: int = NUM_PERM, *, collision: float = COLLISION_AT_THRESHOLD):
    """``(bands, rows)`` of the LSH index: the longest bands (fewest candidates below the threshold)
    for which a pair at exactly ``threshold`` collides in some band with probability >= ``collision``
    (``1 - (1 - t**r)**b``); with as few bands as that needs. Falls back to one-row bands, as many as
    ``num_perm`` allows, where no choice reaches ``collision``."""
    for rows in range(num_perm // 2, 0, -1):
        hit = threshold ** rows
        if hit >= 1.0:
            return 2, rows
        if hit <= 0.0:
            continue
        bands = max(2, math.ceil(math.log(1.0 - collision) / math.log(1.0 - hit)))
        if bands * rows <= num_perm:
            return bands, rows
    return num_perm, 1


def collision_probability(jaccard: float, bands: int, rows: int) -> float:
    return 1.0 - (1.0 - jaccard ** rows) ** bands


# ---------------------------------------------------------------------------------------------
# Which columns are audited
# ---------------------------------------------------------------------------------------------


@dataclass
class AuditFields:
    """The columns the audit compares: ``text`` (each counted as ``shared.<field>``, and joined with
    ``program`` into the example compared for exact and near-duplicates), the target ``program`` and
    the ``group`` field (``shared.<group>``)."""

    text: list
    program: str | None = None
    group: str | None = None

    @property
    def example(self) -> list:
        """The fields joined into the whole example (exact and near-duplicates)."""
        return [*self.text, *([self.program] if self.program else [])]

    @property
    def shared(self) -> list:
        """The fields counted as ``shared.<field>``."""
        return [*self.text, *([self.group] if self.group and self.group not in self.text else [])]

    @property
    def columns(self) -> list:
        return list(dict.fromkeys([*self.example, *([self.group] if self.group else [])]))


def is_text_type(kind) -> bool:
    """A string column, or a (nested) list of strings (a CheckList test case's examples)."""
    import pyarrow as pa

    while pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def recorded_names(record: dict, *paths) -> list:
    """The column names a release's provenance gives at ``paths`` (dotted), in order, without repeats."""
    names = []
    for path in paths:
        value = record
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        values = value if isinstance(value, (list, tuple)) else [value]
        names += [v for v in values if isinstance(v, str) and v]
    return list(dict.fromkeys(names))


def method_signal_columns(record: dict) -> tuple:
    if not record.get("method"):
        return ()
    from split_builders.api import registry

    method = registry().get(record.get("method"))
    return tuple(method.signal_columns) if method is not None else ()


def infer_fields(pool, record: dict | None = None, *, fields=None, where: str = "the release") -> AuditFields:
    """The audited columns of ``pool`` (a ``pyarrow.Table`` of the distinct rows).

    ``fields`` (``--fields``) names the text fields; otherwise the method's declaration does
    (``resplit.fields``: :class:`~split_builders.api.Fields`), or for older releases the provenance
    where it records them (likelihood's prompt and query fields, PVI's text fields), and otherwise they are the
    string columns (and lists of strings) less ``source_id``, the label columns, the method's signal
    columns, the target program and the group field, and less categories (a column with few distinct
    values, such as TMCD's ``variant`` or a string label, or of serialised JSON), except that a column
    named as text usually is (``TEXT_NAMES``: premise, hypothesis, question, ...) always counts. The program is the field the provenance
    names as the target (likelihood's ``--target-field``; ``target`` where the signal is over
    programs); the group field is ``parameters.group_field`` when it is a column.
    """
    from split_builders.errors import FieldError

    record = record or {}
    columns = [c for c in pool.column_names if c != "__rows__"]
    present = lambda names: [n for n in names if n in columns]  # noqa: E731
    program = next(iter(present(recorded_names(record, "signal.fields.target", "parameters.target_field"))), None)
    if program is None and "target" in columns and (recorded_names(record, "signal.target_language")
                                                    or isinstance((record.get("signal") or {}).get("target_language"), str)):
        program = "target"
    group = next(iter(present(recorded_names(record, "parameters.group_field"))), None)
    if fields:
        texts = [c for c in columns if is_text_type(pool.schema.field(c).type)]
        for name in fields:
            if name not in texts:
                raise FieldError(name, texts, role="text", source=where)
        text = [f for f in dict.fromkeys(fields) if f != program]
        return AuditFields(text, program, group)
    declared = Fields.from_record(record)
    if declared is not None:  # the method's own declaration (resplit.fields)
        program = declared.target if declared.target in columns else None
        group = declared.group if declared.group in columns else group
        text = [f for f in present(declared.text) if f != program and is_text_type(pool.schema.field(f).type)]
        if text:
            return AuditFields(text, program, group)
    text = present(recorded_names(record, "signal.fields.prompt", "signal.fields.query", "signal.text_fields",
                          "parameters.text_fields", "parameters.prompt_field", "parameters.query_field"))
    text = [f for f in text if f != program and is_text_type(pool.schema.field(f).type)]
    if not text:
        excluded = {"source_id", *LABEL_NAMES, *method_signal_columns(record), program, group,
                    *recorded_names(record, "signal.fields.label", "signal.label_field", "parameters.label_field")}
        text = [c for c in columns if c not in excluded and is_text_type(pool.schema.field(c).type)
                and (c in TEXT_NAMES or not _categorical(pool.column(c)))]
    if not text:
        raise NoTextError(f"{where} has no text field to audit (columns: {', '.join(columns) or 'none'}); "
                          "name them with --fields a,b")
    return AuditFields(text, program, group)


def _categorical(column) -> bool:
    """Whether a string column holds categories rather than text: few distinct values (at most
    ``CATEGORICAL_VALUES``, each on ``1 / CATEGORICAL_SHARE`` rows on average), or serialised JSON
    (every value an object, a list or ``null``: metadata)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return False
    filled = len(column) - column.null_count
    if not filled:
        return True
    values = pc.unique(column).drop_null()
    if len(values) <= CATEGORICAL_VALUES and len(values) <= CATEGORICAL_SHARE * filled:
        return True
    return bool(pc.all(pc.match_substring_regex(values, r"^\s*(\{|\[|null\s*$)")).as_py())


# ---------------------------------------------------------------------------------------------
# The rows: parts of base tables, reduced to distinct rows
# ---------------------------------------------------------------------------------------------


@dataclass
class Part:
    """The rows of one split of one config: rows ``rows`` of ``table`` (all of them when None), and
    their identities ``ids`` (``source_id``; the row number within the split where there is none)."""

    table: object
    rows: np.ndarray | None = None
    ids: np.ndarray | None = None

    def __post_init__(self):
        n = self.table.num_rows if self.rows is None else len(self.rows)
        if self.ids is None:
            if "source_id" in self.table.column_names:
                column = self.table.column("source_id")
                ids = np.asarray(column.to_numpy(), dtype=np.int64)
                self.ids = ids if self.rows is None else ids[self.rows]
            else:
                self.ids = np.arange(n, dtype=np.int64)
        self.ids = np.asarray(self.ids, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)


def as_text(column):
    """A column as one string per row: lists of strings (at any depth) joined by newlines."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return column.cast(pa.large_string())
    while pa.types.is_list(column.type.value_type) or pa.types.is_large_list(column.type.value_type):
        inner = column.values
        offsets = np.asarray(inner.offsets)[np.asarray(column.offsets)]
        column = pa.LargeListArray.from_arrays(pa.array(offsets.astype(np.int64)), inner.values,
                                               mask=column.is_null())
    return pc.binary_join(column, "\n").cast(pa.large_string())


def _base_table(table, rows, columns):
    """``table`` restricted to ``rows`` and the ``columns`` it has, texts as strings."""
    import pyarrow as pa

    table = table if rows is None else table.take(pa.array(rows, type=pa.int64()))
    arrays, names = [], []
    for name in columns:
        if name in table.column_names:
            column = table.column(name)
            arrays.append(as_text(column) if is_text_type(column.type) else column.combine_chunks())
            names.append(name)
    if not names:  # keep the row count
        return pa.table({"__rows__": pa.nulls(table.num_rows, pa.int8())})
    return pa.table(arrays, names=names)


def _distinct(values) -> np.ndarray:
    """The sorted distinct values of an int64 array (a sort: numpy 2's ``np.unique`` of many distinct
    integers, without ``return_*``, is a hash table many times slower)."""
    values = np.sort(np.asarray(values, dtype=np.int64).reshape(-1))
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if values.size else values


def value_codes(column, *, values: bool = False):
    """One int64 code per row, equal for equal values (nulls: -1), numbered in order of first
    appearance; with ``values``, also the distinct values (code ``k`` is ``values[k]``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = pc.dictionary_encode(column)
    codes = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    return (codes, encoded.dictionary.to_pylist()) if values else codes


def _combined_codes(table) -> np.ndarray:
    """One code per row, equal exactly when every column is equal."""
    key = np.zeros(table.num_rows, dtype=np.int64)
    for name in table.column_names:
        codes = value_codes(table.column(name)) + 1
        key = np.unique(key * (codes.max(initial=0) + 1) + codes, return_inverse=True)[1].reshape(-1)
    return key


class Pool:
    """The distinct rows of every part, and where each part's rows are among them."""

    def __init__(self, parts: dict, columns: list):
        import pyarrow as pa

        bases, positions = {}, {}
        tables = []
        total = 0
        for config, splits in parts.items():
            for split, part in splits.items():
                key = id(part.table)
                if key not in bases:
                    bases[key] = (part.table, [])
                bases[key][1].append((config, split, part))
        for key, (table, members) in bases.items():
            used = [m[2].rows for m in members]
            rows = None if any(r is None for r in used) else _distinct(np.concatenate(used))
            tables.append(_base_table(table, rows, columns))
            for config, split, part in members:
                local = (np.arange(table.num_rows, dtype=np.int64) if part.rows is None
                         else np.asarray(part.rows, dtype=np.int64))
                if rows is not None:
                    local = np.searchsorted(rows, local)
                positions[(config, split)] = total + local
            total += tables[-1].num_rows
        allrows = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
        self.columns_of = {}
        for key, (table, members) in bases.items():
            for config, split, _ in members:
                self.columns_of.setdefault(config, set()).update(c for c in columns if c in table.column_names)
        key = _combined_codes(allrows)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # pool rows in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        self.table = allrows.take(pa.array(first[order], type=pa.int64()))
        inverse = rank[inverse.reshape(-1)]
        self.rows = {where: inverse[at] for where, at in positions.items()}
        self.ids = {(config, split): part.ids for config, splits in parts.items() for split, part in splits.items()}


# ---------------------------------------------------------------------------------------------
# Normalised texts, shingles, MinHash and LSH
# ---------------------------------------------------------------------------------------------


def normalise(column):
    """Unicode NFKC, lower case, every run of whitespace one space, trimmed (Arrow kernels)."""
    import pyarrow.compute as pc

    column = pc.utf8_lower(pc.utf8_normalize(column, form="NFKC"))
    return pc.utf8_trim_whitespace(pc.replace_substring_regex(column, r"[\s\p{Z}]+", " "))


def _examples_text(table, names):
    """The normalised whole example of every row: the fields joined by newlines (nulls left out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [normalise(as_text(table.column(n))) for n in names if n in table.column_names]
    if not columns:
        return pa.nulls(table.num_rows, pa.large_string())
    if len(columns) == 1:
        return columns[0]
    return pc.binary_join_element_wise(*columns, pa.scalar("\n", pa.large_string()), null_handling="skip")


_PRIME = np.uint64(0x100000001B3)


def shingle_hashes(texts: list, n: int = NGRAM):
    """The 32-bit hashes of the character ``n``-grams of each text (a text shorter than ``n`` is one
    shingle; an empty text has none), as one array and the offsets of each text's hashes.

    Whole columns: the code points of all texts at once, a polynomial hash of every ``n`` consecutive
    ones (array slices), the splitmix64 finaliser, then the hashes of the windows inside a text kept."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    points = np.frombuffer("".join(texts).encode("utf-32-le"), dtype="<u4").astype(np.uint64) + np.uint64(1)
    points = np.concatenate([points, np.zeros(n, dtype=np.uint64)])  # short texts are padded with zeros
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    windows = points.size - n + 1
    value = np.zeros(windows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(n):
            value = value * _PRIME + points[j:j + windows]
    owner = np.repeat(np.arange(len(texts)), counts)
    position = np.arange(offsets[-1], dtype=np.int64) - offsets[owner] + starts[owner]
    value = value[position]
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    if short.size:  # the one shingle of a short text: its own code points, zeros after them
        for k in short:
            code = np.uint64(0)
            with np.errstate(over="ignore"):
                for j in range(n):
                    code = code * _PRIME + (points[starts[k] + j] if j < lengths[k] else np.uint64(0))
            value[offsets[k]] = code
    with np.errstate(over="ignore"):
        value ^= value >> np.uint64(30)
        value *= np.uint64(0xBF58476D1CE4E5B9)
        value ^= value >> np.uint64(27)
        value *= np.uint64(0x94D049BB133111EB)
        value ^= value >> np.uint64(31)
    return (value >> np.uint64(32)).astype(np.uint32), offsets


def _fmix32(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser (``fmix32``) of each value: the bijection datasketch's
    ``affine32`` scheme applies to every input hash before its permutations."""
    with np.errstate(over="ignore"):
        values = values ^ (values >> np.uint32(16))
        values *= np.uint32(0x85EBCA6B)
        values ^= values >> np.uint32(13)
        values *= np.uint32(0xC2B2AE35)
        values ^= values >> np.uint32(16)
    return values


def minhash_signatures(values: np.ndarray, offsets: np.ndarray, permutations) -> np.ndarray:
    """The MinHash signature of each text whose shingle hashes are ``values[offsets[k]:offsets[k + 1]]``
    (as :func:`shingle_hashes` returns them): one uint32 row per text, equal to what datasketch's
    ``MinHash(scheme="affine32")`` with these ``permutations`` (its ``(a, b)``) holds after
    ``update_batch`` of the text's hashes (``hashfunc=operator.index``). An empty text's row is zeros.

    Whole columns: each hash is finalised once (:func:`_fmix32`), then for a block of permutations
    at a time (bounded memory) ``a * h + b`` modulo 2**32 of every hash and the minimum over each
    text's hashes (``np.minimum.reduceat`` over the non-empty texts' starts)."""
    a, b = (np.asarray(p, dtype=np.uint32) for p in permutations)
    offsets = np.asarray(offsets, dtype=np.int64)
    signatures = np.zeros((len(offsets) - 1, a.size), dtype=np.uint32)
    filled = np.flatnonzero(np.diff(offsets) > 0)
    if not filled.size:
        return signatures
    hashed = _fmix32(np.asarray(values, dtype=np.uint32))
    starts = offsets[filled]
    block = int(np.clip(_PERMUTATION_BYTES // (4 * hashed.size), 1, a.size))
    work = np.empty((block, hashed.size), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for first in range(0, a.size, block):
            k = slice(first, min(first + block, a.size))
            part = work[: k.stop - k.start]
            np.multiply(a[k, None], hashed[None, :], out=part)
            np.add(part, b[k, None], out=part)
            signatures[filled, k] = np.minimum.reduceat(part, starts, axis=1).T
    return signatures


def minhash_lsh(texts: list, *, threshold: float, num_perm: int = NUM_PERM, progress: bool = False):
    """The MinHash signature of every text (rows of a uint32 matrix) and the MinHashLSH index over
    the non-empty ones (keys: positions in ``texts``).

    The signatures are datasketch's ``MinHash`` (``NUM_PERM`` permutations, ``MINHASH_SEED``, scheme
    ``affine32``) of each text's shingle hashes, taken as they are (the shingles are hashed already by
    :func:`shingle_hashes`), computed a chunk of ``_CHUNK`` texts at a time on whole columns
    (:func:`minhash_signatures`, with the permutations of that ``MinHash``). Each is inserted into
    datasketch's ``MinHashLSH`` through one ``MinHash`` that carries the row: the index keeps each
    text's band hashes, not the object."""
    from datasketch import MinHash, MinHashLSH

    from split_builders.progress import progress_bar

    bands, rows = lsh_parameters(threshold, num_perm)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, params=(bands, rows))
    carrier = MinHash(num_perm=num_perm, seed=MINHASH_SEED, hashfunc=operator.index, scheme=MINHASH_SCHEME)
    signatures = np.zeros((len(texts), num_perm), dtype=np.uint32)
    bar = progress_bar(total=len(texts), description="audit: MinHash", unit="text",
                       enabled=progress and len(texts) > 5 * _CHUNK)
    with bar, lsh.insertion_session(buffer_size=_CHUNK) as session:
        for start in range(0, len(texts), _CHUNK):
            values, offsets = shingle_hashes(texts[start:start + _CHUNK])
            chunk = minhash_signatures(values, offsets, carrier.permutations)
            signatures[start:start + len(chunk)] = chunk
            for k in (start + np.flatnonzero(np.diff(offsets) > 0)).tolist():
                carrier.hashvalues = signatures[k]
                session.insert(k, carrier, check_duplication=False)
            bar.update(len(offsets) - 1)
    return signatures, lsh


def _estimate_margin(threshold: float, num_perm: int) -> float:
    """How far below the threshold a MinHash estimate may fall and the pair still be checked exactly:
    four standard errors at the threshold."""
    return max(4.0 * math.sqrt(threshold * (1.0 - threshold) / num_perm), 2.0 / num_perm)


def _candidate_pairs(lsh, signatures, *, floor: float, left=None, right=None) -> np.ndarray:
    """Pairs ``(u, v)``, ``u < v``, of keys that share a bucket in some band of the index (read through
    datasketch's storage interface: ``itemcounts`` and ``get`` of each band's hash table) and whose
    MinHash estimate is at least ``floor``; with ``left`` / ``right`` (a boolean per key), only pairs
    with one side in ``left`` and the other in ``right`` (evaluation and train rows somewhere).

    Sorted, without repeats. A bucket is compared in blocks (bounded memory); a bucket of templated
    texts can hold thousands of keys whose pairs are mostly below the threshold, so its pairs are
    never all materialised."""
    small, medium, medium_sizes, large = [], [], [], []
    for table in lsh.hashtables:
        counts = table.itemcounts()
        sizes = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
        shared = np.flatnonzero(sizes >= 2)
        if not shared.size:
            continue
        buckets = list(counts)
        for at in shared.tolist():
            members = table.get(buckets[at])
            if sizes[at] == 2:
                small.extend(members)
            elif sizes[at] <= _MEDIUM_BUCKET:
                medium.extend(members)
                medium_sizes.append(sizes[at])
            else:
                large.append(np.sort(np.fromiter(members, dtype=np.int64, count=len(members))))
    n = np.int64(len(signatures))
    pairs = [np.asarray(small, dtype=np.int64).reshape(-1, 2)]
    medium, medium_sizes = np.asarray(medium, dtype=np.int64), np.asarray(medium_sizes, dtype=np.int64)
    starts = np.cumsum(medium_sizes) - medium_sizes
    for size in np.unique(medium_sizes).tolist():  # the buckets of one size as rows of a matrix
        members = medium[starts[medium_sizes == size, None] + np.arange(size)]
        u, v = np.triu_indices(size, 1)
        pairs.append(np.stack([members[:, u].reshape(-1), members[:, v].reshape(-1)], axis=1))
    pairs = np.concatenate(pairs)
    u, v = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    keys = _distinct(u * n + v)  # a pair sharing buckets in several bands once
    u, v = keys // n, keys % n
    if left is not None:
        wanted = (left[u] & right[v]) | (left[v] & right[u])
        u, v = u[wanted], v[wanted]
    keep = np.zeros(len(u), dtype=bool)
    for start in range(0, len(u), 200_000):
        a, b = u[start:start + 200_000], v[start:start + 200_000]
        keep[start:start + len(a)] = (signatures[a] == signatures[b]).mean(axis=1) >= floor
    keys = [u[keep] * n + v[keep]]
    for members in large:
        keys.append(_bucket_pairs(members, signatures, floor=floor, left=left, right=right))
    keys = _distinct(np.concatenate(keys))
    return np.stack([keys // n, keys % n], axis=1)


def _bucket_pairs(members, signatures, *, floor: float, left=None, right=None) -> np.ndarray:
    """The pairs of one large bucket with a MinHash estimate >= ``floor``, compared block by block
    (each of ``rows`` against every one of ``columns``: evaluation against train keys when masks are
    given), as keys ``u * n + v`` with ``u < v``."""
    rows = members if left is None else members[left[members]]
    columns = members if right is None else members[right[members]]
    n = np.int64(len(signatures))
    if not rows.size or not columns.size:
        return np.empty(0, dtype=np.int64)
    against = signatures[columns]
    block = max(1, _BLOCK_BYTES // (columns.size * signatures.shape[1]))
    out = []
    for start in range(0, rows.size, block):
        mine = rows[start:start + block]
        estimate = (signatures[mine][:, None, :] == against[None, :, :]).mean(axis=2)
        i, j = np.nonzero(estimate >= floor)
        u, v = mine[i], columns[j]
        different = u != v
        u, v = u[different], v[different]
        out.append(np.minimum(u, v) * n + np.maximum(u, v))
    return np.concatenate(out)


def exact_jaccard(texts: list, pairs) -> np.ndarray:
    """The exact Jaccard similarity of the character n-gram sets of each pair of ``texts``: the
    texts' shingle sets as rows of a binary sparse matrix, the pairs' intersections as the row sums
    of elementwise products (scipy), in chunks."""
    from scipy import sparse

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    involved = _distinct(pairs.reshape(-1))
    values, offsets = shingle_hashes([texts[k] for k in involved])
    columns = np.unique(values, return_inverse=True)[1].reshape(-1)
    rows = np.repeat(np.arange(involved.size), np.diff(offsets))
    matrix = sparse.csr_matrix((np.ones(values.size, dtype=np.int32), (rows, columns)),
                               shape=(involved.size, int(columns.max(initial=-1)) + 1))
    matrix.sum_duplicates()
    matrix.data[:] = 1  # sets, not bags
    matrix.sort_indices()
    sizes = np.diff(matrix.indptr)
    u, v = np.searchsorted(involved, pairs[:, 0]), np.searchsorted(involved, pairs[:, 1])
    common = np.zeros(len(pairs), dtype=np.int64)
    for start in range(0, len(pairs), 200_000):
        a, b = u[start:start + 200_000], v[start:start + 200_000]
        common[start:start + len(a)] = np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).reshape(-1)
    return common / np.maximum(sizes[u] + sizes[v] - common, 1)


def near_duplicate_pairs(texts: list, *, threshold: float, num_perm: int = NUM_PERM, progress: bool = False,
                         left=None, right=None, groups=None):
    """Pairs of ``texts`` whose character n-gram sets have a Jaccard similarity >= ``threshold``:
    ``(u, v, jaccard, search)`` with ``u < v`` (positions in ``texts``), from the LSH candidates, each
    confirmed with the exact Jaccard. Candidates whose MinHash estimate is more than four standard
    errors below the threshold are dropped before the exact check. ``left`` / ``right`` (booleans per
    text) keep only pairs of a ``left`` text and a ``right`` one (evaluation and train rows).

    ``groups`` (an integer per text, :func:`_text_groups`) keeps only pairs within one group: each group
    is searched on its own, with its own LSH index (whose memory, a few KiB per text, is then bounded by
    the largest group), and a group without both a ``left`` and a ``right`` text is not searched."""
    if groups is not None:
        return _grouped_pairs(texts, np.asarray(groups), threshold=threshold, num_perm=num_perm,
                              progress=progress, left=left, right=right)
    signatures, lsh = minhash_lsh(texts, threshold=threshold, num_perm=num_perm, progress=progress)
    bands, rows = lsh.b, lsh.r
    pairs = _candidate_pairs(lsh, signatures, floor=threshold - _estimate_margin(threshold, num_perm),
                             left=left, right=right)
    del lsh
    jaccard = exact_jaccard(texts, pairs)
    found = jaccard >= threshold
    return pairs[found, 0], pairs[found, 1], jaccard[found], {"candidates": int(len(pairs)), "bands": bands,
                                                               "rows_per_band": rows}


def _grouped_pairs(texts: list, groups: np.ndarray, *, threshold: float, num_perm: int, progress: bool,
                   left=None, right=None):
    """:func:`near_duplicate_pairs` group by group (in the order of the group numbers), the pairs put
    back into positions of ``texts``; ``search["candidates"]`` sums the groups'."""
    bands, rows = lsh_parameters(threshold, num_perm)
    found, candidates = [], 0
    order = np.argsort(groups, kind="stable")  # each group's texts in their order in ``texts``
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    for members in np.split(order, bounds):
        if members.size < 2 or (left is not None and not left[members].any()) \
                or (right is not None and not right[members].any()):
            continue
        u, v, jaccard, search = near_duplicate_pairs(
            [texts[k] for k in members.tolist()], threshold=threshold, num_perm=num_perm, progress=progress,
            left=None if left is None else left[members], right=None if right is None else right[members])
        found.append((members[u], members[v], jaccard))
        candidates += search["candidates"]
    u, v, jaccard = (np.concatenate(parts) for parts in zip(*found)) if found else \
        (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
    return u, v, jaccard, {"candidates": candidates, "bands": bands, "rows_per_band": rows}


def _text_groups(pool, columns) -> np.ndarray:
    """A group number per distinct text (``columns.texts``; ``columns.text`` numbers each pool row's): the connected
    components of the graph that links each text to the configs that hold it. A near-duplicate counts
    only between an evaluation row and a train row of one config, so two texts of different groups are
    never compared (CURRICULUM's phenomena share no rows: each is its own group)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    text, n = columns.text, len(columns.texts)
    configs = {config: k for k, config in enumerate(dict.fromkeys(config for config, _ in pool.rows))}
    links = []
    for (config, _), rows in pool.rows.items():
        held = _distinct(text[rows])
        held = held[held >= 0]
        links.append(np.stack([held, np.full(held.size, n + configs[config], dtype=np.int64)]))
    links = np.concatenate(links, axis=1) if links else np.zeros((2, 0), dtype=np.int64)
    size = n + len(configs)
    graph = coo_matrix((np.ones(links.shape[1], dtype=np.int8), (links[0], links[1])), shape=(size, size))
    return connected_components(graph, directed=False)[1][:n].astype(np.int64)


# ---------------------------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------------------------


@dataclass
class _Columns:
    """Per distinct row: its normalised text's number, its codes per shared field and program."""

    text: np.ndarray
    texts: list
    shared: dict = field(default_factory=dict)
    program: np.ndarray | None = None


def audit(parts: dict, fields: AuditFields | None = None, *, record: dict | None = None, requested=None,
          threshold: float = DEFAULT_THRESHOLD, examples: int = EXAMPLES, progress: bool = False,
          where: str = "the release") -> dict:
    """The leakage audit of ``parts`` (``{config: {split: Part}}``, each config with a ``train`` part).

    Returns ``{"threshold", "ngram", "num_perm", "bands", "rows_per_band", "method", "fields",
    "program_field", "group_field", "configs": {config: {split: {"rows", "exact", "near_duplicate",
    "shared": {field: n}, "program" (with a program field), "rates": {...}, "examples": {...}}}}}``
    for the evaluation splits (validation, test) of every config.
    """
    threshold = check_threshold(threshold)
    configs = evaluated_configs(parts, where=where, purpose="audit")
    candidates = candidate_text_columns(configs, record, fields)
    pool = Pool(configs, candidates)
    if fields is None:
        fields = infer_fields(pool.table, record, fields=requested, where=where)
    columns = _columns(pool.table, fields)
    # only pairs of a text evaluated somewhere and a text trained on somewhere can count
    evaluated, trained = (np.zeros(len(columns.texts), dtype=bool) for _ in range(2))
    for (config, split), rows in pool.rows.items():
        texts = columns.text[rows]
        (trained if split == "train" else evaluated)[texts[texts >= 0]] = True
    near_u, near_v, near_j, search = near_duplicate_pairs(columns.texts, threshold=threshold, progress=progress,
                                                          left=evaluated, right=trained,
                                                          groups=_text_groups(pool, columns))
    bands, rows_per_band = search["bands"], search["rows_per_band"]
    report = {
        "threshold": threshold, "ngram": NGRAM, "num_perm": NUM_PERM, "bands": bands, "rows_per_band": rows_per_band,
        "collision_probability_at_threshold": round(collision_probability(threshold, bands, rows_per_band), 4),
        "fields": list(fields.text), "program_field": fields.program, "group_field": fields.group,
        "method": method_description(threshold, fields),
        "distinct_rows": int(pool.table.num_rows), "distinct_texts": len(columns.texts),
        "checked_pairs": search["candidates"], "near_duplicate_pairs": int(len(near_u)),
        "configs": {},
    }
    # both directions, sorted by the first: a text's near-duplicates are one slice
    u = np.concatenate([near_u, near_v])
    v = np.concatenate([near_v, near_u])
    j = np.concatenate([near_j, near_j])
    order = np.lexsort((v, u))
    near = (u[order], v[order], j[order])
    for config, splits in configs.items():
        present = pool.columns_of.get(config, set())
        report["configs"][config] = {
            split: _audit_split(pool, columns, fields, near, config, split, present, examples)
            for split in EVALUATION_SPLITS if split in splits}
    return report


def candidate_text_columns(parts, record, fields) -> list:
    """The columns the pool of distinct rows keeps: the audited ones when they are known, else every
    text column and the recorded program and group fields."""
    if fields is not None:
        return fields.columns
    recorded = recorded_names(record or {}, "parameters.group_field", "signal.fields.target", "parameters.target_field")
    names = []
    for splits in parts.values():
        for part in splits.values():
            schema = part.table.schema
            names += [c for c in schema.names if c not in names and c != "source_id"
                      and (is_text_type(schema.field(c).type) or c in recorded or c == "target")]
    return names


def _columns(table, fields: AuditFields) -> _Columns:
    text, texts = value_codes(_examples_text(table, fields.example), values=True)
    columns = _Columns(text, texts)
    for name in fields.shared:
        if name in table.column_names:
            columns.shared[name] = value_codes(table.column(name))
    if fields.program and fields.program in table.column_names:
        columns.program = value_codes(table.column(fields.program))
    return columns


def _marks(codes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A boolean per code: whether one of ``rows`` has it."""
    marked = np.zeros(int(codes.max(initial=-1)) + 2, dtype=bool)
    values = codes[rows]
    marked[values[values >= 0]] = True
    return marked


def _hits(codes: np.ndarray, marked: np.ndarray, rows: np.ndarray) -> np.ndarray:
    values = codes[rows]
    return (values >= 0) & marked[np.maximum(values, 0)]


def _audit_split(pool, columns, fields, near, config, split, present, examples) -> dict:
    train, rows = pool.rows[(config, "train")], pool.rows[(config, split)]
    train_ids, ids = pool.ids[(config, "train")], pool.ids[(config, split)]
    n = int(rows.size)
    in_train = _marks(columns.text, train)
    exact = _hits(columns.text, in_train, rows)
    near_u, near_v, near_j = near
    reached = in_train.copy()
    linked = in_train[near_v] if near_v.size else np.zeros(0, dtype=bool)
    reached[near_u[linked]] = True
    near_hit = _hits(columns.text, reached, rows)
    entry = {"rows": n, "exact": int(exact.sum()), "near_duplicate": int(near_hit.sum()), "shared": {}}
    masks = {"exact": exact, "near_duplicate": near_hit & ~exact}
    for name, codes in columns.shared.items():
        if name not in present:
            continue
        hit = _hits(codes, _marks(codes, train), rows)
        entry["shared"][name] = int(hit.sum())
        masks[f"shared.{name}"] = hit
    if columns.program is not None and fields.program in present:
        hit = _hits(columns.program, _marks(columns.program, train), rows)
        entry["program"] = int(hit.sum())
        masks["program"] = hit
    rate = lambda count: round(count / n, 4) if n else 0.0  # noqa: E731
    entry["rates"] = {"exact": rate(entry["exact"]), "near_duplicate": rate(entry["near_duplicate"]),
                      "shared": {k: rate(v) for k, v in entry["shared"].items()}}
    if "program" in entry:
        entry["rates"]["program"] = rate(entry["program"])
    entry["examples"] = {kind: _examples(kind, mask, pool, columns, fields, near, in_train, rows, ids, train,
                                         train_ids, examples)
                         for kind, mask in masks.items()}
    return entry


def _examples(kind, mask, pool, columns, fields, near, in_train, rows, ids, train, train_ids, limit) -> list:
    """Up to ``limit`` evaluation rows of ``mask`` (in the split's order) with the train row that
    matches them (the lowest ``source_id`` among the best matches)."""
    out = []
    near_u, near_v, near_j = near
    for at in np.flatnonzero(mask)[:limit]:
        row = rows[at]
        example = {"source_id": int(ids[at])}
        if kind in ("exact", "near_duplicate"):
            own = columns.text[row]
            if kind == "exact":
                partners, similarity = np.array([own]), 1.0
            else:
                lo, hi = np.searchsorted(near_u, own, "left"), np.searchsorted(near_u, own, "right")
                candidates = [(near_j[k], near_v[k]) for k in range(lo, hi) if in_train[near_v[k]]]
                similarity = max(c[0] for c in candidates)
                partners = np.array([c[1] for c in candidates if c[0] == similarity])
            match = np.isin(columns.text[train], partners)
            example.update(text=_show(pool.table, fields.example, row))
            if kind == "near_duplicate":
                example["jaccard"] = round(float(similarity), 4)
        else:
            name = fields.program if kind == "program" else kind.split(".", 1)[1]
            codes = columns.program if kind == "program" else columns.shared[name]
            match = codes[train] == codes[row]
            example.update(value=_show(pool.table, [name], row))
        partner = int(np.argmin(np.where(match, train_ids, np.iinfo(np.int64).max)))
        example["train_source_id"] = int(train_ids[partner])
        if "text" in example:
            example["train_text"] = _show(pool.table, fields.example, train[partner])
        out.append(example)
    return out


def _show(table, names, row, width: int = 160) -> str:
    values = []
    for name in names:
        if name in table.column_names:
            value = table.column(name)[int(row)].as_py()
            if value is not None:
                values.append(" ".join(str(value).split()))
    text = " / ".join(values)
    return text if len(text) <= width else text[: width - 1] + "…"


def method_description(threshold: float, fields: AuditFields) -> str:
    bands, rows = lsh_parameters(threshold)
    return (f"exact: the same whole example ({', '.join(fields.example)}) after Unicode NFKC, lower-casing and "
            f"collapsing whitespace; near-duplicate: Jaccard similarity >= {threshold:g} between the sets of "
            f"character {NGRAM}-grams of that text, candidates from datasketch MinHash ({NUM_PERM} permutations, "
            f"seed {MINHASH_SEED}) and MinHashLSH ({bands} bands of {rows} rows) confirmed with the exact Jaccard, "
            "exact duplicates included; shared: the same value of the field, byte for byte")


# ---------------------------------------------------------------------------------------------
# What is audited: a build, a release folder, any dataset with splits
# ---------------------------------------------------------------------------------------------


def audit_build(rows, configs, *, record: dict, threshold: float = DEFAULT_THRESHOLD,
                progress: bool = False) -> dict | None:
    """The audit of the configs a build releases: ``rows`` (a ``datasets.Dataset``, or None) and
    ``configs`` (``ConfigSplit``, with positions into ``rows`` or their own ``rows``); ``record`` is
    the release's ``resplit:`` provenance (which fields are text, the program, the group field).
    None when the rows have no text column to audit (the card then counts duplicates by the
    method's row keys, as before)."""
    from loading_scripts.tables import arrow_table

    tables = {}
    parts = {}
    for config in configs:
        data = config.rows if config.rows is not None else rows
        if id(data) not in tables:
            tables[id(data)] = arrow_table(data)
        table = tables[id(data)]
        parts[config.name] = {split: Part(table, np.sort(np.asarray(config.indices[split], dtype=np.int64)))
                              for split in config.splits}
    try:
        return audit(parts, record=record, threshold=threshold, progress=progress)
    except NoTextError:
        return None


def audit_release(released, *, fields=None, threshold: float = DEFAULT_THRESHOLD, progress: bool = False) -> dict:
    """The audit of a release folder (a :class:`split_builders.release.folder.Released`)."""
    parts = {config: {split: Part(released.table(config, split)) for split in released.files[config]}
             for config in released.configs}
    return audit(parts, record=released.record, requested=fields, threshold=threshold, progress=progress,
                 where=str(released.folder))


def audit_splits(datasets_by_config: dict, *, fields=None, threshold: float = DEFAULT_THRESHOLD,
                 progress: bool = False, where: str = "the dataset") -> dict:
    """The audit of any dataset: ``{config: {split: datasets.Dataset or pyarrow.Table}}`` with a
    ``train`` split (a plain Hub dataset resplit did not build)."""
    from loading_scripts.tables import arrow_table

    import pyarrow as pa

    parts = {config: {split: Part(data if isinstance(data, pa.Table) else arrow_table(data))
                      for split, data in splits.items()}
             for config, splits in datasets_by_config.items()}
    return audit(parts, requested=fields, threshold=threshold, progress=progress, where=where)


def audit_target(target: str, *, work, revision: str | None = None, fields=None,
                 threshold: float = DEFAULT_THRESHOLD, progress: bool = False) -> dict:
    """The audit of ``target``: a release folder of any family, a folder laid out as a Hub dataset
    (train / validation / test data files, or YAML ``configs:``), or a Hub dataset id (``org/name``,
    at ``revision`` or ``org/name@revision``), downloaded into ``work``."""
    from pathlib import Path

    from split_builders.release.folder import Released

    threshold = check_threshold(threshold)
    path, is_release = locate_target(target, work=work, revision=revision)
    if is_release:
        return audit_release(Released(path), fields=fields, threshold=threshold, progress=progress)
    return audit_splits(read_splits(path, Path(work) / "datasets-cache"), fields=fields, threshold=threshold,
                        progress=progress, where=str(target))


def evaluated_configs(parts: dict, *, where: str, purpose: str) -> dict:
    """The configs of ``parts`` (``{config: {split: ...}}``) with a train split and an evaluation split, the
    ones the audit, diagnostics and probe look at; refused in one line where there is none."""
    configs = {c: s for c, s in parts.items() if "train" in s and any(e in s for e in EVALUATION_SPLITS)}
    if not configs:
        raise InvalidParameterError(f"{where} has no config with a train split and a validation or test split "
                                    f"to {purpose}")
    return configs


def locate_target(target: str, *, work, revision: str | None = None):
    """``(folder, is_release)`` of ``target``: a folder here, or a Hub dataset id (``org/name``, at
    ``revision`` or ``org/name@revision``) downloaded into ``work``; ``is_release`` when its README's
    YAML has ``resplit:`` provenance and ``configs:`` (shared by ``resplit audit``, ``diagnose`` and ``probe``)."""
    from pathlib import Path

    from split_builders.release.folder import front_matter, resolve_target

    path = Path(target).expanduser()
    if path.exists():
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


def read_splits(folder, cache_dir) -> dict:
    """``{config: {split: pyarrow.Table}}`` of a folder laid out as a Hub dataset, read by ``datasets``
    (its data-file patterns: ``train.jsonl``, ``data/test-*.parquet``, ``dev.csv`` as validation, YAML
    ``configs:``) into a fresh cache."""
    import datasets
    from datasets.exceptions import DatasetsError

    from loading_scripts.tables import arrow_table, quiet_datasets

    problem = (f"{folder} is neither a resplit release (a README.md with `resplit:` in its YAML) nor a dataset "
               "folder with train / validation / test data files (parquet, jsonl, json, csv)")
    out = {}
    try:
        with quiet_datasets():
            names = datasets.get_dataset_config_names(str(folder))
            for name in names:
                loaded = datasets.load_dataset(str(folder), name, cache_dir=str(cache_dir))
                out[name] = {split: arrow_table(part) for split, part in loaded.items()}
    except FileNotFoundError:  # no data files (datasets' EmptyDatasetError)
        raise InvalidReleaseError(problem) from None
    except (DatasetsError, ValueError) as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidReleaseError(f"{problem} ({detail})") from None
    if not any("train" in splits for splits in out.values()):
        found = sorted({s for splits in out.values() for s in splits})
        raise InvalidReleaseError(f"{folder} has no train split (splits: {', '.join(found) or 'none'}); the audit "
                                  "compares validation and test rows with train rows")
    return out


# ---------------------------------------------------------------------------------------------
# How the audit is shown: YAML, card, terminal
# ---------------------------------------------------------------------------------------------

SETTINGS = ("method", "threshold", "ngram", "num_perm", "bands", "rows_per_band",
            "collision_probability_at_threshold", "fields", "program_field", "group_field")
COUNTS = ("rows", "exact", "near_duplicate", "shared", "program")


def yaml_record(report: dict) -> tuple[dict, dict]:
    """What the README's YAML records: the settings (``resplit.audit``) and per config its counts
    (``resplit.configs.<config>.audit``: ``{split: {rows, exact, near_duplicate, shared, program}}``)."""
    settings = {key: report[key] for key in SETTINGS}
    per_config = {config: {split: {k: entry[k] for k in COUNTS if k in entry} for split, entry in splits.items()}
                  for config, splits in report["configs"].items()}
    return settings, per_config


def table_columns(report: dict) -> dict:
    """Two columns of the card's configs table: evaluation rows (validation + test) with an exact
    duplicate, and with a near-duplicate, in train."""
    total = lambda splits, key: sum(e[key] for e in splits.values())  # noqa: E731
    return {"exact dup. in train": {c: total(s, "exact") for c, s in report["configs"].items()},
            "near-dup. in train": {c: total(s, "near_duplicate") for c, s in report["configs"].items()}}


def sharing_lines(report: dict) -> list[str]:
    """For an ungrouped release, one line per text field that at least ``SHARING_NOTE`` of some
    config's test rows (validation rows where it has no test split) share with train."""
    if report.get("group_field"):
        return []
    lines = []
    for name in report["fields"]:
        rates = []
        for config, splits in report["configs"].items():
            split = "test" if "test" in splits else next(iter(splits))
            if name in splits[split]["rates"]["shared"]:
                rates.append((splits[split]["rates"]["shared"][name], config, split))
        if not rates or max(rates)[0] < SHARING_NOTE:
            continue
        high = max(rates, key=lambda r: r[0])
        low = min(rates, key=lambda r: r[0])
        line = f"{100 * high[0]:.0f}% of `{high[1]}` {high[2]} rows share a `{name}` with train"
        if len(rates) > 1:
            line += f" ({100 * low[0]:.0f}% of `{low[1]}` {low[2]} rows, the fewest of {len(rates)} configs)"
        lines.append(line + f"; `--group-field {name}` prevents this.")
    return lines


def _percent(count: int, rows: int) -> str:
    return f"{count} ({100 * count / rows:.1f}%)" if rows else str(count)


def card_lines(report: dict) -> list[str]:
    """The card's "Leakage audit" section (Markdown lines, heading included)."""
    shared = list(dict.fromkeys(k for splits in report["configs"].values() for e in splits.values() for k in e["shared"]))
    program = report.get("program_field")
    group = report.get("group_field")
    fields = ", ".join(f"`{f}`" for f in report["fields"]) + (f" and the program `{program}`" if program else "")
    lines = ["## Leakage audit", "",
             f"For every evaluation row (validation and test), the audit looks for rows of the same config's train "
             f"split that match it: an **exact** duplicate (the same {fields}, after Unicode NFKC, lower-casing and "
             f"collapsing whitespace), a **near-duplicate** (a Jaccard similarity of at least {report['threshold']:g} "
             f"between the sets of character {report['ngram']}-grams of that text; candidates from `datasketch` "
             f"MinHash, {report['num_perm']} permutations, and MinHashLSH, {report['bands']} bands of "
             f"{report['rows_per_band']} rows, each confirmed with the exact Jaccard; exact duplicates count as "
             "near-duplicates too), the same value of each field (**shared**, byte for byte"
             + (f"; `{group}` is the group field the splits keep whole" if group else "") + ")"
             + (f" and the same target program (`{program}`)" if program else "") + ". "
             "The YAML header records these counts under `resplit.configs.<config>.audit`; `resplit audit FOLDER "
             "--json` recomputes them.", ""]
    header = ["config", "split", "rows", "exact", "near-duplicate", *(f"shared `{f}`" for f in shared)]
    header += ["same program"] if program else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            n = entry["rows"]
            cells = [f"`{config}`", split, str(n), _percent(entry["exact"], n), _percent(entry["near_duplicate"], n)]
            cells += [_percent(entry["shared"][f], n) if f in entry["shared"] else "-" for f in shared]
            cells += [_percent(entry["program"], n) if "program" in entry else "-"] if program else []
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    shown = [(config, split, entry) for config, splits in report["configs"].items() for split, entry in splits.items()
             if any(entry["examples"].values())]
    if shown:
        lines += ["Examples (up to three of each kind per config and split; near-duplicates shown are not exact "
                  "duplicates):", ""]
        for config, split, entry in shown:
            lines += [f"<details><summary><code>{config}</code> {split}</summary>", ""]
            for kind, items in entry["examples"].items():
                for item in items:
                    lines.append("- " + _example_line(kind, item))
            lines += ["", "</details>", ""]
    return lines


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def _example_line(kind: str, item: dict) -> str:
    label = {"exact": "exact", "near_duplicate": f"near-duplicate (Jaccard {item.get('jaccard', 1.0):.2f})",
             "program": "same program"}.get(kind, kind.replace("shared.", "shared "))
    if "text" in item:
        return (f"{label}: `source_id` {item['source_id']} \"{_escape(item['text'])}\" ~ train `source_id` "
                f"{item['train_source_id']} \"{_escape(item['train_text'])}\"")
    return (f"{label}: `source_id` {item['source_id']} and train `source_id` {item['train_source_id']}: "
            f"\"{_escape(item['value'])}\"")


def format_report(report: dict) -> list[str]:
    """The terminal table of ``resplit audit``."""
    shared = list(dict.fromkeys(k for splits in report["configs"].values() for e in splits.values() for k in e["shared"]))
    program = report.get("program_field")
    headers = ["config", "split", "rows", "exact", "near-dup", *(f"shared {f}" for f in shared)]
    headers += [f"program {program}"] if program else []
    table = []
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            n = entry["rows"]
            cell = lambda count: f"{count} ({100 * count / n:.1f}%)" if n else str(count)  # noqa: E731
            row = [config, split, str(n), cell(entry["exact"]), cell(entry["near_duplicate"])]
            row += [cell(entry["shared"][f]) if f in entry["shared"] else "-" for f in shared]
            row += [cell(entry["program"]) if "program" in entry else "-"] if program else []
            table.append(row)
    widths = [max(len(str(r[i])) for r in [headers, *table]) for i in range(len(headers))]
    line = lambda cells: "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    out = [f"fields: {', '.join(report['fields'])}" + (f"; program: {program}" if program else "")
           + (f"; group field: {report['group_field']}" if report.get("group_field") else "")
           + f"; near-duplicate: Jaccard >= {report['threshold']:g} of character {report['ngram']}-grams "
             f"(MinHash {report['num_perm']} permutations, LSH {report['bands']}x{report['rows_per_band']})",
           line(headers), *(line(r) for r in table)]
    return out + sharing_lines(report)
