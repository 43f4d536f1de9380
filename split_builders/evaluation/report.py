"""``resplit report``: evaluation runs on a release turned into the papers' tables, with intervals.

A split exists to measure a gap. :func:`report` reads runs (:mod:`split_builders.evaluation.runs`: lm-evaluation-
harness ``--log_samples`` folders or predictions tables), joins every sample to its release row by ``source_id``
and gives, as pandas DataFrames:

1. ``results``: per model x config x evaluation split, the config's declared metric (accuracy, exact match,
   Matthews correlation, CheckList pass rate: the share of test cases all of whose examples pass), ``n``, whether
   the run covered the whole split (``complete``) and its interval: Wilson's score interval for 0/1 outcomes
   (right at 0 and n, where a bootstrap is a point), a percentile bootstrap over rows otherwise
   (:func:`scipy.stats.bootstrap`, seeded per cell; a bootstrap whose resamples are all alike is said in a note);
2. ``gaps``: per model x config, the difference to the method's declared baseline config (``random`` for
   likelihood splits; ``baseline=`` overrides) on the same split, with its interval (0/1 outcomes: Newcombe's
   hybrid score interval, or his paired one where the two hold the same rows; otherwise a bootstrap, unpaired or
   paired), and the relative error increase ``(error_config - error_baseline) / error_baseline`` (Godbole & Jia
   2023) with its interval (MOVER-R of the two error rates; a bootstrap on the same rows), for metrics where
   ``1 - value`` is an error rate (``benchmarks/interval_coverage.py`` chose the methods);
3. ``comparisons``: every pair of models on each config and split, on the rows both were evaluated on:
   McNemar's exact test for 0/1 outcomes (a two-sided binomial test on the discordant rows), a paired bootstrap
   otherwise (a p-value no resample can resolve, none across 0, is its step ``2/B`` with ``p_value_bound``
   true, printed ``<0.0002``); ``m`` is the number of comparisons and ``p_bonferroni`` the p-value multiplied by it;
4. ``concurrence``: with three or more models, Kendall's tau-b between the model orderings of every pair of
   configs (and of configs of different releases), through the project's ``concurrence`` metric (Sun, Williams
   & Hupkes 2023), with a bootstrap interval that redraws each config's test rows (and the models, from ten on);
5. ``behavioural`` (CheckList releases): pass rate per functionality and capability through the shipped
   ``pass_rate`` metric (a test case passes when all its scored examples pass, as CheckList defines it), and
   ``curriculum``: CURRICULUM's zero-shot table from the same runs (:mod:`curriculum_report`).

:meth:`Report.write` writes ``report.md``, ``report.json``, one CSV per table, ``report.tex`` and the figures
(a forest plot of the gaps, the concurrence heatmap) into a folder, each file staged and renamed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.evaluation.statistics import (_arrays, _interval, _point, _seed, _statistic, _two_sample,
                                                  bootstrap_p, concurrence_intervals, degenerate_note, fmt_p,
                                                  is_binary, mcc, newcombe, newcombe_paired,
                                                  relative_error_increase_interval, resampled_scores, wilson)

N_RESAMPLES = 10_000
CONFIDENCE = 0.95
CONCURRENCE_RESAMPLES = 1000  # the concurrence metric resamples models (a few), one Kendall tau per draw
BINARY = ("acc", "exact_match", "pass_rate")  # 0/1 per row: McNemar, and 1 - value is an error rate
TABLES = ("results", "gaps", "comparisons", "concurrence", "behavioural", "curriculum", "g_scores")


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


@dataclass
class Report:
    """The tables of :func:`report` (pandas DataFrames) and the notes read on the way."""

    results: object
    gaps: object
    comparisons: object
    concurrence: object
    behavioural: object = None
    curriculum: object = None
    g_scores: object = None
    notes: list = field(default_factory=list)
    releases: list = field(default_factory=list)
    models: list = field(default_factory=list)
    confidence: float = CONFIDENCE
    provenance: dict = field(default_factory=dict)  # what it was made from (:mod:`.provenance`)

    def tables(self) -> dict:
        """``{name: DataFrame}`` of the tables that hold rows."""
        out = {}
        for name in TABLES:
            frame = getattr(self, name)
            if frame is not None and len(frame):
                out[name] = frame
        return out

    def as_dict(self) -> dict:
        """The JSON of ``--json``: ``results``, ``gaps``, ``comparisons``, ``concurrence`` (lists of records, a
        ``ci`` as ``[low, high]``), with ``behavioural`` and ``curriculum`` where present, ``notes`` and
        ``provenance`` (:func:`~split_builders.evaluation.provenance.report_provenance`)."""
        out = {}
        for name in TABLES:
            frame = getattr(self, name)
            if frame is None:
                if name in ("results", "gaps", "comparisons", "concurrence"):
                    out[name] = []
                continue
            out[name] = [_record(row) for row in frame.to_dict(orient="records")]
        out["notes"] = list(self.notes)
        out["provenance"] = self.provenance
        return out

    def lines(self) -> list[str]:
        """The report for the terminal."""
        level = _level(self.confidence)
        lines = [f"resplit report: {len(self.models)} model(s) on {', '.join(self._release_names())}", ""]
        for name, frame in self.tables().items():
            lines += [f"{_TITLES[name]} ({level} intervals)" if name not in ("curriculum", "g_scores") else _TITLES[name],
                      *_text_table(_display(name, frame)).splitlines(), ""]
        lines += [f"note: {note}" for note in self.notes]
        return lines

    def _release_names(self) -> list:
        """The releases as given (folder or Hub id), else their group names."""
        return [r["release"] for r in self.provenance.get("releases", [])] or list(self.releases)

    def markdown(self) -> str:
        from split_builders.evaluation.provenance import provenance_lines

        level = _level(self.confidence)
        parts = [f"# resplit report", "", *provenance_lines(self.provenance),
                 f"{len(self.models)} model(s) ({', '.join(self.models)}) on "
                 f"{', '.join(self._release_names())}; intervals are {level}: Wilson score intervals of accuracies "
                 f"(0/1 outcomes), Newcombe's of their gaps, MOVER-R's of relative error increases, and otherwise "
                 f"{level} percentile bootstrap intervals (concurrence: the test rows redrawn).", ""]
        for name, frame in self.tables().items():
            parts += [f"## {_TITLES[name]}", "", _text_table(_display(name, frame), markdown=True), ""]
        if self.notes:
            parts += ["## Notes", "", *[f"- {note}" for note in self.notes], ""]
        return "\n".join(parts)

    def latex(self) -> str:
        """Every table of the report as LaTeX (a ``table`` with its caption and label ``tab:resplit-NAME`` each),
        in the order of ``report.md``."""
        parts = [f"% resplit report: {len(self.models)} model(s) on {', '.join(self._release_names())}"]
        for name, frame in self.tables().items():
            parts.append(_display(name, frame).to_latex(index=False, escape=True, caption=_TITLES[name],
                                                        label=f"tab:resplit-{name}"))
        return "\n".join(parts)

    def write(self, out, *, overwrite: bool = False) -> list[Path]:
        """Write the report into the folder ``out`` as one set of files
        (:func:`~split_builders.release.file_sets.write_file_set`: written in full elsewhere, then moved; an earlier
        report's files replaced only with ``overwrite`` and only where unchanged since, its files this report does
        not write removed; a file, folder or link of the user's where one goes refused, nothing written)."""
        from split_builders.release.file_sets import write_file_set

        files = {"report.md": self.markdown(), "report.json": json.dumps(self.as_dict(), indent=2, sort_keys=True,
                                                                          allow_nan=False, default=str) + "\n",
                 "report.tex": self.latex()}
        for name, frame in self.tables().items():
            files[f"{name}.csv"] = _csv_ready(name, frame).to_csv(index=False)
        writes = {name: (lambda path, text=text: Path(path).write_text(text, encoding="utf-8"))
                  for name, text in files.items()}
        return write_file_set(out, {**writes, **self._figures()}, overwrite=overwrite)

    def _figures(self) -> dict:
        from split_builders.evaluation.report_figures import forest_plot, heatmap

        figures = {}
        if self.gaps is not None and len(self.gaps):
            figures["gaps.png"] = lambda path: forest_plot(self.gaps, path)
        if self.concurrence is not None and len(self.concurrence):
            figures["concurrence.png"] = lambda path: heatmap(self.concurrence, path)
        return figures

_TITLES = {"results": "Results per config", "gaps": "Gap to the baseline config",
           "comparisons": "Models compared (paired)", "concurrence": "Concurrence of model rankings",
           "behavioural": "Pass rate per functionality and capability", "curriculum": "CURRICULUM zero-shot (MCC)",
           "g_scores": "BELUGA G-score per scenario"}


def _record(row: dict) -> dict:
    out = {}
    for key, value in row.items():
        if key.endswith("_ci_low") or key.endswith("_ci_high") or key in ("ci_low", "ci_high"):
            continue
        out[key] = _plain(value)
    for key in list(row):
        if key.endswith("_ci_low") or key == "ci_low":
            stem = key[: -len("_low")]
            out[stem] = [_plain(row[key]), _plain(row[stem + "_high"])]
    return out


def _plain(value):
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _fmt(value, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.{digits}f}"
    return str(value)


def _display(name: str, frame):
    """A table for reading: intervals as ``[low, high]``, numbers rounded."""
    import pandas as pd

    out = pd.DataFrame(index=frame.index)
    bounds = frame["p_value_bound"] if "p_value_bound" in frame.columns else [False] * len(frame)
    for column in frame.columns:
        if column.endswith("_high") or column == "p_value_bound":
            continue
        if column in ("p_value", "p_bonferroni"):
            out[column] = [fmt_p(v, bound) for v, bound in zip(frame[column], bounds)]
            continue
        if column.endswith("_low"):
            stem = column[: -len("_low")]
            out[stem.replace("_ci", " CI") if stem != "ci" else "CI"] = [
                f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in zip(frame[column], frame[stem + "_high"])]
            continue
        out[column] = [_fmt(v) for v in frame[column]]
    return out.reset_index(drop=True)


def _csv_ready(name: str, frame):
    """A table as its CSV holds it; ``results.csv`` also has the columns ``resplit concurrence`` reads
    (``benchmark``, ``seed``, ``score``: :func:`benchmark_names`, empty, the value), so it can be given as it is."""
    frame = frame.reset_index(drop=True)
    if name == "results" and len(frame):
        frame = frame.assign(benchmark=benchmark_names(frame), seed="", score=frame["value"])
    return frame


def benchmark_names(results):
    """Each results row's benchmark as the concurrence table names it: its config (``release/config`` where the
    report covers several releases), with ``(metric)`` for a metric beside the compared one (``acc`` beside
    ``mcc``) and ``@split`` where a config was evaluated on several splits, so every (model, benchmark) is one
    row, as ``resplit concurrence`` requires."""
    several = results["release"].nunique() > 1
    names = (results["release"] + "/" + results["config"]) if several else results["config"].astype(str)
    primary = _primary(results)
    splits = results.groupby(["release", "config"])["split"].nunique()
    return [name + ("" if primary[(r, c)] == m else f" ({m})") + (f"@{s}" if splits[(r, c)] > 1 else "")
            for name, r, c, m, s in zip(names, results["release"], results["config"], results["metric"],
                                        results["split"])]


def _text_table(frame, *, markdown: bool = False) -> str:
    """A table of text cells: columns padded for the terminal, or a Markdown table (``markdown``)."""
    widths = {c: max(len(str(c)), *(len(str(v)) for v in frame[c])) if len(frame) else len(str(c))
              for c in frame.columns}
    rows = [list(map(str, frame.columns)), *([str(v) for v in row] for row in frame.itertuples(index=False))]
    lines = [(" | " if markdown else "  ").join(v.ljust(widths[c]) for c, v in zip(frame.columns, row)) for row in rows]
    if not markdown:
        return "\n".join(lines)
    rule = "|" + "|".join("-" * (widths[c] + 2) for c in frame.columns) + "|"
    lines = [f"| {line} |" for line in lines]
    return "\n".join([lines[0], rule, *lines[1:]])


# ---------------------------------------------------------------------------------------------
# Building the tables
# ---------------------------------------------------------------------------------------------


def report(release, runs, *, baseline: str | None = None, n_resamples: int = N_RESAMPLES, seed: int = 0,
           confidence: float = CONFIDENCE, iid: str | None = None, work=None) -> Report:
    """The report of ``runs`` on ``release``.

    ``release``: a release folder, ``HUB_ID@REV``, or a list of them (runs may cover several releases: their
    configs are compared for concurrence). ``runs``: paths (``PATH`` or ``PATH=NAME``: an lm_eval output folder
    or a predictions table), ``(path, name)`` pairs, or pandas DataFrames in the predictions-table layout (named
    by their ``model`` column). ``baseline``: the config gaps are measured against (default: the method's
    declared ``baseline_config``). ``n_resamples``: bootstrap resamples (0: no intervals); ``seed``: of every
    bootstrap (each cell's own generator is derived from it and the cell's names). ``iid``: the config
    (``CONFIG`` or ``RELEASE/CONFIG``) of the i.i.d. test set whose hits give BELUGA's G-scores on a behavioural
    release (:func:`~split_builders.evaluation.paper_tables.g_score_table`).
    """
    import pandas as pd

    from split_builders.evaluation.inspect_runs import read_any_runs as read_runs
    from split_builders.evaluation.paper_tables import resolve_iid
    from split_builders.evaluation.runs import RunError, parse_run_argument, read_release

    n_resamples, confidence = check_intervals(n_resamples, confidence)
    targets = release if isinstance(release, (list, tuple)) else [release]
    if not targets:
        raise InvalidParameterError("give the release the runs were made on")
    if work is None:  # where a HUB_ID@REV is downloaded: a temporary folder for this call
        import tempfile

        with tempfile.TemporaryDirectory(prefix="resplit-report-") as temporary:
            return report(release, runs, baseline=baseline, n_resamples=n_resamples, seed=seed,
                          confidence=confidence, iid=iid, work=Path(temporary))
    releases = [read_release(t, work) for t in targets]
    names = [r.name for r in releases]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"two releases have the same harness group ({', '.join(names)}); give each once")
    for release in releases:  # what the options name is checked before any run is read
        if baseline is not None and baseline not in release.configs:
            raise InvalidParameterError(f"--baseline {baseline!r} is not a config of {release.folder} (its configs: "
                                        f"{', '.join(release.configs)})")
    resolve_iid(iid, releases)
    if isinstance(runs, (str, Path)) or hasattr(runs, "columns"):
        runs = [runs]
    if not runs:
        raise InvalidParameterError("give at least one run (an lm_eval --output_path folder or a predictions table)")
    read, given = [], {}  # given: each file read -> the argument it was read from
    for item in runs:
        if hasattr(item, "columns"):
            read += _frame_runs(item, releases)
            continue
        path, name = item if isinstance(item, tuple) else parse_run_argument(str(item))
        got = read_runs(path, releases, name=name)
        for file in dict.fromkeys(Path(f).resolve() for run in got for f in run.files):
            if file in given:
                raise RunError(f"{file} is given twice (in {given[file]} and again in {path}): a run counted twice is not another "
                               "model; give each run once")
            given[file] = path
        read += got
    _unique_names(read)
    outcomes = pd.concat([run.outcomes for run in read], ignore_index=True)
    notes = [f"{run.name}: {note}" for run in read for note in run.notes]
    complete = {(run.name, *key): value for run in read for key, value in run.complete.items()}
    by_name = {r.name: r for r in releases}
    units = _units(outcomes, by_name)
    results = _results(units, complete, n_resamples, seed, confidence, notes)
    gaps = _gaps(units, by_name, baseline, n_resamples, seed, confidence, notes)
    comparisons = _comparisons(units, n_resamples, seed, confidence)
    concurrence = _concurrence(results, units, min(n_resamples, max(CONCURRENCE_RESAMPLES, least_resamples(confidence))),
                               seed, confidence, notes)
    from split_builders.evaluation.paper_tables import behavioural_table, curriculum_table, g_score_table

    behavioural = behavioural_table(outcomes, by_name, notes)
    curriculum = curriculum_table(read, by_name, notes)
    g_scores = g_score_table(outcomes, by_name, iid, notes)
    models = list(dict.fromkeys(run.name for run in read))
    for row in results.itertuples():
        if not row.complete:
            notes.append(f"{row.model} on {row.config}/{row.split}: {row.n} of the split's rows were evaluated "
                         "(complete: false); its value is not the split's score")
    from split_builders.evaluation.provenance import report_provenance

    provenance = report_provenance(targets, releases, read, given, seed=seed, n_resamples=n_resamples,
                                   confidence=confidence)
    return Report(results, gaps, comparisons, concurrence, behavioural, curriculum, g_scores, notes=notes,
                  releases=names, models=models, confidence=confidence, provenance=provenance)


def least_resamples(confidence: float) -> int:
    """The fewest bootstrap resamples that put one beyond each end of a percentile interval at ``confidence``
    (``2 / (1 - confidence)``: 40 at 0.95); fewer give an "interval" of the resamples' extremes."""
    return math.ceil(round(2 / (1 - confidence), 6))


def check_intervals(n_resamples, confidence, *, names=("n_resamples", "confidence")) -> tuple[int, float]:
    """``(n_resamples, confidence)`` checked: a level in [0.5, 0.999] and 0 resamples (no intervals) or at least
    :func:`least_resamples`; ``names``: the options' names in the message (``--bootstrap-iters``)."""
    from split_builders.splits import check_number

    confidence = check_number(confidence, names[1], minimum=0.5, maximum=0.999)
    least, given = least_resamples(confidence), n_resamples
    try:
        n_resamples = check_number(n_resamples, names[0], integer=True, minimum=0)
    except InvalidParameterError:
        n_resamples = None
    if n_resamples is None or 0 < n_resamples < least:
        raise InvalidParameterError(f"{names[0]} must be 0 (no intervals) or at least {least} at {names[1]} "
                                    f"{confidence:g} (fewer leave no resample beyond each end of the interval), got "
                                    f"{given!r}")
    return n_resamples, confidence


def _level(confidence: float) -> str:
    """The interval level as the tables print it: ``95%``, ``99.9%``."""
    return f"{round(confidence * 100, 4):g}%"


def _frame_runs(frame, releases):
    import tempfile

    from split_builders.evaluation.runs import _table_runs

    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "your DataFrame.parquet"
        frame.to_parquet(path)
        runs = _table_runs(path, releases, name=None)
    for run in runs:
        run.path = "your DataFrame"
    return runs


def _unique_names(runs) -> None:
    """Runs of one name are one model where they cover different configs (a model's run on a release and on its
    i.i.d. test set); where two cover the same config and split, two runs the user named alike are refused and a
    name two runs record is made unique by the run's folder."""
    from split_builders.evaluation.runs import RunError

    def cells(run) -> set:
        return set(run.complete) or {tuple(k) for k in run.outcomes[["release", "config", "split"]].drop_duplicates()
                                     .itertuples(index=False)}

    covered = {}  # name -> (cells so far, the first run)

    def clashes(name, run) -> bool:
        return name in covered and bool(covered[name][0] & cells(run))

    for run in [r for r in runs if r.named]:
        if clashes(run.name, run):
            raise RunError(f"two runs are named {run.name!r} and cover the same config ({covered[run.name][1].path} and "
                           f"{run.path}); give each its own NAME")
        covered.setdefault(run.name, (set(), run))[0].update(cells(run))
    for run in [r for r in runs if not r.named]:
        if clashes(run.name, run):
            parent = Path(run.path).parent
            for candidate in (f"{run.name} ({parent.name})", f"{run.name} ({parent.parent.name}/{parent.name})"):
                if not clashes(candidate, run):
                    run.name = candidate
                    break
            else:
                raise RunError(f"two runs record the model {run.name!r} ({covered[run.name][1].path} and {run.path}); "
                               "name them apart (RUN=NAME)")
            run.outcomes["model"] = run.name
        covered.setdefault(run.name, (set(), run))[0].update(cells(run))


def _units(outcomes, releases: dict):
    """Outcomes per unit of evaluation: a row, or for CheckList test cases (harness kind ``multiple_choice``) a
    test case, which passes when every one of its scored examples passes (metric ``pass_rate``)."""
    import pandas as pd

    outcomes = outcomes.copy()
    behavioural = outcomes["release"].map(lambda r: releases[r].kind == "multiple_choice").astype(bool)
    plain = outcomes[~behavioural]
    cases = outcomes[behavioural]
    if len(cases):
        from split_builders.evaluation.runs import test_case_hits

        cases = test_case_hits(cases)
        cases["metric"], cases["gold"], cases["pred"] = "pass_rate", np.nan, np.nan
    frame = pd.concat([plain, cases], ignore_index=True)
    frame = frame.drop_duplicates(["model", "release", "config", "split", "metric", "source_id"], keep="last")
    return frame.sort_values(["model", "release", "config", "split", "metric", "source_id"], kind="stable")


def _results(units, complete: dict, n_resamples: int, seed: int, confidence: float, notes: list):
    """Per cell the metric, ``n`` and its interval: Wilson's score interval for 0/1 outcomes (right at 0 and n: 0 of
    40 is [0, 0.088], not a point), a percentile bootstrap otherwise (a point where every resample is alike is
    said in a note)."""
    import pandas as pd

    rows = []
    for (model, release, config, split, metric), cell in units.groupby(
            ["model", "release", "config", "split", "metric"], sort=True):
        arrays = _arrays(cell, metric)
        if n_resamples and metric in BINARY and is_binary(arrays[0]):
            low, high = wilson(int(arrays[0].sum()), len(arrays[0]), confidence)
        else:
            (low, high), distribution = _interval(arrays, _statistic(metric), paired=True, n_resamples=n_resamples,
                                                  seed=_seed(seed, model, release, config, split, metric),
                                                  confidence=confidence)
            degenerate_note(distribution, f"{model} on {config}/{split}: its {metric}", notes)
        effective, total = complete.get((model, release, config, split), (None, None))
        n = int(cell["source_id"].nunique())
        whole = bool(total is not None and effective is not None and int(effective) == int(total))
        rows.append({"model": model, "release": release, "config": config, "split": split, "metric": metric,
                     "value": _point(arrays, metric), "n": n, "complete": whole, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=["model", "release", "config", "split", "metric", "value", "n", "complete",
                                       "ci_low", "ci_high"])


def _primary(units) -> dict:
    """The metric each (release, config) is compared on: the declared one (``mcc``, ``exact_match``,
    ``pass_rate``, ...), never ``acc`` beside ``mcc``."""
    out = {}
    for (release, config), metrics in units.groupby(["release", "config"])["metric"].unique().items():
        metrics = list(metrics)
        out[(release, config)] = next((m for m in metrics if m != "acc"), metrics[0])
    return out


def _gaps(units, releases: dict, baseline: str | None, n_resamples: int, seed: int, confidence: float, notes: list):
    import pandas as pd

    primary = _primary(units)
    rows = []
    for (model, release, config, split), cell in units.groupby(["model", "release", "config", "split"], sort=True):
        base = baseline or releases[release].baseline
        if base is None or config == base:
            continue
        metric = primary[(release, config)]
        cell = cell[cell["metric"] == metric]
        other = units[(units["model"] == model) & (units["release"] == release) & (units["config"] == base)
                      & (units["split"] == split) & (units["metric"] == metric)]
        if other.empty:
            note = f"{model}: no {base}/{split} results, so no gap for {config} (run the baseline config too)"
            if note not in notes:
                notes.append(note)
            continue
        a, b = _arrays(cell, metric), _arrays(other, metric)
        same_rows = np.array_equal(cell["source_id"].to_numpy(), other["source_id"].to_numpy())
        if metric == "mcc":
            def difference(g1, p1, g2, p2, axis=-1):
                return mcc(g1, p1, axis=axis) - mcc(g2, p2, axis=axis)
            samples = (*a, *b)
        else:
            def difference(x, y, axis=-1):
                return np.mean(x, axis=axis) - np.mean(y, axis=axis)
            samples = (*a, *b)
        value_a, value_b = _point(a, metric), _point(b, metric)
        rei = rei_low = rei_high = math.nan
        cell_seed = _seed(seed, "gap", model, release, config, base, split, metric)
        binary = metric in BINARY and is_binary(a[0]) and is_binary(b[0])
        if binary and n_resamples and not same_rows:  # score intervals: they hold at 0 and n, where resamples do not
            error_b = 1.0 - value_b
            rei = ((1.0 - value_a) - error_b) / error_b if error_b > 0 else math.nan
            low, high = newcombe(int(a[0].sum()), len(a[0]), int(b[0].sum()), len(b[0]), confidence)
            rei_low, rei_high = relative_error_increase_interval(a[0], b[0], confidence)
        elif metric in BINARY:  # the difference and the relative error increase from the same resamples
            error_b = 1.0 - value_b
            rei = ((1.0 - value_a) - error_b) / error_b if error_b > 0 else math.nan

            def both(x, y, axis=-1):
                mean_x, mean_y = np.mean(x, axis=axis), np.mean(y, axis=axis)
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.stack([mean_x - mean_y, (mean_y - mean_x) / (1.0 - mean_y)])
            (lows, highs), distribution = _two_sample(samples, both, metric, same_rows, n_resamples, cell_seed,
                                                      confidence)
            if np.ndim(lows):
                (low, rei_low), (high, rei_high) = lows.tolist(), highs.tolist()
                degenerate_note(distribution[1], f"{model} on {config}/{split}: its relative error increase", notes)
                if binary:  # the same rows, 0/1: Newcombe's paired interval of the difference
                    low, high = newcombe_paired(a[0], b[0], confidence)
                else:
                    degenerate_note(distribution[0], f"{model} on {config}/{split}: its gap to {base}", notes)
            else:
                low = high = math.nan
        else:
            (low, high), distribution = _two_sample(samples, difference, metric, same_rows, n_resamples, cell_seed,
                                                    confidence)
            degenerate_note(distribution, f"{model} on {config}/{split}: its gap to {base}", notes)
        rows.append({"model": model, "release": release, "config": config, "baseline": base, "split": split,
                     "metric": metric, "value": value_a, "baseline_value": value_b, "difference": value_a - value_b,
                     "difference_ci_low": low, "difference_ci_high": high, "paired": bool(same_rows),
                     "relative_error_increase": rei, "relative_error_increase_ci_low": rei_low,
                     "relative_error_increase_ci_high": rei_high})
    return pd.DataFrame(rows, columns=["model", "release", "config", "baseline", "split", "metric", "value",
                                       "baseline_value", "difference", "difference_ci_low", "difference_ci_high",
                                       "paired", "relative_error_increase", "relative_error_increase_ci_low",
                                       "relative_error_increase_ci_high"])


def _comparisons(units, n_resamples: int, seed: int, confidence: float):
    import pandas as pd
    from scipy.stats import binomtest

    primary = _primary(units)
    rows = []
    for (release, config, split), cell in units.groupby(["release", "config", "split"], sort=True):
        metric = primary[(release, config)]
        cell = cell[cell["metric"] == metric]
        models = sorted(cell["model"].unique())
        for i, first in enumerate(models):
            for second in models[i + 1:]:
                a = cell[cell["model"] == first].set_index("source_id")
                b = cell[cell["model"] == second].set_index("source_id")
                shared = a.index.intersection(b.index).sort_values()
                if len(shared) == 0:
                    continue
                a, b = a.loc[shared], b.loc[shared]
                row = {"release": release, "config": config, "split": split, "metric": metric, "model_a": first,
                       "model_b": second, "n": int(len(shared))}
                if metric in BINARY and set(np.unique(a["value"])) | set(np.unique(b["value"])) <= {0.0, 1.0}:
                    only_a = int(((a["value"] == 1) & (b["value"] == 0)).sum())
                    only_b = int(((a["value"] == 0) & (b["value"] == 1)).sum())
                    value_a, value_b = float(a["value"].mean()), float(b["value"].mean())
                    p = binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
                    bound = False
                    low = high = math.nan  # the exact test needs no resampling; the results table has intervals
                    row.update(test="mcnemar_exact", only_a=only_a, only_b=only_b)
                else:
                    arrays_a, arrays_b = _arrays(a.reset_index(), metric), _arrays(b.reset_index(), metric)
                    value_a, value_b = _point(arrays_a, metric), _point(arrays_b, metric)
                    if metric == "mcc":
                        samples = (arrays_a[0], arrays_a[1], arrays_b[1])
                        statistic = lambda g, p1, p2, axis=-1: mcc(g, p1, axis=axis) - mcc(g, p2, axis=axis)  # noqa: E731
                    else:
                        samples = (arrays_a[0], arrays_b[0])
                        statistic = lambda x, y, axis=-1: np.mean(x, axis=axis) - np.mean(y, axis=axis)  # noqa: E731
                    (low, high), distribution = _interval(samples, statistic, paired=True, n_resamples=n_resamples,
                                                          seed=_seed(seed, "pair", release, config, split, first,
                                                                     second), confidence=confidence)
                    p, bound = bootstrap_p(distribution)
                    row.update(test="paired_bootstrap", only_a=None, only_b=None)
                row.update(value_a=value_a, value_b=value_b, difference=value_a - value_b, difference_ci_low=low,
                           difference_ci_high=high, p_value=float(p), p_value_bound=bound)
                rows.append(row)
    columns = ["release", "config", "split", "metric", "model_a", "model_b", "n", "test", "only_a", "only_b",
               "value_a", "value_b", "difference", "difference_ci_low", "difference_ci_high", "p_value", "m",
               "p_bonferroni", "p_value_bound"]
    frame = pd.DataFrame(rows, columns=[c for c in columns if c not in ("m", "p_bonferroni")])
    frame["p_value_bound"] = frame["p_value_bound"].astype(bool)
    frame["m"] = len(frame)
    frame["p_bonferroni"] = np.minimum(1.0, frame["p_value"] * len(frame)) if len(frame) else []
    return frame[columns]


def _concurrence(results, units, n_resamples: int, seed: int, confidence: float, notes: list):
    """Kendall's tau-b of the model orderings between every pair of configs (benchmarks ``release/config``
    where the report covers several releases), through the ``concurrence`` metric; three models at least. Its
    interval resamples the test rows within each config (every model's score recomputed on each draw) and, from
    ``statistics.MODEL_RESAMPLING`` models on, the models too: with a few models a resample of models alone gives
    [1, 1] or [-1, 1]."""
    import pandas as pd

    columns = ["config_a", "config_b", "kendall_tau", "ci_low", "ci_high", "models"]
    if len(results):  # each config on its compared metric (mcc, not the acc beside it)
        primary = _primary(results)
        frame = results[[primary[(r, c)] == m for r, c, m in zip(results["release"], results["config"],
                                                                   results["metric"])]]
    else:
        frame = results
    models = sorted(frame["model"].unique()) if len(frame) else []
    if len(models) < 3:
        if len(models) == 2:
            notes.append("concurrence needs three or more models; two were given")
        return pd.DataFrame(columns=columns)
    frame = frame.assign(benchmark=benchmark_names(frame))
    # a benchmark every model was evaluated on, once (its evaluation split)
    counts = frame.groupby("benchmark")["model"].nunique()
    kept = [b for b in dict.fromkeys(frame["benchmark"]) if counts[b] == len(models)]
    if len(kept) < 2:
        return pd.DataFrame(columns=columns)
    frame = frame[frame["benchmark"].isin(kept)].drop_duplicates(["model", "benchmark"])
    from split_builders.metric_folders import load_metric, metric_module

    result = load_metric("concurrence").compute(model=list(frame["model"]), benchmark=list(frame["benchmark"]),
                                                seed=[None] * len(frame), score=[float(v) for v in frame["value"]],
                                                method="kendall")
    intervals = {}
    if n_resamples:
        by_cell = {(r.benchmark, r.model): r for r in frame.itertuples()}
        groups = units.groupby(["model", "release", "config", "split", "metric"], sort=False)
        cells = []
        for b in kept:
            row = [by_cell[(b, m)] for m in models]
            cell = [groups.get_group((r.model, r.release, r.config, r.split, r.metric)) for r in row]
            cells.append((row[0].metric, [(c["source_id"].to_numpy(), _arrays(c, r.metric)) for c, r in zip(cell, row)]))
        scores = np.concatenate([resampled_scores([c], metric, n_resamples, _seed(seed, "concurrence rows", b))
                                 for b, (metric, c) in zip(kept, cells)], axis=1)
        module = metric_module("concurrence", "concurrence")
        found = concurrence_intervals(scores, module.kendall_resamples, module._percentile_interval,
                                      seed=_seed(seed, "concurrence models"), confidence=confidence)
        intervals = {f"{kept[i]}|{kept[j]}": value for (i, j), value in found.items()}
    rows = []
    for key, value in result["concurrence"].items():
        first, second = key.split("|", 1)
        if first == second:
            continue
        low, high = intervals.get(key) or intervals.get(f"{second}|{first}") or (math.nan, math.nan)
        rows.append({"config_a": first, "config_b": second, "kendall_tau": float(value), "ci_low": _nan(low),
                     "ci_high": _nan(high), "models": len(models)})
    return pd.DataFrame(rows, columns=columns)


def _nan(value):
    return math.nan if value is None else float(value)
