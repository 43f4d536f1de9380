"""``resplit pvi``: PVI difficulty splits of any labelled dataset.

Per-example pointwise V-information (PVI, Ethayarajh et al. 2022) is cross-fitted over the rows
(:class:`~split_builders.signals.pvi.crossfit.CrossFitPVI`: every row scored by models that never
trained on it), then :class:`~split_builders.splitters.difficulty.DifficultySplitter` builds the
``simple``, ``hard``, ``simple_to_hard`` and ``hard_to_simple`` configs, as CURRICULUM (Chen &
Gao 2022) uses them. The released rows carry ``pvi``, ``h_yx``, ``h_yb`` (bits), ``pvi_fold`` and
``difficulty``.

``--dedupe`` drops rows whose text fields and label equal an earlier row's (the first ``source_id``
is kept), before PVI is computed.

The helpers below (:func:`label_ids`, :func:`with_pvi_columns`, :func:`difficulty_configs`,
:func:`pvi_summary`, :func:`summary_markdown`) are shared with ``resplit curriculum --pvi``.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.api import CommonOptions, Loaded, Signal, SourceInfo, SplitMethod, option
from split_builders.errors import FieldError, InvalidParameterError, SourceLoadError
from split_builders.splitters.difficulty import CONFIGS, DifficultySplitter

PAPER = ("Ethayarajh, Choi & Swayamdipta 2022, Understanding Dataset Difficulty with V-Usable Information "
         "(PVI), as used by CURRICULUM (Chen & Gao 2022)")
DESCRIPTIONS = {
    "simple": "Rows with high PVI (easy for the predictive family); train and validation from the simple part.",
    "hard": "Rows with low PVI (hard or mislabelled); train and validation from the hard part.",
    "simple_to_hard": "Train and validation = `simple`; test = every hard row.",
    "hard_to_simple": "Train and validation = `hard`; test = every simple row.",
}
FAMILIES = ("hashed", "transformers")
NULL_MODELS = ("prior", "trained")


# ---- the shared pieces: labels, PVI columns, configs, summary -------------------------------------------


def label_ids(values) -> tuple[np.ndarray, list]:
    """Label values as ids ``0..C-1`` and the names in id order (sorted as strings)."""
    names = sorted(set(values), key=str)
    lookup = {name: i for i, name in enumerate(names)}
    return np.asarray([lookup[v] for v in values], dtype=np.int64), names


def pvi_cache_dir(cache_dir=None) -> Path:
    """Where per-fold PVI checkpoints go: ``cache_dir``, else ``<resplit cache>/pvi``."""
    from split_builders.cache import cache_root

    return Path(cache_dir) if cache_dir else cache_root() / "pvi"


def splitter_for(config: str, options) -> DifficultySplitter:
    """The splitter of one config under the options' rule (``curriculum_compat`` or the median)."""
    if options.curriculum_compat:
        return DifficultySplitter.curriculum_compat(config)
    return DifficultySplitter(config=config, validation_size=getattr(options, "validation_size", 0.4),
                              random_state=options.seed)


def with_pvi_columns(dataset, result, simple):
    """``dataset`` plus ``pvi``, ``h_yx``, ``h_yb`` (float64, bits), ``pvi_fold`` and ``difficulty``
    (``simple`` where the boolean mask ``simple`` is true, else ``hard``)."""
    import datasets

    difficulty = np.where(np.asarray(simple, dtype=bool), "simple", "hard").tolist()
    columns = {"pvi": (result.pvi, datasets.Value("float64")), "h_yx": (result.h_yx, datasets.Value("float64")),
               "h_yb": (result.h_yb, datasets.Value("float64")), "pvi_fold": (result.fold, datasets.Value("int64")),
               "difficulty": (difficulty, datasets.Value("string"))}
    for name, (values, feature) in columns.items():
        if name in dataset.column_names:
            dataset = dataset.remove_columns(name)
        dataset = dataset.add_column(name, values if name == "difficulty" else np.asarray(values).tolist(),
                                     feature=feature)
    return dataset


def difficulty_configs(pvi, labels, options, *, parameters: dict, rows=None, prefix: str = "") -> list:
    """The four difficulty configs (``ConfigSplit``) of one table's PVI, named ``prefix + config``."""
    from split_builders.api import ConfigSplit

    configs = []
    for name in CONFIGS:
        splitter = splitter_for(name, options)
        split = splitter.split(pvi, labels)
        configs.append(ConfigSplit(f"{prefix}{name}", split.as_indices(), method="pvi-difficulty",
                                   parameters={**splitter.get_params(), **copy.deepcopy(parameters)},
                                   description=DESCRIPTIONS[name], rows=rows))
    return configs


def rederive_difficulty(released, record, configs, *, prefix: str = "") -> dict:
    """``{config: {split: source_ids}}`` of difficulty configs re-derived from their released rows."""
    members = [c for c in configs if c.startswith(prefix) and c[len(prefix):] in CONFIGS]
    if not members:
        return {}
    rows = released.all_rows(members)  # every difficulty config splits the same rows: read them once
    pvi = np.asarray(rows.column("pvi").to_numpy(), dtype=np.float64)
    ids = np.asarray(rows.column("source_id").to_numpy(), dtype=np.int64)
    out = {}
    for config in members:
        parameters = record["configs"][config]["parameters"]
        labels, _ = label_ids([str(v) for v in rows.column(parameters.get("label_field") or "label").to_pylist()])
        splitter = DifficultySplitter(**{k: parameters[k] for k in DifficultySplitter._param_names()})
        split = splitter.split(pvi, labels)
        out[config] = {s: ids[np.asarray(r, dtype=np.int64)] for s, r in split.as_indices().items()}
    return out


def part_mask(config, n_rows: int) -> np.ndarray:
    """The rows of a ``simple`` or ``hard`` config (its train and validation) as a boolean mask."""
    mask = np.zeros(n_rows, dtype=bool)
    for rows in config.indices.values():
        mask[np.asarray(rows, dtype=np.int64)] = True
    return mask


def pvi_summary(result, label_names, labels, configs) -> dict:
    """I_V overall and per label, held-out accuracy, and mean PVI of every config split."""
    summary = {"I_V": result.v_information, "accuracy": float(result.correct.mean()),
               "I_V_per_label": {str(name): float(result.pvi[labels == i].mean())
                                 for i, name in enumerate(label_names) if (labels == i).any()},
               "configs": {}}
    for config in configs:
        summary["configs"][config.name] = {}
        for split in config.splits:
            idx = np.asarray(config.indices[split], dtype=np.int64)
            summary["configs"][config.name][split] = {
                "rows": int(idx.size), "mean_pvi": float(result.pvi[idx].mean()) if idx.size else float("nan"),
                "labels": {str(label_names[k]): int(v) for k, v in zip(*np.unique(labels[idx], return_counts=True))}}
    return summary


def summary_markdown(summary: dict) -> str:
    """I_V, accuracy and the per-config table of :func:`pvi_summary` as Markdown."""
    lines = [f"I_V = **{summary['I_V']:.3f} bits** (mean cross-fitted PVI); held-out accuracy "
             f"{summary['accuracy']:.3f}; I_V per label: "
             + ", ".join(f"{k} {v:.3f}" for k, v in summary["I_V_per_label"].items()) + ".", "",
             "| config | split | rows | mean PVI | labels |", "|---|---|---|---|---|"]
    for config, splits in summary["configs"].items():
        for split, entry in splits.items():
            labels = ", ".join(f"{k}: {v}" for k, v in entry["labels"].items())
            lines.append(f"| `{config}` | {split} | {entry['rows']} | {entry['mean_pvi']:.3f} | {labels} |")
    return "\n".join(lines)


def rule_text(options) -> str:
    """How simple and hard are told apart and divided, in one sentence."""
    if options.curriculum_compat:
        return "CURRICULUM's midrange threshold per label and 60/40 train/validation division (seed 42)."
    size = getattr(options, "validation_size", 0.4)
    return ("per-label median of PVI (both parts label balanced); seeded "
            f"{1 - size:.0%}/{size:.0%} train/validation division of each part and label.")


def pvi_figure(path: str, title: str, pvi, simple):
    """PVI of the simple rows against the hard rows (one histogram panel)."""
    from split_builders.release.card import Figure, Panel

    simple = np.asarray(simple, dtype=bool)
    return Figure(path, title, [Panel("PVI (bits)", {"simple": pvi[simple], "hard": pvi[~simple]})],
                  alt=f"{title}: PVI of simple vs hard rows")


# ---- the method ------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class PVIOptions(CommonOptions):
    """Options of ``resplit pvi``. ``limit`` keeps the first N rows of the source (before rows
    without a label are dropped)."""

    text_fields: tuple[str, ...] | None = option(
        None, "comma-separated input fields, e.g. premise,hypothesis (default for named sources: "
              "premise,hypothesis)", group="source")
    label_field: str | None = option(None, "the label field (default for named sources: label)", group="source")
    family: str = option("hashed", "predictive family: hashed n-gram linear model on the CPU, or a transformers "
                                   "sequence classifier fine-tuned with Trainer (--model)",
                         choices=FAMILIES, group="signal")
    model: str | None = option(None, "transformers family: Hub id or folder of the classifier to fine-tune",
                               group="signal")
    epochs: int | None = option(None, "training epochs (default: 3)", group="signal")
    folds: int = option(5, "cross-fitting folds", group="signal")
    group_field: str | None = option(
        None, "rows with the same value of this field share a cross-fitting fold (default: the first text "
              "field when there are two or more, e.g. the premise; 'none': no groups)", group="signal")
    null: str = option("prior", "null model: the label prior (the exact optimum of training on a null input) "
                                "or the family trained on empty inputs", choices=NULL_MODELS, group="signal")
    cache_dir: str | None = option(None, "per-fold checkpoint folder (default: $RESPLIT_CACHE/pvi)",
                                   group="signal", record=False)
    curriculum_compat: bool = option(False, "CURRICULUM's midrange threshold and 60/40 train/validation "
                                            "division (seed 42)", group="split")
    validation_size: float = option(0.4, "share of each part (simple, hard) that goes to validation, a "
                                         "fraction in (0, 1)", parse=float, group="split")

    def validate(self) -> None:
        check_folds(self.folds)
        if self.epochs is not None and (isinstance(self.epochs, bool) or not isinstance(self.epochs, int)
                                        or self.epochs < 1):
            raise InvalidParameterError(f"epochs must be a positive integer, got {self.epochs!r}")
        if self.family == "transformers" and not self.model:
            raise InvalidParameterError("the transformers family needs a model (--model HUB_ID_OR_FOLDER)")
        # Raises the splitter's own message for a bad fraction.
        DifficultySplitter(validation_size=self.validation_size, random_state=self.seed)


def check_folds(folds) -> None:
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise InvalidParameterError(f"folds must be an integer >= 2, got {folds!r}")


def check_labels_against_folds(labels, folds: int, *, where: str) -> None:
    """Every label needs ``folds`` rows for cross-fitting, and there must be two labels."""
    counts = np.bincount(np.asarray(labels, dtype=np.int64))
    present = counts[counts > 0]
    if present.size < 2:
        raise InvalidParameterError(f"{where}: PVI needs at least two distinct labels, found {present.size}")
    if present.min() < folds:
        raise InvalidParameterError(f"{where}: every label needs at least {folds} rows for {folds}-fold "
                                    f"cross-fitting; the rarest has {present.min()} (lower --folds)")


@dataclass
class PVIRows:
    """The rows to score and how to read them."""

    dataset: object                 # datasets.Dataset, rows with a label only
    text_fields: list
    label_field: str
    group_field: str | None
    labels: np.ndarray              # label ids
    label_names: list


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


class PVIMethod(SplitMethod):
    """PVI difficulty splits (``resplit pvi``)."""

    name = "pvi"
    paper = PAPER
    summary = "PVI difficulty splits (simple / hard) of any labelled dataset"
    config_names = CONFIGS
    Options = PVIOptions
    default_source = "snli-sample"

    def check(self, options) -> None:
        from loading_scripts import NAMED_SOURCES

        if not Path(options.source).exists() and options.source not in NAMED_SOURCES:
            raise SourceLoadError(f"source {options.source!r} is neither an existing file nor one of: "
                                  + ", ".join(NAMED_SOURCES))

    def load(self, options) -> Loaded:
        from loading_scripts.source import content_sha256

        dataset, src, text_fields, label_field = read_rows(options)
        name = src.name if src is not None else options.source
        _check_fields(dataset, name, text_fields, label_field)
        dataset, values, dropped = _labelled(dataset, label_field)
        labels, label_names = label_ids(values)
        group_field = options.group_field
        if group_field in (None, "auto"):
            group_field = text_fields[0] if len(text_fields) >= 2 else None
        elif group_field in ("none", ""):
            group_field = None
        filters = dict(src.filtered) if src is not None else {}
        if dropped:
            filters["no label"] = dropped
        info = SourceInfo(name=name, rows=len(dataset), content_sha256=content_sha256(dataset),
                          revision=getattr(src, "revision", None), filters=filters,
                          source_id=getattr(src, "source_id_note", SourceInfo.source_id),
                          license=getattr(src, "license", None), citation=getattr(src, "citation", None))
        return Loaded(PVIRows(dataset, text_fields, label_field, group_field, labels, label_names), info)

    def row_keys(self, loaded):
        """Exact duplicates are rows with the same text fields and label (``--dedupe``)."""
        rows = loaded.data
        return duplicate_keys(rows.dataset, rows.text_fields, rows.labels)

    def select_rows(self, loaded, keep) -> Loaded:
        rows = loaded.data
        keep = np.asarray(keep, dtype=np.int64)
        return Loaded(dataclasses.replace(rows, dataset=rows.dataset.select(keep), labels=rows.labels[keep]),
                      loaded.info)

    def check_loaded(self, loaded, options) -> None:
        rows = loaded.data
        if rows.group_field is not None and rows.group_field not in rows.dataset.column_names:
            raise FieldError(rows.group_field, rows.dataset.column_names, role="group", source=loaded.info.name)
        if len(rows.dataset) < options.folds:
            raise InvalidParameterError(f"{loaded.info.name}: {len(rows.dataset)} labelled row(s) cannot be "
                                        f"cross-fitted over {options.folds} folds (lower --folds)")
        check_labels_against_folds(rows.labels, options.folds, where=loaded.info.name)

    def signal(self, loaded, options, context) -> Signal:
        from split_builders.signals.pvi.crossfit import CrossFitPVI
        from split_builders.signals.pvi.families import make_family

        rows = loaded.data
        extra = {"epochs": options.epochs} if options.epochs is not None else {}
        family = make_family(options.family, model=options.model, random_state=options.seed, **extra)
        scorer = CrossFitPVI(family, n_folds=options.folds, null=options.null, random_state=options.seed,
                             cache_dir=pvi_cache_dir(options.cache_dir))
        records = list(zip(*[["" if t is None else str(t) for t in rows.dataset[f]] for f in rows.text_fields]))
        groups = rows.dataset[rows.group_field] if rows.group_field else None
        with fold_bar(options.folds, enabled=context.progress, description="PVI folds") as progress:
            result = scorer.compute(records, rows.labels, len(rows.label_names), groups=groups, progress=progress)
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
        return difficulty_configs(signal.values.pvi, rows.labels, options, parameters=parameters)

    def rows(self, loaded, signal, configs):
        return with_pvi_columns(loaded.data.dataset, signal.values, self._simple(loaded, configs))

    def rederive(self, released, record) -> dict:
        """The four configs from the released rows' ``pvi`` and label (rows in ``source_id`` order) with
        each config's recorded splitter parameters."""
        return rederive_difficulty(released, record, released.configs)

    @staticmethod
    def _simple(loaded, configs) -> np.ndarray:
        return part_mask(next(c for c in configs if c.name == "simple"), len(loaded.data.dataset))

    def summary_of(self, loaded, signal, configs) -> dict:
        return pvi_summary(signal.values, loaded.data.label_names, loaded.data.labels, configs)

    def card(self, loaded, signal, configs, options):
        from split_builders.release.card import CardSpec, Figure, Panel, Section

        rows, result, info = loaded.data, signal.values, loaded.info
        summary = self.summary_of(loaded, signal, configs)
        groups = f"; rows sharing a {rows.group_field} share a fold" if rows.group_field else ""
        null = ("the label prior of the training folds." if options.null == "prior"
                else "the family trained on empty inputs.")
        dropped = info.filters.get("no label", 0)
        how_built = [
            f"Per-example pointwise V-information (PVI, Ethayarajh et al. 2022) in bits, cross-fitted over "
            f"{options.folds} folds (each row scored by models that never trained on it{groups}); null model: "
            f"{null} Input fields: {', '.join(rows.text_fields)}; label: {rows.label_field}"
            + (f"; {dropped} row(s) without a label dropped." if dropped else "."),
            "Simple/hard: " + rule_text(options),
            "`simple_to_hard`: train and validation from the simple part, test = every hard row; "
            "`hard_to_simple` the reverse.",
        ]
        sections = [Section(f"`{c.name}`", c.description, [Figure(f"figures/{c.name}.png", f"PVI per split: {c.name}", [
            Panel("PVI (bits)", {s: result.pvi[np.asarray(c.indices[s], dtype=np.int64)] for s in c.splits})],
            alt=f"PVI histograms per split of {c.name}")]) for c in configs]
        overview = Section("PVI of simple and hard rows", summary_markdown(summary), [pvi_figure(
            "figures/pvi_simple_vs_hard.png", "PVI: simple vs hard", result.pvi, self._simple(loaded, configs))])
        return CardSpec(title=f"PVI difficulty splits of {info.name}",
                        intro=f"Difficulty configs of {info.name} by pointwise V-information: `simple` and "
                              "`hard` halves per label, and the cross-distribution `simple_to_hard` / "
                              "`hard_to_simple` configs. Every row carries its `pvi`, `h_yx`, `h_yb` (bits), "
                              "`pvi_fold` and `difficulty`.",
                        how_built=how_built, configs=sections,
                        columns={"mean PVI (train)": {c: f"{s['train']['mean_pvi']:.3f}"
                                                      for c, s in summary["configs"].items()}},
                        extra=[overview])

    def report(self, result) -> list[str]:
        summary = self.summary_of(result.loaded, result.signal, result.configs)
        lines = [f"I_V = {summary['I_V']:.3f} bits, held-out accuracy {summary['accuracy']:.3f}"]
        for config, splits in summary["configs"].items():
            lines.append(f"{config:<16}" + "  ".join(f"{s} {e['rows']} (mean PVI {e['mean_pvi']:.3f})"
                                                     for s, e in splits.items()))
        return lines

    def pretty_name(self, loaded) -> str:
        return f"PVI difficulty splits of {Path(loaded.info.name).name}"


def _check_fields(dataset, name, text_fields, label_field) -> None:
    """Every named field exists; a missing one is named with the fields that do."""
    if not text_fields:
        raise FieldError("(none given)", dataset.column_names, role="text", source=f"{name}: pass --text-fields")
    if label_field is None:
        raise FieldError("(none given)", dataset.column_names, role="label", source=f"{name}: pass --label-field")
    for role, column in [("text", f) for f in text_fields] + [("label", label_field)]:
        if column not in dataset.column_names:
            raise FieldError(column, dataset.column_names, role=role, source=name)


def fold_bar(total: int, *, enabled: bool, description: str):
    """A progress bar (stderr) over cross-fitting folds, as a context manager that yields the
    ``progress(done, total)`` callback of :meth:`CrossFitPVI.compute` (None when disabled)."""
    import contextlib

    @contextlib.contextmanager
    def bar():
        if not enabled:
            yield None
            return
        from tqdm.auto import tqdm

        with tqdm(total=total, desc=description, unit="fold", dynamic_ncols=True, file=sys.stderr) as shown:
            yield lambda done, _total: shown.update(done - shown.n)

    return bar()


def duplicate_keys(dataset, text_fields, labels) -> np.ndarray:
    """One string per row from its text fields and label id, computed on whole Arrow columns.

    Each part is prefixed by its length, so no text can make two different rows share a key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def part(values):
        values = pc.fill_null(pc.cast(values, pa.string()), "")
        return pc.binary_join_element_wise(pc.cast(pc.utf8_length(values), pa.string()), values, ":")

    table = dataset.with_format("arrow")[:]
    parts = [part(table.column(f)) for f in text_fields] + [part(pa.array(np.asarray(labels, dtype=np.int64)))]
    return pc.binary_join_element_wise(*parts, "|").to_numpy(zero_copy_only=False)


