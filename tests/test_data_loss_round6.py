"""Nothing lost, round six (issue 56, "Lost data", "The notebook puts scores on the wrong rows", the stale report
files, a killed build's lock and a killed report's partial ``--out``).

1. One writer policy: a symbolic link where any writer of resplit would write (a build's ``--out``, ``audit --rows``
   and ``--write-clean``, ``report --out`` and its ``report.md``, ``export lm-eval --out``, the card a harness or
   inspect-ai export writes its section into, ``write_file`` itself) is refused in one line naming it, never
   followed and never replaced, the file it points to unchanged.
2. Every generated file carries a fingerprint: an ``eval.yaml``, ``croissant.json`` or harness group file the user
   edited is refused by ``export inspect``, ``export croissant``, ``export lm-eval`` and a build's ``--overwrite``.
3. ``report --out DIR --overwrite``: an earlier report's files this one does not write are removed where resplit
   wrote them and they are unchanged; a user's file or folder where a report file goes is one line; a report
   stopped while it writes leaves ``--out`` as it was.
4. A lock holds its pid and host; a stale one (its command killed) is taken over with a note and removed.
5. ``split(method, frame, scores=...)``: given scores follow their rows by position whatever ``source_id`` the frame
   carries (or by ``scores_key=``); a ``Series`` whose index is not the frame's is refused.

Each test fails on the code before this change.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import split_builders
from conftest import refused_in_one_line, tree_state
from split_builders.cli import main
from split_builders.errors import ResplitError
from split_builders.release.folder import Released

SNLI_ARGS = ("--prompt-field", "premise", "--query-field", "hypothesis", "--label-field", "gold_label")


@pytest.fixture()
def env(small_release, shared, tmp_path, monkeypatch):
    """A copy of the small likelihood release, a user's file outside it, and a predictions table of three models
    on its test splits (``runs``) and of one model (``one``)."""
    import pyarrow.parquet as pq

    release = tmp_path / "release"
    shutil.copytree(small_release, release)
    mine = tmp_path / "mine.txt"
    mine.write_text("the user's own file\n")
    rows, rng = [], np.random.default_rng(5)
    for config in ("random", "ll_split"):
        (path,) = (release / config).glob("test-*.parquet")
        ids = pq.read_table(path, columns=["source_id"]).column(0).to_pylist()
        for model, rate in (("big", 0.8), ("mid", 0.6), ("small", 0.4)):
            rows += [{"model": model, "config": config, "split": "test", "source_id": i,
                      "correct": int(rng.random() < rate)} for i in ids]
    runs = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(runs, index=False)
    one = tmp_path / "one.csv"
    pd.DataFrame([r for r in rows if r["model"] == "big"]).to_csv(one, index=False)
    source = shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv"
    other = tmp_path / "other.csv"  # the OTHER of an audit: 50 SNLI rows
    other.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:51]), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return SimpleNamespace(release=release, mine=mine, runs=runs, one=one, other=other, tmp=tmp_path, shared=shared)


def report(env, out, *extra, runs=None) -> list:
    return ["report", str(env.release), str(runs or env.runs), "--bootstrap-iters", "0", "--out", str(out), *extra]


def toy_build(env, out, *extra) -> list:
    source = env.tmp / "toy.csv"
    if not source.exists():
        source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    return ["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress", *extra]


# -- 1. a link where a writer writes: refused, never followed, never replaced -------------------------------------

def _release_link(env):
    """``--out`` a link to a release folder (was: the release it points to replaced)."""
    real = env.tmp / "real"
    assert main(toy_build(env, real)) == 0
    link = env.tmp / "link"
    link.symlink_to(real)
    return toy_build(env, link, "--overwrite", "--seed", "2"), link, [real]


def _rows_link(env):
    link = env.tmp / "rows.parquet"
    link.symlink_to(env.mine)
    return ["audit", str(env.release), "--against", str(env.other), "--rows", str(link), "--overwrite",
            "--no-progress"], link, []


def _clean_link(env):
    target = env.tmp / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine\n")
    link = env.tmp / "clean"
    link.symlink_to(target)
    return ["audit", str(env.release), "--against", str(env.other), "--write-clean", str(link), "--no-progress"], \
        link, [target]


def _report_md_link(env):
    out = env.tmp / "out"
    out.mkdir()
    link = out / "report.md"
    link.symlink_to(env.mine)
    return report(env, out, "--overwrite"), link, [out]


def _report_out_link(env):
    target = env.tmp / "elsewhere"
    target.mkdir()
    link = env.tmp / "out"
    link.symlink_to(target)
    return report(env, link), link, [target]


def _lm_eval_out_link(env):
    target = env.tmp / "elsewhere"
    target.mkdir()
    link = env.tmp / "tasks"
    link.symlink_to(target)
    return ["export", "lm-eval", str(env.release), "--out", str(link)], link, [target]


def _card_link(command):
    def make(env):
        card = env.tmp / "card.md"
        shutil.move(env.release / "README.md", card)
        (env.release / "README.md").symlink_to(card)
        return ["export", command, str(env.release)], env.release / "README.md", [env.release]
    return make


def _figure_link(command):
    def make(env):
        from test_output_safety import FIGURE_FLAGS

        (argv_of,) = [make for (name, _), make in FIGURE_FLAGS.items() if name == command]
        flag = next(flag for (name, flag) in FIGURE_FLAGS if name == command)
        link = env.tmp / "figure.png"
        link.symlink_to(env.mine)
        return [*argv_of(env.shared, env.tmp), flag, str(link)], link, []
    return make


LINKS = {"a build's --out --overwrite": _release_link, "audit --rows": _rows_link, "audit --write-clean": _clean_link,
         "report.md in report --out": _report_md_link, "report --out": _report_out_link,
         "export lm-eval --out": _lm_eval_out_link, "the card of export lm-eval": _card_link("lm-eval"),
         "the card of export inspect": _card_link("inspect"), "concurrence --heatmap": _figure_link("concurrence"),
         "curriculum-report --figure": _figure_link("curriculum-report")}


@pytest.mark.parametrize("writer", list(LINKS))
def test_a_link_where_a_writer_writes_is_refused_in_one_line(writer, env, capsys, toy_method):
    argv, link, folders = LINKS[writer](env)
    pointed = os.readlink(link)
    line = refused_in_one_line(argv, capsys, env.mine, *folders)
    assert "symbolic link" in line and str(link) in line and "never writes through" in line, line
    assert link.is_symlink() and os.readlink(link) == pointed
    assert env.mine.read_text() == "the user's own file\n"


def test_write_file_never_follows_a_link(tmp_path):
    from split_builders.errors import OutputExistsError
    from split_builders.release.places import write_file, write_files

    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    link = tmp_path / "out.txt"
    link.symlink_to(mine)
    for call in (lambda: write_file(link, lambda p: Path(p).write_text("x"), overwrite=True),
                 lambda: write_files({tmp_path / "a.txt": lambda p: Path(p).write_text("a"),
                                      link: lambda p: Path(p).write_text("x")}, overwrite=True)):
        with pytest.raises(OutputExistsError, match="symbolic link"):
            call()
    assert mine.read_text() == "mine\n" and link.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "mine.txt", "out.txt"]  # nothing written, not even the other file of the set


# -- 2. every generated file fingerprinted: an edited one is never replaced ----------------------------------------

def _edit(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace("resplit", "resplit (edited)", 1), encoding="utf-8")


def _build_over(env) -> list:
    """The small release's own build, onto its copy with --overwrite."""
    inputs = env.shared / "reference" / "likelihood" / "inputs" / "snli"
    return ["likelihood", "--source", str(inputs / "all_examples.csv"), *SNLI_ARGS, "--scores",
            str(inputs / "all_examples__False_loglikelihoods.npy"), "--validation-size", "40", "--test-size", "40",
            "--limit", "400", "--length-buckets", "4", "--out", str(env.release), "--overwrite", "--no-progress"]


def _group_file(release: Path) -> str:
    (group,) = [p for p in (release / "lm_eval").glob("_*.yaml") if "resplit_files" in p.read_text()]
    return f"lm_eval/{group.name}"


EDITED = {("eval.yaml", "export inspect"): lambda env: ["export", "inspect", str(env.release)],
          ("eval.yaml", "a build's --overwrite"): _build_over,
          ("croissant.json", "export croissant"): lambda env: ["export", "croissant", str(env.release)],
          ("croissant.json", "a build's --overwrite"): _build_over,
          ("the harness group file", "export lm-eval"): lambda env: ["export", "lm-eval", str(env.release)]}


@pytest.mark.parametrize("generated, command", list(EDITED))
def test_a_generated_file_the_user_edited_is_never_replaced(generated, command, env, capsys):
    name = _group_file(env.release) if generated.startswith("the harness") else generated
    _edit(env.release / name)
    line = refused_in_one_line(EDITED[generated, command](env), capsys, env.release)
    assert name.split("/")[-1] in line and ("edited since" in line or "changed since" in line), line
    assert "move" in line and "(edited)" in (env.release / name).read_text(encoding="utf-8")


def test_an_unedited_generated_file_is_replaced(env, capsys):
    """The other side: the same commands on the files as resplit wrote them replace them (the same bytes), each
    carrying its fingerprint."""
    from split_builders.release.provenance import EDITED, sealed_digest

    before = tree_state(env.release)
    for argv in (["export", "inspect", str(env.release)], ["export", "croissant", str(env.release)],
                 ["export", "lm-eval", str(env.release)]):
        assert main(argv) == 0, capsys.readouterr().err
    assert tree_state(env.release) == before
    for name in ("eval.yaml", "croissant.json", _group_file(env.release)):
        assert sealed_digest(env.release / name) not in (None, EDITED), name


# -- 3. report --out: its own files only, and all or nothing --------------------------------------------------------

def test_report_overwrite_removes_the_earlier_reports_files_it_wrote(env, capsys):
    out = env.tmp / "out"
    assert main(report(env, out)) == 0
    first = {p.name for p in out.iterdir()}
    assert {"comparisons.csv", "concurrence.csv", "concurrence.png"} <= first
    (out / "concurrence.csv").write_text("my notes on the concurrence\n")  # the user's now
    (out / "mine.txt").write_text("mine\n")
    assert main(report(env, out, "--overwrite", runs=env.one)) == 0
    second = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert "comparisons.csv" not in second and "concurrence.png" not in second  # the earlier report's: removed
    assert (out / "concurrence.csv").read_text() == "my notes on the concurrence\n"  # edited: kept
    assert (out / "mine.txt").read_text() == "mine\n" and {"report.md", "results.csv"} <= second
    assert "resplit report: 1 model(s)" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_users_entry_where_a_report_file_goes_is_one_line(kind, env, capsys):
    out = env.tmp / "out"
    out.mkdir()
    if kind == "folder":
        (out / "report.md").mkdir()
        (out / "report.md" / "notes.txt").write_text("mine\n")
    else:
        (out / "report.md").write_text("# my own report\n")
    line = refused_in_one_line(report(env, out, "--overwrite"), capsys, out)
    assert "report.md" in line and ("a folder" if kind == "folder" else "not written by resplit") in line, line


@pytest.mark.parametrize("earlier", [False, True])
def test_a_report_stopped_while_it_writes_leaves_out_as_it_was(earlier, env, capsys, monkeypatch):
    from split_builders.evaluation import report_figures

    out = env.tmp / "out"
    if earlier:
        assert main(report(env, out)) == 0
    before = tree_state(env.tmp)

    def killed(gaps, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_figures, "forest_plot", killed)  # the first figure, after every table
    assert main(report(env, out, "--overwrite", runs=env.one)) == 130
    assert tree_state(env.tmp) == before and out.exists() == earlier


# -- 4. a lock: its pid and host, and a stale one taken over ----------------------------------------------------------

def test_a_lock_records_its_pid_and_host(tmp_path):
    from split_builders.release.places import OutputLock

    with OutputLock(tmp_path / "out") as lock:
        assert lock.path.read_text() == f"{os.getpid()} {socket.gethostname()}"


@pytest.mark.parametrize("left", ["12345", "12345 otherhost"])
def test_a_stale_lock_is_taken_over_with_a_note_and_removed(left, env, capsys, toy_method):
    lock = env.tmp / ".out.lock"
    lock.write_text(left)
    assert main(toy_build(env, env.tmp / "out")) == 0
    printed = capsys.readouterr()
    err = printed.out + printed.err  # the build's log
    assert "took over the lock" in err and "pid 12345" in err and not lock.exists()


# -- 5. given scores follow their rows ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nli(shared) -> pd.DataFrame:
    frame = pd.read_csv(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv", nrows=240)
    frame["score"] = np.random.default_rng(9).normal(-40, 8, size=len(frame))
    return frame[["premise", "hypothesis", "gold_label", "score"]]


@pytest.fixture(scope="module")
def geoquery(shared) -> pd.DataFrame:
    from loading_scripts import nqg

    pairs = nqg.read_pairs(shared / "data" / "geoquery" / "geoquery_nqg.tsv")
    frame = pd.DataFrame(pairs, columns=["input", "target"])
    frame["score"] = np.random.default_rng(4).normal(-30, 6, size=len(frame))
    return frame


IDENTITY = {"likelihood": ("premise", "hypothesis"), "tmcd": ("input", "target")}


def _split(method, frame, **options) -> dict:
    """The rows (by identity: their texts) of each config split by the given scores (``ll_split*``)."""
    scores = options.pop("scores", frame["score"].to_numpy())
    data = frame.drop(columns="score")
    if method == "likelihood":
        options = {"prompt_field": "premise", "query_field": "hypothesis", "label_field": "gold_label",
                   "null_splits": 0, "validation_size": 20, "test_size": 40, **options}
    else:
        options = {"train_size": 440, "iterations": 20, "configs": ["standard"], "null_splits": 0,
                   "published": False, **options}
    configs = split_builders.split(method, data, scores=scores, seed=7, **options)
    return {config: {split: sorted(zip(*(rows[c] for c in IDENTITY[method]))) for split, rows in splits.items()}
            for config, splits in configs.items() if config.startswith("ll_split")}


@pytest.fixture(scope="module")
def expected(nli, geoquery) -> dict:
    """Per method, the split of the frame without a ``source_id`` column (its rows numbered by position)."""
    return {method: _split(method, frame) for method, frame in (("likelihood", nli), ("tmcd", geoquery))}


@pytest.mark.parametrize("method, ids", [("likelihood", "shuffled 0..n-1"), ("likelihood", "shuffled, sparse, by key"),
                                         ("tmcd", "shuffled 0..n-1")])
def test_given_scores_follow_their_rows_whatever_source_id_the_frame_has(method, ids, nli, geoquery, expected):
    """A frame with a shuffled ``source_id`` column of its own splits its rows as the same frame without it, each
    row with its own score (given by position, or by ``scores_key``): before, every row got another row's."""
    frame = (nli if method == "likelihood" else geoquery).copy()
    order = np.random.default_rng(1).permutation(len(frame))
    assert expected[method] and all(expected[method].values())
    if ids == "shuffled 0..n-1":
        frame["source_id"] = order
        assert _split(method, frame) == expected[method]
    else:
        frame["source_id"] = order * 7 + 100
        by_key = pd.Series(frame["score"].to_numpy(), index=frame["source_id"]).sample(frac=1, random_state=3)
        assert _split(method, frame, scores=by_key, scores_key="source_id") == expected[method]


def test_a_series_not_aligned_with_the_frame_is_refused(nli):
    frame = nli.sample(frac=1, random_state=2)  # its index shuffled: position or label?
    with pytest.raises(ResplitError) as caught:
        _split("likelihood", frame, scores=pd.Series(frame["score"].to_numpy()))
    message = str(caught.value)
    assert "\n" not in message and "ambiguous" in message and "to_numpy()" in message, message
