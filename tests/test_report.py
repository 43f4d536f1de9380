"""``resplit report`` on planted outcomes: every table against an independent computation written here.

A likelihood release of 1,200 SNLI rows (400 test rows per config, given scores) and predictions tables whose
per-row outcomes are planted with a seeded generator. Point estimates are compared exactly; interval endpoints
within 0.01 of a 10,000-resample percentile bootstrap written below with numpy alone (not scipy: away from 0 and n
the report's score intervals agree with it), the relative error increase's with MOVER-R solved by root finding
(``test_report_intervals.mover_reference``); McNemar's exact
p-value from the binomial sum; Kendall's tau-b from its definition over model pairs; the Matthews correlation
with scikit-learn's.
"""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import refused_in_one_line, tree_state
from test_report_intervals import mover_reference
from split_builders.cli import main
from split_builders.evaluation.report import report
from split_builders.evaluation.statistics import mcc

MODELS = {"big": 0.85, "mid": 0.72, "small": 0.55}  # accuracy on random; each other config planted lower or higher
SHIFTS = (0.0, -0.15, -0.25, -0.2, 0.05, -0.1)  # per config, in the release's order


@pytest.fixture(scope="module")
def release(shared, tmp_path_factory) -> Path:
    snli = shared / "reference" / "likelihood" / "inputs" / "snli"
    out = tmp_path_factory.mktemp("report-release") / "snli-likelihood"
    assert main(["likelihood", "--source", str(snli / "all_examples.csv"), "--prompt-field", "premise",
                 "--query-field", "hypothesis", "--label-field", "gold_label", "--scores",
                 str(snli / "all_examples__False_loglikelihoods.npy"), "--validation-size", "200", "--test-size", "400",
                 "--null-splits", "0", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def configs(release) -> tuple:
    names = tuple(sorted(p.name for p in release.iterdir() if p.is_dir() and any(p.glob("test-*.parquet"))))
    assert "random" in names and len(names) >= 4, names
    return names


def _test_ids(release: Path, config: str) -> np.ndarray:
    import pyarrow.parquet as pq

    (path,) = (release / config).glob("test-*.parquet")
    return np.sort(pq.read_table(path, columns=["source_id"]).column("source_id").to_numpy())


@pytest.fixture(scope="module")
def planted(release, configs, tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """A predictions table: every model on every config's test split, each row right with its planted rate."""
    rng = np.random.default_rng(11)
    rows = []
    for model, rate in MODELS.items():
        for config, shift in zip(configs, SHIFTS):
            ids = _test_ids(release, config)
            correct = (rng.random(len(ids)) < rate + (0 if config == "random" else shift)).astype(int)
            rows += [{"model": model, "config": config, "split": "test", "source_id": int(i), "correct": int(c)}
                     for i, c in zip(ids, correct)]
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=3)  # any row order
    path = tmp_path_factory.mktemp("runs") / "predictions.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _percentile_bootstrap(statistic, *samples, paired=False, n=10_000, seed=123, level=0.95):
    """A percentile bootstrap with numpy alone: ``n`` resamples of row indices (one draw for paired samples);
    ``statistic`` takes arrays of shape (n, rows) and reduces the last axis."""
    rng = np.random.default_rng(seed)
    if paired:
        index = rng.integers(0, len(samples[0]), (n, len(samples[0])))
        values = statistic(*(s[index] for s in samples))
    else:
        values = statistic(*(s[rng.integers(0, len(s), (n, len(s)))] for s in samples))
    values = values[np.isfinite(values)]
    alpha = (1 - level) / 2
    return np.quantile(values, alpha), np.quantile(values, 1 - alpha)


def _outcomes(frame, model, config):
    part = frame[(frame["model"] == model) & (frame["config"] == config)].sort_values("source_id")
    return part["correct"].to_numpy(dtype=float), part["source_id"].to_numpy()


def test_matthews_correlation_equals_scikit_learns_and_is_vectorised():
    from sklearn.metrics import matthews_corrcoef

    rng = np.random.default_rng(0)
    for k in (2, 3, 4):
        gold = rng.integers(0, k, (6, 200))
        pred = np.where(rng.random((6, 200)) < 0.6, gold, rng.integers(0, k, (6, 200)))
        batched = mcc(gold, pred)
        for row in range(6):
            assert batched[row] == pytest.approx(matthews_corrcoef(gold[row], pred[row]), abs=1e-12)
    import warnings

    with warnings.catch_warnings():  # scikit-learn warns that one class is all there is: the correlation is 0
        warnings.simplefilter("ignore")
        assert mcc(np.zeros(5, int), np.zeros(5, int)) == matthews_corrcoef(np.zeros(5), np.zeros(5)) == 0.0


def test_every_table_equals_an_independent_computation(release, configs, planted):
    path, frame = planted
    result = report(release, [str(path)], n_resamples=10_000, seed=0)

    # 1. per model x config: accuracy, n, complete, interval
    assert len(result.results) == len(MODELS) * len(configs)
    for row in result.results.itertuples():
        values, ids = _outcomes(frame, row.model, row.config)
        assert row.metric == "acc" and row.split == "test"
        assert row.value == values.mean() and row.n == len(values) == 400 and row.complete
        low, high = _percentile_bootstrap(lambda x: x.mean(axis=1), values, seed=len(row.config))
        assert abs(row.ci_low - low) < 0.01 and abs(row.ci_high - high) < 0.01, (row, low, high)

    # 2. the gap to random and the relative error increase, unpaired (the test sets hold different rows)
    assert set(result.gaps["baseline"]) == {"random"} and "random" not in set(result.gaps["config"])
    assert len(result.gaps) == len(MODELS) * (len(configs) - 1)
    for row in result.gaps.itertuples():
        a, _ = _outcomes(frame, row.model, row.config)
        b, _ = _outcomes(frame, row.model, "random")
        assert row.difference == pytest.approx(a.mean() - b.mean(), abs=1e-12) and not row.paired
        rei = ((1 - a.mean()) - (1 - b.mean())) / (1 - b.mean())
        assert row.relative_error_increase == pytest.approx(rei, abs=1e-12)
        low, high = _percentile_bootstrap(lambda x, y: x.mean(axis=1) - y.mean(axis=1), a, b, seed=7)
        assert abs(row.difference_ci_low - low) < 0.01 and abs(row.difference_ci_high - high) < 0.01
        # a ratio of error rates less 1: MOVER-R's interval (score intervals of the two error rates), solved here
        low, high = mover_reference(int(len(a) - a.sum()), len(a), int(len(b) - b.sum()), len(b))
        assert row.relative_error_increase_ci_low == pytest.approx(low - 1, rel=1e-9), (row, low)
        assert row.relative_error_increase_ci_high == pytest.approx(high - 1, rel=1e-9), (row, high)

    # 3. McNemar's exact test per pair of models per config (the same rows), and the count of comparisons
    assert len(result.comparisons) == len(configs) * 3 and set(result.comparisons["m"]) == {len(configs) * 3}
    for row in result.comparisons.itertuples():
        a, _ = _outcomes(frame, row.model_a, row.config)
        b, _ = _outcomes(frame, row.model_b, row.config)
        only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
        n, k = only_a + only_b, min(only_a, only_b)
        exact = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)
        assert (row.only_a, row.only_b, row.test) == (only_a, only_b, "mcnemar_exact")
        assert row.difference == pytest.approx(a.mean() - b.mean(), abs=1e-12)
        assert row.p_value == pytest.approx(exact, rel=1e-9)
        assert row.p_bonferroni == pytest.approx(min(1.0, exact * row.m), rel=1e-9)

    # 4. concurrence: Kendall's tau-b of the model orderings of every pair of configs
    assert len(result.concurrence) == math.comb(len(configs), 2)
    accuracy = {(m, c): _outcomes(frame, m, c)[0].mean() for m in MODELS for c in configs}
    for row in result.concurrence.itertuples():
        pairs = list(combinations(MODELS, 2))
        signs = [(np.sign(accuracy[(x, row.config_a)] - accuracy[(y, row.config_a)]),
                  np.sign(accuracy[(x, row.config_b)] - accuracy[(y, row.config_b)])) for x, y in pairs]
        concordant = sum(s * t for s, t in signs)
        ties_a = sum(s == 0 for s, _ in signs)
        ties_b = sum(t == 0 for _, t in signs)
        tau = concordant / math.sqrt((len(pairs) - ties_a) * (len(pairs) - ties_b))
        assert row.kendall_tau == pytest.approx(tau, abs=1e-12) and row.models == 3


def test_the_same_report_whatever_the_order_of_runs_and_rows(release, planted, tmp_path):
    import split_builders

    assert split_builders.report is report  # the package's name for it
    path, frame = planted
    other = tmp_path / "shuffled.parquet"
    frame.sample(frac=1.0, random_state=99).to_parquet(other)
    first = report(release, [str(path)], n_resamples=500, seed=4).as_dict()
    second = report(release, [str(other)], n_resamples=500, seed=4).as_dict()
    first.pop("provenance"), second.pop("provenance")  # the two files (their names and sha256) differ
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_cli_json_and_out_folder(release, planted, tmp_path, capsys):
    path, _ = planted
    out = tmp_path / "report"
    assert main(["report", str(release), str(path), "--json", "--bootstrap-iters", "200", "--out", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    data = json.loads(last)
    assert set(data) >= {"results", "gaps", "comparisons", "concurrence"}
    first = data["results"][0]
    assert set(first) == {"model", "release", "config", "split", "metric", "value", "n", "complete", "ci"}
    assert 0 <= first["value"] <= 1 and len(first["ci"]) == 2
    gap = data["gaps"][0]
    assert {"difference_ci", "relative_error_increase", "relative_error_increase_ci", "baseline"} <= set(gap)
    assert {"config_a", "config_b", "kendall_tau", "ci", "models"} <= set(data["concurrence"][0])
    names = {p.name for p in out.iterdir()}
    assert {"report.md", "report.json", "report.tex", "results.csv", "gaps.csv", "comparisons.csv",
            "concurrence.csv", "gaps.png", "concurrence.png"} <= names
    assert json.loads((out / "report.json").read_text()) == data
    assert "\\begin{tabular}" in (out / "report.tex").read_text()
    assert pd.read_csv(out / "results.csv").shape[0] == len(data["results"])
    # a second report into the same place is refused without --overwrite, and nothing changes
    line = refused_in_one_line(["report", str(release), str(path), "--bootstrap-iters", "0", "--out", str(out)],
                               capsys, out)
    assert "--overwrite" in line
    assert main(["report", str(release), str(path), "--bootstrap-iters", "0", "--out", str(out), "--overwrite"]) == 0


def test_a_partial_run_is_flagged_incomplete_and_predictions_are_compared_with_the_labels(release, tmp_path):
    import pyarrow.parquet as pq

    import datasets

    (file,) = (release / "random").glob("test-*.parquet")
    table = pq.read_table(file).to_pandas()
    names = datasets.Features.from_arrow_schema(pq.read_schema(file))["label"].names  # the release's class order
    rng = np.random.default_rng(5)
    rows = table.head(100)
    predictions = [names[g] if rng.random() < 0.7 else names[(g + 1) % 3] for g in rows["label"]]
    path = tmp_path / "preds.jsonl"
    pd.DataFrame({"config": "random", "split": "test", "source_id": rows["source_id"],
                  "prediction": predictions}).to_json(path, orient="records", lines=True)
    result = report(release, [f"{path}=mine"], n_resamples=0)
    (row,) = result.results.itertuples()
    expected = np.mean([p == names[g] for p, g in zip(predictions, rows["label"])])
    assert row.model == "mine" and row.value == expected and row.n == 100 and not row.complete
    assert math.isnan(row.ci_low)
    assert any("complete: false" in note for note in result.notes)


def _bad_inputs(release: Path, planted_path: Path, work: Path) -> dict:
    from split_builders.publishing.export import group_name
    from split_builders.release.folder import read_card

    task = f"{group_name(read_card(release)[0])}_random"
    empty = work / "empty"
    empty.mkdir()
    results_only = work / "results-only" / "model"
    results_only.mkdir(parents=True)
    (results_only / "results_2026-01-01T00-00-00.json").write_text(json.dumps({
        "configs": {task: {"task": task, "dataset_name": "random",
                                               "test_split": "test", "metric_list": [{"metric": "acc"}]}},
        "model_name": "m"}))
    frame = pd.read_csv(planted_path)
    no_id = work / "no-id.csv"
    frame.drop(columns=["source_id"]).to_csv(no_id, index=False)
    unknown_config = work / "unknown-config.csv"
    frame.assign(config="tmcd").to_csv(unknown_config, index=False)
    foreign = work / "foreign.csv"
    frame.assign(source_id=frame["source_id"] + 10_000_000).to_csv(foreign, index=False)
    other_version = work / "other-version" / "model"
    other_version.mkdir(parents=True)
    (other_version / "results_2026-01-01T00-00-00.json").write_text(json.dumps({
        "configs": {task: {
            "task": task, "dataset_name": "random", "test_split": "test",
            "dataset_kwargs": {"resplit_config": "random", "resplit_files": {"test": {"path": "x", "sha256": "0" * 64}}},
            "metric_list": [{"metric": "acc"}]}}, "model_name": "m"}))
    return {
        "an empty folder": ([str(empty)], "results_*.json"),
        "results without samples": ([str(work / "results-only")], "--log_samples"),
        "a table without source_id": ([str(no_id)], "source_id"),
        "a config the release lacks": ([str(unknown_config)], "'tmcd'"),
        "rows of another release": ([str(foreign)], "is not in"),
        "a run of another version": ([str(work / "other-version")], "another version"),
        "two runs with one name": ([f"{planted_path}=x", f"{no_id}=x"], None),
        "a file that is not a run": ([str(release / "README.md")], "is not a run"),
    }


@pytest.mark.parametrize("case", ["an empty folder", "results without samples", "a table without source_id",
                                  "a config the release lacks", "rows of another release", "a run of another version",
                                  "a file that is not a run"])
def test_bad_runs_are_refused_in_one_line_and_nothing_is_written(case, release, planted, tmp_path, capsys):
    path, _ = planted
    runs, expected = _bad_inputs(release, path, tmp_path)[case]
    out = tmp_path / "out"
    line = refused_in_one_line(["report", str(release), *runs, "--out", str(out)], capsys, release, out=out)
    if expected:
        assert expected in line, line


def test_two_runs_named_alike_and_an_unknown_baseline_are_refused(release, planted, tmp_path, capsys):
    path, frame = planted
    copy = tmp_path / "copy.csv"
    frame[frame["model"] == "big"].to_csv(copy, index=False)
    one = tmp_path / "one.csv"
    frame[frame["model"] == "mid"].to_csv(one, index=False)
    line = refused_in_one_line(["report", str(release), f"{copy}=x", f"{one}=x"], capsys, release)
    assert "named 'x'" in line
    line = refused_in_one_line(["report", str(release), str(path), "--baseline", "nope"], capsys, release)
    assert "--baseline 'nope'" in line
    line = refused_in_one_line(["report", str(tmp_path), str(path)], capsys, release)
    assert "not a resplit release" in line
    assert tree_state(release) == tree_state(release)


def test_the_registry_checks_report_tables(toy_method):
    from split_builders.api import registry
    from split_builders.errors import InvalidParameterError
    from split_builders.registry import check_declarations

    assert registry()["curriculum"].report_tables == ("curriculum",)
    assert registry()["behavioural"].report_tables == ("g_score",)
    assert all(method.report_tables == () for name, method in registry().items()
               if name not in ("curriculum", "behavioural"))
    for tables in (("nope",), ["curriculum"]):
        method = type("Bad", (toy_method,), {"name": "bad-tables", "report_tables": tables})()
        with pytest.raises(InvalidParameterError, match="report_tables must be a tuple"):
            check_declarations(method)
    check_declarations(type("Good", (toy_method,), {"name": "good-tables", "report_tables": ("curriculum",)})())
    # a G-score is per scenario: the scenarios must be declared, as patterns of its config names
    with pytest.raises(InvalidParameterError, match="declare them"):
        check_declarations(type("NoScenarios", (toy_method,), {"name": "g1", "report_tables": ("g_score",)})())
    with pytest.raises(InvalidParameterError, match="scenarios must map a name"):
        check_declarations(type("BadScenario", (toy_method,), {"name": "g2", "report_tables": ("g_score",),
                                                              "scenarios": {"x": ("not_a_config",)}})())
    behavioural = registry()["behavioural"]
    assert [behavioural.scenario(c) for c in ("seen", "func_3", "class_Negation", "type_MFT", "other")] == [
        "seen", "func", "class", "type", None]
