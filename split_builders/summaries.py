"""Per-split statistics that method cards and ``resplit diff`` show: the two-sample Kolmogorov-Smirnov statistic,
label shares and their total-variation distance, a config's summary per split (:func:`split_summary`), its
Markdown table (:func:`config_section`) and its usual figure (:func:`split_histograms`, a specification: no I/O)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from split_builders.cardspec import Figure, Panel
from split_builders.splits import SPLITS


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



def split_histograms(values: dict, *, title: str, signal_label: str, path: str) -> "Figure":
    """The usual figure of a config: the signal's and the length's distribution per split."""
    present = [s for s in SPLITS if s in values]
    return Figure(path=path, title=title, alt=f"{signal_label} and length histograms of {title}", panels=[
        Panel(xlabel=signal_label, series={s: values[s]["signal"] for s in present}),
        Panel(xlabel="length (word tokens)", series={s: values[s]["length"] for s in present}, kind="discrete"),
    ])


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
