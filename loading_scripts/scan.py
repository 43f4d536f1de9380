"""SCAN (Lake & Baroni 2018): ``IN: <command> OUT: <actions>`` per line of ``tasks.txt``.

The released splits are text files of their own; their lines are mapped back to rows of
``tasks.txt`` (every command occurs once there). A line repeated within one split file is one row:
a split is a set of examples, and the add-primitive train files repeat their primitive (``jump``
1,467 times in ``tasks_train_addprim_jump.txt``, ``turn left`` in the turn_left one) to oversample
it, which a trainer can do again; the config's ``file`` parameter says how many lines repeated.
A line in both a train and a test file is an error before any search (``check_loaded``). The MCD splits (Keysers et al. 2020) are index
files (``trainIdxs``/``devIdxs``/``testIdxs``) into ``tasks.txt``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from loading_scripts.compositional import CompositionalSource, read_id_split, rows_dataset
from loading_scripts.files import open_text
from loading_scripts.tables import row_keys
from loading_scripts.errors import SourceLoadError

TEXT_SPLITS = {
    "simple": "simple_split/tasks_{}_simple.txt",
    "length": "length_split/tasks_{}_length.txt",
    "addprim_jump": "add_prim_split/tasks_{}_addprim_jump.txt",
    "addprim_turn_left": "add_prim_split/tasks_{}_addprim_turn_left.txt",
    "template_around_right": "template_split/tasks_{}_template_around_right.txt",
}


def read_tasks(path: Path) -> list[tuple[str, str]]:
    """``(command, actions)`` per line of a SCAN task file."""
    pairs = []
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, 1):
                line = line.strip()
                if not line:
                    continue
                if not line.startswith("IN: ") or " OUT: " not in line:
                    raise SourceLoadError(f"{path}: line {number} is not 'IN: ... OUT: ...'")
                command, actions = line[4:].split(" OUT: ", 1)
                pairs.append((command.strip(), actions.strip()))
    except SourceLoadError:
        raise
    except (EOFError, OSError, zlib.error) as error:  # a gzip stream cut short or damaged
        raise SourceLoadError(f"{path}: not a complete gzip file ({error}); copy or download it again") from None
    except UnicodeDecodeError as error:
        raise SourceLoadError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start} of a line); re-encode "
                              "the file as UTF-8") from None
    return pairs


def rows_of_lines(pairs, lines) -> np.ndarray:
    """For each of ``lines``, the row of ``pairs`` (``tasks.txt``) holding the same pair, -1 where
    none does (the last such row if a pair repeats). Pairs are matched by
    :func:`~loading_scripts.tables.row_keys`."""
    both = [*pairs, *lines]
    keys = row_keys(pa.table({"command": [p[0] for p in both], "actions": [p[1] for p in both]}),
                    ["command", "actions"])
    unique, last_from_end = np.unique(keys[:len(pairs)][::-1], return_index=True)
    row_of_key = np.full(int(keys.max(initial=0)) + 1, -1, dtype=np.int64)
    row_of_key[unique] = len(pairs) - 1 - last_from_end
    return row_of_key[keys[len(pairs):]]


def _find(folder: Path, relative: str) -> Path | None:
    for candidate in (folder / relative, folder / f"{relative}.gz"):
        if candidate.is_file():
            return candidate
    return None


def from_tasks(path) -> CompositionalSource:
    """SCAN's ``tasks.txt(.gz)`` alone (every example once): the rows :func:`load` reads from a SCAN folder,
    without the published splits beside the file (give the folder for those)."""
    pairs = read_tasks(Path(path))
    if not pairs:
        raise SourceLoadError(f"{path} holds no 'IN: ... OUT: ...' line (SCAN)")
    return CompositionalSource(rows_dataset([p[0] for p in pairs], [p[1] for p in pairs]), name=str(path),
                               target_language="scan", source_id_note="0-based line of SCAN tasks.txt",
                               license="bsd-3-clause", language=("en",))


def load(folder) -> CompositionalSource:
    folder = Path(folder)
    tasks = _find(folder, "tasks.txt")
    if tasks is None:
        raise SourceLoadError(f"{folder} holds no tasks.txt(.gz) (SCAN)")
    pairs = read_tasks(tasks)
    if not pairs:
        raise SourceLoadError(f"{tasks} holds no 'IN: ... OUT: ...' line (SCAN): the folder's examples are missing")
    source = CompositionalSource(rows_dataset([p[0] for p in pairs], [p[1] for p in pairs]), name=str(folder),
                                 target_language="scan", source_id_note="0-based line of SCAN tasks.txt",
                                 license="bsd-3-clause", language=("en",))
    for name, pattern in TEXT_SPLITS.items():
        files = {split: _find(folder, pattern.format(split)) for split in ("train", "test")}
        if None in files.values():
            continue
        split, repeated = {}, {}
        for part, path in files.items():
            lines = read_tasks(path)
            rows = rows_of_lines(pairs, lines)
            missing = np.flatnonzero(rows < 0)
            if missing.size:
                raise SourceLoadError(f"{path}: {missing.size} line(s) not in tasks.txt, e.g. {lines[missing[0]]}")
            first = np.sort(np.unique(rows, return_index=True)[1])
            split[part] = rows[first]  # each row once, in order of its first line
            if len(lines) > first.size:
                repeated[part] = len(lines) - first.size
        source.published[name] = split
        note = "; ".join(f"{count} repeated line(s) of the {part} file read as one row each"
                         for part, count in repeated.items())
        source.published_from[name] = f"Lake & Baroni (2018) {pattern.format('train|test')}" + (f" ({note})" if note else "")
    for k in (1, 2, 3):
        path = folder / "mcd_split" / f"mcd{k}.json"
        if path.is_file():
            source.published[f"mcd{k}"] = read_id_split(
                path, len(pairs), {"train": "trainIdxs", "validation": "devIdxs", "test": "testIdxs"})
            source.published_from[f"mcd{k}"] = f"Keysers et al. (2020) mcd_split/mcd{k}.json"
    return source
