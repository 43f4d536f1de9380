"""The atom constraint: every atom of an evaluation row also occurs in some training row.

:func:`balance_atoms` is Shaw et al.'s (2021) swap procedure, kept exactly because published
splits depend on its order of choices:

while an atom occurs in evaluation but not in train, take the *first* train row that holds no
atom occurring in at most one train row (moving it cannot lose a train atom), and the *first*
evaluation row that holds a missing atom; remove each from its list and append it to the other.

The lists are kept in the caller's order of preference: a likelihood split passes train least
likely first and evaluation most likely first, so the swaps trade the most typical rows.
Atom counts are updated per swap instead of being recounted, which makes each iteration one
scan of the two lists.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from split_builders.errors import AtomConstraintError

DEFAULT_MAX_ITERATIONS = 10_000


def _atom_counts(rows, atoms) -> Counter:
    counts: Counter = Counter()
    for row in rows:
        counts.update(atoms[row])
    return counts


def missing_atoms(train: Sequence[int], evaluation: Sequence[int], atoms: Sequence) -> set:
    """Atoms of ``evaluation`` rows that no ``train`` row holds."""
    train_counts = _atom_counts(train, atoms)
    return {atom for row in evaluation for atom in atoms[row] if atom not in train_counts}


def balance_atoms(train: Sequence[int], evaluation: Sequence[int], atoms: Sequence, *,
                  max_iterations: int = DEFAULT_MAX_ITERATIONS) -> tuple[list[int], list[int], int]:
    """Swap rows until every evaluation atom occurs in train.

    Parameters
    ----------
    train, evaluation : sequence of int
        Row numbers, each list in the order in which rows are offered for a swap.
    atoms : sequence of set
        ``atoms[row]`` is the set of atoms of that row.
    max_iterations : int, default=10000
        Swaps allowed before giving up.

    Returns
    -------
    train, evaluation : list of int
        The lists after the swaps (same sizes as given).
    n_swaps : int
        Number of swaps made.

    Raises
    ------
    AtomConstraintError
        When no train row can be given up, or ``max_iterations`` swaps do not suffice; the
        message lists the atoms still missing from train.
    """
    train, evaluation = list(train), list(evaluation)
    train_counts = _atom_counts(train, atoms)
    eval_counts = _atom_counts(evaluation, atoms)
    for n_swaps in range(max_iterations + 1):
        missing = {atom for atom in eval_counts if atom not in train_counts}
        if not missing:
            return train, evaluation, n_swaps
        if n_swaps == max_iterations:
            break
        rare = {atom for atom, count in train_counts.items() if count <= 1}
        out_index = next((i for i, row in enumerate(train) if rare.isdisjoint(atoms[row])), None)
        if out_index is None:
            raise AtomConstraintError(
                f"the atom constraint cannot be met: every train row holds an atom no other train "
                f"row has, so none can move to evaluation; atoms missing from train: {_show(missing)}")
        in_index = next(i for i, row in enumerate(evaluation) if not missing.isdisjoint(atoms[row]))
        out_row, in_row = train.pop(out_index), evaluation.pop(in_index)
        train.append(in_row)
        evaluation.append(out_row)
        for counts, removed, added in ((train_counts, out_row, in_row), (eval_counts, in_row, out_row)):
            counts.subtract(atoms[removed])
            counts.update(atoms[added])
            for atom in atoms[removed]:
                if counts[atom] <= 0:
                    del counts[atom]
    raise AtomConstraintError(
        f"the atom constraint is still unmet after {max_iterations} swaps; atoms missing from "
        f"train: {_show(missing)}")


def _show(atoms: set, limit: int = 20) -> str:
    ordered = sorted(map(str, atoms))
    return ", ".join(repr(a) for a in ordered[:limit]) + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")
