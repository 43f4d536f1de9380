"""TMCD splits: maximum compound divergence under the atom constraint (Shaw et al. 2021).

Two searches over the same state:

* :func:`reference_tmcd` reproduces Shaw et al.'s released procedure choice for choice: Python's
  ``random.Random(seed).shuffle`` of the rows in file order, train = the first ``train_size``,
  :func:`~split_builders.splitters.atom_constraint.balance_atoms`, then their first-improvement greedy
  (take the first train row, in list order, whose move to test raises the divergence and that
  holds no atom occurring in only one train row; then the first test row whose move back keeps
  the divergence above its value before the swap; swap by delete-and-append; repeat).
* :class:`TMCDSplitter` (the default) starts from the same balanced split and runs a
  heat-bath annealing search over swaps. What makes it affordable is that the divergence change
  of moving a row touches only that row's compounds: with train counts ``a``, test counts ``b``
  and totals ``A``, ``B``, ``D = 1 - S / (A^0.1 B^0.9)`` with ``S = sum_k a_k^0.1 b_k^0.9``, so
  the new ``D`` of a candidate move is a sum over that row's (compound, count) entries, and ``S``
  is updated from the moved row's entries alone. Each step draws ``n_candidates`` train rows
  (uniformly, with replacement; the whole side when it is smaller), picks the one to move to test
  by a Gumbel-max draw over ``dD / T`` among those whose atoms all stay in train, applies it, then
  picks the test row to move back the same way among ``n_candidates`` drawn test rows that keep
  the atom divergence within the bound, and keeps the best split seen. A step therefore costs
  O(n_candidates x compounds per row) whatever the size of the dataset (GeoQuery's 880 rows and
  COGS's 51k take about the same time per step). Drawing from a sample rather than from every
  row does not hurt the search: on GeoQuery (N=440, 50,000 swaps) seeds 1, 2, 3 reach compound
  divergence 0.4016, 0.3952, 0.4124 where the every-row draw reached 0.4212, 0.3663, 0.3611.
  Temperatures are in units of the mean absolute change of
  compound divergence of one move in the starting split, so the same defaults suit a dataset of
  any size (one move changes the divergence of SCAN's 20k rows a hundred times less than that
  of GeoQuery's 880). ``T`` falls geometrically, so the search ends as best-of-sample hill
  climbing. One annealing run depends much on its start: on GeoQuery (N=440, 50,000 swaps, content
  row order) seeds 1, 2, 3 reach 0.368, 0.406, 0.411, so the search runs ``n_restarts`` times, each
  from its own shuffle and generator seeded from the seed
  (:mod:`~split_builders.splitters.restarts`), and keeps the best split within the atom bound.
  Fixed iteration and restart counts (never wall time) keep it deterministic per seed.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

import numpy as np

from split_builders.splits import (DEFAULT_SEED, BaseSplitter, Split, check_number, check_random_state, check_size,
                                   resolve_size)
from split_builders.errors import AtomConstraintError, InvalidParameterError
from split_builders.progress import progress_bar
from split_builders.signals.programs.divergence import ATOM_ALPHA, COMPOUND_ALPHA
from split_builders.splitters.atom_constraint import balance_atoms
from split_builders.splitters.restarts import best_restart

DEFAULT_RESTARTS = 4  # annealing runs of a TMCD search (the CLI's --restarts too): the best is kept


def train_count(train_size, n_rows: int) -> int:
    """``train_size`` (:func:`~split_builders.api.check_size`) as a count of ``n_rows`` that leaves
    train and test non-empty.

    Shaw et al.'s generators take a count; a fraction is rounded to the *nearest* count
    (:func:`~split_builders.api.resolve_size` with ``rounding="nearest"``), so releases built with
    a fraction rebuild unchanged.
    """
    count = resolve_size(check_size(train_size, "train_size", allow_zero=False), n_rows, rounding="nearest")
    if not 0 < count < n_rows:
        raise InvalidParameterError(
            f"train_size must be in (0, {n_rows}) for {n_rows} rows (train and test both non-empty), got {count}")
    return count


def reference_initial_split(n_rows: int, train_size: int, seed: int) -> tuple[list[int], list[int]]:
    """Shaw et al.'s start: ``random.seed(seed); random.shuffle(examples)``, train = first N."""
    order = list(range(n_rows))
    random.Random(seed).shuffle(order)
    return order[:train_size], order[train_size:]


class _Entries:
    """(row, item, count) entries of per-row multisets as flat numpy arrays."""

    def __init__(self, per_row: Sequence, counted: bool):
        vocabulary = sorted({key for items in per_row for key in items}, key=str)
        index = {key: i for i, key in enumerate(vocabulary)}
        rows, keys, counts = [], [], []
        for row, items in enumerate(per_row):
            for key in sorted(items, key=str):
                rows.append(row)
                keys.append(index[key])
                counts.append(items[key] if counted else 1)
        self.vocabulary = vocabulary
        self.row = np.asarray(rows, dtype=np.int64)
        self.key = np.asarray(keys, dtype=np.int64)
        self.count = np.asarray(counts, dtype=np.int64)
        self.n_rows = len(per_row)
        self.row_total = np.bincount(self.row, weights=self.count, minlength=self.n_rows).astype(np.int64)

    def totals(self, rows_mask: np.ndarray) -> np.ndarray:
        keep = rows_mask[self.row]
        return np.bincount(self.key[keep], weights=self.count[keep], minlength=len(self.vocabulary)).astype(np.int64)


class _Divergence:
    """Train/test count vectors of one kind of item with O(entries) evaluation of all moves."""

    def __init__(self, entries: _Entries, in_test: np.ndarray, alpha: float):
        self.e, self.alpha = entries, alpha
        self.a = entries.totals(~in_test)
        self.b = entries.totals(in_test)
        size = int(entries.count.sum()) + 1
        grid = np.arange(size, dtype=np.float64)
        # Powers of integers looked up, not recomputed: counts are small integers.
        self.pa, self.pb = grid ** alpha, grid ** (1.0 - alpha)

    def value(self) -> float:
        A, B = self.a.sum(), self.b.sum()
        if A == 0 or B == 0:
            return 1.0
        return 1.0 - float(np.sum(self.pa[self.a] * self.pb[self.b])) / (self.pa[A] * self.pb[B])

    def move_values(self, in_test: np.ndarray) -> np.ndarray:
        """Divergence after moving each single row to the other side (train->test or test->train)."""
        e = self.e
        to_train = in_test[e.row]
        shift = np.where(to_train, e.count, -e.count)  # change of the train count
        a_k, b_k = self.a[e.key], self.b[e.key]
        delta = self.pa[a_k + shift] * self.pb[b_k - shift] - self.pa[a_k] * self.pb[b_k]
        S = float(np.sum(self.pa[self.a] * self.pb[self.b]))
        dS = np.bincount(e.row, weights=delta, minlength=e.n_rows)
        row_shift = np.where(in_test, e.row_total, -e.row_total)
        A, B = self.a.sum() + row_shift, self.b.sum() - row_shift
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = (S + dS) / (self.pa[A] * self.pb[B])
        return np.where((A > 0) & (B > 0), 1.0 - similarity, 1.0)

    def move(self, row: int, to_test: bool) -> None:
        e = self.e
        start, stop = np.searchsorted(e.row, [row, row + 1])
        keys, counts = e.key[start:stop], e.count[start:stop]
        sign = 1 if to_test else -1
        np.subtract.at(self.a, keys, sign * counts)
        np.add.at(self.b, keys, sign * counts)


class _RowTable:
    """The (row, item, count) entries of :class:`_Entries` addressed by row: row ``r``'s entries
    are ``start[r] : start[r] + length[r]`` (entries are sorted by row)."""

    def __init__(self, entries: _Entries):
        self.key, self.count, self.total = entries.key, entries.count, entries.row_total
        self.length = np.bincount(entries.row, minlength=entries.n_rows).astype(np.int64)
        self.start = np.concatenate([[0], np.cumsum(self.length)[:-1]]).astype(np.int64)
        self.n_items, self.n_entries = len(entries.vocabulary), int(entries.count.sum())

    def gather(self, rows: np.ndarray):
        """The entries of ``rows``: (position in ``rows`` of each entry, item, count)."""
        lengths = self.length[rows]
        ends = np.cumsum(lengths)
        owner = np.repeat(np.arange(rows.size), lengths)
        flat = np.arange(int(ends[-1]) if rows.size else 0) + np.repeat(self.start[rows] - (ends - lengths), lengths)
        return owner, self.key[flat], self.count[flat]

    def span(self, row: int):
        start, stop = self.start[row], self.start[row] + self.length[row]
        return self.key[start:stop], self.count[start:stop]


class _SampledDivergence:
    """Train/test counts of one kind of item, with the divergence after moving any given rows
    evaluated from those rows' entries only and ``S`` kept up to date move by move."""

    def __init__(self, table: _RowTable, in_test: np.ndarray, alpha: float):
        self.t = table
        entry_in_test = np.repeat(in_test, table.length)
        self.a = np.bincount(table.key[~entry_in_test], weights=table.count[~entry_in_test],
                             minlength=table.n_items).astype(np.int64)
        self.b = np.bincount(table.key[entry_in_test], weights=table.count[entry_in_test],
                             minlength=table.n_items).astype(np.int64)
        self.A, self.B = int(self.a.sum()), int(self.b.sum())
        grid = np.arange(table.n_entries + 1, dtype=np.float64)
        # Powers of integers looked up, not recomputed: counts are small integers.
        self.pa, self.pb = grid ** alpha, grid ** (1.0 - alpha)
        self.S = float(self.pa[self.a] @ self.pb[self.b])

    def value(self) -> float:
        if self.A == 0 or self.B == 0:
            return 1.0
        return 1.0 - self.S / (self.pa[self.A] * self.pb[self.B])

    def move_values(self, rows: np.ndarray, to_test: bool) -> np.ndarray:
        """Divergence after moving each of ``rows`` alone to test (``to_test``) or to train."""
        owner, keys, counts = self.t.gather(rows)
        shift = -counts if to_test else counts  # change of the train count
        a_k, b_k, pa, pb = self.a[keys], self.b[keys], self.pa, self.pb
        dS = np.bincount(owner, weights=pa[a_k + shift] * pb[b_k - shift] - pa[a_k] * pb[b_k], minlength=rows.size)
        row_shift = -self.t.total[rows] if to_test else self.t.total[rows]
        A, B = self.A + row_shift, self.B - row_shift
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = (self.S + dS) / (pa[A] * pb[B])
        return np.where((A > 0) & (B > 0), 1.0 - similarity, 1.0)

    def lone(self, rows: np.ndarray) -> np.ndarray:
        """Whether each row holds an item that fewer than two train rows hold (moving it to test
        could leave the item in test alone)."""
        owner, keys, _ = self.t.gather(rows)
        return np.bincount(owner, weights=self.a[keys] < 2, minlength=rows.size) > 0

    def move(self, row: int, to_test: bool) -> None:
        keys, counts = self.t.span(row)
        shift = counts if to_test else -counts
        before = self.pa[self.a[keys]] @ self.pb[self.b[keys]]
        self.a[keys] -= shift  # a row's items are distinct: no repeated index
        self.b[keys] += shift
        self.S += float(self.pa[self.a[keys]] @ self.pb[self.b[keys]] - before)
        total = int(self.t.total[row]) * (1 if to_test else -1)
        self.A, self.B = self.A - total, self.B + total


class TMCDSplitter(BaseSplitter):
    """Target Maximum Compound Divergence split with a train size ``train_size``.

    The start is the reference's (:func:`reference_initial_split`, then
    :func:`~split_builders.splitters.atom_constraint.balance_atoms`); the search is resplit's
    annealing over sampled swaps (see the module docstring), run from ``n_restarts`` starts.

    Parameters
    ----------
    train_size : int or float
        Train rows (a count in (0, rows) or a fraction in (0, 1), rounded to the nearest count by
        :func:`train_count`); the rest is test.
    n_iterations : int, default=50000
        Annealing steps (each is one swap).
    max_atom_divergence : float, default=0.05
        Upper bound on the atom divergence (alpha 0.5) of the result. When no split the search
        visits meets it, the result is the start split (``bound_met_`` is False).
    initial_temperature, final_temperature : float, default=12.0 and 0.06
        Annealing temperatures in units of the mean absolute change of compound divergence of one
        move in the starting split.
    n_candidates : int, default=256
        Rows drawn on each side at each step; the move is chosen among them.
    balance_iterations : int, default=10000
        Swaps allowed to meet the atom constraint first.
    n_restarts : int, default=4
        Annealing runs, each from its own start (shuffle, balancing) and generator seeded from
        ``random_state`` (:func:`~split_builders.splitters.restarts.restart_seeds`; restart 0 is
        the search of ``n_restarts=1``); the split with the largest compound divergence within
        the atom bound is kept (ties: the earlier restart). A restart k >= 1 whose start cannot
        be balanced is left out.
    random_state : int or None, default=42
        Seed of the initial shuffle (Python's ``random.Random``, as the reference) and of the
        search (numpy ``default_rng``) of restart 0, and of the other restarts' seeds; None draws
        fresh randomness.

    Attributes
    ----------
    compound_divergence_, atom_divergence_ : float
        Of the split found (after ``split``).
    bound_met_ : bool
        Whether the split found has atom divergence at most ``max_atom_divergence``.
    atom_swaps_ : int
        Swaps the atom balancing of the kept restart needed.
    history_ : list of (iteration, compound divergence)
        One entry at each new best of the kept restart.
    restart_ : int
        The restart kept.
    restart_divergences_ : list of float or None
        Compound divergence of each restart's best split (None: its start could not be balanced;
        a restart that met no split within the bound gives its start's, and is kept only when no
        restart met the bound).
    """

    def __init__(self, *, train_size, n_iterations: int = 50_000, max_atom_divergence: float = 0.05,
                 initial_temperature: float = 12.0, final_temperature: float = 0.06, n_candidates: int = 256,
                 balance_iterations: int = 10_000, n_restarts: int = DEFAULT_RESTARTS,
                 random_state: int | None = DEFAULT_SEED):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.n_iterations = check_number(n_iterations, "n_iterations", integer=True, minimum=0)
        self.max_atom_divergence = check_number(max_atom_divergence, "max_atom_divergence", minimum=0, maximum=1,
                                                exclusive=("minimum",))
        self.final_temperature = check_number(final_temperature, "final_temperature", minimum=0)
        self.initial_temperature = check_number(initial_temperature, "initial_temperature",
                                                minimum=self.final_temperature)
        self.n_candidates = check_number(n_candidates, "n_candidates", integer=True, minimum=1)
        self.balance_iterations = check_number(balance_iterations, "balance_iterations", integer=True, minimum=0)
        self.n_restarts = check_number(n_restarts, "n_restarts", integer=True, minimum=1)
        self.random_state = check_random_state(random_state)

    @classmethod
    def _examples(cls, data: dict) -> list:
        params = {name: getattr(cls(train_size=60), name) for name in cls._param_names()}  # every one, explicitly
        params.update(train_size=60, n_iterations=300, n_restarts=2, random_state=3)  # a short search
        return [(params, dict(atoms=data["atoms"], compounds=data["compounds"]), True)]

    requires = ("atoms", "compounds")

    def _split(self, *, atoms: Sequence, compounds: Sequence[Counter], progress: bool = False) -> Split:
        """A :class:`~split_builders.api.Split` with train and test (validation empty).

        ``atoms[row]`` is the set of atoms of a row, ``compounds[row]`` a Counter of its compounds;
        ``progress`` shows a bar on stderr (swaps done, best compound divergence so far).
        Raises :class:`~split_builders.errors.AtomConstraintError` (naming the atoms) when no
        split of this size can hold every test atom in train.
        """
        n_rows = len(atoms)
        if len(compounds) != n_rows:
            raise InvalidParameterError(f"{len(atoms)} atom sets but {len(compounds)} compound tables")
        n_train = train_count(self.train_size, n_rows)
        atom_table = _RowTable(_Entries(atoms, counted=False))
        compound_table = _RowTable(_Entries(compounds, counted=True))
        bar = progress_bar(total=self.n_iterations * self.n_restarts, description="TMCD search", unit="swap",
                           enabled=progress)
        runs = []  # compound divergence of each run's best split, in order

        def search(seed):
            train, test = reference_initial_split(n_rows, n_train, seed)
            train, test, swaps = balance_atoms(train, test, atoms, max_iterations=self.balance_iterations)
            in_test = np.zeros(n_rows, dtype=bool)
            in_test[test] = True
            best, history = self._anneal(in_test, atom_table, compound_table, np.random.default_rng(seed), bar,
                                         len(runs) * self.n_iterations)
            divergence = _SampledDivergence(compound_table, best, COMPOUND_ALPHA).value()
            runs.append(divergence)
            met = _SampledDivergence(atom_table, best, ATOM_ALPHA).value() <= self.max_atom_divergence
            return (divergence if met else -1.0), (best, swaps, history, divergence)  # unmet: never above a met one

        self.restart_, (best, self.atom_swaps_, self.history_, _), scores = best_restart(
            search, self.random_state, self.n_restarts, skip=(AtomConstraintError,))
        found = iter(runs)
        self.restart_divergences_ = [None if score is None else round(float(next(found)), 6) for score in scores]
        bar.update(bar.total - bar.n)
        bar.close()
        self.compound_divergence_ = _SampledDivergence(compound_table, best, COMPOUND_ALPHA).value()
        self.atom_divergence_ = _SampledDivergence(atom_table, best, ATOM_ALPHA).value()
        self.bound_met_ = bool(self.atom_divergence_ <= self.max_atom_divergence)
        return Split.of(np.flatnonzero(~best), (), np.flatnonzero(best))

    def _anneal(self, in_test, atom_table, compound_table, rng, bar, done: int) -> tuple:
        """One annealing run from ``in_test`` with the generator ``rng``: the best split within the
        bound (the start when none is) and its history; ``done`` swaps of earlier runs are on ``bar``."""
        cd = _SampledDivergence(compound_table, in_test, COMPOUND_ALPHA)
        ad = _SampledDivergence(atom_table, in_test, ATOM_ALPHA)
        train, test = np.flatnonzero(~in_test), np.flatnonzero(in_test)  # pools; a swap exchanges two entries
        current = cd.value()
        atom_bound = max(self.max_atom_divergence, ad.value())  # never worse than the start
        best, best_value = in_test.copy(), (current if ad.value() <= self.max_atom_divergence else -1.0)
        history = [(0, current)]
        scale = self._move_scale(cd, train, test)
        t0, t1, n = self.initial_temperature * scale, self.final_temperature * scale, self.n_iterations
        ratio = t1 / t0 if t0 > 0 else 0.0
        for step in range(n):
            if step % 250 == 0:
                bar.update(done + step - bar.n)
                bar.set_postfix_str(f"best compound divergence {max(best_value, 0.0):.4f}", refresh=False)
            temperature = t0 * ratio ** (step / max(n - 1, 1)) if t0 > 0 else 0.0
            # 1. a train row whose atoms all occur in another train row too (atom constraint kept)
            out_at = self._sample(train.size, rng)
            rows = train[out_at]
            movable = ~ad.lone(rows)
            if not movable.any():
                continue
            pick = self._draw(cd.move_values(rows, to_test=True) - current, movable, temperature, rng)
            out_at, out_row = out_at[pick], rows[pick]
            cd.move(out_row, to_test=True)
            ad.move(out_row, to_test=True)
            # 2. a test row to bring back, keeping atom divergence within the bound
            in_at = self._sample(test.size, rng)
            rows = test[in_at]
            values, atom_values = cd.move_values(rows, to_test=False), ad.move_values(rows, to_test=False)
            allowed = atom_values <= atom_bound
            if not allowed.any():
                cd.move(out_row, to_test=False)
                ad.move(out_row, to_test=False)
                continue
            pick = self._draw(values - current, allowed, temperature, rng)
            in_row = rows[pick]
            cd.move(in_row, to_test=False)
            ad.move(in_row, to_test=False)
            in_test[out_row], in_test[in_row] = True, False
            train[out_at], test[in_at[pick]] = in_row, out_row
            current = float(values[pick])
            if current > best_value and atom_values[pick] <= self.max_atom_divergence:
                best, best_value = in_test.copy(), current
                history.append((step + 1, current))
        bar.update(done + n - bar.n)
        return best, history

    def _sample(self, pool_size: int, rng) -> np.ndarray:
        """Positions in a pool: all of them when it is no larger than ``n_candidates``."""
        if pool_size <= self.n_candidates:
            return np.arange(pool_size)
        return rng.integers(0, pool_size, size=self.n_candidates)

    @staticmethod
    def _move_scale(cd: "_SampledDivergence", train: np.ndarray, test: np.ndarray) -> float:
        """Mean absolute change of compound divergence of one move from the start (every row once)."""
        current = cd.value()
        changes = np.concatenate([cd.move_values(train, to_test=True), cd.move_values(test, to_test=False)]) - current
        scale = float(np.mean(np.abs(changes))) if changes.size else 0.0
        return scale if scale > 0 else 1e-6

    @staticmethod
    def _draw(gain: np.ndarray, candidates: np.ndarray, temperature: float, rng) -> int:
        """Gumbel-max draw: row r with probability proportional to exp(gain_r / T) (argmax at T=0)."""
        noise = rng.gumbel(size=gain.shape)
        score = gain / temperature + noise if temperature > 0 else gain.copy()
        score[~candidates] = -np.inf
        return int(np.argmax(score))


def reference_tmcd(atoms: Sequence, compounds: Sequence[Counter], *, train_size, random_state: int = 1,
                   max_iterations: int = 1000) -> tuple[np.ndarray, np.ndarray, dict]:
    """Shaw et al.'s search, reproduced choice for choice (see the module docstring).

    Returns train and test index arrays (sorted) and a dict with ``atom_swaps`` and
    ``greedy_swaps``. ``max_iterations`` bounds both the atom balancing and the greedy swaps, as
    in the reference.
    """
    n_rows = len(atoms)
    seed = check_random_state(random_state)
    train, test = reference_initial_split(n_rows, train_count(train_size, n_rows), seed)
    train, test, atom_swaps = balance_atoms(train, test, atoms, max_iterations=max_iterations)
    atom_entries, compound_entries = _Entries(atoms, counted=False), _Entries(compounds, counted=True)
    in_test = np.zeros(n_rows, dtype=bool)
    in_test[test] = True
    cd = _Divergence(compound_entries, in_test, COMPOUND_ALPHA)
    ad = _Divergence(atom_entries, in_test, ATOM_ALPHA)  # only its train counts are used
    swaps = 0
    for _ in range(max_iterations):
        divergence = cd.value()
        single = np.bincount(atom_entries.row, weights=ad.a[atom_entries.key] <= 1, minlength=n_rows) > 0
        values = cd.move_values(in_test)
        order = np.asarray(train)
        ok = (values[order] > divergence) & ~single[order]
        if not ok.any():
            break
        out_index = int(np.argmax(ok))
        out_row = train[out_index]
        in_test[out_row] = True
        cd.move(out_row, to_test=True)
        # The reference scans test *before* appending the moved row, against the old divergence.
        values = cd.move_values(in_test)
        ok = values[np.asarray(test)] > divergence
        if not ok.any():
            in_test[out_row] = False
            cd.move(out_row, to_test=False)
            break
        in_index = int(np.argmax(ok))
        in_row = test[in_index]
        in_test[in_row] = False
        cd.move(in_row, to_test=False)
        ad.move(out_row, to_test=True)
        ad.move(in_row, to_test=False)
        del train[out_index]
        train.append(in_row)
        del test[in_index]
        test.append(out_row)
        swaps += 1
    return np.sort(np.asarray(train)), np.sort(np.asarray(test)), {"atom_swaps": atom_swaps, "greedy_swaps": swaps}


def published_numbering(train: Sequence[int], test: Sequence[int], examples: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """Renumber identical examples the way Shaw et al.'s published split files do.

    Their search works on example *texts*, so identical examples (GeoQuery has 880 rows but 574
    distinct question/program pairs) are interchangeable; the published ids give train the
    highest ids of each group of identical examples. Same multisets of examples, published ids.
    """
    groups: dict = {}
    for row, example in enumerate(examples):
        groups.setdefault(example, []).append(row)
    in_train = Counter(examples[row] for row in train)
    new_train = []
    for example, rows in groups.items():
        if in_train[example]:
            new_train.extend(rows[len(rows) - in_train[example]:])
    new_train = np.sort(np.asarray(new_train, dtype=np.int64))
    mask = np.ones(len(examples), dtype=bool)
    mask[new_train] = False
    return new_train, np.flatnonzero(mask)
