"""The figures of a ``resplit report`` folder (:meth:`split_builders.evaluation.report.Report.write`): a forest
plot of the gaps and the concurrence heatmap, PNG without a timestamp so that a report made again is the same."""

from __future__ import annotations

import numpy as np


def forest_plot(gaps, path) -> None:
    """``gaps.png``: each model x config's gap to the baseline config with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = gaps.reset_index(drop=True)
    labels = [f"{r.model} / {r.config}" for r in frame.itertuples()]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(frame) + 1.2))
    y = np.arange(len(frame))[::-1]
    low = frame["difference"] - frame["difference_ci_low"]
    high = frame["difference_ci_high"] - frame["difference"]
    ax.errorbar(frame["difference"], y, xerr=[low.fillna(0), high.fillna(0)], fmt="o", color="C0", capsize=3)
    ax.axvline(0, color="0.5", lw=1)
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"difference to the baseline config ({frame['metric'].iloc[0]})")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png", metadata={"Software": None})
    plt.close(fig)


def heatmap(concurrence, path) -> None:
    """``concurrence.png``: Kendall's tau-b between every pair of configs' model rankings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = concurrence
    names = list(dict.fromkeys([*frame["config_a"], *frame["config_b"]]))
    grid = np.full((len(names), len(names)), np.nan)
    for row in frame.itertuples():
        i, j = names.index(row.config_a), names.index(row.config_b)
        grid[i, j] = grid[j, i] = row.kendall_tau
    np.fill_diagonal(grid, 1.0)
    fig, ax = plt.subplots(figsize=(1 + 0.6 * len(names), 0.8 + 0.6 * len(names)))
    image = ax.imshow(grid, vmin=-1, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="Kendall tau-b of model rankings")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png", metadata={"Software": None})
    plt.close(fig)
