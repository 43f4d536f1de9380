"""Diagnostics against chance: what each config's evaluation splits hold, set against random splits
of the same sizes (the Likelihood Splits paper's Section 5 and Figure 3, for every release).

For every config and evaluation split (validation, test) and every statistic, the report gives the
split's value, the train split's, and the value's percentile among ``N`` random splits (200 by
default) of the config's own rows with the same split sizes, drawn the way the config's baseline
draws them: label-balanced where the config is stratified (each class keeps its number of rows in
each split), whole groups where the config records ``grouped_by`` (groups in a seeded random order
fill test, then validation, each until it has at least its size), plainly random otherwise. The
draws are seeded (``seed``) and depend only on the config's rows (in ``source_id`` order), its split
sizes and its strata or groups, so configs of the same rows and sizes share one null distribution.

Statistics (text statistics of the query column, the one a query-only baseline reads: the
hypothesis, the question, the input; :mod:`.text_stats` defines words, rare words, syllables):

* ``length``: mean query length in words;
* ``rare_word_fraction``: rare words (Zipf frequency < 3 in ``wordfreq``'s English list) / words;
* ``unseen_word_rate``: words whose type occurs in no train query / words;
* ``fk_grade``: mean Flesch-Kincaid grade of the queries (queries with words);
* the method's own signals (its declared ``signals`` present in the rows): the mean of a continuous one
  (``score``, ``pvi``); for a categorical one (an id: a cluster, a functionality), ``unseen_<column>``, the
  share of rows whose value no train row has (against random splits as every statistic);
* where rows carry a target program (semantic parsing): ``atom_divergence`` and ``compound_divergence``
  from train (Chernoff coefficients 0.5 and 0.1 over ``signals.programs`` atoms and compounds, as the
  TMCD cards compute them), ``unseen_compound_share`` (programs with a compound no train program
  has) and ``unseen_template_share`` (programs whose template, literals anonymised, no train program
  has); for SQL targets, Spider's hardness shares ``hardness_easy`` ... ``hardness_extra``
  (:mod:`.sql_hardness`; shares of the queries that parse).

The train value of a statistic that compares with train (unseen rates and shares, divergences) is
0 by definition. A behavioural release (CheckList test cases) also gets, per config and evaluation
split, the functionalities, capabilities and test types it holds that train does not (counts, no
null needed).

Whole columns: the per-row statistics are computed once over the distinct rows of the release;
each block of random splits is an ``int8`` assignment matrix (rows x splits), sums are matrix
products, and the unseen-word rate of all splits of a block is a product with the sparse row x
vocabulary count matrix (seen = train column sums > 0).

:func:`compute` diagnoses an :class:`~split_builders.evidence.inputs.EvidenceInput` (a build, a release
folder, any dataset with splits) through :func:`diagnose`, so ``resplit diagnose`` on a release gives the
numbers of its card; :mod:`.diagnostics_card` shows them.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from split_builders.evidence.fields import NoTextError, is_text_type
from split_builders.evidence.pools import Pool, as_text, value_codes
from split_builders.options import DEFAULT_NULL_SPLITS, MAX_NULL_SPLITS
from split_builders.splits import check_number

DEFAULT_SEED = 0
EVALUATION_SPLITS = ("validation", "test")
SPLIT_CODES = {"train": 0, "validation": 1, "test": 2}
BLOCK = 16  # random splits per assignment block (bounds memory: rows x BLOCK float64 per split)
PROGRESS_ROWS = 50_000  # a progress bar (per config) only for more distinct rows than this
DIGITS = 6  # values are rounded to this many decimals (a build's card and a re-run agree exactly)
HELD_OUT_COLUMNS = (("functionality", "functionalities"), ("capability", "capabilities"), ("test_type", "test types"))

# How a statistic is shown: a phrase for the one-line summary, how a value is printed, its axis label.
_PERCENT = lambda v: f"{100 * v:.1f}%"  # noqa: E731
DISPLAY = {
    "length": ("mean query length", lambda v: f"{v:.2f} words", "mean query length (words)"),
    "rare_word_fraction": ("rare words", _PERCENT, "rare words (Zipf < 3)"),
    "unseen_word_rate": ("words unseen in train", _PERCENT, "words unseen in train"),
    "fk_grade": ("mean Flesch-Kincaid grade", lambda v: f"{v:.2f}", "mean Flesch-Kincaid grade"),
    "atom_divergence": ("atom divergence", lambda v: f"{v:.3f}", "atom divergence from train"),
    "compound_divergence": ("compound divergence", lambda v: f"{v:.3f}", "compound divergence from train"),
    "unseen_compound_share": ("programs with a compound unseen in train", _PERCENT,
                              "programs with an unseen compound"),
    "unseen_template_share": ("programs with a template unseen in train", _PERCENT,
                              "programs with an unseen template"),
    "hardness_easy": ("easy SQL queries", _PERCENT, "easy queries (Spider)"),
    "hardness_medium": ("medium SQL queries", _PERCENT, "medium queries (Spider)"),
    "hardness_hard": ("hard SQL queries", _PERCENT, "hard queries (Spider)"),
    "hardness_extra": ("extra-hard SQL queries", _PERCENT, "extra-hard queries (Spider)"),
}


def check_null_splits(value) -> int:
    """The number of random splits: an integer >= 1 (and at most the builds' bound)."""
    return check_number(value, "--null-splits", integer=True, minimum=1, maximum=MAX_NULL_SPLITS)


def check_seed(value) -> int:
    """The seed of the random splits: an integer >= 0."""
    return check_number(value, "--seed", integer=True, minimum=0)


# ---------------------------------------------------------------------------------------------
# Which columns: query, target, label, signal, behaviour
# ---------------------------------------------------------------------------------------------


@dataclass
class Columns:
    """What the diagnostics read of the resolved fields: the task, the query (the text statistics' column),
    the target program and its language, the label (strata), the signals and their kinds, the behaviour
    columns (held-out counts of CheckList test cases)."""

    task: str
    query: str | None = None
    target: str | None = None
    label: str | None = None
    signals: dict = field(default_factory=dict)
    behaviour: tuple = ()
    target_language: str | None = None

    @classmethod
    def of(cls, fields, table) -> "Columns":
        """The columns of ``table`` (a ``pyarrow.Table``) the resolved ``fields`` name: the query, else the first
        text field, if it is text; the signals of a numeric type (a categorical one of any type); no signals
        but the behaviour columns for CheckList test cases."""
        from split_builders.evidence.fields import is_numeric_type, is_text_type

        names = table.column_names
        query = fields.query or next(iter(fields.text), None)
        if query is not None and (query not in names or not is_text_type(table.schema.field(query).type)):
            query = None
        behavioural = fields.task == "behavioural"
        signals = {c: k for c, k in fields.signals.items() if c in names and not behavioural
                   and (k == "categorical" or is_numeric_type(table.schema.field(c).type))}
        behaviour = tuple(c for c, _ in HELD_OUT_COLUMNS if c in names) if behavioural else ()
        return cls(fields.task, query, fields.target, fields.label, signals, behaviour, fields.program_language)


# ---------------------------------------------------------------------------------------------
# Per-row statistics of the distinct rows (computed once)
# ---------------------------------------------------------------------------------------------


@dataclass
class RowStatistics:
    """Per distinct row: ``ratios`` ``{name: (numerator, denominator)}`` (a split's value is the ratio of
    the sums), ``unseen`` ``{name: (counts matrix, per-row weights, kind)}`` (``tokens``: the share of
    weighted entries unseen in train; ``rows``: the share of rows with one), ``divergences``
    ``{name: (counts matrix, alpha)}``, ``categories`` ``{column: codes}`` (behavioural held-out counts)
    and the order of the statistics."""

    ratios: dict = field(default_factory=dict)
    unseen: dict = field(default_factory=dict)
    divergences: dict = field(default_factory=dict)
    categories: dict = field(default_factory=dict)
    order: list = field(default_factory=list)


def _incidence(per_row: list):
    """A CSR count matrix of per-row collections (sets or Counters; None: an empty row), columns
    in sorted key order (so that sums run in the same order whatever the row order)."""
    from scipy import sparse

    keys = sorted({k for entry in per_row if entry for k in entry}, key=str)
    index = {k: i for i, k in enumerate(keys)}
    rows, cols, values = [], [], []
    for r, entry in enumerate(per_row):
        if not entry:
            continue
        for k in entry:
            rows.append(r)
            cols.append(index[k])
            values.append(entry[k] if isinstance(entry, dict) else 1)
    matrix = sparse.csr_matrix((np.asarray(values, dtype=np.float64), (np.asarray(rows, dtype=np.int64),
                                np.asarray(cols, dtype=np.int64))), shape=(len(per_row), len(keys)))
    matrix.sum_duplicates()
    return matrix


def _sorted_columns(matrix, vocabulary: list):
    """``matrix`` with its columns reordered so that ``vocabulary`` is sorted."""
    order = np.argsort(np.asarray(vocabulary, dtype=object).astype(str), kind="stable")
    return matrix[:, order].tocsr()


def row_statistics(pool, columns: Columns) -> RowStatistics:
    """The per-row statistics of the distinct rows ``pool`` (a ``pyarrow.Table``)."""
    from split_builders.evidence.text_stats import text_stats

    stats = RowStatistics()
    n = pool.num_rows
    ones = np.ones(n, dtype=np.float64)
    if columns.query is not None:
        text = text_stats(as_text(pool.column(columns.query)))
        words = text.words.astype(np.float64)
        grade = text.fk_grade
        has_words = (text.words > 0).astype(np.float64)
        stats.ratios["length"] = (words, ones)
        stats.ratios["rare_word_fraction"] = (text.rare.astype(np.float64), words)
        stats.unseen["unseen_word_rate"] = (_sorted_columns(text.counts.astype(np.float64), text.vocabulary), words,
                                            "tokens")
        stats.ratios["fk_grade"] = (np.where(has_words > 0, grade, 0.0), has_words)
        stats.order += ["length", "rare_word_fraction", "unseen_word_rate", "fk_grade"]
    for name, kind in columns.signals.items():
        if kind == "categorical":  # ids: the share of rows whose value train never holds
            from scipy import sparse

            codes = value_codes(pool.column(name))
            held = np.flatnonzero(codes >= 0)
            matrix = sparse.csr_matrix((np.ones(held.size), (held, codes[held])),
                                       shape=(n, int(codes.max(initial=-1)) + 1))
            stats.unseen[f"unseen_{name}"] = (matrix, ones, "rows")
            stats.order.append(f"unseen_{name}")
            continue
        values = np.asarray(pool.column(name).to_numpy(zero_copy_only=False), dtype=np.float64)
        finite = np.isfinite(values)
        stats.ratios[name] = (np.where(finite, values, 0.0), finite.astype(np.float64))
        stats.order.append(name)
    if columns.target is not None:
        _program_statistics(stats, pool.column(columns.target).to_pylist(), columns.target_language)
    for name in columns.behaviour:
        stats.categories[name] = value_codes(pool.column(name))
    return stats


def _program_statistics(stats: RowStatistics, programs: list, language: str | None) -> None:
    from split_builders.evidence.sql_hardness import HARDNESS, hardness_by_row
    from split_builders.signals.programs.atoms import ATOM_FUNCTIONS, atoms_by_row
    from split_builders.signals.programs.compounds import COMPOUND_FUNCTIONS, compounds_by_row
    from split_builders.splitters.compositional import program_template
    from split_builders.signals.programs.divergence import ATOM_ALPHA, COMPOUND_ALPHA

    n = len(programs)
    if language in ATOM_FUNCTIONS and language in COMPOUND_FUNCTIONS:
        atoms = atoms_by_row(programs, language).atoms
        compounds = compounds_by_row(programs, language)
        stats.divergences["atom_divergence"] = (_incidence(atoms), ATOM_ALPHA)
        stats.divergences["compound_divergence"] = (_incidence(compounds), COMPOUND_ALPHA)
        parsed = np.fromiter((c is not None for c in compounds), dtype=np.float64, count=n)
        stats.unseen["unseen_compound_share"] = (stats.divergences["compound_divergence"][0], parsed, "rows")
        stats.order += ["atom_divergence", "compound_divergence", "unseen_compound_share"]
    templates = [None if not isinstance(p, str) else {program_template(p, language or ""): 1} for p in programs]
    present = np.fromiter((t is not None for t in templates), dtype=np.float64, count=n)
    stats.unseen["unseen_template_share"] = (_incidence(templates), present, "rows")
    stats.order.append("unseen_template_share")
    if language == "sql":
        categories = hardness_by_row(programs)
        parsed = np.fromiter((c is not None for c in categories), dtype=np.float64, count=n)
        for name in HARDNESS:
            share = np.fromiter((c == name for c in categories), dtype=np.float64, count=n)
            stats.ratios[f"hardness_{name}"] = (share, parsed)
            stats.order.append(f"hardness_{name}")


# ---------------------------------------------------------------------------------------------
# Random splits (null distributions) and the statistics of many splits at once
# ---------------------------------------------------------------------------------------------


def null_assignments(strata: np.ndarray, counts: dict, *, groups=None, count: int, rng) -> np.ndarray:
    """``count`` random splits of ``len(strata)`` rows as an ``int8`` matrix (rows x splits; 0 train,
    1 validation, 2 test).

    Without ``groups``: in every stratum (class) ``c`` a random ``counts[1][c]`` rows go to validation
    and ``counts[2][c]`` to test (a random permutation of the rows, stably sorted by stratum: the first
    ``counts[2][c]`` of a stratum's rows go to test, the next ``counts[1][c]`` to validation). With
    ``groups`` (a group code per row): groups in a random order fill test until it has at least
    ``counts[2].sum()`` rows, then validation likewise; the rest is train.

    Each split is drawn into a row of a ``splits x rows`` matrix (contiguous writes) and the matrix is
    transposed once at the end."""
    n = strata.size
    drawn = np.zeros((count, n), dtype=np.int8)
    n_test, n_validation = int(counts[2].sum()), int(counts[1].sum())
    if groups is not None:
        sizes = np.bincount(groups)
        for j in range(count):
            order = rng.permutation(sizes.size)
            ends = np.cumsum(sizes[order])
            starts = ends - sizes[order]
            test = starts < n_test
            taken = int(ends[test].max(initial=0))
            validation = ~test & (starts < taken + n_validation)
            code = np.zeros(sizes.size, dtype=np.int8)
            code[order[validation]] = 1
            code[order[test]] = 2
            drawn[j] = code[groups]
        return np.ascontiguousarray(drawn.T)
    per_class = np.bincount(strata, minlength=counts[1].size)
    class_start = np.concatenate([[0], np.cumsum(per_class)[:-1]])
    cls = np.repeat(np.arange(per_class.size), per_class)  # the stratum at each position of the sorted order
    position = np.arange(n) - class_start[cls]
    template = np.where(position < counts[2][cls], 2,  # the code at each position of the sorted order
                        np.where(position < counts[2][cls] + counts[1][cls], 1, 0)).astype(np.int8)
    small = strata.astype(np.int16) if counts[1].size <= np.iinfo(np.int16).max else strata  # radix-sorted
    for j in range(count):
        shuffled = rng.permutation(n)
        order = shuffled if per_class.size <= 1 else shuffled[np.argsort(small[shuffled], kind="stable")]
        drawn[j, order] = template  # by stratum, random within each
    return np.ascontiguousarray(drawn.T)


def select(stats: RowStatistics, rows: np.ndarray) -> "Selected":
    """``stats`` of the rows ``rows`` (positions among the distinct rows, one per config row), gathered once
    for all the random splits of a config: what :func:`evaluate` reads."""
    names = list(stats.ratios)
    stacked = np.stack([stats.ratios[k][side][rows] for side in (0, 1) for k in names]) if names else None
    unseen = {}
    for k, (matrix, weights, kind) in stats.unseen.items():
        part = matrix[rows]
        unseen[k] = (part, part.T, weights[rows], kind)  # CSC: products read the masks row by row
    return Selected(list(stats.order), names, stacked, unseen,
                    {k: (matrix[rows].T, alpha) for k, (matrix, alpha) in stats.divergences.items()})


@dataclass
class Selected:
    """One config's rows of :class:`RowStatistics`: the ratios' numerators then their denominators as the rows
    of one matrix (2 x statistics, rows), each unseen statistic's count matrix (rows x entries, and
    transposed), weights and kind, each divergence's transposed count matrix and alpha; the order of the
    statistics."""

    order: list
    ratio_names: list
    ratios: np.ndarray | None
    unseen: dict
    divergences: dict


class Masks:
    """The 0/1 ``float64`` mask of each split (rows x random splits) of a block of assignments, written into
    buffers that the next block of the same shape reuses (a million rows: 128 MB a split, paged in once)."""

    def __init__(self):
        self.buffers = {}

    def of(self, assignment: np.ndarray, splits) -> dict:
        out = {}
        for s in ("train", *splits):
            buffer = self.buffers.get(s)
            if buffer is None or buffer.shape != assignment.shape:
                buffer = self.buffers[s] = np.empty(assignment.shape, dtype=np.float64)
            out[s] = np.equal(assignment, SPLIT_CODES[s], out=buffer)
        return out


def evaluate(stats: "Selected", assignment: np.ndarray, splits, masks: Masks | None = None) -> dict:
    """``{split: {statistic: values}}`` (one value per column of ``assignment``) of the rows of ``stats``
    (:func:`select`) split as ``assignment`` says.

    Sums over a split are products with its 0/1 mask. The unseen statistics sum integer counts (exact in any
    order): a split's unseen tokens are its entry counts times the entries no train row holds; a split's rows
    with an unseen entry need each row's count of them (its count row times those entries). ``masks``: buffers
    to reuse (one block of random splits after another)."""
    masks = (masks or Masks()).of(assignment, splits)
    out = {s: {} for s in ("train", *splits)}
    with np.errstate(divide="ignore", invalid="ignore"):
        if stats.ratio_names:
            half = len(stats.ratio_names)
            for s, mask in masks.items():
                sums = stats.ratios @ mask  # numerators' and denominators' sums over the split
                values = sums[:half] / sums[half:]
                for i, name in enumerate(stats.ratio_names):
                    out[s][name] = values[i]
        for name, (part, transposed, weights, kind) in stats.unseen.items():
            unseen = (transposed @ masks["train"] == 0).astype(np.float64)  # entries x splits
            if kind == "rows":
                hits = ((part @ unseen) > 0) * weights[:, None]  # per row and split: has an unseen entry
                found = {s: np.einsum("ij,ij->j", hits, masks[s]) for s in splits}
            else:
                found = {s: np.einsum("ij,ij->j", transposed @ masks[s], unseen) for s in splits}
            for s in splits:
                out[s][name] = found[s] / (weights @ masks[s])
            out["train"][name] = np.zeros(assignment.shape[1])
        for name, (transposed, alpha) in stats.divergences.items():
            train = transposed @ masks["train"]
            for s in splits:
                out[s][name] = _chernoff(train, transposed @ masks[s], alpha)
            out["train"][name] = np.zeros(assignment.shape[1])
    return out


def _chernoff(counts_1: np.ndarray, counts_2: np.ndarray, alpha: float) -> np.ndarray:
    """``1 - sum_k p_k**alpha q_k**(1 - alpha)`` per column of two count matrices (keys x splits);
    1 where one side is empty, 0 where both are (as
    :func:`~split_builders.signals.programs.divergence.chernoff_divergence`)."""
    total_1, total_2 = counts_1.sum(axis=0), counts_2.sum(axis=0)
    p = counts_1 / np.where(total_1 > 0, total_1, 1)
    q = counts_2 / np.where(total_2 > 0, total_2, 1)
    value = 1.0 - (p ** alpha * q ** (1.0 - alpha)).sum(axis=0)
    return np.where((total_1 > 0) & (total_2 > 0), value, np.where((total_1 > 0) | (total_2 > 0), 1.0, 0.0))


# ---------------------------------------------------------------------------------------------
# The diagnostics
# ---------------------------------------------------------------------------------------------


TIE_RTOL, TIE_ATOL = 1e-9, 1e-12  # a statistic within this of a random split's is the same value (a tie)


def _number(value):
    value = float(value)
    return None if not math.isfinite(value) else round(value, DIGITS)


def _percentile(null: np.ndarray, value: float):
    """The percentile of ``value`` among the finite ``null`` values (ties count half), 0-100. A null value within
    floating-point error of ``value`` (``np.isclose``, relative 1e-9) is a tie: the same statistic summed in
    another order (one split against a block of them) differs in its last bits, and rows that are all alike
    would otherwise be "lower than in any of N random splits" instead of at the 50th percentile."""
    from scipy.stats import percentileofscore

    null = null[np.isfinite(null)]
    if not null.size or not math.isfinite(value):
        return None
    null = np.where(np.isclose(null, value, rtol=TIE_RTOL, atol=TIE_ATOL), value, null)
    return round(float(percentileofscore(null, value, kind="mean")), 2)


@dataclass
class _Config:
    """One config's rows in ``source_id`` order (positions among the distinct rows), the split of
    each, and how its random splits are drawn (strata, groups)."""

    rows: np.ndarray
    assignment: np.ndarray
    strata: np.ndarray
    groups: np.ndarray | None
    splits: tuple

    def counts(self) -> dict:
        classes = int(self.strata.max(initial=-1)) + 1
        return {code: np.bincount(self.strata[self.assignment[:, 0] == code], minlength=classes) for code in (1, 2)}

    def key(self) -> str:
        digest = hashlib.sha256(self.rows.tobytes())
        for code, values in self.counts().items():
            digest.update(f"|{code}:".encode() + np.asarray(values, dtype=np.int64).tobytes())
        digest.update(b"|g" + (self.groups.tobytes() if self.groups is not None else b"-"))
        digest.update(b"|s" + self.strata.tobytes())
        return digest.hexdigest()


def _config(pool, rows_of, ids_of, config: str, splits: dict, columns: Columns, parameters: dict, *,
            keys: np.ndarray | None = None, seed: int = DEFAULT_SEED) -> _Config:
    """``keys``: the content keys of the distinct rows (the ``content`` row order rule), else None (``position``)."""
    present = [s for s in ("train", *EVALUATION_SPLITS) if s in splits and len(rows_of[(config, s)])]
    rows = np.concatenate([rows_of[(config, s)] for s in present])
    ids = np.concatenate([ids_of[(config, s)] for s in present])
    assignment = np.concatenate([np.full(len(rows_of[(config, s)]), SPLIT_CODES[s], dtype=np.int8) for s in present])
    order = np.lexsort((assignment, ids))  # source_id order: the same draws for the build and the release
    if keys is not None:  # the content rule: the rows' content order (rows alike in content are interchangeable)
        from split_builders.splitters.partition import content_order

        order = order[content_order(keys[rows[order]], seed)]
    rows, assignment = rows[order], assignment[order]
    strata = np.zeros(rows.size, dtype=np.int64)
    if columns.label is not None and columns.task == "classification" and parameters.get("train_size") is None:
        codes = value_codes(pool.column(columns.label))[rows]
        strata = np.unique(codes, return_inverse=True)[1].reshape(-1).astype(np.int64)
    groups = None
    group_field = parameters.get("grouped_by")
    if group_field and group_field in pool.column_names:
        codes = value_codes(pool.column(group_field))[rows]
        groups = np.unique(codes, return_inverse=True)[1].reshape(-1).astype(np.int64)
        if keys is not None:  # numbered in order of first appearance along the content order, not the pool's
            first = np.full(groups.max(initial=-1) + 1, groups.size, dtype=np.int64)
            np.minimum.at(first, groups, np.arange(groups.size))
            rank = np.empty_like(first)
            rank[np.argsort(first, kind="stable")] = np.arange(first.size)
            groups = rank[groups]
    evaluation = tuple(s for s in EVALUATION_SPLITS if s in present)
    return _Config(rows, assignment[:, None], strata, groups, evaluation)


def compute(data, *, null_splits: int = DEFAULT_NULL_SPLITS, seed: int = DEFAULT_SEED, progress: bool = False) -> dict:
    """The diagnostics of ``data`` (an :class:`~split_builders.evidence.inputs.EvidenceInput`)."""
    return diagnose(data.parts, fields=data.fields, record=data.record, parameters=data.parameters,
                    null_splits=null_splits, seed=seed, progress=progress, where=data.where)


def diagnose(parts: dict, *, fields=None, record: dict | None = None, parameters: dict | None = None,
             null_splits: int = DEFAULT_NULL_SPLITS, seed: int = DEFAULT_SEED, progress: bool = False,
             where: str = "the release") -> dict:
    """The diagnostics of ``parts`` (``{config: {split: Part}}``, each config with a ``train`` part);
    ``fields`` the resolved fields (default: resolved from the rows and ``record``, the release's provenance),
    ``parameters`` ``{config: parameters}`` (``grouped_by``, ``train_size``). A release built under the ``content``
    row order rule (``record``'s ``parameters.row_order``) draws its random splits over its rows in their content
    order (:func:`~split_builders.splitters.partition.content_order` of each distinct row's content key under
    ``seed``): the same rows in any order give the same figures; otherwise in ``source_id`` order.

    Returns ``{"null_splits", "seed", "task", "fields": {query, target, label, signals},
    "configs": {config: {split: {statistic: {"value", "train", "percentile", "null_p05", "null_p95"}}}},
    "null_distributions": {name: {"configs": [...], "splits": {split: {statistic: [values]}}}},
    "held_out": {config: {split: {column: {"held_out", "of"}}}} (behavioural)}``.
    """
    from split_builders.evidence.inputs import EvidenceInput, evaluated_configs
    from split_builders.progress import progress_bar

    null_splits = check_null_splits(null_splits)
    seed = check_seed(seed)
    parameters = parameters or {}
    configs = evaluated_configs(parts, where=where, purpose="diagnose")
    if fields is None:
        fields = EvidenceInput(configs, dict(record or {}), where=where).fields
    pool = Pool(configs, candidate_columns(configs, fields, parameters))
    columns = Columns.of(fields, pool.table)
    keys = _content_keys(pool.table, record)
    stats = row_statistics(pool.table, columns)
    if not stats.order and not stats.categories:
        raise NoTextError(f"{where} has no text, program or signal column to diagnose "
                          f"(columns: {', '.join(pool.table.column_names) or 'none'})")
    report = {"null_splits": null_splits, "seed": seed, "task": columns.task,
              "fields": {"query": columns.query, "target": columns.target, "label": columns.label,
                         "signals": list(columns.signals), "target_language": columns.target_language},
              "statistics": list(stats.order), "configs": {}, "null_distributions": {}}
    nulls, owners = {}, {}
    bar = progress_bar(total=len(configs), description="diagnostics", unit="config",
                       enabled=progress and pool.table.num_rows > PROGRESS_ROWS)
    with bar:
        for config, splits in configs.items():
            setup = _config(pool.table, pool.rows, pool.ids, config, splits, columns, parameters.get(config) or {},
                            keys=keys, seed=seed)
            mine = select(stats, setup.rows)
            observed = evaluate(mine, setup.assignment, setup.splits)
            key = setup.key()
            if key not in nulls:
                nulls[key] = _null(mine, setup, null_splits, seed)
                owners[key] = config
                report["null_distributions"][config] = {"configs": [], "splits": {
                    s: {k: [_number(v) for v in values] for k, values in per.items()} for s, per in nulls[key].items()}}
            report["null_distributions"][owners[key]]["configs"].append(config)
            report["configs"][config] = {
                s: {k: _entry(observed[s][k][0], observed["train"][k][0], nulls[key][s][k]) for k in stats.order}
                for s in setup.splits}
            if stats.categories:
                report.setdefault("held_out", {})[config] = _held_out(stats, setup)
            bar.update(1)
    return report


def _content_keys(table, record: dict | None) -> np.ndarray | None:
    """The content key of each row of ``table`` (every column it has) where ``record`` says the release was built
    under the ``content`` row order rule; None where it was not (``position``, or nothing recorded)."""
    from loading_scripts.tables import row_keys
    from split_builders.splitters.partition import CONTENT, recorded_row_order

    if recorded_row_order((record or {}).get("parameters")) != CONTENT:
        return None
    return row_keys(table, table.column_names, content=True)


def _null(stats: "Selected", setup: _Config, count: int, seed: int) -> dict:
    """``{split: {statistic: values}}`` of ``count`` random splits drawn like ``setup``'s, in blocks
    (``stats``: the config's rows, :func:`select`); the next block is drawn while one is evaluated (the
    draws stay in order: the same splits as drawing them one after another)."""
    from split_builders.overlap import ahead

    rng = np.random.default_rng(seed)
    counts = setup.counts()
    draw = lambda size: null_assignments(setup.strata, counts, groups=setup.groups, count=size, rng=rng)  # noqa: E731
    masks = Masks()
    blocks = [evaluate(stats, assignment, setup.splits, masks)
              for assignment in ahead(draw, [min(BLOCK, count - start) for start in range(0, count, BLOCK)])]
    return {s: {k: np.concatenate([b[s][k] for b in blocks]) for k in stats.order} for s in setup.splits}


def _entry(value: float, train: float, null: np.ndarray) -> dict:
    finite = null[np.isfinite(null)]
    low, high = (np.percentile(finite, [5, 95]) if finite.size else (float("nan"), float("nan")))
    return {"value": _number(value), "train": _number(train), "percentile": _percentile(null, float(value)),
            "null_p05": _number(low), "null_p95": _number(high)}


def _held_out(stats: RowStatistics, setup: _Config) -> dict:
    out = {}
    for s in setup.splits:
        entry = {}
        for column, codes in stats.categories.items():
            mine = codes[setup.rows]
            train = set(np.unique(mine[setup.assignment[:, 0] == 0]).tolist())
            evaluated = set(np.unique(mine[setup.assignment[:, 0] == SPLIT_CODES[s]]).tolist())
            entry[column] = {"held_out": len(evaluated - train), "of": len(evaluated)}
        out[s] = entry
    return out


def candidate_columns(parts: dict, fields, parameters: dict) -> list:
    """Every column the pool of distinct rows keeps: the text columns, ``target``, the fields, labels,
    signals, behaviour columns and groups."""
    from split_builders.evidence.fields import LABEL_NAMES

    names = []
    for splits in parts.values():
        for part in splits.values():
            schema = part.table.schema
            names += [c for c in schema.names if c not in names and c != "source_id"
                      and (is_text_type(schema.field(c).type) or c == "target")]
    wanted = [*fields.columns, *LABEL_NAMES, *fields.signals, *(c for c, _ in HELD_OUT_COLUMNS)]
    wanted += [(v or {}).get("grouped_by") for v in parameters.values()]
    present = {c for splits in parts.values() for part in splits.values() for c in part.table.column_names}
    return list(dict.fromkeys([*names, *(c for c in wanted if c and c in present)]))
