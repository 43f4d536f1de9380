"""``--group-field``: rows that share a value never straddle train / validation / test.

The splitters are enumerated with groups on random inputs (no group divided, sizes near the asked
ones, the same split for the same seed); a grouped build of SNLI's dev and test files from
``../shared`` (given scores) keeps every premise in one split of every config with label shares
within 2 points of the source's, and ``resplit verify`` re-derives every grouped config."""

import gzip
import shutil
from collections import Counter

import datasets
import numpy as np
import pytest
import yaml

from split_builders.cli import main
from split_builders.splitters.baselines import LengthSplitter, RandomSplitter
from split_builders.splitters.difficulty import CONFIGS, DifficultySplitter
from split_builders.splitters.groups import Groups, group_codes
from split_builders.splitters.likelihood import LikelihoodSplitter

N_GROUPS = 400


@pytest.fixture(scope="module")
def grouped_rows():
    """Groups of 1 to 5 rows, labels of three classes, scores, lengths and atoms."""
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(N_GROUPS), rng.integers(1, 6, N_GROUPS))
    rng.shuffle(groups)
    n = groups.size
    return {"groups": groups, "labels": rng.choice(np.array(["e", "n", "c"], dtype=object), n),
            "scores": rng.normal(size=n), "lengths": rng.integers(3, 40, n),
            "atoms": [frozenset({f"a{rng.integers(0, 30)}", f"b{rng.integers(0, 30)}"}) for _ in range(n)]}


def _splits(rows, seed):
    """Every splitter and mode that takes groups, on the same rows."""
    g, labels, scores, lengths = rows["groups"], rows["labels"], rows["scores"], rows["lengths"]
    sizes = dict(validation_size=0.1, test_size=0.15, random_state=seed)
    yield "likelihood", LikelihoodSplitter(**sizes).split(scores, labels=labels, groups=g)
    yield "likelihood_len", LikelihoodSplitter(length_buckets=3, **sizes).split(scores, labels=labels, lengths=lengths, groups=g)
    yield "likelihood_reverse", LikelihoodSplitter(reverse=True, **sizes).split(scores, labels=labels, groups=g)
    yield "likelihood_train_size", LikelihoodSplitter(train_size=0.7, random_state=seed).split(scores, groups=g)
    yield "likelihood_atoms", LikelihoodSplitter(train_size=0.7, random_state=seed).split(
        scores, atoms=rows["atoms"], groups=g)
    yield "random", RandomSplitter(**sizes).split(g.size, labels=labels, groups=g)
    yield "length", LengthSplitter(**sizes).split(lengths=lengths, labels=labels, groups=g)
    for config in CONFIGS:
        yield f"difficulty_{config}", DifficultySplitter(config=config, random_state=seed).split(scores, labels=labels, groups=g)


def test_no_splitter_divides_a_group_and_each_is_deterministic(grouped_rows):
    groups = Groups(grouped_rows["groups"])
    again = dict(_splits(grouped_rows, 5))
    other = dict(_splits(grouped_rows, 6))
    for name, split in _splits(grouped_rows, 5):
        parts = {s: r for s, r in split.as_indices().items()}
        assert groups.straddling(parts) == 0, name
        covered = np.sort(np.concatenate([np.asarray(r) for r in parts.values()]))
        assert np.unique(covered).size == covered.size, name  # no row twice
        if name not in ("difficulty_simple", "difficulty_hard"):  # those hold one part of the rows
            assert covered.tolist() == list(range(groups.n_rows)), name
        assert all(np.array_equal(a, b) for a, b in zip(split, again[name])), name
        if name.startswith(("random", "likelihood_train_size", "difficulty")):
            assert not all(np.array_equal(a, b) for a, b in zip(split, other[name])), name


def test_grouped_sizes_are_within_one_group_of_the_asked_ones(grouped_rows):
    largest = int(Groups(grouped_rows["groups"]).sizes.max())
    n = grouped_rows["groups"].size
    want_validation, want_test = int(np.ceil(0.1 * n)), int(np.ceil(0.15 * n))
    for name, split in _splits(grouped_rows, 1):
        if name.startswith(("likelihood_train_size", "likelihood_atoms", "difficulty")):
            continue
        # Each walk may pass its target by less than one group: one walk, or one per length bucket (3).
        slack = largest * (4 if name == "likelihood_len" else 1)
        assert abs(len(split.test) - want_test) <= slack, name
        assert abs(len(split.validation) + len(split.test) - want_validation - want_test) <= slack, name


def test_least_likely_groups_are_held_out(grouped_rows):
    g, scores = grouped_rows["groups"], grouped_rows["scores"]
    split = LikelihoodSplitter(validation_size=0.1, test_size=0.1, random_state=0).split(scores, groups=g)
    means = Groups(g).mean(scores)
    held = np.unique(g[np.concatenate([split.validation, split.test])])
    kept = np.unique(g[split.train])
    # Without labels to balance, the held-out groups are the least likely ones, except that a group too
    # large for what is left of the sizes is passed over for a smaller, slightly more likely one.
    passed_over = kept[means[kept] < means[held].max()]
    assert passed_over.size <= 3 and means[held].mean() < means[kept].mean() - 1
    reverse = LikelihoodSplitter(validation_size=0.1, test_size=0.1, reverse=True, random_state=0).split(
        scores, groups=g)
    assert means[np.unique(g[reverse.test])].mean() > means[np.unique(g[reverse.train])].mean() + 1


def test_the_atom_constraint_holds_over_whole_groups(grouped_rows):
    g, atoms = grouped_rows["groups"], grouped_rows["atoms"]
    splitter = LikelihoodSplitter(train_size=0.6, random_state=0)
    split = splitter.split(grouped_rows["scores"], atoms=atoms, groups=g)
    train_atoms = set().union(*(atoms[r] for r in split.train))
    assert all(atoms[r] <= train_atoms for r in np.concatenate([split.validation, split.test]))
    assert Groups(g).straddling(tuple(split)) == 0


def test_group_codes_number_groups_in_order_and_keep_missing_values_apart():
    assert group_codes(["b", "a", None, "b", "", float("nan"), "a"]).tolist() == [0, 1, 2, 0, 3, 4, 1]
    assert group_codes([7, 7, 3]).tolist() == [0, 0, 1]


# ---------------------------------------------------------------------------------------------
# A grouped build of SNLI's dev and test files
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snli_dev_test(shared, tmp_path_factory):
    """SNLI's official dev and test files as one jsonl, and a given score per line."""
    work = tmp_path_factory.mktemp("snli-dev-test")
    path = work / "snli_dev_test.jsonl"
    with path.open("wb") as out:
        for name in ("snli_1.0_dev.jsonl.gz", "snli_1.0_test.jsonl.gz"):
            with gzip.open(shared / "data" / "snli" / name, "rb") as handle:
                shutil.copyfileobj(handle, out)
    n_lines = sum(1 for _ in path.open("rb"))
    np.save(work / "scores.npy", np.random.default_rng(11).normal(size=n_lines))
    return path, work / "scores.npy"


@pytest.fixture(scope="module")
def grouped_release(snli_dev_test, tmp_path_factory):
    path, scores = snli_dev_test
    out = tmp_path_factory.mktemp("grouped") / "snli-grouped"
    assert main(["likelihood", "--source", str(path), "--scores", str(scores), "--length-buckets", "4",
                 "--group-field", "premise", "--out", str(out), "--no-progress"]) == 0
    return out


def test_a_grouped_snli_build_keeps_every_premise_in_one_split(grouped_release, snli_dev_test):
    from loading_scripts import load_source

    source = load_source(str(snli_dev_test[0]))
    assert len(source) == 19_666  # the labelled rows of dev + test
    source_shares = {k: v / len(source) for k, v in Counter(source.labels()).items()}
    names = datasets.get_dataset_config_names(str(grouped_release))
    assert set(names) == {"ll_split", "ll_split_len", "ll_split_reverse", "random", "length"}
    for name in names:
        config = datasets.load_dataset(str(grouped_release), name)
        premises = {split: set(config[split]["premise"]) for split in config}
        for a in premises:
            for b in premises:
                if a < b:
                    assert not premises[a] & premises[b], (name, a, b)
        label_names = config["train"].features["label"].names
        for split in config:
            counts = Counter(config[split]["label"])
            for code, count in counts.items():
                share = count / len(config[split])
                assert abs(share - source_shares[label_names[code]]) <= 0.02, (name, split, label_names[code])


def test_the_grouped_configs_record_the_field_and_verify_re_derives_them(grouped_release, capsys):
    card = (grouped_release / "README.md").read_text(encoding="utf-8")
    record = yaml.safe_load(card.split("---\n")[1])["resplit"]
    assert record["parameters"]["group_field"] == "premise"
    assert all(entry["parameters"]["grouped_by"] == "premise" for entry in record["configs"].values())
    assert "Grouped by `premise`" in card
    capsys.readouterr()
    assert main(["verify", str(grouped_release)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "levels 1, 2" in out


def test_a_group_field_that_does_not_exist_is_refused_before_any_scoring(monkeypatch, capsys, tmp_path):
    from split_builders.methods import likelihood

    def no_scoring(*args, **kwargs):  # the check must come first
        raise AssertionError("scored before the group field was checked")

    monkeypatch.setattr(likelihood, "_prompted_scores", no_scoring)
    assert main(["likelihood", "--group-field", "caption", "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "group field 'caption' not found" in err and "'premise'" in err
    assert not (tmp_path / "out").exists()


def test_a_grouped_tmcd_build_moves_whole_groups(shared, tmp_path, capsys):
    out = tmp_path / "geo"
    assert main(["tmcd", "--source", str(shared / "data" / "geoquery" / "geoquery_nqg.tsv"), "--group-field",
                 "target", "--configs", "tmcd,standard,length,template", "--iterations", "500",
                 "--validation-size", "0.2", "--no-published", "--out", str(out), "--no-progress"]) == 0
    for name in ("tmcd", "standard", "length", "template"):
        config = datasets.load_dataset(str(out), name)
        targets = {split: set(config[split]["target"]) for split in config}
        assert not targets["train"] & targets["test"] and not targets["validation"] & targets["test"], name
        assert not targets["train"] & targets["validation"], name
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "OK" in capsys.readouterr().out
    assert main(["tmcd", "--source", str(shared / "data" / "geoquery" / "geoquery_nqg.tsv"), "--group-field",
                 "target", "--reference", "--out", str(tmp_path / "ref")]) == 2
    assert "cannot keep groups whole" in capsys.readouterr().err


def test_curriculum_refuses_group_field_without_pvi(shared, tmp_path, capsys):
    assert main(["curriculum", "--source", str(shared / "data" / "curriculum"), "--phenomena", "verbnet",
                 "--group-field", "premise", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "--group-field applies to the difficulty configs of --pvi" in err and len(err.strip().splitlines()) == 1
