"""``resplit report``'s intervals and p-values at the edges (issue 54).

Score intervals are checked against published worked examples (Newcombe 1998; Fagerland, Lydersen & Laake 2017)
and against the equations that define them, solved here by root finding with Wilson's closed form (not scipy's);
the report's tables against those references on 0 of 40 and 40 of 40 right. Concurrence intervals against a
row bootstrap written here with numpy and ``scipy.stats.kendalltau``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from split_builders.evaluation.report import report

Z95 = 1.959963984540054


def wilson_formula(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval in its closed form (Wilson 1927), independent of scipy."""
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def mover_reference(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """MOVER's interval of the ratio (k1/n1) / (k2/n2): the theta at which the MOVER limits of ``p1 - theta * p2``
    (square-and-add of Wilson half-widths) reach 0, found by root finding (Donner & Zou 2012, section 2)."""
    from scipy.optimize import brentq

    p1, p2 = k1 / n1, k2 / n2
    (l1, u1), (l2, u2) = wilson_formula(k1, n1), wilson_formula(k2, n2)
    lower = lambda t: (p1 - t * p2) - math.sqrt((p1 - l1) ** 2 + t * t * (u2 - p2) ** 2)  # noqa: E731
    upper = lambda t: (p1 - t * p2) + math.sqrt((u1 - p1) ** 2 + t * t * (p2 - l2) ** 2)  # noqa: E731
    low = brentq(lower, 0.0, p1 / p2) if lower(0.0) > 0 else 0.0
    return low, brentq(upper, p1 / p2, 1e9)


# -- the formulas against the literature -------------------------------------------------------------------------


def test_score_intervals_equal_published_worked_examples():
    from split_builders.evaluation.statistics import mover_ratio, newcombe, newcombe_paired, wilson

    # Newcombe (1998, Stat Med 17:873), table II (a): 56/70 - 48/80, method 10
    assert newcombe(56, 70, 48, 80, 0.95) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    # Fagerland, Lydersen & Laake (2017), ch. 4: Perondi et al. 2004, 7/34 vs 1/34
    assert newcombe(7, 34, 1, 34, 0.95) == pytest.approx((0.0189, 0.3404), abs=5e-5)
    assert mover_ratio(7, 34, 1, 34, 0.95) == pytest.approx((1.1537, 41.9763), abs=5e-5)
    # ibid., ch. 8: Cavo et al. 2012, the paired table (59, 6; 16, 80), Newcombe's square-and-add
    x = np.r_[np.ones(65), np.zeros(96)]
    y = np.r_[np.ones(59), np.zeros(6), np.ones(16), np.zeros(80)]
    assert newcombe_paired(x, y, 0.95) == pytest.approx((-0.1186, -0.0046), abs=5e-5)
    for k, n in ((0, 40), (40, 40), (3, 20), (2500, 5000)):
        assert wilson(k, n, 0.95) == pytest.approx(wilson_formula(k, n), abs=1e-12)
    assert wilson(0, 40, 0.95)[1] == pytest.approx(0.0876, abs=5e-5)  # the issue's [0, 0.088]


@pytest.mark.parametrize("counts", [(7, 34, 1, 34), (60, 400, 40, 400), (0, 40, 20, 40), (40, 40, 3, 40),
                                    (1, 20, 19, 20)])
def test_the_ratio_interval_solves_moveRs_equations(counts):
    from split_builders.evaluation.statistics import mover_ratio

    assert mover_ratio(*counts, 0.95) == pytest.approx(mover_reference(*counts), rel=1e-9, abs=1e-12)


# -- the report at 0 and n ---------------------------------------------------------------------------------------


def _ids(release: Path, config: str) -> np.ndarray:
    import pyarrow.parquet as pq

    (path,) = (release / config).glob("test-*.parquet")
    return np.sort(pq.read_table(path, columns=["source_id"]).column("source_id").to_numpy())


def _table(path: Path, release: Path, outcomes: dict, column: str = "correct") -> Path:
    """A predictions table: ``{(model, config): function of the row's position -> 0/1 (or a score)}``."""
    rows = []
    for (model, config), outcome in outcomes.items():
        rows += [{"model": model, "config": config, "split": "test", "source_id": int(i), column: outcome(n)}
                 for n, i in enumerate(_ids(release, config))]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_none_and_all_right_have_intervals_not_points(small_release, tmp_path):
    table = _table(tmp_path / "p.csv", small_release, {("none", "ll_split"): lambda n: 0, ("none", "random"): lambda n: 0,
                                                       ("gold", "ll_split"): lambda n: 1, ("gold", "random"): lambda n: 1,
                                                       ("half", "ll_split"): lambda n: 0, ("half", "random"): lambda n: n % 2})
    result = report(small_release, [str(table)], n_resamples=1000)
    results = result.results.set_index(["model", "config"])
    assert results.loc[("none", "ll_split"), "n"] == 40
    none = results.loc[("none", "ll_split")]
    gold = results.loc[("gold", "ll_split")]
    assert (none.ci_low, none.ci_high) == pytest.approx(wilson_formula(0, 40), abs=1e-12)
    assert (gold.ci_low, gold.ci_high) == pytest.approx(wilson_formula(40, 40), abs=1e-12)
    gaps = result.gaps.set_index("model")
    # 0/40 - 0/40 and 40/40 - 40/40: Newcombe's interval, +-0.0876 (Wilson's upper end of 0/40)
    for model in ("none", "gold"):
        assert (gaps.loc[model, "difference_ci_low"], gaps.loc[model, "difference_ci_high"]) == pytest.approx(
            (-wilson_formula(0, 40)[1], wilson_formula(0, 40)[1]), abs=1e-12)
    # 40 errors of 40 against 20 of 40: the relative error increase +100%, MOVER-R's interval
    half = gaps.loc["half"]
    assert half.relative_error_increase == pytest.approx(1.0)
    low, high = mover_reference(40, 40, 20, 40)
    assert (half.relative_error_increase_ci_low, half.relative_error_increase_ci_high) == pytest.approx(
        (low - 1, high - 1), rel=1e-9)
    printed = "\n".join(result.lines()) + result.markdown()
    assert "[0.0000, 0.0000]" not in printed and "[1.0000, 1.0000]" not in printed


# -- p-values a bootstrap cannot resolve ------------------------------------------------------------------------


def test_a_bootstrap_p_value_with_no_resample_across_zero_is_a_bound_not_zero(small_release, tmp_path):
    """Scores (not 0/1) are compared by a paired bootstrap; where one model is ahead on every row, no resample
    reaches 0: the p-value is the test's step 2/B, flagged as a bound, printed ``<0.002`` (B = 1000)."""
    table = _table(tmp_path / "s.csv", small_release, {("a", "random"): lambda n: 0.9 + n / 1000,
                                                       ("b", "random"): lambda n: 0.2 + n / 1000,
                                                       ("c", "random"): lambda n: 0.82 + 0.2 * (n % 2)}, "score")
    result = report(small_release, [str(table)], n_resamples=1000)
    rows = result.comparisons.set_index(["model_a", "model_b"])
    assert set(rows["test"]) == {"paired_bootstrap"} and set(rows["m"]) == {3}
    ahead = rows.loc[("a", "b")]
    assert ahead.p_value == pytest.approx(2 / 1000) and ahead.p_value_bound
    assert ahead.p_bonferroni == pytest.approx(3 * 2 / 1000)
    mixed = rows.loc[("a", "c")]  # a and c about level: an estimate, not a bound
    assert not mixed.p_value_bound and mixed.p_value > 0.1
    record = next(r for r in result.as_dict()["comparisons"] if (r["model_a"], r["model_b"]) == ("a", "b"))
    assert record["p_value"] == pytest.approx(0.002) and record["p_value_bound"] is True
    section = "\n".join(result.lines()).split("Models compared")[1].split("\n\n")[0]
    (line,) = [line for line in section.splitlines() if line.split()[4:6] == ["a", "b"]]
    assert "<0.002" in line and "<0.006" in line and "0.0000" not in line, line
    json.dumps(result.as_dict(), allow_nan=False)


# -- concurrence: the test rows resampled ------------------------------------------------------------------------


def test_kendall_resamples_of_per_resample_scores_equal_scipys_tau_b():
    from scipy.stats import kendalltau

    from split_builders.metric_folders import metric_module

    metric = metric_module("concurrence", "concurrence")
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, (40, 5, 6)) / 4  # resamples x benchmarks x models, with ties
    picks = rng.integers(0, 6, (40, 6))
    taus = metric.kendall_resamples(scores, picks)
    for r in range(40):
        for i in range(5):
            for j in range(i + 1, 5):
                expected = kendalltau(scores[r, i, picks[r]], scores[r, j, picks[r]]).statistic
                assert taus[r, i, j] == expected or (np.isnan(expected) and np.isnan(taus[r, i, j])), (r, i, j)


def test_concurrence_intervals_resample_the_test_rows(small_release, tmp_path):
    """Four models a few points apart that rank alike on two configs (tau 1): resampling only the four models
    gives [1, 1]; resampling each config's 40 rows gives the interval a bootstrap written here gives."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(4)
    configs = ("ll_split", "random")
    planted = {}  # each model right on its own random 22, 24, 26 or 28 of the 40 rows: the same order on both
    for m, right in (("m1", 22), ("m2", 24), ("m3", 26), ("m4", 28)):
        for c in configs:
            planted[(m, c)] = (rng.permutation(40) < right).astype(int)
    table = _table(tmp_path / "c.csv", small_release, {key: (lambda n, v=v: int(v[n])) for key, v in planted.items()})
    result = report(small_release, [str(table)], n_resamples=2000, seed=3)
    (row,) = result.concurrence.itertuples()
    assert row.kendall_tau == 1.0 and row.ci_high == 1.0 and row.ci_low < 1.0, row
    draws = np.random.default_rng(0).integers(0, 40, (2000, 2, 40))
    taus = [kendalltau(*[[planted[(m, c)][draws[r, k]].mean() for m in ("m1", "m2", "m3", "m4")]
                         for k, c in enumerate(configs)]).statistic for r in range(2000)]
    taus = np.asarray(taus)[np.isfinite(taus)]
    assert row.ci_low == pytest.approx(np.quantile(taus, 0.025), abs=1 / 3), row  # tau of 4 models moves in thirds


def test_many_models_are_resampled_too():
    from split_builders.evaluation.statistics import MODEL_RESAMPLING, concurrence_intervals

    drawn = []

    def spy(scores, picks):
        drawn.append(np.asarray(picks))
        return np.ones((len(picks), scores.shape[1], scores.shape[1]))

    scores = np.random.default_rng(0).random((50, 2, MODEL_RESAMPLING))
    concurrence_intervals(scores, spy, lambda v, c: [float(np.min(v)), float(np.max(v))], seed=1, confidence=0.95)
    assert any(sorted(pick) != list(range(MODEL_RESAMPLING)) for pick in drawn[0])
    concurrence_intervals(scores[:, :, :4], spy, lambda v, c: [0.0, 0.0], seed=1, confidence=0.95)
    assert (drawn[1] == np.arange(4)).all()  # four models: the rows are what is redrawn


# -- repeated keys and the errors' causes ------------------------------------------------------------------------


def _twice(path: Path, release: Path, repeats: dict) -> tuple[Path, pd.DataFrame]:
    """A table of one model on random, then rows of positions ``repeats`` again, with outcome ``repeats[n]``."""
    table = _table(path, release, {("a", "random"): lambda n: int(n % 3 == 0)})
    frame = pd.read_csv(table)
    again = frame.iloc[list(repeats)].assign(correct=list(repeats.values()))
    pd.concat([frame, again], ignore_index=True).to_csv(table, index=False)
    return table, frame


def test_a_row_repeated_alike_is_read_once_with_a_note(small_release, tmp_path):
    table, frame = _twice(tmp_path / "p.csv", small_release, {3: 1, 8: 0})  # rows 3 and 8 as they were
    result = report(small_release, [str(table)], n_resamples=0)
    (row,) = result.results.itertuples()
    assert row.n == 40 and row.value == frame["correct"].mean()
    (note,) = [note for note in result.notes if "outcome and all" in note]
    assert "2 rows" in note and "line 5 and line 42" in note and "read once" in note, note


def test_a_key_repeated_with_another_outcome_is_refused_naming_the_first_two(small_release, tmp_path, capsys):
    from conftest import refused_in_one_line

    table, frame = _twice(tmp_path / "p.csv", small_release, {3: 0, 8: 1, 21: 1})  # 3 and 8 flipped; 21 alike
    ids = frame["source_id"]
    line = refused_in_one_line(["report", str(small_release), str(table), "--bootstrap-iters", "0"], capsys,
                               small_release)
    assert "2 rows" in line and "different outcome" in line, line
    assert f"source_id {ids[3]} of random/test at line 5 and line 42" in line, line
    assert f"source_id {ids[8]} of random/test at line 10 and line 43" in line, line


def test_test_rows_under_a_split_the_config_has_not_are_named_by_the_split_column(small_release, tmp_path, capsys):
    from conftest import refused_in_one_line

    table = _table(tmp_path / "p.csv", small_release, {("a", "random"): lambda n: 1})
    pd.read_csv(table).assign(split="dev").to_csv(table, index=False)
    line = refused_in_one_line(["report", str(small_release), str(table), "--bootstrap-iters", "0"], capsys,
                               small_release)
    assert "its split column says dev" in line and "those of the test split: give test" in line, line


def test_an_inspect_log_without_samples_says_its_status_and_count(small_release, tmp_path, capsys):
    from conftest import refused_in_one_line
    from test_report_round6 import _inspect_log

    log = _inspect_log(tmp_path / "logs" / "a.eval", small_release, "random", ids=[])
    line = refused_in_one_line(["report", str(small_release), str(log), "--bootstrap-iters", "0"], capsys,
                               small_release)
    assert "a.eval" in line and "status is success" in line and "none of its 0 sample(s)" in line, line


def test_a_bootstrap_whose_resamples_are_all_alike_says_so(small_release, tmp_path):
    table = _table(tmp_path / "s.csv", small_release, {("a", "random"): lambda n: 0.5}, "score")
    result = report(small_release, [str(table)], n_resamples=100)
    (row,) = result.results.itertuples()
    assert row.ci_low == row.ci_high == 0.5
    assert any(note.startswith("a on random/test: its score is 0.5000 on every bootstrap resample") and "[0.5000, 0.5000]" in note
               for note in result.notes), result.notes
