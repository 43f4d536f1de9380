"""The g_score metric: G against scipy's harmonic mean and loop-computed suite scores, the
randomization test against exact enumeration and a per-item coin-flip implementation (through the shared
:class:`metric_testing.MetricTester`)."""

import itertools
import math
import random

import numpy as np
import pytest
from scipy.stats import hmean

from metric_testing import MetricTester, assert_close

SCENARIOS = ["standard", "seen", "func", "class", "type"]


@pytest.fixture(scope="module")
def tester():
    return MetricTester("g_score")


@pytest.fixture(scope="module")
def g_score(tester):
    return tester.metric


# ---------------------------------------------------------------------------------------
# Independent reference: plain loops, scipy's hmean, and per-item swaps as in BELUGA
# ---------------------------------------------------------------------------------------


def ref_suite_score(functionalities):
    rates = []
    for hits in functionalities.values():
        defined = [h for h in hits if h is not None and not (isinstance(h, float) and math.isnan(h))]
        if defined:
            rates.append(sum(defined) / len(defined))
    return sum(rates) / len(rates)


def ref_g(iid_score, suite_score):
    return 0.0 if iid_score == 0 or suite_score == 0 else float(hmean([iid_score, suite_score]))


def ref_g_all(iid, suite):
    iid_score = sum(iid) / len(iid)
    return {s: ref_g(iid_score, ref_suite_score(f)) for s, f in suite.items()}


def ref_differences(iid1, suite1, iid2, suite2):
    g1, g2 = ref_g_all(iid1, suite1), ref_g_all(iid2, suite2)
    diffs = {s: abs(g1[s] - g2[s]) for s in g1}
    diffs["mean"] = abs(sum(g1.values()) / len(g1) - sum(g2.values()) / len(g2))
    return diffs


def same(a, b):
    return (a is None and b is None) or a == b


def discordant_positions(iid1, suite1, iid2, suite2):
    positions = [("iid", None, i) for i in range(len(iid1)) if iid1[i] != iid2[i]]
    for s in suite1:
        for f in suite1[s]:
            positions += [(s, f, i) for i in range(len(suite1[s][f])) if not same(suite1[s][f][i], suite2[s][f][i])]
    return positions


def swapped(iid1, suite1, iid2, suite2, chosen):
    a_iid, b_iid = list(iid1), list(iid2)
    a_suite = {s: {f: list(h) for f, h in fs.items()} for s, fs in suite1.items()}
    b_suite = {s: {f: list(h) for f, h in fs.items()} for s, fs in suite2.items()}
    for where, f, i in chosen:
        if where == "iid":
            a_iid[i], b_iid[i] = b_iid[i], a_iid[i]
        else:
            a_suite[where][f][i], b_suite[where][f][i] = b_suite[where][f][i], a_suite[where][f][i]
    return a_iid, a_suite, b_iid, b_suite


def exact_permutation_p(iid1, suite1, iid2, suite2):
    """P(|G1 - G2| >= observed) over all 2^m swap patterns of the m discordant items."""
    observed = ref_differences(iid1, suite1, iid2, suite2)
    positions = discordant_positions(iid1, suite1, iid2, suite2)
    hits = {key: 0 for key in observed}
    for pattern in itertools.product([False, True], repeat=len(positions)):
        chosen = [p for p, flip in zip(positions, pattern) if flip]
        diffs = ref_differences(*swapped(iid1, suite1, iid2, suite2, chosen))
        for key in hits:
            hits[key] += diffs[key] >= observed[key] - 1e-12
    return {key: count / 2 ** len(positions) for key, count in hits.items()}


def coin_flip_p(iid1, suite1, iid2, suite2, trials, seed):
    """BELUGA's loop: a fair coin per discordant item and trial."""
    rng = random.Random(seed)
    observed = ref_differences(iid1, suite1, iid2, suite2)
    positions = discordant_positions(iid1, suite1, iid2, suite2)
    hits = {key: 0 for key in observed}
    for _ in range(trials):
        chosen = [p for p in positions if rng.getrandbits(1)]
        diffs = ref_differences(*swapped(iid1, suite1, iid2, suite2, chosen))
        for key in hits:
            hits[key] += diffs[key] >= observed[key] - 1e-12
    return {key: (count + 1) / (trials + 1) for key, count in hits.items()}


def ref_binomial_two_sided(successes, n):
    """Exact two-sided binomial test at p = 1/2: both tails (the distribution is symmetric)."""
    low = min(successes, n - successes)
    tail = sum(math.comb(n, k) for k in range(low + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def random_hits(rng, functionalities, cases, filtered=0.2, p=0.6):
    out = {}
    for f in range(functionalities):
        out[f"f{f}"] = [None if rng.random() < filtered else int(rng.random() < p) for _ in range(cases)]
    return out


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_docstring_examples_run(tester):
    tester.run_docstring_examples(at_least=7)


@pytest.mark.parametrize("seed", range(5))
def test_scores_match_reference_on_random_inputs(tester, seed):
    rng = np.random.default_rng(seed)
    iid = rng.integers(0, 2, int(rng.integers(5, 300))).tolist()
    suite = {s: random_hits(rng, int(rng.integers(1, 8)), int(rng.integers(1, 30))) for s in SCENARIOS}
    # NaN is another way to say "filtered".
    suite["seen"]["f0"] = [float("nan") if h is None else h for h in suite["seen"]["f0"]]
    suite["seen"]["f0"][0] = float("nan")

    def reference(iid_hits, suite_hits):
        iid_score = sum(iid_hits) / len(iid_hits)
        suite_scores = {s: ref_suite_score(suite_hits[s]) for s in SCENARIOS}
        g = {s: ref_g(iid_score, suite_scores[s]) for s in SCENARIOS}
        return {"iid_score": iid_score, "suite_score": suite_scores, "g_score": g,
                "g_score_mean": sum(g.values()) / len(g)}

    tester.check_against_reference({"iid_hits": iid, "suite_hits": suite}, reference, rel=1e-9, exact_keys=True)


def test_zero_scores_and_filtered_functionalities(g_score):
    suite = {"seen": {"a": [1, 1, 0, 0], "all filtered": [None, float("nan")]}}
    result = g_score.compute(iid_hits=[0, 0, 0], suite_hits=suite)
    assert result["g_score"] == {"seen": 0.0} and result["iid_score"] == 0.0
    # A functionality with no defined test case leaves the suite score unchanged.
    assert result["suite_score"] == {"seen": 0.5}
    result = g_score.compute(iid_hits=[1, 1], suite_hits={"func": {"a": [0, None]}})
    assert result["g_score"] == {"func": 0.0}
    with pytest.raises(ValueError, match=r"scenario 'type' of suite_hits has no functionality with a non-filtered test case"):
        g_score.compute(iid_hits=[1], suite_hits={"type": {"a": [None], "b": []}})


def test_harmonic_mean_matches_scipy(g_score):
    rng = np.random.default_rng(0)
    a, b = rng.random(50), rng.random(50)
    assert np.allclose(g_score.harmonic_mean(a, b), [hmean([x, y]) for x, y in zip(a, b)])
    assert g_score.harmonic_mean(0.0, 0.7) == 0.0 and g_score.harmonic_mean(0.0, 0.0) == 0.0
    assert np.isnan(g_score.harmonic_mean(np.nan, 0.5))


TINY_CASES = [
    # (iid system, iid baseline, suite system, suite baseline): at most 12 discordant items
    ([1, 1, 0, 1, 1, 0], [0, 1, 0, 0, 1, 1],
     {"seen": {"a": [1, 0, 1], "b": [1, None]}, "func": {"a": [1, 1]}},
     {"seen": {"a": [0, 0, 1], "b": [0, 1]}, "func": {"a": [0, 1]}}),
    ([1, 1, 1, 1, 0], [1, 0, 0, 1, 0],
     {"type": {"x": [1, 1, None, 0], "y": [None]}},
     {"type": {"x": [0, 1, 1, None], "y": [1]}}),
    ([0, 1, 0, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 1, 1, 0],
     {"class": {"x": [1, 0], "y": [1, 1, 0]}},
     {"class": {"x": [0, 1], "y": [None, 1, 1]}}),
]


@pytest.mark.parametrize("case", TINY_CASES)
def test_randomization_p_matches_exact_enumeration(g_score, case):
    iid1, iid2, suite1, suite2 = case
    trials = 20000
    result = g_score.compute(iid_hits=iid1, suite_hits=suite1, baseline_iid_hits=iid2,
                             baseline_suite_hits=suite2, trials=trials, random_state=3)
    exact = exact_permutation_p(iid1, suite1, iid2, suite2)
    assert set(result["p_value"]) == set(exact)
    for key, q in exact.items():
        # Monte Carlo estimate of q: (count + 1) / (trials + 1), within 5 standard errors.
        tolerance = 5 * math.sqrt(q * (1 - q) / trials) + 2 / trials
        assert abs(result["p_value"][key] - q) <= tolerance, (key, result["p_value"][key], q)


def test_randomization_matches_per_item_coin_flips(g_score):
    rng = np.random.default_rng(5)
    iid1 = rng.integers(0, 2, 60).tolist()
    iid2 = [h if rng.random() < 0.7 else 1 - h for h in iid1]
    suite1 = {s: random_hits(rng, 3, 8) for s in ("seen", "func")}
    suite2 = {s: {f: [h if rng.random() < 0.6 else (None if rng.random() < 0.3 else int(rng.random() < 0.4))
                      for h in hits] for f, hits in fs.items()} for s, fs in suite1.items()}
    ours = g_score.compute(iid_hits=iid1, suite_hits=suite1, baseline_iid_hits=iid2, baseline_suite_hits=suite2,
                           trials=10000, random_state=1)["p_value"]
    theirs = coin_flip_p(iid1, suite1, iid2, suite2, trials=3000, seed=1)
    for key in theirs:
        assert abs(ours[key] - theirs[key]) <= 0.04, (key, ours[key], theirs[key])


def test_identical_systems_and_determinism(g_score):
    rng = np.random.default_rng(9)
    iid = rng.integers(0, 2, 400).tolist()
    suite = {s: random_hits(rng, 10, 40) for s in SCENARIOS}
    same_result = g_score.compute(iid_hits=iid, suite_hits=suite, baseline_iid_hits=iid, baseline_suite_hits=suite)
    assert set(same_result["p_value"].values()) == {1.0} and same_result["iid_p_value"] == 1.0

    other_iid = rng.integers(0, 2, 400).tolist()
    other = {s: random_hits(rng, 10, 40, p=0.4) for s in SCENARIOS}
    kwargs = dict(iid_hits=iid, suite_hits=suite, baseline_iid_hits=other_iid, baseline_suite_hits=other)
    first = g_score.compute(**kwargs, random_state=123)
    assert first == g_score.compute(**kwargs, random_state=123)  # 10,000 trials, same seed: same p
    assert first["p_value"] != g_score.compute(**kwargs, trials=500, random_state=124)["p_value"]
    assert all(1 / 10001 <= p <= 1 for p in first["p_value"].values())
    assert_close(first["baseline_g_score"], ref_g_all(other_iid, other), rel=1e-6, exact_keys=True)


@pytest.mark.parametrize("seed", range(6))
def test_binomial_p_matches_exact_sum(tester, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    iid1, iid2 = rng.integers(0, 2, n).tolist(), rng.integers(0, 2, n).tolist()

    def reference(iid_hits, baseline_iid_hits, **_):
        only1 = sum(a == 1 and b == 0 for a, b in zip(iid_hits, baseline_iid_hits))
        only2 = sum(a == 0 and b == 1 for a, b in zip(iid_hits, baseline_iid_hits))
        return {"iid_p_value": 1.0 if only1 + only2 == 0 else ref_binomial_two_sided(only1, only1 + only2)}

    tester.check_against_reference({"iid_hits": iid1, "suite_hits": {"seen": {"a": [1]}}, "baseline_iid_hits": iid2,
                                    "baseline_suite_hits": {"seen": {"a": [1]}}}, reference, rel=1e-9,
                                   options={"trials": 10})


@pytest.mark.parametrize("kwargs, message", [
    ({"baseline_iid_hits": [1, 0]}, r"a baseline needs both baseline_iid_hits and baseline_suite_hits"),
    ({"baseline_iid_hits": [1, 0], "baseline_suite_hits": {"seen": {"a": [1, 0]}}},
     r"iid_hits has 3 items but baseline_iid_hits has 2"),
    ({"baseline_iid_hits": [1, 0, 0], "baseline_suite_hits": {"seen": {"a": [1, 0], "b": [1]}}},
     r"functionalities only in suite_hits: \[\]; only in baseline_suite_hits: \['b'\]"),
    ({"baseline_iid_hits": [1, 0, 0], "baseline_suite_hits": {"seen": {"a": [1]}}},
     r"functionality 'a': 2 test cases in suite_hits but 1 in baseline_suite_hits"),
    ({"baseline_iid_hits": [1, 0, 0], "baseline_suite_hits": {"func": {"a": [1, 0]}}},
     r"suite_hits has scenarios \['seen'\] but baseline_suite_hits has \['func'\]"),
    ({"baseline_iid_hits": [1, 0, 0], "baseline_suite_hits": {"seen": {"a": [1, 0]}}, "trials": 0},
     r"trials must be a positive integer, got 0"),
    ({"suite_hits": {"held-out": {"a": [1]}}}, r"unknown scenario 'held-out' in suite_hits; allowed: standard, seen, func, class, type"),
    ({"suite_hits": {"seen": {"a": [1, 2]}}}, r"hit 1 of 'a' in suite_hits\['seen'\] must be 1 \(passed\), 0 \(failed\) or None/NaN"),
    ({"suite_hits": {"seen": [1, 0]}}, r"suite_hits\['seen'\] must be a non-empty dict"),
    ({"iid_hits": [1, 0.5, 0]}, r"iid_hits must hold only 0 and 1; item 1 is 0.5"),
])
def test_bad_input_is_named(tester, kwargs, message):
    tester.assert_refused({"iid_hits": [1, 0, 1], "suite_hits": {"seen": {"a": [1, 0]}}, **kwargs}, message)


def test_missing_suite_hits(tester):
    tester.assert_refused({"iid_hits": [1, 0]}, r"suite_hits is required")
