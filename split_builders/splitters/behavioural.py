"""BELUGA's per-functionality division of a behavioural suite (Luz de Araujo & Roth 2023).

BELUGA's reference code divides the test-case ids of every functionality with scikit-learn::

    train, held_out = train_test_split(ids, test_size=0.5, random_state=123)
    validation, test = train_test_split(held_out, test_size=0.5, random_state=123)

so each functionality is split 50/25/25, every functionality starting afresh from the same seed.
:class:`BehaviouralSplitter` makes exactly those draws (through
:func:`split_builders.splitters.partition.shuffle_split`, scikit-learn's ``ShuffleSplit``
arithmetic) and, with ``random_state=123``, reproduces BELUGA's published division of every
functionality of the sentiment, QQP and SQuAD suites.

:func:`behavioural_configs` builds every config from that division: ``seen`` (every functionality
in all three splits) and the held-out partitions ``func_<i>``, ``class_<capability>`` and
``type_<MFT|INV|DIR>``, which train and validate without some functionalities and test on the
``seen`` test part of exactly those.
"""

from __future__ import annotations

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.splits import DEFAULT_SEED, SPLITS, BaseSplitter, ConfigSplit, Split, check_number
from split_builders.errors import InvalidParameterError
from split_builders.splitters.partition import shuffle_split

BELUGA_SEED = 123
TEST_TYPES = ("MFT", "INV", "DIR")


class BehaviouralSplitter(BaseSplitter):
    """Divide each functionality's test cases into train, validation and test (BELUGA).

    Every functionality (group) is divided on its own: ``holdout_size`` of its test cases are kept
    out of training, and ``test_share`` of those go to test, the rest to validation. Both divisions
    are scikit-learn's ``train_test_split(..., random_state=random_state)`` draws, restarted from the
    same seed for every functionality, as BELUGA's reference code does. The sizes are BELUGA's (50/25/25);
    with ``random_state=123`` (BELUGA's seed, :data:`BELUGA_SEED`) they reproduce its published splits.

    Parameters
    ----------
    holdout_size : float, default=0.5
        Fraction of each functionality's test cases kept out of training.
    test_share : float, default=0.5
        Fraction of the held-out test cases that go to test (the rest validate).
    random_state : int, default=42
        Seed of both divisions (BELUGA's is 123). None is refused: BELUGA's divisions are
        reproducible by construction.

    Examples
    --------
    >>> train, validation, test = BehaviouralSplitter().split(["a"] * 4 + ["b"] * 4)
    >>> len(train), len(validation), len(test)
    (4, 2, 2)
    """

    def __init__(self, *, holdout_size=0.5, test_share=0.5, random_state=DEFAULT_SEED):
        # Fractions only: functionalities differ in size, and BELUGA divides each by the same fractions.
        self.holdout_size = check_number(holdout_size, "holdout_size", minimum=0, maximum=1,
                                         exclusive=("minimum", "maximum"))
        self.test_share = check_number(test_share, "test_share", minimum=0, maximum=1, exclusive=("minimum", "maximum"))
        # None is refused: BELUGA's divisions are reproducible by construction.
        self.random_state = check_number(random_state, "random_state", integer=True, minimum=0)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(holdout_size=0.5, test_share=0.5, random_state=3),
                 dict(signal=data["rng"].integers(0, 6, size=data["n_rows"])), True)]

    requires = ("signal",)

    def _split(self, *, signal) -> Split:
        """Return the row numbers of train, validation and test.

        Parameters
        ----------
        signal : array-like, shape (n_rows,)
            The functionality of each row (its categorical signal); a functionality's rows, in row order, are its test
            cases in test-case-id order (the order BELUGA's ids follow).

        Returns
        -------
        Split
        """
        groups = np.asarray(signal, dtype=object)
        if groups.ndim != 1 or groups.size == 0:
            raise InvalidParameterError("the signal must be a non-empty flat list, one functionality per row")
        parts = {split: [] for split in SPLITS}
        for group, rows in _rows_by_group(groups):
            try:
                train, held_out = shuffle_split(rows.size, self.holdout_size, self.random_state)
                validation, test = shuffle_split(held_out.size, self.test_share, self.random_state)
            except InvalidParameterError as error:
                raise InvalidParameterError(f"functionality {group!r}: {error}") from None
            parts["train"].append(rows[train])
            parts["validation"].append(rows[held_out[validation]])
            parts["test"].append(rows[held_out[test]])
        return Split.of(*(np.concatenate(parts[split]) for split in SPLITS))


def behavioural_configs(functionality, capability, test_type, *, functionalities=None, capabilities=None,
                        random_state=BELUGA_SEED, names=None, capability_names=None) -> list:
    """The ``seen``, ``func_<i>``, ``class_<capability>`` and ``type_<type>`` configs.

    Parameters
    ----------
    functionality, capability, test_type : array-like, shape (n_rows,)
        Per row (test case), in suite order.
    functionalities : list of str or int, optional
        Hold out only these functionalities (names or 0-based indices) as ``func_<i>``
        configs; default all.
    capabilities : list of str, optional
        Build ``class_<capability>`` configs only for these; default all.
    random_state : int, default=123
        Seed of the division (BELUGA's 123 by default here, so that ``resplit evaluate-suite``
        selects BELUGA's test cases; ``resplit behavioural`` passes its ``--seed``).
    names, capability_names : list of str, optional
        The functionalities (which number ``func_<i>``) and capabilities in suite order; default: in order of
        first appearance in the rows (the suite's order when the rows are in suite order; given when they are
        not, as under :func:`~split_builders.splitters.partition.in_row_order`).

    Returns
    -------
    list of ConfigSplit
    """
    functionality = np.asarray(functionality, dtype=object)
    capability = np.asarray(capability, dtype=object)
    test_type = np.asarray(test_type, dtype=object)
    names = list(dict.fromkeys(functionality.tolist())) if names is None else list(names)
    if capability_names is None:
        capability_names = list(dict.fromkeys(capability.tolist()))
    # Resolve every selection before dividing anything: a wrong name fails at once.
    held_functionalities = resolve_names(functionalities, names, "functionality")
    held_capabilities = resolve_names(capabilities, list(capability_names), "capability")
    splitter = BehaviouralSplitter(random_state=random_state)
    seen = dict(zip(SPLITS, splitter.split(functionality)))
    params = splitter.get_params()
    configs = [ConfigSplit("seen", seen, "behavioural", {**params, "held_out": None},
                           "every functionality: 50/25/25 of its test cases in train/validation/test")]

    def held_out(name, mask, what, description):
        indices = {"train": seen["train"][~mask[seen["train"]]],
                   "validation": seen["validation"][~mask[seen["validation"]]],
                   "test": seen["test"][mask[seen["test"]]]}
        configs.append(ConfigSplit(name, indices, "behavioural", {**params, "held_out": what}, description))

    for chosen in held_functionalities:
        i = names.index(chosen)
        held_out(f"func_{i}", functionality == chosen, {"functionality": chosen},
                 f"held-out functionality {i}: {chosen}")
    for chosen in held_capabilities:
        held_out(f"class_{chosen}", capability == chosen, {"capability": chosen},
                 f"held-out capability {chosen} (all its functionalities)")
    for kind in TEST_TYPES:
        if (test_type == kind).any():
            held_out(f"type_{kind}", test_type == kind, {"type": kind}, f"held-out test type {kind}")
    return configs


def resolve_names(requested, valid: list, what: str) -> list:
    """Names (or 0-based indices) asked for, checked against ``valid``; None means all.

    An item may be a name, an index, or several of them separated by commas (as typed on the
    command line); a name that itself contains commas (``"used to, but now"``) is recognised whole.
    """
    if requested is None:
        return list(valid)
    if isinstance(requested, (str, int, np.integer)):
        requested = [requested]
    chosen = []
    for item in requested:
        chosen += _expand(item, valid, what)
    return list(dict.fromkeys(chosen))


def _expand(item, valid: list, what: str) -> list:
    """The names one requested item stands for (see :func:`resolve_names`)."""
    if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
        return [_by_index(int(item), valid, what)]
    text = str(item)
    if text.strip() in valid:
        return [text.strip()]
    pieces = text.split(",")
    names, start = [], 0
    while start < len(pieces):
        # The longest run of comma-separated pieces that is a valid name; else one piece.
        for stop in range(len(pieces), start, -1):
            candidate = ",".join(pieces[start:stop]).strip()
            if candidate in valid:
                names.append(candidate)
                break
        else:
            piece = pieces[start].strip()
            stop = start + 1
            if piece.isdigit():
                names.append(_by_index(int(piece), valid, what))
            elif piece:
                raise InvalidParameterError(f"unknown {what} {piece!r}; valid {what} names: "
                                            + ", ".join(repr(v) for v in valid))
        start = stop
    return names


def _by_index(index: int, valid: list, what: str):
    if not 0 <= index < len(valid):
        raise InvalidParameterError(f"{what} index {index} is out of range 0..{len(valid) - 1}")
    return valid[index]


def _rows_by_group(groups: np.ndarray):
    """``(group, its row numbers in order)`` for every group, in order of first appearance."""
    codes, names = encode_labels(groups, order="first")
    order = np.argsort(codes, kind="stable")  # rows grouped, each group's rows in row order
    bounds = np.cumsum(np.bincount(codes, minlength=names.size))
    return zip(names, np.split(order, bounds[:-1]))
