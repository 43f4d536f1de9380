"""Inoculation subsets (Liu, Schwartz & Smith 2019), as CURRICULUM (Chen & Gao 2022) draws them.

Inoculation fine-tunes a model on small, growing samples of a dataset's training split (CURRICULUM:
10 to 1,000 examples per label) and tracks accuracy on the dataset's evaluation split as the
sample grows. :class:`InoculationSplitter` draws one such sample exactly as CURRICULUM's released
few-shot sampler (``get_k_shot_data_multi`` in its ``few_shot_bo.py``) does::

    np.random.seed(seed); np.random.shuffle(train_lines)      # one shuffle of the train rows
    # then, per label, its first k rows in shuffled order

so the rows of every size come from one seeded permutation of the training rows, and the sample
of a smaller size is the first rows of each label's sample of a larger one: **the subsets are
nested** for a fixed seed. A label with fewer than ``size`` training rows contributes all of them.
Only rows released as ``train`` are drawn; rows released as ``validation`` (or ``test``) are kept
as they are, as the config's evaluation split.

:func:`inoculation_configs` builds ``<prefix>inoc_<n>`` for every size of one table (``resplit
curriculum``); :func:`rederive_configs` re-derives them from released rows (``resplit verify``).
"""

from __future__ import annotations

import copy

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.splits import DEFAULT_SEED, BaseSplitter, ConfigSplit, Split, check_number
from split_builders.errors import InvalidParameterError

SIZES = (10, 50, 100, 500, 1000)
"""CURRICULUM's inoculation sizes: examples per label."""
POOL = "train"
EVALUATION_SPLITS = ("validation", "test")
METHOD = "inoculation"
NAME = "inoc_{size}"


class InoculationSplitter(BaseSplitter):
    """A label-balanced sample of the training rows; the evaluation rows as released.

    Parameters
    ----------
    size : int, default 100
        Training rows per label (a label with fewer rows gives all of them).
    random_state : int, default 42
        Seed of the one permutation of the training rows (CURRICULUM's is 42). None is refused:
        the subsets are meant to be the same for everyone who uses the seed.

    Examples
    --------
    >>> labels = ["a", "b", "a", "b", "a", "a", "b", "a"]
    >>> released = ["train"] * 6 + ["validation"] * 2
    >>> train, validation, test = InoculationSplitter(size=2, random_state=0).split(labels=labels, released=released)
    >>> len(train), validation.tolist(), test.tolist()
    (4, [6, 7], [])
    """

    def __init__(self, *, size: int = 100, random_state: int = DEFAULT_SEED):
        self.size = check_number(size, "size", integer=True, minimum=1)
        self.random_state = check_number(random_state, "random_state", integer=True, minimum=0, maximum=2**32 - 1)

    @classmethod
    def _examples(cls, data: dict) -> list:
        n = data["n_rows"]
        return [(dict(size=10, random_state=3), dict(labels=data["rng"].choice(["a", "b", "c"], size=n),
                                                     released=np.where(np.arange(n) < 3 * n // 4, "train",
                                                                       "validation")), False)]

    requires = ("labels", "released")

    def _split(self, *, labels, released) -> Split:
        """Row numbers of the sample (``train``) and of the rows released as ``validation`` and
        ``test``.

        Parameters
        ----------
        labels : array, shape (n_rows,)
            One label per row (any hashable values; only equality matters).
        released : array of str, shape (n_rows,)
            The split each row was released in: ``"train"`` (the pool the sample is drawn from),
            ``"validation"`` or ``"test"`` (kept as they are).
        """
        labels, released = check_rows(labels, released)
        pool = np.flatnonzero(released == POOL)
        return Split.of(pool[self._chosen(labels[pool])],
                        np.flatnonzero(released == "validation"), np.flatnonzero(released == "test"))

    def per_label(self, labels, released) -> dict:
        """``{label: (rows drawn, training rows of the label)}`` in the labels' sorted order."""
        labels, released = check_rows(labels, released)
        pool_labels = labels[released == POOL]
        codes, classes = encode_labels(pool_labels)
        available = np.bincount(codes, minlength=classes.size)
        return {classes[c]: (int(min(self.size, available[c])), int(available[c])) for c in range(classes.size)}

    def _chosen(self, pool_labels: np.ndarray) -> np.ndarray:
        """Positions in the pool: one seeded permutation (``RandomState(seed).permutation``, which is
        ``np.random.seed(seed); np.random.shuffle(rows)``), then each label's first ``size``."""
        permutation = np.random.RandomState(self.random_state).permutation(pool_labels.size)
        codes, _ = encode_labels(pool_labels[permutation])
        order = np.argsort(codes, kind="stable")              # label by label, in shuffled order
        starts = np.searchsorted(codes[order], codes[order])  # where each row's label group starts
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size) - starts          # position within its label, shuffled order
        return permutation[rank < self.size]


def check_rows(labels, released) -> tuple[np.ndarray, np.ndarray]:
    """``labels`` and ``released`` as arrays of one length; the released split names known and
    ``train`` present."""
    labels = np.asarray(labels, dtype=object).reshape(-1) if not isinstance(labels, np.ndarray) else labels
    released = np.asarray(released, dtype=object)
    if labels.ndim != 1 or released.shape != labels.shape:
        raise InvalidParameterError(f"labels and released must be 1-d of the same length, got {labels.shape} and "
                                    f"{released.shape}")
    unknown = sorted(set(released.tolist()) - {POOL, *EVALUATION_SPLITS}, key=str)
    if unknown:
        raise InvalidParameterError(f"released split names must be {POOL}, {' or '.join(EVALUATION_SPLITS)}; got "
                                    f"{', '.join(map(repr, unknown))}")
    if not (released == POOL).any():
        raise InvalidParameterError("no row is released as train: there is nothing to draw inoculation subsets from")
    if not np.isin(released, EVALUATION_SPLITS).any():
        raise InvalidParameterError("no row is released as validation or test: an inoculation config needs an "
                                    "evaluation split")
    return labels, released


def check_sizes(sizes) -> tuple[int, ...]:
    """Sizes as a sorted tuple of distinct positive integers (digit strings accepted: a CLI or a
    recipe's ``"10,50"``)."""
    if isinstance(sizes, (str, int)):
        sizes = [part for part in str(sizes).split(",") if part.strip()]
    checked = []
    for size in sizes:
        if isinstance(size, str) and size.strip().isdigit():
            size = int(size.strip())
        checked.append(check_number(size, "inoculation_sizes", integer=True, minimum=1))
    if not checked:
        raise InvalidParameterError("inoculation_sizes is empty: give sizes such as 10,50,100 (examples per label), "
                                    "or turn the inoculation configs off (--no-inoculation)")
    repeated = sorted({s for s in checked if checked.count(s) > 1})
    if repeated:
        raise InvalidParameterError(f"inoculation_sizes names {', '.join(map(str, repeated))} more than once")
    return tuple(sorted(checked))


def inoculation_configs(labels, released, *, sizes=SIZES, random_state: int = 42, parameters: dict | None = None,
                        rows=None, prefix: str = "") -> list[ConfigSplit]:
    """``<prefix>inoc_<n>`` for every size ``n`` (ascending): each records its splitter's parameters,
    the rows drawn per label (``per_label``: ``{label: [drawn, available]}``, labels as given) and a
    copy of ``parameters``."""
    configs = []
    labels, released = check_rows(labels, released)
    for size in check_sizes(sizes):
        splitter = InoculationSplitter(size=size, random_state=random_state)
        per_label = {str(label): list(counts) for label, counts in splitter.per_label(labels, released).items()}
        short = [label for label, (drawn, available) in per_label.items() if available < size]
        description = (f"{size} training rows per label (nested in the larger sizes)"
                       + (f"; all rows of {', '.join(short)} (fewer than {size})" if short else "")
                       + "; the released evaluation rows")
        configs.append(ConfigSplit(f"{prefix}{NAME.format(size=size)}",
                                   splitter.split(labels=labels, released=released).as_indices(),
                                   method=METHOD, description=description, rows=rows,
                                   parameters={**splitter.get_params(), "per_label": per_label,
                                               **copy.deepcopy(parameters or {})}))
    return configs


def rederive_configs(labels, released, parameters: list, *, rows=None, prefix: str = "", keys=None) -> list[ConfigSplit]:
    """The inoculation configs :func:`inoculation_configs` draws from the rows they were drawn from (``resplit
    verify``): ``labels`` and ``released`` split of every row, in the order the build saw them (train rows in
    ``source_id`` order); ``parameters`` the recorded parameters of the configs (their sizes and seed); each
    config's ``rows`` is ``rows``. ``keys``: the rows' content keys where they were drawn under the ``content``
    row order rule (:func:`~split_builders.splitters.partition.in_row_order`)."""
    from split_builders.splitters.partition import in_row_order

    seed = parameters[0]["random_state"]
    return in_row_order(inoculation_configs, keys, seed, per_row=dict(labels=labels, released=released),
                        sizes=[p["size"] for p in parameters], random_state=seed, rows=rows, prefix=prefix)
