"""MCD splits: maximum compound divergence under an atom-divergence bound (Keysers et al. 2020).

Keysers et al. build a split greedily: train and test start from a few random examples, and
examples are added one at a time, to the side that is furthest behind its target size, choosing
the example that makes the compound divergence largest while the atom divergence stays small.
:class:`MCDSplitter` does that, with each choice made among ``n_candidates`` examples drawn from
those not yet used (all of them when fewer are left), so one step costs the same whatever the
dataset's size:

* a train step picks, among the candidates that keep the atom divergence within
  ``max(max_atom_divergence, current)``, the one with the largest compound divergence after it is
  added; a test step does the same among the candidates whose atoms all occur in train already
  (the atom constraint), falling back to any candidate when none qualifies;
* when no candidate keeps the atom divergence within the bound, the one that lowers it most is
  taken;
* the search ends when both sides have their sizes; it runs ``n_restarts`` times, each from its own
  random start and generator seeded from the seed (:mod:`~split_builders.splitters.restarts`; the
  greedy choices depend much on the first rows), and the filling with the largest compound
  divergence within the bound goes on, with its generator. A second phase of ``n_swaps`` swaps between
  test and the unused examples (then train and the unused examples) keeps each exchange that raises
  compound divergence within the atom bound.

The divergence of a candidate is evaluated from its own entries only: with train weights ``a``,
test weights ``b`` and their totals ``A``, ``B``, ``D = 1 - S / (A^alpha B^(1-alpha))`` with
``S = sum_k a_k^alpha b_k^(1-alpha)``, and adding a row changes ``S`` only at its compounds.
Fixed step counts (never wall time) keep it deterministic per seed.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from split_builders.splits import (DEFAULT_SEED, BaseSplitter, Split, check_number, check_random_state, check_size,
                                   resolve_size)
from split_builders.errors import InvalidParameterError
from split_builders.progress import progress_bar
from split_builders.signals.programs.divergence import ATOM_ALPHA, COMPOUND_ALPHA
from split_builders.splitters.restarts import best_restart


def split_counts(train_size, test_size, n_rows: int) -> tuple[int, int]:
    """``train_size`` and ``test_size`` (counts, or fractions of ``n_rows`` rounded to the nearest
    count) as counts that leave both sides non-empty and fit in ``n_rows``."""
    n_train = resolve_size(check_size(train_size, "train_size", allow_zero=False), n_rows, rounding="nearest")
    n_test = resolve_size(check_size(test_size, "test_size", allow_zero=False), n_rows, rounding="nearest")
    if n_train < 1 or n_test < 1 or n_train + n_test > n_rows:
        raise InvalidParameterError(f"train_size {n_train} and test_size {n_test} must both be at least 1 and "
                                    f"together at most the {n_rows} rows")
    return n_train, n_test


def _clean(weights: np.ndarray) -> np.ndarray:
    """Weights after additions and removals, with rounding residues set to 0: ``x ** 0.1`` of a
    residue of 1e-17 would be 0.02, not 0."""
    return np.where(weights < 1e-9, 0.0, weights)


class _Table:
    """Per-row (item, weight) entries as flat arrays; row ``r``'s are ``start[r] : start[r] + length[r]``."""

    def __init__(self, per_row: Sequence):
        vocabulary = sorted({key for items in per_row for key in items}, key=str)
        index = {key: i for i, key in enumerate(vocabulary)}
        keys, weights, lengths = [], [], []
        for items in per_row:
            ordered = sorted(items, key=str)
            keys += [index[k] for k in ordered]
            weights += [float(items[k]) if isinstance(items, dict) else 1.0 for k in ordered]
            lengths.append(len(ordered))
        self.n_items = len(vocabulary)
        self.key = np.asarray(keys, dtype=np.int64)
        self.weight = np.asarray(weights, dtype=np.float64)
        self.length = np.asarray(lengths, dtype=np.int64)
        self.start = np.concatenate([[0], np.cumsum(self.length)[:-1]]).astype(np.int64)
        self.total = np.bincount(np.repeat(np.arange(len(per_row)), self.length), weights=self.weight,
                                 minlength=len(per_row))

    def gather(self, rows: np.ndarray):
        lengths = self.length[rows]
        ends = np.cumsum(lengths)
        owner = np.repeat(np.arange(rows.size), lengths)
        flat = np.arange(int(ends[-1]) if rows.size else 0) + np.repeat(self.start[rows] - (ends - lengths), lengths)
        return owner, self.key[flat], self.weight[flat]

    def span(self, row: int):
        start, stop = self.start[row], self.start[row] + self.length[row]
        return self.key[start:stop], self.weight[start:stop]


class _Divergence:
    """Train and test weights of one kind of item; the divergence after adding or removing rows."""

    def __init__(self, table: _Table, alpha: float):
        self.t, self.alpha = table, alpha
        self.a, self.b = np.zeros(table.n_items), np.zeros(table.n_items)
        self.A = self.B = 0.0
        self.S = 0.0

    def _pair(self, a, b):
        return np.power(a, self.alpha) * np.power(b, 1.0 - self.alpha)

    def value(self) -> float:
        if self.A <= 0 or self.B <= 0:
            return 1.0
        return float(1.0 - self.S / (self.A ** self.alpha * self.B ** (1.0 - self.alpha)))

    def values_after(self, rows: np.ndarray, side: str, sign: float = 1.0) -> np.ndarray:
        """Divergence after adding (``sign`` 1) or removing (-1) each of ``rows`` alone to/from ``side``."""
        owner, keys, weights = self.t.gather(rows)
        a_k, b_k = self.a[keys], self.b[keys]
        if side == "train":
            new = self._pair(_clean(a_k + sign * weights), b_k)
        else:
            new = self._pair(a_k, _clean(b_k + sign * weights))
        dS = np.bincount(owner, weights=new - self._pair(a_k, b_k), minlength=rows.size)
        shift = sign * self.t.total[rows]
        A = self.A + (shift if side == "train" else 0.0)
        B = self.B + (shift if side == "test" else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            similarity = (self.S + dS) / (np.power(np.maximum(A, 0.0), self.alpha) * np.power(np.maximum(B, 0.0), 1.0 - self.alpha))
        return np.where((A > 1e-12) & (B > 1e-12), 1.0 - similarity, 1.0)

    def add(self, row: int, side: str, sign: float = 1.0) -> None:
        keys, weights = self.t.span(row)
        before = float(self._pair(self.a[keys], self.b[keys]).sum())
        target = self.a if side == "train" else self.b
        target[keys] = _clean(target[keys] + sign * weights)  # a row's items are distinct
        self.S += float(self._pair(self.a[keys], self.b[keys]).sum()) - before
        if side == "train":
            self.A += sign * float(self.t.total[row])
        else:
            self.B += sign * float(self.t.total[row])


class MCDSplitter(BaseSplitter):
    """Maximum Compound Divergence split of ``train_size`` train and ``test_size`` test rows (the rest unused).

    Parameters
    ----------
    train_size, test_size : int or float
        Rows of train and test: counts, or fractions of the rows (rounded to the nearest count).
    max_atom_divergence : float, default=0.02
        Upper bound on the atom divergence (alpha 0.5) the search keeps.
    n_candidates : int, default=256
        Unused rows drawn at each step; the row added is chosen among them.
    n_swaps : int, default=0
        Exchanges tried after the greedy phase (each between a side and the unused rows).
    n_restarts : int, default=3
        Greedy fillings, each from its own random start and generator seeded from ``random_state``
        (:func:`~split_builders.splitters.restarts.restart_seeds`; restart 0 is the search of
        ``n_restarts=1``); the one with the largest compound divergence within the atom bound goes
        on to the exchanges, drawing from its generator.
    n_seed : int, default=1
        Random rows each side starts with.
    random_state : int or None, default=42
        Seed of every draw (numpy ``default_rng``); None draws fresh randomness.

    Attributes
    ----------
    compound_divergence_, atom_divergence_ : float
        Of the split found (after ``split``).
    bound_met_ : bool
        Whether its atom divergence is at most ``max_atom_divergence``.
    swaps_kept_ : int
        Exchanges of the second phase that were kept.
    restart_divergences_ : list of float
        Compound divergence of each greedy filling, before the exchanges.
    restart_ : int
        The restart that went on to the exchanges.
    """

    def __init__(self, *, train_size, test_size, max_atom_divergence: float = 0.02, n_candidates: int = 256,
                 n_swaps: int = 0, n_restarts: int = 3, n_seed: int = 1,
                 random_state: int | None = DEFAULT_SEED):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.test_size = check_size(test_size, "test_size", allow_zero=False)
        self.max_atom_divergence = check_number(max_atom_divergence, "max_atom_divergence", minimum=0, maximum=1,
                                                exclusive=("minimum",))
        self.n_candidates = check_number(n_candidates, "n_candidates", integer=True, minimum=1)
        self.n_swaps = check_number(n_swaps, "n_swaps", integer=True, minimum=0)
        self.n_restarts = check_number(n_restarts, "n_restarts", integer=True, minimum=1)
        self.n_seed = check_number(n_seed, "n_seed", integer=True, minimum=1)
        self.random_state = check_random_state(random_state)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(train_size=60, test_size=20, max_atom_divergence=0.1, n_candidates=16, n_swaps=20, n_restarts=2,
                      n_seed=1, random_state=3), dict(atoms=data["atoms"], compounds=data["compounds"]), False)]

    requires = ("atoms", "compounds")

    def _split(self, *, atoms: Sequence, compounds: Sequence, progress: bool = False) -> Split:
        """A :class:`~split_builders.api.Split` with train and test (validation empty).

        ``atoms[row]`` is the set of a row's atoms, ``compounds[row]`` a ``{compound: weight}``
        mapping; ``progress`` shows a bar on stderr.
        """
        n_rows = len(atoms)
        if len(compounds) != n_rows:
            raise InvalidParameterError(f"{len(atoms)} atom sets but {len(compounds)} compound tables")
        n_train, n_test = split_counts(self.train_size, self.test_size, n_rows)
        if self.n_seed * 2 > min(n_train, n_test) * 2 or 2 * self.n_seed > n_rows:
            raise InvalidParameterError(f"n_seed {self.n_seed} does not fit train {n_train} and test {n_test}")
        compound_table, atom_table = _Table(compounds), _Table(atoms)
        steps = n_train + n_test - 2 * self.n_seed
        bar = progress_bar(total=steps * self.n_restarts + self.n_swaps, description="MCD search", unit="step",
                           enabled=progress)
        self.restart_divergences_ = []

        def search(seed):
            rng = np.random.default_rng(seed)
            side_of = self._greedy(n_train, n_test, compound_table, atom_table, rng, bar)
            cd, ad = self._state(side_of, compound_table, atom_table)
            self.restart_divergences_.append(round(cd.value(), 6))
            return (cd.value() if ad.value() <= self.max_atom_divergence else cd.value() - 1.0), (side_of, rng)

        self.restart_, (side_of, rng), _ = best_restart(search, self.random_state, self.n_restarts)
        cd, ad = self._state(side_of, compound_table, atom_table)
        self.swaps_kept_ = self._swap(cd, ad, side_of, np.flatnonzero(side_of == 0), rng, bar)
        bar.update(bar.total - bar.n)
        bar.close()
        self.compound_divergence_, self.atom_divergence_ = cd.value(), ad.value()
        self.bound_met_ = bool(self.atom_divergence_ <= self.max_atom_divergence)
        return Split.of(np.flatnonzero(side_of == 1), (), np.flatnonzero(side_of == 2))

    def _greedy(self, n_train: int, n_test: int, compound_table, atom_table, rng, bar) -> np.ndarray:
        """One greedy filling from ``n_seed`` random rows per side: side of each row (0 unused, 1 train, 2 test)."""
        n_rows = compound_table.length.size
        cd, ad = _Divergence(compound_table, COMPOUND_ALPHA), _Divergence(atom_table, ATOM_ALPHA)
        side_of = np.zeros(n_rows, dtype=np.int8)
        unused = rng.permutation(n_rows)  # a pool; a chosen row is replaced by the pool's last
        for position, row in enumerate(unused[:2 * self.n_seed]):
            side = "train" if position < self.n_seed else "test"
            cd.add(int(row), side)
            ad.add(int(row), side)
            side_of[row] = 1 if side == "train" else 2
        unused = unused[2 * self.n_seed:].copy()
        n_unused = unused.size
        counts = {"train": self.n_seed, "test": self.n_seed}
        targets = {"train": n_train, "test": n_test}
        for step in range(n_train + n_test - 2 * self.n_seed):
            if step and step % 250 == 0:
                bar.update(250)
            side = min(("train", "test"), key=lambda s: (counts[s] / targets[s] if counts[s] < targets[s] else 2.0))
            at = self._sample(n_unused, rng)
            rows = unused[at]
            pick = self._choose(rows, side, cd, ad)
            row = int(rows[pick])
            cd.add(row, side)
            ad.add(row, side)
            side_of[row] = 1 if side == "train" else 2
            counts[side] += 1
            unused[at[pick]] = unused[n_unused - 1]
            n_unused -= 1
        return side_of

    @staticmethod
    def _state(side_of, compound_table, atom_table):
        """Compound and atom divergence trackers of a given assignment."""
        cd, ad = _Divergence(compound_table, COMPOUND_ALPHA), _Divergence(atom_table, ATOM_ALPHA)
        for code, side in ((1, "train"), (2, "test")):
            for row in np.flatnonzero(side_of == code):
                cd.add(int(row), side)
                ad.add(int(row), side)
        return cd, ad

    def _choose(self, rows, side, cd, ad) -> int:
        compound = cd.values_after(rows, side)
        atom = ad.values_after(rows, side)
        allowed = atom <= max(self.max_atom_divergence, ad.value())
        if side == "test":
            owner, keys, _ = ad.t.gather(rows)
            unseen = np.bincount(owner, weights=ad.a[keys] <= 0, minlength=rows.size) > 0
            if (allowed & ~unseen).any():
                allowed &= ~unseen
        if not allowed.any():
            return int(np.argmin(atom))
        return int(np.argmax(np.where(allowed, compound, -np.inf)))

    def _swap(self, cd, ad, side_of, unused, rng, bar) -> int:
        """Exchanges of a row of one side with an unused row, kept when compound divergence rises
        within the atom bound (sides alternate: test, then train)."""
        kept = 0
        if not unused.size:
            return kept
        for step in range(self.n_swaps):
            if step and step % 250 == 0:
                bar.update(250)
            side = "test" if step % 2 == 0 else "train"
            members = np.flatnonzero(side_of == (2 if side == "test" else 1))
            members = members[self._sample(members.size, rng)]
            # the member whose removal raises compound divergence most leaves
            out_row = int(members[np.argmax(cd.values_after(members, side, -1.0))])
            current, bound = cd.value(), max(self.max_atom_divergence, ad.value())
            cd.add(out_row, side, -1.0)
            ad.add(out_row, side, -1.0)
            at = self._sample(unused.size, rng)
            rows = unused[at]
            compound, atom = cd.values_after(rows, side), ad.values_after(rows, side)
            allowed = atom <= bound
            if side == "test":
                owner, keys, _ = ad.t.gather(rows)
                allowed &= np.bincount(owner, weights=ad.a[keys] <= 0, minlength=rows.size) == 0
            score = np.where(allowed, compound, -np.inf)
            pick = int(np.argmax(score))
            if score[pick] > current + 1e-12:
                in_row = int(rows[pick])
                cd.add(in_row, side)
                ad.add(in_row, side)
                side_of[out_row], side_of[in_row] = 0, (2 if side == "test" else 1)
                unused[at[pick]] = out_row
                kept += 1
            else:
                cd.add(out_row, side)
                ad.add(out_row, side)
        return kept

    def _sample(self, pool_size: int, rng) -> np.ndarray:
        """Positions in the pool: all of them when it is no larger than ``n_candidates``, else distinct draws."""
        if pool_size <= self.n_candidates:
            return np.arange(pool_size)
        return rng.choice(pool_size, size=self.n_candidates, replace=False)


# ---------------------------------------------------------------------------------------------
# The configs of an MCD release
# ---------------------------------------------------------------------------------------------

DESCRIPTIONS = {
    "mcd": "MCD: compound divergence maximised with atom divergence <= {bound} (Keysers et al.'s greedy search)",
    "random": "random: every parseable row, split at random in the MCD config's train:test proportion",
}


def mcd_configs(atoms: Sequence, compounds: Sequence, *, train_size, test_size, max_atom_divergence: float = 0.02,
                n_candidates: int = 256, n_swaps: int = 2000, n_restarts: int = 3, random_state: int = 42,
                search: bool = True,
                published: dict | None = None, published_from: dict | None = None, source_ids=None,
                membership=None, progress: bool = False, seconds: dict | None = None) -> list:
    """Every config of an MCD release, as :class:`~split_builders.api.ConfigSplit` (row numbers of
    ``atoms``; rows whose atoms are None are unparseable and in no config), each with its
    ``divergences`` (train against test) in its parameters.

    With ``search``: ``mcd``, searched by :class:`MCDSplitter` over the parseable rows, and
    ``random``, all parseable rows split at random (``default_rng(random_state)``) in ``mcd``'s
    train:test proportion, so that the configs together hold every row the search drew from (which
    is what ``verify`` re-derives the compound weights from). Then ``published``
    (``{name: {split: rows}}``, files in ``published_from``) as released, each split's membership
    recorded as ``membership`` (the release's fingerprint, given by the method) of its
    ``source_ids``. ``seconds`` (a dict) receives the search time, for a terminal report only.
    """
    import time

    from split_builders.splits import ConfigSplit

    parsed = np.asarray([row for row, found in enumerate(atoms) if found is not None], dtype=np.int64)
    configs = []
    if search:
        n_train, n_test = split_counts(train_size, test_size, parsed.size)
        started = time.perf_counter()
        splitter = MCDSplitter(train_size=n_train, test_size=n_test, max_atom_divergence=max_atom_divergence,
                               n_candidates=n_candidates, n_swaps=n_swaps, n_restarts=n_restarts,
                               random_state=random_state)
        split = splitter.split(atoms=[atoms[r] for r in parsed], compounds=[compounds[r] for r in parsed],
                               progress=progress)
        if seconds is not None:
            seconds["mcd"] = time.perf_counter() - started
        parameters = {**splitter.get_params(), "search_met_bound": splitter.bound_met_,
                      "swaps_kept": int(splitter.swaps_kept_),
                      "restart_compound_divergences": [round(float(v), 6) for v in splitter.restart_divergences_],
                      "restart_kept": splitter.restart_}
        configs.append(ConfigSplit("mcd", {"train": parsed[split.train], "test": parsed[split.test]}, method="mcd",
                                   parameters=parameters,
                                   description=DESCRIPTIONS["mcd"].format(bound=f"{max_atom_divergence:g}") + "."))
        order = np.random.default_rng(random_state).permutation(parsed.size)
        cut = int(round(parsed.size * n_train / (n_train + n_test)))
        cut = min(max(cut, 1), parsed.size - 1)
        configs.append(ConfigSplit("random", {"train": np.sort(parsed[order[:cut]]), "test": np.sort(parsed[order[cut:]])},
                                   method="random", parameters={"train_size": cut, "random_state": random_state},
                                   description=DESCRIPTIONS["random"] + "."))
    if published:
        ids = np.asarray(source_ids, dtype=np.int64)
        for name, split in published.items():
            indices = {k: np.asarray(v, dtype=np.int64) for k, v in split.items()}
            members = {k: membership(ids[v]) for k, v in indices.items()}
            configs.append(ConfigSplit(name, indices, method="published",
                                       parameters={"file": published_from[name], "source_ids_sha256": members},
                                       description=f"Published split, as released: {published_from[name]}."))
    for config in configs:
        config.parameters["divergences"] = config_divergences(config.indices, atoms, compounds)
    return configs


def config_divergences(indices: dict, atoms: Sequence, compounds: Sequence) -> dict:
    """Train against test: compound and atom divergence, test rows with an unseen atom, the share of
    test rows with a compound train lacks (unparseable rows left out), rounded to 6 places."""
    from split_builders.signals.programs.divergence import split_divergences

    rows = {k: [int(r) for r in v if atoms[int(r)] is not None] for k, v in indices.items()}
    figures = split_divergences(rows["train"], rows.get("test", []), atoms, compounds)
    return {k: (round(float(v), 6) if isinstance(v, float) else int(v)) for k, v in figures.items()}
