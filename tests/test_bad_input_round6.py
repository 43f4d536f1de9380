"""Bad input, round six (issue 56): lexical-overlap and the notebook, mcd's input and options, ``--lm`` beside
``--scores``, interrupts at the start and at the end of a command, ``diff`` against a forged release and the
message of an ``--overwrite`` whose old release refuses to move.

* lexical-overlap reads SNLI's layout (a DataFrame, official or the Hub's) as ``likelihood`` does; drops and counts
  rows without a label (NaN included) as every family does; refuses rows without any text in one line; holds the
  rows without a content word out last and says so in the card. The audit's joined text keeps rows whose fields
  are all missing (pyarrow's join left them out, and the audit failed with an IndexError).
* A lone surrogate in a JSON / JSONL source is one line naming field and row, for every family that reads tables.
* mcd refuses a SCAN file whose OUT lines are out of step with their IN lines, an empty or wholly ungrammatical
  source naming that (not sizes or the NQG format), and ``--measure`` with an option only the search reads.
* A Ctrl-C while resplit's libraries import, and an interrupt once the work is done, in a real process.

Every case misbehaved on the code before this change (checked by reverting each fix): a build that ran, a message
naming another problem, a traceback, an exit status of 130 for completed work.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import refused_in_one_line, tree_state
from split_builders.cli import main
from test_faults_round5 import refuse_rename

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def snli_rows(shared) -> list:
    """The first 200 rows of SNLI 1.0's test file (official layout, ``-`` rows included)."""
    with gzip.open(shared / "data" / "snli" / "snli_1.0_test.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line) for _, line in zip(range(200), lines)]


def _card(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---")[1])["resplit"]


def _pairs(rows) -> list:
    """Premise, hypothesis and gold label of SNLI rows that have a gold label."""
    return [{"premise": r["sentence1"], "hypothesis": r["sentence2"], "gold_label": r["gold_label"]}
            for r in rows if r["gold_label"] != "-"]


# -- lexical-overlap: SNLI's layout, labels, texts, rows without content words ----------------------------------

@pytest.mark.parametrize("layout", ["official", "hub"])
def test_a_frame_in_snlis_layout_is_read_as_snli(layout, snli_rows, tmp_path):
    """(Was: "text field '(none given)' not found".) The SNLI reader's fields and filter, as likelihood reads it."""
    import split_builders

    frame = pd.DataFrame(snli_rows)[["sentence1", "sentence2", "gold_label"]]
    if layout == "hub":
        codes = {"entailment": 0, "neutral": 1, "contradiction": 2, "-": -1}
        frame = pd.DataFrame({"premise": frame.sentence1, "hypothesis": frame.sentence2,
                              "label": frame.gold_label.map(codes)})
    configs = split_builders.split("lexical-overlap", frame, validation_size=10, test_size=10, null_splits=0,
                                   out=tmp_path / "out")
    record = _card(tmp_path / "out")
    no_gold = sum(r["gold_label"] == "-" for r in snli_rows)
    assert record["signal"]["text_fields"] == ["premise", "hypothesis"]
    assert sum(record["source"]["filters"].values()) == no_gold > 0
    rows = sum(len(part) for part in configs["lexical_overlap"].values())
    assert rows == len(snli_rows) - no_gold
    assert configs["lexical_overlap"]["train"].features["label"].names == ["entailment", "neutral", "contradiction"]


def test_rows_without_a_label_are_dropped_and_counted(snli_rows, tmp_path):
    """NaN, None and blank labels: dropped and counted under "no label", as docs/building.md says of every family
    (was: refused)."""
    import split_builders

    frame = pd.DataFrame(_pairs(snli_rows)).astype(object)
    frame.loc[[3, 8], "gold_label"] = np.nan
    frame.loc[[20], "gold_label"] = None
    frame.loc[[31], "gold_label"] = "  "
    configs = split_builders.split("lexical-overlap", frame, text_fields="premise,hypothesis",
                                   label_field="gold_label", validation_size=10, test_size=10, null_splits=0,
                                   out=tmp_path / "out")
    missing = int(frame.gold_label.isna().sum() + (frame.gold_label.astype(str).str.strip() == "").sum())
    assert _card(tmp_path / "out")["source"]["filters"] == {"no label": missing} and missing == 4
    released = set()
    for part in configs["lexical_overlap"].values():
        released |= set(part["source_id"])
    assert released == set(frame.index[frame.gold_label.notna() & (frame.gold_label.astype(str).str.strip() != "")])


def test_rows_without_any_text_are_refused_in_one_line(snli_rows, tmp_path, capsys):
    """(Was: a build whose audit failed with an IndexError.)"""
    rows = _pairs(snli_rows)
    for i in (4, 9):
        rows[i]["premise"], rows[i]["hypothesis"] = None, "  "
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    line = refused_in_one_line(["lexical-overlap", "--source", str(source), "--text-fields", "premise,hypothesis",
                                "--label-field", "gold_label", "--out", str(tmp_path / "out"), "--no-progress"],
                               capsys, tmp_path, out=tmp_path / "out")
    assert "2 row(s)" in line and "no text" in line and "source_id 4, 9" in line


def test_the_audits_joined_text_keeps_rows_whose_fields_are_all_missing():
    """pyarrow's join leaves out rows whose every input is null: the joined column was shorter than the table."""
    import pyarrow as pa

    from split_builders.evidence.near_duplicates import examples_text

    columns = {"a": ["One", None, "Three", None, None], "b": ["x", None, None, "y", None]}
    joined = examples_text(pa.table(columns), ["a", "b"]).to_pylist()
    expected = ["\n".join(v for v in values if v is not None) or None for values in zip(*columns.values())]
    assert len(joined) == 5 and [j is None for j in joined] == [e is None for e in expected]
    assert [j is not None and j.count("\n") for j in joined] == [e is not None and e.count("\n") for e in expected]


def test_rows_without_a_content_word_are_held_out_last_and_said(snli_rows, tmp_path, capsys):
    """(Was: overlap 0, so all of them held out first, a third of the evaluation rows, with no note.)"""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    rows = _pairs(snli_rows)
    for i in range(0, 60, 3):  # 20 rows of stop words and single characters only
        rows[i]["premise"], rows[i]["hypothesis"] = "It is in the a", "They were there, I"
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["lexical-overlap", "--source", str(source), "--text-fields", "premise,hypothesis", "--label-field",
                 "gold_label", "--validation-size", "15", "--test-size", "15", "--null-splits", "0", "--out",
                 str(out), "--no-progress"]) == 0
    words = lambda r: set(re.findall(r"(?u)\b\w\w+\b", f"{r['premise']} {r['hypothesis']}".lower()))  # noqa: E731
    empty = {i for i, r in enumerate(rows) if not words(r) - ENGLISH_STOP_WORDS}
    assert len(empty) == 20
    import datasets

    held = set()
    for split in ("validation", "test"):
        part = datasets.load_dataset(str(out), "lexical_overlap", split=split)
        held |= set(part["source_id"])
        assert all(v < 1 for v in part["overlap"])
    assert not held & empty  # held out last: 30 of 180 rows are evaluated, none without a content word
    train = datasets.load_dataset(str(out), "lexical_overlap", split="train")
    assert {s for s, v in zip(train["source_id"], train["overlap"]) if s in empty and v == 1.0} == empty
    assert _card(out)["signal"]["rows_without_content_words"] == 20
    assert "20 row(s) have no content word" in (out / "README.md").read_text(encoding="utf-8")


# -- a lone surrogate in a JSON source: one line, for every family that reads a table ----------------------------

SURROGATE_ARGS = {
    "likelihood": ["--prompt-field", "premise", "--query-field", "hypothesis", "--label-field", "gold_label",
                   "--scores", "SCORES"],
    "lexical-overlap": ["--text-fields", "premise,hypothesis", "--label-field", "gold_label"],
    "pvi": ["--text-fields", "premise,hypothesis", "--label-field", "gold_label"],
    "mcd": [],
}


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("family", list(SURROGATE_ARGS))
def test_a_lone_surrogate_in_a_json_source_is_one_line(family, suffix, snli_rows, tmp_path, capsys):
    """(Was: a UnicodeEncodeError from pyarrow.) A JSON escape ``\\ud800`` decodes to a lone surrogate."""
    rows = _pairs(snli_rows)[:60] if family != "mcd" else [{"input": f"walk {d}", "target": f"I_TURN_{d.upper()} "
                                                            "I_WALK"} for d in ("left", "right") * 30]
    field = "hypothesis" if family != "mcd" else "input"
    rows[7][field] = rows[7][field][:2] + "\ud800" + rows[7][field][2:]
    source = tmp_path / f"rows{suffix}"
    text = "".join(json.dumps(r) + "\n" for r in rows) if suffix == ".jsonl" else json.dumps(rows)
    source.write_text(text, encoding="utf-8")
    assert "\\ud800" in text
    np.save(tmp_path / "scores.npy", np.zeros(len(rows)))
    args = [a.replace("SCORES", str(tmp_path / "scores.npy")) for a in SURROGATE_ARGS[family]]
    line = refused_in_one_line([family, "--source", str(source), *args, "--out", str(tmp_path / "out"),
                                "--no-progress"], capsys, tmp_path, out=tmp_path / "out")
    assert f"field {field!r} of row 7 holds '\\ud800' at character 2, a lone surrogate" in line


def test_a_lone_surrogate_in_a_file_given_to_split_is_one_line(snli_rows, tmp_path):
    import split_builders
    from split_builders.errors import ResplitError

    rows = _pairs(snli_rows)[:60]
    rows[5]["premise"] = "\udc80" + rows[5]["premise"]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ResplitError, match=r"field 'premise' of row 5 holds '\\udc80' at character 0"):
        split_builders.split("lexical-overlap", str(tmp_path / "rows.jsonl"), text_fields="premise,hypothesis",
                             label_field="gold_label")


# -- mcd: SCAN lines out of step, an empty or ungrammatical source, --measure with search options ---------------

@pytest.fixture(scope="module")
def scan_lines(shared) -> list:
    with gzip.open(shared / "data" / "scan" / "tasks.txt.gz", "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def test_scans_interpretation_gives_every_out_of_its_tasks_file(scan_lines):
    """The reference: the OUT of each of SCAN's 20,910 lines is what its command means by the interpretation."""
    from split_builders.signals.programs.scan_grammar import parse_scan, scan_actions

    pairs = [line[len("IN: "):].split(" OUT: ") for line in scan_lines]
    assert len(pairs) == 20_910
    assert [scan_actions(parse_scan(command)) for command, _ in pairs] == [actions for _, actions in pairs]


def _scan_folder(path: Path, lines: list) -> Path:
    path.mkdir()
    (path / "tasks.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("shift", [1, -1])
def test_scan_out_lines_out_of_step_are_refused(shift, scan_lines, tmp_path, capsys):
    """(Was: released, with ``unparseable_rows_excluded: 0``.) The same lines in step pass the check."""
    from loading_scripts import load_compositional
    from split_builders.methods.mcd import MCDSource, check_derivations

    lines = scan_lines[:300]
    commands, actions = zip(*(line.split(" OUT: ") for line in lines))
    actions = np.roll(actions, shift)
    folder = _scan_folder(tmp_path / "scan", [f"{c} OUT: {a}" for c, a in zip(commands, actions)])
    line = refused_in_one_line(["mcd", "--source", str(folder), "--out", str(tmp_path / "out"), "--no-progress"],
                               capsys, tmp_path, out=tmp_path / "out")
    assert "out of step" in line and "300 of its 300 SCAN row(s)" in line
    check_derivations(MCDSource(load_compositional(str(_scan_folder(tmp_path / "fine", lines))), "scan", 12))


UNREADABLE = {  # a source -> what its one line names
    "an empty SCAN folder": ("scan/tasks.txt", "", "holds no 'IN: ... OUT: ...' line"),
    "a SCAN folder of no SCAN command": ("scan/tasks.txt", "IN: fly away OUT: I_FLY\nIN: sing OUT: I_SING\n",
                                         "none of its 2 row(s) is a SCAN command its grammar reads"),
    "an NQG file of no SCAN command": ("rows.tsv", "fly away\tI_FLY\nsing\tI_SING\n",
                                       "none of its 2 row(s) is a SCAN command its grammar reads"),
    "an empty COGS folder": ("cogs/", "", "holds no rows"),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_an_empty_or_ungrammatical_source_is_named_as_such(case, tmp_path, capsys):
    """(Was: "train_size 0 and test_size 0 must both be at least 1 ...".)"""
    relative, text, expected = UNREADABLE[case]
    if relative == "cogs/":
        source = tmp_path / "cogs"
        source.mkdir()
        for name in ("train", "dev", "test", "gen"):
            (source / f"{name}.tsv").write_text("")
    else:
        path = tmp_path / relative
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        source = path.parent if relative.startswith("scan/") else path
    line = refused_in_one_line(["mcd", "--source", str(source), "--out", str(tmp_path / "out"), "--no-progress"],
                               capsys, tmp_path, out=tmp_path / "out")
    assert expected in line and "train_size" not in line and "NQG" not in line


@pytest.mark.parametrize("flag, value", [("--train-size", "100"), ("--test-size", "0.2"), ("--swaps", "10"),
                                         ("--restarts", "2"), ("--candidates", "8"),
                                         ("--max-atom-divergence", "0.05")])
def test_measure_with_an_option_only_the_search_reads_is_refused(flag, value, shared, tmp_path, capsys):
    """(Was: ignored without a word.)"""
    line = refused_in_one_line(["mcd", "--source", str(shared / "data" / "scan"), "--measure", "mcd1", flag, value,
                                "--out", str(tmp_path / "out"), "--no-progress"], capsys, tmp_path,
                               out=tmp_path / "out")
    assert "--measure and" in line and flag in line and "no search" in line


# -- --lm with --scores --------------------------------------------------------------------------------------------

def test_lm_with_given_scores_is_refused(likelihood_reference, tmp_path, capsys):
    """(Was: recorded as the scorer of scores it did not make.)"""
    snli = likelihood_reference / "inputs" / "snli"
    line = refused_in_one_line(["likelihood", "--source", str(snli / "all_examples.csv"), "--prompt-field", "premise",
                                "--query-field", "hypothesis", "--label-field", "gold_label", "--scores",
                                str(snli / "all_examples__False_loglikelihoods.npy"), "--lm", "gpt2", "--out",
                                str(tmp_path / "out"), "--no-progress"], capsys, tmp_path, out=tmp_path / "out")
    assert "--scores and --lm contradict" in line and "did not make" in line


def test_lm_with_given_scores_is_refused_in_python_too(snli_rows):
    import split_builders
    from split_builders.errors import ResplitError

    frame = pd.DataFrame(_pairs(snli_rows))
    with pytest.raises(ResplitError, match=r"scores=.* and lm=.* contradict"):
        split_builders.split("likelihood", frame, prompt_field="premise", query_field="hypothesis",
                             scores=np.zeros(len(frame)), lm="gpt2")


# -- interrupts, in a real process ----------------------------------------------------------------------------------

def _as_from_a_terminal() -> None:
    """The child starts with Ctrl-C's default disposition, as a shell gives it. An ignored SIGINT is inherited
    across exec, and Python then installs no KeyboardInterrupt handler: a test worker where an earlier in-process
    command or library left SIGINT ignored made this test's Ctrl-C vanish (exit 0) now and then."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(script: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_as_from_a_terminal)


INTERRUPT_AT_IMPORT = """
import os, signal, sys
class Interrupt:  # a Ctrl-C in the first second: while `datasets` is being imported
    def find_spec(self, name, path=None, target=None):
        if name == "datasets":
            os.kill(os.getpid(), signal.SIGINT)
sys.meta_path.insert(0, Interrupt())
from split_builders.cli import main
sys.argv = ["resplit", "list"]
sys.exit(main())
"""


@pytest.mark.slow
def test_ctrl_c_while_the_libraries_import_is_one_line(tmp_path):
    """(Was: a traceback from ``from split_builders.cli import main``.)"""
    done = _run(INTERRUPT_AT_IMPORT, tmp_path)
    assert done.returncode == 130 and done.stderr.strip().splitlines() == ["resplit: interrupted"], done.stderr
    assert list(tmp_path.iterdir()) == []


INTERRUPT_AT_THE_END = """
import os, signal, sys
class Stdout:  # the signal arrives while the command prints its last line
    def __init__(self, real): self.real = real
    def write(self, text):
        if text.startswith("load it with"):
            os.kill(os.getpid(), signal.SIGINT)
        return self.real.write(text)
    def __getattr__(self, name): return getattr(self.real, name)
sys.stdout = Stdout(sys.stdout)
import atexit
atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))  # and once more as Python shuts down
from split_builders.cli import main
sys.argv = ["resplit", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.slow
def test_an_interrupt_once_the_release_is_written_exits_0(snli_rows, tmp_path):
    """(Was: exit 130, or a signal's death with no message, though the release was complete.)"""
    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in _pairs(snli_rows)[:80]), encoding="utf-8")
    out = tmp_path / "out"
    args = ["lexical-overlap", "--source", str(source), "--text-fields", "premise,hypothesis", "--label-field",
            "gold_label", "--validation-size", "8", "--test-size", "8", "--null-splits", "0", "--out", str(out),
            "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", INTERRUPT_AT_THE_END, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr and "interrupted" not in done.stderr, done.stderr
    assert "load it with" in done.stdout
    assert main(["verify", str(out)]) == 0


# -- diff against a forged release; --overwrite onto a release that refuses to move --------------------------------

def test_diff_against_a_release_holding_a_row_twice_is_one_line(small_release, tmp_path, capsys):
    """A row copied into a second split, its data file's sha256 put in the card: consistent, but not a release
    (was: an IndexError)."""
    import hashlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    forged = tmp_path / "forged"
    shutil.copytree(small_release, forged)
    train, test = (next((forged / "random").glob(f"{split}-*.parquet")) for split in ("train", "test"))
    before = hashlib.sha256(train.read_bytes()).hexdigest()
    pq.write_table(pa.concat_tables([pq.read_table(train), pq.read_table(test).slice(0, 1)]), train)
    card = forged / "README.md"
    card.write_text(card.read_text(encoding="utf-8").replace(before, hashlib.sha256(train.read_bytes()).hexdigest()),
                    encoding="utf-8")
    twice = pq.read_table(test).column("source_id")[0].as_py()
    line = refused_in_one_line(["diff", str(small_release), str(forged)], capsys, forged, small_release)
    assert f"config 'random' holds source_id {twice} more than once (in 'train' and 'test'" in line


def test_overwrite_onto_a_release_that_refuses_to_move_names_it(tmp_path, capsys, monkeypatch, toy_method):
    """Moving the old release aside is refused by the release folder itself (a read-only folder cannot be given
    another parent), its parent writable: make the release writable, not its parent (was: the parent)."""
    from test_faults_round5 import toy_build

    toy = tmp_path / "toy.csv"
    toy.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    place = tmp_path / "place"
    place.mkdir()
    out = place / "out"
    env = type("Env", (), {"toy": toy})
    assert main(toy_build(env, out, "--seed", "1")) == 0
    refuse_rename(monkeypatch, lambda source: source == out)
    before = tree_state(place)
    line = refused_in_one_line(toy_build(env, out, "--seed", "2", "--overwrite"), capsys, place)
    assert f"make {str(out)!r} writable" in line and "nothing was changed" in line
    assert tree_state(place) == before
