"""`resplit pvi` on a real file (a CURRICULUM phenomenon) and on the SNLI sample (the acceptance contract)."""

import zipfile

import datasets
import numpy as np
import pytest
import yaml

from split_builders.cli import main

CONFIGS = ["simple", "hard", "simple_to_hard", "hard_to_simple"]


@pytest.fixture(scope="module")
def boolean_file(shared, tmp_path_factory):
    """CURRICULUM's `boolean` validation file (1,000 rows, 3-way) as a plain JSONL file."""
    path = tmp_path_factory.mktemp("src") / "boolean_val.jsonl"
    with zipfile.ZipFile(shared / "data" / "curriculum" / "tasks" / "boolean.zip") as archive:
        path.write_bytes(archive.read("boolean/val.jsonl"))
    return path


def _run(source, out, cache, *extra):
    return main(["pvi", "--source", str(source), "--text-fields", "premise,hypothesis", "--label-field",
                 "gold_label", "--out", str(out), "--cache-dir", str(cache), "--folds", "3", *extra])


@pytest.fixture(scope="module")
def release(boolean_file, tmp_path_factory):
    root = tmp_path_factory.mktemp("pvi")
    assert _run(boolean_file, root / "out", root / "cache") == 0
    return root / "out"


def test_contract_configs_and_float_pvi_column(release, hf_cache):
    metadata = yaml.safe_load((release / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in metadata["configs"]] == CONFIGS
    loaded = {name: datasets.load_dataset(str(release), name, cache_dir=hf_cache) for name in CONFIGS}
    assert list(loaded["simple"]) == ["train", "validation"]
    assert list(loaded["simple_to_hard"]) == ["train", "validation", "test"]
    assert loaded["simple"]["train"].features["pvi"] == datasets.Value("float64")
    ids = {name: {s: set(d[s]["source_id"]) for s in d} for name, d in loaded.items()}
    simple = ids["simple"]["train"] | ids["simple"]["validation"]
    hard = ids["hard"]["train"] | ids["hard"]["validation"]
    assert not simple & hard and len(simple | hard) == 1000
    assert ids["simple_to_hard"]["test"] == hard and ids["hard_to_simple"]["test"] == simple
    assert ids["simple_to_hard"]["train"] == ids["simple"]["train"]
    rows = loaded["simple_to_hard"]
    assert np.allclose(rows["test"]["pvi"], np.asarray(rows["test"]["h_yb"]) - np.asarray(rows["test"]["h_yx"]))
    # label balance of the median rule: each label splits in half between simple and hard
    # (the text gold_label is released as the ClassLabel `label`, names sorted)
    names = loaded["simple"]["train"].features["label"].names
    assert names == ["contradiction", "entailment", "neutral"]
    for label in ("entailment", "neutral", "contradiction"):
        label = names.index(label)
        n_simple = sum(y == label for s in ("train", "validation") for y in loaded["simple"][s]["label"])
        n_hard = sum(y == label for s in ("train", "validation") for y in loaded["hard"][s]["label"])
        assert n_simple - n_hard in (0, 1)
    assert np.mean(rows["train"]["pvi"]) > np.mean(rows["test"]["pvi"])
    assert "I_V = **" in (release / "README.md").read_text()


def test_same_inputs_and_seed_give_byte_identical_folders(boolean_file, release, tmp_path):
    # a fresh cache: the PVI is recomputed, not read back
    assert _run(boolean_file, tmp_path / "again", tmp_path / "cache") == 0
    files = sorted(p.relative_to(release) for p in release.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "again") for p in (tmp_path / "again").rglob("*") if p.is_file())
    for relative in files:
        assert (release / relative).read_bytes() == (tmp_path / "again" / relative).read_bytes()


def test_snli_sample_with_curriculum_compat(tmp_path, hf_cache):
    assert main(["pvi", "--source", "snli-sample", "--curriculum-compat", "--folds", "3",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "snli")]) == 0
    metadata = yaml.safe_load((tmp_path / "snli" / "README.md").read_text().split("---\n")[1])
    params = metadata["resplit"]["configs"]["simple"]["parameters"]
    assert params["threshold"] == "midrange" and params["validation_size"] == 0.4 and params["random_state"] == 42
    assert params["group_field"] == "premise"
    simple = datasets.load_dataset(str(tmp_path / "snli"), "simple", cache_dir=hf_cache)
    hard = datasets.load_dataset(str(tmp_path / "snli"), "hard", cache_dir=hf_cache)
    assert sum(len(simple[s]) + len(hard[s]) for s in simple) == 1964  # the filtered sample
    for part in (simple, hard):  # 60/40 per bucket: validation is ceil(0.4 n) per label
        total = len(part["train"]) + len(part["validation"])
        assert 0.38 * total <= len(part["validation"]) <= 0.42 * total + 3


def test_missing_field_names_the_available_ones(boolean_file, tmp_path, capsys):
    code = main(["pvi", "--source", str(boolean_file), "--text-fields", "premise,hypo", "--label-field",
                 "gold_label", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "text field 'hypo' not found" in err and "'hypothesis'" in err and "Traceback" not in err
    assert main(["pvi", "--source", str(boolean_file), "--text-fields", "premise", "--label-field", "label",
                 "--out", str(tmp_path / "o")]) == 2
    assert "label field 'label' not found" in capsys.readouterr().err


def test_too_many_folds_for_the_rarest_label(boolean_file, tmp_path, capsys):
    code = main(["pvi", "--source", str(boolean_file), "--text-fields", "premise,hypothesis", "--label-field",
                 "gold_label", "--limit", "10", "--folds", "5", "--out", str(tmp_path / "o")])
    assert code == 2
    assert "lower --folds" in capsys.readouterr().err


def test_dedupe_keeps_the_first_of_each_exact_duplicate(boolean_file, tmp_path, hf_cache):
    import json

    rows = [json.loads(line) for line in boolean_file.read_text().splitlines()][:300]
    # Rows 0-9 again at the end, and row 1's text with another label (not a duplicate: the label differs).
    other = {**rows[1], "gold_label": next(y for y in ("entailment", "neutral") if y != rows[1]["gold_label"])}
    source = tmp_path / "dup.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows + rows[:10] + [other]))
    out = tmp_path / "out"
    assert _run(source, out, tmp_path / "cache", "--dedupe", "--no-progress") == 0
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]
    assert meta["source"]["rows"] == 301 and meta["source"]["filters"]["exact duplicate (--dedupe)"] == 10
    simple = datasets.load_dataset(str(out), "simple", cache_dir=hf_cache)
    hard = datasets.load_dataset(str(out), "hard", cache_dir=hf_cache)
    kept = sorted(i for d in (simple, hard) for s in d for i in d[s]["source_id"])
    assert kept == list(range(300)) + [310]  # the first source_id of each duplicate kept


def test_fold_bar_on_stderr_unless_no_progress(boolean_file, tmp_path, capsys):
    assert _run(boolean_file, tmp_path / "a", tmp_path / "cache", "--limit", "90") == 0
    assert "PVI folds" in capsys.readouterr().err
    assert _run(boolean_file, tmp_path / "b", tmp_path / "cache", "--limit", "90", "--no-progress") == 0
    err = capsys.readouterr().err
    assert "PVI folds" not in err and "fold" not in err
