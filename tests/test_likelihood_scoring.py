"""The scoring engine with the real SmolLM2-135M: exactness, invariances, cache, resume, processes."""

from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import run_two_processes
from loading_scripts import load_source
from split_builders.errors import EmptyTextError, InvalidParameterError
from split_builders.signals.lm.models import resolve_model
from split_builders.signals.lm.prompts import render_all, resolve_template
from split_builders.signals.lm.scoring import LikelihoodScorer, compute_scores, encode

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pairs():
    source = load_source("snli-sample")
    prompts, queries = render_all(resolve_template(None, task="snli", prompt_field=None, query_field=None), source)
    return prompts[:12], queries[:12]  # three batches of 4: two before an interruption, one after


@pytest.fixture(scope="module")
def in_batches_of_four(pairs, tmp_path_factory):
    """``compute_scores`` over the 12 pairs in batches of 4, one process: what a resumed run and two processes must
    give (computed once for both)."""
    prompts, queries = pairs
    return compute_scores(prompts, queries, model_ref=resolve_model(None), batch_size=4,
                          cache_dir=tmp_path_factory.mktemp("batches-of-four"), progress=False)


@pytest.fixture(scope="module")
def six_scored(pairs, tmp_path_factory):
    """The first six pairs scored into a fresh cache folder: ``(the folder, the run)``. A test copies the folder."""
    prompts, queries = pairs
    folder = tmp_path_factory.mktemp("six-scored")
    run = compute_scores(prompts[:6], queries[:6], model_ref=resolve_model(None), cache_dir=folder, progress=False)
    return folder, run


def _cache_copy(six_scored, target: Path) -> tuple:
    """A copy of the six pairs' cache folder at ``target``: ``(target, the run, its cache entry in the copy)``."""
    import shutil

    folder, run = six_scored
    shutil.copytree(folder, target)
    return target, run, target / run.cache_file.relative_to(folder)


def _one_by_one(loaded, prompt, query):
    """Independent reference: one example, full forward, log-softmax over every position."""
    tokenizer, model = loaded.tokenizer, loaded.model
    prompt_ids = [tokenizer.bos_token_id] + tokenizer(prompt, add_special_tokens=False)["input_ids"]
    query_ids = tokenizer(query, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    ids = torch.tensor([prompt_ids + query_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].double(), dim=-1)
    return sum(logprobs[t - 1, ids[0, t]].item() for t in range(len(prompt_ids), ids.shape[1]))


def test_scores_equal_the_one_example_full_forward(smollm2, pairs):
    prompts, queries = pairs
    scores = LikelihoodScorer(smollm2.model, smollm2.tokenizer, batch_size=8).score(prompts[:8], queries[:8])
    expected = [_one_by_one(smollm2, p, q) for p, q in zip(prompts[:8], queries[:8])]
    np.testing.assert_allclose(scores, expected, atol=1e-3)
    assert (scores < 0).all()


def test_scores_do_not_depend_on_batch_size_or_padding_side(smollm2, pairs):
    prompts, queries = pairs[0][:12], pairs[1][:12]  # batches of 5 and 7 leave a remainder; 12 is all in one
    reference = LikelihoodScorer(smollm2.model, smollm2.tokenizer, batch_size=1).score(prompts, queries)
    for batch_size, side in ((5, "right"), (7, "left"), (12, "left")):
        scores = LikelihoodScorer(smollm2.model, smollm2.tokenizer, batch_size=batch_size,
                                  padding_side=side).score(prompts, queries)
        np.testing.assert_allclose(scores, reference, atol=1e-3, err_msg=f"batch {batch_size}, {side}")


def test_the_label_conditioned_prompt_changes_the_score(smollm2):
    scorer = LikelihoodScorer(smollm2.model, smollm2.tokenizer)
    premise = "Premise: A man is sleeping on a couch."
    scores = scorer.score([f"{premise} This hypothesis is entailed:", f"{premise} This hypothesis is a contradiction:"],
                          [" A man is resting.", " A man is resting."])
    assert scores[0] != scores[1]


def test_encode_layout_truncation_and_errors(smollm2):
    tokenizer = smollm2.tokenizer
    [example] = encode(tokenizer, ["Passage: a b c"], [" q"], max_length=64)
    assert example.ids[0] == tokenizer.bos_token_id and example.ids[-1] == tokenizer.eos_token_id
    assert example.ids[example.query_start:-1] == tokenizer(" q", add_special_tokens=False)["input_ids"]
    [long] = encode(tokenizer, ["word " * 100], [" the query"], max_length=16)
    assert len(long.ids) == 16 and long.ids[0] == tokenizer.bos_token_id  # prompt cut from its left
    with pytest.raises(InvalidParameterError, match="no query tokens would be left"):
        encode(tokenizer, ["p"], [" many words " * 20], max_length=16)
    with pytest.raises(EmptyTextError, match="no tokens"):
        encode(tokenizer, ["p"], [""], max_length=16)


def test_cached_scores_are_reused_without_loading_the_model(pairs, six_scored, tmp_path, monkeypatch):
    prompts, queries = pairs
    ref = resolve_model(None)
    cache, first, _ = _cache_copy(six_scored, tmp_path / "cache")  # the first run: computed into the cache
    assert not first.from_cache

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded although the scores are cached")

    monkeypatch.setattr("split_builders.signals.lm.models.load_model", no_loading)
    second = compute_scores(prompts[:6], queries[:6], model_ref=ref, cache_dir=cache, progress=False)
    assert second.from_cache and np.array_equal(first.scores, second.scores)
    # other texts, or another precision, are another cache entry
    with pytest.raises(AssertionError, match="was loaded"):
        compute_scores(prompts[:6], queries[:6], model_ref=ref, cache_dir=cache, dtype="bfloat16", progress=False)


def test_an_interrupted_run_resumes_and_gives_the_same_scores(pairs, in_batches_of_four, tmp_path, capsys):
    prompts, queries = pairs
    ref = resolve_model(None)
    kwargs = dict(model_ref=ref, batch_size=4, checkpoint_seconds=0, progress=False)
    uninterrupted = in_batches_of_four.scores  # the same batches of 4, never stopped
    with pytest.raises(KeyboardInterrupt):
        compute_scores(prompts, queries, cache_dir=tmp_path / "b", stop_after_batches=2, **kwargs)
    assert list((tmp_path / "b").glob("*.partial/rank0-of-1"))
    resumed = compute_scores(prompts, queries, cache_dir=tmp_path / "b", **kwargs)
    assert resumed.resumed_batches == 2
    assert "resuming: 2 of" in capsys.readouterr().err
    assert np.array_equal(resumed.scores, uninterrupted)  # the same batches: bit for bit
    assert not list((tmp_path / "b").glob("*.partial/rank*"))


def test_two_processes_give_the_same_scores_as_one(pairs, in_batches_of_four, tmp_path):
    n_rows = 12  # batches of 4 shared out over 2 processes: one takes two, the other one
    out = tmp_path / "reports"
    reports = run_two_processes("distributed_worker.py", tmp_path / "cache2", out, n_rows, out=out)
    assert [r["rank"] for r in reports] == [0, 1]
    assert all(r["num_processes"] == 2 == r["run_num_processes"] for r in reports)
    assert all("gloo" in r["backend"] for r in reports)

    prompts, queries = pairs
    assert len(prompts) == n_rows
    single = in_batches_of_four  # the n_rows pairs in batches of 4, one process
    assert single.num_processes == 1
    for report in reports:  # every process returns the full gathered scores, in input order
        assert np.array_equal(np.array(report["scores"]), single.scores)


def test_auto_precision_is_float32_on_cpu():
    from split_builders.methods.likelihood import resolve_dtype

    assert resolve_dtype("auto", "cpu") == "float32"
    assert resolve_dtype("bfloat16", "cpu") == "bfloat16"
    if not torch.cuda.is_available():
        assert resolve_dtype("auto", None) == "float32"


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_damaged_score_cache_entry_is_reported_and_recomputed(pairs, six_scored, tmp_path, capsys, damage):
    prompts, queries = pairs
    ref = resolve_model(None)
    cache, first, entry = _cache_copy(six_scored, tmp_path / "cache")  # the first run's cache entry, copied
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[-40] ^= 0xFF  # inside the stored scores
    else:
        data = data[: len(data) // 2]
    entry.write_bytes(bytes(data))
    again = compute_scores(prompts[:6], queries[:6], model_ref=ref, cache_dir=cache, progress=False)
    assert not again.from_cache and "is damaged" in capsys.readouterr().err
    assert np.array_equal(again.scores, first.scores)
    assert compute_scores(prompts[:6], queries[:6], model_ref=ref, cache_dir=cache, progress=False).from_cache
