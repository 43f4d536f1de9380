"""Log-likelihoods a curator computed elsewhere (``--scores S.npy``): read once, the same way for
every method that takes them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from split_builders.errors import InvalidParameterError


def given_scores_record(path) -> dict:
    """What provenance records of a scores file: its name (not the local path) and its sha256."""
    path = Path(path)
    with open(path, "rb") as handle:
        return {"file": path.name, "sha256": hashlib.file_digest(handle, "sha256").hexdigest()}


def load_scores_array(path) -> np.ndarray:
    """The array of a ``.npy`` scores file; anything else (missing, a folder, an ``.npz`` archive, a
    pickle, a text file) is refused in one line naming what it is."""
    path = Path(path)
    if not path.exists():
        raise InvalidParameterError(f"file not found: scores file {str(path)!r}")
    if not path.is_file():
        raise InvalidParameterError(f"scores file {str(path)!r} is a folder; give a .npy file (one log-likelihood "
                                    "per input row, numpy.save)")
    with open(path, "rb") as handle:
        magic = handle.read(6)
    if magic[:4] == b"PK\x03\x04":
        raise InvalidParameterError(f"scores file {str(path)!r} is an .npz archive (numpy.savez), not a .npy array; "
                                    "save the one array with numpy.save(path, scores)")
    if magic != b"\x93NUMPY":
        raise InvalidParameterError(f"scores file {str(path)!r} is not a .npy array (it does not start with numpy's "
                                    ".npy header); save the scores with numpy.save(path, scores)")
    try:
        scores = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise InvalidParameterError(f"scores file {str(path)!r} is not a plain .npy array ({error})") from None
    return scores


def read_given_scores(path, *, source_ids, input_rows: int) -> np.ndarray:
    """One float64 score per kept row, in the order of ``source_ids``.

    Parameters
    ----------
    path : path
        A plain ``.npy`` array (no pickles) of numbers: one log-likelihood per row of the input
        file, in file order, or one per kept row. (A file with its own ``source_id`` column is split,
        and its scores read, in ascending ``source_id`` order.)
    source_ids : sequence of int
        The kept rows' ``source_id`` (their 0-based row numbers in the input file).
    input_rows : int
        How many rows the input file had, before a reader's filter or ``--limit`` kept some.

    An array of ``input_rows`` values is read by ``source_id``; one of exactly ``len(source_ids)``
    values is taken as aligned with the kept rows. Any other length is refused, naming both counts:
    an array indexed by position would silently give rows other rows' scores.
    """
    scores = load_scores_array(path)
    if scores.dtype.kind == "b" or (scores.dtype.kind in "iu" and scores.size
                                    and np.isin(scores, (0, 1)).all()):
        raise InvalidParameterError(f"scores file {str(path)!r} holds {'booleans' if scores.dtype.kind == 'b' else 'only 0 and 1'}"
                                    " (right / wrong, kept / dropped), not log-likelihoods; give each row's "
                                    "log-likelihood (a float such as -12.7)")
    if scores.dtype.kind not in "iuf":
        raise InvalidParameterError(f"scores file {str(path)!r} holds {scores.dtype} values; give numbers "
                                    "(one log-likelihood per input row)")
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.asarray(source_ids, dtype=np.int64)
    if scores.size == input_rows and (not ids.size or (ids.max() < scores.size and ids.min() >= 0)):
        scores = scores[ids]
    elif scores.size != ids.size:
        counts = f"{input_rows} rows" + (f" ({ids.size} kept)" if ids.size != input_rows else "")
        raise InvalidParameterError(f"scores file {str(path)!r} has {scores.size} values but the source has "
                                    f"{counts}; give one log-likelihood per input row, in row order")
    if not np.isfinite(scores).all():
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InvalidParameterError(f"scores file {str(path)!r}: the score of source_id {int(ids[bad])} is "
                                    f"{scores[bad]}; every score must be a finite number")
    return scores


def score_warnings(scores, *, what: str = "scores") -> list[str]:
    """Warnings about scores that cannot order rows by likelihood: all equal (the least and most likely
    configs are then a tie-break, no different from a random split), or most rows sharing one value. One line
    each, for the terminal and the card; none for scores that order the rows."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.size < 2:
        return []
    values, counts = np.unique(scores, return_counts=True)
    if values.size == 1:
        return [f"all {scores.size} {what} are equal ({values[0]:g}): which rows the least / most likely "
                "configs hold out is an arbitrary tie-break, not likelihood; give scores that differ"]
    if counts.max() * 2 > scores.size:
        return [f"{int(counts.max())} of the {scores.size} {what} ({counts.max() / scores.size:.0%}) are the same "
                f"value ({values[counts.argmax()]:g}): which of them the least / most "
                "likely configs hold out is an arbitrary tie-break, not likelihood"]
    return []
