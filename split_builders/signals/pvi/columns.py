"""PVI in a release: the per-row columns released rows carry, and the card's summary of them.

Shared by ``resplit pvi`` and ``resplit curriculum --pvi``: :func:`with_pvi_columns` adds the
columns, :func:`pvi_summary` and :func:`summary_markdown` give I_V and each config split's mean PVI,
:func:`pvi_figure` the simple-against-hard histogram.
"""

from __future__ import annotations

import numpy as np


def with_pvi_columns(dataset, result, simple):
    """``dataset`` plus ``pvi``, ``h_yx``, ``h_yb`` (float64, bits), ``pvi_fold`` and ``difficulty``
    (``simple`` where the boolean mask ``simple`` is true, else ``hard``) from a
    :class:`~split_builders.signals.pvi.crossfit.PVIResult`; columns of those names are replaced."""
    import datasets

    difficulty = np.where(np.asarray(simple, dtype=bool), "simple", "hard").tolist()
    columns = {"pvi": (result.pvi, datasets.Value("float64")), "h_yx": (result.h_yx, datasets.Value("float64")),
               "h_yb": (result.h_yb, datasets.Value("float64")), "pvi_fold": (result.fold, datasets.Value("int64")),
               "difficulty": (difficulty, datasets.Value("string"))}
    for name, (values, feature) in columns.items():
        if name in dataset.column_names:
            dataset = dataset.remove_columns(name)
        dataset = dataset.add_column(name, values if name == "difficulty" else np.asarray(values).tolist(),
                                     feature=feature)
    return dataset


def pvi_summary(result, label_names, labels, configs) -> dict:
    """I_V overall and per label, held-out accuracy, and mean PVI of every config split."""
    summary = {"I_V": result.v_information, "accuracy": float(result.correct.mean()),
               "I_V_per_label": {str(name): float(result.pvi[labels == i].mean())
                                 for i, name in enumerate(label_names) if (labels == i).any()},
               "configs": {}}
    for config in configs:
        summary["configs"][config.name] = {}
        for split in config.splits:
            idx = np.asarray(config.indices[split], dtype=np.int64)
            summary["configs"][config.name][split] = {
                "rows": int(idx.size), "mean_pvi": float(result.pvi[idx].mean()) if idx.size else float("nan"),
                "labels": {str(label_names[k]): int(v) for k, v in zip(*np.unique(labels[idx], return_counts=True))}}
    return summary


def summary_markdown(summary: dict) -> str:
    """I_V, accuracy and the per-config table of :func:`pvi_summary` as Markdown."""
    lines = [f"I_V = **{summary['I_V']:.3f} bits** (mean cross-fitted PVI); held-out accuracy "
             f"{summary['accuracy']:.3f}; I_V per label: "
             + ", ".join(f"{k} {v:.3f}" for k, v in summary["I_V_per_label"].items()) + ".", "",
             "| config | split | rows | mean PVI | labels |", "|---|---|---|---|---|"]
    for config, splits in summary["configs"].items():
        for split, entry in splits.items():
            labels = ", ".join(f"{k}: {v}" for k, v in entry["labels"].items())
            lines.append(f"| `{config}` | {split} | {entry['rows']} | {entry['mean_pvi']:.3f} | {labels} |")
    return "\n".join(lines)


def pvi_figure(path: str, title: str, pvi, simple):
    """PVI of the simple rows against the hard rows (one histogram panel)."""
    from split_builders.cardspec import Figure, Panel

    simple = np.asarray(simple, dtype=bool)
    return Figure(path, title, [Panel("PVI (bits)", {"simple": pvi[simple], "hard": pvi[~simple]})],
                  alt=f"{title}: PVI of simple vs hard rows")
