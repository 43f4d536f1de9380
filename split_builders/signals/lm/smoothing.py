"""SmoothQuant (Xiao et al., ICML 2023) for the int8 engine: activation outliers moved into the weights first.

int8 with activations quantised per token loses most where a few input channels of a linear layer carry values far
larger than the rest: those channels set each token's scale, and the others keep a few levels. SmoothQuant divides
input channel ``j`` by ``s_j = max|X_j| ** alpha / max|W_j| ** (1 - alpha)`` and multiplies the weights' column ``j``
by ``s_j``, which leaves the product unchanged in exact arithmetic while both sides fit their int8 grids better. The
division is folded into what produces the input, so the smoothed model is an ordinary checkpoint that CTranslate2
converts like any other:

* the RMSNorm before ``q_proj`` / ``k_proj`` / ``v_proj`` (one ``s`` for the three), and the one before
  ``gate_proj`` / ``up_proj``;
* ``v_proj``'s output rows before ``o_proj`` (attention is linear in the values; with grouped-query attention a value
  channel feeds ``n_heads / n_kv_heads`` columns of ``o_proj``, which share its ``s``);
* ``up_proj``'s output rows before ``down_proj`` (the MLP multiplies ``act(gate)`` by ``up`` channel by channel).

The output projection (tied to the embeddings in small models) is left as it is. Which architectures have this
layout is declared in :data:`SMOOTHABLE` (``config.model_type``); any other model is quantised without smoothing.

The channel maxima come from text the model writes itself (:func:`calibration_ids`: sampled from BOS with a fixed
seed), so the smoothing depends on the model alone, never on the dataset being scored or on its row order. On 400
SNLI pairs with SmolLM2-135M (simulated int8, the same per-token / per-channel grids), alpha 0.5 took Spearman to
float32 from 0.9917 to 0.9970 and the mean |error| of s(x) from 1.10 to 0.58 nats (``benchmarks/int8_agreement.py``
measures the engine itself).
"""

from __future__ import annotations

import torch

ALPHA = 0.5
SMOOTHABLE = ("llama", "mistral", "qwen2")  # decoder layers: input/post-attention RMSNorm, q/k/v/o, gate/up/down
CALIBRATION = {"sequences": 32, "length": 64, "seed": 0}  # part of the converted model's cache tag


def smoothable(config) -> bool:
    """Whether a model of ``config`` (its ``transformers`` config) has a layout :func:`smooth` knows
    (:data:`SMOOTHABLE`)."""
    return getattr(config, "model_type", None) in SMOOTHABLE


def calibration_ids(model, tokenizer, *, sequences: int, length: int, seed: int) -> torch.Tensor:
    """``sequences`` texts of ``length`` tokens sampled by the model from BOS (the same for a model and seed: the
    generator is seeded inside a forked random state, so the caller's random state is untouched)."""
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    start = torch.full((sequences, 1), bos, dtype=torch.long)
    with torch.random.fork_rng(devices=[]), torch.inference_mode():
        torch.manual_seed(seed)
        out = model.generate(start, attention_mask=torch.ones_like(start), do_sample=True, top_k=0, top_p=1.0,
                             temperature=1.0, max_new_tokens=length, min_new_tokens=length,
                             pad_token_id=bos, eos_token_id=None)
    return out


def channel_maxima(model, ids: torch.Tensor) -> list[dict]:
    """Per decoder layer, the largest |value| of each input channel of ``q_proj``, ``o_proj``, ``gate_proj`` and
    ``down_proj`` over the calibration tokens."""
    maxima, handles = [], []
    for layer in model.model.layers:
        seen: dict = {}
        maxima.append(seen)
        for name, module in (("qkv", layer.self_attn.q_proj), ("o", layer.self_attn.o_proj),
                             ("gate_up", layer.mlp.gate_proj), ("down", layer.mlp.down_proj)):
            def hook(_, args, name=name, seen=seen):
                values = args[0].detach().abs().reshape(-1, args[0].shape[-1]).amax(0).float()
                seen[name] = values if name not in seen else torch.maximum(seen[name], values)
            handles.append(module.register_forward_pre_hook(hook))
    try:
        with torch.inference_mode():
            model(input_ids=ids, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return maxima


def _scales(act_max: torch.Tensor, weight_max: torch.Tensor, alpha: float) -> torch.Tensor:
    return (act_max.clamp(min=1e-5) ** alpha / weight_max.clamp(min=1e-5) ** (1 - alpha)).clamp(min=1e-5)


def _columns_max(*linears) -> torch.Tensor:
    return torch.stack([linear.weight.abs().amax(0) for linear in linears]).amax(0)


def _fold_into_norm(norm, linears, act_max, alpha: float) -> None:
    s = _scales(act_max, _columns_max(*linears), alpha)
    norm.weight.div_(s.to(norm.weight.dtype))
    for linear in linears:
        linear.weight.mul_(s.to(linear.weight.dtype))


def _fold_into_rows(producer, consumer, act_max, alpha: float, source=None) -> None:
    """Divide ``producer``'s output rows by ``s`` and multiply ``consumer``'s input columns by it; ``source[c]``: the
    producer row that feeds consumer column ``c`` (several columns may share one row: grouped-query attention)."""
    rows = producer.weight.shape[0]
    source = torch.arange(rows) if source is None else source
    act = torch.zeros(rows).scatter_reduce(0, source, act_max, "amax", include_self=False)
    weight = torch.zeros(rows).scatter_reduce(0, source, consumer.weight.abs().amax(0).float(), "amax",
                                              include_self=False)
    s = _scales(act, weight, alpha)
    producer.weight.div_(s[:, None].to(producer.weight.dtype))
    if producer.bias is not None:
        producer.bias.div_(s.to(producer.bias.dtype))
    consumer.weight.mul_(s[source].to(consumer.weight.dtype))


def smooth(model, maxima: list[dict], *, alpha: float = ALPHA) -> None:
    """Fold SmoothQuant's scales into ``model`` in place (float weights): the float model computes what it computed
    before, up to rounding (a test checks)."""
    config = model.config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    column = torch.arange(heads * head_dim)
    value_row = (column // head_dim) // (heads // kv_heads) * head_dim + column % head_dim
    with torch.no_grad():
        for layer, seen in zip(model.model.layers, maxima):
            attention, mlp = layer.self_attn, layer.mlp
            _fold_into_norm(layer.input_layernorm, (attention.q_proj, attention.k_proj, attention.v_proj),
                            seen["qkv"], alpha)
            _fold_into_norm(layer.post_attention_layernorm, (mlp.gate_proj, mlp.up_proj), seen["gate_up"], alpha)
            _fold_into_rows(attention.v_proj, attention.o_proj, seen["o"], alpha, source=value_row)
            _fold_into_rows(mlp.up_proj, mlp.down_proj, seen["down"], alpha)


def smooth_for_int8(model, tokenizer) -> None:
    """Calibrate on the model's own text (:data:`CALIBRATION`) and fold the scales in (a model :func:`smoothable`
    says yes to)."""
    smooth(model, channel_maxima(model, calibration_ids(model, tokenizer, **CALIBRATION)))
