"""A damaged release is refused in one line by every command that reads it (issue 37, class 2).

One reader of release folders (:class:`split_builders.release.folder.Released`) for every command: a data file
that is missing, truncated, empty, corrupted, a folder, or changed inside while it still parses (its bytes are
checked against the sha256 the card records as they are read), and a README.md that is not UTF-8, give one line
naming the file and what to do: exit 2, no traceback, the user's files byte-identical afterwards. ``--configs``
limits what is read, so a damaged config that was not asked for stops nothing.

The commands are enumerated: every registered evidence view's subcommand (``split_builders.evidence.views``), then
``show`` and ``diff``; a README that is not UTF-8 also ``verify``, ``export`` and ``push``. Copies of one small
release (``small_release``, built once per session) are damaged.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import refused_in_one_line, tree_state
from split_builders.cli import main
from split_builders.evidence import views

DAMAGED = ("ll_split", "test")  # the config and split whose data file is damaged
OTHER = "random"  # an untouched config


def _data_file(folder: Path, config: str = DAMAGED[0], split: str = DAMAGED[1]) -> Path:
    (path,) = (folder / config).glob(f"{split}-*.parquet")
    return path


def _missing(path: Path) -> None:
    path.unlink()


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _corrupted(path: Path) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle: middle + 64] = bytes(b ^ 0xFF for b in data[middle: middle + 64])
    path.write_bytes(bytes(data))


def _still_parses(path: Path) -> None:
    """One text changed, written back as a valid Parquet file with the same schema: only its bytes tell."""
    table = pq.read_table(path)
    texts = table.column("hypothesis").to_pylist()
    texts[0] = "a different hypothesis"
    column = table.column_names.index("hypothesis")
    pq.write_table(table.set_column(column, table.schema.field(column), pa.array(texts, table.schema.field(column).type)),
                   path)
    assert pq.read_table(path).num_rows == table.num_rows  # it still reads


def _a_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "part-0.parquet").write_bytes(b"PAR1")


DATA_DAMAGES = {"missing": _missing, "truncated": _truncated, "empty": _empty, "corrupted": _corrupted,
                "still-parses": _still_parses, "a-folder": _a_folder}


def _readme_not_utf8(folder: Path) -> None:
    readme = folder / "README.md"
    text = readme.read_bytes()
    cut = text.index(b"\n## ") + 1  # in the card's Markdown, after the YAML
    readme.write_bytes(text[:cut] + "caf\u00e9 notes\n".encode("latin-1") + text[cut:])


def inspection_commands(folder: Path, good: Path, config: str) -> dict:
    """``{name: argv}``: every evidence view's subcommand (from the registry), ``show`` of ``config`` and ``diff``
    against an untouched copy."""
    commands = {view.subcommand: [view.subcommand, str(folder), "--no-progress"] for view in views().values()}
    commands["show"] = ["show", str(folder), config]
    commands["diff"] = ["diff", str(good), str(folder)]
    return commands


INSPECTION = tuple(inspection_commands(Path("f"), Path("g"), "c"))
ALL_COMMANDS = (*INSPECTION, "verify", "export", "push")


def _refused(argv, capsys, *folders) -> str:
    """Run ``resplit ARGV``: exit 2, one line on stderr naming the command, no traceback, ``folders`` byte-identical.
    The line."""
    line = refused_in_one_line(argv, capsys, *folders)
    assert line.startswith(f"resplit {argv[0]}: error: "), line
    return line


@pytest.fixture()
def copies(small_release, tmp_path):
    """An untouched copy and a copy to damage."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(small_release, good)
    shutil.copytree(small_release, bad)
    return good, bad


@pytest.mark.parametrize("command", INSPECTION)
@pytest.mark.parametrize("damage", sorted(DATA_DAMAGES))
def test_a_damaged_data_file_is_one_line_naming_it(damage, command, copies, capsys):
    good, bad = copies
    path = _data_file(bad)
    DATA_DAMAGES[damage](path)
    line = _refused(inspection_commands(bad, good, DAMAGED[0])[command], capsys, good, bad)
    relative = path.relative_to(bad).as_posix()
    assert relative in line and "restore the file or rebuild the release" in line
    expected = {"missing": "is missing", "empty": "is empty (0 bytes)", "a-folder": "is not a file"}.get(
        damage, "is not the one the card records")  # truncated, corrupted or changed: its sha256 tells
    assert expected in line


@pytest.mark.parametrize("damage", ["truncated", "empty", "corrupted", "still-parses"])
def test_export_reads_through_the_same_reader(damage, copies, capsys, tmp_path):
    """``export`` (which answered a missing file in one line, but a damaged one with a traceback or silently)."""
    _, bad = copies
    path = _data_file(bad)
    DATA_DAMAGES[damage](path)
    line = _refused(["export", "lm-eval", str(bad), "--out", str(tmp_path / "tasks")], capsys, bad)
    assert path.relative_to(bad).as_posix() in line and "restore the file or rebuild the release" in line
    assert not (tmp_path / "tasks").exists()


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_a_card_that_is_not_utf8_is_one_line_naming_the_line(command, copies, capsys, tmp_path):
    good, bad = copies
    _readme_not_utf8(bad)
    argv = {**inspection_commands(bad, good, DAMAGED[0]), "verify": ["verify", str(bad)],
            "export": ["export", "lm-eval", str(bad), "--out", str(tmp_path / "tasks")],
            "push": ["push", str(bad), "org/name", "--version", "1.0.0", "--dry-run"]}[command]
    line = _refused(argv, capsys, good, bad)
    assert "README.md: line " in line and "is not UTF-8 (byte 0xe9" in line and "rebuild the release" in line
    assert not (tmp_path / "tasks").exists()


@pytest.mark.parametrize("command", [c for c in INSPECTION if c != "show"])  # show reads the CONFIG it names
def test_configs_limits_what_is_read(command, copies, capsys):
    """A damaged config that is not asked for stops nothing; asked for, it is refused naming its file."""
    good, bad = copies
    _still_parses(_data_file(bad))
    argv = [*inspection_commands(bad, good, OTHER)[command], "--configs", OTHER]
    before = tree_state(bad)
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert OTHER in printed and f"{DAMAGED[0]} " not in printed
    assert tree_state(bad) == before
    line = _refused([*argv[:-1], DAMAGED[0]], capsys, bad)
    assert _data_file(bad).relative_to(bad).as_posix() in line
    unknown = _refused([*argv[:-1], "no_such_config"], capsys, bad)
    assert "no config 'no_such_config'" in unknown and OTHER in unknown and "configs:" in unknown


def test_each_data_file_is_hashed_once_on_the_bytes_that_are_parsed(small_release, monkeypatch):
    """The reader hashes a file once (streamed in blocks) as it reads it; a second read of the same file does not
    hash it again, and a file changed on disk since is hashed (and refused) again."""
    from split_builders.evidence.inputs import EvidenceInput
    from split_builders.release import folder as reader

    hashed = []
    real = reader._sha256
    monkeypatch.setattr(reader, "_sha256", lambda path, **kw: hashed.append(Path(path).name) or real(path, **kw))
    released = reader.Released(small_release)
    files = [(c, s) for c, splits in released.files.items() for s in splits]
    data = EvidenceInput.from_release(released)
    assert sorted(hashed) == sorted(released.path(c, s).name for c, s in files)  # every file, once
    assert data.parts[OTHER]["test"].table.num_rows == 40
    released.table(OTHER, "test")
    released.all_rows()
    assert len(hashed) == len(files)  # read again: not hashed again
    assert reader.BLOCK <= 1 << 20  # streamed, never one read of a whole large file


def test_a_file_changed_after_it_was_read_is_refused_on_the_next_read(small_release, tmp_path):
    from split_builders.errors import InvalidReleaseError
    from split_builders.release.folder import Released

    folder = tmp_path / "release"
    shutil.copytree(small_release, folder)
    released = Released(folder)
    assert released.table(*DAMAGED).num_rows == 40
    _still_parses(_data_file(folder))
    with pytest.raises(InvalidReleaseError, match="is not the one the card records"):
        released.table(*DAMAGED)
    assert Released(folder, check=False).table(*DAMAGED).num_rows == 40  # verify reads it to say what differs
