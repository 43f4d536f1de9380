"""Packed fine-tuning: padding-free batches, token-budget steps, the chunked linear cross-entropy.

A tiny random GPT-2 (absolute position embeddings, so restarted position ids matter; no dropout, so
padded and packed passes see the same network) with the SmolLM2 tokenizer; the padded path (resplit
before packing, still ``packing=False``) is the reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from split_builders.errors import InvalidParameterError
from split_builders.signals.lm.finetune import FinetuneOptions, finetune_scores, training_batches, work_key
from split_builders.signals.lm.linear_ce import causal_lm_loss, chunked_loss_matches, linear_cross_entropy
from split_builders.signals.lm.models import resolve_model
from split_builders.signals.lm.training_batches import PackedCollator, PaddedCollator, micro_batches, step_rows
from split_builders.signals.lm.scoring import encode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from finetune_worker import pairs  # noqa: E402

BASE = dict(folds=2, seed=5, max_steps=4, eval_steps=1, batch_size=4, score_batch_size=8, learning_rate=1e-3)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory, smollm2_tokenizer) -> Path:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(smollm2_tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=128,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=smollm2_tokenizer.bos_token_id,
                        eos_token_id=smollm2_tokenizer.eos_token_id)
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    GPT2LMHeadModel(config).save_pretrained(folder)
    smollm2_tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def runs(tiny_gpt2, tmp_path_factory):
    """finetune_scores on 20 pairs under BASE with some options changed, each run once per module."""
    done = {}

    def run(**changes):
        key = tuple(sorted(changes.items()))
        if key not in done:
            prompts, queries = pairs(20)
            work = tmp_path_factory.mktemp("work")
            done[key] = finetune_scores(prompts, queries, model_ref=resolve_model(str(tiny_gpt2)), device="cpu",
                                        progress=False, options=FinetuneOptions(**{**BASE, **changes}, work_dir=work))
        return done[key]

    return run


def _losses(run, kind):
    return np.array([[loss for _, loss in report[kind]] for report in run.fold_reports])


def _features(encoded):
    return [{"row": i, "input_ids": e.ids, "query_start": e.query_start} for i, e in enumerate(encoded)]


# -- the attention honours packed position ids ----------------------------------------------------

def _implementations():
    found = ["eager", "sdpa"]
    if torch.cuda.is_available():
        from transformers.utils import is_flash_attn_2_available

        found += ["flash_attention_2"] if is_flash_attn_2_available() else []
    return found


@pytest.mark.parametrize("implementation", _implementations())
def test_a_packed_forward_gives_each_row_its_padded_log_probabilities(tiny_gpt2, smollm2_tokenizer, implementation):
    from transformers import AutoModelForCausalLM

    device = "cuda" if implementation.startswith("flash") else "cpu"
    dtype = torch.bfloat16 if implementation.startswith("flash") else torch.float32
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2, attn_implementation=implementation, dtype=dtype).to(device)
    encoded = encode(smollm2_tokenizer, *pairs(5), max_length=128)
    padded = PaddedCollator(pad_id=0)(_features(encoded))
    packed = PackedCollator().pack(_features(encoded))
    with torch.no_grad():
        # use_cache=False, as training runs: with a cache, restarting position ids are not read as rows
        wide = model(**{k: v.to(device) for k, v in padded.items() if k != "labels"}, use_cache=False).logits
        wide = wide.float().log_softmax(-1)
        flat = model(**{k: v.to(device) for k, v in packed.items() if k not in ("labels", "rows")}, use_cache=False).logits
        flat = flat.float().log_softmax(-1)[0]
    start = 0
    for row, example in enumerate(encoded):
        n = len(example.ids)
        assert packed["position_ids"][0, start:start + n].tolist() == list(range(n))
        torch.testing.assert_close(flat[start:start + n], wide[row, :n], atol=1e-4 if dtype == torch.float32 else 5e-2,
                                   rtol=0)
        start += n
    assert start == packed["input_ids"].shape[1] < padded["input_ids"].numel()  # no padding in the packed pass


# -- the chunked linear cross-entropy ----------------------------------------------------------------

def test_chunked_cross_entropy_equals_the_plain_one_in_value_and_gradient():
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(23, 8, dtype=torch.float64, generator=generator, requires_grad=True)
    weight = torch.randn(50, 8, dtype=torch.float64, generator=generator, requires_grad=True)
    bias = torch.randn(50, dtype=torch.float64, generator=generator, requires_grad=True)
    targets = torch.randint(0, 50, (23,), generator=generator)
    got = linear_cross_entropy(hidden, weight, targets, bias=bias, chunk=7)  # 4 chunks, the last one short
    expected = torch.nn.functional.cross_entropy(hidden @ weight.T + bias, targets, reduction="sum")
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-10)
    grads = torch.autograd.grad(3 * got, (hidden, weight, bias))
    for grad, reference in zip(grads, torch.autograd.grad(3 * expected, (hidden, weight, bias))):
        torch.testing.assert_close(grad, reference, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("autocast", [False, True])
def test_causal_lm_loss_equals_the_models_own_loss(tiny_gpt2, smollm2_tokenizer, autocast):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2)
    batch = PackedCollator().pack(_features(encode(smollm2_tokenizer, *pairs(6), max_length=128)))
    batch.pop("rows")
    labels = batch.pop("labels")
    items = torch.tensor(int((labels[:, 1:] != -100).sum()) * 3)  # as for a step accumulated over 3 passes
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        expected = model(**batch, labels=labels, num_items_in_batch=items, use_cache=False).loss
        (expected_grad,) = torch.autograd.grad(expected, model.lm_head.weight)
        hidden = model.base_model(**batch, use_cache=False).last_hidden_state
        got = causal_lm_loss(hidden, labels, model.lm_head.weight, num_items_in_batch=items, chunk=16)
        (got_grad,) = torch.autograd.grad(got, model.lm_head.weight)
    tolerance = 2e-2 if autocast else 1e-5
    torch.testing.assert_close(got.float(), expected.float(), rtol=tolerance, atol=tolerance)
    torch.testing.assert_close(got_grad, expected_grad, rtol=tolerance, atol=tolerance * 1e-2)
    assert chunked_loss_matches(model)


def test_a_model_that_post_processes_its_logits_keeps_its_own_loss():
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                          num_key_value_heads=1, head_dim=8, final_logit_softcapping=1.0, initializer_range=1.0)
    assert not chunked_loss_matches(Gemma2ForCausalLM(config))  # soft-capped logits: not head(hidden)


# -- training -------------------------------------------------------------------------------------

def test_packed_training_follows_the_padded_loss_curve(runs):
    padded, packed = runs(packing=False), runs()
    # 4 steps at a high learning rate: the losses move, and both passes move them alike.
    assert np.ptp(_losses(padded, "train_losses")) > 0.01 and np.ptp(_losses(padded, "eval_losses")) > 0.01
    np.testing.assert_allclose(_losses(packed, "train_losses"), _losses(padded, "train_losses"), rtol=0, atol=2e-5)
    np.testing.assert_allclose(_losses(packed, "eval_losses"), _losses(padded, "eval_losses"), rtol=0, atol=2e-5)
    np.testing.assert_allclose(packed.scores, padded.scores, rtol=0, atol=1e-4)
    assert [r["best_step"] for r in packed.fold_reports] == [r["best_step"] for r in padded.fold_reports]


def test_same_seed_gives_the_same_held_out_scores_and_settings_key_the_work_folder(runs, tiny_gpt2):
    packed = runs()
    prompts, queries = pairs(20)
    twin = finetune_scores(prompts, queries, model_ref=resolve_model(str(tiny_gpt2)), device="cpu", progress=False,
                           options=FinetuneOptions(**BASE, work_dir=packed.work_dir.parent / "twin"))
    assert twin.resumed_folds == 0 and np.array_equal(twin.scores, packed.scores)  # trained again: same bits
    assert not np.allclose(runs(seed=6).scores, packed.scores)
    keys = {work_key(prompts, queries, model_identity="m", k=2, seed=5, dtype="float32",
                     hyperparameters=FinetuneOptions(**changes).hyperparameters())
            for changes in ({}, {"packing": False}, {"batch_tokens": 256}, {"micro_batch_tokens": 64})}
    assert len(keys) == 4
    assert packed.work_dir != runs(packing=False).work_dir


def test_gradient_accumulation_over_a_token_budget_equals_one_pass(runs):
    whole, accumulated = runs(batch_tokens=300), runs(batch_tokens=300, micro_batch_tokens=100)
    np.testing.assert_allclose(_losses(accumulated, "train_losses"), _losses(whole, "train_losses"), rtol=0, atol=2e-5)
    np.testing.assert_allclose(accumulated.scores, whole.scores, rtol=0, atol=1e-4)
    assert not np.allclose(whole.scores, runs().scores, atol=1e-3)  # 300-token steps are not 4-row steps


# -- step plans ------------------------------------------------------------------------------------

def test_token_budget_steps_visit_every_row_once_per_epoch():
    rng = np.random.default_rng(0)
    rows = np.arange(100, 137)
    lengths = np.zeros(200, dtype=np.int64)
    lengths[rows] = rng.integers(5, 60, size=len(rows))
    lengths[120] = 500  # longer than the budget: a step of its own
    plan = step_rows(rows, lengths, steps=40, batch_tokens=200, batch_size=0, seed=3, fold=1)
    assert len(plan) == 40
    stream = np.concatenate(plan)
    for epoch in range(len(stream) // len(rows)):
        assert sorted(stream[epoch * len(rows):(epoch + 1) * len(rows)].tolist()) == rows.tolist()
    for step, following in zip(plan, plan[1:]):
        tokens = lengths[step].sum()
        assert tokens <= 200 or len(step) == 1
        assert tokens + lengths[following[0]] > 200  # greedy: the next row did not fit
    assert all(np.array_equal(a, b) for a, b in zip(plan, step_rows(rows, lengths, steps=40, batch_tokens=200,
                                                                    batch_size=0, seed=3, fold=1)))
    assert not np.array_equal(stream[:37], np.concatenate(step_rows(rows, lengths, steps=40, batch_tokens=200,
                                                                     batch_size=0, seed=4, fold=1))[:37])

    steps = [step for step in plan if len(step) >= 3][:5]
    parts = micro_batches(steps, lengths, parts=3, by_tokens=True)
    assert len(parts) == 15 and all(len(p) for p in parts)
    for step, three in zip(steps, np.array_split(np.array(parts, dtype=object), 5)):
        assert np.array_equal(np.concatenate(list(three)), step)
    with pytest.raises(InvalidParameterError, match=r"step 0 has 1 row\(s\), fewer than the 2 forward passes"):
        micro_batches([np.array([120])], lengths, parts=2, by_tokens=True)


def test_the_trainer_reads_exactly_the_planned_forward_passes(runs, monkeypatch):
    from split_builders.signals.lm import finetune

    read, planned = {}, {}
    real_rows, real_fit = PaddedCollator.rows, finetune._fit

    def rows_of(features):
        if features and isinstance(features[0], list):  # a training micro-batch (evaluation reads single rows)
            read[len(planned) - 1].append([f["row"] for f in features[0]])
        return real_rows(features)

    def fit(model_ref, encoded, *, fit_rows, fold, options, num_processes, **kwargs):
        planned[fold] = training_batches(encoded, fit_rows, options=options, fold=fold, num_processes=num_processes)
        read[fold] = []
        return real_fit(model_ref, encoded, fit_rows=fit_rows, fold=fold, options=options, num_processes=num_processes,
                        **kwargs)

    monkeypatch.setattr(PaddedCollator, "rows", staticmethod(rows_of))
    monkeypatch.setattr(finetune, "_fit", fit)
    runs(batch_tokens=301, micro_batch_tokens=100)
    assert sorted(planned) == [0, 1]
    for fold, (batches, accumulation) in planned.items():
        assert accumulation >= 2  # up to 301 tokens a step, about 100 a pass
        assert len(batches) == BASE["max_steps"] * accumulation
        assert read[fold] == [b.tolist() for b in batches]  # every pass, in order, nothing else


def test_packed_training_through_the_varlen_route_follows_the_masked_one(runs, tiny_gpt2, tmp_path, monkeypatch):
    """The GPU's route (rows' boundaries in the batch, attention through PyTorch's varlen kernel, forward and
    backward) on the CPU, with the per-row reference kernel of the scoring tests standing in for the kernel."""
    from test_packed_scoring import reference_varlen

    from split_builders.signals.lm import packing

    calls = []

    def kernel(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, scale=None, window_size=(-1, -1)):
        if query.requires_grad:  # a training pass (held-out scoring takes the route too, without gradients)
            calls.append(cu_seq_q.numel() - 1)  # rows in the pass
        return reference_varlen(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, scale=scale,
                                window_size=window_size)

    monkeypatch.setattr(packing, "use_varlen", lambda device, dtype: True)
    monkeypatch.setattr(packing, "_kernel", lambda: kernel)
    prompts, queries = pairs(20)
    model_ref = resolve_model(str(tiny_gpt2))
    varlen = finetune_scores(prompts, queries, model_ref=model_ref, device="cpu", progress=False,
                             options=FinetuneOptions(**BASE, work_dir=tmp_path / "work"))
    assert calls and max(calls) > 1  # the training's packed passes went through the kernel, several rows a pass
    masked = runs()
    np.testing.assert_allclose(_losses(varlen, "train_losses"), _losses(masked, "train_losses"), rtol=0, atol=2e-5)
    np.testing.assert_allclose(varlen.scores, masked.scores, rtol=0, atol=1e-4)
