"""``resplit report`` reads real lm-evaluation-harness runs back.

The harness's own command line (in this process, so a stand-in model registered here can answer:
``tests/planted_lm.py``, right on a planted share of the rows) runs the tasks a release carries with
``--log_samples``; ``report`` must then give, per config, the harness's own aggregate (accuracy, exact match,
Matthews correlation), the same value recomputed from the planted rule on the release's rows, and the tables
built on them: the gap to ``random``, the concurrence of three models, CURRICULUM's table and CheckList pass
rates per functionality (a test case passes when all its examples pass).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from planted_lm import planted, run_cli
from split_builders.evaluation.report import report
from split_builders.publishing.export import group_name
from split_builders.release.folder import Released, read_card

pytest.importorskip("lm_eval", reason="lm-evaluation-harness is a test extra (pip install resplit[test])")
pytestmark = pytest.mark.slow

LIKELIHOOD_MODELS = {"a": 0.9, "b": 0.6, "c": 0.75}


def _run(release: Path, out: Path, name: str, p: float, *extra) -> Path:
    group = group_name(read_card(release)[0])
    run_cli(["--model", "resplit-planted", "--model_args", f"p={p},name={name}", "--include_path",
             str(release / "lm_eval"), "--tasks", group, "--output_path", str(out), "--log_samples", *extra])
    return out


@pytest.fixture(scope="module")
def runs(family_releases, tmp_path_factory, harness_cache) -> dict:
    root = tmp_path_factory.mktemp("harness-runs")
    out = {"likelihood": {name: _run(family_releases["likelihood"], root / "likelihood" / name, name, p)
                          for name, p in LIKELIHOOD_MODELS.items()}}
    out["likelihood-limit"] = _run(family_releases["likelihood"], root / "limit", "a", 0.9, "--limit", "5")
    out["tmcd"] = _run(family_releases["tmcd"], root / "tmcd", "a", 0.7)
    out["curriculum"] = _run(family_releases["curriculum"], root / "curriculum", "a", 0.8)
    out["behavioural"] = _run(family_releases["behavioural"], root / "behavioural", "a", 0.85)
    return out


def _harness_value(run: Path, task: str, metric: str) -> float:
    (results,) = run.rglob("results_*.json")
    values = json.loads(results.read_text())["results"][task]
    return next(v for k, v in values.items() if k.split(",")[0] == metric and "_stderr" not in k)


def _planted_share(release: Path, config: str, split: str, name: str, p: float) -> float:
    ids = Released(release).source_ids(config, split)
    return float(np.mean([planted(name, p, i) for i in ids]))


def test_likelihood_runs_give_the_harness_values_gaps_and_concurrence(family_releases, runs):
    release = family_releases["likelihood"]
    group = group_name(read_card(release)[0])
    result = report(release, [f"{path}={name}" for name, path in runs["likelihood"].items()], n_resamples=2000)
    assert set(result.results["model"]) == set(LIKELIHOOD_MODELS)
    for row in result.results.itertuples():
        assert row.metric == "acc" and row.split == "test" and row.complete
        harness = _harness_value(runs["likelihood"][row.model], f"{group}_{row.config}", "acc")
        assert row.value == pytest.approx(harness, abs=1e-12)
        assert row.value == pytest.approx(_planted_share(release, row.config, "test", row.model,
                                                         LIKELIHOOD_MODELS[row.model]), abs=1e-12)
        assert row.ci_low <= row.value <= row.ci_high
    gaps = result.gaps
    assert set(gaps["baseline"]) == {"random"} and len(gaps) == 3 * (result.results["config"].nunique() - 1)
    for row in gaps.itertuples():
        values = result.results.set_index(["model", "config"])["value"]
        assert row.difference == pytest.approx(values[(row.model, row.config)] - values[(row.model, "random")])
    assert len(result.concurrence) == math.comb(result.results["config"].nunique(), 2)
    assert set(result.comparisons["test"]) == {"mcnemar_exact"}


def test_a_limited_run_is_reported_incomplete(family_releases, runs):
    result = report(family_releases["likelihood"], [f"{runs['likelihood-limit']}=a"], n_resamples=0)
    assert set(result.results["n"]) == {5} and not result.results["complete"].any()
    assert any("complete: false" in note for note in result.notes)


def test_generation_runs_score_exact_match(family_releases, runs):
    release = family_releases["tmcd"]
    group = group_name(read_card(release)[0])
    result = report(release, [f"{runs['tmcd']}=a"], n_resamples=0)
    assert len(result.results) >= 2 and set(result.results["metric"]) == {"exact_match"}
    for row in result.results.itertuples():
        assert row.value == pytest.approx(_harness_value(runs["tmcd"], f"{group}_{row.config}", "exact_match"))
        assert row.value == pytest.approx(_planted_share(release, row.config, row.split, "a", 0.7), abs=1e-12)
        assert row.complete


def test_curriculum_runs_give_the_harness_mcc_and_the_papers_table(family_releases, runs):
    release = family_releases["curriculum"]
    group = group_name(read_card(release)[0])
    result = report(release, [f"{runs['curriculum']}=a"], n_resamples=500)
    mcc_rows = result.results[result.results["metric"] == "mcc"]
    assert len(mcc_rows)
    for row in mcc_rows.itertuples():  # the harness computes it with scikit-learn's matthews_corrcoef
        assert row.value == pytest.approx(_harness_value(runs["curriculum"], f"{group}_{row.config}", "mcc"),
                                          abs=1e-9)
    assert result.curriculum is not None
    zero_shot = result.curriculum[result.curriculum["phenomenon"] == "verbnet"]
    (value,) = mcc_rows[mcc_rows["config"] == "verbnet"]["value"]
    assert zero_shot["mcc"].iloc[0] == pytest.approx(value, abs=1e-9)


def test_behavioural_runs_give_pass_rates_by_test_case_and_functionality(family_releases, runs):
    release = family_releases["behavioural"]
    result = report(release, [f"{runs['behavioural']}=a"], n_resamples=0)
    assert set(result.results["metric"]) == {"pass_rate"}
    samples_file = sorted(runs["behavioural"].rglob("samples_*.jsonl"))[0]
    docs = [json.loads(line)["doc"] for line in samples_file.read_text().splitlines() if line.strip()]
    assert {"source_id", "example", "functionality", "capability"} <= set(docs[0])
    frame = result.behavioural
    assert frame is not None and {"functionality", "capability", "suite"} <= set(frame["level"])
    # independently: a test case passes when each of its scored examples was planted right
    cases = {}
    for doc in docs:
        cases.setdefault((doc["functionality"], doc["source_id"]), []).append(
            planted("a", 0.85, doc["source_id"], doc["example"]))
    by_functionality = {}
    for (functionality, _), hits in cases.items():
        by_functionality.setdefault(functionality, []).append(all(hits))
    rows = frame[(frame["level"] == "functionality")]
    config_of_file = next(c for c in rows["config"].unique() if samples_file.name.startswith(
        f"samples_{group_name(read_card(release)[0])}_{c}_"))
    for row in rows[rows["config"] == config_of_file].itertuples():
        assert row.pass_rate == pytest.approx(np.mean(by_functionality[row.name]), abs=1e-12), row
