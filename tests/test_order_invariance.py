"""The same rows give the same splits, whatever their order (issue 46, section 1).

A curator who downloads a dataset again, or reads it through another reader, gets its rows in another order.
Under the ``content`` row order rule (the default), every random draw and every tie-break of every registered
method follows each row's content key (a hash of its canonical fields) and the seed, never the row's position:

* the property, over every built-in method (``split_builders.methods.BUILTIN``; a method registered from your own
  code draws as it likes, and ``split_builders.splitters.partition.in_row_order`` puts its config builder under the
  rule): its own small real release (``example_arguments``) built from
  its source and from seeded permutations of that source's rows gives the same configs **by content** (each
  split as a multiset of rows without their positional ids, since ``source_id`` numbers a row by its place in
  the file), and under 1 and 2 processes where the method runs on several (likelihood scoring);
* the ``position`` rule (``--row-order position``) is the old one: the reference generators' draws, and what a
  release built before the rule was recorded re-derives under, so it keeps verifying;
* the content key is the one row-key function's (``loading_scripts.tables.row_keys(..., content=True)``): the
  same values give the same key in any table, and it is computed on whole columns.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from split_builders.api import registry
from split_builders.methods import BUILTIN
from split_builders.cli import main as resplit

# Columns that identify a row rather than hold what it is: its place in the source (``source_id``, a CheckList
# test case's ``testcase_id``) or the id a file gives it (CURRICULUM's ``idx``). Two rows of the same content are
# interchangeable, so which of their ids lands in which split may follow the rows' order.
POSITIONAL_COLUMNS = {"source_id", "testcase_id", "idx"}
# One seeded permutation of the rows per method (a second one built every release again): the control below shows
# that it moves what is drawn by position (likelihood's baselines and its tied likelihood configs).
SEED = 1
QUICKER = {
    # published splits are row numbers of the file's own order (data, not the method's draws)
    "tmcd": ("--no-published",),
    # every functionality is still divided (``seen``); fewer held-out configs to write and compare
    "behavioural": ("--functionalities", "0,1", "--capabilities", "Vocabulary"),
}


# ---------------------------------------------------------------------------------------------
# Seeded permutations of a source's rows, format by format
# ---------------------------------------------------------------------------------------------


def _permutation(n: int, seed: int | None) -> np.ndarray:
    return np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def _write_lines(path: Path, lines) -> None:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in lines)


def _copy_rows(source: Path, target_folder: Path, seed: int | None, limit: int | None):
    """The source's rows (the first ``limit`` where a limit is given) written under ``target_folder``, in the
    order of a seeded permutation (``seed`` None: as they are, through the same writer). Returns the new path
    and the permutation (row i of the copy is row ``permutation[i]`` of the source), or None for formats
    whose rows are not one list."""
    target_folder.mkdir(parents=True, exist_ok=True)
    target = target_folder / source.name
    if source.is_dir() and any(source.glob("tasks.txt*")):  # SCAN: tasks.txt, one example a line
        tasks = next(source.glob("tasks.txt*"))
        lines = _lines(tasks)[:limit]
        order = _permutation(len(lines), seed)
        target.mkdir()
        # the published splits are not copied: the MCD splits are row numbers of the file's own order
        _write_lines(target / tasks.name, [lines[i] for i in order])
        return target, order
    if source.is_dir():  # CURRICULUM: <phenomenon>.zip files with <phenomenon>/{train,val}.jsonl
        zips = list(source.glob("*.zip")) or list(source.glob("tasks/*.zip"))
        assert zips, f"no known row format in {source}"
        target.mkdir()
        for path in source.glob("*.json"):
            shutil.copy(path, target / path.name)
        (target / "tasks").mkdir()
        for number, path in enumerate(zips):
            with zipfile.ZipFile(path) as archive, zipfile.ZipFile(target / "tasks" / path.name, "w") as copy:
                for info in archive.infolist():
                    data = archive.read(info)
                    if info.filename.endswith(".jsonl") and not info.filename.startswith("__MACOSX"):
                        lines = [line for line in data.decode("utf-8").splitlines() if line.strip()][:limit]
                        order = _permutation(len(lines), None if seed is None else seed * 1000 + number)
                        data = "".join(lines[i] + "\n" for i in order).encode("utf-8")
                    copy.writestr(info.filename, data)
        return target, None
    if source.name.endswith(".json.gz"):  # a CheckList suite: test cases move within their functionality
        suite = json.loads(gzip.decompress(source.read_bytes()))
        for number, test in enumerate(suite["tests"]):
            if limit is not None and len(test["data"]) > limit:  # --limit keeps a functionality's first cases
                n = len(test["data"])
                for key in ("data", "labels", "meta"):
                    if isinstance(test.get(key), list) and len(test[key]) == n:
                        test[key] = test[key][:limit]
                if isinstance(test.get("beluga_split"), dict):
                    test["beluga_split"] = {k: [i for i in v if i < limit] for k, v in test["beluga_split"].items()}
                if isinstance(test.get("checklist_n500_run_idxs"), list):
                    test["checklist_n500_run_idxs"] = [i for i in test["checklist_n500_run_idxs"] if i < limit]
                if "n_testcases" in test:
                    test["n_testcases"] = limit
            n = len(test["data"])
            order = _permutation(n, None if seed is None else seed * 1000 + number)
            for key in ("data", "labels", "meta"):
                if isinstance(test.get(key), list) and len(test[key]) == n:
                    test[key] = [test[key][i] for i in order]
            inverse = np.argsort(order)  # a test case's id follows it
            if isinstance(test.get("beluga_split"), dict):
                test["beluga_split"] = {k: sorted(int(inverse[i]) for i in v) for k, v in test["beluga_split"].items()}
            if isinstance(test.get("checklist_n500_run_idxs"), list):
                test["checklist_n500_run_idxs"] = sorted(int(inverse[i]) for i in test["checklist_n500_run_idxs"])
        target.write_bytes(gzip.compress(json.dumps(suite).encode("utf-8")))
        return target, None
    if source.suffix == ".csv":  # a header, then one row a record
        with open(source, newline="", encoding="utf-8") as handle:
            header, *rows = list(csv.reader(handle))
        rows = rows[:limit]
        order = _permutation(len(rows), seed)
        with open(target, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows[i] for i in order)
        return target, order
    if source.suffix in (".tsv", ".jsonl") or source.name.endswith((".tsv.gz", ".jsonl.gz")):  # one row a line
        lines = _lines(source)[:limit]
        order = _permutation(len(lines), seed)
        _write_lines(target, [lines[i] for i in order])
        return target, order
    raise AssertionError(f"{source}: no row permutation for this format yet; add it to _copy_rows")


def permuted_arguments(arguments: list, work: Path, seed: int | None) -> list:
    """A method's example arguments with its source (and a given scores file, one score a row) replaced by
    copies whose rows are in a seeded permuted order (``seed`` None: in their own order). ``--limit N`` keeps
    the first N rows of each list of rows before they are permuted, so both builds hold the same rows."""
    arguments = [str(a) for a in arguments]
    limit = int(arguments[arguments.index("--limit") + 1]) if "--limit" in arguments else None
    at = arguments.index("--source") + 1
    target, order = _copy_rows(Path(arguments[at]), work / "source", seed, limit)
    arguments[at] = str(target)
    if "--scores" in arguments:
        assert order is not None
        at = arguments.index("--scores") + 1
        scores = np.load(arguments[at])[: order.size][order]
        arguments[at] = str(work / "scores.npy")
        np.save(arguments[at], scores)
    return arguments


# ---------------------------------------------------------------------------------------------
# Configs by content
# ---------------------------------------------------------------------------------------------


def configs_by_content(folder: Path) -> dict:
    """``{config: {split: Counter of rows}}`` of a release, each row as what it holds: its columns but the
    positional ids, the flat ones by their content hash (whole columns), nested ones (lists, structs) as JSON
    (read once per row of the release: every config of a release shares its rows' content)."""
    from loading_scripts.tables import row_keys
    from split_builders.release.folder import Released

    released = Released(folder)
    nested_json: dict = {}  # (columns, source_id, flat hash) -> JSON of the nested columns
    out = {}
    for config, files in released.files.items():
        out[config] = {}
        for split in files:
            table = released.table(config, split)
            columns = [c for c in table.column_names if c not in POSITIONAL_COLUMNS]
            flat = [c for c in columns if not pa.types.is_nested(table.schema.field(c).type)]
            nested = [c for c in columns if c not in flat]
            hashes = row_keys(table, flat, content=True).tolist()
            if nested:
                ids = table.column("source_id").to_pylist()
                keys = [(tuple(columns), i, h) for i, h in zip(ids, hashes)]
                missing = [row for row, key in enumerate(keys) if key not in nested_json]
                if missing:
                    values = table.select(nested).take(missing).to_pylist()
                    nested_json.update((keys[row], json.dumps(value, sort_keys=True, default=str))
                                       for row, value in zip(missing, values))
                hashes = [(h, nested_json[key]) for h, key in zip(hashes, keys)]
            out[config][split] = Counter(hashes)
    return out


def differences(before: dict, after: dict) -> list:
    """What differs between two releases by content: per config and split, rows only in one of them."""
    lines = [f"config {c} only in one build" for c in sorted(set(before) ^ set(after))]
    for config in sorted(set(before) & set(after)):
        for split in sorted(set(before[config]) | set(after[config])):
            a, b = before[config].get(split, Counter()), after[config].get(split, Counter())
            if a != b:
                lines.append(f"{config}/{split}: {sum((a - b).values())} row(s) moved out, "
                             f"{sum((b - a).values())} in (of {sum(a.values())})")
    return lines


def build(method: str, arguments: list, out: Path, *extra) -> Path:
    code = resplit([method, *arguments, *extra, "--seed", "7", "--out", str(out), "--no-progress",
                    "--null-splits", "0"])
    assert code == 0, f"{method} build failed (exit {code})"
    return out


# ---------------------------------------------------------------------------------------------
# The content key and the content order
# ---------------------------------------------------------------------------------------------


def test_the_content_key_is_what_the_row_holds_never_where_it_is():
    from loading_scripts.tables import row_keys

    table = pa.table({"premise": ["a", "b", "a", None, "c", "a"], "hypothesis": ["x", "y", "x", "y", "", "z"],
                      "label": [0, 1, 0, 2, 1, 0]})
    fields = ["premise", "hypothesis", "label"]
    keys = row_keys(table, fields, content=True)
    assert keys.dtype == np.uint64
    assert keys[0] == keys[2] and len(set(keys.tolist())) == 5  # equal rows only share a key
    order = np.random.default_rng(0).permutation(table.num_rows)
    assert np.array_equal(row_keys(table.take(order), fields, content=True), keys[order])  # any order, any table
    assert np.array_equal(row_keys(table.slice(3), fields, content=True), keys[3:])
    # a value is hashed as its text: a label read as a number or as text (another reader) has one key
    as_text = table.set_column(2, "label", pa.array(["0", "1", "0", "2", "1", "0"]))
    assert np.array_equal(row_keys(as_text, fields, content=True), keys)
    # a missing value is not an empty one, and the fields count in the order given
    assert len(set(row_keys(pa.table({"a": ["", None]}), ["a"], content=True).tolist())) == 2
    assert not np.array_equal(row_keys(table, fields[::-1], content=True), keys)
    # The keys may never change: a release built under the content rule re-derives from them.
    pinned = pa.table({"premise": ["A man sleeps."], "hypothesis": ["Nobody sleeps."], "label": ["contradiction"]})
    assert row_keys(pinned, fields, content=True).tolist() == [11577877011682588470]
    # the exact (default) keys are as they were: int64 numbers, equal exactly when the rows are
    exact = row_keys(table, fields)
    assert exact.dtype == np.int64 and exact[0] == exact[2] and len(set(exact.tolist())) == 5


def test_the_content_order_is_a_seeded_draw_from_the_keys():
    from loading_scripts.tables import row_keys
    from split_builders.splitters.partition import content_order

    keys = row_keys(pa.table({"text": [f"row {i}" for i in range(500)]}), ["text"], content=True)
    order = content_order(keys, 7)
    assert sorted(order.tolist()) == list(range(500))
    permutation = np.random.default_rng(1).permutation(500)
    # the rows permuted: the same contents in the same order
    assert np.array_equal(permutation[content_order(keys[permutation], 7)], order)
    assert not np.array_equal(content_order(keys, 8), order)  # another seed, another draw
    # rows of one content keep their relative order (the only thing position may still decide)
    same = np.full(4, keys[0])
    assert content_order(same, 7).tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------
# Old and new rule: what changed, what verifies, what diff says
# ---------------------------------------------------------------------------------------------


def _small_likelihood(shared, work: Path, *, untied: bool) -> list:
    """The first 400 SNLI rows of the reference with their log-likelihoods, made distinct (``untied``: a
    little noise, so no two rows tie in likelihood) or as given (they tie: one decimal)."""
    snli = shared / "reference" / "likelihood" / "inputs" / "snli"
    work.mkdir(parents=True, exist_ok=True)
    with open(snli / "all_examples.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[:401]
    with open(work / "snli.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    scores = np.load(snli / "all_examples__False_loglikelihoods.npy")[:400]
    if untied:
        scores = scores + np.random.default_rng(0).normal(0, 1e-3, scores.size)
        assert np.unique(scores).size == scores.size
    np.save(work / "scores.npy", scores)
    return ["--source", str(work / "snli.csv"), "--prompt-field", "premise", "--query-field", "hypothesis",
            "--label-field", "gold_label", "--scores", str(work / "scores.npy"), "--dev-size", "40", "--test-size",
            "40", "--length-buckets", "4"]


def _data_files(folder: Path) -> dict:
    """``{config/split: bytes}`` of a release's data files (their names carry a hash of their content)."""
    return {f"{p.parent.name}/{p.name.split('-')[0]}": p.read_bytes() for p in folder.rglob("*.parquet")}


def _set_recorded_rule(folder: Path, rule: str | None) -> None:
    """Write ``rule`` as the README's recorded ``row_order`` (None: drop it, as a release built before the rule
    was recorded has none); the data files are untouched."""
    import yaml

    text = (folder / "README.md").read_text()
    _, head, body = text.split("---\n", 2)
    metadata = yaml.safe_load(head)
    if rule is None:
        del metadata["resplit"]["parameters"]["row_order"]
    else:
        metadata["resplit"]["parameters"]["row_order"] = rule
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n{body}")


def test_only_the_configs_drawn_by_position_change_and_diff_says_so(shared, tmp_path):
    """With no ties in likelihood the ll_split* data files are byte-identical under both rules; the random and
    length baselines (drawn over row positions, and ties in length broken by them) move, which `resplit diff`
    reports row by row with the rule's change; the card says which rule built each."""
    from split_builders.publishing.diff import diff, format_diff

    arguments = _small_likelihood(shared, tmp_path / "in", untied=True)
    old = build("likelihood", arguments, tmp_path / "old", "--row-order", "position")
    new = build("likelihood", arguments, tmp_path / "new")
    before, after = _data_files(old), _data_files(new)
    assert before.keys() == after.keys()
    changed = {key.split("/")[0] for key in before if before[key] != after[key]}
    assert changed == {"random", "length"}
    assert "Row order rule: `content`" in (new / "README.md").read_text()
    assert "Row order rule: `position`" in (old / "README.md").read_text()

    _set_recorded_rule(old, None)  # as a release built before the rule was recorded
    result = diff(str(old), str(new))
    assert result["provenance"]["parameters.row_order"] == ["position", "content"]
    assert {c for c, e in result["configs"].items() if e["status"] == "changed"} == {"random", "length"}
    assert result["configs"]["random"]["moved"] > 0 and result["configs"]["ll_split"]["moved"] == 0
    assert "  parameters.row_order: position -> content" in format_diff(result)


def test_each_release_re_derives_under_the_rule_it_records(shared, tmp_path):
    """verify's level 2 draws again under the recorded rule: a release without the record (built before it) by
    position, a new one by content; a record that names the other rule is caught on the configs it moves."""
    from split_builders.publishing.verify import verify

    arguments = _small_likelihood(shared, tmp_path / "in", untied=False)  # ties: ll_split* follow the rule too
    old = build("likelihood", arguments, tmp_path / "old", "--row-order", "position")
    new = build("likelihood", arguments, tmp_path / "new")
    _set_recorded_rule(old, None)
    for folder in (old, new):
        report = verify(str(folder), load=False)
        assert report.ok, [f.line() for f in report.findings if f.status != "identical"]
        assert {f.config for f in report.findings if f.level == 2 and f.status == "identical"} == {
            "ll_split", "ll_split_len", "ll_split_reverse", "random", "length"}
    _set_recorded_rule(new, "position")  # a card that names the wrong rule
    wrong = verify(str(new), load=False)
    assert not wrong.ok
    assert {"random", "length"} <= {f.config for f in wrong.findings if f.level == 2 and f.status == "differs"}


# ---------------------------------------------------------------------------------------------
# The property, over every registered method
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("method", BUILTIN)
def test_the_same_rows_in_any_order_give_the_same_configs(method, shared, tmp_path):
    (tmp_path / "inputs").mkdir()
    arguments = registry()[method].example_arguments(shared, tmp_path / "inputs")
    arguments = [*arguments, *QUICKER.get(method, ())]
    base = configs_by_content(build(method, permuted_arguments(arguments, tmp_path / "base", None), tmp_path / "b"))
    assert base
    shuffled = permuted_arguments(arguments, tmp_path / "shuffled", SEED)
    again = configs_by_content(build(method, shuffled, tmp_path / "s"))
    assert not differences(base, again), f"{method}, permutation {SEED}: {differences(base, again)}"


def test_the_position_rule_is_the_old_one_and_depends_on_the_order(shared, tmp_path):
    """The control: under ``--row-order position`` the random and length baselines follow the rows' order
    (so the property above tests something), and a build under it has the configs of a build before the rule
    was recorded (the release hashes benchmark's files)."""
    arguments = registry()["likelihood"].example_arguments(shared, tmp_path)
    base = configs_by_content(build("likelihood", permuted_arguments(arguments, tmp_path / "base", None),
                                    tmp_path / "b", "--row-order", "position"))
    shuffled = configs_by_content(build("likelihood", permuted_arguments(arguments, tmp_path / "s", SEED),
                                        tmp_path / "s1", "--row-order", "position"))
    moved = {line.split("/")[0] for line in differences(base, shuffled)}
    # the baselines, and the likelihood configs too: these given scores tie (ties fell to the row order)
    assert {"random", "length", "ll_split"} <= moved, moved


@pytest.mark.slow
def test_two_processes_on_shuffled_rows_give_one_process_configs(shared, tiny_llama, tmp_path):
    """Likelihood scoring runs on several processes: 48 rows scored under ``torchrun`` by 2 processes, in a
    permuted order, on a CPU machine without ``--device cpu``, give the configs (and scores) and the files of one
    process over the rows in their own order; only rank 0 reports and writes, and the lock is removed."""
    import socket
    import subprocess
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("the two CPU processes are tested on a machine without a GPU")
    csv_file = shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv"
    arguments = ["--source", str(csv_file), "--limit", "48", "--prompt-field", "premise", "--query-field",
                 "hypothesis", "--label-field", "gold_label", "--lm", str(tiny_llama), "--batch-size", "4",
                 "--dev-size", "6", "--test-size", "6", "--length-buckets", "2", "--seed", "7", "--no-progress",
                 "--null-splits", "0"]
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    shuffled = permuted_arguments(arguments, tmp_path / "shuffled", 3)
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                          str(port), "-m", "split_builders.cli", "likelihood", *shuffled, "--out", str(tmp_path / "two"),
                          "--cache-dir", str(tmp_path / "cache2")], env=env, capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.count("\nwrote ") == 1 and "2 process(es)" in two.stdout, two.stdout
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".two")]  # the lock removed
    assert json.loads(next((tmp_path / "cache2").glob("*.json")).read_text())["num_processes"] == 2
    in_order = permuted_arguments(arguments, tmp_path / "in-order", None)
    # one process, with one thread as each of the two has (more threads sum in another order: other last bits)
    one = subprocess.run([sys.executable, "-m", "split_builders.cli", "likelihood", *in_order, "--out",
                          str(tmp_path / "one"), "--cache-dir", str(tmp_path / "cache1")], env=env, capture_output=True,
                         text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    assert "1 process(es)" in one.stdout, one.stdout
    # the same Parquet files, config by config and split by split (their names end on a hash of their bytes, and
    # source_id numbers the rows in their source's order)
    files = {run: sorted(re.sub(r"-[0-9a-f]{8}\.parquet$", "", str(p.relative_to(tmp_path / run)))
                         for p in (tmp_path / run).rglob("*.parquet")) for run in ("one", "two")}
    assert files["one"] == files["two"] and files["one"]
    one, two = configs_by_content(tmp_path / "one"), configs_by_content(tmp_path / "two")
    assert not differences(one, two), differences(one, two)
