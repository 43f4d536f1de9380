"""The release folder: loads with datasets, carries provenance, is byte-reproducible and atomic."""

import json

import datasets
import numpy as np
import pytest
import yaml

from split_builders.errors import InvalidParameterError, OutputExistsError
from split_builders.builder import build
from split_builders.api import SPLITS, ConfigSplit
from split_builders.release.writer import write_release


def _build(reference, out, **overrides):
    inputs = reference / "inputs" / "snli"
    kwargs = dict(scores=str(inputs / "all_examples__False_loglikelihoods.npy"), prompt_field="premise",
                  query_field="hypothesis", label_field="gold_label", validation_size=200, test_size=200,
                  length_buckets=4, seed=42, progress=False,
                  # compared with the reference's fixtures, whose ties in likelihood follow the file's order
                  row_order="position")
    kwargs.update(overrides)
    return build("likelihood", source=str(inputs / "all_examples.csv"), out=out, **kwargs)


def _card_yaml(folder):
    text = (folder / "README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1])


@pytest.fixture(scope="module")
def release(reference_release):
    """What ``_build`` writes: the session's build of the same command (``conftest.reference_release``; the same
    bytes, which ``test_same_inputs_give_byte_identical_folders`` checks). Read-only."""
    return reference_release[0]


def test_every_config_loads_offline_and_matches_the_reference(release, likelihood_reference, hf_cache):
    metadata = _card_yaml(release)
    names = [c["config_name"] for c in metadata["configs"]]
    assert names == ["ll_split", "ll_split_len", "ll_split_reverse", "random", "length"]
    for name in names:
        loaded = datasets.load_dataset(str(release), name, cache_dir=hf_cache)
        assert list(loaded) == list(SPLITS)
        ids = {split: set(loaded[split]["source_id"]) for split in SPLITS}
        assert not ids["train"] & ids["validation"] and not ids["train"] & ids["test"] and not ids["validation"] & ids["test"]
        assert len(ids["train"] | ids["validation"] | ids["test"]) == 2400
        assert {"source_id", "score", "length", "length_bucket", "premise", "hypothesis"} <= set(loaded["train"].column_names)
        reference = {"ll_split": "ll_split", "ll_split_len": "ll_split_len4"}.get(name)
        if reference:
            for split, fixture in (("train", "train"), ("validation", "dev"), ("test", "test")):
                expected = json.loads((likelihood_reference / "snli" / reference / f"{fixture}_idx.json").read_text())
                assert ids[split] == set(expected), f"{name}/{split}"


def test_scores_and_lengths_travel_with_the_rows(release, likelihood_reference, hf_cache):
    scores = np.load(likelihood_reference / "inputs" / "snli" / "all_examples__False_loglikelihoods.npy")
    test = datasets.load_dataset(str(release), "ll_split", split="test", cache_dir=hf_cache)
    np.testing.assert_allclose(test["score"], scores[test["source_id"]].astype(np.float64))


def test_card_records_provenance_and_shows_each_config(release):
    metadata = _card_yaml(release)
    provenance = metadata["resplit"]
    assert provenance["seed"] == 42 and provenance["method"] == "likelihood"
    assert len(provenance["source"]["content_sha256"]) == 64
    assert provenance["signal"]["given"]["sha256"] and provenance["version"]
    config = provenance["configs"]["ll_split_len"]
    assert config["parameters"]["length_buckets"] == 4 and config["rows"] == {"train": 2000, "validation": 200, "test": 200}
    for entry in metadata["configs"]:
        for data_file in entry["data_files"]:
            path = release / data_file["path"]
            assert path.is_file()
            digest = provenance["configs"][entry["config_name"]]["sha256"][data_file["split"]]
            assert digest[:8] in path.name  # the file name carries its content hash
    body = (release / "README.md").read_text()
    for name in provenance["configs"]:
        assert f"figures/{name}.png" in body and (release / "figures" / f"{name}.png").stat().st_size > 1000
    assert "Kolmogorov-Smirnov" in body


def test_same_inputs_give_byte_identical_folders(release, likelihood_reference, tmp_path):
    again = tmp_path / "again"
    _build(likelihood_reference, again)
    files = sorted(p.relative_to(release) for p in release.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    for relative in files:
        assert (release / relative).read_bytes() == (again / relative).read_bytes(), relative


def test_rebuild_with_new_parameters_is_read_fresh(likelihood_reference, tmp_path, hf_cache):
    # datasets caches local folders by name: file names carrying content hashes keep a rebuilt
    # folder from being read from the first build's cache.
    out = tmp_path / "out"
    _build(likelihood_reference, out, seed=1)
    first = datasets.load_dataset(str(out), "random", split="test", cache_dir=hf_cache)["source_id"]
    _build(likelihood_reference, out, seed=2, overwrite=True)
    second = datasets.load_dataset(str(out), "random", split="test", cache_dir=hf_cache)["source_id"]
    assert set(first) != set(second)


def test_existing_output_is_refused_unless_overwrite(release, likelihood_reference):
    with pytest.raises(OutputExistsError, match="--overwrite"):
        _build(likelihood_reference, release)


def test_failed_build_leaves_nothing_behind(tmp_path):
    rows = datasets.Dataset.from_dict({"source_id": [0, 1, 2, 3], "text": list("abcd")})
    config = ConfigSplit("c", {"train": [0, 1], "validation": [2], "test": [3]}, method="m")

    def broken_card(staging, written):
        raise RuntimeError("plotting failed")

    with pytest.raises(RuntimeError, match="plotting failed"):
        write_release(tmp_path / "out", rows, [config], provenance={}, render_card=broken_card)
    assert list(tmp_path.iterdir()) == []


def test_overlapping_configs_are_refused(tmp_path):
    rows = datasets.Dataset.from_dict({"source_id": [0, 1, 2], "text": list("abc")})
    config = ConfigSplit("c", {"train": [0, 1], "validation": [1], "test": [2]}, method="m")
    with pytest.raises(InvalidParameterError, match="more than one split"):
        write_release(tmp_path / "out", rows, [config], provenance={}, render_card=lambda s, w: "")


# -- `resplit release RECIPE --scores`: what the recipe's method declares ---------------------------------------

def _recipes():
    from split_builders.release.recipe import list_recipes

    return [r for r in list_recipes() if r.kind != "metric"]


def _declares(recipe, name: str) -> bool:
    import dataclasses

    from split_builders.api import get_method

    return name in {f.name for f in dataclasses.fields(get_method(recipe.method).Options)}


def test_release_scores_for_a_method_that_takes_none_is_one_line(tmp_path, capsys):
    """Every recipe whose method declares no `scores` option: `--scores` is refused in one line before the source is
    read (today: a TypeError traceback from the Options)."""
    from split_builders.cli import main

    scores = tmp_path / "scores.npy"
    np.save(scores, np.zeros(10))
    refused = [r for r in _recipes() if not _declares(r, "scores")]
    assert refused, "no recipe of a method without scores"
    for recipe in refused:
        out = tmp_path / recipe.name
        code = main(["release", recipe.name, "--scores", str(scores), "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (recipe.name, err)
        assert "--scores" in lines[0] and "takes no scores" in lines[0] and not out.exists(), recipe.name


def test_release_scores_reach_a_method_with_scores_but_no_fine_tuning(tmp_path, capsys):
    """`--scores` implies no fine-tuning, which only some methods declare: a recipe of a method with `scores` and no
    `finetune` (TMCD's likelihood configs) reads the scores (here a file of the wrong length, refused in one line by
    the method) instead of failing with a TypeError. One recipe per such method, the one with the smallest source."""
    from split_builders.cli import main

    scores = tmp_path / "scores.npy"
    np.save(scores, np.zeros(10))
    candidates = {}
    for recipe in _recipes():
        source = recipe.local_source()
        if _declares(recipe, "scores") and not _declares(recipe, "finetune") and source is not None:
            size = sum(p.stat().st_size for p in ([source] if source.is_file() else source.rglob("*")) if p.is_file())
            candidates.setdefault(recipe.method, []).append((size, recipe.name))
    assert candidates, "no recipe of a method with scores and no fine-tuning has its source here"
    for method, recipes in sorted(candidates.items()):
        name = min(recipes)[1]
        code = main(["release", name, "--scores", str(scores), "--out", str(tmp_path / name), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (name, err)
        assert "has 10 values" in err, (name, err)
