"""The spine every split family shares: a toy method (tests/conftest.py), registered, and built end to
end through the CLI and ``load_dataset`` without any edit to the CLI or the release writer."""

import datasets
import numpy as np
import pytest
import yaml

from conftest import ShortestToTestSplitter, ToyOptions
from split_builders.api import Split, registry
from split_builders.cli import main
from split_builders.errors import InvalidParameterError


@pytest.fixture()
def toy(toy_method, tmp_path):
    source = tmp_path / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    return source


def test_a_method_defined_in_a_test_builds_through_the_cli(toy, tmp_path, hf_cache, capsys):
    out = tmp_path / "out"
    assert main(["toy-shortest", "--source", str(toy), "--out", str(out), "--seed", "3", "--test-size", "0.3"]) == 0
    assert "shortest" in capsys.readouterr().out
    loaded = datasets.load_dataset(str(out), "shortest", cache_dir=hf_cache)
    ids = {s: set(loaded[s]["source_id"]) for s in loaded}
    assert sum(map(len, ids.values())) == 60 and not (ids["train"] & ids["test"])
    assert max(loaded["test"]["length"]) <= min(loaded["train"]["length"])
    card = (out / "README.md").read_text()
    assert "## How the splits differ" in card and (out / "figures" / "shortest.png").is_file()
    meta = yaml.safe_load(card.split("---\n")[1])["resplit"]
    assert meta["method"] == "toy-shortest" and meta["seed"] == 3 and meta["parameters"]["test_size"] == 0.3


def test_list_and_show_know_the_toy(toy, tmp_path, capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "toy-shortest" in listed and "likelihood" in listed
    out = tmp_path / "out"
    assert main(["toy-shortest", "--source", str(toy), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["show", str(out), "shortest"]) == 0
    shown = capsys.readouterr().out
    assert "toy-shortest release" in shown and "source_id=" in shown


def test_options_are_checked_before_anything_is_read(toy, tmp_path, capsys):
    assert main(["toy-shortest", "--source", str(toy), "--out", str(tmp_path / "o"), "--test-size", "1.5"]) == 2
    assert "test_size" in capsys.readouterr().err
    with pytest.raises(InvalidParameterError, match="seed"):
        ToyOptions(source="x", out="o", seed=-1)


def test_registry_holds_the_six_families():
    assert {"likelihood", "tmcd", "mcd", "pvi", "curriculum", "behavioural"} <= set(registry())


def test_split_of_sorts_and_drops_an_empty_validation():
    split = Split.of([3, 1], [], [2, 0])
    assert split.train.dtype == np.int64 and split.train.tolist() == [1, 3]
    assert set(split.as_indices()) == {"train", "test"}


def test_base_splitter_params_and_repr():
    splitter = ShortestToTestSplitter(test_size=0.25, random_state=4)
    assert splitter.get_params() == {"test_size": 0.25, "random_state": 4}
    assert repr(splitter) == "ShortestToTestSplitter(test_size=0.25, random_state=4)"


def test_a_second_build_into_a_locked_out_fails_at_once_naming_the_first(toy, tmp_path, capsys):
    import os

    from split_builders.release.places import OutputLock

    out = tmp_path / "out"
    with OutputLock(out):
        assert main(["toy-shortest", "--source", str(toy), "--out", str(out)]) == 2
    assert f"pid {os.getpid()}" in capsys.readouterr().err and not out.exists()
    assert main(["toy-shortest", "--source", str(toy), "--out", str(out)]) == 0  # the lock was released


def test_stale_staging_is_removed_and_folders_follow_the_umask(toy, tmp_path):
    import os
    import stat

    from split_builders.release.places import mark_staging

    stale = tmp_path / ".out.tmp-killed"
    (stale / "shortest").mkdir(parents=True)
    mark_staging(stale)  # what the writer writes first into every staging folder
    old = os.umask(0o022)
    try:
        assert main(["toy-shortest", "--source", str(toy), "--out", str(tmp_path / "out")]) == 0
    finally:
        os.umask(old)
    assert not stale.exists()
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755


def test_duplicates_are_counted_per_config_and_dedupe_drops_them(toy_method, tmp_path, hf_cache):
    source = tmp_path / "dups.csv"
    texts = [f"{'y' * (i % 30 % 9 + 1)} {i % 30}" for i in range(60)]  # each text twice
    source.write_text("text,label\n" + "".join(f"{t},0\n" for t in texts))
    out = tmp_path / "with"
    assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--test-size", "0.5"]) == 0
    card = (out / "README.md").read_text()
    assert "Exact duplicates: 30 row(s) repeat an earlier row" in card
    loaded = datasets.load_dataset(str(out), "shortest", cache_dir=hf_cache)
    train = set(loaded["train"]["text"])
    in_train = sum(t in train for s in ("validation", "test") for t in loaded[s]["text"])
    assert f"| {in_train} |" in card  # the configs table's count equals an independent count

    out = tmp_path / "deduped"
    assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--dedupe"]) == 0
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]
    assert meta["source"]["rows"] == 30 and meta["source"]["filters"] == {"exact duplicate (--dedupe)": 30}
    kept = datasets.load_dataset(str(out), "shortest", cache_dir=hf_cache)
    ids = sorted(i for s in kept for i in kept[s]["source_id"])
    assert ids == list(range(30))  # the first source_id of each text is kept
