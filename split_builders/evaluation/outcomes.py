"""The one reading path every run's outcomes pass, whatever wrote them (lm-evaluation-harness samples files, inspect-ai
logs, predictions tables: :mod:`runs`, :mod:`inspect_runs`): nothing a run holds is coerced.

Each reader gives a frame per file and (config, split) with the raw values it read and, per row, the ``file`` and
the ``place`` in it (``line 7``, ``sample 4``, ``row 3``). :func:`check_outcomes` then checks them all the same
way: ids are whole numbers (12.5 is not row 12), values finite numbers (a missing or infinite value is refused,
not averaged), Matthews correlation pairs class ids of the release's labels, and every row is one of the split's
(rows of another split of the config are named as such); :func:`finish_run` refuses a key given twice with
different outcomes (the last row no longer wins) and reads one given twice alike once, with a note;
:func:`combine` reads a run written twice once. Each refusal is one line naming the
file, the place and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from loading_scripts.tables import whole_number, whole_numbers  # noqa: F401 - the one rule, readers' name
from split_builders.errors import InvalidParameterError

PLACE = ("file", "place")
"""The columns each reader adds to its outcomes: the file a row was read from and where in it (dropped once the
run is checked)."""
KEY = ("model", "release", "config", "split", "source_id", "example", "metric")
"""One outcome per key in a run."""


class RunError(InvalidParameterError):
    """A run that cannot be read, or that does not belong to the release (one line, naming the file)."""


def json_lines(path: Path):
    """``(line number, object)`` of each non-empty line of a JSON-lines file, read strictly as UTF-8: a line that is
    not UTF-8, not JSON or not an object is refused in one line naming it."""
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise RunError(f"{path} cannot be read ({error.strerror or error}); give the file as the harness wrote "
                       "it") from None
    with handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise RunError(f"{path}: line {number} is not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                               f"{error.start + 1}); give the file as the harness wrote it (UTF-8)") from None
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except ValueError:
                raise RunError(f"{path}: line {number} is not JSON; give the file as the harness wrote it") from None
            if not isinstance(value, dict):
                raise RunError(f"{path}: line {number} is not a JSON object; give the file as the harness wrote it")
            yield number, value


def finite_number(value):
    """``value`` as a float, or None where it is not a finite number (missing, text, inf, NaN)."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and math.isfinite(value):
        return float(value)
    return None


def whole_column(frame, column: str) -> None:
    """``frame[column]`` as int64, or one line naming the file, the place and the first value that is not a whole
    number (12.5 is not row 12)."""
    ids, bad = whole_numbers(frame[column].to_numpy())
    if bad is not None:
        raw = frame[column].iloc[bad]
        missing = raw is None or (isinstance(raw, float) and math.isnan(raw))
        raise RunError(f"{_at(frame, bad)}: " + (f"no {column}" if missing else f"{column} {_shown(raw)} is not a whole "
                                                 "number") + f"; give each row's {column} as the release has it")
    frame[column] = ids


def _shown(value) -> str:
    """A cell as the message shows it: ``12.5``, ``'abc'`` (a numpy scalar as its Python value)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _at(frame, position: int) -> str:
    return f"{frame['file'].iloc[position]}: {frame['place'].iloc[position]}"


def check_outcomes(frame, release, config: str, split: str, *, split_source: str, classes: int | None = None):
    """``frame`` (one file's rows of ``config``/``split``, raw values) with whole ids and finite values, every row
    one of the split's; refused in one line naming the file, the place and the field. ``split_source`` says where
    the split came from (``its split column``), for the message of rows of another split; ``classes``: the number
    of class ids a Matthews correlation pair may hold."""
    import pandas as pd

    for column in ("source_id", "example"):
        whole_column(frame, column)
    scored = (frame["metric"] != "mcc").to_numpy()
    values = [finite_number(v) if s else math.nan for v, s in zip(frame["value"].tolist(), scored)]
    for position, (value, wanted) in enumerate(zip(values, scored)):
        if wanted and value is None:
            raw, metric = frame["value"].iloc[position], frame["metric"].iloc[position]
            missing = raw is None or (isinstance(raw, float) and math.isnan(raw))
            raise RunError(f"{_at(frame, position)}: " + (f"no {metric} value" if missing else
                                                         f"{metric} {_shown(raw)} is not a finite number")
                           + "; give every row its value as the harness wrote it")
    frame["value"] = np.asarray(values, dtype=float)
    for column in ("gold", "pred"):  # the class ids of a Matthews correlation pair
        raw = frame[column].to_numpy(dtype=object)
        converted = np.array(pd.to_numeric(frame[column], errors="coerce"), dtype=float)
        for position in np.flatnonzero(~scored):
            number = whole_number(raw[position])
            if number is None or number < 0 or (classes is not None and number >= classes):
                span = f"0 to {classes - 1}" if classes else "0 or more"
                what = "gold class" if column == "gold" else "prediction"
                raise RunError(f"{_at(frame, position)}: the mcc pair's {what} {_shown(raw[position])} is not a class id "
                               f"({span}); give the samples as the harness wrote them")
            converted[position] = number
        frame[column] = converted
    _check_rows(frame, release, config, split, split_source)
    return frame


def _check_rows(frame, release, config: str, split: str, split_source: str) -> None:
    where = frame["file"].iloc[0] if len(frame) else "the run"
    splits = release.configs[config]["splits"]
    seen = frame["source_id"].to_numpy()
    if split not in splits and len(seen):  # the rows are the release's, the split named is not: say which it is
        holder = next((s for s in splits if _inside(release.source_ids(config, s), seen).all()), None)
        if holder is not None:
            raise RunError(f"{_at(frame, 0)}: {split_source} says {split}, but config {config} of {release.folder} has "
                           f"no {split} split; its rows are those of the {holder} split: give {holder}")
    if split not in splits:
        raise RunError(f"{where}: config {config} of {release.folder} has no {split} split (its splits: "
                       f"{', '.join(splits)}); give the split the run was made on")
    inside = _inside(release.source_ids(config, split), seen)
    if inside.all():
        return
    first = int(np.flatnonzero(~inside)[0])
    outside = np.unique(seen[~inside])
    other = next((s for s in splits if s != split and _inside(release.source_ids(config, s), outside).all()), None)
    if other is not None:
        raise RunError(f"{_at(frame, first)}: source_id {seen[first]} (and every other row {split} does not hold) is a "
                       f"row of {config}'s {other} split, not of its {split} split ({split_source} says {split}); "
                       f"give the split the rows were evaluated on: {other}")
    raise RunError(f"{where}: source_id {', '.join(map(str, outside[:3]))} is not in {config}/{split} of "
                   f"{release.folder}; the run was made on other rows: give the release it was run on")


def _inside(ids: np.ndarray, seen: np.ndarray) -> np.ndarray:
    position = np.searchsorted(ids, seen)
    return (position < len(ids)) & (ids[np.minimum(position, len(ids) - 1)] == seen) if len(ids) else \
        np.zeros(len(seen), bool)


def finish_run(run) -> None:
    """Read a key a run holds twice with the same outcome once (a row logged or written twice), in a note; refuse one
    held twice with different outcomes (which is the model's is not ours to choose), naming the count and the first
    two keys with their places; then drop the place columns."""
    frame = run.outcomes
    if not len(frame):
        return
    key = list(KEY)
    outcome = key + [c for c in ("value", "gold", "pred") if c in frame.columns]
    if frame.duplicated(key).any():
        alike = frame.duplicated(outcome, keep="first").to_numpy()  # a repeat of an earlier row, outcome and all
        rest = frame[~alike]
        clash = rest.duplicated(key, keep=False).to_numpy()
        if clash.any():
            extra = rest[rest.duplicated(key, keep="first").to_numpy()]
            count = len(extra.drop_duplicates(list(PLACE)))
            shown = []
            for _, first in rest[clash].drop_duplicates(key).head(2).iterrows():
                one, other = (row for _, row in rest[clash & (rest[key] == first[key]).all(axis=1).to_numpy()]
                              .head(2).iterrows())
                at = other["place"] if other["file"] == one["file"] else f"{other['place']} of {other['file']}"
                shown.append(f"source_id {one['source_id']} of {one['config']}/{one['split']} at {one['place']} and {at}")
            raise RunError(f"{rest['file'].iloc[0]}: {count} row{'s' if count != 1 else ''} repeat"
                           f"{'s' if count == 1 else ''} another's key with a different outcome ({'; '.join(shown)}); "
                           "give each row once")
        repeated = frame[alike]
        again = repeated.iloc[0]
        first = rest[(rest[key] == again[key]).all(axis=1).to_numpy()].iloc[0]
        at = again["place"] if again["file"] == first["file"] else f"{again['place']} of {again['file']}"
        count = len(repeated.drop_duplicates(list(PLACE)))
        run.notes.append(f"{Path(first['file']).name}: {count} row{'s' if count != 1 else ''} repeat"
                         f"{'s' if count == 1 else ''} an earlier one, outcome and all (source_id {first['source_id']} "
                         f"of {first['config']}/{first['split']} at {first['place']} and {at}); each read once")
        frame = rest
    run.outcomes = frame.drop(columns=list(PLACE))


def combine(pieces: list, where) -> object:
    """One run of the pieces (one run per file) of a model in one folder: a (config, split) that two files hold
    with the same outcomes is read once (and said in a note); with different outcomes it is refused."""
    import pandas as pd

    first = pieces[0]
    for piece in pieces[1:]:
        for cell in [c for c in piece.complete if c in first.complete]:
            mine, theirs = _cell(first.outcomes, cell), _cell(piece.outcomes, cell)
            if not mine.equals(theirs):
                raise RunError(f"{where} holds two runs of {first.name} on {cell[1]}/{cell[2]} with different "
                               f"outcomes ({Path(first.path).name} and {Path(piece.path).name}); keep the one you "
                               "mean in the folder, or give each its own folder")
            keep = ~_in_cell(piece.outcomes, cell)
            piece.outcomes = piece.outcomes[keep]
            piece.samples = [s for s in piece.samples if tuple(s[:3]) != cell]
            del piece.complete[cell]
            first.notes.append(f"{Path(piece.path).name}: its {cell[1]}/{cell[2]} outcomes are those of "
                               f"{Path(first.path).name}; read once")
        first.outcomes = pd.concat([first.outcomes, piece.outcomes], ignore_index=True)
        first.complete.update(piece.complete)
        first.notes += piece.notes
        first.samples += piece.samples
        first.files += piece.files
    return first


def _in_cell(frame, cell) -> np.ndarray:
    return ((frame["release"] == cell[0]) & (frame["config"] == cell[1]) & (frame["split"] == cell[2])).to_numpy()


def _cell(frame, cell):
    columns = ["source_id", "example", "metric", "value", "gold", "pred"]
    return (frame[_in_cell(frame, cell)][columns].sort_values(["source_id", "example", "metric"], kind="stable")
            .reset_index(drop=True))
