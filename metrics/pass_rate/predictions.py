"""Model predictions for the pass_rate metric: CheckList's prediction files, a binary sentiment
model's three classes, and the check that probability vectors are distributions.

Plain Python and numpy: ``pass_rate.py`` imports it as ``from .predictions import ...``, so that
``evaluate.load`` copies it beside the metric.
"""

import numpy as np

FILE_FORMATS = ("pred_only", "binary_conf", "softmax")
# What spreadsheet programs and Windows editors put before UTF-8 text ("CSV UTF-8").
BYTE_ORDER_MARK = "\ufeff"

# Probability vectors written with a few decimals do not sum to exactly 1.
PROBABILITY_ATOL = 1e-3

# CheckList's sentiment tutorial puts a neutral band of width 1/3 around p = 0.5; the
# bounds are computed as it computes them, so that float ties fall on the same side.
_NEUTRAL_LOW = 0.5 - 1 / 6
_NEUTRAL_HIGH = 0.5 + 1 / 6


def check_distributions(vectors, where):
    """Probability vectors as a 2-D array, each checked to be a distribution.

    ``where(row)`` names the vector in row ``row`` for the error message.
    """
    try:
        matrix = np.asarray(vectors, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"the probability vectors of {where(None)} must be lists of numbers of one length") from None
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise ValueError(f"the probability vectors of {where(None)} must be non-empty lists of numbers")
    bad_entries = ~np.isfinite(matrix).all(axis=1) | (matrix < 0).any(axis=1)
    if bad_entries.any():
        row = int(np.argmax(bad_entries))
        raise ValueError(f"the probability vector of {where(row)} has negative or non-finite entries: {vectors[row]!r}")
    totals = matrix.sum(axis=1)
    off = np.abs(totals - 1.0) > PROBABILITY_ATOL
    if off.any():
        row = int(np.argmax(off))
        raise ValueError(f"the probability vector of {where(row)} sums to {totals[row]:.6g}, not 1: {vectors[row]!r}")
    return matrix


def sentiment_from_binary(p_positive):
    """CheckList's three sentiment classes from a binary model's p(positive).

    Negative below 1/3, positive above 2/3 (probability vector ``[1 - p, 0, p]``);
    in between neutral, with p(neutral) = 1 - 3|p - 0.5| and the rest of the mass on
    the side of p.

    Parameters
    ----------
    p_positive : sequence of float
        p(positive) per example, each in [0, 1].

    Returns
    -------
    predictions : list of int
        0 negative, 1 neutral, 2 positive.
    confidences : list of list of float
        One 3-class probability vector per example.
    """
    p = np.asarray(p_positive, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p_positive must be a flat list of probabilities, got shape {p.shape}")
    valid = (p >= 0) & (p <= 1)
    if not valid.all():
        raise ValueError(f"p(positive) must lie in [0, 1]; got {p[~valid][:5].tolist()}")
    negative, positive = p < _NEUTRAL_LOW, p > _NEUTRAL_HIGH
    neutral = ~(negative | positive)
    # Outside the band: [1 - p, 0, p]. Inside: p(neutral), the rest on the side p leans to.
    p_neutral = np.where(neutral, 1 - 3 * np.abs(p - 0.5), 0.0)
    rest = 1 - p_neutral
    p_negative = np.where(neutral, np.where(p < 0.5, rest, 0.0), 1 - p)
    p_positive3 = np.where(neutral, np.where(p >= 0.5, rest, 0.0), p)
    confidences = np.stack([p_negative, p_neutral, p_positive3], axis=1)
    predictions = np.select([negative, positive], [0, 2], default=1)
    return predictions.tolist(), confidences.tolist()


def _parse_floats(line, number):
    try:
        return [float(token) for token in line.split()]
    except ValueError:
        raise ValueError(f"prediction line {number} is not a list of numbers: {line!r}") from None


def read_predictions(lines, file_format, answers=False, sentiment_binary=False):
    """Parse CheckList prediction lines, one per example.

    Parameters
    ----------
    lines : sequence of str
        One line per example (without the trailing newline). A UTF-8 byte-order mark at the
        start of the first line (a file opened as ``utf-8`` rather than ``utf-8-sig``) is dropped.
    file_format : {"pred_only", "binary_conf", "softmax"}
        As CheckList's ``run_from_file``: ``pred_only`` is the label or answer,
        ``binary_conf`` is p(class 1), ``softmax`` is space-separated probabilities.
    answers : bool
        ``pred_only`` lines are answer strings (SQuAD) rather than class ids.
    sentiment_binary : bool
        Map a binary model's p(positive) to three sentiment classes
        (:func:`sentiment_from_binary`).

    Returns
    -------
    predictions : list
        Class ids, or answer strings.
    confidences : list of list of float or None
        Probability vectors, or None for ``pred_only``.
    """
    if file_format not in FILE_FORMATS:
        raise ValueError(f"unknown prediction file format {file_format!r}; allowed: {', '.join(FILE_FORMATS)}")
    lines = list(lines)
    if lines and isinstance(lines[0], str) and lines[0].startswith(BYTE_ORDER_MARK):
        lines[0] = lines[0][len(BYTE_ORDER_MARK):]
    if answers and (file_format != "pred_only" or sentiment_binary):
        raise ValueError(
            f"answer-string predictions need file format 'pred_only' without sentiment mapping, got {file_format!r}"
        )
    if file_format == "pred_only":
        if sentiment_binary:
            raise ValueError("sentiment_binary needs p(positive): use file format 'binary_conf' or 'softmax'")
        if answers:
            return list(lines), None
        return [_parse_class(line, number) for number, line in enumerate(lines, 1)], None
    if file_format == "binary_conf":
        vectors = [_parse_floats(line, number) for number, line in enumerate(lines, 1)]
        bad = [number for number, v in enumerate(vectors, 1) if len(v) != 1]
        if bad:
            raise ValueError(f"binary_conf lines hold one probability each; line {bad[0]} does not")
        p_class1 = [v[0] for v in vectors]
        if sentiment_binary:
            return sentiment_from_binary(p_class1)
        for number, p in enumerate(p_class1, 1):
            if not 0 <= p <= 1:
                raise ValueError(f"binary_conf line {number} is not a probability: {p!r}")
        confidences = [[1 - p, p] for p in p_class1]
    else:
        confidences = [_parse_floats(line, number) for number, line in enumerate(lines, 1)]
        check_distributions(
            confidences, lambda row: "the prediction file" if row is None else f"prediction line {row + 1}"
        )
        if sentiment_binary:
            if any(len(v) != 2 for v in confidences):
                raise ValueError("sentiment_binary with softmax lines needs two probabilities per line")
            return sentiment_from_binary([v[1] for v in confidences])
    # CheckList predicts the most probable class; ties go to the lower id.
    return [int(np.argmax(v)) for v in confidences], confidences


def _parse_class(line, number):
    try:
        return int(line)
    except ValueError:
        raise ValueError(f"pred_only line {number} is not a class id: {line!r}") from None
