"""``resplit pvi``: cross-fitted PVI of any labelled dataset and its simple / hard configs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from split_builders.errors import FieldError, InvalidParameterError


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "pvi", help="PVI difficulty splits (Ethayarajh et al. 2022) of any labelled dataset",
        description="Compute each row's pointwise V-information with cross-fitted models and write the "
                    "simple, hard, simple_to_hard and hard_to_simple configs (with a float column pvi).")
    src = parser.add_argument_group("source")
    src.add_argument("--source", default="snli-sample",
                     help="a CSV/TSV/JSONL/JSON/Parquet file, or a named source (default: snli-sample)")
    src.add_argument("--text-fields", help="comma-separated input fields, e.g. premise,hypothesis "
                                           "(default for named sources: premise,hypothesis)")
    src.add_argument("--label-field", help="the label field (default for named sources: label)")
    src.add_argument("--limit", type=int, help="use only the first N rows (quick runs)")
    sig = parser.add_argument_group("signal")
    sig.add_argument("--family", default="hashed", choices=["hashed", "transformers"],
                     help="predictive family: hashed n-gram linear model on the CPU (default) or a "
                          "transformers sequence classifier fine-tuned with Trainer (--model)")
    sig.add_argument("--model", help="transformers family: Hub id or folder of the classifier to fine-tune")
    sig.add_argument("--epochs", type=int, help="training epochs (default: 3)")
    sig.add_argument("--folds", type=int, default=5, help="cross-fitting folds (default 5)")
    sig.add_argument("--group-field",
                     help="rows with the same value of this field share a cross-fitting fold (default: the "
                          "first text field when there are two or more, e.g. the premise; 'none': no groups)")
    sig.add_argument("--null", default="prior", choices=["prior", "trained"],
                     help="null model: the label prior (default; the exact optimum of training on a null "
                          "input) or the family trained on empty inputs")
    sig.add_argument("--cache-dir", help="per-fold checkpoint folder (default: $RESPLIT_CACHE/pvi)")
    spl = parser.add_argument_group("split")
    spl.add_argument("--curriculum-compat", action="store_true",
                     help="CURRICULUM's midrange threshold and 60/40 train/validation division (seed 42)")
    spl.add_argument("--validation-size", type=float, default=0.4,
                     help="share of each part that goes to validation (default 0.4)")
    spl.add_argument("--seed", type=int, default=42)
    out = parser.add_argument_group("output")
    out.add_argument("--out", required=True, help="output folder (must not exist unless --overwrite)")
    out.add_argument("--overwrite", action="store_true")
    parser.set_defaults(func=run)


def default_cache_dir() -> Path:
    return Path(os.environ.get("RESPLIT_CACHE", Path.home() / ".cache" / "resplit")) / "pvi"


def load_rows(source: str, text_fields, label_field, limit=None):
    """The source's rows, its text fields and label field (named sources have defaults)."""
    from loading_scripts import NAMED_SOURCES, load_source
    from loading_scripts.files import read_table
    from loading_scripts.source import with_row_numbers

    if Path(source).exists():
        dataset, name = with_row_numbers(read_table(source), name=source), source
    elif source in NAMED_SOURCES:
        loaded = load_source(source)
        dataset, name = loaded.dataset, loaded.name
        text_fields = text_fields or [f for f in (loaded.prompt_field, loaded.query_field) if f]
        label_field = label_field or loaded.label_field
    else:
        raise InvalidParameterError(f"source {source!r} is neither an existing file nor one of: "
                                    + ", ".join(NAMED_SOURCES))
    if not text_fields:
        raise FieldError("(none given)", dataset.column_names, role="text", source=f"{name}: pass --text-fields")
    if label_field is None:
        raise FieldError("(none given)", dataset.column_names, role="label", source=f"{name}: pass --label-field")
    for role, column in [("text", f) for f in text_fields] + [("label", label_field)]:
        if column not in dataset.column_names:
            raise FieldError(column, dataset.column_names, role=role, source=name)
    if limit is not None:
        if limit < 1:
            raise InvalidParameterError(f"--limit must be >= 1, got {limit}")
        dataset = dataset.select(range(min(limit, len(dataset))))
    return dataset, name, list(text_fields), label_field


def build_pvi(source, *, out, text_fields=None, label_field=None, family="hashed", model=None, epochs=None,
              folds=5, null="prior", group_field="auto", curriculum_compat=False, validation_size=0.4, seed=42, cache_dir=None,
              limit=None, overwrite=False, progress=None):
    """Compute PVI and write the four difficulty configs; returns ``(out, summary)``."""
    import datasets

    from split_builders.splitters.difficulty import (DifficultySplitter, difficulty_configs, difficulty_indices, label_ids,
                                           pvi_summary, summary_markdown, with_pvi_columns)
    from split_builders.signals.pvi.crossfit import CrossFitPVI
    from split_builders.signals.pvi.families import make_family
    from split_builders.release.writer import write_release

    dataset, name, text_fields, label_field = load_rows(source, text_fields, label_field, limit)
    splitter = (DifficultySplitter.curriculum_compat() if curriculum_compat
                else DifficultySplitter(validation_size=validation_size, random_state=seed))
    options = {"epochs": epochs} if epochs is not None else {}
    predictive = make_family(family, model=model, random_state=seed, **options)
    scorer = CrossFitPVI(predictive, n_folds=folds, null=null, random_state=seed,
                         cache_dir=cache_dir or default_cache_dir())

    values = dataset[label_field]
    feature = dataset.features[label_field]
    if isinstance(feature, datasets.ClassLabel):
        values = [feature.int2str(v) if v is not None and v >= 0 else None for v in values]
    missing = [i for i, v in enumerate(values) if v is None or (isinstance(v, str) and not v.strip())]
    if missing:  # rows without a label carry no PVI
        keep = sorted(set(range(len(dataset))) - set(missing))
        dataset, values = dataset.select(keep), [values[i] for i in keep]
    labels, names = label_ids(values)
    if group_field == "auto":
        group_field = text_fields[0] if len(text_fields) >= 2 else None
    elif group_field in ("none", ""):
        group_field = None
    if group_field is not None and group_field not in dataset.column_names:
        raise FieldError(group_field, dataset.column_names, role="group", source=name)
    records = list(zip(*[["" if t is None else str(t) for t in dataset[f]] for f in text_fields]))
    groups = dataset[group_field] if group_field else None
    result = scorer.compute(records, labels, len(names), groups=groups, progress=progress)
    indices = difficulty_indices(splitter.split(result.pvi, labels))
    rows = with_pvi_columns(dataset, result, indices)
    parameters = {**splitter.get_params(), "curriculum_compat": bool(curriculum_compat), "folds": folds,
                  "null": null, "group_field": group_field,
                  "family": predictive.fingerprint(), "text_fields": text_fields,
                  "label_field": label_field}
    configs = difficulty_configs(indices, parameters=parameters)
    summary = pvi_summary(result, names, labels, indices)

    def card(staging, written):
        return "\n".join([
            f"# PVI difficulty splits of {name}", "",
            "Per-example pointwise V-information (PVI, Ethayarajh et al. 2022) in bits, cross-fitted over "
            f"{folds} folds (each row scored by models that never trained on it"
            + (f"; rows sharing a {group_field} share a fold" if group_field else "") + "); null model: "
            + ("the label prior of the training folds." if null == "prior" else "the family trained on empty inputs.")
            + f" Input fields: {', '.join(text_fields)}; label: {label_field}"
            + (f"; {len(missing)} row(s) without a label dropped." if missing else "."), "",
            "Simple/hard: " + ("CURRICULUM's midrange threshold per label and 60/40 train/validation division (seed 42)."
                               if curriculum_compat else
                               "per-label median of PVI (both parts label balanced); seeded "
                               f"{1 - splitter.validation_size:.0%}/{splitter.validation_size:.0%} "
                               "train/validation division of each part and label."),
            "`simple_to_hard`: train and validation from the simple part, test = every hard row; "
            "`hard_to_simple` the reverse.", "", summary_markdown(summary)])

    written = write_release(out, rows, configs, provenance={
        "source": name, "method": "pvi-difficulty", "seed": seed, "I_V": summary["I_V"],
        "dropped_unlabelled": len(missing)}, render_card=card, overwrite=overwrite,
        pretty_name=f"PVI difficulty splits of {Path(name).name}")
    return written, summary


def run(args) -> int:
    text_fields = [f.strip() for f in args.text_fields.split(",") if f.strip()] if args.text_fields else None

    def progress(done, total):
        print(f"fold {done}/{total} done", file=sys.stderr, flush=True)

    out, summary = build_pvi(args.source, out=args.out, text_fields=text_fields, label_field=args.label_field,
                             family=args.family, model=args.model, epochs=args.epochs, folds=args.folds,
                             null=args.null, group_field=args.group_field or "auto",
                             curriculum_compat=args.curriculum_compat,
                             validation_size=args.validation_size, seed=args.seed, cache_dir=args.cache_dir,
                             limit=args.limit, overwrite=args.overwrite, progress=progress)
    print(f"I_V = {summary['I_V']:.3f} bits, held-out accuracy {summary['accuracy']:.3f}")
    for config, splits in summary["configs"].items():
        print(f"{config:<16}" + "  ".join(f"{s} {e['rows']} (mean PVI {e['mean_pvi']:.3f})" for s, e in splits.items()))
    print(f"wrote {out}\nload it with: datasets.load_dataset({str(out)!r}, 'simple')")
    return 0
