"""Atoms, compounds, divergence and the TMCD search, against Shaw et al.'s published GeoQuery splits."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from split_builders.signals.programs.atoms import atoms_by_row
from split_builders.signals.programs.compounds import compounds_by_row, funql_compounds, sql_compounds
from split_builders.signals.programs.divergence import split_divergences
from split_builders.errors import AtomConstraintError, InvalidParameterError
from split_builders.splitters.tmcd import TMCDSplitter, published_numbering, reference_tmcd

# The README of ../shared/reference/tmcd: compound divergence and test rows with an unseen atom.
REFERENCE = {"standard": (0.0274, 1), "template_1": (0.0747, 4), "length_1": (0.1703, 19), "tmcd_1": (0.1902, 0)}


@pytest.fixture(scope="module")
def geo(shared):
    from loading_scripts import geoquery

    src = geoquery.load(shared / "data" / "geoquery")
    atoms = atoms_by_row(src.targets, "funql").atoms
    return src, atoms, compounds_by_row(src.targets, "funql")


def test_funql_compounds_match_the_readme_example():
    found = funql_compounds("answer ( intersection ( state , next_to_2 ( most ( state , loc_1 , city ) ) ) )")
    assert found == Counter(["answer( intersection )", "intersection( state , __ )", "intersection( __ , next_to_2 )",
                             "next_to_2( most )", "most( state , __ , __ )", "most( __ , loc_1 , __ )",
                             "most( __ , __ , city )"])


def test_sql_compounds_keep_clause_roles_and_anonymise_literals():
    found = sql_compounds("SELECT count(*) FROM singer WHERE age > 20 AND name = 'x'")
    assert found["select( count )"] == 1 and found["where( > )"] == 1 and found["= value"] == 1
    assert found["select>from>where"] == 1
    assert not any("'x'" in c or "20" in c for c in found)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_divergences_reproduce_the_reference_numbers(geo, shared, name):
    src, atoms, compounds = geo
    split = src.published[f"published_{name}"]
    figures = split_divergences(split["train"], split["test"], atoms, compounds)
    divergence, unseen = REFERENCE[name]
    assert round(figures["compound_divergence"], 4) == divergence
    assert figures["test_rows_with_unseen_atom"] == unseen
    if name == "tmcd_1":
        assert round(figures["atom_divergence"], 4) == 0.0438


def test_reference_mode_reproduces_published_tmcd_1(geo, shared):
    src, atoms, compounds = geo
    published = json.loads((shared / "data/geoquery/splits_nqg/tmcd_1.json").read_text())
    train, test, info = reference_tmcd(atoms, compounds, train_size=440, random_state=1, max_iterations=1000)
    pairs = list(zip(src.inputs, src.targets))
    # Same multiset of examples (identical examples are interchangeable) ...
    assert Counter(pairs[i] for i in train) == Counter(pairs[i] for i in published["train"])
    # ... and, numbered the published way, the same id sets.
    train, test = published_numbering(train, test, pairs)
    assert set(train.tolist()) == set(published["train"]) and set(test.tolist()) == set(published["test"])
    assert info["greedy_swaps"] > 0


def test_annealing_beats_the_reference_under_the_constraints(geo):
    _, atoms, compounds = geo
    splitter = TMCDSplitter(train_size=440, n_iterations=4000, n_restarts=1, random_state=1)  # one run: restarts elsewhere
    train, validation, test = splitter.split(atoms=atoms, compounds=compounds)
    assert validation.size == 0
    figures = split_divergences(train, test, atoms, compounds)
    assert len(train) == 440 and len(test) == 440 and not set(train) & set(test)
    assert figures["test_rows_with_unseen_atom"] == 0
    assert figures["atom_divergence"] <= 0.05
    assert figures["compound_divergence"] > REFERENCE["tmcd_1"][0]  # better than the reference greedy
    assert splitter.compound_divergence_ == pytest.approx(figures["compound_divergence"])
    again = TMCDSplitter(train_size=440, n_iterations=4000, n_restarts=1, random_state=1).split(atoms=atoms,
                                                                                               compounds=compounds)
    assert np.array_equal(again[0], train)


@pytest.mark.parametrize("bad", [0, 880, 1000, -3, 1.5, "440"])
def test_train_size_outside_the_rows_is_refused(geo, bad):
    _, atoms, compounds = geo
    with pytest.raises(InvalidParameterError, match="train_size"):
        TMCDSplitter(train_size=bad, n_iterations=10).split(atoms=atoms, compounds=compounds)


def test_unmeetable_atom_constraint_names_the_atoms():
    # Every row holds a unique atom: no train row can be given up for the missing test atoms.
    atoms = [frozenset({f"a{i}", "shared"}) for i in range(6)]
    compounds = [Counter({f"c{i}": 1}) for i in range(6)]
    with pytest.raises(AtomConstraintError, match="'a"):
        TMCDSplitter(train_size=3, n_iterations=10).split(atoms=atoms, compounds=compounds)


def test_unparseable_programs_are_listed_by_id():
    found = atoms_by_row(["answer ( city )", "answer ( city", "answer ( river )"], "funql")
    assert [row for row, _ in found.unparseable] == [1]
    assert "source_id 1" in found.describe_unparseable()
