"""MCD (Keysers et al. 2020): SCAN's grammar, atoms and weighted compounds, the published SCAN MCD splits'
divergences, the greedy search and ``resplit mcd``."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import pytest
import yaml

from split_builders.cli import main
from split_builders.errors import InvalidParameterError, UnparseableProgramError
from split_builders.signals.programs.mcd_atoms import (cogs_example, compounds_of, mcd_rows, scan_example,
                                                        weighted_compounds)
from split_builders.signals.programs.scan_grammar import RULES, parse_scan
from split_builders.splitters.mcd import MCDSplitter, config_divergences

# MCD's divergences of the published splits, measured here; the paper's are 0.736 / 0.734 / 0.735 (compound) and
# 0.015 / 0.020 / 0.014 (atom): every figure is within 0.01 of the paper's.
MEASURED = {"mcd1": (0.7418, 0.0166), "mcd2": (0.7392, 0.0213), "mcd3": (0.7406, 0.0142)}
PAPER = {"mcd1": (0.736, 0.015), "mcd2": (0.734, 0.020), "mcd3": (0.735, 0.014)}


@pytest.fixture(scope="module")
def commands(shared) -> list[str]:
    with gzip.open(shared / "data" / "scan" / "tasks.txt.gz", "rt") as handle:
        return [line[4:].split(" OUT: ")[0].strip() for line in handle if line.strip()]


@pytest.fixture(scope="module")
def scan_mcd(commands):
    return mcd_rows(commands, "scan")


def test_the_parser_reads_every_scan_command_with_one_derivation(commands):
    assert len(commands) == 20_910
    used = Counter()
    for command in commands:
        tree = parse_scan(command)
        used.update(node.rule for node in tree.nodes())
    assert set(used) == set(RULES) and len(RULES) == 18  # every rule of the grammar is used somewhere


@pytest.mark.parametrize("command", ["", "walk and", "jump twice twice", "turn", "walk left around",
                                     "walk and run after look", "fly left", "walk opposite", "look left right",
                                     "twice walk"])
def test_the_parser_refuses_malformed_commands_in_one_line(command):
    with pytest.raises(UnparseableProgramError) as error:
        parse_scan(command)
    assert "\n" not in str(error.value) and (repr(command) in str(error.value) or not command)


def test_atoms_are_the_rules_applied_and_the_words():
    atoms, tree = scan_example("jump opposite left twice after walk")
    assert atoms == {"C -> S after S", "S -> V twice", "S -> V", "V -> D[1] opposite D[2]", "V -> U", "D -> U left",
                     "U -> jump", "U -> walk", "jump", "opposite", "left", "twice", "after", "walk"}
    assert tree.rule == "C -> S after S" and [c.rule for c in tree.children] == ["S -> V twice", "S -> V"]


def test_compounds_are_the_connected_subgraphs_of_the_derivation():
    assert compounds_of(parse_scan("walk twice")) == Counter({
        "C -> S ( S -> V twice )": 1, "C -> S ( S -> V twice ( V -> U ) )": 1,
        "C -> S ( S -> V twice ( V -> U ( U -> walk ) ) )": 1, "S -> V twice ( V -> U )": 1,
        "S -> V twice ( V -> U ( U -> walk ) )": 1, "V -> U ( U -> walk )": 1})
    both = compounds_of(parse_scan("walk and walk"))
    # one side of a conjunction is the same compound whichever side it is on; both sides keep their order
    assert both["C -> S and S ( S -> V )"] == 2
    assert both["C -> S and S ( S -> V , S -> V ( V -> U ) )"] == 1
    assert both["C -> S and S ( S -> V ( V -> U ) , S -> V )"] == 1
    assert compounds_of(parse_scan("turn left"))["V -> D ( D -> turn left )"] == 1
    limited = compounds_of(parse_scan("walk twice"), max_size=2)
    assert set(limited) == {"C -> S ( S -> V twice )", "S -> V twice ( V -> U )", "V -> U ( U -> walk )"}


def test_compound_weights_by_hand():
    """Over three commands: a compound always inside one larger compound weighs 0 (dropped), one inside
    either of two larger ones half the time weighs 1/2, a whole derivation weighs 1."""
    weights = weighted_compounds([parse_scan(c) for c in ("walk twice", "jump twice", "walk")])
    assert weights[0] == {"C -> S ( S -> V twice ( V -> U ) )": 0.5,
                          "C -> S ( S -> V twice ( V -> U ( U -> walk ) ) )": 1.0,
                          "V -> U ( U -> walk )": 0.5}
    assert weights[2] == {"C -> S ( S -> V ( V -> U ( U -> walk ) ) )": 1.0, "V -> U ( U -> walk )": 0.5}
    assert weights[1]["C -> S ( S -> V twice ( V -> U ( U -> jump ) ) )"] == 1.0
    assert "V -> U ( U -> jump )" not in weights[1]  # only ever under S -> V twice


def test_cogs_logical_forms_are_read_as_trees_of_predicates_and_roles():
    atoms, tree = cogs_example("* girl ( x _ 1 ) ; need . agent ( x _ 2 , x _ 1 ) AND need . xcomp ( x _ 2 , x _ 4 ) "
                               "AND cook . agent ( x _ 4 , x _ 1 )")
    assert atoms == {"girl", "need", "agent", "xcomp", "cook"}
    found = compounds_of(tree)
    assert found["need ( agent , xcomp )"] == 1 and found["xcomp ( cook ( agent ( * girl ) ) )"] == 1
    assert found["agent ( * girl )"] == 2  # the girl is the agent of both verbs
    with pytest.raises(UnparseableProgramError):
        cogs_example("eat . agent ( x _ 1 x _ 2 )")


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_published_scan_mcd_splits_have_the_papers_divergences(shared, scan_mcd, name):
    from loading_scripts import scan

    split = scan.load(shared / "data" / "scan").published[name]
    assert (len(split["train"]), len(split["validation"]), len(split["test"])) == (8365, 1046, 1045)
    figures = config_divergences(split, scan_mcd.atoms, scan_mcd.compounds)
    compound, atom = MEASURED[name]
    assert round(figures["compound_divergence"], 4) == compound
    assert round(figures["atom_divergence"], 4) == atom
    assert abs(compound - PAPER[name][0]) <= 0.01 and abs(atom - PAPER[name][1]) <= 0.01
    assert figures["test_rows_with_unseen_atom"] == 0


def test_a_searched_split_keeps_its_constraints_and_repeats_for_a_seed(commands):
    found = mcd_rows(commands[:2000], "scan")
    make = lambda seed: MCDSplitter(train_size=800, test_size=100, max_atom_divergence=0.02, n_candidates=64,
                                    n_swaps=100, n_restarts=1, random_state=seed)
    splitter = make(5)
    train, _, test = splitter.split(atoms=found.atoms, compounds=found.compounds)
    assert (train.size, test.size) == (800, 100) and not set(train) & set(test)
    figures = config_divergences({"train": train, "test": test}, found.atoms, found.compounds)
    assert splitter.bound_met_ and figures["atom_divergence"] <= 0.02
    assert figures["test_rows_with_unseen_atom"] == 0
    assert figures["compound_divergence"] == pytest.approx(splitter.compound_divergence_, abs=1e-6)  # rounded to 6 places
    random = np.random.default_rng(5).permutation(2000)
    baseline = config_divergences({"train": random[:800], "test": random[800:900]}, found.atoms, found.compounds)
    assert figures["compound_divergence"] > baseline["compound_divergence"] + 0.3
    again = make(5).split(atoms=found.atoms, compounds=found.compounds)
    assert np.array_equal(again.train, train) and np.array_equal(again.test, test)
    assert not np.array_equal(make(6).split(atoms=found.atoms, compounds=found.compounds).test, test)


def test_splitter_options_are_checked_eagerly():
    with pytest.raises(InvalidParameterError):
        MCDSplitter(train_size=10, test_size=5, max_atom_divergence=0)
    with pytest.raises(InvalidParameterError):
        MCDSplitter(train_size=10, test_size=5).split(atoms=[{"a"}] * 12, compounds=[{}] * 12)  # 15 rows asked of 12


def _card(folder):
    return yaml.safe_load((folder / "README.md").read_text().split("---")[1])


def test_cli_releases_searched_random_and_published_configs_with_divergences(shared, tmp_path, hf_cache, capsys):
    out = tmp_path / "scan-mcd"
    args = ["mcd", "--source", str(shared / "data" / "scan"), "--limit", "1000", "--train-size", "400",
            "--test-size", "50", "--candidates", "64", "--restarts", "1", "--swaps", "100", "--null-splits", "0",
            "--no-progress", "--seed", "3"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "compound div" in printed and "mcd1" in printed
    configs = _card(out)["resplit"]["configs"]
    assert set(configs) == {"mcd", "random", "mcd1", "mcd2", "mcd3"}
    for name, entry in configs.items():
        figures = entry["parameters"]["divergences"]
        assert 0 <= figures["atom_divergence"] < figures["compound_divergence"] <= 1 or name == "random"
    assert configs["mcd"]["parameters"]["divergences"]["atom_divergence"] <= 0.02
    assert configs["mcd"]["parameters"]["divergences"]["compound_divergence"] > 0.6
    assert configs["random"]["parameters"]["divergences"]["compound_divergence"] < 0.2
    # verify re-derives mcd and random from the released rows; published splits by their recorded membership
    from split_builders.publishing.verify import verify

    report = verify(str(out))
    assert report.ok and not [f for f in report.findings if f.status == "not checked"]
    assert {f.config for f in report.findings if f.level == 2} >= {"mcd", "random"}


def test_cli_measure_prints_the_published_splits_divergences(shared, tmp_path, hf_cache, capsys):
    base = ["mcd", "--source", str(shared / "data" / "scan"), "--limit", "1000", "--null-splits", "0", "--no-progress"]
    assert main([*base, "--measure", "mcd1,mcd3", "--out", str(tmp_path / "m")]) == 0
    printed = capsys.readouterr().out
    assert "mcd1" in printed and "mcd3" in printed
    assert set(_card(tmp_path / "m")["resplit"]["configs"]) == {"mcd1", "mcd3"}
    assert main([*base, "--measure", "mcd9", "--out", str(tmp_path / "n")]) == 2
    error = capsys.readouterr().err
    assert "mcd9" in error and "published: mcd1, mcd2, mcd3" in error and "Traceback" not in error
    assert not (tmp_path / "n").exists()


def test_a_source_without_derivations_is_refused_in_one_line(shared, tmp_path, capsys):
    assert main(["mcd", "--source", str(shared / "data" / "geoquery" / "geoquery_nqg.tsv"),
                 "--out", str(tmp_path / "g")]) == 2
    error = capsys.readouterr().err
    assert "resplit tmcd" in error and len(error.strip().splitlines()) == 1
