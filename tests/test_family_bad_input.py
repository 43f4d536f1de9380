"""Bad input behaves the same in `resplit pvi`, `curriculum` and `behavioural`: exit 2, one line
naming the problem (no traceback), nothing at --out."""

from __future__ import annotations

import csv
import json
import zipfile


from split_builders.cli import main

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
