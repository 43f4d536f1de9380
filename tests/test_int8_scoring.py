"""The int8 scoring path (``--dtype int8``: CTranslate2 on the CPU, SmoothQuant folded in first) with the real
SmolLM2-135M: it ranks rows as float32 does, and its scores are recorded as int8 scores (cache key, cache metadata,
release provenance)."""

import importlib.util
import json

import numpy as np
import pytest
import yaml
from scipy.stats import spearmanr

from loading_scripts import load_source
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.signals.lm.models import resolve_model
from split_builders.signals.lm.prompts import render_all, resolve_template
from split_builders.signals.lm.engines import engine_record
from split_builders.signals.lm.scoring import LikelihoodScorer, cache_key, compute_scores

pytestmark = pytest.mark.slow
ROWS = 48


@pytest.fixture(scope="module")
def pairs():
    source = load_source("snli-sample")
    prompts, queries = render_all(resolve_template(None, task="snli", prompt_field=None, query_field=None), source)
    return prompts[:ROWS], queries[:ROWS]


@pytest.fixture(scope="module")
def int8_run(pairs, tmp_path_factory):
    return compute_scores(*pairs, model_ref=resolve_model(None), dtype="int8",
                          cache_dir=tmp_path_factory.mktemp("int8-scores"), progress=False)


def test_int8_scores_rank_the_rows_as_float32_does(smollm2, pairs, int8_run):
    reference = LikelihoodScorer(smollm2.model, smollm2.tokenizer).score(*pairs)  # PyTorch, float32
    assert int8_run.scores.shape == (ROWS,) and np.all(int8_run.scores < 0)
    # unsmoothed int8 gave Spearman 0.989 and a mean |error| of 1.35 nats on 300 pairs, smoothed 0.996 and 0.61
    assert spearmanr(int8_run.scores, reference).statistic >= 0.99
    # the same quantity (query tokens + EOS given BOS + prompt), not merely a correlated one: within a nat
    assert np.median(np.abs(int8_run.scores - reference)) < 1.0


def test_int8_scores_are_cached_and_recorded_as_such(pairs, int8_run):
    meta = json.loads(int8_run.cache_file.with_suffix(".json").read_text())
    assert meta["dtype"] == "int8" and meta["engine"] == "ctranslate2" and meta["engine_version"]
    assert meta["smoothing"].startswith("SmoothQuant alpha 0.5")
    # the engine and its version key the cache: another version's int8 scores are not reused
    common = dict(model_identity=resolve_model(None).identity, dtype="int8", batch_size=32, max_batch_tokens=8192)
    record = engine_record("int8")
    assert int8_run.cache_file.stem == cache_key(*pairs, engine=record, **common)
    assert cache_key(*pairs, engine=record, **common) != cache_key(*pairs, engine=None, **common)
    assert cache_key(*pairs, engine=record, **common) != cache_key(*pairs, engine={**record, "engine_version": "0"},
                                                                   **common)
    again = compute_scores(*pairs, model_ref=resolve_model(None), dtype="int8", cache_dir=int8_run.cache_file.parent,
                           progress=False)
    assert again.from_cache and np.array_equal(again.scores, int8_run.scores)


def test_an_int8_release_records_dtype_and_engine(tmp_path, capsys):
    out = tmp_path / "snli-int8"
    assert main(["likelihood", "--source", "snli-sample", "--limit", "60", "--dev-size", "12", "--test-size", "12",
                 "--dtype", "int8", "--cache-dir", str(tmp_path / "scores"), "--no-progress", "--out", str(out)]) == 0
    assert "int8, ctranslate2" in capsys.readouterr().out
    signal = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]["signal"]
    assert signal["dtype"] == "int8" and signal["engine"] == "ctranslate2"
    assert signal["engine_version"] == __import__("ctranslate2").__version__
    assert signal["smoothing"].startswith("SmoothQuant alpha 0.5")
    used = json.loads((out / "croissant.json").read_text())["prov:wasGeneratedBy"]["prov:used"]
    assert {p["name"]: p["value"] for p in used["additionalProperty"]}["smoothing"] == signal["smoothing"]


def test_int8_without_ctranslate2_or_an_unknown_dtype_is_one_line(pairs, tmp_path, monkeypatch, capsys):
    with pytest.raises(InvalidParameterError, match="dtype must be one of float32, bfloat16, float16, int8"):
        compute_scores(*pairs, model_ref=resolve_model(None), dtype="int4", cache_dir=tmp_path, progress=False)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "ctranslate2" else find_spec(name, *args))
    assert main(["likelihood", "--source", "snli-sample", "--limit", "40", "--dtype", "int8",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'resplit[ct2]'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, message", [(["--finetune"], "fine-tuning trains in float"),
                                            (["--device", "cuda"], "int8 is the CPU path")])
def test_int8_with_fine_tuning_or_on_a_gpu_is_one_line(tmp_path, capsys, extra, message):
    assert main(["likelihood", "--source", "snli-sample", "--limit", "40", "--dtype", "int8", *extra,
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "out").exists()
