"""Padding-free packed scoring gives the padded scores; the chunked log-softmax gives log_softmax's; plans by tokens.

Float32 bounds: packed and padded passes add the same numbers in another order (other matrix shapes, other key
blocks in attention), so a row's s(x) moves by float32 rounding. On the tiny GPT-2-shaped model that stays under
1e-5. On SmolLM2 (logits of magnitude ~30, sums of ~10 tokens) the float32 floor is higher whatever the layout:
padded batches of 1, 7 and 32 rows differ by up to 1.5e-5 per row, and the float32 vocabulary projection alone by
1.8e-5 from a float64 one (measured on 30 SNLI pairs). So SmolLM2 is held to 5e-5 in float32, and a tiny model of
its architecture to 1e-9 in float64, where rounding is gone and only the layout could differ (``benchmarks/scoring.py
--packing`` prints SmolLM2's own figures against a float64 run). A row that saw another row, or a wrong position,
moves by nats, not by 1e-5.
"""

import numpy as np
import pytest
import torch

from loading_scripts import load_source
from split_builders.errors import InvalidParameterError
from split_builders.signals.lm import packing
from split_builders.signals.lm.packing import pack_lanes, packed_inputs, plan_packs
from split_builders.signals.lm.prompts import render_all, resolve_template
from split_builders.signals.lm.scoring import Encoded, LikelihoodScorer, cache_key, encode, target_logprobs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def snli30():
    source = load_source("snli-sample")
    prompts, queries = render_all(resolve_template(None, task="snli", prompt_field=None, query_field=None), source)
    return prompts[:30], queries[:30]


@pytest.fixture(scope="module")
def gpt2_shaped():
    """A tiny GPT-2 (random weights, learned positions, a Linear head with tied weights) and random examples of
    3-40 tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=997, n_positions=64,
                                       bos_token_id=0, eos_token_id=0)).eval()
    rng = np.random.default_rng(1)
    examples = []
    for length in rng.integers(3, 41, size=40):
        ids = rng.integers(0, 997, size=length).tolist()
        examples.append(Encoded(ids=ids, query_start=int(rng.integers(1, length))))
    return model, examples


def reference_varlen(query, key, value, cu_seq_q, cu_seq_k, max_q, max_k, *, scale=None, window_size=(-1, -1)):
    """torch's ``varlen_attn`` contract on the CPU: ``[tokens, heads, dim]`` cut into rows by ``cu_seq_q``, causal
    attention within each row only (plain scaled_dot_product_attention per row)."""
    assert window_size == (-1, 0) and torch.equal(cu_seq_q, cu_seq_k) and cu_seq_q.dtype == torch.int32
    bounds = cu_seq_q.tolist()
    assert bounds[0] == 0 and bounds[-1] == query.shape[0] and max_q == max(np.diff(bounds))
    rows = [torch.nn.functional.scaled_dot_product_attention(
        query[a:b].transpose(0, 1), key[a:b].transpose(0, 1), value[a:b].transpose(0, 1), is_causal=True, scale=scale)
        for a, b in zip(bounds[:-1], bounds[1:])]
    return torch.cat(rows, dim=1).transpose(0, 1)


@pytest.fixture()
def cpu_varlen(monkeypatch):
    """The GPU's varlen route on the CPU: the scorer takes it, with :func:`reference_varlen` as the kernel."""
    monkeypatch.setattr(packing, "use_varlen", lambda device, dtype: True)
    monkeypatch.setattr(packing, "_kernel", lambda: reference_varlen)


def test_chunked_logsumexp_equals_log_softmax_gather():
    torch.manual_seed(3)
    hidden, weight, bias = torch.randn(50, 16), torch.randn(301, 16) * 3, torch.randn(301)
    targets = torch.randint(0, 301, (50,))
    exact = torch.log_softmax(hidden.double() @ weight.double().T + bias.double(), dim=-1)
    expected = exact.gather(1, targets[:, None])[:, 0]
    for chunk in (301, 301 * 7, 1 << 24):  # one position per chunk, chunks of 7 with a shorter last, one chunk
        got = target_logprobs(hidden, targets, weight, bias, chunk=chunk)
        assert got.dtype == torch.float32
        np.testing.assert_allclose(got.numpy(), expected.numpy(), atol=1e-5, rtol=0)
    assert torch.allclose(target_logprobs(hidden.double(), targets, weight.double(), bias.double(), chunk=301 * 4),
                          expected, atol=1e-12, rtol=0)


@pytest.mark.parametrize("pack_length", [48, None])
def test_packed_equals_padded_on_a_gpt2_shaped_model(gpt2_shaped, pack_length):
    model, examples = gpt2_shaped
    padded = LikelihoodScorer(model, None, packing="padded", batch_size=6, padding_side="left")
    packed = LikelihoodScorer(model, None, packing="packed", pack_length=pack_length, max_batch_tokens=200)
    assert packed._shortcut and padded._shortcut
    expected, got = padded.score_encoded(examples), packed.score_encoded(examples)
    assert np.isfinite(got).all() and (got < 0).all()
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


def test_packed_equals_padded_through_the_varlen_route(gpt2_shaped, cpu_varlen):
    model, examples = gpt2_shaped
    packed = LikelihoodScorer(model, None, packing="packed", max_batch_tokens=200)
    assert packed.varlen and packed.pack_length is None
    expected = LikelihoodScorer(model, None, packing="padded", batch_size=6).score_encoded(examples)
    np.testing.assert_allclose(packed.score_encoded(examples), expected, atol=1e-5, rtol=0)
    assert model.config._attn_implementation == "sdpa"  # the model's own attention is restored after each pass


def test_packed_equals_padded_on_smollm2_float32(smollm2, snli30):
    prompts, queries = snli30
    padded = LikelihoodScorer(smollm2.model, smollm2.tokenizer, packing="padded").score(prompts, queries)
    packed = LikelihoodScorer(smollm2.model, smollm2.tokenizer, packing="packed", pack_length=128,
                              max_batch_tokens=600).score(prompts, queries)
    np.testing.assert_allclose(packed, padded, atol=5e-5, rtol=0)


def test_a_bfloat16_model_projects_only_query_positions_and_a_soft_capped_one_its_own_logits(smollm2, snli30):
    """The shortcut (the head only where a query token is predicted, in float32) is checked in the model's own
    precision: bfloat16 SmolLM2 takes it (compared with float32's projection, its bfloat16 logits differed by
    rounding, so it used to project every position of every pass), and its scores stay near float32's; a
    soft-capped model's logits are not its head's projection, so it keeps its own in either precision."""
    import copy

    from transformers import Gemma2Config, Gemma2ForCausalLM

    prompts, queries = snli30
    half = LikelihoodScorer(copy.deepcopy(smollm2.model).to(torch.bfloat16), smollm2.tokenizer, packing="padded")
    assert half._shortcut
    full = LikelihoodScorer(smollm2.model, smollm2.tokenizer, packing="padded").score(prompts[:8], queries[:8])
    assert np.abs(half.score(prompts[:8], queries[:8]) - full).max() < 1.0  # bfloat16 rounding, not another score
    torch.manual_seed(0)
    capped = Gemma2ForCausalLM(Gemma2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                            num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                            final_logit_softcapping=1.0, initializer_range=1.0)).eval()
    for dtype in (torch.float32, torch.bfloat16):
        assert not LikelihoodScorer(capped.to(dtype), None, packing="padded")._shortcut


@pytest.fixture(scope="module")
def llama_float64():
    """A tiny float64 model of SmolLM2's architecture (Llama: rotary positions, grouped-query attention with 9 query
    heads over 3 key/value heads, a tied head), random weights: in float64 rounding is gone, so packed and padded
    passes may differ only where the layout does (a row that saw another row, a wrong position). The real SmolLM2
    is held to float32's bound above; ``benchmarks/scoring.py --packing`` prints its figures against float64."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=601, hidden_size=72, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=128,
                         tie_word_embeddings=True, attn_implementation="sdpa")
    return LlamaForCausalLM(config).double().eval()


def test_packed_equals_padded_in_float64_with_grouped_query_attention(llama_float64, snli30, smollm2, monkeypatch):
    prompts, queries = snli30[0][:12], snli30[1][:12]
    encoded = [Encoded(ids=[i % 601 for i in e.ids], query_start=e.query_start)
               for e in encode(smollm2.tokenizer, prompts, queries, max_length=2048)]  # SNLI's lengths, tiny ids
    padded = LikelihoodScorer(llama_float64, None, packing="padded", batch_size=5).score_encoded(encoded)
    packed = LikelihoodScorer(llama_float64, None, packing="packed", pack_length=100, max_batch_tokens=250)
    np.testing.assert_allclose(packed.score_encoded(encoded), padded, atol=1e-9, rtol=0)
    # the varlen route with grouped-query attention
    monkeypatch.setattr(packing, "use_varlen", lambda device, dtype: True)
    monkeypatch.setattr(packing, "_kernel", lambda: reference_varlen)
    varlen = LikelihoodScorer(llama_float64, None, packing="packed", max_batch_tokens=250)
    assert varlen.varlen
    np.testing.assert_allclose(varlen.score_encoded(encoded), padded, atol=1e-9, rtol=0)


def test_token_budget_plans_score_every_row_once_within_budget():
    rng = np.random.default_rng(7)
    lengths = np.concatenate([rng.integers(2, 60, size=300), [250, 130]])  # two rows longer than the budget
    budget = 120
    batches = plan_packs(lengths, max_batch_tokens=budget)
    rows = np.concatenate(batches)
    assert sorted(rows.tolist()) == list(range(len(lengths)))
    for batch in batches:
        assert lengths[batch].sum() <= budget or len(batch) == 1
    assert sum(len(b) == 1 and lengths[b].sum() > budget for b in batches) == 2
    capped = plan_packs(lengths, max_batch_tokens=budget, batch_size=3)
    assert sorted(np.concatenate(capped).tolist()) == list(range(len(lengths)))
    assert max(len(b) for b in capped) == 3 and all(lengths[b].sum() <= budget or len(b) == 1 for b in capped)
    assert all(np.array_equal(a, b) for a, b in zip(batches, plan_packs(lengths.tolist(), max_batch_tokens=budget)))
    for n in (1, 2, 3):  # sharded r::N after planning: every batch to exactly one process
        assert sorted(i for r in range(n) for i in range(r, len(batches), n)) == list(range(len(batches)))


def test_lanes_hold_each_row_once_with_restarting_positions():
    rows = [list(range(100, 100 + n)) for n in (30, 5, 12, 30, 7, 64, 1)]
    lanes = pack_lanes([len(r) for r in rows], pack_length=40)
    assert sorted(i for lane in lanes for i in lane) == list(range(len(rows)))
    # lanes are as long as pack_length or the longest row, whichever is longer (the pass is that wide anyway)
    assert all(sum(len(rows[i]) for i in lane) <= 64 for lane in lanes) and len(lanes) == 3
    packed = packed_inputs(rows, pack_length=40)
    for i, row in enumerate(rows):
        lane, start = packed.lane[i], packed.start[i]
        assert packed.ids[lane, start:start + len(row)].tolist() == row
        assert packed.positions[lane, start:start + len(row)].tolist() == list(range(len(row)))
    assert packed.ids.shape == (len(lanes), 64)


def test_packing_is_checked_and_keys_the_cache(gpt2_shaped):
    model, _ = gpt2_shaped
    with pytest.raises(InvalidParameterError, match="packing must be one of auto, padded, packed, got 'zigzag'"):
        LikelihoodScorer(model, None, packing="zigzag")
    assert LikelihoodScorer(model, None).packing == "packed"  # auto
    keys = {cache_key(["p"], ["q"], model_identity="m", dtype="float32", batch_size=32, max_batch_tokens=8192,
                      packing=mode) for mode in ("padded", "packed")}
    assert len(keys) == 2
