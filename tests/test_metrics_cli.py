"""``resplit pass-rate`` and ``resplit concurrence``: the JSON contract, file formats, errors."""

import gzip
import json
from pathlib import Path

import pytest

from split_builders.cli import main

REPO = Path(__file__).resolve().parent.parent


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# A sentiment-like suite: an MFT (label positive) and an INV test with two test cases.
TOY_SUITE = {
    "suite": "toy",
    "tests": [
        {"name": "positive words", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all",
         "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 2, "meta": None,
         "data": ["good", "awful", "fine"], "checklist_n500_run_idxs": [2, 0]},
        {"name": "typos", "type": "INV", "capability": "Robustness", "agg_fn": "all_except_first",
         "expectation": {"fn": "inv", "tolerance": 0.1}, "nested": True, "labels": None, "meta": None,
         "data": [["great", "graet"], ["bad", "bda"]], "checklist_n500_run_idxs": None},
    ],
}


@pytest.fixture
def toy_suite(tmp_path):
    path = tmp_path / "toy_suite.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(TOY_SUITE, handle)
    return path


def write_lines(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_pass_rate_reproduces_squad_reference(capsys, shared):
    output = run_json(capsys, "pass-rate",
                      "--suite", shared / "data/checklist/squad_suite.json.gz",
                      "--predictions", shared / "data/checklist/squad_bert_predictions.txt.gz",
                      "--format", "pred_only")
    expected = json.loads((shared / "reference/checklist/squad_bert_expected.json").read_text())
    assert set(output) == {"functionalities", "pass_rate"}
    assert list(output["functionalities"]) == list(expected)
    for name, reference in expected.items():
        got = output["functionalities"][name]
        assert set(got) == {"passed", "failed", "filtered", "pass_rate"}
        assert (got["passed"], got["failed"], got["filtered"]) == (reference["passed"], reference["failed"], reference["filtered"])
        assert got["pass_rate"] == pytest.approx(100 - reference["fail_rate"])
    assert output["pass_rate"] == pytest.approx(sum(100 - r["fail_rate"] for r in expected.values()) / len(expected))


def test_pass_rate_binary_sentiment(capsys, tmp_path, toy_suite):
    # Classes: 0.9 positive, 0.2 negative, 0.5 neutral -> 1 of 3 positive words pass.
    # typos: (0.9, 0.85) stays positive: pass; (0.1, 0.6) turns neutral and p(negative)
    # drops from 0.9 to 0: fail.
    lines = ["0.9", "0.2", "0.5", "0.9", "0.85", "0.1", "0.6"]
    output = run_json(capsys, "pass-rate", "--suite", toy_suite, "--predictions",
                      write_lines(tmp_path, "p.txt", lines), "--format", "binary_conf", "--sentiment-binary")
    assert output["functionalities"]["positive words"] == {"passed": 1, "failed": 2, "filtered": 0,
                                                           "pass_rate": pytest.approx(100 / 3)}
    assert output["functionalities"]["typos"] == {"passed": 1, "failed": 1, "filtered": 0, "pass_rate": 50.0}
    assert output["pass_rate"] == pytest.approx((100 / 3 + 50) / 2)
    # The same probabilities as two-column softmax lines give the same result.
    softmax = write_lines(tmp_path, "s.txt", [f"{1 - float(p)!r} {p}" for p in lines])
    assert run_json(capsys, "pass-rate", "--suite", toy_suite, "--predictions", softmax, "--format", "softmax",
                    "--sentiment-binary") == output


def test_pass_rate_n500_sample_is_detected(capsys, tmp_path, toy_suite):
    # The n500 sample runs test cases 2 and 0 of the first test (in that order), all of the second.
    lines = ["2", "0", "2", "2", "0", "0"]
    output = run_json(capsys, "pass-rate", "--suite", toy_suite, "--predictions",
                      write_lines(tmp_path, "n500.txt", lines), "--format", "pred_only")
    assert output["functionalities"]["positive words"]["passed"] == 1
    assert output["functionalities"]["positive words"]["failed"] == 1
    assert output["functionalities"]["typos"]["passed"] == 2


def test_pass_rate_undefined_rate_is_null(capsys, tmp_path):
    suite = {"tests": [{"name": "reducers", "type": "DIR", "capability": "Vocabulary", "agg_fn": "all_except_first",
                        "expectation": {"fn": "monotonic", "increasing": False, "label": None, "tolerance": 0.1},
                        "nested": True, "labels": None, "meta": None, "data": [["a", "b"]]}]}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    output = run_json(capsys, "pass-rate", "--suite", path, "--predictions",
                      write_lines(tmp_path, "p.txt", ["0.01 0.99", "0.5 0.5"]), "--format", "softmax")
    assert output == {"functionalities": {"reducers": {"passed": 0, "failed": 0, "filtered": 1, "pass_rate": None}},
                      "pass_rate": None}


def test_pass_rate_errors(capsys, tmp_path, toy_suite):
    code, _, err = run(capsys, "pass-rate", "--suite", toy_suite, "--predictions",
                       write_lines(tmp_path, "short.txt", ["0"] * 5), "--format", "pred_only")
    assert code == 2
    assert "resplit pass-rate: error:" in err and "Traceback" not in err
    assert "7 examples in its 'all' test cases but 5 predictions" in err
    assert "6 examples in its 'n500' test cases but 5 predictions" in err
    code, _, err = run(capsys, "pass-rate", "--suite", toy_suite, "--predictions",
                       write_lines(tmp_path, "bad.txt", ["0.5 0.6"] * 7), "--format", "softmax")
    assert code == 2 and "prediction line 1 sums to 1.1, not 1" in err
    code, _, err = run(capsys, "pass-rate", "--suite", tmp_path / "missing.json", "--predictions",
                       write_lines(tmp_path, "p.txt", ["0"]), "--format", "pred_only")
    assert code == 2 and "cannot read" in err and "missing.json" in err


def test_pass_rate_table_output(capsys, tmp_path, toy_suite):
    code, out, _ = run(capsys, "pass-rate", "--suite", toy_suite, "--predictions",
                       write_lines(tmp_path, "p.txt", ["2"] * 7), "--format", "pred_only")
    assert code == 0
    assert "positive words" in out and "Robustness" in out and "suite score" in out


def write_golden_csv(shared, tmp_path, seeds=True):
    golden = json.loads((shared / "reference/concurrence/golden.json").read_text())
    lines = ["model,benchmark,seed,score"]
    for benchmark in ("A", "B"):
        for model, scores in golden[benchmark].items():
            for seed, score in zip(golden["seeds"], scores):
                lines.append(f"{model},{benchmark},{seed if seeds else ''},{score}")
            if not seeds:
                lines = lines[: len(lines) - len(scores) + 1]  # one run per model
    path = tmp_path / "results.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, golden["expected"]


def test_concurrence_json_contract(capsys, shared, tmp_path):
    path, expected = write_golden_csv(shared, tmp_path)
    output = run_json(capsys, "concurrence", "--results", path)
    assert output == {"A|B": pytest.approx(expected["kendall_tau_b"], abs=1e-6),
                      "A|A": pytest.approx(expected["self_concurrence_A"], abs=1e-6),
                      "B|B": pytest.approx(expected["self_concurrence_B"], abs=1e-6)}
    pearson = run_json(capsys, "concurrence", "--results", path, "--method", "pearson")
    assert pearson["A|B"] == pytest.approx(expected["pearson"], abs=1e-6)


def test_concurrence_without_seeds_has_no_self_concurrence(capsys, shared, tmp_path):
    path, _ = write_golden_csv(shared, tmp_path, seeds=False)
    assert set(run_json(capsys, "concurrence", "--results", path)) == {"A|B"}


def test_concurrence_bootstrap_and_heatmap(capsys, shared, tmp_path):
    path, expected = write_golden_csv(shared, tmp_path)
    heatmap = tmp_path / "matrix.png"
    output = run_json(capsys, "concurrence", "--results", path, "--bootstrap", "100", "--seed", "3",
                      "--heatmap", heatmap)
    assert set(output) == {"A|B", "A|A", "B|B"}
    low, high = output["A|B"]["confidence_interval"]
    assert output["A|B"]["concurrence"] == pytest.approx(expected["kendall_tau_b"], abs=1e-6)
    assert -1 <= low <= high <= 1
    assert heatmap.read_bytes()[:4] == b"\x89PNG"
    code, out, _ = run(capsys, "concurrence", "--results", path)
    assert code == 0 and out.startswith("A|B  0.7738")


def test_concurrence_errors(capsys, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("model,benchmark,score\nx,A,0.1\n")
    code, _, err = run(capsys, "concurrence", "--results", path)
    assert code == 2 and "results field 'seed' not found in" in err and "'model', 'benchmark', 'score'" in err
    path.write_text("model,benchmark,seed,score\nx,A,,0.1\ny,A,,0.2\nx,B,,0.3\nz,B,,0.4\n")
    code, _, err = run(capsys, "concurrence", "--results", path)
    assert code == 2 and "only in 'A': ['y']; only in 'B': ['z']" in err
    path.write_text("model,benchmark,seed,score\nx,A,,high\n")
    code, _, err = run(capsys, "concurrence", "--results", path)
    assert code == 2 and "line 2: score 'high' is not a number" in err


def test_metrics_folder_is_configurable(capsys, shared, tmp_path, monkeypatch):
    path, expected = write_golden_csv(shared, tmp_path)
    monkeypatch.setenv("RESPLIT_METRICS_DIR", str(tmp_path / "nowhere"))
    code, _, err = run(capsys, "concurrence", "--results", path)
    assert code == 2 and "$RESPLIT_METRICS_DIR" in err and "nowhere" in err and "is not a folder" in err
    # --metrics-dir wins over the environment.
    output = run_json(capsys, "concurrence", "--results", path, "--metrics-dir", REPO / "metrics")
    assert output["A|B"] == pytest.approx(expected["kendall_tau_b"], abs=1e-6)
    code, _, err = run(capsys, "concurrence", "--results", path, "--metrics-dir", tmp_path)
    assert code == 2 and "has no concurrence.py" in err


def test_nan_values_print_as_null(capsys, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("model,benchmark,seed,score\nx,A,,0.5\ny,A,,0.5\nx,B,,0.1\ny,B,,0.9\n")
    output = run_json(capsys, "concurrence", "--results", path)
    assert output == {"A|B": None}  # a constant benchmark ranks nothing: NaN, printed as null


# A UTF-8 byte-order mark (what spreadsheet programs write as "CSV UTF-8") is read transparently by
# every file the metric commands read.

BOM = b"\xef\xbb\xbf"


def with_bom(path, *, gzipped=False):
    data = BOM + path.read_bytes()
    marked = path.with_name("bom-" + path.name + (".gz" if gzipped else ""))
    marked.write_bytes(gzip.compress(data, mtime=0) if gzipped else data)
    return marked


def test_concurrence_results_with_a_byte_order_mark(capsys, shared, tmp_path):
    path, expected = write_golden_csv(shared, tmp_path)
    plain = run_json(capsys, "concurrence", "--results", path, "--bootstrap", "50")
    assert plain["A|B"]["concurrence"] == pytest.approx(expected["kendall_tau_b"], abs=1e-6)
    for marked in (with_bom(path), with_bom(path, gzipped=True)):
        assert marked.read_bytes()[:3] in (BOM, b"\x1f\x8b\x08")
        assert run_json(capsys, "concurrence", "--results", marked, "--bootstrap", "50") == plain


@pytest.mark.parametrize("file_format, lines", [
    ("pred_only", ["2", "0", "2", "2", "2", "0", "0"]),
    ("binary_conf", ["0.9", "0.2", "0.5", "0.9", "0.85", "0.1", "0.6"]),
    ("softmax", ["0.1 0.9", "0.8 0.2", "0.5 0.5", "0.1 0.9", "0.15 0.85", "0.9 0.1", "0.4 0.6"]),
])
def test_pass_rate_predictions_with_a_byte_order_mark(capsys, tmp_path, toy_suite, file_format, lines):
    path = write_lines(tmp_path, "p.txt", lines)
    plain = run_json(capsys, "pass-rate", "--suite", toy_suite, "--predictions", path, "--format", file_format)
    assert plain["functionalities"]["positive words"]["passed"] + plain["functionalities"]["positive words"]["failed"] == 3
    for marked in (with_bom(path), with_bom(path, gzipped=True)):
        assert run_json(capsys, "pass-rate", "--suite", toy_suite, "--predictions", marked,
                        "--format", file_format) == plain


def test_read_predictions_drops_a_byte_order_mark(local_metric):
    """Lines read with encoding="utf-8" keep the mark on the first line; the metric's reader drops it."""
    pass_rate = local_metric("pass_rate")
    assert pass_rate.read_predictions(["\ufeff2", "0"], "pred_only") == ([2, 0], None)
    assert pass_rate.read_predictions(["\ufeff0.25", "0.5"], "binary_conf")[1] == [[0.75, 0.25], [0.5, 0.5]]
    assert pass_rate.read_predictions(["\ufeffGeneva", "Paris"], "pred_only", answers=True)[0] == ["Geneva", "Paris"]
