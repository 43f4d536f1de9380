"""Restarts of the TMCD and MCD searches (``split_builders.splitters.restarts``), on GeoQuery's atoms and compounds.

Each restart is the one-restart search of its own seed drawn from the seed, restart 0 being the seed itself, so the
best of several restarts is deterministic, never worse than the search of one restart, and (under the ``content``
row order) the same whatever the order of the source rows. Short searches keep it cheap.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from split_builders.splitters.mcd import MCDSplitter, mcd_configs
from split_builders.splitters.partition import content_keys, in_row_order
from split_builders.splitters.restarts import recorded_restarts, restart_seeds
from split_builders.splitters.tmcd import TMCDSplitter
from test_tmcd_search import geo  # noqa: F401  (GeoQuery's rows, atoms and compounds)

SHORT = {
    "tmcd": lambda **kw: TMCDSplitter(train_size=440, n_iterations=300, **kw),
    "mcd": lambda **kw: MCDSplitter(train_size=200, test_size=50, max_atom_divergence=0.1, n_candidates=16,
                                    n_swaps=30, **kw),
}


def _search(family, geo, **kw):  # noqa: F811
    _, atoms, compounds = geo
    splitter = SHORT[family](**kw)
    split = splitter.split(atoms=atoms, compounds=compounds)
    return splitter, split


def test_restart_seeds_are_the_seed_then_its_spawned_children():
    seeds = restart_seeds(11, 4)
    assert seeds[0] == 11 and len(set(seeds)) == 4
    children = np.random.SeedSequence(11).spawn(3)
    assert seeds[1:] == [int(c.generate_state(1, np.uint64)[0]) for c in children]
    assert restart_seeds(11, 2) == seeds[:2]  # restart k does not depend on how many restarts run
    assert restart_seeds(12, 3)[1:] != seeds[1:3]


@pytest.mark.parametrize("family", sorted(SHORT))
def test_each_restart_is_the_one_restart_search_of_its_seed(family, geo):  # noqa: F811
    """Restart k is the one-restart search seeded ``restart_seeds(seed, n)[k]``, and the kept split is that search's
    (for MCD, its exchanges too: they draw from the kept restart's generator)."""
    many, split = _search(family, geo, n_restarts=3, random_state=5)
    seeds = restart_seeds(5, 3)
    alone = [_search(family, geo, n_restarts=1, random_state=seed) for seed in seeds]
    assert many.restart_divergences_ == [one.restart_divergences_[0] for one, _ in alone]
    assert len(set(many.restart_divergences_)) == 3  # three different searches, not one repeated
    kept, kept_split = alone[many.restart_]
    assert np.array_equal(split.train, kept_split.train) and np.array_equal(split.test, kept_split.test)
    assert many.compound_divergence_ == pytest.approx(kept.compound_divergence_)


@pytest.mark.parametrize("family", sorted(SHORT))
def test_restarts_are_deterministic(family, geo):  # noqa: F811
    first, split = _search(family, geo, n_restarts=3, random_state=2)
    again, split_again = _search(family, geo, n_restarts=3, random_state=2)
    assert first.restart_divergences_ == again.restart_divergences_ and first.restart_ == again.restart_
    assert np.array_equal(split.train, split_again.train) and np.array_equal(split.test, split_again.test)


def test_tmcd_best_of_restarts_is_never_worse_than_the_first(geo):  # noqa: F811
    """The best of N includes restart 0, the search of one restart: over seeds, never a lower compound
    divergence, the same split whenever restart 0 is kept, and a better one for at least one seed."""
    better = 0
    for seed in (1, 2, 3):
        one, one_split = _search("tmcd", geo, n_restarts=1, random_state=seed)
        many, split = _search("tmcd", geo, n_restarts=3, random_state=seed)
        assert many.bound_met_ and many.restart_divergences_[0] == one.restart_divergences_[0]
        assert many.compound_divergence_ >= one.compound_divergence_ - 1e-12
        assert many.compound_divergence_ == pytest.approx(max(many.restart_divergences_), abs=1e-6)
        if many.restart_ == 0:
            assert np.array_equal(split.test, one_split.test)
        better += many.compound_divergence_ > one.compound_divergence_ + 1e-9
    assert better >= 1


def test_a_restart_met_within_the_bound_beats_one_that_is_not():
    """A restart whose search met no split within the atom bound (its start split) is kept only when none did."""
    from split_builders.splitters.restarts import best_restart

    runs = iter([(-1.0, "start"), (0.3, "met"), (0.3, "tie"), (0.2, "worse")])
    assert best_restart(lambda seed: next(runs), 1, 4) == (1, "met", [-1.0, 0.3, 0.3, 0.2])


def test_a_restart_whose_start_fails_is_left_out_but_restart_0_failing_is_said():
    from split_builders.errors import AtomConstraintError
    from split_builders.splitters.restarts import best_restart

    def search(seed):
        if seed != 1:
            raise AtomConstraintError("cannot balance")
        return 0.1, "zero"

    assert best_restart(search, 1, 3, skip=(AtomConstraintError,)) == (0, "zero", [0.1, None, None])
    with pytest.raises(AtomConstraintError):
        best_restart(search, 2, 3, skip=(AtomConstraintError,))


def _by_content(indices, pairs) -> dict:
    return {split: Counter(pairs[int(r)] for r in rows) for split, rows in indices.items()}


@pytest.mark.parametrize("family", ["tmcd", "mcd"])
def test_restarts_under_the_content_row_order_do_not_depend_on_the_rows_order(family, geo):  # noqa: F811
    from split_builders.splitters.compositional import compositional_configs

    src, atoms, compounds = geo
    pairs = list(zip(src.inputs, src.targets))
    keys = content_keys(src.rows, ("input", "target"))
    found = []
    for permutation in (np.arange(len(pairs)), np.random.default_rng(0).permutation(len(pairs))):
        per_row = {"atoms": [atoms[i] for i in permutation], "compounds": [compounds[i] for i in permutation]}
        if family == "tmcd":
            configs = in_row_order(compositional_configs, keys[permutation], 4,
                                   per_row={**per_row, "inputs": [src.inputs[i] for i in permutation],
                                            "targets": [src.targets[i] for i in permutation]},
                                   target_language="funql", train_size=440, iterations=300, restarts=3, random_state=4)
        else:
            configs = in_row_order(mcd_configs, keys[permutation], 4, per_row=per_row, train_size=200, test_size=50,
                                   max_atom_divergence=0.1, n_candidates=16, n_swaps=30, n_restarts=3, random_state=4)
        config = configs[0]
        assert config.name == family and len(config.parameters["restart_compound_divergences"]) == 3
        found.append((_by_content(config.indices, [pairs[i] for i in permutation]),
                      config.parameters["restart_compound_divergences"], config.parameters["restart_kept"]))
    assert found[0] == found[1]


def test_a_release_from_before_restarts_re_derives_with_one():
    assert recorded_restarts({"seed": 1}) == 1 and recorded_restarts(None) == 1
    assert recorded_restarts({"restarts": 4}) == 4


def _drop_recorded(folder, key: str) -> None:
    """Drop ``key`` from the README's recorded parameters, as a release built before it was recorded has none."""
    import yaml

    text = (folder / "README.md").read_text()
    _, head, body = text.split("---\n", 2)
    metadata = yaml.safe_load(head)
    del metadata["resplit"]["parameters"][key]
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n{body}")


def test_a_release_without_a_recorded_restart_count_re_derives_with_one(shared, tmp_path):
    """verify's level 2 searches again with the recorded restarts; a release from before they were recorded was
    searched once, and re-derives so. The record matters: without it, a search whose kept restart was not the
    first no longer re-derives."""
    from split_builders.cli import main as resplit
    from split_builders.publishing.verify import verify

    def build(out, restarts):
        assert resplit(["tmcd", "--source", str(shared / "data" / "geoquery" / "geoquery_nqg.tsv"), "--train-size",
                        "440", "--iterations", "200", "--configs", "tmcd", "--no-published", "--restarts",
                        str(restarts), "--seed", "1", "--out", str(out), "--no-progress", "--null-splits", "0"]) == 0
        return out

    old, new = build(tmp_path / "old", 1), build(tmp_path / "new", 2)
    for folder in (old, new):
        _drop_recorded(folder, "restarts")
    report = verify(str(old), load=False)
    assert report.ok and any(f.config == "tmcd" and f.level == 2 and f.status == "identical" for f in report.findings)
    assert "restart_kept: 1" in (new / "README.md").read_text()  # seed 1: restart 1 was kept (checked, not assumed)
    wrong = verify(str(new), load=False)
    assert not wrong.ok and any(f.config == "tmcd" and f.level == 2 and f.status == "differs" for f in wrong.findings)
