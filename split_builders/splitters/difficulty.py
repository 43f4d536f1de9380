"""Difficulty splits from PVI: ``simple`` / ``hard`` and the cross-distribution configs.

The splitter (pure numpy) assigns every row to ``simple`` or ``hard`` per label, then divides each
part into train and validation:

* ``threshold="median"`` (default): within each label, the rows with the higher half of PVI are
  simple (ties broken by row order), so simple and hard hold every label in the same proportion.
* ``threshold="midrange"`` (``--curriculum-compat``): CURRICULUM's rule. Within each label, rows
  sorted by PVI descending; ``t = min + (|max| + |min|) / 2``, which is the midrange only when
  ``min <= 0 <= max`` (kept as released); ``PVI < t`` is hard. When ``round(max, 2) == round(min, 2)``
  the first ``n // 2`` sorted rows are simple. CURRICULUM's code also forces PVI = 0 for label id 0;
  that bug is not reproduced.

Each (part, label) bucket, in its PVI-descending order, is divided as scikit-learn's
``train_test_split(test_size=validation_size, random_state=seed)`` divides it (``ShuffleSplit``
arithmetic: one ``RandomState(seed).permutation``; the first ``ceil(validation_size * n)`` go to
validation), and buckets are concatenated over labels. With ``validation_size=0.4`` and seed 42
that is CURRICULUM's 60/40 division.

Configs:

* ``simple``: train and validation from the simple part; ``hard`` likewise.
* ``simple_to_hard``: train and validation = ``simple``'s, test = every hard row (train on simple,
  evaluate on hard); ``hard_to_simple`` the reverse.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splitters.partition import check_random_state

THRESHOLDS = ("median", "midrange")
CURRICULUM_SEED = 42
CURRICULUM_VALIDATION_SIZE = 0.4


def shuffle_split(n: int, test_size: float, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(train, test)`` of ``n`` rows exactly as ``train_test_split(shuffle=True)`` picks them."""
    n_test = int(math.ceil(test_size * n))
    n_train = n - n_test
    permutation = np.random.RandomState(random_state).permutation(n)
    return permutation[n_test:n_test + n_train], permutation[:n_test]


def _descending(pvi, rows):
    """``rows`` by PVI descending, ties by row order (stable)."""
    return rows[np.argsort(-pvi[rows], kind="stable")]


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


def _labels_in_order(labels):
    return sorted(set(labels.tolist()), key=str)


class DifficultySplitter:
    """Simple / hard parts by PVI, each divided into train and validation.

    Parameters
    ----------
    threshold : {"median", "midrange"}, default "median"
        Per-label rule that separates simple from hard (see the module docstring).
    validation_size : float, default 0.4
        Share of each (part, label) bucket that goes to validation, in (0, 1).
    random_state : int, default 42
        Seed of the train/validation division.
    """

    def __init__(self, *, threshold: str = "median", validation_size: float = 0.4, random_state: int = 42):
        if threshold not in THRESHOLDS:
            raise InvalidParameterError(f"threshold must be one of {', '.join(THRESHOLDS)}, got {threshold!r}")
        if isinstance(validation_size, bool) or not isinstance(validation_size, Real) or not 0 < validation_size < 1:
            raise InvalidParameterError(f"validation_size must be a fraction in (0, 1), got {validation_size!r}")
        self.threshold = threshold
        self.validation_size = float(validation_size)
        self.random_state = check_random_state(random_state)

    @classmethod
    def curriculum_compat(cls) -> "DifficultySplitter":
        """CURRICULUM's released rule: midrange threshold, 60/40 division with seed 42."""
        return cls(threshold="midrange", validation_size=CURRICULUM_VALIDATION_SIZE, random_state=CURRICULUM_SEED)

    def get_params(self) -> dict:
        return {"threshold": self.threshold, "validation_size": self.validation_size, "seed": self.random_state}

    def split(self, pvi, labels) -> dict:
        """``{"simple": {"train": idx, "validation": idx}, "hard": {...}}`` (sorted row positions)."""
        pvi = np.asarray(pvi, dtype=np.float64)
        labels = np.asarray(labels)
        if pvi.ndim != 1 or labels.shape != pvi.shape:
            raise InvalidParameterError(f"pvi and labels must be 1-d of the same length, got {pvi.shape} and {labels.shape}")
        if not np.isfinite(pvi).all():
            raise InvalidParameterError(f"{int((~np.isfinite(pvi)).sum())} PVI value(s) are not finite")
        simple = simple_mask(pvi, labels, threshold=self.threshold)
        parts = {"simple": {"train": [], "validation": []}, "hard": {"train": [], "validation": []}}
        for label in _labels_in_order(labels):
            ordered = _descending(pvi, np.flatnonzero(labels == label))
            for part, mask in (("simple", simple), ("hard", ~simple)):
                bucket = ordered[mask[ordered]]
                if bucket.size == 0:
                    continue
                train, validation = shuffle_split(bucket.size, self.validation_size, self.random_state)
                parts[part]["train"].append(bucket[train])
                parts[part]["validation"].append(bucket[validation])
        return {part: {split: np.sort(np.concatenate(chunks)) if chunks else np.zeros(0, dtype=np.int64)
                       for split, chunks in splits.items()} for part, splits in parts.items()}


def difficulty_indices(parts: dict) -> dict:
    """Index sets of the four configs from :meth:`DifficultySplitter.split`'s parts."""
    def whole(part):
        return np.sort(np.concatenate([parts[part]["train"], parts[part]["validation"]]))

    return {
        "simple": dict(parts["simple"]),
        "hard": dict(parts["hard"]),
        "simple_to_hard": {**parts["simple"], "test": whole("hard")},
        "hard_to_simple": {**parts["hard"], "test": whole("simple")},
    }


DESCRIPTIONS = {
    "simple": "Rows with high PVI (easy for the predictive family); train and validation from the simple part.",
    "hard": "Rows with low PVI (hard or mislabelled); train and validation from the hard part.",
    "simple_to_hard": "Train and validation = `simple`; test = every hard row.",
    "hard_to_simple": "Train and validation = `hard`; test = every simple row.",
}


# ---- configs and release: the signal (PVI) comes from split_builders.signals.pvi.crossfit -------------------------

def label_ids(values) -> tuple[np.ndarray, list]:
    """Label values as ids ``0..C-1`` and the names in id order (sorted as strings)."""
    names = sorted({v for v in values}, key=str)
    lookup = {name: i for i, name in enumerate(names)}
    return np.asarray([lookup[v] for v in values], dtype=np.int64), names


def with_pvi_columns(dataset, result, indices: dict):
    """``dataset`` plus ``pvi``, ``h_yx``, ``h_yb`` (float64, bits), ``pvi_fold`` and ``difficulty``."""
    import datasets

    difficulty = np.full(len(dataset), "hard", dtype=object)
    for split in indices["simple"].values():
        difficulty[split] = "simple"
    columns = {"pvi": (result.pvi, datasets.Value("float64")), "h_yx": (result.h_yx, datasets.Value("float64")),
               "h_yb": (result.h_yb, datasets.Value("float64")), "pvi_fold": (result.fold, datasets.Value("int64")),
               "difficulty": (difficulty.tolist(), datasets.Value("string"))}
    for name, (values, feature) in columns.items():
        if name in dataset.column_names:
            dataset = dataset.remove_columns(name)
        dataset = dataset.add_column(name, list(np.asarray(values).tolist()) if name != "difficulty" else values,
                                     feature=feature)
    return dataset


def difficulty_configs(indices: dict, *, parameters: dict, rows=None, prefix: str = "") -> list:
    from split_builders.release.writer import ConfigSplit

    return [ConfigSplit(f"{prefix}{name}", {s: np.asarray(i) for s, i in idx.items()}, method="pvi-difficulty",
                        parameters=parameters, description=DESCRIPTIONS[name], rows=rows)
            for name, idx in indices.items()]


def pvi_summary(result, label_names, label_ids_, indices: dict) -> dict:
    """I_V overall and per label, held-out accuracy, and mean PVI of every config split."""
    summary = {"I_V": result.v_information, "accuracy": float(result.correct.mean()),
               "I_V_per_label": {str(name): float(result.pvi[label_ids_ == i].mean())
                                 for i, name in enumerate(label_names) if (label_ids_ == i).any()},
               "configs": {}}
    for config, splits in indices.items():
        summary["configs"][config] = {
            split: {"rows": int(len(idx)), "mean_pvi": float(result.pvi[idx].mean()) if len(idx) else float("nan"),
                    "labels": {str(label_names[k]): int(v) for k, v in
                               zip(*np.unique(label_ids_[idx], return_counts=True))}}
            for split, idx in splits.items()}
    return summary


def summary_markdown(summary: dict, *, heading: str = "###") -> str:
    lines = [f"I_V = **{summary['I_V']:.3f} bits** (mean cross-fitted PVI); held-out accuracy "
             f"{summary['accuracy']:.3f}; I_V per label: "
             + ", ".join(f"{k} {v:.3f}" for k, v in summary["I_V_per_label"].items()) + ".", "",
             "| config | split | rows | mean PVI | labels |", "|---|---|---|---|---|"]
    for config, splits in summary["configs"].items():
        for split, entry in splits.items():
            labels = ", ".join(f"{k}: {v}" for k, v in entry["labels"].items())
            lines.append(f"| `{config}` | {split} | {entry['rows']} | {entry['mean_pvi']:.3f} | {labels} |")
    return "\n".join(lines)
