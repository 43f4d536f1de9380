"""A clean release (``resplit audit RELEASE --against OTHER --write-clean OUT``): the release with every
contaminated evaluation row removed (:mod:`split_builders.evidence.contamination`), train kept as it is.

Each config of the clean release is taken as released, not derived: it records the membership of each split
(``source_ids_sha256``, which ``resplit verify`` checks) and ``clean_of`` (the config it was cut from); the
``resplit.contamination`` provenance names what was checked (datasets, splits, rows, fields, threshold) and how
many rows of each config and split were removed; the harness tasks (``lm_eval/``) are its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splits import membership_sha256

CLEAN_METHOD = "clean"  # the recorded method of a config cut from another release's config


def public_name(name: str) -> str:
    """What a release records of a dataset given on the command line: a Hub id or relative path as given, an
    absolute local path as its last part (no absolute local paths in a release)."""
    return Path(name).name if Path(name).is_absolute() else name


def public_note(note: str, checked: list) -> str:
    """A note naming datasets as given, with each one's :func:`public_name` (no absolute local path)."""
    for entry in checked:
        note = note.replace(entry["dataset"], public_name(entry["dataset"]))
    return note


def write_clean(data, report: dict, rows, out, *, target: str, overwrite: bool = False, progress: bool = False):
    """Write the clean release of ``data`` (an :class:`~split_builders.evidence.inputs.EvidenceInput` of a release)
    at ``out``: ``rows`` are the per-row tiers (:func:`~split_builders.evidence.contamination.contamination`).
    ``out`` follows the build's output policy (:func:`~split_builders.release.writer.write_release`: a file or a
    folder holding files resplit did not write, a harness task changed since it was written among them, is
    refused); the caller checks it against the command's inputs and holds its lock
    (:class:`~split_builders.release.places.OutputLock`)."""
    import datasets
    import pyarrow as pa
    import pyarrow.compute as pc

    from split_builders.evidence import views
    from split_builders.publishing.readers import write_readers, written_files
    from split_builders.release.writer import write_release
    from split_builders.splits import SPLITS, ConfigSplit

    if not data.record:
        raise InvalidParameterError("--write-clean needs a resplit release as TARGET")
    contaminated = rows.filter(pc.not_equal(rows.column("tier"), "clean"))
    removed_ids: dict = {}
    for config, split, source_id in zip(*(contaminated.column(c).to_pylist() for c in ("config", "split",
                                                                                       "source_id"))):
        removed_ids.setdefault((config, split), set()).add(source_id)
    recorded = data.record.get("configs") or {}
    configs, removed, emptied = [], {}, []
    for config, parts in data.parts.items():
        splits = [s for s in SPLITS if s in parts]
        tables = [parts[s].taken() for s in splits]
        table = pa.concat_tables(tables, promote_options="permissive")
        owner = np.repeat(np.arange(len(splits)), [t.num_rows for t in tables])
        ids = np.concatenate([parts[s].ids for s in splits])
        indices, members = {}, {}
        for k, split in enumerate(splits):
            at = np.flatnonzero(owner == k)
            drop = removed_ids.get((config, split), set())
            if drop:
                at = at[~np.isin(ids[at], np.fromiter(drop, dtype=np.int64, count=len(drop)))]
                removed.setdefault(config, {})[split] = len(drop)
            indices[split] = at
            members[split] = membership_sha256(ids[at])
        if not any(len(indices[s]) for s in splits if s != "train"):  # nothing left to evaluate on
            emptied.append(config)
            continue
        entry = recorded.get(config) or {}
        parameters = {**dict(entry.get("parameters") or {}), "clean_of": config,
                      "clean_of_method": entry.get("method"), "source_ids_sha256": members}
        configs.append(ConfigSplit(config, indices, CLEAN_METHOD, parameters,
                                   f"`{config}` of {public_name(target)} less its contaminated evaluation rows",
                                   rows=datasets.Dataset(table)))
    if not configs:
        raise InvalidParameterError(f"--write-clean: every evaluation row of {public_name(target)} is contaminated "
                                    "(no config keeps a validation or test row); there is no clean release to write")
    provenance = {k: v for k, v in data.record.items() if k not in ("configs", "version", *views())}
    provenance["contamination"] = {
        "cleaned": public_name(target),
        "threshold": report["threshold"], "ngram": report["ngram"], "input_fields": report["input_fields"],
        "label_field": report["label_field"],
        "checked": [{**c, "dataset": public_name(c["dataset"])} for c in report["checked"]],
        **({"skipped": [{**k, "dataset": public_name(k["dataset"])} for k in report["skipped"]]}
           if report.get("skipped") else {}),
        "removed": removed,
        **({"configs_left_out": emptied} if emptied else {}),  # every evaluation row contaminated
        "counts": report["against"],
        **({"labels_note": public_note(report["labels_note"], report["checked"])} if report.get("labels_note")
           else {}),
    }

    def render_card(staging, written) -> str:
        return "\n".join(card_lines(public_name(target), provenance["contamination"], written))

    title = f"{public_name(target)} (clean)"
    # the build's output policy: a harness task the user changed since resplit wrote it is theirs, never replaced
    return write_release(Path(out).expanduser(), None, configs, provenance=provenance, render_card=render_card,
                         pretty_name=title, overwrite=overwrite, progress=progress,
                         extras=lambda staging: write_readers(staging), harness_files=written_files,
                         flag="--write-clean")


def card_lines(target: str, contamination: dict, written) -> list[str]:
    """The clean release's card: what it was cut from, what it was checked against, what was removed."""
    checked = ", ".join(f"`{c['dataset']}` ({c['split']}, {c['rows']} rows)" for c in contamination["checked"])
    lines = [f"# {target} (clean)", "",
             f"The rows of `{target}` whose evaluation rows (validation and test) have no exact or near-duplicate "
             f"input (Jaccard >= {contamination['threshold']:g} of character {contamination['ngram']}-grams of "
             f"{', '.join(contamination['input_fields'])}) in: {checked}. Train splits are kept as they are. "
             "The YAML header records what was checked and removed under `resplit.contamination`.", "",
             "| config | split | rows | removed (input) | removed (input and label) |", "|---|---|---|---|---|"]
    for config, splits in contamination["counts"].items():
        if config not in written:
            continue
        for split, entry in splits.items():
            kept = written[config][split].num_examples if split in written.get(config, {}) else 0
            label = entry["input_label_contaminated"]
            lines.append(f"| `{config}` | {split} | {kept} | {entry['input_contaminated']} | "
                         f"{'not compared' if label is None else label} |")
    if contamination.get("labels_note"):
        lines += ["", contamination["labels_note"]]
    left_out = contamination.get("configs_left_out")
    if left_out:
        lines += ["", "Left out, every evaluation row contaminated: " + ", ".join(f"`{c}`" for c in left_out) + "."]
    return lines + [""]
