"""The baseline probe: a fast, deterministic baseline trained on each config's train split and scored on its
validation and test splits, with a bootstrap interval and the relative error increase over the release's
baseline config (the one its method declares; ``random`` or ``standard`` for releases that record no fields),
as the Likelihood Splits paper reports its models' (Godbole & Jia, 2023).

What is trained depends on the task the release's ``fields`` record (:class:`split_builders.api.Fields`):

- **classification** (likelihood NLI / QA, pvi, curriculum): scikit-learn's ``TfidfVectorizer`` over word
  1-2-grams and a multinomial ``LogisticRegression`` (saga, ``MAX_ITER`` epochs at most, ``random_state`` =
  the seed) on the whole input (every text field in prompt order, each its own block of features, so a
  premise's words are not a hypothesis's), and the same on the query field alone (``query_only_accuracy``:
  the hypothesis-only baseline of Poliak et al. 2018 and CURRICULUM);
- **semantic parsing** (rows with a target program): nearest-neighbour retrieval, the target of the train
  input most similar by TF-IDF cosine (word 1-2-grams; the first such train row in ``source_id`` order on a
  tie), scored by exact match of the whitespace-normalised program (``accuracy``);
- **behavioural** (CheckList test cases): the pass rate of the suite's own predictions where the rows carry
  one outcome per test case (a boolean ``passed`` column); skipped with a reason where they do not.

Accuracy's 95% interval is ``scipy.stats.bootstrap``'s percentile interval of the mean of the per-row 0/1
outcomes (``RESAMPLES`` resamples, seeded from the seed, the config and the split). The relative error
increase of a split is ``(err - err_ref) / err_ref`` with ``err = 1 - accuracy`` and ``err_ref`` the
reference config's on the same split; null for the reference config itself and where there is none.

Every split is read in ``source_id`` order, so the numbers depend only on the rows and the seed; a release built
under the ``content`` row order rule is read in its rows' content order instead, so the same rows in any order
give the same numbers:
:func:`compute` probes an :class:`~split_builders.evidence.inputs.EvidenceInput` (the card's, and
``resplit probe``'s of a release, a dataset folder, a Hub id) through :func:`probe`; :mod:`.probe_card` shows it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.evidence.fields import PASSED_COLUMNS
from split_builders.evidence.pools import as_text

EVALUATION_SPLITS = ("validation", "test")
REFERENCE_CONFIGS = ("random", "standard")  # the first present is the relative error increase's reference
CONFIDENCE = 0.95
RESAMPLES = 1000
NGRAMS = (1, 2)
TOKENS = r"(?u)\b\w+\b"  # words, one letter included (GeoQuery's m0, SNLI's "a")
MAX_ITER = 1000
C = 1.0
DIGITS = 4
_CHUNK_BYTES = 1 << 26  # similarities computed per block of evaluation rows (bounds memory)

BASELINES = {
    "classification": "TF-IDF word 1-2-grams (one block per text field) + logistic regression (scikit-learn), on "
                      "the whole input and on the query alone",
    "semantic_parsing": "nearest-neighbour retrieval: the target program of the most similar train input by TF-IDF "
                        "cosine (word 1-2-grams), exact match",
    "behavioural": "the pass rate of the suite's own predictions (one pass/fail per test case)",
}


@dataclass
class ProbeFields:
    """What the probe reads of the resolved fields: ``text`` (in order: the whole input), ``query`` (the
    query-only baseline's input), ``label`` (classification), ``target`` (semantic parsing), ``passed``
    (behavioural: the suite's own outcome per test case); ``task`` says which baseline runs, None when none
    can (``reason`` says why)."""

    task: str | None
    text: list
    query: str | None = None
    label: str | None = None
    target: str | None = None
    passed: str | None = None
    reason: str | None = None

    @classmethod
    def of(cls, fields, columns, *, where: str = "the release") -> "ProbeFields":
        """The probe's reading of the resolved ``fields`` over the ``columns`` present."""
        columns = set(columns)
        passed = next((c for c in PASSED_COLUMNS if c in columns), None)
        text = [c for c in fields.text if c in columns]
        query, label, target, task = fields.query, fields.label, fields.target, fields.task
        if task == "classification" and not (text and label):
            return cls(None, text, query, label, reason=f"{where} has no {'label' if text else 'text'} column "
                                                        "to train a classifier on")
        if task == "semantic_parsing" and not (text and target):
            return cls(None, text, query, label, target, reason=f"{where} has no input and target program "
                                                                "columns to retrieve from")
        if task == "behavioural" and not passed:
            return cls(None, text, reason="the test cases carry no outcome of the suite's own predictions (a "
                                          "boolean `passed` column, one per test case); evaluate a model with "
                                          "the pass_rate metric instead")
        if task not in BASELINES:
            return cls(None, text, query, label, target,
                       reason=f"{where} has no label, target program or test outcome to predict")
        return cls(task, text, query, label, target, passed if task == "behavioural" else None)

    def record(self) -> dict:
        return {"task": self.task, "text": list(self.text), "query": self.query, "label": self.label,
                "target": self.target, **({"passed": self.passed} if self.passed else {})}


# ---------------------------------------------------------------------------------------------
# Columns as numpy
# ---------------------------------------------------------------------------------------------


def _in_order(table, content_seed: int | None = None):
    """``table`` in ``source_id`` order (stable), so that a build and its release agree row for row; with
    ``content_seed`` (a release built under the ``content`` row order rule), then in its rows' content order
    (:func:`~split_builders.splitters.partition.content_order` of each row's content key, every column but
    ``source_id``, under that seed), so that the same rows in any order train and score alike."""
    if "source_id" in table.column_names:
        ids = np.asarray(table.column("source_id").to_numpy(), dtype=np.int64)
        table = table if np.all(ids[1:] >= ids[:-1]) else table.take(np.argsort(ids, kind="stable"))
    if content_seed is None:
        return table
    from loading_scripts.tables import row_keys
    from split_builders.splitters.partition import content_order

    keys = row_keys(table, [n for n in table.column_names if n != "source_id"], content=True)
    return table.take(content_order(keys, content_seed))


def _texts(table, names) -> np.ndarray:
    """The ``names`` columns joined per row by a newline (nulls as empty), as an object array of str."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [as_text(table.column(n)).fill_null("") for n in names]
    if not columns:
        return np.full(table.num_rows, "", dtype=object)
    newline = pa.scalar("\n", pa.large_string())
    joined = columns[0] if len(columns) == 1 else pc.binary_join_element_wise(*columns, newline)
    return np.asarray(joined.to_numpy(zero_copy_only=False), dtype=object)


def _labels(table, name) -> tuple[np.ndarray, np.ndarray]:
    """The label column as strings, and which rows have one (not null, not a negative class id)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = table.column(name).combine_chunks()
    valid = column.is_valid()
    if pa.types.is_integer(column.type):
        valid = pc.and_(valid, pc.greater_equal(column, 0).fill_null(False))
    values = column.cast(pa.large_string()).fill_null("")
    return (np.asarray(values.to_numpy(zero_copy_only=False), dtype=object),
            np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool))


def _programs(table, name) -> np.ndarray:
    """The target programs with every run of whitespace one space, trimmed (exact match compares these)."""
    import pyarrow.compute as pc

    column = pc.replace_substring_regex(as_text(table.column(name)).fill_null(""), r"\s+", " ")
    column = pc.utf8_trim_whitespace(column)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=object)


# ---------------------------------------------------------------------------------------------
# The baselines: per-row outcomes (1 right, 0 wrong) on each evaluation split
# ---------------------------------------------------------------------------------------------


def _vectorizer():
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(ngram_range=NGRAMS, token_pattern=TOKENS, lowercase=True, sublinear_tf=True,
                           dtype=np.float64)


def classifier_outcomes(train_fields, train_labels, evaluated: dict, *, seed: int) -> dict:
    """TF-IDF word 1-2-grams + logistic regression trained on ``train_fields`` (a list of text arrays, one per
    field: each field has its own TF-IDF block, so a premise's words and a hypothesis's are distinct
    features) and ``train_labels`` (an array of str); ``evaluated`` maps a split to ``(fields, labels)``;
    returns ``{split: 0/1 outcomes}``. The model is scikit-learn's multinomial ``LogisticRegression``
    (saga, ``MAX_ITER`` epochs at most, ``random_state`` = ``seed``, which orders saga's passes:
    deterministic). A train split of one class predicts that class."""
    import warnings

    import scipy.sparse as sparse
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    classes = np.unique(train_labels)
    if len(classes) <= 1:  # nothing to learn: the one class (no class at all: nothing right)
        return {split: (labels == classes[0]).astype(np.int8) if len(classes) else np.zeros(len(labels), np.int8)
                for split, (_, labels) in evaluated.items()}
    vectorizers = [_vectorizer() for _ in train_fields]
    features = sparse.hstack([v.fit_transform(texts) for v, texts in zip(vectorizers, train_fields)]).tocsr()
    with warnings.catch_warnings():  # the iterations are bounded on purpose: the same work on every run
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=C, solver="saga", max_iter=MAX_ITER, random_state=seed).fit(features, train_labels)
    out = {}
    for split, (fields, labels) in evaluated.items():
        if not len(labels):
            out[split] = np.zeros(0, dtype=np.int8)
            continue
        matrix = sparse.hstack([v.transform(texts) for v, texts in zip(vectorizers, fields)]).tocsr()
        out[split] = (model.predict(matrix) == labels).astype(np.int8)
    return out


def nearest_neighbour(train_inputs, eval_inputs) -> np.ndarray:
    """For every evaluation input, the position of the train input with the highest TF-IDF cosine
    similarity (word 1-2-grams fitted on train; rows are L2-normalised, so the dot product is the cosine);
    the first such position on a tie, 0 for an input that shares no term with train."""
    vectorizer = _vectorizer()
    train = vectorizer.fit_transform(train_inputs)
    evaluated = vectorizer.transform(eval_inputs)
    step = max(1, _CHUNK_BYTES // (8 * max(1, train.shape[0])))
    transposed = train.T.tocsr()
    out = np.zeros(evaluated.shape[0], dtype=np.int64)
    for start in range(0, evaluated.shape[0], step):
        block = (evaluated[start:start + step] @ transposed).toarray()
        out[start:start + step] = block.argmax(axis=1)
    return out


def retrieval_outcomes(train_inputs, train_targets, evaluated: dict) -> dict:
    """Exact match of the nearest train row's target (:func:`nearest_neighbour`); ``evaluated`` maps a split
    to ``(inputs, targets)``."""
    return {split: (train_targets[nearest_neighbour(train_inputs, inputs)] == targets).astype(np.int8)
            if len(inputs) and len(train_inputs) else np.zeros(len(inputs), dtype=np.int8)
            for split, (inputs, targets) in evaluated.items()}


# ---------------------------------------------------------------------------------------------
# Accuracy, its interval, the relative error increase
# ---------------------------------------------------------------------------------------------


def _rng(seed: int, *names: str):
    """A generator seeded by ``seed`` and the names (config, split, baseline): one stream each, the same in
    every run."""
    return np.random.default_rng([int(seed), *(zlib.crc32(n.encode("utf-8")) for n in names)])


def accuracy_interval(outcomes, *, rng, resamples: int = RESAMPLES, confidence: float = CONFIDENCE) -> dict:
    """``{"accuracy", "ci_low", "ci_high"}`` of 0/1 ``outcomes``: their mean and the percentile bootstrap
    interval of the mean (``scipy.stats.bootstrap``); None for no rows, the accuracy itself for one row."""
    from scipy.stats import bootstrap

    outcomes = np.asarray(outcomes, dtype=np.float64)
    if outcomes.size == 0:
        return {"accuracy": None, "ci_low": None, "ci_high": None}
    accuracy = float(outcomes.mean())
    if outcomes.size == 1 or outcomes.min() == outcomes.max():
        low = high = accuracy
    else:
        result = bootstrap((outcomes,), np.mean, n_resamples=resamples, confidence_level=confidence,
                           method="percentile", vectorized=True, batch=max(1, _CHUNK_BYTES // (8 * outcomes.size)),
                           rng=rng)
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
    return {"accuracy": round(accuracy, DIGITS), "ci_low": round(low, DIGITS), "ci_high": round(high, DIGITS)}


def relative_error_increase(accuracy, reference) -> float | None:
    """``(err - err_ref) / err_ref`` with ``err = 1 - accuracy``; None without both, or with no reference error."""
    if accuracy is None or reference is None or 1.0 - reference <= 0:
        return None
    return round(((1.0 - accuracy) - (1.0 - reference)) / (1.0 - reference), DIGITS)


# ---------------------------------------------------------------------------------------------
# The probe
# ---------------------------------------------------------------------------------------------


def reference_config(names, fields=None, record: dict | None = None) -> str | None:
    """The config whose errors the others are compared with: the declared baseline (``Fields.baseline``) where
    the release records its fields, else (older releases, foreign datasets) ``random``, else ``standard``; None
    where that config is not among ``names``."""
    from split_builders.contracts import Fields

    if Fields.from_record(record) is not None:
        return fields.baseline if fields is not None and fields.baseline in names else None
    return next((name for name in REFERENCE_CONFIGS if name in names), None)


def _selected(tables: dict, configs, where: str) -> list:
    if not configs:
        return list(tables)
    configs = list(dict.fromkeys(configs))
    unknown = [c for c in configs if c not in tables]
    if unknown:
        raise InvalidParameterError(f"{where} has no config {', '.join(map(repr, unknown))}; its configs: "
                                    f"{', '.join(tables) or 'none'}")
    return configs


def _config_outcomes(splits: dict, fields: ProbeFields, seed: int) -> dict:
    """``{split: {"accuracy": outcomes, "query_only": outcomes}}`` of one config's evaluation splits."""
    evaluated = [s for s in EVALUATION_SPLITS if s in splits]
    train = splits.get("train")
    if fields.task == "behavioural":
        return {s: {"accuracy": np.asarray(splits[s].column(fields.passed).fill_null(False).to_numpy(
            zero_copy_only=False), dtype=np.int8)} for s in evaluated}
    if fields.task == "semantic_parsing":
        found = retrieval_outcomes(_texts(train, fields.text), _programs(train, fields.target),
                                   {s: (_texts(splits[s], fields.text), _programs(splits[s], fields.target))
                                    for s in evaluated})
        return {s: {"accuracy": found[s]} for s in evaluated}
    labels, valid = _labels(train, fields.label)
    parts = {s: _labels(splits[s], fields.label) for s in evaluated}
    out = {s: {} for s in evaluated}
    inputs = {"accuracy": fields.text}
    if fields.query and fields.text != [fields.query]:
        inputs["query_only"] = [fields.query]
    for kind, names in inputs.items():
        found = classifier_outcomes(
            [_texts(train, [n])[valid] for n in names], labels[valid],
            {s: ([_texts(splits[s], [n])[ok] for n in names], values[ok]) for s, (values, ok) in parts.items()},
            seed=seed)
        for s in evaluated:
            out[s][kind] = found[s]
    if fields.query and "query_only" not in inputs:  # the query is the whole input
        for s in evaluated:
            out[s]["query_only"] = out[s]["accuracy"]
    return out


def compute(data, *, seed: int = 0, configs=None, progress: bool = False) -> dict:
    """The probe of ``data`` (an :class:`~split_builders.evidence.inputs.EvidenceInput`), of ``configs``."""
    tables = {config: data.tables(config) for config in data.parts}
    return probe(tables, fields=data.fields, record=data.record, seed=seed, configs=configs, progress=progress,
                 where=data.where)


def probe(tables: dict, *, fields=None, record: dict | None = None, seed: int = 0, configs=None,
          resamples: int = RESAMPLES, progress: bool = False, where: str = "the release") -> dict:
    """The baseline probe of ``tables`` (``{config: {split: pyarrow.Table}}``), of ``configs`` (default: every
    config with a train split and a validation or test split); ``record`` is the release's ``resplit:``
    provenance; ``fields`` the resolved fields (default: resolved from the rows and ``record``).

    Returns ``{"baseline", "task", "seed", "confidence", "resamples", "fields", "reference", "skipped",
    "configs": {config: {split: {"rows", "accuracy", "ci_low", "ci_high", "query_only_accuracy",
    "query_only_ci_low", "query_only_ci_high" (classification), "relative_error_increase"}}}}``;
    ``skipped`` is None, or the reason no baseline could run (``configs`` is then empty).
    """
    from split_builders.progress import progress_bar

    seed = int(seed)
    chosen = _selected(tables, configs, where)
    usable = [c for c in chosen if "train" in tables[c] and any(s in tables[c] for s in EVALUATION_SPLITS)]
    if not usable:
        raise InvalidParameterError(f"{where} has no config with a train split and a validation or test split to "
                                    f"probe (configs: {', '.join(chosen) or 'none'})")
    if fields is None:
        from split_builders.evidence.inputs import EvidenceInput

        fields = EvidenceInput.from_splits(tables, record=record, where=where).fields
    reference = reference_config(tables, fields, record)
    if reference is not None and ("train" not in tables[reference]
                                  or not any(s in tables[reference] for s in EVALUATION_SPLITS)):
        reference = None
    # Each config is read with the fields its own columns hold: a release of several tables (CURRICULUM's
    # hypothesis-only configs have no premise) declares one set of fields for all of them.
    per_config = {c: ProbeFields.of(fields, tables[c]["train"].column_names, where=f"{where} config {c!r}")
                  for c in dict.fromkeys([*usable, *([reference] if reference else [])])}
    fields = per_config[usable[0]]
    report = {"baseline": BASELINES.get(fields.task, "none"), "task": fields.task, "seed": seed,
              "confidence": CONFIDENCE, "resamples": resamples, "fields": fields.record(), "reference": reference,
              "skipped": fields.reason, "configs": {}}
    if fields.task is None:
        return report
    unable = {c: f.reason or f"its task is {f.task}, not {fields.task}" for c, f in per_config.items()
              if f.task != fields.task}
    if unable:  # said in the report, never a KeyError on a column the config lacks
        report["skipped_configs"] = {c: unable[c] for c in usable if c in unable}
    usable = [c for c in usable if c not in unable]
    if reference in unable:
        reference = report["reference"] = None
    order = usable + ([reference] if reference and reference not in usable else [])
    from split_builders.splitters.partition import CONTENT, recorded_row_order

    content = seed if recorded_row_order((record or {}).get("parameters")) == CONTENT else None
    results = {}
    for config in progress_bar(order, description="baseline probe", unit="config", enabled=progress):
        splits = {s: _in_order(t, content) for s, t in tables[config].items()}
        results[config] = {}
        for split, outcomes in _config_outcomes(splits, per_config[config], seed).items():
            entry = {"rows": int(len(outcomes["accuracy"]))}
            entry.update(accuracy_interval(outcomes["accuracy"], rng=_rng(seed, config, split, "accuracy"),
                                           resamples=resamples))
            if "query_only" in outcomes:
                query = accuracy_interval(outcomes["query_only"], rng=_rng(seed, config, split, "query_only"),
                                          resamples=resamples)
                entry.update({f"query_only_{k}": v for k, v in query.items()})
            results[config][split] = entry
    for config in usable:
        for split, entry in results[config].items():
            base = results.get(reference, {}).get(split) if reference and config != reference else None
            entry["relative_error_increase"] = relative_error_increase(entry["accuracy"], base and base["accuracy"])
        report["configs"][config] = results[config]
    return report
