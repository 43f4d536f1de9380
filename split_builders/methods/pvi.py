"""``resplit pvi``: PVI difficulty splits of any labelled dataset.

Per-example pointwise V-information (PVI, Ethayarajh et al. 2022) is cross-fitted over the rows
(:class:`~split_builders.signals.pvi.crossfit.CrossFitPVI`: every row scored by models that never
trained on it), then :class:`~split_builders.splitters.difficulty.DifficultySplitter` builds the
``simple``, ``hard``, ``simple_to_hard`` and ``hard_to_simple`` configs, as CURRICULUM (Chen &
Gao 2022) uses them. The released rows carry ``pvi``, ``h_yx``, ``h_yb`` (bits), ``pvi_fold`` and
``difficulty``.

``--dedupe`` drops rows whose text fields and label equal an earlier row's (the first ``source_id``
is kept), before PVI is computed.

What ``resplit curriculum --pvi`` shares with this module lives beside the pieces it belongs to:
the configs in :mod:`split_builders.splitters.difficulty`, the fold checks and the PVI columns in
:mod:`split_builders.signals.pvi`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.errors import FieldError, InvalidParameterError, SourceLoadError
from split_builders.signals.pvi.columns import pvi_figure, pvi_summary, summary_markdown, with_pvi_columns
from split_builders.signals.pvi.crossfit import check_fold_labels, pvi_cache_dir
from split_builders.splitters.difficulty import CONFIGS, difficulty_configs, part_mask, rederive_configs, rule_text
from split_builders.splitters.partition import (CONTENT, back_in_place, content_keys, content_order, in_row_order,
                                               recorded_row_order, take_rows)

PAPER = ("Ethayarajh, Choi & Swayamdipta 2022, Understanding Dataset Difficulty with V-Usable Information "
         "(PVI), as used by CURRICULUM (Chen & Gao 2022)")
FAMILIES = ("hashed", "transformers")
NULL_MODELS = ("prior", "trained")


@dataclass(kw_only=True)
class PVIOptions(CommonOptions):
    """Options of ``resplit pvi``. ``limit`` keeps the first N rows of the source (before rows
    without a label are dropped)."""

    text_fields: tuple[str, ...] | None = option(
        None, "comma-separated input fields, e.g. premise,hypothesis (default for named sources: "
              "premise,hypothesis)", group="source", role="input")
    label_field: str | None = option(None, "the label field (default for named sources: label)", group="source",
                                     role="label")
    family: str = option("hashed", "predictive family: hashed n-gram linear model on the CPU, or a transformers "
                                   "sequence classifier fine-tuned with Trainer (--model)",
                         choices=FAMILIES, group="signal")
    model: str | None = option(None, "transformers family: Hub id or folder of the classifier to fine-tune",
                               group="signal")
    epochs: int | None = option(None, "training epochs (default: 3)", group="signal", integer=True, minimum=1)
    folds: int = option(5, "cross-fitting folds", group="signal", integer=True, minimum=2)
    group_field: str | None = option(
        None, "rows with the same value of this field share a cross-fitting fold (default: the first text "
              "field when there are two or more, e.g. the premise; 'none': no groups)", group="signal")
    null: str = option("prior", "null model: the label prior (the exact optimum of training on a null input) "
                                "or the family trained on empty inputs", choices=NULL_MODELS, group="signal")
    cache_dir: str | None = option(None, "per-fold checkpoint folder (default: $RESPLIT_CACHE/pvi)",
                                   group="signal", record=False)
    curriculum_compat: bool = option(False, "CURRICULUM's midrange threshold and 60/40 train/validation "
                                            "division (seed 42)", group="split", conflicts=("validation_size",),
                                     conflict_note="CURRICULUM's division is 60/40 whatever --validation-size says")
    validation_size: float = option(0.4, "share of each part (simple, hard) that goes to validation, a "
                                         "fraction in (0, 1)", parse=float, group="split", minimum=0, maximum=1,
                                    exclusive=("minimum", "maximum"))

    def validate(self) -> None:
        if self.family == "transformers" and not self.model:
            raise InvalidParameterError("the transformers family needs a model (--model HUB_ID_OR_FOLDER)")
        if self.family == "hashed" and self.model:
            raise InvalidParameterError(f"--model {self.model!r} is for --family transformers; the hashed family "
                                        "trains no model it could load: add --family transformers or drop --model")


class PVIMethod(SplitMethod):
    """PVI difficulty splits (``resplit pvi``)."""

    info = MethodInfo(
        name="pvi",
        paper=PAPER,
        summary="PVI difficulty splits (simple / hard) of any labelled dataset",
        config_names=CONFIGS,
        options=PVIOptions,
        signal_columns={"pvi": "continuous"},
        harness_task=HarnessTask("classification"),
        # `simple` and `hard` release train and validation (evaluated on validation: simple -> simple); the
        # cross-distribution configs add the other part as test.
        evaluation_splits=("test", "validation"),
        default_source="snli-sample")

    def check(self, options) -> None:
        from loading_scripts import NAMED_SOURCES

        if not Path(options.source).exists() and options.source not in NAMED_SOURCES:
            from loading_scripts.files import looks_like_path, not_found

            if looks_like_path(options.source):
                raise not_found(options.source, "--source", "a CSV/TSV/JSONL/JSON/Parquet file")
            raise SourceLoadError(f"source {options.source!r} is neither an existing file nor one of: "
                                  + ", ".join(NAMED_SOURCES))

    def load(self, options) -> Loaded:
        from loading_scripts.source import content_sha256
        from loading_scripts.labels import encode_labels

        dataset, src, text_fields, label_field = read_rows(options)
        name = src.name if src is not None else options.source
        _check_fields(dataset, name, text_fields, label_field)
        dataset, values, dropped = _labelled(dataset, label_field)
        labels, label_names = encode_labels(values, order="sorted")
        group_field = options.group_field
        if group_field in (None, "auto"):
            group_field = text_fields[0] if len(text_fields) >= 2 else None
        elif group_field in ("none", ""):
            group_field = None
        filters = dict(src.filtered) if src is not None else {}
        if dropped:
            filters["no label"] = dropped
        info = SourceInfo.of(src, name=name, rows=len(dataset), content_sha256=content_sha256(dataset), filters=filters)
        return Loaded(PVIRows(dataset, text_fields, label_field, group_field, labels, label_names.tolist()), info)

    def row_keys(self, loaded):
        """Exact duplicates are rows with the same text fields and label (``--dedupe``); a missing
        text equals an empty one, as the family reads it."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from loading_scripts.tables import arrow_table, row_keys

        rows = loaded.data
        table = arrow_table(rows.dataset, list(dict.fromkeys(rows.text_fields)))
        texts = [pc.fill_null(pc.cast(table.column(f), pa.string()), "") for f in rows.text_fields]
        fields = [f"text{i}" for i in range(len(texts))] + ["label"]
        return row_keys(pa.table(texts + [pa.array(rows.labels)], names=fields), fields)

    def select_rows(self, loaded, keep) -> Loaded:
        rows = loaded.data
        keep = np.asarray(keep, dtype=np.int64)
        return Loaded(dataclasses.replace(rows, dataset=rows.dataset.select(keep), labels=rows.labels[keep]),
                      loaded.info)

    def check_loaded(self, loaded, options) -> None:
        rows = loaded.data
        if rows.group_field is not None and rows.group_field not in rows.dataset.column_names:
            raise FieldError(rows.group_field, rows.dataset.column_names, role="group", source=loaded.info.name)
        check_fold_labels(rows.labels, options.folds, where=loaded.info.name)

    def groups(self, loaded, field):
        """One grouping mechanism: a field given with ``--group-field`` groups the cross-fitting folds
        (rows of a group share a fold) and the difficulty configs (a group is one unit, placed by its
        mean PVI, never straddling train / validation / test). ``auto`` (the default: the first text
        field groups the folds) and ``none`` leave the configs per example."""
        from split_builders.splitters.groups import column_groups

        if field in ("auto", "none", ""):
            return None
        return column_groups(loaded.data.dataset, field, source=loaded.info.name, label_field=loaded.data.label_field)

    def signal(self, loaded, options, context) -> Signal:
        from split_builders.progress import progress_bar
        from split_builders.signals.pvi.crossfit import CrossFitPVI
        from split_builders.signals.pvi.families import make_family
        from split_builders.splitters.groups import fold_groups

        rows = loaded.data
        extra = {"epochs": options.epochs} if options.epochs is not None else {}
        family = make_family(options.family, model=options.model, random_state=options.seed, **extra)
        scorer = CrossFitPVI(family, folds=options.folds, null=options.null, random_state=options.seed,
                             cache_dir=pvi_cache_dir(options.cache_dir))
        records = list(zip(*[["" if t is None else str(t) for t in rows.dataset[f]] for f in rows.text_fields]))
        labels, groups = rows.labels, rows.dataset[rows.group_field] if rows.group_field else None
        # the row order rule: folds and training draw over row positions, so the rows go in in their content order
        order = content_order(_content_keys(rows), options.seed) if options.row_order == CONTENT else None
        if order is not None:
            records, labels, groups = take_rows(records, order), labels[order], take_rows(groups, order)
        # one policy for missing group values: each is a group of its own (splitters.groups)
        groups = fold_groups(groups) if groups is not None else None
        with progress_bar(total=options.folds, description="PVI folds", unit="fold", enabled=context.progress) as bar:
            result = scorer.compute(records, labels, len(rows.label_names), groups=groups,
                                    progress=lambda done, folds: bar.update(1))
        if order is not None:  # back in the rows' own order
            result = dataclasses.replace(result, **{name: back_in_place(getattr(result, name), order)
                                                    for name in ("pvi", "h_yx", "h_yb", "fold", "correct")})
        provenance = {"kind": "cross-fitted pointwise V-information (bits)", "family": family.fingerprint(),
                      "folds": options.folds, "null": options.null, "group_field": rows.group_field,
                      "text_fields": rows.text_fields, "label_field": rows.label_field,
                      "I_V": result.v_information, "accuracy": float(result.correct.mean())}
        return Signal(result, provenance, summary=f"I_V = {result.v_information:.3f} bits")

    def configs(self, loaded, signal, options) -> list:
        rows = loaded.data
        parameters = {"curriculum_compat": bool(options.curriculum_compat), "folds": options.folds,
                      "null": options.null, "group_field": rows.group_field,
                      "family": signal.provenance["family"], "text_fields": rows.text_fields,
                      "label_field": rows.label_field}
        keys = _content_keys(rows) if options.row_order == CONTENT else None
        return in_row_order(difficulty_configs, keys, options.seed, groups="groups",
                            per_row=dict(pvi=signal.values.pvi, labels=rows.labels, groups=loaded.groups),
                            parameters=parameters, curriculum_compat=options.curriculum_compat,
                            validation_size=options.validation_size, random_state=options.seed,
                            group_field=options.group_field)

    def rows(self, loaded, signal, configs):
        from loading_scripts.labels import release_rows

        # the one label policy: the label field as the ClassLabel `label`, text as `string`
        released = release_rows(loaded.data.dataset, label_field=loaded.data.label_field)
        return with_pvi_columns(released, signal.values, _simple_mask(loaded, configs))

    def fields(self, loaded, signal, options) -> Fields:
        """The text fields in order (the last one is the query of a query-only baseline) and the
        label with its classes in id order."""
        from loading_scripts.labels import LABEL, label_names

        rows = loaded.data
        return Fields("classification", text=tuple(rows.text_fields), query=rows.text_fields[-1],
                      label=LABEL, label_names=label_names(rows.dataset, rows.label_field))

    def card(self, loaded, signal, configs, options):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        rows, result, info = loaded.data, signal.values, loaded.info
        summary = pvi_summary(result, rows.label_names, rows.labels, configs)
        groups = f"; rows sharing a {rows.group_field} share a fold" if rows.group_field else ""
        null = ("the label prior of the training folds." if options.null == "prior"
                else "the family trained on empty inputs.")
        dropped = info.filters.get("no label", 0)
        how_built = [
            f"Per-example pointwise V-information (PVI, Ethayarajh et al. 2022) in bits, cross-fitted over "
            f"{options.folds} folds (each row scored by models that never trained on it{groups}); null model: "
            f"{null} Input fields: {', '.join(rows.text_fields)}; label: {rows.label_field}"
            + (f"; {dropped} row(s) without a label dropped." if dropped else "."),
            "Simple/hard: " + rule_text(curriculum_compat=options.curriculum_compat,
                                        validation_size=options.validation_size),
            "`simple_to_hard`: train and validation from the simple part, test = every hard row; "
            "`hard_to_simple` the reverse.",
        ]
        sections = [Section(f"`{c.name}`", c.description, [Figure(f"figures/{c.name}.png", f"PVI per split: {c.name}", [
            Panel("PVI (bits)", {s: result.pvi[np.asarray(c.indices[s], dtype=np.int64)] for s in c.splits})],
            alt=f"PVI histograms per split of {c.name}")]) for c in configs]
        overview = Section("PVI of simple and hard rows", summary_markdown(summary), [pvi_figure(
            "figures/pvi_simple_vs_hard.png", "PVI: simple vs hard", result.pvi, _simple_mask(loaded, configs))])
        return CardSpec(title=f"PVI difficulty splits of {info.name}",
                        intro=f"Difficulty configs of {info.name} by pointwise V-information: `simple` and "
                              "`hard` halves per label, and the cross-distribution `simple_to_hard` / "
                              "`hard_to_simple` configs. Every row carries its `pvi`, `h_yx`, `h_yb` (bits), "
                              "`pvi_fold` and `difficulty`.",
                        how_built=how_built, configs=sections,
                        columns={"mean PVI (train)": {c: f"{s['train']['mean_pvi']:.3f}"
                                                      for c, s in summary["configs"].items()}},
                        extra=[overview])

    def pretty_name(self, loaded) -> str:
        return f"PVI difficulty splits of {Path(loaded.info.name).name}"

    def report(self, result) -> list[str]:
        rows = result.loaded.data
        summary = pvi_summary(result.signal.values, rows.label_names, rows.labels, result.configs)
        lines = [f"I_V = {summary['I_V']:.3f} bits, held-out accuracy {summary['accuracy']:.3f}"]
        for config, splits in summary["configs"].items():
            lines.append(f"{config:<16}" + "  ".join(f"{s} {e['rows']} (mean PVI {e['mean_pvi']:.3f})"
                                                     for s, e in splits.items()))
        return lines

    def rederive(self, released, record) -> list:
        """The four configs from the released rows' ``pvi`` and label (rows in ``source_id`` order) through
        :func:`~split_builders.splitters.difficulty.difficulty_configs` with the recorded rule, sizes and seed."""
        members = [c for c in released.configs if c in CONFIGS]
        if not members:
            return []
        rows, parameters = released.all_rows(members), record["configs"][members[0]]["parameters"]
        keys = None
        if recorded_row_order(record.get("parameters")) == CONTENT:  # else: built before the rule was recorded
            # the label as released (`label`), or as read (the recorded field: releases before the one label policy)
            label = parameters.get("label_field") if parameters.get("label_field") in rows.column_names else "label"
            keys = content_keys(rows, parameters.get("text_fields") or (), label=label,
                                label_names=(record.get("fields") or {}).get("label_names") or ())
        return rederive_configs(rows, parameters, keys=keys, seed=record.get("seed"))

    def example_arguments(self, data, work) -> list:
        """300 rows of CURRICULUM's boolean phenomenon (its validation file), two folds."""
        import zipfile

        boolean = Path(work) / "boolean_val.jsonl"
        with zipfile.ZipFile(Path(data) / "data" / "curriculum" / "tasks" / "boolean.zip") as archive:
            boolean.write_bytes(archive.read("boolean/val.jsonl"))
        return ["--source", str(boolean), "--text-fields", "premise,hypothesis", "--label-field", "gold_label",
                "--folds", "2", "--limit", "300", "--cache-dir", str(Path(work) / "pvi-cache")]

    def group_example(self, data, work, values) -> tuple:
        """CURRICULUM's boolean rows with a ``grp`` column holding ``values`` (one per row): ``(arguments, "grp")``."""
        import json
        import zipfile

        with zipfile.ZipFile(Path(data) / "data" / "curriculum" / "tasks" / "boolean.zip") as archive:
            rows = [json.loads(line) for line in archive.read("boolean/val.jsonl").decode().splitlines()[:len(values)]]
        source = Path(work) / "nli.jsonl"
        source.write_text("".join(json.dumps({**row, "grp": value}) + "\n" for row, value in zip(rows, values)))
        return (["--source", str(source), "--text-fields", "premise,hypothesis", "--label-field", "gold_label",
                 "--folds", "2", "--cache-dir", str(Path(work) / "pvi-cache"), "--group-field", "grp"], "grp")


@dataclass
class PVIRows:
    """The rows to score and how to read them."""

    dataset: object                 # datasets.Dataset, rows with a label only
    text_fields: list
    label_field: str
    group_field: str | None
    labels: np.ndarray              # label ids
    label_names: list               # the label values in id order


def read_rows(options):
    """The source's table, its name, the named source (or None) and the text / label fields
    (named sources have defaults)."""
    from loading_scripts import load_source
    from loading_scripts.files import read_table
    from loading_scripts.source import with_row_numbers

    text_fields, label_field = options.text_fields, options.label_field
    if Path(options.source).exists():
        dataset, src = with_row_numbers(read_table(options.source), name=options.source), None
    else:
        src = load_source(options.source)
        dataset = src.dataset
        text_fields = text_fields or [f for f in (src.prompt_field, src.query_field) if f]
        label_field = label_field or src.label_field
    if options.limit is not None:
        dataset = dataset.select(range(min(options.limit, len(dataset))))
    return dataset, src, list(text_fields or ()), label_field


def _check_fields(dataset, name, text_fields, label_field) -> None:
    """Every named field exists; a missing one is named with the fields that do."""
    if not text_fields:
        raise FieldError("(none given)", dataset.column_names, role="text", source=f"{name}: pass --text-fields")
    if label_field is None:
        raise FieldError("(none given)", dataset.column_names, role="label", source=f"{name}: pass --label-field")
    for role, column in [("text", f) for f in text_fields] + [("label", label_field)]:
        if column not in dataset.column_names:
            raise FieldError(column, dataset.column_names, role=role, source=name)
    from loading_scripts.source import check_field_types, check_no_gold_marker  # text that is text, one label per row

    check_field_types(dataset, name=name, text_fields=text_fields, label_field=label_field)
    check_no_gold_marker(dataset, label_field, name=name, hint=f"drop the rows whose {label_field!r} is '-'")


def _content_keys(rows: "PVIRows") -> np.ndarray:
    """Each row's content key: its text fields and its label by name, as released."""
    from split_builders.splitters.partition import source_content_keys

    return source_content_keys(rows.dataset, rows.text_fields, label_field=rows.label_field)


def _labelled(dataset, label_field):
    """Rows that have a label, and their label values (class names for a ``ClassLabel``)."""
    import datasets

    values = dataset[label_field]
    feature = dataset.features[label_field]
    if isinstance(feature, datasets.ClassLabel):
        values = [feature.int2str(v) if v is not None and v >= 0 else None for v in values]
    missing = np.asarray([v is None or (isinstance(v, str) and not v.strip()) for v in values], dtype=bool)
    if missing.any():  # rows without a label carry no PVI
        keep = np.flatnonzero(~missing)
        dataset, values = dataset.select(keep), [values[i] for i in keep]
    return dataset, values, int(missing.sum())


def _simple_mask(loaded, configs) -> np.ndarray:
    """The rows of the ``simple`` config (train and validation) as a boolean mask."""
    return part_mask(next(c for c in configs if c.name == "simple"), len(loaded.data.dataset))
