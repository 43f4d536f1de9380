"""``resplit lexical-overlap``: evaluation rows that share the fewest content words with any training row.

Each row's content words are the lowercased words of its text fields (two or more letters or digits) less
scikit-learn's English stop words (``ENGLISH_STOP_WORDS``). Its signal, ``overlap``, is the largest content-word
overlap it has with any *other* row (``--measure jaccard``: |shared| / |union|; ``coverage``: the share of its own
content words the other row has), computed on whole columns with sparse matrix products; with ``--group-field``,
rows of its own group are not counted (they stay in its split). Rows are held out lowest overlap first, so every
evaluation row's overlap with any training row is at most its ``overlap``. A row without a content word has
overlap 1 (nothing of it is new: it is held out last, and the card says how many there are); a row without any
text is refused, and a row without a label dropped and counted (the one policy of every family). Without
``--text-fields``, a file in SNLI's or BoolQ's layout is read by its reader, as ``resplit likelihood`` reads it. Configs
(:func:`split_builders.splitters.lexical_overlap.lexical_overlap_configs`):

* ``lexical_overlap``: the rows (or whole groups) of lowest overlap held out, label-balanced;
* ``random``: a seeded random split of the same sizes (the baseline evidence compares with).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.splits import check_size, parse_size
from split_builders.errors import EmptyTextError, FieldError, InvalidParameterError
from split_builders.splitters.lexical_overlap import lexical_overlap_configs
from split_builders.splitters.partition import CONTENT, content_keys, in_row_order, recorded_row_order

MEASURES = ("jaccard", "coverage")
BLOCK_CELLS = 5_000_000  # row pairs per sparse product block (bounds the memory of one block)


@dataclass(kw_only=True)
class LexicalOverlapOptions(CommonOptions):
    """Options of ``resplit lexical-overlap`` (the common ones come from :class:`CommonOptions`)."""

    text_fields: tuple[str, ...] | None = option(
        None, "comma-separated text fields whose content words are compared, e.g. premise,hypothesis (default for "
              "named sources: their prompt and query fields)", group="source", role="input")
    label_field: str | None = option(None, "the label field: evaluation sets are balanced over it (default for "
                                           "named sources: label)", group="source", role="label")
    measure: str = option("jaccard", "overlap of two rows' content words: jaccard (shared / union) or coverage "
                                     "(share of the row's own content words the other row has)", choices=MEASURES,
                          group="signal")
    validation_size: int | float = option(0.1, "validation rows: a count, or a fraction in (0, 1) of the rows",
                                          parse=parse_size, group="split")
    test_size: int | float = option(0.1, "test rows: a count, or a fraction in (0, 1) of the rows", parse=parse_size,
                                    group="split")

    def validate(self) -> None:
        self.validation_size = check_size(self.validation_size, "validation_size")
        self.test_size = check_size(self.test_size, "test_size", allow_zero=False)


class LexicalOverlapMethod(SplitMethod):
    """Hold out the rows that share the fewest content words with any other row."""

    info = MethodInfo(
        name="lexical-overlap",
        paper="resplit's lexical-overlap split: evaluation rows of least content-word overlap with any training row",
        summary="hold out the rows sharing the fewest content words with any training row (and a random baseline)",
        config_names=("lexical_overlap", "random"),
        options=LexicalOverlapOptions,
        signal_columns={"overlap": "continuous"},
        baseline_config="random",
        harness_task=HarnessTask("classification"),
        default_source="snli-sample",
        requires=("scikit-learn", "scipy"))

    def load(self, options: LexicalOverlapOptions) -> Loaded:
        from loading_scripts.labels import encode_labels
        from loading_scripts.source import MISSING_LABEL, check_field_types, check_no_gold_marker, content_sha256

        src, dataset, text_fields, label_field = read_rows(options.source, options.text_fields, options.label_field)
        name = src.name if src is not None else options.source
        if not text_fields:
            raise FieldError("(none given)", dataset.column_names, role="text", source=f"{name}: pass --text-fields")
        for role, column in [*(("text", f) for f in text_fields), ("label", label_field or "(none given)")]:
            if column not in dataset.column_names:
                raise FieldError(column, dataset.column_names, role=role, source=name)
        check_field_types(dataset, name=name, text_fields=list(text_fields), label_field=label_field)
        check_no_gold_marker(dataset, label_field, name=name, hint=f"drop the rows whose {label_field!r} is '-'")
        filters = dict(src.filtered) if src is not None else {}
        dataset, dropped = _labelled(dataset, label_field)  # the one policy: a row without a label is dropped, counted
        if dropped:
            filters[MISSING_LABEL] = int(filters.get(MISSING_LABEL, 0)) + dropped
        if options.limit is not None and options.limit < len(dataset):
            filters[f"beyond --limit {options.limit}"] = len(dataset) - options.limit
            dataset = dataset.select(range(options.limit))
        _check_texts(dataset, text_fields, name)
        info = SourceInfo.of(src, name=name, rows=len(dataset), content_sha256=content_sha256(dataset), filters=filters)
        return Loaded(OverlapRows(dataset, tuple(text_fields), label_field,
                                  encode_labels(dataset[label_field], order="sorted")[0]), info)

    def row_keys(self, loaded: Loaded):
        """Rows with the same text fields and label are exact duplicates (``--dedupe``)."""
        from loading_scripts.tables import row_keys

        rows = loaded.data
        return row_keys(rows.dataset, [*dict.fromkeys(rows.text_fields), rows.label_field])

    def select_rows(self, loaded: Loaded, keep) -> Loaded:
        rows, keep = loaded.data, np.asarray(keep, dtype=np.int64)
        return Loaded(dataclasses.replace(rows, dataset=rows.dataset.select(keep), labels=rows.labels[keep]),
                      loaded.info)

    def check_loaded(self, loaded: Loaded, options: LexicalOverlapOptions) -> None:
        """The sizes against the rows, before any overlap is computed."""
        from split_builders.splitters.base import resolve_eval_sizes

        resolve_eval_sizes(options.validation_size, options.test_size, len(loaded.data.dataset))

    def groups(self, loaded: Loaded, field: str):
        """A column of the rows (an SNLI premise): its groups are held out whole, and a row's overlap leaves out
        the rows of its own group."""
        from split_builders.splitters.groups import column_groups

        return column_groups(loaded.data.dataset, field, source=loaded.info.name, label_field=loaded.data.label_field)

    def signal(self, loaded: Loaded, options: LexicalOverlapOptions, context) -> Signal:
        rows = loaded.data
        overlap, vocabulary, rows.no_content = largest_overlap(rows.texts(), groups=loaded.groups,
                                                               measure=options.measure, source=loaded.info.name)
        provenance = {"kind": f"largest content-word overlap ({options.measure}) with any other row",
                      "measure": options.measure, "text_fields": list(rows.text_fields),
                      "stop_words": "scikit-learn ENGLISH_STOP_WORDS", "token_pattern": r"(?u)\b\w\w+\b",
                      "vocabulary": vocabulary, "own_group_excluded": loaded.groups is not None}
        if rows.no_content.any():  # recorded where there are any (a release without them is as it was)
            provenance["rows_without_content_words"] = int(rows.no_content.sum())
        return Signal(overlap, provenance, f"{vocabulary} content words; mean largest overlap {overlap.mean():.3f}")

    def configs(self, loaded: Loaded, signal: Signal, options: LexicalOverlapOptions) -> list:
        from split_builders.splitters.groups import group_parameters

        rows = loaded.data
        keys = _content_keys(rows) if options.row_order == CONTENT else None
        configs = in_row_order(lexical_overlap_configs, keys, options.seed, groups="groups",
                               per_row=dict(overlap=signal.values, labels=rows.labels, groups=loaded.groups),
                               validation_size=options.validation_size, test_size=options.test_size,
                               random_state=options.seed, group_field=options.group_field)
        for config in configs:
            config.parameters.update(text_fields=list(rows.text_fields), label_field=rows.label_field)
            if loaded.groups is not None:
                config.parameters.update(group_parameters(loaded.groups, options.group_field))
        return configs

    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        from loading_scripts.labels import release_rows

        released = release_rows(loaded.data.dataset, label_field=loaded.data.label_field)
        return released.add_column("overlap", np.asarray(signal.values, dtype=np.float64))

    def fields(self, loaded: Loaded, signal: Signal, options: LexicalOverlapOptions) -> Fields:
        from loading_scripts.labels import LABEL, label_names

        rows = loaded.data
        return Fields("classification", text=rows.text_fields, query=rows.text_fields[-1], label=LABEL,
                      label_names=label_names(rows.dataset, rows.label_field))

    def card(self, loaded: Loaded, signal: Signal, configs: list, options: LexicalOverlapOptions):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        overlap, provenance = signal.values, signal.provenance
        measure = "|shared| / |union|" if options.measure == "jaccard" else "the share of the row's own content words"
        how_built = [
            "Content words: the lowercased words (two or more letters or digits) of "
            f"{', '.join(provenance['text_fields'])} "
            f"less scikit-learn's English stop words ({provenance['vocabulary']} distinct). A row's `overlap` is its "
            f"largest overlap ({options.measure}: {measure}) with any other row"
            + (", rows of its own group left out" if provenance["own_group_excluded"] else "") + ".",
            "`lexical_overlap` holds out the rows of lowest `overlap` (balanced over the label), so no evaluation row "
            "shares more than its `overlap` with any training row; `random` is a seeded random split of the same "
            "sizes.",
        ]
        if provenance.get("rows_without_content_words"):
            held_config = next(c for c in configs if c.name == "lexical_overlap")
            evaluated = np.concatenate([np.asarray(held_config.indices[s], dtype=np.int64)
                                        for s in held_config.splits if s != "train"])
            held = int(loaded.data.no_content[evaluated].sum())
            how_built.append(
                f"{provenance['rows_without_content_words']} row(s) have no content word (every word a stop word or a "
                "single character): nothing of theirs can be new, so their `overlap` is 1, as if shared whole, and "
                f"they are held out last ({held} of them in an evaluation split of `lexical_overlap`).")
        sections = []
        for config in configs:
            series = {s: overlap[np.asarray(config.indices[s], dtype=np.int64)] for s in config.splits}
            means = ", ".join(f"{s} {v.mean():.3f}" for s, v in series.items() if v.size)
            sections.append(Section(f"`{config.name}`", f"{config.description}. Mean overlap: {means}.", [
                Figure(f"figures/{config.name}.png", f"largest content-word overlap: {config.name}",
                       [Panel(f"overlap ({options.measure})", series)], alt=f"overlap per split of {config.name}")]))
        return CardSpec(title=self.pretty_name(loaded),
                        intro=f"Splits of {loaded.info.name} whose evaluation rows share the fewest content words "
                              "with any training row, and a random split of the same sizes.",
                        how_built=how_built, configs=sections)

    def pretty_name(self, loaded: Loaded) -> str:
        return f"Lexical-overlap splits of {Path(loaded.info.name).name}"

    def rederive(self, released, record: dict) -> list:
        """Both configs from the released rows' ``overlap`` and label (rows in ``source_id`` order), through
        :func:`~split_builders.splitters.lexical_overlap.lexical_overlap_configs` with the recorded sizes, seed
        and group field."""
        from split_builders.splitters.groups import group_codes

        members = [c for c in released.configs if c in self.info.config_names]
        if not members:
            return []
        rows, parameters = released.all_rows(members), record["configs"][members[0]]["parameters"]
        column = lambda name: rows.column(name).to_numpy(zero_copy_only=False)  # noqa: E731
        field = parameters.get("grouped_by")
        keys = None
        if recorded_row_order(record.get("parameters")) == CONTENT:
            keys = content_keys(rows, parameters["text_fields"], label="label",
                                label_names=(record.get("fields") or {}).get("label_names") or ())
        configs = in_row_order(lexical_overlap_configs, keys, parameters["random_state"], groups="groups",
                               per_row=dict(overlap=np.asarray(column("overlap"), dtype=np.float64),
                                            labels=np.asarray(column("label")),
                                            groups=None if field is None else group_codes(column(field))),
                               validation_size=parameters["validation_size"], test_size=parameters["test_size"],
                               random_state=parameters["random_state"], group_field=field)
        for config in configs:
            config.rows = rows
        return configs

    def example_arguments(self, data, work) -> list:
        """600 labelled rows of the SNLI 1.0 test file, one per premise (premise, hypothesis, gold label), 60 + 60
        held out."""
        return ["--source", str(_snli_rows(data, work, 600)), "--text-fields", "premise,hypothesis", "--label-field",
                "gold_label", "--validation-size", "60", "--test-size", "60"]

    def group_example(self, data, work, values) -> tuple:
        """SNLI rows with a ``grp`` column holding ``values`` (one per row): ``(arguments, "grp")``."""
        import json

        rows = [json.loads(line) for line in _snli_rows(data, work, len(values)).read_text().splitlines()]
        source = Path(work) / "snli_groups.jsonl"
        source.write_text("".join(json.dumps({**row, "grp": value}) + "\n" for row, value in zip(rows, values)))
        return (["--source", str(source), "--text-fields", "premise,hypothesis", "--label-field", "gold_label",
                 "--validation-size", "30", "--test-size", "30", "--group-field", "grp"], "grp")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


@dataclass
class OverlapRows:
    """The rows to compare and how to read them."""

    dataset: object        # datasets.Dataset, rows with a label only
    text_fields: tuple
    label_field: str
    labels: np.ndarray     # label ids
    no_content: np.ndarray | None = None  # rows without a content word (what the signal found)

    def texts(self) -> list:
        """Each row's text fields joined by a space (a missing text is empty)."""
        columns = [self.dataset[f] for f in dict.fromkeys(self.text_fields)]
        return [" ".join("" if t is None else str(t) for t in parts) for parts in zip(*columns)]


def read_rows(source: str, text_fields, label_field) -> tuple:
    """``(src, dataset, text_fields, label_field)``: a table file with ``--text-fields`` given is read as it is
    (``src`` None); anything else goes through :func:`loading_scripts.load_source`, as ``resplit likelihood`` reads
    it: a named source or Hub id, or a file in SNLI's or BoolQ's layout (official, or the Hub's: how a DataFrame
    of SNLI arrives), with its reader's fields, filters and prompt / query fields as the text fields."""
    from loading_scripts import detect_task, load_source
    from loading_scripts.files import read_table
    from loading_scripts.source import with_row_numbers

    if Path(source).exists():
        table = read_table(source)
        task = None if text_fields else detect_task(table.column_names)
        if task is None:
            return None, with_row_numbers(table, name=source), text_fields, label_field
        src = load_source(source, task=task)
    else:
        src = load_source(source)
    return (src, src.dataset, text_fields or tuple(f for f in (src.prompt_field, src.query_field) if f),
            label_field or src.label_field)


def _labelled(dataset, label_field: str) -> tuple:
    """The rows that have a label and how many did not (:func:`loading_scripts.source.missing_labels`: null, blank,
    NaN, a ``ClassLabel``'s -1), as every family drops them."""
    from loading_scripts.source import missing_labels

    missing = missing_labels(dataset, label_field)
    if not missing.size:
        return dataset, 0
    return dataset.select(np.setdiff1d(np.arange(len(dataset)), missing)), int(missing.size)


def _check_texts(dataset, text_fields, name: str) -> None:
    """Refuse rows with no text at all (every text field missing or blank), naming their ``source_id``: they have
    no words to compare, and the evidence reads every row's text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from loading_scripts.tables import arrow_column

    empty = None
    for field_name in dict.fromkeys(text_fields):
        column = arrow_column(dataset, field_name).cast(pa.string())
        blank = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(column), ""), True)
        empty = blank if empty is None else pc.and_(empty, blank)
    rows = np.flatnonzero(np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool))
    if rows.size:
        ids = np.asarray(arrow_column(dataset, "source_id").take(pa.array(rows[:10])).to_pylist())
        shown = ", ".join(map(str, ids)) + (" ..." if rows.size > 10 else "")
        raise EmptyTextError(f"{rows.size} row(s) of {name} have no text in {', '.join(map(repr, text_fields))} "
                             f"(source_id {shown}): there are no words to compare; drop those rows")


def largest_overlap(texts, *, groups=None, measure: str = "jaccard", source: str = "the source") -> tuple:
    """Each row's largest content-word overlap with any other row (of another group, where ``groups`` are given),
    the number of distinct content words and which rows have none: ``(overlap float64 array, vocabulary size,
    boolean array)``. A row without a content word (only stop words and single characters) has overlap 1: every
    content word it has (none) is shared, so it is held out last rather than first, where an overlap of 0 would
    put it among the rows of the most new words. Whole columns: a binary document-term matrix (scikit-learn's
    ``CountVectorizer``, English stop words) and its sparse products, a block of rows at a time."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import CountVectorizer

    if measure not in MEASURES:
        raise InvalidParameterError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
    try:
        words = CountVectorizer(lowercase=True, stop_words="english", binary=True, dtype=np.int32)
        matrix = words.fit_transform(texts).tocsr()
    except ValueError:  # scikit-learn: empty vocabulary
        raise InvalidParameterError(f"{source}: no row has a content word (every word is a stop word or a single "
                                    "character): there is no overlap to split by") from None
    n = matrix.shape[0]
    sizes = np.asarray(matrix.sum(axis=1)).ravel().astype(np.float64)
    transposed = matrix.T.tocsr()
    codes = None if groups is None else np.asarray(groups, dtype=np.int64)
    overlap = np.zeros(n, dtype=np.float64)
    step = max(1, BLOCK_CELLS // max(n, 1))
    for start in range(0, n, step):
        shared = (matrix[start:start + step] @ transposed).tocsr()
        rows = np.repeat(np.arange(start, start + shared.shape[0]), np.diff(shared.indptr))
        columns, both = shared.indices, shared.data.astype(np.float64)
        value = both / (sizes[rows] + sizes[columns] - both) if measure == "jaccard" else both / sizes[rows]
        value[columns == rows] = 0.0  # not with itself
        if codes is not None:
            value[codes[columns] == codes[rows]] = 0.0  # nor with its own group
        block = sp.csr_matrix((value, columns, shared.indptr), shape=shared.shape)
        overlap[start:start + shared.shape[0]] = block.max(axis=1).toarray().ravel()
    no_content = sizes == 0
    overlap[no_content] = 1.0
    return overlap, len(words.vocabulary_), no_content


def _content_keys(rows: OverlapRows) -> np.ndarray:
    """Each row's content key: its text fields and its label by name, as released."""
    from split_builders.splitters.partition import source_content_keys

    return source_content_keys(rows.dataset, rows.text_fields, label_field=rows.label_field)


def _snli_rows(data, work, n: int) -> Path:
    """The first ``n`` rows of SNLI 1.0's test file with a gold label and a premise of their own (the first
    hypothesis of each premise), as JSONL (premise, hypothesis, gold_label)."""
    import gzip
    import json

    path = Path(work) / f"snli_test_{n}.jsonl"
    if not path.exists():
        out, premises = [], set()
        with gzip.open(Path(data) / "data" / "snli" / "snli_1.0_test.jsonl.gz", "rt", encoding="utf-8") as lines:
            for line in lines:
                row = json.loads(line)
                if row["gold_label"] != "-" and row["sentence1"] not in premises:
                    premises.add(row["sentence1"])
                    out.append(json.dumps({"premise": row["sentence1"], "hypothesis": row["sentence2"],
                                           "gold_label": row["gold_label"]}) + "\n")
                if len(out) == n:
                    break
        path.write_text("".join(out), encoding="utf-8")
    return path
