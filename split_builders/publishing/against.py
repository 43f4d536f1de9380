"""What a release's evaluation splits were checked against (a recipe's ``against:``), stated in its card.

After a recipe's build, :func:`record_against` checks every evaluation row of the release against each dataset
the recipe names (:func:`split_builders.evidence.contamination.contamination`) and adds the result to the
README: ``resplit.against`` in the YAML (per dataset: what was read and, per config and split, the rows that
are clean, input-contaminated and input-and-label-contaminated) and a "Checked against other datasets" section
in the card. Only the README changes: the data files, their hashes and the harness tasks stay as they are.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from split_builders.errors import InvalidParameterError
from split_builders.evidence.contamination import TIERS

SECTION = "## Checked against other datasets"


def resolve_against(entries: list[dict], *, work, inputs: list | None = None) -> list[dict]:
    """Open every dataset of a recipe's ``against:`` (``entries``: :meth:`~.recipe.Recipe.against_datasets`) before
    the build, so that a dataset that cannot be read is refused before anything is built: a Hub id reachable (at its
    revision) and downloaded once, into ``work`` (kept until the build's check reads it: ``resolved``), the
    ``splits`` it names present, the columns its ``fields`` name in one of them (as many as ``inputs``, the release's
    input fields, where they are known: :func:`declared_inputs`), else the ``inputs`` columns in one of them, a local
    file a regular file that the audit reads. The entries, each with ``resolved`` (the local folder or file read);
    one line naming the entry otherwise."""
    from split_builders.errors import ResplitError
    from split_builders.evidence.contamination import open_other
    from split_builders.evidence.inputs import locate_target

    resolved = []
    for number, entry in enumerate(entries, 1):
        where = f"recipe against entry {number} ({entry['dataset']!r})"
        path = entry.get("path") or entry["dataset"]
        try:
            local = Path(path) if Path(path).exists() else locate_target(path, work=work,
                                                                            revision=entry.get("revision"))[0]
            splits = open_other(str(local), work=work, splits=entry.get("splits"))
        except ResplitError as error:
            raise InvalidParameterError(f"{where}: {_reason(error)}") from None
        fields = entry.get("fields")
        if fields and not any(all(c in s.columns for c in fields) for s in splits):
            missing = [c for c in fields if c not in splits[0].columns]
            raise InvalidParameterError(f"{where}: its fields {', '.join(fields)} are not all columns of any split "
                                        f"({splits[0].split} has no {', '.join(missing)}; its columns: "
                                        f"{', '.join(splits[0].columns)}); name its input columns in fields")
        if inputs and fields and len(fields) != len(inputs):
            raise InvalidParameterError(f"{where}: its fields name {len(fields)} column(s); the release's input has "
                                        f"{len(inputs)} ({', '.join(inputs)}); name one column of it for each")
        if inputs and not fields and not any(all(c in s.columns for c in inputs) for s in splits):
            missing = [c for c in inputs if c not in splits[0].columns]  # what the check after the build compares
            raise InvalidParameterError(f"{where}: {splits[0].split} has no column {', '.join(missing)} of the "
                                        f"release's input ({', '.join(inputs)}; its columns: "
                                        f"{', '.join(splits[0].columns)}); give the entry fields: its input "
                                        f"columns, in the order {', '.join(inputs)}")
        resolved.append({**entry, "resolved": str(local)})
    return resolved


@contextlib.contextmanager
def resolved_against(entries: list[dict], *, options=None):
    """:func:`resolve_against` in a working folder that lasts as long as the ``with`` block (the build and the
    check of what it built), against the input fields ``options`` (the build's) name; the entries as they are
    where there are none."""
    if not entries:
        yield entries
        return
    with tempfile.TemporaryDirectory(prefix="resplit-against-") as work:
        yield resolve_against(entries, work=work, inputs=declared_inputs(options) if options is not None else None)


def declared_inputs(options) -> list | None:
    """The release's input fields (what an ``against:`` entry without ``fields`` is compared on) as the build's
    ``options`` name them, known before anything is read: the values of its input-naming options (``role="input"``:
    prompt and query fields, text fields) less the target field, through
    :func:`~split_builders.evidence.contamination.input_fields` as the check after the build takes them. None where
    only the source decides them, which is read by the build: no query or text fields given (a compositional
    folder's, a detected SNLI / BoolQ layout's, a method's fixed fields), a ``task`` reader or a named source (their
    own fields); the check after the build then refuses a missing column."""
    import dataclasses

    from loading_scripts import NAMED_SOURCES
    from split_builders.contracts import Fields
    from split_builders.evidence.contamination import input_fields

    named = {spec.name: getattr(options, spec.name) for spec in dataclasses.fields(options)
             if spec.metadata.get("role") == "input"}
    target = named.pop("target_field", None)
    source = str(getattr(options, "source", ""))
    if (getattr(options, "task", None) or not (named.get("query_field") or named.get("text_fields"))
            or (source in NAMED_SOURCES and not Path(source).exists())):
        return None
    text = [name for value in named.values() for name in ((value,) if isinstance(value, str) else value or ())]
    fields = Fields("text", text=tuple(text), target=target)
    return input_fields(fields, None) if [f for f in fields.text if f != target] else None


def _reason(error) -> str:
    return getattr(error, "problem", None) or str(error).splitlines()[0]


def against_record(folder, entries: list[dict], *, threshold: float, progress: bool = False) -> list[dict]:
    """Per entry (``{dataset, path, revision, splits, fields}``, :meth:`~.recipe.Recipe.against_datasets`), what
    was checked and the tiers per config and split of the release at ``folder``."""
    from split_builders.evidence.contamination import contamination
    from split_builders.evidence.inputs import EvidenceInput
    from split_builders.publishing.clean import public_name, public_note
    from split_builders.release.folder import Released

    data = EvidenceInput.from_release(Released(folder))
    out = []
    with tempfile.TemporaryDirectory(prefix="resplit-against-") as work:
        for entry in entries:
            local = entry.get("resolved")  # read before the build (resolve_against): as it was read then
            report, _ = contamination(data.parts, data.fields, [local or entry.get("path") or entry["dataset"]],
                                      work=work, threshold=threshold, revision=None if local else entry.get("revision"),
                                      against_fields=entry.get("fields"), against_splits=entry.get("splits"),
                                      where=str(folder), progress=progress)
            out.append({
                "dataset": public_name(entry["dataset"]), **({"revision": entry["revision"]} if entry.get("revision")
                                                             else {}),
                "splits": [{"split": c["split"], "rows": c["rows"]} for c in report["checked"]],
                "threshold": report["threshold"], "input_fields": report["input_fields"],
                "label_field": report["label_field"],
                **({"labels_note": public_note(report["labels_note"], report["checked"])}
                   if report.get("labels_note") else {}),
                "configs": {config: {split: {k: e[k] for k in ("rows", *TIERS)} for split, e in splits.items()}
                            for config, splits in report["against"].items()},
            })
    return out


def card_lines(records: list[dict]) -> list[str]:
    """The card section: one table per dataset checked."""
    lines = [SECTION, "",
             "Every evaluation row (validation and test) was checked against these datasets: *input-contaminated* "
             "where its input has an exact or near-duplicate there (character 5-gram Jaccard at or above the "
             "threshold), *input-and-label-contaminated* where that row also has the same label. `resplit audit "
             "FOLDER --against DATASET` recomputes them (`--rows` names each match, `--write-clean` drops them).", ""]
    for record in records:
        read = ", ".join(f"{s['split']} ({s['rows']} rows)" for s in record["splits"])
        at = f" at `{record['revision']}`" if record.get("revision") else ""
        lines += [f"`{record['dataset']}`{at}: {read}; Jaccard >= {record['threshold']:g}.", "",
                  "| config | split | rows | clean | input-contaminated | input-and-label |",
                  "|---|---|---|---|---|---|"]
        for config, splits in record["configs"].items():
            for split, entry in splits.items():
                n = entry["rows"]
                cell = lambda count: ("not compared" if count is None else  # noqa: E731
                                      f"{count} ({100 * count / n:.1f}%)" if n else str(count))
                lines.append(f"| `{config}` | {split} | {n} | " + " | ".join(cell(entry[t]) for t in TIERS) + " |")
        if record.get("labels_note"):
            lines += ["", record["labels_note"]]
        lines.append("")
    return lines


def record_against(folder, entries: list[dict], *, threshold: float = 0.8, progress: bool = False) -> list[dict]:
    """Check the release at ``folder`` against ``entries`` and state the result in its README (YAML
    ``resplit.against`` and the card's section), written beside it and moved into place."""
    from huggingface_hub import DatasetCard

    from split_builders.release.places import write_file

    if not entries:
        return []
    folder = Path(folder)
    records = against_record(folder, entries, threshold=threshold, progress=progress)
    readme = folder / "README.md"
    card = DatasetCard.load(readme)
    resplit = dict(card.data.get("resplit") or {})
    resplit["against"] = records
    card.data["resplit"] = resplit
    body = card.text.split(SECTION)[0].rstrip()
    card.text = body + "\n\n" + "\n".join(card_lines(records)).strip() + "\n"
    write_file(readme, lambda staging: Path(staging).write_text(str(card), encoding="utf-8"), overwrite=True)
    return records
