"""Evaluation runs read back as per-row outcomes joined to a release's rows by ``source_id``.

A run is one of (inspect-ai logs: :mod:`split_builders.evaluation.inspect_runs`):

- an lm-evaluation-harness ``--output_path`` folder written with ``--log_samples`` (``results_<time>.json`` and
  ``samples_<task>_<time>.jsonl`` beside it, in the model's own sub-folder the harness makes; one results file is
  one model's run);
- a predictions table (CSV, TSV, JSON lines or Parquet; see :data:`TABLE_COLUMNS`), what any training script can
  write.

Each becomes an :class:`Outcomes` frame: one row per (model, release, config, split, source_id[, example]) with
the value of the config's metric on that row (0/1 for accuracy, exact match and CheckList passes; a per-row score;
or the gold and predicted class of a Matthews correlation). Every sample is matched to its release row by
``source_id``; a task run on another version of the release (its pinned sha256 or revision differs), a config
the release does not have and a ``source_id`` that is not in the config's split are refused in one line.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.evaluation.outcomes import (RunError, check_outcomes, combine, finish_run, finite_number,
                                               json_lines, whole_column, whole_number)

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".csv.gz", ".tsv.gz", ".jsonl.gz")
TABLE_COLUMNS = ("model", "config", "split", "source_id")
"""The columns of a predictions table, with one of :data:`OUTCOME_COLUMNS`; ``model`` may be left out when the
run is named (``RUN=NAME``), ``split`` where the config is evaluated on one split; ``example`` (the example's
index in a CheckList test case) and ``release`` (the release's group name, where a report covers several)
are optional."""
OUTCOME_COLUMNS = ("correct", "score", "prediction")
OUTCOME_FRAME = ("model", "release", "config", "split", "source_id", "example", "metric", "value", "gold", "pred",
                 "functionality", "capability", "test_type")
_RESULTS = re.compile(r"^results_(?P<time>.+)\.json$")


@dataclass
class ReleaseInfo:
    """What the report needs of one release: its group name (tasks are ``<group>_<config>``), method, declared
    harness task and baseline config, and per config the evaluated split, its ``source_id`` set, the sha256 of
    each data file and the label / target column."""

    name: str
    folder: Path
    method: str
    kind: str | None
    metric: str | None
    baseline: str | None
    report_tables: tuple
    revision: str | None
    repo_id: str | None
    configs: dict  # config -> {"evaluated": split, "splits": {split: rows}, "sha256": {split: digest}}
    label: str | None = None
    label_names: tuple | None = None
    target: str | None = None
    released: object = None
    _ids: dict = field(default_factory=dict)

    def source_ids(self, config: str, split: str) -> np.ndarray:
        key = (config, split)
        if key not in self._ids:
            self._ids[key] = np.sort(self.released.source_ids(config, split))
        return self._ids[key]

    def column(self, config: str, split: str, name: str):
        """``(source_id, values)`` of one column of a split."""
        from split_builders.release.folder import row_ids

        table = self.released.table(config, split, columns=["source_id", name])
        return row_ids(table), table.column(name).to_pylist()


def read_release(target: str, work: Path | None = None) -> ReleaseInfo:
    """A release folder (or ``HUB_ID@REV``, downloaded into ``work``) as a :class:`ReleaseInfo`."""
    import datasets
    import pyarrow.parquet as pq

    from split_builders.registry import registry
    from split_builders.publishing.export import (evaluation_splits, group_name, recorded_repo_id, recorded_revision,
                                               release_fields, _configs)
    from split_builders.release.folder import Released, resolve_target

    folder = resolve_target(str(target), Path(work) if work else Path("."))
    released = Released(folder)
    record = released.record
    if not record.get("method"):
        raise InvalidParameterError(f"{folder} is not a resplit release (its card records no method): give the folder "
                                    "resplit built")
    method = registry().get(str(record["method"]))
    released.check_present()  # a data file deleted: one line, as verify names it, not Arrow's FileNotFoundError
    order = evaluation_splits(record)
    configs = {}
    for config in released.configs:
        splits = {}
        for split in released.files[config]:
            splits[split] = pq.ParquetFile(released.path(config, split)).metadata.num_rows
        evaluated = next((s for s in order if splits.get(s)), None)
        configs[config] = {"evaluated": evaluated, "splits": splits,
                           "sha256": {s: released.recorded_sha256(config, s) for s in splits}}
    fields = release_fields(folder, record, _configs(folder, released.metadata))
    harness = fields.harness if fields is not None else None
    label_names = None
    if fields is not None and fields.label:
        first = released.configs[0]
        split = next(iter(released.files[first]))
        schema = pq.ParquetFile(released.path(first, split)).schema_arrow
        label = fields.label if fields.label in schema.names or "label" not in schema.names else "label"
        feature = datasets.Features.from_arrow_schema(schema).get(label)
        label_names = tuple(feature.names) if isinstance(feature, datasets.ClassLabel) else (
            tuple(fields.label_names) if fields.label_names else None)
    else:
        label = None
    return ReleaseInfo(
        name=group_name(released.metadata), folder=folder, method=str(record["method"]),
        kind=harness.kind if harness is not None else None, metric=harness.metric if harness is not None else None,
        baseline=getattr(method, "baseline_config", None) if method is not None else None,
        report_tables=tuple(getattr(method, "report_tables", ()) or ()) if method is not None else (),
        revision=recorded_revision(released.metadata), repo_id=recorded_repo_id(released.metadata),
        configs=configs, label=label, label_names=label_names, target=fields.target if fields is not None else None,
        released=released)


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One model's run: its name, where it was read from, its outcomes and what was noticed."""

    name: str
    path: str
    outcomes: object  # pandas.DataFrame with the columns OUTCOME_FRAME
    complete: dict = field(default_factory=dict)  # (release, config, split) -> (n, rows of the split)
    notes: list = field(default_factory=list)
    samples: list = field(default_factory=list)  # (release, config, split, sample dict) of classification tasks
    named: bool = False  # named by the user (RUN=NAME)
    files: list = field(default_factory=list)  # the files it was read from
    harness: str = "predictions table"  # what wrote it: lm-eval, inspect-ai or a predictions table
    harness_version: str | None = None  # the version the run records (lm_eval_version, inspect_ai's)

    def rename(self, name: str) -> None:
        """Name the run (and its outcomes) ``name``."""
        self.name = name
        if hasattr(self.outcomes, "columns"):
            self.outcomes["model"] = name


def parse_run_argument(text: str) -> tuple[str, str | None]:
    """``RUN[=NAME]`` -> ``(RUN, NAME)``; a path that exists as given (with an ``=`` in it) is a path."""
    if "=" in text and not Path(text).exists():
        path, _, name = text.rpartition("=")
        if not name.strip():
            raise InvalidParameterError(f"{text!r}: the name after '=' is empty; give RUN=NAME or the run alone")
        return path, name.strip()
    return text, None


def read_runs(path: str, releases: list, *, name: str | None = None) -> list[Run]:
    """The runs at ``path``: an lm-evaluation-harness output folder (one run per results file), a predictions
    table (one run per model in it), or a single results file (inspect-ai logs:
    :func:`split_builders.evaluation.inspect_runs.read_any_runs`, which reads them and hands the rest here)."""
    where = Path(path).expanduser()
    if not where.exists():
        raise RunError(f"{path}: no such file or folder; give an lm_eval --output_path folder, an inspect-ai log "
                       "(folder) or a predictions table")
    if where.is_dir() or _RESULTS.match(where.name):
        return _harness_runs(where, releases, name=name)
    if where.name.lower().endswith(TABLE_SUFFIXES):
        return _table_runs(where, releases, name=name)
    raise RunError(f"{path} is not a run: give an lm_eval --output_path folder (written with --log_samples), an "
                   f"inspect-ai log or its folder (.eval), or a predictions table ({', '.join(TABLE_SUFFIXES[:4])}, "
                   ".parquet)")


# -- lm-evaluation-harness --------------------------------------------------------------------


def _harness_runs(where: Path, releases: list, *, name: str | None, required: bool = True) -> list[Run]:
    files = [where] if where.is_file() else sorted(where.rglob("results_*.json"))
    if not files:
        raise RunError(f"{where} holds no lm_eval results (results_*.json): give the --output_path of an lm_eval run")
    pieces = [run for run in (_harness_run(file, releases) for file in files) if run is not None]
    if not pieces and not required:
        return []
    if not pieces:
        names = ", ".join(r.name for r in releases)
        raise RunError(f"{where}: none of its lm_eval tasks belongs to the release ({names}); run the release's tasks "
                       "(lm_eval --include_path RELEASE/lm_eval --tasks GROUP)")
    groups = {}  # the results files of one model in one folder are one run (a task run twice is read once)
    for piece in pieces:
        groups.setdefault((Path(piece.path).parent, piece.name), []).append(piece)
    runs = [combine(group, folder) for (folder, _), group in groups.items()]
    for run in runs:
        finish_run(run)
    return name_runs(runs, where, name, "lm_eval runs")


def name_runs(runs: list, where, name: str | None, what: str) -> list:
    """``runs`` named ``name`` (RUN=NAME names one model's run: more are refused)."""
    if name is None:
        return runs
    if len(runs) > 1:
        raise RunError(f"{where} holds {what} of {len(runs)} models ({', '.join(r.name for r in runs)}); one =NAME "
                       "names one model: give each model's folder separately (FOLDER=NAME)")
    runs[0].rename(name)
    runs[0].named = True
    return runs


def _load_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise RunError(f"{path} is not a readable JSON file ({str(error).splitlines()[0] if str(error) else ''}); "
                       "give the lm_eval run as it was written") from None


def _task_release(task: str, config: dict, releases: list):
    """``(release, config name)`` of a harness task, or None where it is not one of the releases'."""
    dataset = str(config.get("dataset_name") or "")
    kwargs = config.get("dataset_kwargs") or {}
    name = str(kwargs.get("resplit_config") or dataset)
    for release in releases:
        if task == f"{release.name}_{name}" or (task.startswith(release.name + "_") and name in release.configs):
            return release, name
    return None


def _check_version(release: ReleaseInfo, task: str, config: str, split: str, task_config: dict, where: Path):
    kwargs = task_config.get("dataset_kwargs") or {}
    kwargs = kwargs if isinstance(kwargs, dict) else {}
    return check_version(release, task, config, split, files=kwargs.get("resplit_files"),
                         revision=kwargs.get("revision") or task_config.get("revision"), where=where)


def check_version(release: ReleaseInfo, task, config: str, split: str, *, files, revision, where) -> str | None:
    """Refuse, in one line, a task that read a config the release lacks, or another version of it: the sha256 of
    the ``split`` file it pinned (``files``: ``{split: {path, sha256}}``), else its Hub ``revision``. A revision that
    cannot be compared (the release records none) is not passed over: the note returned says so."""
    if config not in release.configs:
        raise RunError(f"{where}: task {task} reads config {config!r}, which the release {release.folder} does not "
                       f"have (its configs: {', '.join(release.configs)}); give the release it was run on")
    if isinstance(files, dict) and isinstance(files.get(split), dict):
        ran = str(files[split].get("sha256") or "")
        have = release.configs[config]["sha256"].get(split) or release.released.sha256(config, split)
        if ran and ran != have:
            raise RunError(f"{where}: task {task} was run on another version of the release ({split} file sha256 "
                           f"{ran[:12]}, {release.folder} has {have[:12]}); give the release it was run on, or run "
                           "this version's tasks")
        return
    if revision and release.revision and str(revision).lstrip("v") != str(release.revision).lstrip("v"):
        raise RunError(f"{where}: task {task} was run on revision {revision} of the release, {release.folder} is "
                       f"{release.revision}; give the release it was run on, or run this version's tasks")
    if revision and not release.revision:
        return (f"{task}: run on revision {revision} of the release, and {release.folder} records no revision (nor the "
                "task a data file's sha256), so whether the run read these rows is not checked")
    return None


def _harness_run(results_file: Path, releases: list) -> Run | None:
    import pandas as pd

    match = _RESULTS.match(results_file.name)
    results = _load_json(results_file)
    if not isinstance(results, dict) or not isinstance(results.get("configs"), dict):
        raise RunError(f"{results_file} is not an lm_eval results file (no 'configs'); give the run as lm_eval wrote it")
    time = match.group("time") if match else ""
    folder = results_file.parent
    model = _model_name(results, folder)
    n_samples = results.get("n-samples") if isinstance(results.get("n-samples"), dict) else {}
    run = Run(name=model, path=str(results_file), outcomes=None, files=[results_file], harness="lm-eval",
              harness_version=str(results["lm_eval_version"]) if results.get("lm_eval_version") else None)
    frames, ours = [], 0
    for task, task_config in sorted(results["configs"].items()):
        if not isinstance(task_config, dict):
            raise RunError(f"{results_file}: the config of task {task} is not an object; give the run as lm_eval "
                           "wrote it")
        found = _task_release(task, task_config, releases)
        if found is None:
            run.notes.append(f"{task}: not a task of the release(s); left out")
            continue
        release, config = found
        split = str(task_config.get("test_split") or release.configs.get(config, {}).get("evaluated") or "test")
        unchecked = _check_version(release, task, config, split, task_config, results_file)
        if unchecked:
            run.notes.append(unchecked)
        ours += 1
        samples_file = folder / f"samples_{task}_{time}.jsonl"
        if not samples_file.is_file():
            raise RunError(f"{results_file}: task {task} has no samples file ({samples_file.name}); run lm_eval with "
                           "--log_samples so each sample can be joined to its row")
        metrics = [m.get("metric") for m in task_config.get("metric_list") or [] if isinstance(m, dict)]
        frames.append(_harness_samples(samples_file, release, config, split, metrics, run))
        run.files.append(samples_file)
        counts = n_samples.get(task) if isinstance(n_samples.get(task), dict) else {}
        run.complete[(release.name, config, split)] = (whole_number(counts.get("effective")),
                                                       whole_number(counts.get("original")))
    if not ours:
        return None
    run.outcomes = pd.concat(frames, ignore_index=True) if frames else _empty()
    return run


def _model_name(results: dict, folder: Path) -> str:
    """The model a results file records (a local path as its last part), else its folder's name."""
    config = results.get("config") if isinstance(results.get("config"), dict) else {}
    args = config.get("model_args") if isinstance(config.get("model_args"), dict) else {}
    recorded = str(results.get("model_name") or args.get("pretrained") or config.get("model") or folder.name)
    return Path(recorded).name if ("/" in recorded and Path(recorded).exists()) or recorded.startswith(
        (".", "/", "~")) else recorded


def _scalar(value):
    """A logged metric value: a one-element list (as the harness logs some) unwrapped; anything else as it is (the
    shared check, :func:`~split_builders.evaluation.outcomes.check_outcomes`, refuses what is not a number)."""
    return value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value


def _harness_samples(path: Path, release: ReleaseInfo, config: str, split: str, metrics: list, run: Run):
    """One task's logged samples as outcomes of its declared metric (and ``acc`` beside ``mcc``)."""
    import pandas as pd

    primary = release.metric or (metrics[0] if metrics else "acc")
    wanted = [m for m in dict.fromkeys([primary, *(["acc"] if primary == "mcc" else [])]) if m in metrics]
    if not wanted:
        raise RunError(f"{path}: the task scores {', '.join(map(str, metrics)) or 'nothing'}, not the release's "
                       f"declared metric {primary}; run the release's own tasks")
    curriculum = bool(release.report_tables and "curriculum" in release.report_tables)
    rows, filters = [], set()
    for number, sample in json_lines(path):
        filters.add(sample.get("filter"))
        if len(filters) > 1 and sample.get("filter") != next(iter(filters)):
            continue  # one filter: the first the task defines (the release's tasks define one)
        doc = sample.get("doc")
        if not isinstance(doc, dict) or "source_id" not in doc:
            raise RunError(f"{path}: line {number}'s document has no source_id; export the release's tasks again "
                           "(resplit export lm-eval) so each document keeps its row")
        example = doc.get("example", -1)
        base = {"source_id": doc["source_id"], "example": (0 if example is None else example)
                if release.kind == "multiple_choice" else -1, "functionality": doc.get("functionality"),
                "capability": doc.get("capability"), "test_type": doc.get("test_type"), "file": str(path),
                "place": f"line {number}"}
        for metric in wanted:
            value, gold, pred = _scalar(sample.get(metric)), np.nan, np.nan
            if metric == "mcc":
                pair = value if isinstance(value, (list, tuple)) and len(value) == 2 else (None, None)
                gold, pred, value = pair[0], pair[1], np.nan
            rows.append({**base, "metric": metric, "value": value, "gold": gold, "pred": pred})
        if curriculum:
            _check_choice(sample, path, number)
            run.samples.append((release.name, config, split, sample))
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise RunError(f"{path} holds no samples; run the task again")
    frame.insert(0, "split", split)
    frame.insert(0, "config", config)
    frame.insert(0, "release", release.name)
    frame.insert(0, "model", run.name)
    return check_outcomes(frame, release, config, split, split_source="the task's test_split",
                          classes=len(release.label_names) if release.label_names else None)


def _parsed(value):
    """A number the harness logged as text (``"-1.5"``) as a float; anything else as it is."""
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _check_choice(sample: dict, path: Path, number: int) -> None:
    """A classification sample's gold class (``target``) and choice scores (``filtered_resps``), which
    CURRICULUM's table reads: a class id and numbers, or one line naming the line."""
    target = whole_number(sample.get("target"))
    if target is None or target < 0:
        raise RunError(f"{path}: line {number}: target {sample.get('target')!r} is not a class id; give the samples "
                       "as the harness wrote them")
    scores = sample.get("filtered_resps") or []
    values = [r[0] if isinstance(r, (list, tuple)) and r else r for r in scores] if isinstance(scores, list) else [None]
    if any(finite_number(_parsed(v)) is None or isinstance(v, bool) for v in values):
        raise RunError(f"{path}: line {number}: filtered_resps {scores!r} are not the choices' scores; give the "
                       "samples as the harness wrote them")


def test_case_hits(outcomes):
    """One row per CheckList test case (model, release, config, split, source_id), its ``value`` 1 when every one
    of its scored examples passes (as CheckList scores a test case), with its functionality."""
    return (outcomes.sort_values(["source_id", "example"], kind="stable")
            .groupby(["model", "release", "config", "split", "source_id"], sort=True)
            .agg(value=("value", "min"), functionality=("functionality", "first")).reset_index())


def _empty():
    import pandas as pd

    return pd.DataFrame(columns=list(OUTCOME_FRAME))


# -- predictions tables -----------------------------------------------------------------------


def _read_table(path: Path):
    import pandas as pd

    name = path.name.lower()
    try:
        if name.endswith(".parquet"):
            return pd.read_parquet(path)
        if name.endswith((".jsonl", ".jsonl.gz")):
            return pd.read_json(path, lines=True, dtype=False)
        if name.endswith(".json"):
            return pd.read_json(path, dtype=False)
        return pd.read_csv(path, sep="\t" if ".tsv" in name else ",", dtype={"prediction": str})
    except Exception as error:  # noqa: BLE001 (pandas and Arrow raise many kinds; one line names the file)
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunError(f"{path} is not a readable table ({detail}); give a CSV, TSV, JSON lines or Parquet file") from None


def _table_runs(path: Path, releases: list, *, name: str | None) -> list[Run]:
    import pandas as pd

    table = _read_table(path)
    columns = set(table.columns)
    required = [c for c in ("config", "source_id") if c not in columns]
    if required:
        raise RunError(f"{path} has no column {', '.join(required)}; a predictions table needs model, config, split, "
                       "source_id and one of correct, score or prediction")
    given = [c for c in OUTCOME_COLUMNS if c in columns]
    if len(given) != 1:
        raise RunError(f"{path} has {'none' if not given else 'more than one'} of the columns correct, score and "
                       "prediction; give exactly one")
    if table.empty:
        raise RunError(f"{path} has no rows")
    table = table.reset_index(drop=True)
    lines = path.name.lower().endswith(TABLE_SUFFIXES[:3] + TABLE_SUFFIXES[5:])  # text with one row a line
    table["file"] = str(path)
    table["place"] = [f"line {i + (1 if '.jsonl' in path.name.lower() else 2)}" if lines else f"row {i + 1}"
                      for i in range(len(table))]
    if "model" not in columns:
        if name is None:
            raise RunError(f"{path} has no model column; add one or name the run ({path.name}=NAME)")
        table["model"] = name
    elif name is not None and table["model"].nunique() > 1:
        raise RunError(f"{path} holds {table['model'].nunique()} models; name them in its model column, not with =NAME")
    elif name is not None:
        table["model"] = name
    empty = (table["model"].isna() | (table["model"].astype(str).str.strip() == "")).to_numpy()
    if empty.any():
        raise RunError(f"{path}: {table['place'].iloc[int(empty.argmax())]}: the model cell is empty; name the model "
                       f"of every row (or leave the column out and name the run: {path.name}=NAME)")
    whole_column(table, "source_id")
    by_release = {r.name: r for r in releases}
    runs = {}
    for (model, release_name, config), part in table.groupby(
            ["model", table["release"] if "release" in columns else pd.Series(releases[0].name, index=table.index),
             "config"], sort=True, dropna=False):
        release = by_release.get(str(release_name))
        if release is None:
            raise RunError(f"{path}: release {release_name!r} is not one of the report's ({', '.join(by_release)})")
        config = str(config)
        if config not in release.configs:
            raise RunError(f"{path}: config {config!r} is not in the release {release.folder} (its configs: "
                           f"{', '.join(release.configs)}); give the release the predictions were made on")
        splits = part["split"] if "split" in columns else pd.Series(release.configs[config]["evaluated"],
                                                                     index=part.index)
        for split, rows in part.groupby(splits.fillna(release.configs[config]["evaluated"]), sort=True):
            split = str(split)
            run = runs.setdefault(str(model), Run(name=str(model), path=str(path), outcomes=[], named=name is not None,
                                                  files=[path]))
            frame = check_outcomes(_table_outcomes(rows, given[0], release, config, split, path), release, config,
                                   split, split_source="its split column" if "split" in columns else
                                   "no split column is given, so the config's evaluation split")
            run.outcomes.append(frame)
            n = frame.loc[frame["metric"] == frame["metric"].iloc[0], "source_id"].nunique()
            run.complete[(release.name, config, split)] = (n, release.configs[config]["splits"].get(split))
    for run in runs.values():
        run.outcomes = pd.concat(run.outcomes, ignore_index=True)
        finish_run(run)
    return list(runs.values())


def _table_outcomes(rows, column: str, release: ReleaseInfo, config: str, split: str, path: Path):
    import pandas as pd

    metric = release.metric or "acc"
    out = pd.DataFrame({"model": rows["model"].astype(str).to_numpy(), "release": release.name, "config": config,
                        "split": split, "source_id": rows["source_id"].to_numpy(),
                        "example": (rows["example"].fillna(0).to_numpy() if "example" in rows
                                    else np.full(len(rows), -1 if release.kind != "multiple_choice" else 0)),
                        "file": str(path), "place": rows["place"].to_numpy()})
    for extra in ("functionality", "capability", "test_type"):
        if extra in rows:
            out[extra] = rows[extra].to_numpy()
        elif release.kind == "multiple_choice" and extra in _column_names(release, config, split):  # the case's own
            ids, values = release.column(config, split, extra)
            out[extra] = pd.Series(values, index=ids).reindex(out["source_id"].to_numpy()).to_numpy()
        else:
            out[extra] = None
    out["gold"], out["pred"] = np.nan, np.nan
    values = rows[column]
    if column == "correct":
        truth = values.map(_truth)
        if truth.isna().any():
            first = int(truth.isna().to_numpy().argmax())
            raise RunError(f"{path}: {rows['place'].iloc[first]}: correct {values.iloc[first]!r} is not 0/1 or "
                           "true/false; give 0/1 or true/false")
        out["value"], out["metric"] = truth.to_numpy(dtype=float), ("pass_rate" if release.kind == "multiple_choice"
                                                                    else "acc" if metric == "mcc" else metric)
        return out
    if column == "score":
        numbers = pd.to_numeric(values, errors="coerce")  # what is not a finite number: the shared check names it
        out["value"] = np.where(numbers.isna(), values.to_numpy(dtype=object), numbers.to_numpy(dtype=object))
        out["metric"] = "score"
        return out
    return _compare_predictions(out, values, release, config, split, path)


def _column_names(release: ReleaseInfo, config: str, split: str) -> list:
    import pyarrow.parquet as pq

    return pq.ParquetFile(release.released.path(config, split)).schema_arrow.names


def _truth(value):
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    text = str(value).strip().lower()
    return {"1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "true": 1.0, "false": 0.0}.get(text)


def _compare_predictions(out, values, release: ReleaseInfo, config: str, split: str, path: Path):
    """A ``prediction`` column compared with the release's label (by class name or id) or target (whitespace
    normalised, as the generation tasks compare programs)."""
    if release.kind == "multiple_choice":
        raise RunError(f"{path}: CheckList test cases are judged by their own expectations; give a correct column "
                       "(1 where the example passes), with example, not prediction")
    ids, gold = release.column(config, split, release.label or release.target) if (release.label or release.target) \
        else (None, None)
    if ids is None:
        raise RunError(f"{path}: the release's rows carry no label or target to compare predictions with; give a "
                       "correct or score column")
    lookup = dict(zip(ids.tolist(), gold))
    golds = [lookup.get(int(i)) for i in out["source_id"]]
    if release.kind == "generation":
        same = [" ".join(str(p).split()) == " ".join(str(g).split()) for p, g in zip(values, golds)]
        out["value"], out["metric"] = np.asarray(same, dtype=float), "exact_match"
        return out
    names = list(release.label_names or ())

    def code(value):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        text = str(value).strip()
        if text in names:
            return names.index(text)
        try:
            number = float(text)
        except ValueError:
            return None
        if not number.is_integer() or number < 0:  # 1.7 or -0.4 is no class (it was read as 1 and 0)
            return None
        return int(number) if not names or number < len(names) else None

    predicted = [code(v) for v in values]
    if any(p is None for p in predicted):
        first = next(i for i, p in enumerate(predicted) if p is None)
        span = f"0 to {len(names) - 1}" if names else "0 or more"
        raise RunError(f"{path}: {out['place'].iloc[first]}: prediction {values.iloc[first]!r} is not one of the "
                       f"labels ({', '.join(names)}) nor a class id ({span})")
    gold_codes = [code(g) for g in golds]
    out["gold"], out["pred"] = np.asarray(gold_codes, dtype=float), np.asarray(predicted, dtype=float)
    out["value"] = (out["gold"] == out["pred"]).astype(float)
    metric = release.metric or "acc"
    if metric == "mcc":
        acc = out.copy()
        acc["metric"] = "acc"
        out["metric"], out["value"] = "mcc", np.nan
        import pandas as pd

        return pd.concat([out, acc], ignore_index=True)
    out["metric"] = "acc"
    return out
