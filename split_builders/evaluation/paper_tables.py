"""The tables of a paper that ``resplit report`` adds to the shared ones (:mod:`split_builders.evaluation.report`):

- ``behavioural`` (CheckList releases, by their harness kind): pass rate per functionality and capability through
  the shipped ``pass_rate`` metric;
- ``curriculum`` (a method's ``report_tables``): CURRICULUM's zero-shot table (:mod:`curriculum_report`);
- ``g_scores`` (``report_tables``: ``g_score``): BELUGA's G-score per model and scenario through the shipped
  ``g_score`` metric: the harmonic mean of the model's i.i.d. score (its hits on the config named by ``iid``) and
  its suite score on each scenario's configs (the method's ``scenarios``: the mean over functionalities of the
  share of passed test cases).
"""

from __future__ import annotations

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.evaluation.runs import test_case_hits


def behavioural_table(outcomes, releases: dict, notes: list):
    """Pass rate per functionality and capability of CheckList releases, per model and config, through the
    shipped ``pass_rate`` metric: each test case's examples as 0/1 outcomes that must all pass."""
    import pandas as pd

    cases = outcomes[outcomes["release"].map(lambda r: releases[r].kind == "multiple_choice").astype(bool)]
    if cases.empty:
        return None
    if cases["functionality"].isna().all():
        notes.append("the behavioural runs' documents name no functionality (tasks exported before resplit kept "
                     "them): pass rates per functionality need the tasks exported again")
        return None
    from split_builders.metric_folders import load_metric

    metric = load_metric("pass_rate")
    rows = []
    for (model, release, config, split), cell in cases.groupby(["model", "release", "config", "split"], sort=True):
        cell = cell.sort_values(["source_id", "example"], kind="stable")
        ids = cell["source_id"].to_numpy()
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])  # the first example of each test case
        hits = [part.tolist() for part in np.split(cell["value"].to_numpy(dtype=np.int64), starts[1:])]
        first = {column: [str(v) if v is not None else "" for v in cell[column].to_numpy(dtype=object)[starts]]
                 for column in ("functionality", "capability", "test_type")}
        eq = {"fn": "eq"}
        result = metric.compute(
            predictions=hits, confidences=[[] for _ in hits], labels=[[1] * len(h) for h in hits],
            meta=[[[] for _ in h] for h in hits], functionality=first["functionality"],
            test_type=[t or "MFT" for t in first["test_type"]], capability=first["capability"],
            expectation=[eq] * len(hits), agg_fn=["all"] * len(hits))
        base = {"model": model, "release": release, "config": config, "split": split}
        for name, values in result["functionalities"].items():
            rows.append({**base, "level": "functionality", "name": name, "pass_rate": values["pass_rate"] / 100.0,
                         "passed": values["passed"], "failed": values["failed"]})
        for name, value in result["capabilities"].items():
            rows.append({**base, "level": "capability", "name": name, "pass_rate": value / 100.0, "passed": None,
                         "failed": None})
        rows.append({**base, "level": "suite", "name": "mean over functionalities",
                     "pass_rate": result["pass_rate"] / 100.0, "passed": result["passed"], "failed": result["failed"]})
    return pd.DataFrame(rows)


def curriculum_table(runs, releases: dict, notes: list):
    """CURRICULUM's zero-shot table (the phenomena's Matthews correlation, per category) from the runs'
    classification samples of releases that declare the CURRICULUM report."""
    import pandas as pd

    rows = []
    for run in runs:
        for release, config, split, sample in run.samples:
            scores = [float(r[0]) if isinstance(r, (list, tuple)) else float(r) for r in sample.get("filtered_resps")
                      or []]
            if not scores:
                continue
            rows.append({"model": run.name, "config": config, "split": split,
                         "prediction": int(np.argmax(scores)), "label": int(float(sample.get("target")))})
        if isinstance(run.outcomes, pd.DataFrame) and not len(run.samples):
            part = run.outcomes
            part = part[part["release"].map(lambda r: "curriculum" in releases[r].report_tables).astype(bool)
                        & part["gold"].notna()]
            part = part.drop_duplicates(["config", "split", "source_id"])
            rows += [{"model": run.name, "config": r.config, "split": r.split, "prediction": int(r.pred),
                      "label": int(r.gold)} for r in part.itertuples()]
    if not rows:
        return None
    from split_builders.evaluation.curriculum_report import curriculum_report

    result = curriculum_report(pd.DataFrame(rows))
    notes += [f"curriculum: {n}" for n in result.notes]
    table = []
    for row in result.zero_shot():
        for model, value in row["mcc"].items():
            table.append({"model": model, "phenomenon": row["phenomenon"], "category": row["category"], "n": row["n"],
                          "mcc": value, "accuracy": row["accuracy"].get(model)})
    for row in result.categories():
        for model, value in (row.get("mcc") or {}).items():
            table.append({"model": model, "phenomenon": "(mean)", "category": row["category"], "n": None,
                          "mcc": value, "accuracy": None})
    return pd.DataFrame(table) if table else None


def resolve_iid(iid: str | None, releases: list):
    """``(release, config)`` that ``--iid`` (``CONFIG`` or ``RELEASE/CONFIG``) names, None where it is not given;
    refused in one line (before any run is read) where no release has G-scores or none (or several) has the
    config."""
    if iid is None:
        return None
    if not any("g_score" in r.report_tables for r in releases):
        raise InvalidParameterError(f"--iid {iid}: no release of the report has G-scores (BELUGA's behavioural "
                                    "releases do); leave --iid out")
    release_name, _, config = iid.rpartition("/")
    found = [r for r in releases if config in r.configs and (not release_name or r.name == release_name)]
    if len(found) != 1:
        where = ", ".join(f"{r.name}: {', '.join(r.configs)}" for r in releases)
        raise InvalidParameterError(f"--iid {iid}: {'no' if not found else 'more than one'} release of the report has "
                                    f"that config ({where}); give RELEASE/CONFIG")
    if found[0].kind == "multiple_choice":
        raise InvalidParameterError(f"--iid {iid}: the i.i.d. score is a share of items right; give a config scored "
                                    "item by item (accuracy or exact match), not a CheckList config")
    return found[0], config


def g_score_table(outcomes, releases: dict, iid: str | None, notes: list):
    """BELUGA's G-score per model and scenario (``scenario`` ``mean``: the mean G over them), from the models'
    hits on the ``iid`` config (``CONFIG`` or ``RELEASE/CONFIG``) and their test cases in each scenario of the
    releases that declare the ``g_score`` table; None where no release declares it."""
    import pandas as pd

    from split_builders.registry import registry

    declaring = [r for r in releases.values() if "g_score" in r.report_tables]
    if not declaring:
        return None
    if iid is None:
        notes.append("G-scores (BELUGA) need each model's i.i.d. hits: give --iid CONFIG, the config of the i.i.d. "
                     "test set the models were also run on")
        return None
    source, config = resolve_iid(iid, list(releases.values()))
    evaluated = source.configs[config]["evaluated"]
    iid_rows = outcomes[(outcomes["release"] == source.name) & (outcomes["config"] == config)
                        & (outcomes["split"] == evaluated)]
    if iid_rows["metric"].isin(["mcc"]).all() and len(iid_rows):
        raise InvalidParameterError(f"--iid {iid}: the i.i.d. score is a share of items right; give a config scored "
                                    "item by item (accuracy or exact match)")
    from split_builders.metric_folders import load_metric

    metric = load_metric("g_score")
    rows = []
    for release in declaring:
        method = registry().get(release.method)
        cases = outcomes[outcomes["release"] == release.name]
        if cases.empty:
            continue
        cases = test_case_hits(cases)
        cases["scenario"] = [method.scenario(c) if method is not None else None for c in cases["config"]]
        for model, part in cases.groupby("model", sort=True):
            hits = iid_rows[(iid_rows["model"] == model) & iid_rows["metric"].isin(["acc", "exact_match"])]
            if hits.empty:
                notes.append(f"{model}: no run on {source.name}/{config} ({evaluated}), so no G-score")
                continue
            iid_hits = hits.drop_duplicates("source_id")["value"].astype(float).tolist()
            suite = {}
            for scenario, cells in part.dropna(subset=["scenario"]).groupby("scenario", sort=False):
                suite[scenario] = {str(name): cell["value"].astype(float).tolist()
                                   for name, cell in cells.groupby("functionality", sort=True)}
            if not suite:
                continue
            result = metric.compute(iid_hits=iid_hits, suite_hits=suite)
            order = [s for s in method.scenarios if s in suite]
            for scenario in order:
                rows.append({"model": model, "release": release.name, "scenario": scenario,
                             "configs": int(part.loc[part["scenario"] == scenario, "config"].nunique()),
                             "iid_score": result["iid_score"], "suite_score": result["suite_score"][scenario],
                             "g_score": result["g_score"][scenario]})
            rows.append({"model": model, "release": release.name, "scenario": "mean", "configs": None,
                         "iid_score": result["iid_score"], "suite_score": None, "g_score": result["g_score_mean"]})
    return pd.DataFrame(rows) if rows else None
