"""Bad input, as a user would give it, to every builder: each case exits non-zero with one line that
names the problem, no traceback, and nothing at ``--out``. The same class of input behaves the same
way in every command. Faults (concurrent builds) run as real processes. The tests of every builder run over
``registry()`` from each method's own example arguments (``family_args``), so a registered method is covered
with no table edited; the table at the end holds each family's own bad inputs (PVI fields and labels,
CURRICULUM zips, suites)."""

import csv
import gzip
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import datasets
import numpy as np
import pytest

from conftest import FAMILIES, cli_command
from split_builders.api import registry
from split_builders.cli import main

BUILDERS = FAMILIES  # every registered method, built from its own example arguments
SUITE = {"suite": "toy", "tests": [
    {"name": f"words {i}", "type": ["MFT", "INV", "DIR"][i % 3], "capability": ["Vocabulary", "Robustness"][i % 2],
     "agg_fn": "all", "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 1, "meta": None,
     "data": [f"text {i} {j}" for j in range(8)]} for i in range(4)]}


@pytest.fixture(scope="module")
def inputs(shared, tmp_path_factory):
    """Small valid sources of some families' own tests (given scores, concurrent and killed builds)."""
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
        "behavioural": (suite, []),
    }


def example(family_args, builder) -> tuple:
    """``(source, other arguments)`` of a builder's example arguments (its ``--source`` taken out)."""
    args = family_args[builder]
    assert args is not None, f"{builder} declares no example_arguments"
    at = args.index("--source")
    return Path(args[at + 1]), [*args[:at], *args[at + 2:]]


def _plain_source(source: Path) -> tuple:
    """The bytes and suffix of a source file as text (a ``.gz`` file decompressed)."""
    if source.suffix == ".gz":
        return gzip.decompress(source.read_bytes()), Path(source.stem).suffix
    return source.read_bytes(), source.suffix


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
def test_a_valid_source_builds(builder, family_releases):
    """The example arguments the other cases spoil build a release (the session's shared one)."""
    assert (family_releases[builder] / "README.md").is_file()


# A missing source and bad common options (--seed -1, --seed 2**32, --limit 0), for every registered method: the
# ``bad_input`` check of split_builders.testing (tests/test_registered_methods.py).


# An empty source file and one that is not UTF-8 (where a method's example source is one file), and an output parent
# that is a file, for every registered method: the ``bad_input`` and ``existing_out`` checks of split_builders.testing.


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
    while not (lock.is_file() and lock.read_text().split()[:1] == [str(process.pid)]) and time.monotonic() < deadline:
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
def test_bad_input_through_the_real_command_prints_no_traceback(builder, family_args, tmp_path):
    source, extra = example(family_args, builder)
    done = subprocess.run([*cli_command(builder), builder, "--source",
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
        "pvi-missing": (["pvi", "--source", str(files / "nope.csv"), *PVI], "file not found"),
        "curriculum-missing": (["curriculum", "--data", str(files / "nope")], "does not exist"),
        "behavioural-missing": (["behavioural", "--source", str(files / "nope.json")], "file not found"),
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
                            "is an object, not a table: expected a JSON list of objects"),
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


# -- one policy for row-level defects, typed options, paths, extra files (issue 25) -----------------

NLI = ["entailment", "neutral", "contradiction"]
LL = ["--prompt-field", "premise", "--query-field", "hypothesis", "--label-field", "gold_label",
      "--validation-size", "30", "--test-size", "30"]


def _nli_rows(n=300):
    return [{"premise": f"a premise number {i}", "hypothesis": f"hypothesis {i} " + "word " * (i % 7),
             "gold_label": NLI[i % 3]} for i in range(n)]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def defects(tmp_path_factory, shared):
    """One file per kind of row-level defect (300 rows, NLI-shaped), and scores for them."""
    root = tmp_path_factory.mktemp("defects")
    rows = _nli_rows()
    files = {
        "null-label": _jsonl(root / "null.jsonl", [{**r, "gold_label": None if i in (4, 7) else r["gold_label"]}
                                                   for i, r in enumerate(rows)]),
        "mixed-label": _jsonl(root / "mixed.jsonl", [{**r, "gold_label": i % 2 if i % 3 else str(i % 2)}
                                                     for i, r in enumerate(rows)]),
        "list-label": _jsonl(root / "listlabel.jsonl", [{**r, "gold_label": [r["gold_label"]]} for r in rows]),
        "number-text": _jsonl(root / "numtext.jsonl", [{**r, "hypothesis": i} for i, r in enumerate(rows)]),
        "list-text": _jsonl(root / "listtext.jsonl", [{**r, "hypothesis": r["hypothesis"].split()} for r in rows]),
        "list-of-lists": root / "lists.json",
        "list-line": root / "listline.jsonl",
        "scalar": root / "scalar.json",
        "duplicate-column": root / "dup.csv",
    }
    files["list-of-lists"].write_text(json.dumps([list(r.values()) for r in rows]))
    files["list-line"].write_text("".join(json.dumps(r) + "\n" for r in rows[:10]) + "[1, 2]\n")
    files["scalar"].write_text("300")
    files["duplicate-column"].write_text("premise,hypothesis,hypothesis,gold_label\n" + "".join(
        f"{r['premise']},{r['hypothesis']},other {i},{r['gold_label']}\n" for i, r in enumerate(rows)))
    files["one-row-classes"] = _jsonl(root / "classes.jsonl", [{**r, "gold_label": f"class {i}"}
                                                                for i, r in enumerate(rows[:120])])
    files["identical-texts"] = _jsonl(root / "same.jsonl", [{"premise": "same", "hypothesis": "same",
                                                             "gold_label": NLI[i % 2]} for i in range(40)])
    np.save(root / "scores120.npy", np.random.default_rng(0).normal(size=120))
    np.save(root / "scores.npy", np.random.default_rng(0).normal(size=300))
    np.savez(root / "scores.npz", scores=np.zeros(300))
    geo = root / "geo.tsv"
    geo.write_text("\n".join((shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:200]) + "\n")
    curriculum_rows = [{"premise": f"p{i}", "hypothesis": f"h{i}", "gold_label": ("entailed", "not-entailed")[i % 2]}
                       for i in range(20)]
    for name, change in {"null": lambda i, r: {**r, "gold_label": None if i == 3 else r["gold_label"]},
                         "list": lambda i, r: {**r, "gold_label": [r["gold_label"]]},
                         "number": lambda i, r: {**r, "hypothesis": i}}.items():
        changed = [change(i, r) for i, r in enumerate(curriculum_rows)]
        files[f"curriculum-{name}"] = _curriculum(root / f"curriculum-{name}", train=changed, validation=changed)
    return {"root": root, "geo": geo, "scores": root / "scores.npy", **files}


def _defect_cases(d):
    """name -> (arguments, texts the one line must hold), for every builder that reads such input."""
    scores = ["--scores", str(d["scores"])]
    likelihood = lambda key, *more: ["likelihood", "--source", str(d[key]), *LL, *scores, *more]  # noqa: E731
    pvi = lambda key, *more: ["pvi", "--source", str(d[key]), *PVI, *more]  # noqa: E731
    curriculum = lambda key, *more: ["curriculum", "--data", str(d[key]), *more]  # noqa: E731
    cases = {}
    for builder, command in (("likelihood", likelihood), ("pvi", pvi)):
        text_flag = "query" if builder == "likelihood" else "text"
        cases.update({
            f"{builder}-list-label": (command("list-label"), ["label field 'gold_label'", "holds lists"]),
            f"{builder}-number-text": (command("number-text"), [f"{text_flag} field 'hypothesis'", "numbers", "not text"]),
            f"{builder}-list-text": (command("list-text"), [f"{text_flag} field 'hypothesis'", "lists", "not text"]),
            f"{builder}-duplicate-column": (command("duplicate-column"), ["names the column 'hypothesis' twice"]),
            f"{builder}-list-of-lists": (command("list-of-lists"), ["is a list of lists, not a table of records"]),
            f"{builder}-list-line": (command("list-line"), ["line 11 is a list, not a JSON object"]),
            f"{builder}-scalar": (command("scalar"), ["is a number, not a table"]),
            f"{builder}-strict-null-label": (command("null-label", "--strict"), ["--strict refuses", "2 row(s) have no label"]),
            f"{builder}-strict-mixed-label": (command("mixed-label", "--strict"),
                                              ["--strict refuses", "field 'gold_label'", "mixes integer and text"]),
            f"{builder}-missing-path": ([builder, "--source", str(d["root"] / "nowhere" / "data.csv"),
                                         *(LL + scores if builder == "likelihood" else PVI)], ["file not found"]),
        })
    cases.update({  # messages that used to mislead: blame the sizes, the lengths or the folds
        "likelihood-one-row-classes": (["likelihood", "--source", str(d["one-row-classes"]), *LL[:6], "--scores",
                                        str(d["root"] / "scores120.npy"), "--validation-size", "50", "--test-size",
                                        "50", "--length-buckets", "2"],
                                       ["length buckets need at least 2 rows", "(one class, when buckets are formed "
                                        "per class) number only 1"]),
        "pvi-identical-texts": (pvi("identical-texts"), ["every row has the same text", "fewer than the 2 folds"]),
        "likelihood-npz-scores": (likelihood("null-label")[:-2] + ["--scores", str(d["root"] / "scores.npz")],
                                  ["is an .npz archive", "numpy.save"]),
        "likelihood-atoms-language": (["likelihood", "--source", str(d["geo"]), "--atoms", "sql", "--train-size", "100"],
                                      ["--atoms sql does not match the programs", "they look like FunQL"]),
        "tmcd-target-language": (["tmcd", "--source", str(d["geo"]), "--target-language", "scan"],
                                 ["--target-language scan does not match the programs", "give --target-language funql"]),
        "tmcd-npz-scores": (["tmcd", "--source", str(d["geo"]), "--scores", str(d["root"] / "scores.npz")],
                            ["is an .npz archive"]),
        "tmcd-missing-path": (["tmcd", "--source", "data/geo_nqg.tsv"], ["file not found: 'data/geo_nqg.tsv'"]),
        "behavioural-missing-path": (["behavioural", "--source", "./suites/nope.json"], ["file not found"]),
        "curriculum-missing-path": (curriculum("root")[:2] + [str(d["root"] / "nope")], ["file not found"]),
        "curriculum-list-label": (curriculum("curriculum-list"), ["field 'gold_label' holds a list"]),
        "curriculum-number-text": (curriculum("curriculum-number"), ["field 'hypothesis' holds int 0, not text"]),
        "curriculum-strict-null-label": (curriculum("curriculum-null", "--strict"),
                                         ["--strict refuses", "rows without a gold_label dropped (train.jsonl 1"]),
    })
    return cases


def _refused_quickly(args, out, capsys, expected, *, seconds=15.0) -> str | None:
    """Run one case through the CLI; None when it was refused as the contract says, else what went wrong."""
    started = time.monotonic()
    code = main([*args, *(["--out", str(out)] if out is not None else []), *(["--no-progress"] if out else [])])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if line.strip()]
    wrong = [text for text in expected if text not in err]
    if code == 0 or len(lines) != 1 or "Traceback" in err or wrong or (out is not None and out.exists()) \
            or elapsed > seconds:
        return (f"exit {code}, {elapsed:.1f}s, out exists {out is not None and out.exists()}, "
                f"missing {wrong}: {err[-400:]!r}")
    return None


def test_every_row_level_defect_is_refused_in_one_line_by_every_builder(defects, tmp_path, capsys):
    failures = []
    for name, (args, expected) in _defect_cases(defects).items():
        cache = ["--cache-dir", str(tmp_path / "cache")] if args[0] == "pvi" else []
        problem = _refused_quickly([*args, *cache], tmp_path / "out" / name, capsys, expected)
        if problem:
            failures.append(f"{name}: {problem}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("builder", ["likelihood", "pvi", "curriculum"])
def test_rows_without_a_label_are_dropped_and_counted_in_the_card_never_a_class(builder, defects, tmp_path,
                                                                              capsys, hf_cache):
    out = tmp_path / "out"
    if builder == "curriculum":
        args = ["curriculum", "--data", str(defects["curriculum-null"])]
    elif builder == "likelihood":
        args = ["likelihood", "--source", str(defects["null-label"]), *LL, "--scores", str(defects["scores"])]
    else:
        args = ["pvi", "--source", str(defects["null-label"]), *PVI, "--cache-dir", str(tmp_path / "cache"),
                "--limit", "100"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    card = (out / "README.md").read_text()
    if builder == "curriculum":
        assert "Read from the source: boolean.zip: rows without a gold_label dropped (train.jsonl 1, val.jsonl 1)" in card
        config, label = "boolean", "label"
    else:
        assert "Rows dropped while reading the source: no label: 2." in card
        config, label = ("ll_split" if builder == "likelihood" else "simple_to_hard"), "label"  # was gold_label
    loaded = datasets.load_dataset(str(out), config, cache_dir=hf_cache)
    ids = [i for split in loaded.values() for i in split["source_id"]]
    labels = {value for split in loaded.values() for value in split[label]}
    assert -1 not in labels  # a ClassLabel's "no label"
    if builder != "curriculum":
        assert not {4, 7} & set(ids) and len(ids) == (298 if builder == "likelihood" else 98)
    assert None not in labels and "" not in labels
    assert main(["verify", str(out), "--no-load-check"]) == 0


def test_labels_of_mixed_types_are_read_as_text_with_a_note_in_the_card(defects, tmp_path, capsys, hf_cache):
    out = tmp_path / "out"
    args = ["likelihood", "--source", str(defects["mixed-label"]), *LL, "--scores", str(defects["scores"])]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert "note: field 'gold_label' of mixed.jsonl mixes integer and text values: read as text" in capsys.readouterr().out
    assert "Read from the source: field 'gold_label' of mixed.jsonl mixes integer and text values" in (
        out / "README.md").read_text()
    rows = datasets.load_dataset(str(out), "ll_split", split="test", cache_dir=hf_cache)
    # 1 and "1" are one class (released as the ClassLabel `label`)
    assert rows.features["label"].names == ["0", "1"] and set(rows["label"]) == {0, 1}


def _recipe(tmp_path, name, **options):
    import yaml

    from split_builders.release.recipe import recipes_folder

    data = yaml.safe_load((recipes_folder() / "geoquery-compositional.yaml").read_text())
    data["options"] = options if options else data["options"]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_other_command_refuses_bad_paths_types_and_files_in_one_line(defects, tmp_path, capsys):
    """Recipes and --set of the wrong type, paths that do not exist (or are files where a folder is
    expected) in verify / diff / show / release --list / evaluate-suite / concurrence, before any work."""
    import yaml

    (tmp_path / "empty").mkdir()
    bad_options = yaml.safe_load("[tmcd]")
    bad = _recipe(tmp_path, "options-list")
    data = yaml.safe_load(bad.read_text())
    data["options"] = bad_options
    bad.write_text(yaml.safe_dump(data))
    results = tmp_path / "results.csv"
    results.write_text("model,benchmark,seed,score\na,x,,1\nb,x,,2\nc,x,,3\na,y,,1\nb,y,,3\nc,y,,2\n")
    missing = str(tmp_path / "nowhere" / "release")
    cases = {
        "recipe-configs-number": (["release", str(_recipe(tmp_path, "configs", train_size=440, configs=7))],
                                  ["options.configs must be a list of names", "got 7"]),
        "recipe-int-as-text": (["release", str(_recipe(tmp_path, "iterations", iterations="many"))],
                               ["options.iterations must be a positive integer", "'many'"]),
        "recipe-text-as-list": (["release", str(_recipe(tmp_path, "language", target_language=["sql"]))],
                                ["options.target_language must be text", "['sql'] (a list)"]),
        "recipe-boolean-as-text": (["release", str(_recipe(tmp_path, "lexical", lexical="false"))],
                                   ["lexical must be true or false, got 'false'"]),
        "recipe-options-not-a-mapping": (["release", str(bad)], ["options must be a mapping"]),
        "set-configs-number": (["release", "geoquery-compositional", "--set", "configs=7"],
                               ["--set configs must be a list of names", "got 7"]),
        "set-size-as-text": (["release", "geoquery-compositional", "--set", "train_size=half"],
                             ["--set train_size must be a number", "'half'"]),
        "release-list-missing": (["release", "--list", "--recipes-dir", str(tmp_path / "no-recipes")],
                                 ["recipes folder", "does not exist"]),
        "release-list-empty": (["release", "--list", "--recipes-dir", str(tmp_path / "empty")],
                               ["holds no recipe"]),
        "release-list-file": (["release", "--list", "--recipes-dir", str(results)], ["is a file"]),
        "verify-missing": (["verify", missing], ["folder not found", missing]),
        "verify-hub-shaped-missing": (["verify", "tests/no-such-release"], ["folder not found"]),
        "verify-file": (["verify", str(results)], ["is a file, not a release folder"]),
        "show-missing": (["show", missing], ["folder not found"]),
        "show-file": (["show", str(results)], ["is a file, not a release folder"]),
        "show-no-card": (["show", str(tmp_path / "empty")], ["has no README.md"]),
        "diff-missing": (["diff", missing, str(tmp_path / "empty")], ["folder not found"]),
        "evaluate-suite-missing-suite": (["evaluate-suite", "--model", "org/model", "--suite", "./suites/x.json",
                                          "--iid-score", "0.9"], ["file not found", "--suite"]),
        "evaluate-suite-missing-model": (["evaluate-suite", "--model", str(tmp_path / "no-model"), "--suite",
                                          "sentiment", "--iid-score", "0.9"], ["file not found", "--model"]),
        "concurrence-heatmap-folder": (["concurrence", "--results", str(results), "--heatmap",
                                        str(tmp_path / "no-figures" / "h.png")], ["--heatmap", "does not exist"]),
    }
    failures = []
    for name, (args, expected) in cases.items():
        out = tmp_path / "out" / name if args[0] == "release" and "--list" not in args else None
        problem = _refused_quickly(args, out, capsys, expected, seconds=10.0)
        if problem:
            failures.append(f"{name}: {problem}")
    assert not failures, "\n".join(failures)


# -- faults: a full disk, an interrupted scoring run ----------------------------------------------

def _no_space(*args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("where, target, expected", [
    ("data files", "pathlib.Path.write_bytes", "the release's data files of --out"),
    ("figures", "matplotlib.figure.Figure.savefig", "the card's figures of --out"),
])
def test_a_full_disk_at_out_is_one_line_and_leaves_nothing(where, target, expected, defects, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.setattr(target, _no_space)
    out = tmp_path / "out"
    args = ["likelihood", "--source", str(defects["null-label"]), *LL, "--scores", str(defects["scores"])]
    problem = _refused_quickly(args, out, capsys, ["no space left on the device of", expected,
                                                   "nothing was left at --out", "run the same command again"])
    assert problem is None, problem
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock"] or not list(tmp_path.glob(".out.tmp-*"))


def test_a_full_disk_under_the_cache_keeps_the_finished_work(defects, tmp_path, capsys, monkeypatch):
    """PVI's second fold cannot be cached: one line naming the cache folder and the space the entry
    needs; the first fold's entry stays, and the rerun (with space) reuses it."""
    import tempfile

    from split_builders.signals.pvi import families

    cache = tmp_path / "cache"
    real_mkstemp, calls = tempfile.mkstemp, []

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and str(dir).startswith(str(cache)):
            calls.append(dir)
            if len(calls) > 1:
                _no_space()
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    out = tmp_path / "out"
    args = ["pvi", "--source", str(defects["null-label"]), *PVI, "--limit", "60", "--cache-dir", str(cache)]
    problem = _refused_quickly(args, out, capsys, ["no space left on the device of", str(cache),
                                                   "the entries written before are kept", "it needs"])
    assert problem is None, problem
    (kept,) = [p for p in cache.rglob("*") if p.is_file()]  # the first fold, complete (no temporary file left)
    monkeypatch.setattr(tempfile, "mkstemp", real_mkstemp)
    fits, real_fit = [], families.HashedNgramFamily.fit
    monkeypatch.setattr(families.HashedNgramFamily, "fit", lambda self, *a, **k: fits.append(1) or real_fit(self, *a, **k))
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert kept.is_file() and len(fits) == 1  # only the fold that was not cached is trained again


def _tiny_build(tiny_llama, tmp_path, defects):
    source = tmp_path / "nli.jsonl"
    _jsonl(source, _nli_rows(40))
    return ["likelihood", "--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis",
            "--label-field", "gold_label", "--validation-size", "6", "--test-size", "6", "--lm", str(tiny_llama),
            "--batch-size", "4", "--device", "cpu", "--cache-dir", str(tmp_path / "scores")]


def test_an_interrupted_scoring_run_saves_every_finished_batch_and_the_rerun_repeats_none(
        tiny_llama, defects, tmp_path, capsys, monkeypatch):
    """Ctrl-C after 3 batches, then SIGTERM (as `kill PID` sends) after 3 more, then a complete run: each
    stop saves every finished batch (no timed checkpoint falls in such a short run) and says so; no
    batch is ever scored twice."""
    import os
    import signal

    from split_builders.signals.lm.scoring import LikelihoodScorer

    args = _tiny_build(tiny_llama, tmp_path, defects)
    scored, stops, real = [], {3: "ctrl-c", 6: "sigterm"}, LikelihoodScorer.score_batch

    def score_batch(self, batch):
        how = stops.pop(len(scored), None)
        if how == "ctrl-c":
            raise KeyboardInterrupt
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)  # the handler stops the run before this batch is scored
        scored.append(tuple(sorted(tuple(e.ids) for e in batch)))  # the batch's examples, by their tokens
        return real(self, batch)

    monkeypatch.setattr(LikelihoodScorer, "score_batch", score_batch)
    out = tmp_path / "out"
    for finished, resumed in ((3, 0), (6, 3)):
        code = main([*args, "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 130 and "Traceback" not in err and not out.exists(), err
        assert f"scoring interrupted; {finished} of 10 batches are saved" in err, err
        assert err.strip().endswith("resplit likelihood: interrupted")
        assert (f"resuming: {resumed} of 10 batches" in err) == bool(resumed)
        assert len(scored) == finished
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is only there while scoring
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert "resuming: 6 of 10 batches were scored before the interruption" in capsys.readouterr().err
    assert len(scored) == 10 and len(set(scored)) == 10  # every batch scored once, over the three runs


@pytest.mark.parametrize("builder", BUILDERS)
def test_every_option_checks_its_type_naming_the_option_and_the_type(builder):
    """What a recipe or ``--set`` can give: a list where text is expected, text where a number or a
    list of names is expected, a number where a list is expected. Each is refused by the one checker
    of CommonOptions, naming the option, before any work."""
    import dataclasses
    import typing

    from split_builders.options import _members
    from split_builders.errors import InvalidParameterError

    method = registry()[builder]
    hints = typing.get_type_hints(method.Options)
    wrong = {str: (["a", "b"], "must be text"), int: ("many", "must be"), float: ("much", "must be"),
             tuple: ({"a": 1}, "must be")}
    checked = 0
    for spec in dataclasses.fields(method.Options):
        kinds = [m for m in _members(hints[spec.name]) if m is not type(None)]
        kind = typing.get_origin(kinds[0]) or kinds[0]
        if kind not in wrong or spec.name in ("source", "out"):
            continue
        value, message = wrong[kind]
        with pytest.raises(InvalidParameterError) as error:
            method.Options(source="x", out="o", **{spec.name: value})
        text = str(error.value)
        assert text.startswith(spec.name.replace("_", "-")) or text.startswith(spec.name), text
        assert message in text and repr(value) in text, text
        checked += 1
    assert checked >= 3
