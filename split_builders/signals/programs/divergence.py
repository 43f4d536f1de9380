"""Atom and compound divergence between two sets of examples (Keysers et al. 2020).

With train counts normalised to p and test counts to q, the Chernoff-coefficient divergence is
``D_alpha = 1 - sum_k p_k**alpha * q_k**(1 - alpha)``. Compound divergence uses alpha = 0.1 (a
test compound that is rare in train counts almost fully), atom divergence alpha = 0.5 over atoms
counted once per example that holds them.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

COMPOUND_ALPHA = 0.1
ATOM_ALPHA = 0.5


def chernoff_divergence(counts_1: Counter, counts_2: Counter, alpha: float) -> float:
    """``1 - sum_k p_k^alpha q_k^(1-alpha)`` for two count tables (0.0 when both are empty)."""
    total_1, total_2 = sum(counts_1.values()), sum(counts_2.values())
    if not total_1 or not total_2:
        return 1.0 if total_1 or total_2 else 0.0
    similarity = 0.0
    for key in sorted(set(counts_1) & set(counts_2), key=str):  # sorted: the same float sum every run
        similarity += (counts_1[key] / total_1) ** alpha * (counts_2[key] / total_2) ** (1.0 - alpha)
    return 1.0 - similarity


def _total(rows: Sequence[int], per_row: Sequence) -> Counter:
    counts: Counter = Counter()
    for row in rows:
        counts.update(per_row[row])
    return counts


def compound_divergence(train: Sequence[int], test: Sequence[int], compounds: Sequence[Counter],
                        alpha: float = COMPOUND_ALPHA) -> float:
    """Compound divergence of the rows ``test`` from the rows ``train`` (``compounds[row]`` a Counter)."""
    return chernoff_divergence(_total(train, compounds), _total(test, compounds), alpha)


def atom_divergence(train: Sequence[int], test: Sequence[int], atoms: Sequence,
                    alpha: float = ATOM_ALPHA) -> float:
    """Atom divergence; ``atoms[row]`` is a set, so each atom counts once per example."""
    return chernoff_divergence(_total(train, atoms), _total(test, atoms), alpha)


def unseen_atom_rows(train: Sequence[int], test: Sequence[int], atoms: Sequence) -> list[int]:
    """Test rows holding an atom that no train row holds."""
    seen = set().union(*(atoms[row] for row in train)) if len(train) else set()
    return [row for row in test if not set(atoms[row]) <= seen]


def novel_compound_share(train: Sequence[int], test: Sequence[int], compounds: Sequence[Counter]) -> float:
    """Share of test rows with at least one compound that no train row has."""
    if not len(test):
        return float("nan")
    seen = set().union(*(compounds[row].keys() for row in train)) if len(train) else set()
    return float(np.mean([not set(compounds[row]) <= seen for row in test]))


def split_divergences(train, test, atoms, compounds) -> dict:
    """The figures a card reports for one train/test pair."""
    return {
        "compound_divergence": compound_divergence(train, test, compounds),
        "atom_divergence": atom_divergence(train, test, atoms),
        "test_rows_with_unseen_atom": len(unseen_atom_rows(train, test, atoms)),
        "test_share_with_novel_compound": novel_compound_share(train, test, compounds),
    }
