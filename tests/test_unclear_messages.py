"""Messages that say which file, which line and what to do (issue 37, class 8), and ``show --rows`` bounds.

Each class is a table of cases run over every command or family it applies to, enumerated from the registries
(``split_builders.evidence.views`` for the inspection commands, ``registry()`` for the families, their
``example_arguments`` for a real command line): a dataset folder with a header-only, ragged or non-UTF-8 CSV;
``--scores`` given a folder; a FIFO or a symbolic link loop as ``--source``; a negative size in an integer-list
option; ``verify`` after one data file changed; ``show --rows`` out of bounds. Every case: exit 2 (``verify``: 1,
its report), one line, no traceback, the user's files byte-identical, nothing written at ``--out``.
"""

from __future__ import annotations

import csv
import os
import shutil
import typing

import pyarrow.parquet as pq
import pytest

from conftest import FAMILIES, refused_in_one_line
from split_builders.api import registry
from split_builders.cli import main
from split_builders.evidence import views

VIEWS = tuple(view.subcommand for view in views().values())


_refused = refused_in_one_line


# -- a dataset folder whose CSV is not a table: the file, the line, what to do -------------------------------

def _snli_rows(shared, n):
    with open(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1: n + 1]


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])


BAD_TEST_CSV = {  # how test.csv is damaged -> what the line says (besides the file's name)
    "header-only": (lambda text, lines: lines[0] + "\n", "holds a header but no rows"),
    "ragged": (lambda text, lines: text + "one,two,three,four\n", "has 4 field(s), the header has 3"),
    "short-record": (lambda text, lines: text + "one,two\n", "has 2 field(s), the header has 3"),
    "not-utf8": (None, "is not UTF-8 (byte 0xe9"),
}


@pytest.mark.parametrize("command", VIEWS)
@pytest.mark.parametrize("damage", sorted(BAD_TEST_CSV))
def test_a_dataset_folder_with_a_bad_csv_names_the_file_and_the_line(damage, command, shared, tmp_path, capsys):
    header, rows = _snli_rows(shared, 60)
    folder = tmp_path / "dataset"
    folder.mkdir()
    _write_csv(folder / "train.csv", header, rows[:40])
    _write_csv(folder / "test.csv", header, rows[40:])
    test = folder / "test.csv"
    change, expected = BAD_TEST_CSV[damage]
    if change is None:
        test.write_bytes(test.read_bytes() + "caf\u00e9,x,neutral\n".encode("latin-1"))
    else:
        text = test.read_text(encoding="utf-8")
        test.write_text(change(text, text.splitlines()), encoding="utf-8")
    line = _refused([command, str(folder), "--no-progress"], capsys, folder)
    assert str(test) in line and expected in line and "fix the file" in line and "test split" in line
    if damage != "header-only":
        assert "line 22" in line  # the header, 20 rows, then the bad one


# -- paths that are not regular files ---------------------------------------------------------------------

def _replace_source(method, args: list, value: str) -> list:
    flags = ("--source", *method.source_aliases)
    position = next(i for i, a in enumerate(args) if a in flags)
    return [*args[: position + 1], value, *args[position + 2:]]


SPECIAL = {"fifo": "is a FIFO (named pipe)", "symlink-loop": "is a symbolic link that loops"}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_a_fifo_or_a_symlink_loop_as_source_is_named_as_what_it_is(kind, family, family_args, tmp_path, capsys):
    path = tmp_path / "source.csv"
    if kind == "fifo":
        os.mkfifo(path)  # read, it would block the build for ever
    else:
        os.symlink(tmp_path / "other.csv", path)
        os.symlink(path, tmp_path / "other.csv")
    method, out = registry()[family], tmp_path / "out"
    args = _replace_source(method, family_args[family], str(path))
    line = _refused([family, *args, "--out", str(out), "--no-progress"], capsys, out=out)
    assert SPECIAL[kind] in line and str(path) in line and "file not found" not in line


SCORED = tuple(name for name, method in registry().items() if "scores" in method.Options.__dataclass_fields__)


@pytest.mark.parametrize("family", SCORED)
def test_scores_given_a_folder_say_it_is_a_folder(family, family_args, tmp_path, capsys):
    folder = tmp_path / "scores"
    folder.mkdir()
    args = list(family_args[family])
    if "--scores" in args:
        args[args.index("--scores") + 1] = str(folder)
    else:
        args += ["--scores", str(folder)]
    out = tmp_path / "out"
    line = _refused([family, *args, "--out", str(out), "--no-progress"], capsys, folder, out=out)
    assert f"scores file {str(folder)!r} is a folder; give a .npy file" in line


def _integer_lists():
    """``(family, option)`` of every option typed as a list of integers."""
    for name, method in registry().items():
        for option, hint in typing.get_type_hints(method.Options).items():
            members = typing.get_args(hint) if typing.get_origin(hint) is not tuple else (hint,)
            if any(typing.get_origin(m) is tuple and typing.get_args(m)[:1] == (int,) for m in (hint, *members)):
                yield name, option


INTEGER_LISTS = tuple(_integer_lists())


def test_there_is_an_integer_list_option_to_check():
    assert ("curriculum", "inoculation_sizes") in INTEGER_LISTS


@pytest.mark.parametrize("family, option", INTEGER_LISTS)
@pytest.mark.parametrize("value", ["-5,10", "10,-5"])
def test_a_negative_size_in_a_list_names_the_option_and_the_bound(family, option, value, family_args, tmp_path,
                                                                  capsys):
    out = tmp_path / "out"
    flag = "--" + option.replace("_", "-")
    line = _refused([family, *family_args[family], f"{flag}={value}", "--out", str(out), "--no-progress"], capsys,
                    out=out)
    assert f"{option} must be a positive integer, got '-5'" in line


# -- verify after one data file changed ------------------------------------------------------------------

def test_verify_after_one_file_changed_names_it_and_blames_no_other_config(small_release, tmp_path, capsys):
    folder = tmp_path / "release"
    shutil.copytree(small_release, folder)
    (path,) = (folder / "ll_split").glob("test-*.parquet")
    pq.write_table(pq.read_table(path).slice(5), path)  # five rows gone; the card still says 40
    capsys.readouterr()
    assert main(["verify", str(folder)]) == 1
    printed = capsys.readouterr().out
    assert "SplitInfo(" not in printed and "Traceback" not in printed
    differs = [line for line in printed.splitlines() if " differs: " in line]
    assert differs and all(line.split()[2].startswith("ll_split/") for line in differs), differs
    assert "35 rows but the card says 40" in printed
    assert "split 'test' holds 35 rows but the card's dataset_info records 40" in printed
    assert "level 2  (all)" in printed and "not re-derived: ll_split/test is not the file the card records" in printed


# -- show --rows: bounds ----------------------------------------------------------------------------------

@pytest.mark.parametrize("rows", ["-1", "0"])
def test_show_refuses_rows_out_of_bounds_before_reading(rows, small_release, capsys):
    line = _refused(["show", str(small_release), "ll_split", "--rows", rows], capsys, small_release)
    assert f"--rows must be a positive integer, got {rows}" in line
    capsys.readouterr()
    assert main(["show", str(small_release), "ll_split", "--rows", "1"]) == 0
    shown = capsys.readouterr().out
    assert shown.count("rows of lowest score") == 3 and "\ntest: 1 rows of highest score\n  score=" in shown
