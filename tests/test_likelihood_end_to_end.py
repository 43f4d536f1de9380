"""The main job end to end with the real default LM: bundled sample -> scores -> folder -> load_dataset."""

import datasets
import numpy as np
import pytest
import yaml

from split_builders.cli import main

pytestmark = pytest.mark.slow
PROMPTED_CONFIGS = ["ll_split_pt", "ll_split_pt_len", "ll_split_pt_reverse", "random", "length"]


def test_prompted_likelihood_splits_of_the_bundled_sample(tmp_path, hf_cache, capsys):
    out = tmp_path / "snli-likelihood"
    common = ["likelihood", "--source", "snli-sample", "--limit", "48", "--dev-size", "8", "--test-size", "8",
              "--cache-dir", str(tmp_path / "scores"), "--no-progress"]
    assert main(common + ["--out", str(out)]) == 0
    assert "scored with SmolLM2-135M" in capsys.readouterr().out
    metadata = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [c["config_name"] for c in metadata["configs"]] == PROMPTED_CONFIGS
    signal = metadata["resplit"]["signal"]
    assert signal["model_revision"].startswith("sha256:") and signal["template"]["name"] == "snli_label"
    assert metadata["resplit"]["configs"]["ll_split_pt_len"]["parameters"]["length_buckets"] == 4

    for config in PROMPTED_CONFIGS:
        loaded = datasets.load_dataset(str(out), config, cache_dir=hf_cache)
        sizes = [len(loaded[s]) for s in ("train", "validation", "test")]
        assert sizes == [48 - 16, 8, 8]  # --limit counts rows after the SNLI filter
        for split in loaded.values():
            assert split.features["label"].names == ["entailment", "neutral", "contradiction"]
            assert np.all(np.asarray(split["score"]) < 0)
    test = datasets.load_dataset(str(out), "ll_split_pt", split="test", cache_dir=hf_cache)
    train = datasets.load_dataset(str(out), "ll_split_pt", split="train", cache_dir=hf_cache)
    # per class, every held-out example is less likely than every training example
    for label in range(3):
        held = [s for s, y in zip(test["score"], test["label"]) if y == label]
        kept = [s for s, y in zip(train["score"], train["label"]) if y == label]
        assert max(held) <= min(kept)

    # A rebuild with other split parameters reuses the cached scores (no model load, same scores).
    again = tmp_path / "again"
    assert main(common + ["--seed", "7", "--out", str(again)]) == 0
    assert "cached with SmolLM2" in capsys.readouterr().out
    retest = datasets.load_dataset(str(again), "ll_split_pt", split="test", cache_dir=hf_cache)
    by_id = dict(zip(test["source_id"], test["score"]))
    assert all(by_id[i] == s for i, s in zip(retest["source_id"], retest["score"]) if i in by_id)
