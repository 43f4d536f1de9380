"""Readers, length/template/standard builders, lexical variants and the ``resplit tmcd`` command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from split_builders.cli import main
from split_builders.splitters.compositional import LongestToTestSplitter, TemplateSplitter, program_template
from split_builders.signals.programs.lexical import WugReplacer
from split_builders.splitters.tmcd import published_numbering


def test_spider_reader_recreates_the_nqg_rows(shared):
    from loading_scripts import spider
    from split_builders.signals.programs.atoms import atoms_by_row
    from split_builders.signals.programs.divergence import unseen_atom_rows

    src = spider.load(shared / "data" / "spider")
    published = json.loads((shared / "data/spider/splits_nqg/length_1.json").read_text())
    assert len(src) == len(published["train"]) + len(published["test"])
    train, _, test = LongestToTestSplitter(train_size=3282).split(inputs=src.inputs, targets=src.targets)
    assert set(train.tolist()) == set(published["train"])  # row for row, or the sort would differ
    atoms = atoms_by_row(src.targets, "sql").atoms
    tmcd = src.published["published_tmcd_1"]
    assert unseen_atom_rows(tmcd["train"], tmcd["test"], atoms) == []  # a TMCD split meets the atom constraint


def test_geoquery_length_split_reproduces_length_1(shared):
    from loading_scripts import geoquery

    src = geoquery.load(shared / "data" / "geoquery")
    train, _, test = LongestToTestSplitter(train_size=440).split(inputs=src.inputs, targets=src.targets)
    train, test = published_numbering(train, test, list(zip(src.inputs, src.targets)))
    assert set(train.tolist()) == set(src.published["published_length_1"]["train"].tolist())


def test_template_split_shares_no_template(shared):
    from loading_scripts import spider

    src = spider.load(shared / "data" / "spider")
    train, _, test = TemplateSplitter(train_size=3282, target_language="sql", random_state=1).split(targets=src.targets)
    assert len(train) <= 3282 and len(train) + len(test) == len(src)
    templates = lambda rows: {program_template(src.targets[r], "sql") for r in rows}
    assert not templates(train) & templates(test)


def test_scan_and_cogs_readers_map_published_splits(shared):
    from loading_scripts import cogs, scan

    s = scan.load(shared / "data" / "scan")
    assert len(s) == 20910
    assert {f"mcd{k}" for k in (1, 2, 3)} <= set(s.published) and "addprim_jump" in s.published
    simple = s.published["simple"]
    assert len(simple["train"]) + len(simple["test"]) == 20910 and not set(simple["train"]) & set(simple["test"])
    c = cogs.load(shared / "data" / "cogs")
    assert len(c) == 24155 + 3000 + 3000 + 21000
    assert {len(v) for v in c.published["gen"].values()} == {24155, 3000, 21000}


def test_wug_words_are_consistent_and_shaped():
    for kind in ("rstr", "rcvcv"):
        replacer = WugReplacer(kind=kind).fit(["state", "river"])
        words = replacer.mapping_.values()
        assert all(15 <= len(w) <= 29 and w.isalpha() and w.islower() for w in words)
        if kind == "rcvcv":
            vowel = [[ch in "aeiou" for ch in w] for w in words]
            assert all(all(a != b for a, b in zip(v, v[1:])) for v in vowel)
        out = replacer.transform(["answer ( state ( river ) )", "rivers in state"])
        assert out[0].split()[2] == replacer.mapping_["state"] and "rivers" in out[1]
    assert WugReplacer(kind="rstr").fit(["a"]).mapping_ == WugReplacer(kind="rstr").fit(["a"]).mapping_


def _tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def geo_file(shared, tmp_path_factory) -> Path:
    # A copy without the published split files beside it, with one broken program appended.
    path = tmp_path_factory.mktemp("geo") / "questions.tsv"
    lines = (shared / "data/geoquery/geoquery_nqg.tsv").read_text().splitlines()
    path.write_text("\n".join(lines + ["a broken one\tanswer ( city ("]) + "\n")
    return path


def test_cli_contract_loads_and_is_deterministic(geo_file, tmp_path, hf_cache):
    import datasets

    args = ["tmcd", "--source", str(geo_file), "--train-size", "440", "--seed", "1", "--iterations", "1500",
            "--configs", "tmcd,length", "--lexical"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    assert main(args + ["--out", str(tmp_path / "b")]) == 0
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    loaded = datasets.load_dataset(str(tmp_path / "a"), "tmcd", cache_dir=hf_cache)
    assert set(loaded) == {"train", "test"}
    assert len(loaded["train"]) == 440 and len(loaded["test"]) == 440  # the broken row is in no split
    assert 880 not in set(loaded["test"]["source_id"]) | set(loaded["train"]["source_id"])
    card = (tmp_path / "a" / "README.md").read_text()
    assert "1 unparseable program(s): source_id 880" in card
    assert "tmcd_rstr" in card and "Wug-word map `rcvcv`" in card
    variant = datasets.load_dataset(str(tmp_path / "a"), "tmcd_rcvcv", cache_dir=hf_cache)["test"]
    assert sorted(variant["source_id"]) == sorted(loaded["test"]["source_id"])


def test_cli_validation_only_when_asked_and_bad_sizes(geo_file, tmp_path, hf_cache, capsys):
    import datasets

    out = tmp_path / "v"
    assert main(["tmcd", "--source", str(geo_file), "--train-size", "440", "--iterations", "200",
                 "--validation-size", "100", "--out", str(out)]) == 0
    loaded = datasets.load_dataset(str(out), "tmcd", cache_dir=hf_cache)
    assert {k: len(v) for k, v in loaded.items()} == {"train": 440, "validation": 100, "test": 340}
    assert main(["tmcd", "--source", str(geo_file), "--train-size", "880", "--out", str(tmp_path / "x")]) == 2
    assert "train_size must be in (0, 880)" in capsys.readouterr().err


def test_likelihood_configs_sit_beside_tmcd(geo_file, tmp_path, hf_cache):
    import datasets
    import yaml

    from split_builders.signals.given import given_scores_record

    scores = tmp_path / "scores.npy"
    np.save(scores, -np.arange(881, dtype=np.float64))
    out = tmp_path / "ll"
    assert main(["tmcd", "--source", str(geo_file), "--train-size", "440", "--iterations", "200",
                 "--scores", str(scores), "--out", str(out)]) == 0
    assert {"tmcd", "ll_split", "ll_split_reverse"} <= set(datasets.get_dataset_config_names(str(out)))
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]
    assert meta["signal"]["given"] == given_scores_record(scores)  # the one record of a given scores file
    assert "given_scores" not in meta["signal"]


def test_validation_size_is_a_count_or_a_fraction_of_test():
    from split_builders.errors import InvalidParameterError
    from split_builders.splitters.compositional import with_validation

    train, test = np.arange(10), np.arange(10, 30)
    counted = with_validation(train, test, 5, np.random.default_rng(0))
    shared = with_validation(train, test, 0.25, np.random.default_rng(0))  # ceil(0.25 * 20) = 5, the same draw
    assert all(np.array_equal(counted[k], shared[k]) for k in ("train", "validation", "test"))
    assert len(counted["validation"]) == 5 and len(counted["test"]) == 15
    assert with_validation(train, test, 0, None) == {"train": train, "test": test}
    with pytest.raises(InvalidParameterError, match=r"validation_size must be in \(0, 20\)"):
        with_validation(train, test, 20, np.random.default_rng(0))


def test_config_statistics_are_the_recorded_divergences():
    from split_builders.api import get_method

    figures = {"compound_divergence": 0.31, "atom_divergence": 0.04, "test_rows_with_unseen_atom": 0}
    assert get_method("tmcd").config_statistics({"divergences": figures}) == {"compound_divergence": 0.31,
                                                                            "atom_divergence": 0.04}
    assert get_method("tmcd").config_statistics({"file": "splits/mcd1.json"}) == {}


def test_atom_divergence_bound_is_an_option_and_is_kept(geo_file, tmp_path, hf_cache, capsys):
    import datasets

    from split_builders.signals.programs.atoms import funql_atoms
    from split_builders.signals.programs.compounds import compounds_by_row
    from split_builders.signals.programs.divergence import split_divergences

    out = tmp_path / "tight"
    assert main(["tmcd", "--source", str(geo_file), "--train-size", "440", "--seed", "1", "--iterations", "2000",
                 "--max-atom-divergence", "0.02", "--no-published", "--out", str(out)]) == 0
    loaded = datasets.load_dataset(str(out), "tmcd", cache_dir=hf_cache)
    targets = list(loaded["train"]["target"]) + list(loaded["test"]["target"])
    atoms = [funql_atoms(t) for t in targets]
    compounds = compounds_by_row(targets, "funql")
    n_train = len(loaded["train"])
    figures = split_divergences(list(range(n_train)), list(range(n_train, len(targets))), atoms, compounds)
    assert figures["atom_divergence"] <= 0.02 + 1e-9
    assert figures["test_rows_with_unseen_atom"] == 0
    capsys.readouterr()
    assert main(["tmcd", "--source", str(geo_file), "--train-size", "440", "--max-atom-divergence", "0",
                 "--out", str(tmp_path / "bad")]) == 2
    assert "max_atom_divergence must be a fraction in (0, 1]" in capsys.readouterr().err


def test_scan_compounds_see_what_the_mcd_splits_vary(shared):
    """The released MCD splits maximise compound divergence under Keysers et al.'s compounds (about
    0.7); ours, parsed by SCAN's grammar, should rank them far above random and the simple split."""
    from loading_scripts import scan
    from split_builders.signals.programs.compounds import scan_compounds
    from split_builders.signals.programs.divergence import compound_divergence
    from split_builders.errors import UnparseableProgramError

    source = scan.load(shared / "data" / "scan")
    compounds = [scan_compounds(command) for command in source.inputs]
    for name in ("mcd1", "mcd2", "mcd3"):
        split = source.published[name]
        assert compound_divergence(split["train"], split["test"], compounds) > 0.6
    simple = source.published["simple"]
    assert compound_divergence(simple["train"], simple["test"], compounds) < 0.01
    order = np.random.default_rng(0).permutation(len(compounds))
    assert compound_divergence(order[:8000], order[8000:9000], compounds) < 0.05
    assert scan_compounds("jump around left twice after walk")["V:around( jump , left )"] == 1
    for bad in ("jump twice around", "turn", "left jump", "walk and"):
        with pytest.raises(UnparseableProgramError):
            scan_compounds(bad)


@pytest.mark.parametrize("splitter", [
    LongestToTestSplitter(train_size=0.5, by="target"),
    TemplateSplitter(train_size=3, target_language="sql", random_state=4),
])
def test_splitters_report_every_constructor_parameter(splitter):
    import inspect

    from split_builders.splitters.compositional import StandardSplitter
    from split_builders.splitters.tmcd import TMCDSplitter

    for each in (splitter, StandardSplitter(train_size=5, random_state=2), TMCDSplitter(train_size=0.4)):
        names = [p for p in inspect.signature(type(each).__init__).parameters if p != "self"]
        assert list(each.get_params()) == names
        assert repr(each).startswith(type(each).__name__ + "(")


def test_splitters_return_a_split_with_an_empty_validation():
    from split_builders.api import Split
    from split_builders.splitters.compositional import StandardSplitter

    split = StandardSplitter(train_size=6, random_state=3).split(10)
    assert isinstance(split, Split) and split.validation.size == 0 and split.train.dtype == np.int64
    assert sorted([*split.train, *split.test]) == list(range(10))
    targets = ["SELECT a FROM t WHERE x = 1", "SELECT a FROM t WHERE x = 2", "SELECT b FROM u", "SELECT c FROM v"]
    split = TemplateSplitter(train_size=2, target_language="sql", random_state=0).split(targets=targets)
    assert isinstance(split, Split) and split.validation.size == 0
    with pytest.raises(Exception, match="train_size"):
        StandardSplitter(train_size=1.5)


def test_options_are_checked_before_the_source_is_read(tmp_path, capsys):
    missing = str(tmp_path / "not-there.tsv")
    assert main(["tmcd", "--source", missing, "--configs", "tmcd,mcd", "--out", str(tmp_path / "o")]) == 2
    assert "unknown config(s) ['mcd']" in capsys.readouterr().err
    assert main(["tmcd", "--source", missing, "--train-size", "1.5", "--out", str(tmp_path / "o")]) == 2
    assert "train_size" in capsys.readouterr().err
    assert main(["tmcd", "--source", missing, "--scores", missing, "--out", str(tmp_path / "o")]) == 2
    assert "scores file" in capsys.readouterr().err


def test_limit_default_train_size_and_the_terminal_report(shared, tmp_path, hf_cache, capsys):
    """``--limit`` keeps the first rows (published splits restricted to them); the train size
    defaults to half the parseable rows; the report prints the divergence table."""
    import datasets
    import yaml

    out = tmp_path / "limited"
    assert main(["tmcd", "--source", str(shared / "data" / "geoquery"), "--limit", "300", "--iterations", "100",
                 "--configs", "tmcd,standard", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "compound div" in printed and "published_tmcd_1" in printed
    tmcd = datasets.load_dataset(str(out), "tmcd", cache_dir=hf_cache)
    assert (len(tmcd["train"]), len(tmcd["test"])) == (150, 150)
    published = datasets.load_dataset(str(out), "published_tmcd_1", cache_dir=hf_cache)
    assert max(max(published[s]["source_id"]) for s in published) < 300
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]
    assert meta["seed"] == 42 and meta["source"]["rows"] == 300 and meta["source"]["filters"] == {"beyond --limit 300": 580}
    figures = meta["configs"]["tmcd"]["parameters"]["divergences"]
    assert figures["test_rows_with_unseen_atom"] == 0 and figures["atom_divergence"] <= 0.05


def test_a_published_split_named_like_a_built_config_is_renamed(shared, tmp_path, hf_cache):
    import datasets

    out = tmp_path / "scan"
    assert main(["tmcd", "--source", str(shared / "data" / "scan"), "--limit", "400", "--iterations", "50",
                 "--configs", "length", "--out", str(out)]) == 0
    names = set(datasets.get_dataset_config_names(str(out)))
    assert {"length", "published_length", "simple"} <= names
