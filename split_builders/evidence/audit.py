"""The leakage audit: per config and evaluation split, the rows that have a match in the same config's train split.

For every validation and test row, the audit asks whether train holds

1. an **exact** duplicate: the same text after normalisation (Unicode NFKC, lower case, every run of
   whitespace one space, trimmed) of the whole example, i.e. of every audited text field and the
   target program joined;
2. a **near-duplicate**: a train row whose set of character n-grams (``NGRAM`` = 5, of the same
   normalised text) has a Jaccard similarity of at least ``threshold`` (0.8 by default) with the row's
   (:mod:`.near_duplicates`: MinHash LSH candidates confirmed with the exact Jaccard).
   An exact duplicate has Jaccard 1, so it is a near-duplicate too: ``exact <= near_duplicate``;
3. the same value of each text field (``shared.<field>``, e.g. the same premise), and of the release's
   group field (``--group-field``) when it records one: the value as it is, byte for byte, the
   equality a grouped split keeps within one split;
4. the same target program (``program``) where the rows are semantic parsing examples.

Which columns are text, program and group is the resolved :class:`~split_builders.contracts.Fields`
(:mod:`.fields`). The work is done on whole columns, once per release: the rows of every config are
reduced to the distinct rows (:class:`~.pools.Pool`), each distinct text is normalised, shingled and
MinHashed once, one LSH index is built over the texts of each group of configs that share rows (all of
them when every config splits the same rows; one per phenomenon in CURRICULUM) and its candidate pairs
confirmed once; each config then only marks its train rows (numpy) and counts its evaluation rows. The
result is deterministic (fixed hash functions and MinHash seed).

:func:`compute` audits an :class:`~.inputs.EvidenceInput` (a build, a release, any dataset), so
``resplit audit`` on a release reproduces the numbers of its card; :mod:`.audit_card` shows the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from split_builders.contracts import Fields
from split_builders.evidence.fields import NoTextError, is_text_type
from split_builders.evidence.near_duplicates import (MINHASH_SEED, NGRAM, NUM_PERM, collision_probability,
                                                     examples_text, lsh_parameters, near_duplicate_pairs,
                                                     text_groups)
from split_builders.evidence.pools import Pool, value_codes
from split_builders.splits import check_number

DEFAULT_THRESHOLD = 0.8
EVALUATION_SPLITS = ("validation", "test")
EXAMPLES = 3


def check_threshold(value) -> float:
    """The near-duplicate threshold: a Jaccard similarity in (0, 1]."""
    return check_number(value, "--threshold", minimum=0, maximum=1, exclusive=("minimum",))


@dataclass
class Audited:
    """The columns the audit compares, from the resolved fields: ``text`` (each counted as
    ``shared.<field>``, and joined with ``program`` into the example compared for exact and
    near-duplicates), the target ``program`` and the ``group`` field (``shared.<group>``)."""

    text: list
    program: str | None = None
    group: str | None = None
    label: str | None = None

    @classmethod
    def of(cls, fields: Fields, table=None, *, where: str = "the release") -> "Audited":
        """The audited columns of ``fields``: its text columns (of a text type in ``table``) less the target."""
        text = [f for f in fields.text if f != fields.target
                and (table is None or (f in table.column_names and is_text_type(table.schema.field(f).type)))]
        if not text:
            columns = ", ".join(table.column_names) if table is not None else "none"
            raise NoTextError(f"{where} has no text field to audit (columns: {columns or 'none'}); "
                              "name them with --fields a,b")
        label = fields.label if table is None or fields.label in table.column_names else None
        return cls(text, fields.target, fields.group, label)

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
        return list(dict.fromkeys([*self.example, *([self.group] if self.group else []),
                                   *([self.label] if self.label else [])]))


def compute(data, *, threshold: float = DEFAULT_THRESHOLD, fields=None, progress: bool = False) -> dict:
    """The leakage audit of ``data`` (an :class:`~.inputs.EvidenceInput`); ``fields`` (``--fields``) names
    the text fields instead of the resolved ones."""
    threshold = check_threshold(threshold)
    resolved = data.resolve(fields) if fields else data.fields
    return audit(data.parts, resolved, threshold=threshold, progress=progress, where=data.where)


@dataclass
class _Columns:
    """Per distinct row: its normalised text's number, its codes per shared field and program."""

    text: np.ndarray
    texts: list
    shared: dict = field(default_factory=dict)
    program: np.ndarray | None = None
    label: np.ndarray | None = None
    input: np.ndarray | None = None  # the input's text number (the example less the program), for the tiers
    input_near: tuple | None = None  # near-duplicate pairs of inputs (both directions, sorted), where they differ


def audit(parts: dict, fields: Fields | None = None, *, record: dict | None = None, requested=None,
          threshold: float = DEFAULT_THRESHOLD, examples: int = EXAMPLES, progress: bool = False,
          where: str = "the release") -> dict:
    """The leakage audit of ``parts`` (``{config: {split: Part}}``, each config with a ``train`` part).

    Returns ``{"threshold", "ngram", "num_perm", "bands", "rows_per_band", "method", "fields",
    "program_field", "group_field", "configs": {config: {split: {"rows", "exact", "near_duplicate",
    "shared": {field: n}, "program" (with a program field), "rates": {...}, "examples": {...}}}}}``
    for the evaluation splits (validation, test) of every config. ``fields``: the resolved fields (default:
    resolved from the rows and ``record``, with ``requested`` as the text fields where given).
    """
    from split_builders.evidence.inputs import EvidenceInput, evaluated_configs

    threshold = check_threshold(threshold)
    configs = evaluated_configs(parts, where=where, purpose="audit")
    if fields is None:
        fields = EvidenceInput(configs, dict(record or {}), where=where).resolve(requested)
    first = next(iter(next(iter(configs.values())).values())).table
    fields = fields if isinstance(fields, Audited) else Audited.of(fields, first, where=where)
    pool = Pool(configs, fields.columns)
    columns = _columns(pool.table, fields)
    # only pairs of a text evaluated somewhere and a text trained on somewhere can count
    evaluated, trained = (np.zeros(len(columns.texts), dtype=bool) for _ in range(2))
    for (config, split), rows in pool.rows.items():
        texts = columns.text[rows]
        (trained if split == "train" else evaluated)[texts[texts >= 0]] = True
    near_u, near_v, near_j, search = near_duplicate_pairs(columns.texts, threshold=threshold, progress=progress,
                                                          left=evaluated, right=trained,
                                                          groups=text_groups(pool, columns))
    bands, rows_per_band = search["bands"], search["rows_per_band"]
    report = {
        "threshold": threshold, "ngram": NGRAM, "num_perm": NUM_PERM, "bands": bands, "rows_per_band": rows_per_band,
        "collision_probability_at_threshold": round(collision_probability(threshold, bands, rows_per_band), 4),
        "fields": list(fields.text), "program_field": fields.program, "group_field": fields.group,
        "label_field": fields.label,
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
    columns.input, columns.input_near = columns.text, near
    if fields.program:  # the tiers compare the input alone (the program is what is compared as the label)
        columns.input, inputs = value_codes(examples_text(pool.table, fields.text), values=True)
        in_u, in_v, in_j, _ = near_duplicate_pairs(inputs, threshold=threshold, progress=progress)
        u, v = np.concatenate([in_u, in_v]), np.concatenate([in_v, in_u])
        order = np.lexsort((v, u))
        columns.input_near = (u[order], v[order], np.concatenate([in_j, in_j])[order])
    for config, splits in configs.items():
        present = pool.columns_of.get(config, set())
        report["configs"][config] = {
            split: _audit_split(pool, columns, fields, near, config, split, present, examples)
            for split in EVALUATION_SPLITS if split in splits}
    return report



def _columns(table, fields: Audited) -> _Columns:
    text, texts = value_codes(examples_text(table, fields.example), values=True)
    columns = _Columns(text, texts)
    for name in fields.shared:
        if name in table.column_names:
            columns.shared[name] = value_codes(table.column(name))
            if name == fields.group:  # a missing group value (null, NaN, empty) is no group: shared with no row
                from split_builders.splitters.groups import missing_mask

                missing = missing_mask(table.column(name).to_numpy(zero_copy_only=False))
                columns.shared[name] = np.where(missing, -1, columns.shared[name])
    if fields.program and fields.program in table.column_names:
        columns.program = value_codes(table.column(fields.program))
    if fields.label and fields.label in table.column_names:
        columns.label = value_codes(table.column(fields.label))
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
    entry["tiers"] = tiers(columns, train, rows)
    rate = lambda count: round(count / n, 4) if n else 0.0  # noqa: E731
    entry["rates"] = {"exact": rate(entry["exact"]), "near_duplicate": rate(entry["near_duplicate"]),
                      "shared": {k: rate(v) for k, v in entry["shared"].items()}}
    if "program" in entry:
        entry["rates"]["program"] = rate(entry["program"])
    entry["examples"] = {kind: _examples(kind, mask, pool, columns, fields, near, in_train, rows, ids, train,
                                         train_ids, examples)
                         for kind, mask in masks.items()}
    return entry


def tiers(columns, train, rows) -> dict:
    """How many of ``rows`` (pool rows of an evaluation split) are ``clean``, ``input_contaminated`` (their input, the
    text fields less the program, has an exact or near-duplicate among the ``train`` rows) or
    ``input_label_contaminated`` (and one of those train rows has the same label, or the same program where
    there is no label): the tiers of :mod:`.contamination`, against the config's own train split."""
    text, (near_u, near_v, _) = columns.input, columns.input_near
    labels = columns.label if columns.label is not None else columns.program
    in_train = _marks(text, train)
    mine = text[rows]
    valid = mine >= 0
    # each row with its own input and each near-duplicate input of it
    lo, hi = np.searchsorted(near_u, mine, "left"), np.searchsorted(near_u, mine, "right")
    count = np.where(valid, hi - lo, 0)
    owner = np.concatenate([np.flatnonzero(valid), np.repeat(np.arange(mine.size), count)])
    shift = np.repeat(np.cumsum(count) - count, count)
    partner = np.concatenate([mine[valid], near_v[np.repeat(lo, count) + np.arange(int(count.sum())) - shift]])
    hit = in_train[partner]
    contaminated = np.zeros(mine.size, dtype=bool)
    contaminated[owner[hit]] = True
    same = np.zeros(mine.size, dtype=bool)
    if labels is not None:
        width = np.int64(int(labels.max(initial=0)) + 2)
        held = train[(text[train] >= 0) & (labels[train] >= 0)]
        keys = np.sort(text[held] * width + labels[held])
        wanted = labels[rows][owner]
        key = partner * width + wanted
        at = np.minimum(np.searchsorted(keys, key), max(keys.size - 1, 0))
        found = hit & (wanted >= 0) & (keys.size > 0) & (keys[at] == key if keys.size else False)
        same[owner[found]] = True
    n = int(mine.size)
    return {"clean": n - int(contaminated.sum()), "input_contaminated": int((contaminated & ~same).sum()),
            "input_label_contaminated": int(same.sum())}


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


def method_description(threshold: float, fields: Audited) -> str:
    bands, rows = lsh_parameters(threshold)
    return (f"exact: the same whole example ({', '.join(fields.example)}) after Unicode NFKC, lower-casing and "
            f"collapsing whitespace; near-duplicate: Jaccard similarity >= {threshold:g} between the sets of "
            f"character {NGRAM}-grams of that text, candidates from MinHash ({NUM_PERM} permutations of datasketch's, "
            f"seed {MINHASH_SEED}) and LSH ({bands} bands of {rows} rows) confirmed with the exact Jaccard, "
            "exact duplicates included; shared: the same value of the field, byte for byte")

