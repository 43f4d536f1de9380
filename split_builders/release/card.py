"""The human part of a release card: sizes, label balance, how the splits differ, plots.

Shared by every split method. Each config gets a table of its splits (rows, label shares,
mean signal and length), the divergence between train and test (two-sample Kolmogorov-Smirnov
statistic of the signal and of the length, and the total-variation distance of the label
distributions), and one PNG with the signal and length histograms of the three splits.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from split_builders.release.writer import SPLITS


def ks_statistic(a, b) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs."""
    a, b = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    if a.size == 0 or b.size == 0:
        return float("nan")
    grid = np.concatenate([a, b])
    gap = np.searchsorted(a, grid, side="right") / a.size - np.searchsorted(b, grid, side="right") / b.size
    return float(np.abs(gap).max())


def label_shares(labels) -> dict:
    counts = Counter(labels)
    total = sum(counts.values())
    return {label: counts[label] / total for label in sorted(counts, key=str)}


def total_variation(p: dict, q: dict) -> float:
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


def split_summary(values: dict, signal: str, *, labels=None) -> dict:
    """Per-config statistics: ``values[split]`` is a dict with arrays 'signal' and 'length'."""
    summary = {"splits": {}}
    for split in SPLITS:
        part = values[split]
        entry = {"rows": len(part["signal"]),
                 f"mean_{signal}": float(np.mean(part["signal"])) if len(part["signal"]) else float("nan"),
                 "mean_length": float(np.mean(part["length"])) if len(part["length"]) else float("nan")}
        if labels is not None:
            entry["labels"] = label_shares(part["labels"])
        summary["splits"][split] = entry
    summary[f"ks_{signal}_train_test"] = ks_statistic(values["train"]["signal"], values["test"]["signal"])
    summary["ks_length_train_test"] = ks_statistic(values["train"]["length"], values["test"]["length"])
    if labels is not None:
        summary["label_tv_train_test"] = total_variation(summary["splits"]["train"]["labels"],
                                                         summary["splits"]["test"]["labels"])
    return summary


def plot_config(path: Path, values: dict, *, title: str, signal_label: str) -> None:
    """Histograms of the signal and of the length, train vs validation vs test (one PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    colours = {"train": "#4c72b0", "validation": "#dd8452", "test": "#c44e52"}
    everything = np.concatenate([values[s]["signal"] for s in SPLITS])
    bins = np.linspace(everything.min(), everything.max(), 41) if everything.size else 10
    for split in SPLITS:
        axes[0].hist(values[split]["signal"], bins=bins, density=True, histtype="step", linewidth=1.6,
                     color=colours[split], label=f"{split} ({len(values[split]['signal'])})")
    axes[0].set_xlabel(signal_label)
    axes[0].set_ylabel("density")
    axes[0].legend(fontsize=8)
    lengths = np.concatenate([values[s]["length"] for s in SPLITS])
    length_bins = np.arange(lengths.min(), lengths.max() + 2) - 0.5 if lengths.size else 10
    for split in SPLITS:
        axes[1].hist(values[split]["length"], bins=length_bins, density=True, histtype="step", linewidth=1.6,
                     color=colours[split], label=split)
    axes[1].set_xlabel("length (word tokens)")
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" metadata: the PNG bytes then do not change with the matplotlib version string.
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)


def _fmt(value, digits=2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.{digits}f}"


def config_section(name: str, description: str, summary: dict, *, signal: str, figure: str | None) -> str:
    """Markdown for one config: table per split, divergences, figure."""
    splits = summary["splits"]
    has_labels = "labels" in splits["train"]
    label_names = sorted({k for s in SPLITS for k in splits[s].get("labels", {})}, key=str)
    header = ["split", "rows", f"mean {signal}", "mean length"] + [f"% {label}" for label in label_names]
    lines = [f"### `{name}`", "", description, "", "| " + " | ".join(header) + " |",
             "|" + "---|" * len(header)]
    for split in SPLITS:
        entry = splits[split]
        cells = [split, str(entry["rows"]), _fmt(entry[f"mean_{signal}"]), _fmt(entry["mean_length"])]
        cells += [_fmt(100 * entry["labels"].get(label, 0.0), 1) for label in label_names] if has_labels else []
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Train vs test: Kolmogorov-Smirnov statistic of {signal} "
                  f"**{_fmt(summary[f'ks_{signal}_train_test'], 3)}**, of length "
                  f"**{_fmt(summary['ks_length_train_test'], 3)}**"
              + (f"; total-variation distance of the label distributions "
                 f"**{_fmt(summary['label_tv_train_test'], 3)}**." if has_labels else ".")]
    if figure:
        lines += ["", f"![{signal} and length histograms of {name}]({figure})", ""]
    return "\n".join(lines)
