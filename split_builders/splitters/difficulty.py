"""Difficulty splits from PVI: ``simple`` / ``hard`` and the cross-distribution configs.

:class:`DifficultySplitter` (pure numpy) builds one config. Every row is first assigned to the
``simple`` or the ``hard`` part, per label:

* ``threshold="median"`` (default): within each label, the rows with the higher half of PVI are
  simple (ties broken by row order), so simple and hard hold every label in the same proportion.
* ``threshold="midrange"`` (``--curriculum-compat``): CURRICULUM's rule. Within each label, rows
  sorted by PVI descending; ``t = min + (|max| + |min|) / 2``, which is the midrange only when
  ``min <= 0 <= max`` (kept as released); ``PVI < t`` is hard. When ``round(max, 2) == round(min, 2)``
  the first ``n // 2`` sorted rows are simple. CURRICULUM's code also forces PVI = 0 for label id 0;
  that bug is not reproduced.

Each (part, label) bucket, in its PVI-descending order, is divided as scikit-learn's
``train_test_split(test_size=validation_size, random_state=seed)`` divides it
(:func:`split_builders.splitters.partition.shuffle_split`; a one-row bucket goes to validation),
and buckets are concatenated over labels. With ``validation_size=0.4`` and seed 42 that is
CURRICULUM's 60/40 division.

With ``groups`` (``--group-field``), a group is one unit: it is simple when its mean PVI is in the
simple part by the same rule applied to the groups' mean PVI (``median``: the groups of highest mean
PVI up to half of the rows; ``midrange``: the threshold over the group means), and each part's groups
are divided into train and validation by a seeded shuffle of the groups, so no group straddles train,
validation and test (label balance is then as close as whole groups allow).

Configs (``config=``):

* ``simple``: train and validation from the simple part; ``hard`` likewise.
* ``simple_to_hard``: train and validation = ``simple``'s, test = every hard row (train on simple,
  evaluate on hard); ``hard_to_simple`` the reverse.

:func:`difficulty_configs` builds the four configs of one table (``resplit pvi`` and ``resplit
curriculum --pvi``); :func:`rederive_configs` re-derives them from released rows (``resplit verify``).
"""

from __future__ import annotations

import copy

import numpy as np

from loading_scripts.labels import encode_labels
from split_builders.splits import DEFAULT_SEED, BaseSplitter, ConfigSplit, Split, check_number, check_random_state
from split_builders.errors import InvalidParameterError
from split_builders.splitters.groups import Groups, group_parameters
from split_builders.splitters.partition import shuffle_split

CONFIGS = ("simple", "hard", "simple_to_hard", "hard_to_simple")
DESCRIPTIONS = {
    "simple": "Rows with high PVI (easy for the predictive family); train and validation from the simple part.",
    "hard": "Rows with low PVI (hard or mislabelled); train and validation from the hard part.",
    "simple_to_hard": "Train and validation = `simple`; test = every hard row.",
    "hard_to_simple": "Train and validation = `hard`; test = every simple row.",
}
THRESHOLDS = ("median", "midrange")
CURRICULUM_SEED = 42
CURRICULUM_VALIDATION_SIZE = 0.4


def _descending(pvi, rows):
    """``rows`` by PVI descending, ties by row order (stable)."""
    return rows[np.argsort(-pvi[rows], kind="stable")]


def _labels_in_order(labels):
    return sorted(set(labels.tolist()), key=str)


def simple_mask(pvi, labels, *, threshold: str = "median") -> np.ndarray:
    """True for the rows that are simple, decided within each label."""
    pvi = np.asarray(pvi, dtype=np.float64)
    labels = np.asarray(labels)
    simple = np.zeros(pvi.size, dtype=bool)
    for label in _labels_in_order(labels):
        rows = _descending(pvi, np.flatnonzero(labels == label))
        if threshold == "median":
            simple[rows[: (rows.size + 1) // 2]] = True
            continue
        low, high = pvi[rows].min(), pvi[rows].max()
        if round(high, 2) == round(low, 2):
            simple[rows[: rows.size // 2]] = True
        else:
            simple[rows] = pvi[rows] >= low + (abs(high) + abs(low)) / 2
    return simple


class DifficultySplitter(BaseSplitter):
    """One difficulty config: simple / hard parts by PVI, each divided into train and validation.

    Parameters
    ----------
    config : {"simple", "hard", "simple_to_hard", "hard_to_simple"}, default "simple"
        Which config :meth:`split` returns (see the module docstring).
    threshold : {"median", "midrange"}, default "median"
        Per-label rule that separates simple from hard.
    validation_size : float, default 0.4
        Share of each (part, label) bucket that goes to validation, in (0, 1).
    random_state : int, default 42
        Seed of the train/validation division.

    Examples
    --------
    >>> import numpy as np
    >>> pvi, labels = np.array([2.0, 1.5, -1.0, 0.1, 0.9, -0.5]), np.array([0, 0, 0, 1, 1, 1])
    >>> DifficultySplitter(config="simple_to_hard", random_state=0).split(pvi, labels=labels).test.tolist()
    [2, 5]
    """

    def __init__(self, *, config: str = "simple", threshold: str = "median", validation_size: float = 0.4,
                 random_state: int = DEFAULT_SEED):
        if config not in CONFIGS:
            raise InvalidParameterError(f"config must be one of {', '.join(CONFIGS)}, got {config!r}")
        if threshold not in THRESHOLDS:
            raise InvalidParameterError(f"threshold must be one of {', '.join(THRESHOLDS)}, got {threshold!r}")
        self.config = config
        self.threshold = threshold
        self.validation_size = check_number(validation_size, "validation_size", minimum=0, maximum=1,
                                            exclusive=("minimum", "maximum"))
        self.random_state = check_random_state(random_state)

    @classmethod
    def curriculum_compat(cls, config: str = "simple") -> "DifficultySplitter":
        """CURRICULUM's released rule: midrange threshold, 60/40 division with seed 42."""
        return cls(config=config, threshold="midrange", validation_size=CURRICULUM_VALIDATION_SIZE,
                   random_state=CURRICULUM_SEED)

    @classmethod
    def _examples(cls, data: dict) -> list:
        rng, n = data["rng"], data["n_rows"]
        return [(dict(config="simple_to_hard", threshold="median", validation_size=0.4, random_state=3),
                 dict(signal=rng.normal(size=n), labels=rng.integers(0, 3, size=n)), True),
                (dict(config="simple", threshold="midrange", validation_size=0.25, random_state=3),
                 dict(signal=rng.normal(size=n), labels=rng.integers(0, 3, size=n)), False)]

    requires = ("signal", "labels")

    def _split(self, *, signal, labels, groups=None) -> Split:
        """Row numbers of the config's ``train``, ``validation`` and ``test`` (empty for ``simple``
        and ``hard``).

        Parameters
        ----------
        signal : array of float, shape (n_rows,)
            The PVI of each row (bits); must be finite.
        labels : array, shape (n_rows,)
            One label per row (any hashable values).
        groups : array of int, shape (n_rows,), optional
            Group number of each row: groups are kept whole (module docstring).
        """
        pvi = np.asarray(signal, dtype=np.float64)
        labels = np.asarray(labels)
        if pvi.ndim != 1 or labels.shape != pvi.shape:
            raise InvalidParameterError(f"pvi and labels must be 1-d of the same length, got {pvi.shape} and {labels.shape}")
        if not np.isfinite(pvi).all():
            raise InvalidParameterError(f"{int((~np.isfinite(pvi)).sum())} PVI value(s) are not finite")
        if groups is not None:
            groups = Groups(groups)
            if groups.n_rows != pvi.size:
                raise InvalidParameterError(f"groups has {groups.n_rows} values, expected {pvi.size}")
            simple = groups.rows(self._simple_groups(groups.mean(pvi), groups))
            simple = np.isin(np.arange(pvi.size), simple)
        else:
            simple = simple_mask(pvi, labels, threshold=self.threshold)
        train_part = "hard" if self.config.startswith("hard") else "simple"
        mask = simple if train_part == "simple" else ~simple
        train, validation = (self._divide(pvi, labels, mask) if groups is None
                             else self._divide_groups(mask, groups))
        test = np.flatnonzero(~mask) if self.config.endswith(("_to_hard", "_to_simple")) else ()
        return Split.of(train, validation, test)

    def _simple_groups(self, mean_pvi, groups: Groups) -> np.ndarray:
        """The simple groups' ids by the rule applied to the groups' mean PVI."""
        order = np.argsort(-mean_pvi, kind="stable")
        if self.threshold == "median":
            reached = np.cumsum(groups.sizes[order]) >= (groups.n_rows + 1) // 2
            return order[: int(np.argmax(reached)) + 1]
        low, high = mean_pvi.min(), mean_pvi.max()
        if round(high, 2) == round(low, 2):
            return order[: order.size // 2]
        return np.flatnonzero(mean_pvi >= low + (abs(high) + abs(low)) / 2)

    def _divide_groups(self, mask, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
        """Train and validation rows of the part ``mask``: its groups in a seeded random order, the
        first ``validation_size`` of its rows (rounded up, whole groups) to validation."""
        members = np.unique(groups.codes[mask])
        if members.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if members.size < 2:  # one group cannot be both train and validation: a config without train rows
            part = "hard" if self.config.startswith("hard") else "simple"
            raise InvalidParameterError(f"with whole groups the {part} part is one group ({int(mask.sum())} rows), "
                                        "which cannot be divided into train and validation: group by a field with "
                                        "more values, or leave out --group-field")
        shuffled = members[np.random.RandomState(self.random_state).permutation(members.size)]
        wanted = int(np.ceil(self.validation_size * groups.sizes[members].sum()))
        cut = int(np.searchsorted(np.cumsum(groups.sizes[shuffled]), wanted, side="left")) + 1
        cut = min(cut, max(members.size - 1, 1))
        return groups.rows(shuffled[cut:]), groups.rows(shuffled[:cut])

    def _divide(self, pvi, labels, mask) -> tuple[np.ndarray, np.ndarray]:
        """Train and validation rows of the part ``mask``, divided per label bucket."""
        train, validation = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        for label in _labels_in_order(labels):
            ordered = _descending(pvi, np.flatnonzero(labels == label))
            bucket = ordered[mask[ordered]]
            if bucket.size == 0:
                continue
            # allow_empty: a one-row bucket goes to validation (scikit-learn would refuse it).
            in_train, in_validation = shuffle_split(bucket.size, self.validation_size, self.random_state,
                                                    allow_empty=True)
            train.append(bucket[in_train])
            validation.append(bucket[in_validation])
        return np.concatenate(train), np.concatenate(validation)


def difficulty_configs(pvi, labels, *, parameters: dict, curriculum_compat: bool = False,
                       validation_size: float = CURRICULUM_VALIDATION_SIZE, random_state: int = CURRICULUM_SEED,
                       rows=None, prefix: str = "", groups=None, group_field: str | None = None) -> list[ConfigSplit]:
    """The four configs of one table's PVI, named ``prefix + config``, each recording its splitter's
    parameters and a copy of ``parameters``; ``curriculum_compat`` uses
    :meth:`DifficultySplitter.curriculum_compat` (``validation_size`` and ``random_state`` unused).
    ``groups`` (group numbers of the column ``group_field``) keeps groups whole; recorded as ``grouped_by``."""
    configs = []
    grouped = group_parameters(groups, group_field)
    for name in CONFIGS:
        splitter = (DifficultySplitter.curriculum_compat(name) if curriculum_compat else
                    DifficultySplitter(config=name, validation_size=validation_size, random_state=random_state))
        split = splitter.split(pvi, labels=labels, groups=groups)
        configs.append(ConfigSplit(f"{prefix}{name}", split.as_indices(), method="pvi-difficulty",
                                   parameters={**splitter.get_params(), **copy.deepcopy(parameters), **grouped},
                                   description=DESCRIPTIONS[name], rows=rows,
                                   requested=None if groups is None else _requested(splitter, pvi, labels)))
    return configs


def _requested(splitter: DifficultySplitter, pvi, labels) -> dict:
    """The sizes the same rule gives row by row (per-example simple / hard parts, the validation share of
    each): what whole groups are measured against (:func:`split_builders.splitters.groups.size_gaps`)."""
    n_simple = int(simple_mask(pvi, labels, threshold=splitter.threshold).sum())
    part = n_simple if splitter.config.startswith("simple") else len(pvi) - n_simple
    n_validation = int(np.ceil(splitter.validation_size * part))
    requested = {"train": part - n_validation, "validation": n_validation}
    if splitter.config.endswith(("_to_hard", "_to_simple")):
        requested["test"] = len(pvi) - part
    return requested


def rederive_configs(rows, parameters: dict, *, prefix: str = "", keys=None, seed=None) -> list[ConfigSplit]:
    """The difficulty configs :func:`difficulty_configs` builds from released rows (``resplit verify``).

    ``rows`` is a ``pyarrow.Table`` of the rows the configs split (``pvi`` and the label field), in the
    order they were built; ``parameters`` the recorded parameters of one of its configs (the splitter's,
    ``label_field`` when it is not ``label``, ``grouped_by`` when grouped), named ``prefix + config``. Each
    config's ``rows`` is ``rows``. ``keys``: the rows' content keys where the release was built under the
    ``content`` row order rule, ``seed`` its seed (:func:`~split_builders.splitters.partition.in_row_order`)."""
    from split_builders.splitters.groups import group_codes
    from split_builders.splitters.partition import in_row_order

    # the recorded label field (releases before the one label policy), else `label` (after it)
    field = parameters.get("label_field") or "label"
    labels, _ = encode_labels(rows.column(field if field in rows.column_names else "label").to_pylist())
    group_field = parameters.get("grouped_by")
    groups = None if group_field is None else group_codes(rows.column(group_field).to_numpy(zero_copy_only=False))
    configs = in_row_order(difficulty_configs, keys, seed, groups="groups",
                           per_row=dict(pvi=np.asarray(rows.column("pvi").to_numpy(), dtype=np.float64), labels=labels,
                                     groups=groups),
                           parameters={}, curriculum_compat=parameters["threshold"] == "midrange",
                           validation_size=parameters["validation_size"], random_state=parameters["random_state"],
                           prefix=prefix, group_field=group_field)
    for config in configs:
        config.rows = rows
    return configs


def part_mask(config: ConfigSplit, n_rows: int) -> np.ndarray:
    """The rows of a ``simple`` or ``hard`` config (its train and validation) as a boolean mask."""
    mask = np.zeros(n_rows, dtype=bool)
    for rows in config.indices.values():
        mask[np.asarray(rows, dtype=np.int64)] = True
    return mask


def rule_text(*, curriculum_compat: bool, validation_size: float = CURRICULUM_VALIDATION_SIZE) -> str:
    """How simple and hard are told apart and divided, in one sentence (for a card)."""
    if curriculum_compat:
        return "CURRICULUM's midrange threshold per label and 60/40 train/validation division (seed 42)."
    return ("per-label median of PVI (both parts label balanced); seeded "
            f"{1 - validation_size:.0%}/{validation_size:.0%} train/validation division of each part and label.")
