"""The concurrence metric: the reference golden values, and explicit pair-counting Kendall
tau-b / formula Pearson / rank Spearman on random tables (through the shared
:class:`metric_testing.MetricTester`)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

from metric_testing import MetricTester



@pytest.fixture(scope="module")
def tester():
    return MetricTester("concurrence")


@pytest.fixture(scope="module")
def concurrence(tester):
    return tester.metric


# ---------------------------------------------------------------------------------------
# Independent reference
# ---------------------------------------------------------------------------------------


def ref_tau_b(x, y):
    """Kendall's tau-b by counting every pair: (C - D) / sqrt((n0 - n1)(n0 - n2))."""
    concordant = discordant = tied_x = tied_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                tied_x += 1
                tied_y += 1
            elif dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif dx * dy > 0:
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) / 2
    return (concordant - discordant) / math.sqrt((pairs - tied_x) * (pairs - tied_y))


def ref_pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def ref_spearman(x, y):
    return ref_pearson(list(rankdata(x)), list(rankdata(y)))


REFERENCE = {"kendall": ref_tau_b, "pearson": ref_pearson, "spearman": ref_spearman}


def ref_vectors(runs_a, runs_b):
    x, y = [], []
    for model in runs_a:
        for a in runs_a[model]:
            for b in runs_b[model]:
                x.append(a)
                y.append(b)
    return x, y


def long_rows(tables, seeds=None):
    """model, benchmark, seed, score columns from {benchmark: {model: [score per seed]}}."""
    columns = {"model": [], "benchmark": [], "seed": [], "score": []}
    for benchmark, runs in tables.items():
        for model, scores in runs.items():
            for k, score in enumerate(scores):
                columns["model"].append(model)
                columns["benchmark"].append(benchmark)
                columns["seed"].append(seeds[k] if seeds else str(k))
                columns["score"].append(score)
    return columns


def golden_tables(shared):
    golden = json.loads((shared / "reference/concurrence/golden.json").read_text())
    return golden, {"A": golden["A"], "B": golden["B"]}


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_docstring_examples_run(tester):
    tester.run_docstring_examples(at_least=6)


def test_golden_reference(concurrence, shared):
    golden, tables = golden_tables(shared)
    expected = golden["expected"]
    columns = long_rows(tables, seeds=golden["seeds"])
    kendall = concurrence.compute(**columns)["concurrence"]
    assert kendall["A|B"] == pytest.approx(expected["kendall_tau_b"], abs=1e-6)
    assert kendall["A|A"] == pytest.approx(expected["self_concurrence_A"], abs=1e-6)
    assert kendall["B|B"] == pytest.approx(expected["self_concurrence_B"], abs=1e-6)
    # Pairing every seed with every seed is the reference method, not ranking seed means.
    assert abs(kendall["A|B"] - expected["kendall_tau_on_seed_means_not_the_reference_method"]) > 0.05
    pearson = concurrence.compute(**columns, method="pearson")["concurrence"]
    assert pearson["A|B"] == pytest.approx(expected["pearson"], abs=1e-6)
    flipped = {"A": tables["A"], "B": {m: [1 - v for v in s] for m, s in tables["B"].items()}}
    assert concurrence.compute(**long_rows(flipped, golden["seeds"]))["concurrence"]["A|B"] == pytest.approx(
        expected["kendall_tau_b_A_vs_one_minus_B"], abs=1e-6)


@pytest.mark.parametrize("method", ["kendall", "pearson", "spearman"])
@pytest.mark.parametrize("seed", range(3))
def test_random_tables_match_reference(tester, method, seed):
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(int(rng.integers(3, 8)))]
    n_seeds = {"cogs": 3, "scan": int(rng.integers(1, 4)), "geo": 1}
    # Rounded scores make ties, which tau-b has to handle.
    tables = {b: {m: np.round(rng.random(k), 1).tolist() for m in models} for b, k in n_seeds.items()}
    names = list(tables)
    matrix = [[REFERENCE[method](*ref_vectors(tables[a], tables[b])) for b in names] for a in names]
    result = tester.check_against_reference(long_rows(tables), {"benchmarks": names, "matrix": matrix}, abs=1e-12,
                                            options={"method": method})
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            expected = matrix[i][j]
            key = f"{a}|{b}"
            if i < j or (i == j and n_seeds[a] > 1):
                assert result["concurrence"][key] == pytest.approx(expected, abs=1e-12)
            else:
                assert key not in result["concurrence"]


def test_bootstrap_interval(concurrence, shared):
    golden, tables = golden_tables(shared)
    columns = long_rows(tables, golden["seeds"])
    first = concurrence.compute(**columns, n_bootstrap=300, random_state=5)
    assert first == concurrence.compute(**columns, n_bootstrap=300, random_state=5)
    other_seed = concurrence.compute(**columns, n_bootstrap=300, random_state=6)
    assert first["confidence_interval"] != other_seed["confidence_interval"]
    for low, high in first["confidence_interval"].values():
        assert -1 <= low <= high <= 1
    # Benchmarks that agree exactly (one run per model) agree on every resample with two
    # distinct models; resamples of one model only are constant and left out.
    agree = {"A": {m: s[:1] for m, s in tables["A"].items()}, "B": {m: [2 * s[0]] for m, s in tables["A"].items()}}
    result = concurrence.compute(**long_rows(agree), n_bootstrap=200)
    assert result["concurrence"]["A|B"] == pytest.approx(1.0)
    assert result["confidence_interval"]["A|B"] == pytest.approx([1.0, 1.0])
    narrow = concurrence.compute(**columns, n_bootstrap=300, confidence_level=0.5, random_state=5)
    wide = first["confidence_interval"]["A|B"]
    assert wide[0] <= narrow["confidence_interval"]["A|B"][0] <= narrow["confidence_interval"]["A|B"][1] <= wide[1]


def test_constant_scores_give_nan(concurrence):
    tables = {"A": {"x": [0.5], "y": [0.5]}, "B": {"x": [0.1], "y": [0.9]}}
    result = concurrence.compute(**long_rows(tables))
    assert math.isnan(result["concurrence"]["A|B"])


def test_heatmap_png(concurrence, shared, tmp_path):
    golden, tables = golden_tables(shared)
    tables["C"] = {m: [1 - v for v in s] for m, s in tables["B"].items()}
    result = concurrence.compute(**long_rows(tables, golden["seeds"]))
    path = concurrence.plot_heatmap(result, tmp_path / "heatmap.png")
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert np.asarray(result["matrix"]).shape == (3, 3)


@pytest.mark.parametrize("change, message", [
    (lambda c: c["model"].__setitem__(slice(0, 2), ["gpt", "gpt"]),
     r"benchmarks 'A' and 'B' must cover the same models; only in 'A': \['gpt'\]; only in 'B': \['x'\]"),
    (lambda c: c["seed"].__setitem__(1, "0"), r"model 'x' has more than one score on 'A' with seed '0'"),
    (lambda c: c["score"].__setitem__(2, float("nan")), r"row 2 \('y' on 'A'\) has no finite score"),
    (lambda c: [c[k].pop() for k in ("model", "benchmark", "seed")],
     r"Mismatch in the number of model \(7\) and score \(8\)"),
    (lambda c: (c["benchmark"].__setitem__(slice(4, None), ["A"] * 4), c["model"].__setitem__(slice(4, None), ["z"] * 4)),
     r"model 'z' has more than one score on 'A' with seed '0'"),
    (lambda c: (c["benchmark"].__setitem__(slice(4, None), ["A"] * 4),
                c["model"].__setitem__(slice(4, None), ["z", "z", "w", "w"])),
     r"concurrence compares benchmarks; got only \['A'\]"),
])
def test_bad_tables_are_named(tester, change, message):
    columns = long_rows({"A": {"x": [0.1, 0.2], "y": [0.3, 0.4]}, "B": {"x": [0.5, 0.6], "y": [0.7, 0.8]}})
    change(columns)
    tester.assert_refused(columns, message)


@pytest.mark.parametrize("options, message", [
    ({"method": "tau"}, r"unknown method 'tau'; allowed: kendall, pearson, spearman"),
    ({"n_bootstrap": -1}, r"n_bootstrap must be a non-negative integer"),
    ({"confidence_level": 1.5}, r"confidence_level must lie strictly between 0 and 1"),
])
def test_bad_options_are_named(tester, options, message):
    columns = long_rows({"A": {"x": [0.1], "y": [0.3]}, "B": {"x": [0.5], "y": [0.7]}})
    tester.assert_refused({**columns, **options}, message)


def test_one_model_is_not_a_ranking(tester):
    tester.assert_refused(long_rows({"A": {"x": [0.1]}, "B": {"x": [0.5]}}), r"share 1 model\(s\); a ranking needs at least 2")


def test_integer_and_missing_seeds(concurrence):
    tables = {"A": {"x": [0.1, 0.2], "y": [0.3, 0.4]}, "B": {"x": [0.5, 0.6], "y": [0.7, 0.8]}}
    by_name = concurrence.compute(**long_rows(tables))
    columns = long_rows(tables)
    columns["seed"] = [int(s) for s in columns["seed"]]
    assert concurrence.compute(**columns) == by_name
    single = long_rows({"A": {"x": [0.1], "y": [0.3]}, "B": {"x": [0.5], "y": [0.7]}})
    single["seed"] = [None] * 4
    assert concurrence.compute(**single)["concurrence"] == {"A|B": 1.0}
