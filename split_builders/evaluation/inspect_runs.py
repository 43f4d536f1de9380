"""inspect-ai logs read back as per-row outcomes (:mod:`split_builders.evaluation.runs`).

A run is an inspect-ai log (``.eval`` or ``.json``) or a log folder (``--log-dir``) of the release's own tasks
(``inspect_tasks.py``, :mod:`split_builders.publishing.inspect_export`): each task records in its metadata the config,
split and the data files it read (sha256) or the Hub revision, and each sample keeps its row's ``source_id``
(and a CheckList example's index). The logs of one model make one run. A log of another version of the release,
a config it does not have or a ``source_id`` outside the split is refused in one line, as a harness run is; a run
with ``--limit`` or one that stopped early is reported ``complete: false``. A log of ``inspect eval hf/ORG/NAME@REV``
(the release's ``eval.yaml`` run from the Hub) records none of that metadata: :mod:`.hub_logs` finds its release,
config and split from its task name and the release's ``eval.yaml``, and checks its revision.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from split_builders.evaluation.hub_logs import hub_log
from split_builders.evaluation.outcomes import RunError, check_outcomes, combine, finish_run
from split_builders.evaluation.runs import Run, _empty, _harness_runs, check_version, name_runs, read_runs

LOG_SUFFIXES = (".eval", ".json")


def is_log(path: Path) -> bool:
    """Whether ``path`` is an inspect-ai log: a ``.eval`` file, or a ``.json`` log (its ``eval`` and ``version``)."""
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json" or path.name.startswith("results_"):
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return '"eval"' in head and '"version"' in head and head.lstrip().startswith("{")


def logs_in(folder: Path) -> list[Path]:
    """The inspect-ai logs in a folder (its log dir), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in LOG_SUFFIXES and is_log(p))


def read_any_runs(path: str, releases: list, *, name: str | None = None) -> list[Run]:
    """The runs at ``path``: inspect-ai logs (a log, or a folder of logs), what
    :func:`~split_builders.evaluation.runs.read_runs` reads, or both where a folder holds lm_eval results and
    inspect-ai logs (each of the release's runs read; a folder where neither is of the release is refused)."""
    where = Path(path).expanduser()
    if where.is_file() and is_log(where):
        return inspect_runs(where, releases, name=name)
    if where.is_dir() and logs_in(where):
        if not any(where.rglob("results_*.json")):
            return inspect_runs(where, releases, name=name)
        runs = _harness_runs(where, releases, name=None, required=False) + inspect_runs(where, releases, name=None,
                                                                                         required=False)
        if not runs:
            names = ", ".join(r.name for r in releases)
            raise RunError(f"{where}: none of its lm_eval tasks or inspect-ai logs is of the release ({names}); run "
                           "the release's tasks")
        return name_runs(runs, where, name, "lm_eval and inspect-ai runs")
    return read_runs(path, releases, name=name)


def inspect_runs(where: Path, releases: list, *, name: str | None, required: bool = True) -> list[Run]:
    """One run per model of the inspect-ai logs at ``where`` (a log or a folder of logs)."""
    import pandas as pd

    files = [where] if where.is_file() else logs_in(where)
    if not files:
        raise RunError(f"{where} holds no inspect-ai logs (*.eval): give the --log-dir of an inspect eval run")
    pieces, notes, unscored = {}, [], []
    for path in files:
        log = _read(path)
        meta = (log.eval.metadata or {}).get("resplit") if isinstance(log.eval.metadata, dict) else None
        hub_notes = []  # a run of eval.yaml (inspect eval hf/ORG/NAME@REV): its task name says where it read
        if (not isinstance(meta, dict) or "config" not in meta) and (hub := hub_log(log, releases)) is not None:
            release, meta, hub_notes = hub
        elif not isinstance(meta, dict) or "config" not in meta:
            notes.append(f"{path.name}: task {log.eval.task} is not one of a release's inspect tasks; left out")
            continue
        else:
            release = _release(meta, releases)
        if release is None:
            notes.append(f"{path.name}: task {meta.get('task')} is not a task of the release(s); left out")
            continue
        config, split = str(meta["config"]), str(meta.get("split") or "test")
        unchecked = check_version(release, meta.get("task"), config, split, files=meta.get("files"),
                                  revision=meta.get("revision"), where=path)
        if log.status != "success" and not any(sample.scores for sample in log.samples or []):
            unscored.append(f"{path.name}: its status is {log.status} and no sample was scored")
            continue
        model = str(log.eval.model)
        run = Run(name=model, path=str(path), outcomes=None, files=[path], harness="inspect-ai",
                  harness_version=(log.eval.packages or {}).get("inspect_ai"))
        run.notes += [f"{path.name}: {note}" for note in [*hub_notes, *([unchecked] if unchecked else [])]]
        frame, samples, epochs = _outcomes(log, release, config, split, model, path,
                                           hub=str(log.eval.task or "").startswith("hf/"))
        run.outcomes = frame
        total = int(log.eval.dataset.samples or 0) or None
        run.complete[(release.name, config, split)] = (samples, total)
        if log.status != "success":
            run.notes.append(f"{path.name}: the log's status is {log.status}: {samples} sample(s) scored")
        if epochs > 1:
            run.notes.append(f"{path.name}: {epochs} epochs; each row's first epoch is reported")
        pieces.setdefault(model, []).append(run)
    if not pieces and not required:
        return []
    if not pieces and unscored:  # the release's logs are there, but scored nothing: say so, not "not its tasks"
        raise RunError(f"{where}: no log of the release's tasks has a scored sample ({'; '.join(unscored[:3])}); "
                       "run the tasks again (until they finish)")
    if not pieces:
        names = ", ".join(r.name for r in releases)
        raise RunError(f"{where}: none of its inspect-ai logs is of the release's tasks ({names}); run the release's "
                       "tasks (inspect eval RELEASE/inspect_tasks.py@CONFIG)")
    runs = []
    for group in pieces.values():
        run = combine(group, where)
        run.path = str(where)
        run.outcomes = run.outcomes if len(run.outcomes) else _empty()
        finish_run(run)
        run.notes += notes + [f"{note}; left out" for note in unscored]
        runs.append(run)
    return name_runs(runs, where, name, "inspect-ai logs")


def _read(path: Path):
    from inspect_ai.log import read_eval_log

    try:
        return read_eval_log(str(path))
    except Exception as error:  # a damaged or foreign file: inspect-ai's own reader says why
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RunError(f"{path} is not a readable inspect-ai log ({reason[:200]}); give the log as inspect "
                       "eval wrote it") from None


def _release(meta: dict, releases: list):
    task = str(meta.get("task") or "")
    for release in releases:
        if task == f"{release.name}_{meta['config']}" or (len(releases) == 1 and not task):
            return release
    return None


def _outcomes(log, release, config: str, split: str, model: str, path: Path, *, hub: bool = False):
    """``(frame, samples scored, epochs)``: one row per sample (first epoch) and metric (``hub``: an ``eval.yaml``
    run, whose pattern scorer gives each row right or wrong, so its accuracy, not a Matthews correlation)."""
    import pandas as pd
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    primary = release.metric or "acc"
    primary = "acc" if hub and primary == "mcc" else primary
    classes = len(release.label_names) if release.label_names else None
    rows, epochs = [], 1
    for sample in log.samples or []:
        epochs = max(epochs, int(sample.epoch or 1))
        if (sample.epoch or 1) != 1 or not sample.scores:
            continue
        meta = sample.metadata or {}
        if "source_id" not in meta:
            raise RunError(f"{path}: sample {sample.id} keeps no source_id; export the release's inspect tasks again "
                           "(resplit export inspect) so each sample keeps its row")
        score = next(iter(sample.scores.values()))
        base = {"source_id": meta["source_id"],
                "example": meta.get("example", -1) if release.kind == "multiple_choice" else -1,
                "functionality": meta.get("functionality"), "capability": meta.get("capability"),
                "test_type": meta.get("test_type"), "file": str(path), "place": f"sample {sample.id}"}
        try:
            value = to_float(score.value)
        except (TypeError, ValueError):  # the shared check names what is not a number
            value = score.value
        if primary == "mcc":
            extra = score.metadata or {}
            gold, pred = extra.get("label"), extra.get("prediction")
            if pred == -1 and classes:  # no choice made (the task's scorer says -1): a class of its own, as
                pred = classes          # scikit-learn's MCC counts it
            rows.append({**base, "metric": "mcc", "value": np.nan, "gold": gold, "pred": pred})
            rows.append({**base, "metric": "acc", "value": value, "gold": np.nan, "pred": np.nan})
        else:
            rows.append({**base, "metric": primary, "value": value, "gold": np.nan, "pred": np.nan})
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise RunError(f"{path}: its status is {log.status} and none of its {len(log.samples or [])} sample(s) is "
                       "scored; run the task again (until it finishes)")
    for column, value in (("split", split), ("config", config), ("release", release.name), ("model", model)):
        frame.insert(0, column, value)
    check_outcomes(frame, release, config, split, split_source="the task's metadata",
                   classes=classes + 1 if classes and primary == "mcc" else classes)
    return frame, int(frame["source_id"].astype(str).str.cat(frame["example"].astype(str), sep="/").nunique()), epochs
