"""``--out`` and ``--overwrite`` never lose what resplit did not make: only a resplit release or an empty
folder is replaced, an output that holds the build's inputs is refused, top folders and dangling links are
refused before any work, and a replacement interrupted between its two renames is recovered, never
thrown away. Shown with the toy method (tests/conftest.py) through the CLI."""

import os
import shutil

import pytest

from split_builders.cli import main


@pytest.fixture()
def toy_source(toy_method, tmp_path):
    source = tmp_path / "inputs" / "toy.csv"
    source.parent.mkdir()
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    return source


def build(source, out, *extra):
    return main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress", *extra])


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_replaces_a_release_and_an_empty_folder(toy_source, tmp_path):
    out = tmp_path / "out"
    assert build(toy_source, out, "--seed", "1") == 0
    first = snapshot(out)
    assert build(toy_source, out, "--seed", "2", "--overwrite") == 0
    assert snapshot(out) != first and (out / "README.md").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build(toy_source, empty, "--overwrite") == 0 and (empty / "README.md").is_file()


@pytest.mark.parametrize("content", [{"notes.txt": b"mine"}, {"README.md": b"# my project\n", "data.csv": b"a\n1\n"},
                                     {"README.md": b"---\npretty_name: x\n---\nnot resplit's\n"}])
def test_overwrite_refuses_a_folder_of_other_files_and_keeps_them(content, toy_source, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    for name, data in content.items():
        (out / name).write_bytes(data)
    before = snapshot(out)
    assert build(toy_source, out, "--overwrite") == 2
    err = capsys.readouterr().err
    assert "replaces only a resplit release or an empty folder" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert snapshot(out) == before


def test_an_out_that_holds_the_source_is_refused_even_with_overwrite(toy_source, tmp_path, capsys):
    folder = toy_source.parent
    (folder / "notes.txt").write_text("keep me")
    before = snapshot(folder)
    for out in (folder, tmp_path):
        assert build(toy_source, out, "--overwrite") == 2
        assert "which this build reads" in capsys.readouterr().err
    assert snapshot(folder) == before


def test_an_out_that_holds_the_cache_is_refused(toy_source, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache" / "resplit"
    cache.mkdir(parents=True)
    monkeypatch.setenv("RESPLIT_CACHE", str(cache))
    assert build(toy_source, tmp_path / "cache", "--overwrite") == 2
    assert "which this build reads" in capsys.readouterr().err and cache.is_dir()


@pytest.mark.parametrize("out", ["", "   ", "/", "~", "."])
def test_empty_and_top_folders_are_refused_before_any_work(out, toy_source, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert build(toy_source, out, "--overwrite") == 2
    err = capsys.readouterr().err
    assert ("is empty" in err or "give a folder of its own" in err) and "Traceback" not in err
    assert toy_source.is_file()


def test_a_dangling_symlink_is_refused(toy_source, tmp_path, capsys):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    assert build(toy_source, link) == 2
    assert "symbolic link to nothing" in capsys.readouterr().err and link.is_symlink()


def _interrupted(toy_source, tmp_path, *, new_complete: bool):
    """The state a build killed between the two renames of --overwrite leaves: no --out, the old
    release parked in .out.old-*/old, the new one staged in .out.tmp-* (complete or not)."""
    out, new = tmp_path / "out", tmp_path / "new"
    assert build(toy_source, out, "--seed", "1") == 0
    assert build(toy_source, new, "--seed", "2") == 0
    old, fresh = snapshot(out), snapshot(new)
    from split_builders.release.places import mark_staging

    parked = tmp_path / ".out.old-killed"
    parked.mkdir()
    mark_staging(parked)  # the writer marks every folder it stages or parks a release in, first
    os.replace(out, parked / "old")
    staged = tmp_path / ".out.tmp-killed"
    shutil.move(str(new), staged)
    mark_staging(staged)
    if not new_complete:
        (staged / "README.md").unlink()  # the README is written last: without it the staging is incomplete
    return out, old, fresh


@pytest.mark.parametrize("new_complete", [True, False])
def test_an_interrupted_replacement_is_recovered_by_the_next_build_even_a_refused_one(new_complete, toy_source,
                                                                                        tmp_path, capsys):
    out, old, fresh = _interrupted(toy_source, tmp_path, new_complete=new_complete)
    # the next build into the same --out is refused (no --overwrite), after it took the lock
    assert build(toy_source, out) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert snapshot(out) == (fresh if new_complete else old)
    assert not list(tmp_path.glob(".out.tmp-*")) and not list(tmp_path.glob(".out.old-*"))


# -- figures: a format matplotlib cannot write is refused before any work, for every flag that takes a figure ------

def _concurrence_inputs(shared, tmp_path):
    import json

    golden = json.loads((shared / "reference/concurrence/golden.json").read_text())
    lines = ["model,benchmark,seed,score"] + [f"{model},{benchmark},{seed},{score}" for benchmark in ("A", "B")
                                            for model, scores in golden[benchmark].items()
                                            for seed, score in zip(golden["seeds"], scores)]
    path = tmp_path / "results.csv"
    path.write_text("\n".join(lines) + "\n")
    return ["concurrence", "--results", str(path)]


def _curriculum_report_inputs(shared, tmp_path):
    labels, predictions = ["entailed", "not-entailed"] * 20, ["entailed"] * 25 + ["not-entailed"] * 15
    rows = ["config,label,prediction"] + [f"verbnet,{label},{prediction}" for label, prediction in zip(labels, predictions)]
    path = tmp_path / "predictions.csv"
    path.write_text("\n".join(rows) + "\n")
    return ["curriculum-report", "--predictions", str(path)]


# (subcommand, flag): the arguments of a run that draws a figure at the path the flag names.
FIGURE_FLAGS = {("concurrence", "--heatmap"): _concurrence_inputs,
                ("curriculum-report", "--figure"): _curriculum_report_inputs}
BAD_FIGURES = {"an unknown extension": "matrix.xyz", "a typo of png": "matrix.pnj", "no extension": "matrix",
               "a format of data, not images": "matrix.csv"}


def test_the_table_holds_every_flag_that_takes_a_figure():
    """Every subcommand option named --figure or --heatmap is in FIGURE_FLAGS (a new one joins the table)."""
    import argparse

    from split_builders.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    found = {(name, flag) for name, sub in commands.items() for action in sub._actions
             for flag in action.option_strings if flag in ("--figure", "--heatmap")}
    assert found == set(FIGURE_FLAGS)


@pytest.mark.parametrize("command, flag", list(FIGURE_FLAGS))
def test_a_figure_format_matplotlib_cannot_write_is_refused_before_the_work(command, flag, shared, tmp_path, capsys):
    """Today matplotlib's own ValueError escaped as a traceback once the work was done. Each case: exit 2, one line
    naming the flag and the formats matplotlib writes, and no file written."""
    args = FIGURE_FLAGS[(command, flag)](shared, tmp_path)
    for case, name in BAD_FIGURES.items():
        figure = tmp_path / name
        code = main([*args, flag, str(figure)])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (case, err)
        assert flag in lines[0] and ".png" in lines[0] and ".svg" in lines[0], (case, lines[0])
        assert not figure.exists() and not list(tmp_path.glob("matrix*")), case
    if command == "curriculum-report":  # quick to run: a format it writes, in any case, is written
        figure = tmp_path / "matrix.SVG"
        assert main([*args, flag, str(figure)]) == 0 and figure.read_bytes().lstrip().startswith(b"<?xml")
