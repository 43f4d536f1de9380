"""lm-evaluation-harness tasks of a release: ``lm_eval/`` with one task per config and one group per release.

:func:`write_lm_eval` reads a release folder (its README's YAML and the parquet schemas of its data
files; no rows but the label column of a string-labelled config) and writes, into ``FOLDER/lm_eval``:

- ``<config>.yaml``, one task per config that a harness output type fits:

  * ``multiple_choice`` where the rows carry a label (likelihood NLI / BoolQ, pvi, curriculum):
    the choices are the label's class names in class order, read from the config's ``ClassLabel``
    (the parquet schema's ``datasets`` features); a label stored as text (older pvi and CSV-built
    releases) is mapped to its index in those names by a Jinja ``doc_to_target``, with the names from
    ``resplit.fields.label_names`` or, without them, the distinct values sorted as text (the project's
    one label encoder, :func:`loading_scripts.labels.encode_labels`);
  * ``generate_until`` with ``exact_match`` where the rows carry a target program (tmcd; likelihood
    with ``--target-field``);
  * behavioural (CheckList) test cases where they carry a label that is the expected prediction
    (expectation ``eq`` / ``squad_clean_eq``): one document per example (``utils.behavioural_docs``),
    multiple choice over the suite's classes (sentiment, QQP) or generation with exact match (SQuAD);
    a config whose test cases carry no such label is skipped, and :class:`Exported` says why;

  the prompt is the config's text fields in order, one ``Field: {{field}}`` line each, then the
  label's (or target's) name; the splits are those the config has (``test_split`` its test split, or
  its validation split where it has no test split, as CURRICULUM's configs; few-shot examples from
  train);
- ``_<group>.yaml``: the group, whose tasks are the release's tasks;
- ``utils.py``: the loader of a local release (``custom_dataset``) and the behavioural document
  function.

``dataset_path`` is the Hub id when it is known (``repo_id``, or the one the card records); otherwise
the task loads the release it lies in with ``datasets.load_dataset(<folder>, <config>)``, through
``custom_dataset: !function utils.load_release``, where ``<folder>`` is the path from ``lm_eval/`` to
the release, relative (``..``) and resolved against ``utils.py``'s own location when the task is
loaded: the task runs offline, from any working directory, and no absolute path is written.

``lm_eval --include_path FOLDER/lm_eval --tasks <group>`` (or ``<group>_<config>``) runs them.
Fields come from ``resplit.fields`` (:class:`split_builders.api.Fields`); releases built before it are
read with :func:`split_builders.evidence.fields.resolve_fields`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from split_builders.api import Fields
from split_builders.errors import InvalidParameterError, InvalidReleaseError

FOLDER = "lm_eval"
UTILS = "utils.py"
TASK_VERSION = 1.0
MAX_GEN_TOKS = 256
# Class names of the CheckList suites' integer labels (data/checklist/SPEC.md), in class order.
SUITE_LABEL_NAMES = {"sentiment": ("negative", "neutral", "positive"), "qqp": ("not_duplicate", "duplicate")}
# Expectations under which a behavioural label is the prediction a model must make.
LABEL_EXPECTATIONS = ("eq", "squad_clean_eq")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

UTILS_SOURCE = '''\
"""lm-evaluation-harness helpers of this release (written by resplit: ``resplit export lm-eval``)."""

import json
from pathlib import Path


def load_release(resplit_folder="..", resplit_config=None, **metadata):
    """The config ``resplit_config`` of the release at ``resplit_folder``, a path relative to this file."""
    import datasets

    folder = (Path(__file__).resolve().parent / resplit_folder).resolve()
    return datasets.load_dataset(str(folder), resplit_config)


def _value(value):
    return json.loads(value) if isinstance(value, str) else value


def behavioural_docs(dataset):
    """One document per example of the test cases whose label is the expected prediction: ``text`` (the
    example's parts, one per line) and ``label`` (the example's label)."""
    names = dataset.column_names

    def explode(batch):
        out = {"text": [], "label": []}
        for examples, labels, expectation in zip(batch["examples"], batch["labels"], batch["expectation"]):
            labels, expectation = _value(labels), _value(expectation) or {}
            if labels is None or expectation.get("fn") not in %(expectations)r or expectation.get("value") is not None:
                continue
            per_example = labels if isinstance(labels, list) else [labels] * len(examples)
            for parts, label in zip(examples, per_example):
                if label is None:
                    continue
                parts = parts if isinstance(parts, list) else [parts]
                out["text"].append("\\n".join(str(part) for part in parts))
                out["label"].append(str(label))
        return out

    return dataset.map(explode, batched=True, remove_columns=names)
''' % {"expectations": LABEL_EXPECTATIONS}


class _Function(str):
    """A YAML scalar written with lm-evaluation-harness's ``!function`` tag."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
_Dumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value.strip() else '"' if "\n" in value else None))


@dataclass
class Exported:
    """What :func:`export_lm_eval` wrote: the files, the group, its tasks and the configs it skipped
    (``{config: reason}``)."""

    folder: Path
    group: str
    paths: list = field(default_factory=list)
    tasks: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    dataset_path: str | None = None


@dataclass
class _Config:
    """One config as a task sees it: its splits (name -> rows), features and data files."""

    name: str
    files: dict
    features: object
    rows: dict


# ---------------------------------------------------------------------------------------------
# Reading the release
# ---------------------------------------------------------------------------------------------


def _configs(folder: Path, metadata: dict) -> list:
    import datasets
    import pyarrow.parquet as pq

    from split_builders.release.folder import data_files

    configs = []
    for name, splits in data_files(metadata).items():
        rows, features = {}, None
        for split, path in splits.items():
            file = folder / path
            if not file.is_file():
                raise InvalidReleaseError(f"{folder}: the data file {path} of config {name!r} is missing; rebuild the "
                                          "release or restore the file")
            meta = pq.ParquetFile(file)
            rows[split] = meta.metadata.num_rows
            features = features or datasets.Features.from_arrow_schema(meta.schema_arrow)
        configs.append(_Config(name, splits, features, rows))
    return configs


def recorded_repo_id(metadata: dict) -> str | None:
    """The Hub id a card records for its release (``resplit.repo_id`` or ``resplit.hub.repo_id``), if any."""
    record = metadata.get("resplit") or {}
    for value in (record.get("repo_id"), (record.get("hub") or {}).get("repo_id")
                  if isinstance(record.get("hub"), dict) else None):
        if isinstance(value, str) and _HUB_ID.match(value):
            return value
    return None


def release_fields(folder: Path, record: dict, configs: list) -> Fields | None:
    """The release's :class:`Fields`: the one resolver's (:func:`split_builders.evidence.fields.resolve_fields`)
    on the first config's rows, the recorded declaration or the inference for older releases; None where the
    rows hold no text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from split_builders.evidence.fields import resolve_fields

    first = configs[0]
    table = pa.concat_tables([pq.read_table(folder / path) for path in first.files.values()],
                             promote_options="default")
    fields = resolve_fields(table, record, where=str(folder))
    return fields if fields.text else None


def group_name(metadata: dict, repo_id: str | None = None) -> str:
    """The harness group of a release: the Hub repository's name when it is known, else ``resplit_``
    + the method + the source's name before any parenthesis, without folders and suffix
    (``resplit_likelihood_snli_sample``, ``resplit_tmcd_geoquery_nqg``); lower case, ``[a-z0-9_]`` only."""
    record = metadata.get("resplit") or {}
    if repo_id:
        return _slug(repo_id.split("/", 1)[1])
    method = _slug(str(record.get("method") or "release"))
    source = re.split(r"[(:]", str((record.get("source") or {}).get("name") or ""), maxsplit=1)[0].strip()
    stem = _slug(Path(source).stem) if source else ""
    return "_".join(["resplit", method] + ([stem] if stem and stem != method else []))


def _slug(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", text.lower())).strip("_") or "release"


# ---------------------------------------------------------------------------------------------
# One task
# ---------------------------------------------------------------------------------------------


def _splits(config: _Config) -> dict:
    """The harness split options of a config: the test split, or validation where there is no test
    split (CURRICULUM); validation beside a test split; train for training and few-shot examples."""
    present = [s for s in ("train", "validation", "test") if config.rows.get(s)]
    evaluated = "test" if "test" in present else "validation" if "validation" in present else None
    if evaluated is None:
        return {}
    splits = {"test_split": evaluated}
    if "validation" in present and evaluated != "validation":
        splits["validation_split"] = "validation"
    if "train" in present:
        splits.update(training_split="train", fewshot_split="train")
    return splits


def _title(name: str) -> str:
    return name.replace("_", " ").strip().capitalize()


def _prompt(text: list, answer: str) -> str:
    return "".join(f"{_title(name)}: {{{{{name}}}}}\n" for name in text) + f"{_title(answer)}:"


def _label_names(folder: Path, config: _Config, label: str, fields: Fields) -> tuple:
    """``(names, from_class_label)``: the class names of ``label`` in class order."""
    import datasets

    feature = config.features.get(label)
    if isinstance(feature, datasets.ClassLabel):
        return tuple(feature.names), True
    values = _distinct(folder, config, label)
    names = fields.label_names
    if names is None:
        from loading_scripts.labels import encode_labels

        names = tuple(str(v) for v in encode_labels(values, order="sorted")[1])
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise _Skip(f"label value(s) {', '.join(map(repr, unknown[:3]))} are not among the label names "
                    f"{', '.join(names)}")
    return tuple(names), False


def _distinct(folder: Path, config: _Config, column: str) -> list:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    values = pa.chunked_array([pq.read_table(folder / p, columns=[column]).column(column).cast(pa.string())
                               for p in config.files.values()])
    return [v for v in pc.unique(values).to_pylist() if v is not None]


class _Skip(Exception):
    """A config no harness output type fits (the reason)."""


def _check_columns(config: _Config, names: list) -> None:
    missing = [n for n in names if n not in config.features]
    if missing:
        raise _Skip(f"no column {', '.join(missing)}")
    odd = [n for n in names if not _IDENTIFIER.match(n)]
    if odd:
        raise _Skip(f"column name(s) {', '.join(map(repr, odd))} cannot be used in a Jinja prompt (letters, digits "
                    "and _ only)")


def task_config(folder: Path, config: _Config, fields: Fields, *, group: str, record: dict) -> dict:
    """The harness task (a YAML-ready mapping, without its dataset options) of one config; raises
    :class:`_Skip` with the reason where no output type fits."""
    splits = _splits(config)
    if not splits:
        raise _Skip("no train, validation or test rows")
    task = {"task": f"{group}_{config.name}", "task_alias": config.name}
    kind = fields.harness.kind if fields.harness is not None else None
    if kind is None:
        raise _Skip("the release declares no harness task (its rows carry neither a label nor a target program)")
    if kind == "multiple_choice":  # CheckList test cases: each brings its own expected prediction
        return {**task, **_behavioural(folder, config, fields, record, splits)}
    text = [name for name in fields.text if name in config.features]
    if not text:
        raise _Skip(f"none of its text fields ({', '.join(fields.text) or 'none recorded'}) is a column")
    if kind == "generation":
        if not fields.target:
            raise _Skip("it declares a generation task but no target column")
        _check_columns(config, [*text, fields.target])
        return {**task, **splits, "output_type": "generate_until", "doc_to_text": _prompt(text, fields.target),
                "doc_to_target": fields.target, **_generation(fields.harness.metric)}
    if not fields.label:
        raise _Skip("it declares a classification task but no label column")
    # a declared label field is released as ``label`` (a ClassLabel) where the label policy applies
    label = fields.label if fields.label in config.features or "label" not in config.features else "label"
    _check_columns(config, [*text, label])
    names, class_label = _label_names(folder, config, label, fields)
    target = (label if class_label
              else f"{{{{ {json.dumps(list(names), ensure_ascii=False)}.index({label}|string) }}}}")
    return {**task, **splits, "output_type": "multiple_choice", "doc_to_text": _prompt(text, label),
            "doc_to_target": target, "doc_to_choice": list(names), **_choice_metrics()}


def _generation(metric: str) -> dict:
    """A generation task's options, scored by the declared ``metric`` (exact match: case and punctuation count)."""
    exact = {"ignore_case": False, "ignore_punctuation": False} if metric == "exact_match" else {}
    return {"generation_kwargs": {"until": ["\n"], "do_sample": False, "max_gen_toks": MAX_GEN_TOKS},
            "metric_list": [{"metric": metric, "aggregation": "mean", "higher_is_better": True, **exact}]}


def _choice_metrics() -> dict:
    return {"metric_list": [{"metric": name, "aggregation": "mean", "higher_is_better": True}
                            for name in ("acc", "acc_norm")]}


def _behavioural(folder: Path, config: _Config, fields: Fields, record: dict, splits: dict) -> dict:
    """A behavioural config's task: one document per labelled example (``utils.behavioural_docs``)."""
    _check_columns(config, ["examples", "labels", "expectation"])
    evaluated = splits["test_split"]
    labels = _labelled(folder / config.files[evaluated])
    if not labels:
        raise _Skip(f"no test case of its {evaluated} split carries a label that is the expected prediction "
                    f"(expectation {' or '.join(LABEL_EXPECTATIONS)}); CheckList's INV and DIR tests compare "
                    "predictions with each other and have no harness output type")
    base = {**splits, "process_docs": _Function("utils.behavioural_docs"), "doc_to_text": "{{text}}\nAnswer:"}
    if all(isinstance(v, int) for v in labels):
        suite = str((record.get("signal") or {}).get("suite") or "")
        names = fields.label_names or SUITE_LABEL_NAMES.get(suite)
        if names is None or max(labels) >= len(names):
            raise _Skip(f"its labels are class numbers of suite {suite!r}, whose class names are not known "
                        f"(known: {', '.join(SUITE_LABEL_NAMES)})")
        return {**base, "output_type": "multiple_choice", "doc_to_target": "{{label|int}}",
                "doc_to_choice": list(names), **_choice_metrics()}
    # answers as text (SQuAD): generated and matched exactly
    return {**base, "output_type": "generate_until", "doc_to_target": "{{label}}", **_generation("exact_match")}


def _labelled(path: Path) -> list:
    """The labels of a behavioural split's examples whose test case expects them as the prediction."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["labels", "expectation"])
    found = []
    for labels, expectation in zip(table.column("labels").to_pylist(), table.column("expectation").to_pylist()):
        labels = json.loads(labels) if isinstance(labels, str) else labels
        expectation = (json.loads(expectation) if isinstance(expectation, str) else expectation) or {}
        if labels is None or expectation.get("fn") not in LABEL_EXPECTATIONS or expectation.get("value") is not None:
            continue
        found += [v for v in (labels if isinstance(labels, list) else [labels]) if v is not None]
    return found


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _dataset_options(config: str, *, dataset_path: str | None, relative: str) -> dict:
    if dataset_path:
        return {"dataset_path": dataset_path, "dataset_name": config}
    return {"custom_dataset": _Function("utils.load_release"), "dataset_name": config,
            "dataset_kwargs": {"resplit_folder": relative, "resplit_config": config}}


def _dump(mapping: dict) -> str:
    return yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def export_lm_eval(folder, out=None, *, repo_id: str | None = None, dataset_path: str | None = None) -> Exported:
    """Write the harness tasks of the release ``folder`` into ``out`` (default ``folder/lm_eval``).

    ``repo_id`` (a Hub id ``org/name``) or ``dataset_path`` (any ``datasets.load_dataset`` path, written
    as given) sets the tasks' ``dataset_path``; without either the Hub id the card records is used, and
    without one the tasks load the release folder through ``utils.load_release`` (a path relative to
    ``out``). Files of an earlier export in ``out`` (``*.yaml``, ``utils.py``) are replaced.
    """
    from split_builders.release.folder import read_card

    folder = Path(folder)
    metadata, _ = read_card(folder)
    record = metadata.get("resplit") or {}
    if repo_id is not None and not _HUB_ID.match(repo_id):
        raise InvalidParameterError(f"repo_id {repo_id!r} is not a Hub id: give it as org/name")
    repo_id = repo_id or (None if dataset_path else recorded_repo_id(metadata))
    out = Path(out) if out is not None else folder / FOLDER
    if out.exists() and not out.is_dir():
        raise InvalidParameterError(f"{str(out)!r} is a file: give a folder for the harness tasks (--out)")
    configs = _configs(folder, metadata)
    group = group_name(metadata, repo_id)
    exported = Exported(out, group, dataset_path=dataset_path or repo_id)
    fields = release_fields(folder, record, configs)
    tasks = {}
    for config in configs:
        if fields is None or fields.task == "text":
            exported.skipped[config.name] = "the release's rows carry no label or target program to score"
            continue
        try:
            tasks[config.name] = task_config(folder, config, fields, group=group, record=record)
        except _Skip as reason:
            exported.skipped[config.name] = str(reason)
    if not tasks:
        return exported
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.yaml"), out / UTILS]:
        if old.is_file():
            old.unlink()
    relative = Path(os.path.relpath(folder.resolve(), out.resolve())).as_posix()
    writes = {UTILS: UTILS_SOURCE}
    for name, task in tasks.items():
        options = _dataset_options(name, dataset_path=exported.dataset_path, relative=relative)
        writes[f"{name}.yaml"] = _dump({**task, **options, "metadata": {"version": TASK_VERSION}})
        exported.tasks[name] = task["task"]
    writes[f"_{group}.yaml"] = _dump({"group": group, "task": list(exported.tasks.values()),
                                      "metadata": {"version": TASK_VERSION}})
    for name, text in writes.items():
        (out / name).write_text(text, encoding="utf-8")
        exported.paths.append(out / name)
    return exported


def write_lm_eval(folder: Path, *, repo_id: str | None = None) -> list[Path]:
    """Write ``folder/lm_eval`` (:func:`export_lm_eval`) for a complete or staged release; the paths written."""
    return export_lm_eval(folder, repo_id=repo_id).paths


def describe(exported: Exported) -> list[str]:
    """Lines for the terminal: where the tasks are, how to run them, and the configs skipped and why."""
    lines = []
    if exported.tasks:
        source = (f"dataset_path {exported.dataset_path}" if exported.dataset_path
                  else "the release folder, through utils.load_release")
        lines += [f"wrote {len(exported.tasks)} lm-evaluation-harness task(s) to {exported.folder} (group "
                  f"{exported.group}; data from {source})",
                  *(f"  {task}" for task in exported.tasks.values()),
                  f"run them with: lm_eval --model hf --model_args pretrained=MODEL --include_path {exported.folder} "
                  f"--tasks {exported.group}"]
    for config, reason in exported.skipped.items():
        lines.append(f"skipped {config}: {reason}")
    if not exported.tasks:
        lines.append("no config fits a harness task: nothing written")
    return lines
