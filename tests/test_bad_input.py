"""Bad input, as a user would give it, to every builder: each case exits non-zero with one line that
names the problem, no traceback, and nothing at ``--out``. The same class of input behaves the same
way in every command. Faults (concurrent builds) run as real processes. The table at the end holds each
family's own bad inputs (PVI fields and labels, CURRICULUM zips, suites)."""

import csv
import json
import subprocess
import sys
import time
import zipfile

import datasets
import numpy as np
import pytest

from split_builders.api import registry
from split_builders.cli import main

BUILDERS = tuple(registry())  # every registered method: one without a valid source in `inputs` fails
SUITE = {"suite": "toy", "tests": [
    {"name": f"words {i}", "type": ["MFT", "INV", "DIR"][i % 3], "capability": ["Vocabulary", "Robustness"][i % 2],
     "agg_fn": "all", "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 1, "meta": None,
     "data": [f"text {i} {j}" for j in range(8)]} for i in range(4)]}


@pytest.fixture(scope="module")
def inputs(shared, tmp_path_factory):
    """A small valid source for every builder, and the arguments that build it."""
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    labels = ["entailment", "neutral", "contradiction"]
    table = root / "nli.csv"
    table.write_text("premise,hypothesis,gold_label\n" + "".join(
        f"a premise number {i},{'a short' if i % 2 else 'a longer hypothesis'} text {i},{labels[i % 3]}\n"
        for i in range(300)))
    np.save(root / "scores.npy", rng.normal(size=300))
    geo = root / "geo.tsv"
    geo.write_text("\n".join((shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:200]) + "\n")
    suite = root / "suite.json"
    suite.write_text(json.dumps(SUITE))
    return {
        "root": root,
        "likelihood": (table, ["--prompt-field", "premise", "--query-field", "hypothesis", "--label-field",
                               "gold_label", "--scores", str(root / "scores.npy"), "--dev-size", "30",
                               "--test-size", "30"]),
        "tmcd": (geo, ["--train-size", "100", "--iterations", "50"]),
        "pvi": (table, ["--text-fields", "premise,hypothesis", "--label-field", "gold_label", "--folds", "2",
                        "--cache-dir", str(root / "pvi-cache")]),
        "curriculum": (shared / "data" / "curriculum", ["--phenomena", "verbnet"]),
        "behavioural": (suite, []),
    }


def run(builder, source, extra, out, capsys):
    code = main([builder, "--source", str(source), *extra, "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.err


def refused(code, err, out, *expected):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code != 0, "bad input was accepted"
    assert "Traceback" not in err and len(lines) == 1, err
    for text in expected:
        assert text in err, (text, err)
    assert not out.exists(), "something was written at --out"


@pytest.mark.parametrize("builder", BUILDERS)
def test_a_valid_source_builds(builder, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    code, err = run(builder, source, extra, tmp_path / "out", capsys)
    assert code == 0, err


@pytest.mark.parametrize("builder", BUILDERS)
def test_a_missing_source(builder, inputs, tmp_path, capsys):
    _, extra = inputs[builder]
    missing = tmp_path / "no-such-source.csv"
    refused(*run(builder, missing, extra, tmp_path / "out", capsys), tmp_path / "out", "no-such-source")


SUFFIX = {"likelihood": ".csv", "tmcd": ".tsv", "pvi": ".csv", "behavioural": ".json"}


@pytest.mark.parametrize("builder", [b for b in BUILDERS if b in SUFFIX])
def test_an_empty_source_file(builder, inputs, tmp_path, capsys):
    _, extra = inputs[builder]
    empty = tmp_path / f"empty{SUFFIX[builder]}"
    empty.write_bytes(b"")
    refused(*run(builder, empty, extra, tmp_path / "out", capsys), tmp_path / "out", "empty")


@pytest.mark.parametrize("builder", [b for b in BUILDERS if b in SUFFIX])
def test_a_source_that_is_not_utf8(builder, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    data = source.read_bytes()
    newline = data.find(b"\n", len(data) // 2)  # a byte that is not UTF-8 on a line in the middle
    cut = newline + 1 if newline >= 0 else data.index(b" ", len(data) // 2) + 1
    latin = tmp_path / f"latin1{source.suffix}"
    latin.write_bytes(data[:cut] + b"caf\xe9 " + data[cut:])
    line = data[:cut].count(b"\n") + 1
    refused(*run(builder, latin, extra, tmp_path / "out", capsys), tmp_path / "out", "not UTF-8", f"line {line}")


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("flag, value, expected", [("--seed", "-1", "seed"), ("--seed", str(2**32), "seed"),
                                                   ("--limit", "0", "limit")])
def test_bad_common_options(builder, flag, value, expected, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    refused(*run(builder, source, [*extra, flag, value], tmp_path / "out", capsys), tmp_path / "out", expected)


@pytest.mark.parametrize("builder", BUILDERS)
def test_an_output_parent_that_is_a_file(builder, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    (tmp_path / "file").write_text("x")
    code, err = run(builder, source, extra, tmp_path / "file" / "out", capsys)
    assert code != 0 and "is a file" in err and "Traceback" not in err


@pytest.mark.parametrize("builder", ["likelihood", "tmcd"])
@pytest.mark.parametrize("n_scores", [299, 301, 10_000])
def test_scores_of_the_wrong_length(builder, n_scores, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    scores = tmp_path / "scores.npy"
    np.save(scores, np.zeros(n_scores))
    if builder == "likelihood":
        extra = [*extra[: extra.index("--scores")], "--scores", str(scores), *extra[extra.index("--scores") + 2:]]
        rows = 300
    else:
        extra = [*extra, "--scores", str(scores)]
        rows = 200
    if n_scores == 299 and builder == "tmcd":
        n_scores = 199
        np.save(scores, np.zeros(n_scores))
    refused(*run(builder, source, extra, tmp_path / "out", capsys), tmp_path / "out", f"{n_scores} values", f"{rows} rows")


@pytest.mark.parametrize("builder", ["likelihood", "tmcd"])
def test_scores_that_are_not_numbers(builder, inputs, tmp_path, capsys):
    source, extra = inputs[builder]
    scores = tmp_path / "scores.npy"
    np.save(scores, np.array(["a"] * 300))
    extra = [e for e in extra if not e.endswith("scores.npy") and e != "--scores"] + ["--scores", str(scores)]
    refused(*run(builder, source, extra, tmp_path / "out", capsys), tmp_path / "out", "scores file")


def test_a_tsv_with_a_stray_quote_gives_each_row_its_own_score(inputs, tmp_path, capsys, hf_cache):
    quote = ' "quoted'  # an opening quote that never closes: pandas' default would merge the lines after it
    lines = ["premise\thypothesis\tgold_label"] + [
        f"premise {i}{quote if i == 7 else ''}\thypothesis {i} {'x ' * (i % 5)}\t{['a', 'b', 'c'][i % 3]}"
        for i in range(300)]
    source = tmp_path / "quote.tsv"
    source.write_text("\n".join(lines) + "\n")
    scores = np.arange(300, dtype=np.float64)
    np.save(tmp_path / "s.npy", scores)
    out = tmp_path / "out"
    code, err = run("likelihood", source, ["--prompt-field", "premise", "--query-field", "hypothesis",
                                           "--label-field", "gold_label", "--scores", str(tmp_path / "s.npy")],
                    out, capsys)
    assert code == 0, err
    rows = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    for split in rows.values():
        assert [int(s) for s in split["score"]] == split["source_id"]  # no row took another row's score
    assert sum(len(split) for split in rows.values()) == 300


def test_a_tsv_line_missing_a_tab(inputs, tmp_path, capsys):
    source = tmp_path / "broken.tsv"
    source.write_text("premise\thypothesis\tgold_label\na\tb\tc\nd e\tf\n")
    refused(*run("likelihood", source, ["--query-field", "hypothesis"], tmp_path / "out", capsys),
            tmp_path / "out", "line 3", "2 tab-separated field(s)")


def test_an_empty_evaluation_split_is_left_out(inputs, tmp_path, capsys, hf_cache):
    source, extra = inputs["likelihood"]
    extra = [*extra[: extra.index("--dev-size")], "--dev-size", "0", "--test-size", "30"]
    code, err = run("likelihood", source, extra, tmp_path / "out", capsys)
    assert code == 0, err
    loaded = datasets.load_dataset(str(tmp_path / "out"), "ll_split", cache_dir=hf_cache)
    assert set(loaded) == {"train", "test"} and len(loaded["test"]) == 30


def _command(builder, inputs, out):
    source, extra = inputs[builder]
    return [sys.executable, "-m", "split_builders.cli", builder, "--source", str(source), *extra, "--out", str(out),
            "--no-progress"]


@pytest.mark.parametrize("builder", ["likelihood", "behavioural"])
def test_two_builds_into_one_out_at_once(builder, inputs, tmp_path, hf_cache):
    out = tmp_path / "out"
    started = [subprocess.Popen(_command(builder, inputs, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in started]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0 and codes[1] != 0, results
    (failed_err,) = [err for code, err in results if code != 0]
    assert "Traceback" not in failed_err and ("another build" in failed_err or "exists" in failed_err)
    config = "seen" if builder == "behavioural" else "ll_split"
    assert len(datasets.load_dataset(str(out), config, split="train", cache_dir=hf_cache)) > 0


def test_a_killed_build_leaves_nothing_that_the_next_build_keeps(inputs, tmp_path, hf_cache):
    """A build killed while it runs leaves no folder at --out; the next build completes and removes
    the staging folder it left."""
    out = tmp_path / "out"
    process = subprocess.Popen(_command("tmcd", inputs, out)[:-1] + ["--iterations", "50000000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = tmp_path / ".out.lock"
    deadline = time.monotonic() + 120
    while not (lock.is_file() and lock.read_text().strip() == str(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.2)  # wait until the build holds its lock (it is then past every check)
    time.sleep(1)
    process.kill()
    process.wait()
    assert not out.exists()
    done = subprocess.run(_command("tmcd", inputs, out), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob(".out.tmp-*")) and len(
        datasets.load_dataset(str(out), "tmcd", split="train", cache_dir=hf_cache)) == 100


@pytest.mark.parametrize("builder", BUILDERS)
def test_bad_input_through_the_real_command_prints_no_traceback(builder, inputs, tmp_path):
    source, extra = inputs[builder]
    done = subprocess.run([sys.executable, "-m", "split_builders.cli", builder, "--source",
                           str(tmp_path / "missing.json"), *extra, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "missing.json" in done.stderr
    assert not (tmp_path / "out").exists()


# -- each family's own bad inputs -------------------------------------------------------------------

PVI = ["--text-fields", "premise,hypothesis", "--label-field", "gold_label", "--folds", "2"]


def _csv(path, labels):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["premise", "hypothesis", "gold_label"])
        writer.writerows((f"p{i}", f"h{i}", label) for i, label in enumerate(labels))
    return path


def _curriculum(folder, train_text=None, train=None, validation=None):
    """A CURRICULUM folder with one phenomenon, boolean.zip."""
    rows = [{"premise": f"p{i}", "hypothesis": "h", "gold_label": ("entailed", "not-entailed")[i % 2]}
            for i in range(10)]
    folder.mkdir()
    with zipfile.ZipFile(folder / "boolean.zip", "w") as archive:
        archive.writestr("boolean/train.jsonl", train_text if train_text is not None
                         else "".join(json.dumps(r) + "\n" for r in (rows if train is None else train)))
        archive.writestr("boolean/val.jsonl", "".join(json.dumps(r) + "\n" for r in (validation or rows)))
    return folder


def _cases(tmp_path, shared):
    files = tmp_path / "in"
    files.mkdir()
    (files / "empty.csv").write_bytes(b"")
    (files / "empty.json").write_bytes(b"")
    (files / "latin1.csv").write_bytes(b"premise,hypothesis,gold_label\ncaf\xe9,b,x\n")
    (files / "latin1.json").write_bytes(b'{"suite": "caf\xe9"}')
    (files / "notsuite.json").write_text('{"hello": [1, 2]}')
    one = _csv(files / "one.csv", ["yes"] * 10)
    two = _csv(files / "two.csv", ["yes"] * 9 + ["no"])
    curriculum = shared / "data" / "curriculum"
    suite = shared / "data" / "checklist" / "sentiment_suite.json.gz"
    rows = [{"premise": f"p{i}", "hypothesis": "h", "gold_label": "entailed"} for i in range(10)]
    return {
        # a missing source
        "pvi-missing": (["pvi", "--source", str(files / "nope.csv"), *PVI], "is neither an existing file"),
        "curriculum-missing": (["curriculum", "--data", str(files / "nope")], "does not exist"),
        "behavioural-missing": (["behavioural", "--source", str(files / "nope.json")], "no such file"),
        # an empty file
        "pvi-empty": (["pvi", "--source", str(files / "empty.csv"), *PVI], "is empty"),
        "curriculum-file": (["curriculum", "--data", str(files / "empty.csv")], "is a file; give the folder"),
        "curriculum-empty-split": (["curriculum", "--data", str(_curriculum(tmp_path / "c1", train_text=""))],
                                   "train.jsonl holds no rows"),
        "behavioural-empty": (["behavioural", "--source", str(files / "empty.json")], "is empty"),
        # bytes that are not UTF-8
        "pvi-latin1": (["pvi", "--source", str(files / "latin1.csv"), *PVI], "line 2 is not UTF-8 (byte 0xe9"),
        "curriculum-latin1": (["curriculum", "--data", str(_curriculum(
            tmp_path / "c2", train_text=b'{"premise": "caf\xe9", "hypothesis": "h", "gold_label": "entailed"}\n'))],
            "train.jsonl line 1 is not UTF-8 (byte 0xe9"),
        "behavioural-latin1": (["behavioural", "--source", str(files / "latin1.json")],
                               "line 1 is not UTF-8 (byte 0xe9"),
        # a field that does not exist: the available ones are listed
        "pvi-field": (["pvi", "--source", str(two), "--text-fields", "premise,hypo", "--label-field", "gold_label"],
                      "text field 'hypo' not found in"),
        "curriculum-field": (["curriculum", "--data",
                              str(_curriculum(tmp_path / "c3", train=rows[:3] + [{"premise": "x"}]))],
                             "row 4 has no 'gold_label', 'hypothesis' field; fields: premise"),
        "curriculum-phenomenon": (["curriculum", "--data", str(curriculum), "--phenomena", "nosuch"],
                                  "unknown phenomena ['nosuch']; available: analytic"),
        "behavioural-functionality": (["behavioural", "--source", str(suite), "--functionality", "nosuch"],
                                      "unknown functionality 'nosuch'; valid functionality names:"),
        # a label column with a single class
        "pvi-one-class": (["pvi", "--source", str(one), *PVI], "PVI needs at least two distinct labels, found 1"),
        "curriculum-one-class": (["curriculum", "--data",
                                  str(_curriculum(tmp_path / "c4", train=rows, validation=rows)),
                                  "--pvi", "--folds", "2"], "PVI needs at least two distinct labels, found 1"),
        # more folds than a label's rows
        "pvi-folds": (["pvi", "--source", str(two), *PVI[:4], "--folds", "3"],
                      "every label needs at least 3 rows for 3-fold cross-fitting; the rarest has 1"),
        "curriculum-folds": (["curriculum", "--data", str(curriculum), "--phenomena", "verbnet", "--pvi",
                              "--folds", "100000"], "every label needs at least 100000 rows"),
        # --limit 0
        "pvi-limit": (["pvi", "--source", str(two), *PVI, "--limit", "0"], "limit must be a positive integer"),
        "curriculum-limit": (["curriculum", "--data", str(curriculum), "--limit", "0"],
                             "limit must be a positive integer"),
        "behavioural-limit": (["behavioural", "--source", str(suite), "--limit", "0"],
                              "limit must be an integer >= 3, got 0"),
        # JSON that is not a suite (nor a table)
        "behavioural-not-a-suite": (["behavioural", "--source", str(files / "notsuite.json")],
                                    "is not a CheckList suite: expected a JSON object with a 'tests' list"),
        "pvi-not-a-table": (["pvi", "--source", str(files / "notsuite.json"), *PVI],
                            "expected a JSON list of objects or JSON lines"),
        # --dedupe where the method defines no duplicates
        "behavioural-dedupe": (["behavioural", "--source", str(suite), "--dedupe"], "defines no duplicate rows"),
        "curriculum-dedupe": (["curriculum", "--data", str(curriculum), "--phenomena", "verbnet", "--dedupe"],
                              "defines no duplicate rows"),
    }


def test_bad_input_is_one_line_exit_2_and_nothing_written(shared, tmp_path, capsys):
    failures = []
    for name, (args, message) in _cases(tmp_path, shared).items():
        out = tmp_path / "out" / name
        cache = ["--cache-dir", str(tmp_path / "cache")] if args[0] == "pvi" or "--pvi" in args else []
        code = main([*args, *cache, "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err.strip()
        if code != 2 or message not in err or len(err.splitlines()) != 1 or "Traceback" in err or out.exists():
            failures.append(f"{name}: exit {code}, out exists {out.exists()}: {err[-300:]!r}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("builder", BUILDERS)
def test_a_boolean_option_given_as_text_is_refused_not_read_as_true(builder):
    import dataclasses
    import typing

    from split_builders.errors import InvalidParameterError

    method = registry()[builder]
    hints = typing.get_type_hints(method.Options)
    flags = [f.name for f in dataclasses.fields(method.Options) if hints[f.name] is bool]
    assert "overwrite" in flags and "dedupe" in flags
    for name in flags:
        with pytest.raises(InvalidParameterError, match=f"{name} must be true or false, got 'false'"):
            method.Options(source="x", out="o", **{name: "false"})
