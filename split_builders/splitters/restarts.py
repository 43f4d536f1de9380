"""Restarts of a seeded search, done once: each restart seeded from the search's seed, the best result kept.

The compositional searches (TMCD's annealing, :mod:`~split_builders.splitters.tmcd`; MCD's greedy filling,
:mod:`~split_builders.splitters.mcd`) depend much on their random start: one draw decides whether a split is as
divergent as the search can make it. Both therefore run ``n_restarts`` times and keep the best result
(:func:`best_restart`), each restart from its own seed (:func:`restart_seeds`):

* restart 0 is seeded with the seed itself, so one restart is the search as it was before restarts (and a
  release built then re-derives with ``n_restarts=1``, :func:`recorded_restarts`);
* restart ``k >= 1`` with a 64-bit integer drawn from child ``k - 1`` of ``numpy.random.SeedSequence(seed)``
  (``spawn``): independent streams, and restart ``k`` is the same search whatever the number of restarts, so the
  best of ``N + 1`` restarts is never worse than the best of ``N``.

The budget is a count of restarts, never wall time, so the result depends on the seed and the options only (not on
the machine's speed); under the ``content`` row order the rows reach the search in their content order
(:func:`~split_builders.splitters.partition.in_row_order`), so the restarts are invariant to the rows' order too.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

LEGACY_RESTARTS = 1  # what a release recorded before the restart count was an option was searched with


def restart_seeds(random_state: int | None, n_restarts: int) -> list:
    """The seed of each of ``n_restarts`` restarts: ``random_state`` itself, then one integer per child of
    ``SeedSequence(random_state)`` (None: fresh entropy for all of them)."""
    children = np.random.SeedSequence(random_state).spawn(n_restarts - 1) if n_restarts > 1 else []
    return [random_state, *(int(child.generate_state(1, np.uint64)[0]) for child in children)]


def best_restart(search: Callable, random_state: int | None, n_restarts: int, *, skip: tuple = ()) -> tuple:
    """Run ``search(seed)`` for every restart seed (:func:`restart_seeds`) and keep the best.

    ``search`` returns ``(score, result)``; the first restart with the highest score wins (ties keep the
    earlier restart). A restart ``k >= 1`` that raises one of ``skip`` (a start the search cannot work from) is
    left out with the score None; restart 0 raising propagates, as the search alone would.

    Returns ``(index, result, scores)``: the winning restart, its result, and every restart's score.
    """
    best, scores = None, []
    for index, seed in enumerate(restart_seeds(random_state, n_restarts)):
        try:
            score, result = search(seed)
        except skip:
            if index == 0:
                raise
            scores.append(None)
            continue
        scores.append(score)
        if best is None or score > best[1]:
            best = (index, score, result)
    return best[0], best[2], scores


def recorded_restarts(parameters) -> int:
    """The restart count a release was searched with: its recorded ``restarts``, else :data:`LEGACY_RESTARTS` (a
    release from before the count was recorded)."""
    value = (parameters or {}).get("restarts")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else LEGACY_RESTARTS
