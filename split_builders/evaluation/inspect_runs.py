"""inspect-ai logs read back as per-row outcomes (:mod:`split_builders.evaluation.runs`).

A run is an inspect-ai log (``.eval`` or ``.json``) or a log folder (``--log-dir``) of the release's own tasks
(``inspect_tasks.py``, :mod:`split_builders.publishing.inspect_export`): each task records in its metadata the config,
split and the data files it read (sha256) or the Hub revision, and each sample keeps its row's ``source_id``
(and a CheckList example's index). The logs of one model make one run. A log of another version of the release,
a config it does not have or a ``source_id`` outside the split is refused in one line, as a harness run is; a run
with ``--limit`` or one that stopped early is reported ``complete: false``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from split_builders.evaluation.runs import Run, RunError, _check_ids, _empty, check_version, read_runs

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
    """The runs at ``path``: inspect-ai logs (a log, or a folder of logs and no lm_eval results), else what
    :func:`~split_builders.evaluation.runs.read_runs` reads."""
    where = Path(path).expanduser()
    if (where.is_file() and is_log(where)) or (where.is_dir() and not any(where.rglob("results_*.json"))
                                               and logs_in(where)):
        return inspect_runs(where, releases, name=name)
    return read_runs(path, releases, name=name)


def inspect_runs(where: Path, releases: list, *, name: str | None) -> list[Run]:
    """One run per model of the inspect-ai logs at ``where`` (a log or a folder of logs)."""
    import pandas as pd

    files = [where] if where.is_file() else logs_in(where)
    if not files:
        raise RunError(f"{where} holds no inspect-ai logs (*.eval): give the --log-dir of an inspect eval run")
    runs, notes = {}, []
    for path in files:
        log = _read(path)
        meta = (log.eval.metadata or {}).get("resplit") if isinstance(log.eval.metadata, dict) else None
        if not isinstance(meta, dict) or "config" not in meta:
            notes.append(f"{path.name}: task {log.eval.task} is not one of a release's inspect tasks; left out")
            continue
        release = _release(meta, releases)
        if release is None:
            notes.append(f"{path.name}: task {meta.get('task')} is not a task of the release(s); left out")
            continue
        config, split = str(meta["config"]), str(meta.get("split") or "test")
        check_version(release, meta.get("task"), config, split, files=meta.get("files"),
                      revision=meta.get("revision"), where=path)
        if log.status != "success" and not any(sample.scores for sample in log.samples or []):
            notes.append(f"{path.name}: the log's status is {log.status} and no sample was scored; left out")
            continue
        model = name or str(log.eval.model)
        run = runs.setdefault(model, Run(name=model, path=str(where), outcomes=[], named=name is not None))
        frame, samples, epochs = _outcomes(log, release, config, split, model, path)
        run.outcomes.append(frame)
        total = int(log.eval.dataset.samples or 0) or None
        run.complete[(release.name, config, split)] = (samples, total)
        if log.status != "success":
            run.notes.append(f"{path.name}: the log's status is {log.status}: {samples} sample(s) scored")
        if epochs > 1:
            run.notes.append(f"{path.name}: {epochs} epochs; each row's first epoch is reported")
    if not runs:
        names = ", ".join(r.name for r in releases)
        raise RunError(f"{where}: none of its inspect-ai logs is of the release's tasks ({names}); run the release's "
                       "tasks (inspect eval RELEASE/inspect_tasks.py@CONFIG)")
    if name is not None and len(runs) > 1:
        raise RunError(f"{where} holds logs of {len(runs)} models; name each log folder separately (FOLDER=NAME)")
    for run in runs.values():
        run.outcomes = pd.concat(run.outcomes, ignore_index=True) if run.outcomes else _empty()
        run.notes += notes
    return list(runs.values())


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


def _outcomes(log, release, config: str, split: str, model: str, path: Path):
    """``(frame, samples scored, epochs)``: one row per sample (first epoch) and metric."""
    import pandas as pd
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    primary = release.metric or "acc"
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
        base = {"source_id": int(meta["source_id"]),
                "example": int(meta.get("example", -1)) if release.kind == "multiple_choice" else -1,
                "functionality": meta.get("functionality"), "capability": meta.get("capability"),
                "test_type": meta.get("test_type")}
        value = float(to_float(score.value))
        if primary == "mcc":
            extra = score.metadata or {}
            gold, pred = extra.get("label", np.nan), extra.get("prediction", np.nan)
            rows.append({**base, "metric": "mcc", "value": np.nan, "gold": _number(gold), "pred": _number(pred)})
            rows.append({**base, "metric": "acc", "value": value, "gold": np.nan, "pred": np.nan})
        else:
            rows.append({**base, "metric": primary, "value": value, "gold": np.nan, "pred": np.nan})
    frame = pd.DataFrame(rows)
    if frame.empty:
        raise RunError(f"{path} holds no scored samples; run the task again")
    for column, value in (("split", split), ("config", config), ("release", release.name), ("model", model)):
        frame.insert(0, column, value)
    _check_ids(frame, release, config, split, str(path))
    return frame, int(frame["source_id"].astype(str).str.cat(frame["example"].astype(str), sep="/").nunique()), epochs


def _number(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")

