"""SmoothQuant before int8 (``split_builders.signals.lm.smoothing``): the folded model computes what it computed, and
int8 with per-token activations loses less on it; calibration is the model's own seeded text."""

from types import SimpleNamespace

import pytest
import torch

from split_builders.signals.lm.smoothing import calibration_ids, channel_maxima, smooth, smoothable


def tiny_llama(outliers: bool):
    """A tiny Llama with grouped-query attention (4 query heads over 2 key/value heads), float64; with ``outliers``, a
    few input channels of the norms and of ``up_proj``'s rows carry values 40x the rest, as trained LMs have."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).double().eval()
    if outliers:
        with torch.no_grad():
            for layer in model.model.layers:
                layer.input_layernorm.weight[[3, 17]] *= 40
                layer.post_attention_layernorm.weight[[5]] *= 40
                layer.mlp.up_proj.weight[[7, 30]] *= 40
    return model


def int8(values, dim):
    """Symmetric int8 rounding with one scale per slice along ``dim`` (the engine's grids: per token for
    activations, per output row for weights)."""
    scale = values.abs().amax(dim=dim, keepdim=True).clamp(min=1e-12) / 127
    return torch.round(values / scale).clamp(-127, 127) * scale


def int8_logits(model, ids):
    """The model's logits with every linear layer of its decoder in simulated int8 (per-token activations, per-row
    weights): an independent reference of what the engine computes."""
    linears = [m for name, m in model.model.layers.named_modules() if isinstance(m, torch.nn.Linear)]
    saved = [m.weight.detach().clone() for m in linears]
    handles = [m.register_forward_pre_hook(lambda _, args: (int8(args[0], -1),)) for m in linears]
    try:
        with torch.no_grad():
            for m in linears:
                m.weight.copy_(int8(m.weight, 1))
            return model(input_ids=ids).logits
    finally:
        for handle in handles:
            handle.remove()
        with torch.no_grad():
            for m, weight in zip(linears, saved):
                m.weight.copy_(weight)


def test_smoothing_keeps_the_float_model_and_halves_the_int8_error_on_outlier_channels():
    model = tiny_llama(outliers=True)
    ids = torch.randint(3, 97, (4, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        exact = model(input_ids=ids).logits
    before = (int8_logits(model, ids) - exact).abs().mean()
    smooth(model, channel_maxima(model, ids))
    with torch.no_grad():
        folded = model(input_ids=ids).logits
    torch.testing.assert_close(folded, exact, rtol=1e-9, atol=1e-9)  # only the grids change, not the function
    after = (int8_logits(model, ids) - exact).abs().mean()
    assert after < before / 2, (float(before), float(after))


@pytest.mark.parametrize("outliers", [False, True])
def test_every_fold_is_exact_with_grouped_query_attention(outliers):
    """v_proj -> o_proj shares a scale across the query heads of a key/value head: a wrong mapping changes the
    function (checked with and without outliers, so the scales are not all alike)."""
    model = tiny_llama(outliers)
    ids = torch.randint(3, 97, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        exact = model(input_ids=ids).logits
    maxima = channel_maxima(model, ids)
    assert [sorted(layer) for layer in maxima] == [["down", "gate_up", "o", "qkv"]] * 2
    assert maxima[0]["o"].shape == (32,) and maxima[0]["down"].shape == (48,)
    smooth(model, maxima)
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, exact, rtol=1e-9, atol=1e-9)


def test_calibration_text_is_the_models_own_seeded_sample_and_leaves_the_callers_random_state():
    model = tiny_llama(outliers=False)
    tokenizer = SimpleNamespace(bos_token_id=1, eos_token_id=2)
    state = torch.get_rng_state()
    first = calibration_ids(model, tokenizer, sequences=3, length=8, seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    assert first.shape == (3, 9) and (first[:, 0] == 1).all()
    assert torch.equal(calibration_ids(model, tokenizer, sequences=3, length=8, seed=0), first)
    assert not torch.equal(calibration_ids(model, tokenizer, sequences=3, length=8, seed=1), first)


def test_only_declared_architectures_are_smoothed():
    from transformers import GPT2Config, GPT2LMHeadModel

    assert smoothable(tiny_llama(outliers=False).config)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=50, n_positions=16))
    assert not smoothable(gpt2.config)
