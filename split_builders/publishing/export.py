"""lm-evaluation-harness tasks of a release: ``lm_eval/`` with one task per config and one group per release.

:func:`export_lm_eval` reads a release folder (its README's YAML and the parquet schemas of its data files; no
rows but the label column of a string-labelled config and the labels of behavioural test cases) and writes,
into ``FOLDER/lm_eval`` (or ``--out``), a task per config by the kind of harness task the method declares
(:class:`split_builders.api.HarnessTask`, recorded in ``resplit.fields.harness``):

- ``classification``: ``multiple_choice`` over the label's class names in class order, read from the config's
  ``ClassLabel`` (a label stored as text, in older releases, is mapped to its index in the declared names by a
  Jinja ``doc_to_target``); scored by accuracy (``acc``, ``acc_norm``) and the metric the method declares beside it,
  where it declares one (CURRICULUM only: ``mcc``, Matthews correlation, aggregated by ``utils.matthews_corrcoef``
  (scikit-learn's): a function of the release's, so the harness, which bootstraps the standard error of its own
  ``matthews_corrcoef`` with 100,000 resamples per task and has no command-line flag to stop it in 0.4.13, gives
  none; ``resplit report`` gives the intervals);
- ``multiple_choice``: CheckList test cases whose label is the expected prediction (expectation ``eq`` /
  ``squad_clean_eq``), one document per example (``utils.behavioural_docs``), which keeps the test case it
  belongs to (:data:`DOC_FIELDS`: ``source_id``, ``example``, ``functionality``, ``capability``, ``test_type``)
  so that logged samples can be scored per test case as CheckList does: multiple choice over the suite's
  class names where labels are classes (sentiment, QQP), scored by ``acc`` only, generation where they are
  answers (SQuAD), each answer compared as its test case says (``utils.exact_match_expectation``: CheckList's
  SQuAD cleaning for ``squad_clean_eq``). INV and DIR tests compare predictions on an example and its
  perturbations with each other, which a harness task (one document scored on its own) cannot express: such
  configs get no task, and the card's harness section and :class:`Exported` say so;
- ``generation``: ``generate_until`` on the declared target, the answer being the first non-empty line of the
  generation, stripped (a ``regex`` and ``take_first`` filter: the leading space and newline a causal LM
  emits, and anything after the first line, are not part of it), generation stopping at a blank line (the
  few-shot delimiter, so a leading newline never cuts the answer to ''), few-shot by default
  (:data:`NUM_FEWSHOT` examples from train: zero-shot, a causal LM's first line is rarely an answer), and
  ``exact_match`` of whitespace-normalised programs (``utils.exact_match_program``) where the declared metric
  is exact match, else the harness's own metric of that name.

Besides them: ``_<group>.yaml``, the default group (``aggregate_metric_list``: one group row per metric), which
also lists every file the export wrote with its sha256; ``_<group>_<name>.yaml``, an auxiliary group of the tasks
of the configs a method declares apart (``SplitMethod.harness_groups``: CURRICULUM's inoculation configs, whose
evaluation split is their phenomenon's validation split, in ``curriculum_inoculation``), outside the default
group; and ``utils.py`` (the loader and the scoring functions, self-contained: the harness imports it by path).

**Pinned.** A task reads its release at a fixed version: from the Hub (``dataset_path`` the repository,
``dataset_kwargs: {revision: TAG}``: the ``--revision`` given, or the version a published card records), or,
where the release is read locally, from the folder at a path relative to the task file, each data file pinned
by the sha256 the card records (``utils.load_release`` refuses a folder that now holds another version).

**Named once.** The group is ``<dataset>_<method>`` (:func:`group_name`): the dataset's name as its reader
states it (``SNLI (...)``, ``BoolQ (...)``, ``GeoQuery (...)``, a Hub id's name, else the file's stem), the
same locally and after ``push``; a task is ``<group>_<config>``.

**Nothing lost.** Only files the export wrote are replaced: those the group file lists with an unchanged
sha256 (or, in a release's own ``lm_eval/`` exported before the list existed, ``utils.py``, ``_*.yaml`` and
``<config>.yaml``). Any other file in the way is refused in one line naming it; files of the user's own
(another task, notes) are left as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from split_builders.contracts import Fields
from split_builders.errors import InvalidParameterError, InvalidReleaseError
from split_builders.options import check_repo_id
from split_builders.publishing.harness_card import NUM_FEWSHOT, Exported, card_lines
from split_builders.publishing.harness_files import (HEADER, UTILS, UTILS_SOURCE, _dump, _Function, _plan,
                                                    _write_files, replace_card_section, written_before)
from split_builders.release.provenance import file_sha256 as _file_sha256

FOLDER = "lm_eval"
# 2.0: answers filtered to their first line, few-shot generation, pinned data, mcc; 3.0: behavioural documents keep
# their test case (DOC_FIELDS), auxiliary configs (harness_groups) in groups of their own
TASK_VERSION = 3.0
MAX_GEN_TOKS = 256
UNTIL = ["\n\n"]  # a generation stops at a blank line (the few-shot delimiter), never at a leading newline
FIRST_LINE = r"^\s*(\S[^\n]*)"  # the first non-empty line of a generation (the harness strips it)
CHOICE_METRICS = ("acc", "acc_norm")  # with the method's declared metric (CURRICULUM: mcc, Matthews correlation)
_AGGREGATIONS = {"mcc": "utils.matthews_corrcoef", "f1": "f1"}  # corpus-level metrics (utils.*: ours); the others: mean
# Class names of the CheckList suites' integer labels (data/checklist/SPEC.md), in class order: used only where
# the release states none (a ClassLabel or the declared label names come first).
SUITE_LABEL_NAMES = {"sentiment": ("negative", "neutral", "positive"), "qqp": ("not_duplicate", "duplicate")}
# CheckList expectations that judge one prediction on its own (data/checklist/SPEC.md): a harness task scores
# them; the others (INV, DIR: ``inv``, ``monotonic``, ``diff_up``, ...) compare predictions with each other.
LABEL_EXPECTATIONS = ("eq", "squad_clean_eq", "pred_not_equal", "allow_for_neutral")
# The fields of a behavioural document (utils.behavioural_docs): the example, what it is compared with, and the test
# case it belongs to (its source_id, the example's 0-based index in it, its functionality, capability and type).
DOC_FIELDS = ("text", "answer", "expectation", "ruled_out", "source_id", "example", "functionality", "capability",
              "test_type")
CARD_START, CARD_END = "<!-- resplit:lm-eval -->", "<!-- /resplit:lm-eval -->"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^v?\d+\.\d+\.\d+$")








@dataclass
class _Config:
    """One config as a task sees it: its splits (name -> data file), features, rows per split and sha256s."""

    name: str
    files: dict
    features: object
    rows: dict
    sha256: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Reading the release; names
# ---------------------------------------------------------------------------------------------


def _configs(folder: Path, metadata: dict) -> list:
    import datasets
    import pyarrow.parquet as pq

    from split_builders.release.folder import data_files

    recorded = (metadata.get("resplit") or {}).get("configs") or {}
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
        sha256 = dict((recorded.get(name) or {}).get("sha256") or {})
        configs.append(_Config(name, splits, features, rows, sha256))
    return configs


def recorded_repo_id(metadata: dict) -> str | None:
    """The Hub id a card records for its release (``resplit.repo_id`` or ``resplit.hub.repo_id``), if any."""
    record = metadata.get("resplit") or {}
    for value in (record.get("repo_id"), (record.get("hub") or {}).get("repo_id")
                  if isinstance(record.get("hub"), dict) else None):
        if isinstance(value, str) and is_hub_id(value):
            return value
    return None


# A git ref's characters (git check-ref-format): no space or control character, none of ~^:?*[\ and no "..".
_REVISION = re.compile(r"^(?!.*\.\.)(?!.*@\{)[^\x00-\x20\x7f~^:?*\[\\]+$")


def check_revision(revision) -> None:
    """Refuse, in one line, a ``--revision`` that no Hub tag, branch or commit can be: empty, or with a space or a
    character git refuses in a ref name."""
    if revision is None:
        return
    if not str(revision).strip():
        raise InvalidParameterError("--revision is empty: give the tag or commit the tasks read (e.g. v1.0.0)")
    text = str(revision)
    if not _REVISION.match(text) or text.endswith((".", "/", ".lock")) or text.startswith(("/", "-")):
        raise InvalidParameterError(f"--revision {text!r} is not a tag, branch or commit name (no spaces, none of "
                                    "~^:?*[\\ and no '..'): give it as the Hub shows it, e.g. v1.0.0")


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is a Hub id ``ORG/NAME`` by the Hub's rules (:func:`~split_builders.options.check_repo_id`)."""
    try:
        check_repo_id(text)
    except InvalidParameterError:
        return False
    return True


def recorded_revision(metadata: dict) -> str | None:
    """The Hub tag of a published card's version (``resplit.release_version`` 1.2.3 -> ``v1.2.3``), if any."""
    version = str((metadata.get("resplit") or {}).get("release_version") or "")
    return f"v{version.lstrip('v')}" if _VERSION.match(version) else None


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


def dataset_name(metadata: dict) -> str:
    """The dataset a release was built from, as a name (``[a-z0-9_]``): the name its reader gives the source
    before any `` (`` or ``: `` (``SNLI (snli_1.0_dev.jsonl.gz)`` -> ``snli``; ``CURRICULUM (...)`` ->
    ``curriculum``), a Hub id's repository name (``google/boolq`` -> ``boolq``), else the file's stem
    (``all_examples.csv`` -> ``all_examples``)."""
    source = str(((metadata.get("resplit") or {}).get("source") or {}).get("name") or "")
    name = re.split(r" \(|: ", source, maxsplit=1)[0].strip().rstrip("/")
    name = name.rsplit("/", 1)[-1]
    return _slug(name.split(".", 1)[0]) if name.split(".", 1)[0] else ""


def group_name(metadata: dict) -> str:
    """The harness group of a release, chosen once from the release alone (never from where it is published, so
    the same locally and on the Hub): ``<dataset>_<method>`` (``boolq_likelihood``, ``geoquery_tmcd``), or the
    method alone where the dataset is named after it (``curriculum``)."""
    method = _slug(str((metadata.get("resplit") or {}).get("method") or "release"))
    dataset = dataset_name(metadata)
    return method if not dataset or dataset == method else f"{dataset}_{method}"


def _slug(text: str) -> str:
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", text.lower())).strip("_") or "release"


# ---------------------------------------------------------------------------------------------
# One task
# ---------------------------------------------------------------------------------------------


class _Skip(Exception):
    """A config no harness output type fits (the reason)."""


def evaluation_splits(record: dict) -> tuple:
    """The splits a config of the release is evaluated on, in order: the method's declaration
    (``SplitMethod.evaluation_splits``) where the method is registered, else test, then validation."""
    from split_builders.registry import registry

    method = registry().get(str(record.get("method") or ""))
    return tuple(getattr(method, "evaluation_splits", None) or ("test", "validation"))


def harness_groups(record: dict, tasks: dict, *, group: str) -> tuple[dict, dict]:
    """``({group: [task, ...]}, {group: config patterns})``: the auxiliary groups, ``<group>_<name>``, of the
    tasks (``{config: task}``) of the configs the method declares apart (``SplitMethod.harness_groups``), outside
    the default group; none where the method is not registered or declares none, or where no task would be left
    in the default group."""
    from split_builders.registry import registry

    method = registry().get(str(record.get("method") or ""))
    declared = getattr(method, "harness_groups", None) or {}
    members = {}
    for config, task in tasks.items():
        name = method.harness_group(config) if declared else None
        if name is not None:
            members.setdefault(f"{group}_{name}", []).append(task)
    if not members or sum(map(len, members.values())) == len(tasks):
        return {}, {}
    return members, {f"{group}_{name}": tuple(declared[name]) for name in declared if f"{group}_{name}" in members}


def _splits(config: _Config, order: tuple = ("test", "validation")) -> dict:
    """The harness split options of a config: the first of ``order`` it has (:func:`evaluation_splits`: the
    test split, or validation where a method declares it and there is no test split, as CURRICULUM's configs);
    validation beside a test split; train for training and few-shot examples."""
    present = [s for s in ("train", "validation", "test") if config.rows.get(s)]
    evaluated = next((s for s in order if s in present), None)
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
    order = evaluation_splits(record)
    splits = _splits(config, order)
    if not splits:
        raise _Skip(f"it has no {' or '.join(order)} rows (the splits its method evaluates on)")
    task = {"task": f"{group}_{config.name}", "task_alias": config.name}
    kind = fields.harness.kind if fields.harness is not None else None
    if kind is None:
        raise _Skip("the release declares no harness task (its rows carry neither a label nor a target)")
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
                "doc_to_target": fields.target,
                **_generation(fields.harness.metric, scorer="utils.exact_match_program", fewshot="train" in config.rows)}
    if not fields.label:
        raise _Skip("it declares a classification task but no label column")
    # a declared label field is released as ``label`` (a ClassLabel) where the label policy applies
    label = fields.label if fields.label in config.features or "label" not in config.features else "label"
    _check_columns(config, [*text, label])
    names, class_label = _label_names(folder, config, label, fields)
    target = (label if class_label
              else f"{{{{ {json.dumps(list(names), ensure_ascii=False)}.index({label}|string) }}}}")
    return {**task, **splits, "output_type": "multiple_choice", "doc_to_text": _prompt(text, label),
            "doc_to_target": target, "doc_to_choice": list(names), **_choice_metrics(fields.harness.metric)}


def _generation(metric: str, *, scorer: str, fewshot: bool) -> dict:
    """A generation task's options: the first non-empty line of the generation is the answer, compared by
    ``scorer`` (a ``utils`` function) where the declared metric is exact match, else by the harness's metric."""
    exact = metric == "exact_match"
    options = {"generation_kwargs": {"until": list(UNTIL), "do_sample": False, "max_gen_toks": MAX_GEN_TOKS},
               "filter_list": [{"name": "first_line", "filter": [
                   {"function": "regex", "regex_pattern": FIRST_LINE, "group_select": 0, "fallback": ""},
                   {"function": "take_first"}]}]}
    if exact:
        options["process_results"] = _Function(scorer)
    options["metric_list"] = [{"metric": metric, "aggregation": "mean", "higher_is_better": True}]
    if fewshot:
        options["num_fewshot"] = NUM_FEWSHOT
    return options


def _choice_metrics(declared: str | None = None) -> dict:
    names = list(dict.fromkeys([*CHOICE_METRICS, *([declared] if declared else [])]))
    return {"metric_list": [{"metric": name, "aggregation": _aggregation(name), "higher_is_better": True}
                            for name in names]}


def _aggregation(metric: str):
    """A metric's aggregation: the harness's by name, or a function of ``utils.py`` (``!function``)."""
    name = _AGGREGATIONS.get(metric, "mean")
    return _Function(name) if name.startswith("utils.") else name


def _behavioural(folder: Path, config: _Config, fields: Fields, record: dict, splits: dict) -> dict:
    """A behavioural config's task: one document per example of the test cases whose expectation judges each
    prediction on its own (``utils.behavioural_docs``), scored by that expectation."""
    import datasets

    _check_columns(config, ["examples", "labels", "expectation"])
    evaluated = splits["test_split"]
    classes = _expected(folder / config.files[evaluated])
    if not classes:
        raise _Skip(f"no test case of its {evaluated} split judges a prediction on its own (expectation "
                    f"{', '.join(LABEL_EXPECTATIONS)}): CheckList's INV and DIR tests compare a model's predictions "
                    "on an example and its perturbations with each other, which a harness task (each document "
                    "scored on its own) cannot; `resplit pass-rate` scores them")
    base = {**splits, "process_docs": _Function("utils.behavioural_docs"), "doc_to_text": "{{text}}\nAnswer:"}
    if all(isinstance(v, int) and not isinstance(v, bool) for v in classes):
        label = next((c for c in ("label", fields.label) if c and isinstance(config.features.get(c),
                                                                             datasets.ClassLabel)), None)
        suite = str((record.get("signal") or {}).get("suite") or "")
        names = (tuple(config.features[label].names) if label else fields.label_names
                 or SUITE_LABEL_NAMES.get(suite))
        if names is None or max(classes) >= len(names):
            raise _Skip(f"its labels are class numbers of suite {suite!r}, whose class names the release does not "
                        f"state (known suites: {', '.join(SUITE_LABEL_NAMES)})")
        # the expected class; where a test case names only the class it rules out, a class it allows (few-shot)
        target = "{{ answer|int if answer else (1 if ruled_out == '0' else 0) }}"
        return {**base, "output_type": "multiple_choice", "doc_to_target": target, "doc_to_choice": list(names),
                "process_results": _Function("utils.pass_choice"),
                "metric_list": [{"metric": "acc", "aggregation": "mean", "higher_is_better": True}]}
    # answers as text (SQuAD): generated, and compared as each test case's expectation says
    return {**base, "output_type": "generate_until", "doc_to_target": "{{answer}}",
            **_generation("exact_match", scorer="utils.exact_match_expectation",
                          fewshot="train" in config.rows and bool(_expected(folder / config.files["train"])))}


def _expected(path: Path) -> list:
    """The classes or answers a behavioural split's test cases judge single predictions by (labels, and the
    values an expectation names)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["labels", "expectation"])
    found = []
    for labels, expectation in zip(table.column("labels").to_pylist(), table.column("expectation").to_pylist()):
        labels = json.loads(labels) if isinstance(labels, str) else labels
        expectation = (json.loads(expectation) if isinstance(expectation, str) else expectation) or {}
        if expectation.get("fn") not in LABEL_EXPECTATIONS:
            continue
        values = [expectation["value"]] if expectation.get("value") is not None else []
        if expectation.get("fn") != "pred_not_equal" and not values:
            values = labels if isinstance(labels, list) else [labels]
        found += [v for v in values if v is not None]
    return found


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _pinned(folder: Path, config: _Config) -> dict:
    """``{split: {path, sha256}}`` of a config's data files as they are now, each checked against the sha256
    the card records (where it records one)."""
    pinned = {}
    for split, path in config.files.items():
        digest = _file_sha256(folder / path)
        recorded = config.sha256.get(split)
        if recorded and recorded != digest:
            raise InvalidReleaseError(f"{folder}: {path} does not have the sha256 its card records (the file changed "
                                      "since the build); rebuild the release or restore the file")
        pinned[split] = {"path": path, "sha256": digest}
    return pinned


def _dataset_options(config: _Config, pinned: dict, *, dataset_path: str | None, revision: str | None,
                     relative: str) -> dict:
    if dataset_path:
        return {"dataset_path": dataset_path, "dataset_name": config.name,
                **({"dataset_kwargs": {"revision": revision}} if revision else {})}
    kwargs = {"resplit_folder": relative, "resplit_config": config.name, "resplit_files": pinned,
              **({"revision": revision} if revision else {})}
    return {"custom_dataset": _Function("utils.load_release"), "dataset_name": config.name, "dataset_kwargs": kwargs}




def _utils_source(fields: Fields | None) -> str:
    return (UTILS_SOURCE.replace("__TARGET__", repr(fields.target if fields is not None else None))
            .replace("__EXPECTATIONS__", repr(LABEL_EXPECTATIONS)))




def where_tasks_read(folder: Path, metadata: dict, *, repo_id: str | None, revision: str | None,
                     dataset_path: str | None = None) -> tuple[str | None, str | None]:
    """``(repo_id, revision)`` the tasks of a release read, checked: a Hub id given (``repo_id``), else the one a
    published card records (with ``dataset_path``: that path as given), at ``revision`` or the card's version (a Hub
    id without either is refused: tasks are pinned); ``(None, revision)`` for the folder itself, where a
    ``revision`` must be the card's version if it records one."""
    if repo_id is not None:
        check_repo_id(repo_id, "--dataset-path")
    check_revision(revision)
    if dataset_path is not None and revision is not None:
        raise InvalidParameterError(f"--revision {revision}: --dataset-path {dataset_path!r} is not a Hub id ORG/NAME, "
                                    "and only a Hub repository has revisions; drop --revision, or give the Hub id")
    if repo_id is None and dataset_path is None and recorded_repo_id(metadata) and recorded_revision(metadata):
        repo_id = recorded_repo_id(metadata)  # a published copy: its tasks read the Hub at its own version
    if repo_id is not None:
        revision = revision or recorded_revision(metadata)
        if revision is None:
            raise InvalidParameterError(f"tasks reading {repo_id} need the version they read: give --revision (the tag "
                                        "or commit, e.g. v1.0.0)")
    elif dataset_path is None and revision is not None and recorded_revision(metadata) not in (None, revision,
                                                                                               f"v{revision}"):
        raise InvalidParameterError(f"--revision {revision}: the folder {str(folder)!r} holds version "
                                    f"{recorded_revision(metadata)} of the release; give that, or read the Hub with "
                                    "--dataset-path ORG/NAME")
    return repo_id, revision


def check_tasks_place(folder: Path, out: Path) -> None:
    """Refuse, in one line, an ``--out`` in another release than ``folder`` (its ``lm_eval/``, say): the tasks
    written there would read ``folder``, and that release's tasks would silently read another release. The nearest
    folder at or above ``out`` that holds a resplit card must be ``folder`` itself, or there must be none."""
    from split_builders.release.folder import front_matter

    own = folder.resolve()
    for place in (out.resolve(), *out.resolve().parents):
        if place == own:
            return
        try:
            metadata, _ = front_matter(place / "README.md") if (place / "README.md").is_file() else (None, "")
        except (OSError, UnicodeDecodeError, ValueError, InvalidReleaseError):  # not a card: not a release
            continue
        if isinstance(metadata, dict) and isinstance(metadata.get("resplit"), dict):
            where = "the release" if place == out.resolve() else "inside the release"
            raise InvalidParameterError(f"--out {str(out)!r} is {where} {str(place)!r}, not "
                                        f"{str(folder)!r}: tasks written there would read {str(folder)!r} as if they "
                                        f"were that release's; give --out outside any other release (its own tasks: "
                                        f"resplit export lm-eval {place}) (nothing was changed)")


def plan_tasks(folder: Path, metadata: dict) -> tuple:
    """``(configs, fields, group, tasks, skipped)``: the release's configs and :class:`Fields`, its group name, the
    harness task of every config that has one (``{config: task}``, :func:`task_config`: the one decision per
    config both harnesses' exports follow) and the others with the reason (``{config: reason}``)."""
    record = metadata.get("resplit") or {}
    configs = _configs(folder, metadata)
    fields = release_fields(folder, record, configs)
    group = group_name(metadata)
    tasks, skipped = {}, {}
    for config in configs:
        if fields is None or fields.task == "text":
            skipped[config.name] = "the release's rows carry no label or target to score"
            continue
        try:
            tasks[config.name] = task_config(folder, config, fields, group=group, record=record)
        except _Skip as reason:
            skipped[config.name] = str(reason)
    return configs, fields, group, tasks, skipped


def export_lm_eval(folder, out=None, *, repo_id: str | None = None, dataset_path: str | None = None,
                   revision: str | None = None) -> Exported:
    """Write the harness tasks of the release ``folder`` into ``out`` (default ``folder/lm_eval``).

    Where the tasks read the release: ``repo_id`` (a Hub id ``org/name``) at ``revision`` (a tag or commit);
    ``dataset_path`` (any ``datasets.load_dataset`` path, written as given); without either, the Hub id and the
    version a published card records; else the folder itself, each data file pinned by its sha256 (a path
    relative to ``out``; ``revision``, where given, is recorded and must be the card's version where it records
    one). A Hub id without a revision is refused: tasks are pinned.
    Only files an earlier export wrote are replaced (see the module's docstring); where ``out`` is the release's
    own ``lm_eval/``, the card's harness section is written again too.
    """
    from split_builders.release.folder import read_card

    folder = Path(folder)
    metadata, _ = read_card(folder)
    record = metadata.get("resplit") or {}
    repo_id, revision = where_tasks_read(folder, metadata, repo_id=repo_id, revision=revision,
                                         dataset_path=dataset_path)
    from split_builders.release.places import check_output_place, refuse_link

    # the one output policy: not '', the root or the home folder, not a file, a writable place
    out = check_output_place(out if out is not None else folder / FOLDER, "--out", kind="files")
    check_tasks_place(folder, out)
    own = out.resolve() == (folder / FOLDER).resolve()
    if own:  # its card section is written too: a link there is refused before any task is written
        refuse_link(folder / "README.md", "the card")
    configs, fields, group, tasks, skipped = plan_tasks(folder, metadata)
    exported = Exported(out, group, dataset_path=dataset_path or repo_id, revision=revision, skipped=skipped)
    exported.harness = fields.harness.kind if fields is not None and fields.harness is not None else None
    if not tasks:
        if own:
            _write_card_section(folder, exported)
        return exported
    relative = Path(os.path.relpath(folder.resolve(), out.resolve())).as_posix()
    writes = {UTILS: _utils_source(fields)}
    by_name = {c.name: c for c in configs}
    for name, task in tasks.items():
        config = by_name[name]
        pinned = {} if exported.dataset_path else _pinned(folder, config)
        options = _dataset_options(config, pinned, dataset_path=exported.dataset_path, revision=revision,
                                   relative=relative)
        writes[f"{name}.yaml"] = _dump({**task, **options, "metadata": {"version": TASK_VERSION}})
        exported.tasks[name] = task["task"]
        exported.kinds[name] = task["output_type"]
    exported.metrics = _metrics(tasks.values())
    exported.groups, exported.group_configs = harness_groups(record, exported.tasks, group=group)
    by_task = {task["task"]: task for task in tasks.values()}
    for name, members in exported.groups.items():  # auxiliary groups: listed in the default group's files
        writes[f"_{name}.yaml"] = _group(name, members, _metrics(by_task[t] for t in members))
    listed = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in writes.items()}
    default = exported.default_tasks
    writes[f"_{group}.yaml"] = _group(group, default, _metrics(by_task[t] for t in default), files=listed)
    previous = written_before(out, configs=[c.name for c in configs] if own else ()) if out.is_dir() else {}
    stale, exported.kept = _plan(out, writes, previous)
    exported.paths = _write_files(out, writes, stale)
    if own:
        _write_card_section(folder, exported)
    return exported


def _metrics(tasks) -> list:
    """The metrics of some tasks, each once, in order."""
    return list(dict.fromkeys(m["metric"] for task in tasks for m in task["metric_list"]))


def _group(name: str, tasks: list, metrics: list, *, files: dict | None = None) -> str:
    """A group file: its tasks, one group row per metric (configs weighted equally) and, in the default group,
    every file the export wrote (``resplit_files``)."""
    from split_builders.release.provenance import UNSEALED, sealed

    text = _dump({"group": name, "task": list(tasks),
                  "aggregate_metric_list": [{"metric": m, "aggregation": "mean", "weight_by_size": False}
                                            for m in metrics],
                  "metadata": {"version": TASK_VERSION, **({"resplit_files": files} if files is not None else {})}})
    if files is None:
        return text
    # the list of what the export wrote carries its own fingerprint: an edited one is the user's
    return sealed(text.replace(HEADER, f"{HEADER}# {UNSEALED} (this file's fingerprint: an edited copy is yours, "
                                       "never replaced)\n", 1))


def write_lm_eval(folder: Path, *, repo_id: str | None = None, revision: str | None = None) -> list[Path]:
    """Write ``folder/lm_eval`` (:func:`export_lm_eval`) for a complete or staged release; the paths written.
    ``repo_id`` without a ``revision`` (a build with ``--org``, not yet published) reads the folder itself."""
    repo_id = tasks_repo(folder, repo_id, revision)
    return export_lm_eval(folder, repo_id=repo_id, revision=revision).paths


def tasks_repo(folder: Path, repo_id: str | None, revision: str | None) -> str | None:
    """The Hub id a build's tasks read: ``repo_id`` where a ``revision`` is given or the card records one, else None
    (a build with ``--org``, not yet published: its tasks read the folder itself)."""
    from split_builders.release.folder import read_card

    if repo_id is not None and revision is None and recorded_revision(read_card(Path(folder))[0]) is None:
        return None
    return repo_id


def _write_card_section(folder: Path, exported: Exported) -> None:
    """Write the harness section (:func:`card_lines`) into the release's README.md, between its markers."""
    replace_card_section(folder, CARD_START, CARD_END, card_lines(exported))
