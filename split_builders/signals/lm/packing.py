"""Padding-free batches for the scorer: token-budget plans, rows packed into lanes, varlen attention.

A packed forward pass concatenates rows into lanes (one sequence per lane) whose position ids
restart at 0 at every row, with ``attention_mask=None``: ``transformers`` then finds the row
boundaries from the position ids (``masking_utils.find_packed_sequence_indices``) and builds a
block-diagonal causal mask for ``sdpa`` / ``eager``, so no row attends to another. A dense block mask
still costs lane-length squared attention, so lanes are capped at ``pack_length`` tokens.

On a GPU in bfloat16 / float16 the pass is a single lane and attention runs through PyTorch's own
variable-length flash kernel (``torch.nn.attention.varlen.varlen_attn``, no extra package), plugged
into ``transformers`` with its public ``AttentionInterface``: the row boundaries travel as the
``cu_seq_lens_q/k`` and ``max_length_q/k`` keyword arguments of the flash-attention path, so no mask
is built and no FLOP is spent across rows or on padding.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

VARLEN_ATTENTION = "resplit_varlen"  # the name registered with transformers' AttentionInterface


def plan_passes(lengths, *, max_batch_tokens: int, batch_size: int | None = None,
                padded: bool = False) -> list[np.ndarray]:
    """Forward passes of rows of ``lengths``: longest first (ties in input order), each pass holding
    at most ``batch_size`` rows and at most ``max_batch_tokens`` tokens: real tokens, or with
    ``padded`` the pass's rows times its longest (a single longer row gets a pass of its own). The
    plan depends only on the lengths, so it is the same whatever the number of processes. The one
    planner of scoring: :func:`plan_packs` and :func:`~split_builders.signals.lm.scoring.plan_batches`."""
    lengths = np.asarray(lengths)
    order = np.argsort(-lengths, kind="stable")
    batches, current, tokens = [], [], 0
    for index in order:
        if current:
            full = batch_size is not None and len(current) >= batch_size
            # rows come longest first: a padded pass is as wide as its first row
            cost = lengths[current[0]] * (len(current) + 1) if padded else tokens + lengths[index]
            if full or cost > max_batch_tokens:
                batches.append(np.array(current))
                current, tokens = [], 0
        current.append(index)
        tokens += int(lengths[index])
    if current:
        batches.append(np.array(current))
    return batches


def plan_packs(lengths, *, max_batch_tokens: int, batch_size: int | None = None) -> list[np.ndarray]:
    """Packed passes by real tokens (:func:`plan_passes`)."""
    return plan_passes(lengths, max_batch_tokens=max_batch_tokens, batch_size=batch_size)


def pack_lanes(lengths, *, pack_length: int | None) -> list[list[int]]:
    """Positions (into ``lengths``) of the rows of each lane: first-fit decreasing into lanes of
    ``max(pack_length, longest row)`` tokens; one lane for everything when ``pack_length`` is None."""
    lengths = [int(n) for n in lengths]
    if pack_length is None:
        return [list(range(len(lengths)))]
    width = max(pack_length, max(lengths))
    lanes, room = [], []
    for position in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        for lane, free in enumerate(room):
            if lengths[position] <= free:
                lanes[lane].append(position)
                room[lane] -= lengths[position]
                break
        else:
            lanes.append([position])
            room.append(width - lengths[position])
    return lanes


@dataclass
class PackedInputs:
    """One packed forward pass: ``ids`` / ``positions`` of shape ``[lanes, width]``, and where each
    row starts (``lane``, ``start``)."""

    ids: "object"
    positions: "object"
    lane: list[int]
    start: list[int]
    lengths: list[int]


def packed_inputs(rows: list[list[int]], *, pack_length: int | None) -> PackedInputs:
    """Token ids and restarting position ids of ``rows`` packed into lanes. A lane's unused tail
    is filler with its own positions 0, 1, ... (a segment of its own, never read)."""
    import torch

    lengths = [len(row) for row in rows]
    lanes = pack_lanes(lengths, pack_length=pack_length)
    width = max(sum(lengths[i] for i in lane) for lane in lanes)
    ids = torch.zeros((len(lanes), width), dtype=torch.long)
    positions = torch.zeros((len(lanes), width), dtype=torch.long)
    lane_of, start_of = [0] * len(rows), [0] * len(rows)
    for number, lane in enumerate(lanes):
        cursor = 0
        for i in lane:
            ids[number, cursor:cursor + lengths[i]] = torch.tensor(rows[i])
            positions[number, cursor:cursor + lengths[i]] = torch.arange(lengths[i])
            lane_of[i], start_of[i] = number, cursor
            cursor += lengths[i]
        positions[number, cursor:] = torch.arange(width - cursor)
    return PackedInputs(ids, positions, lane_of, start_of, lengths)


# -- variable-length attention on a GPU --------------------------------------------------------

def _kernel():
    """PyTorch's variable-length flash attention, or None where this torch has none."""
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn


def _causal(kernel) -> dict:
    """The causal switch of ``varlen_attn``: ``window_size=(-1, 0)`` in newer torch, ``is_causal``
    in the first releases that had it."""
    parameters = inspect.signature(kernel).parameters
    return {"window_size": (-1, 0)} if "window_size" in parameters else {"is_causal": True}


def use_varlen(device, dtype) -> bool:
    """Whether packed passes run as one lane through the varlen kernel: on CUDA, in a half
    precision (flash attention has no float32 kernel), with a torch that provides it."""
    import torch

    return device.type == "cuda" and dtype in (torch.bfloat16, torch.float16) and _kernel() is not None


def varlen_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """An ``AttentionInterface`` function: the one-lane pass ``[1, heads, tokens, dim]`` cut into
    rows by ``cu_seq_lens_q`` (what ``transformers`` passes to its flash-attention path)."""
    from transformers.integrations.sdpa_attention import repeat_kv

    kernel = _kernel()
    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)  # every torch's kernel takes equal heads
    cu, longest = kwargs["cu_seq_lens_q"], kwargs["max_length_q"]
    tokens_first = [x[0].transpose(0, 1).contiguous() for x in (query, key, value)]  # [tokens, heads, dim]
    output = kernel(*tokens_first, cu, cu, longest, longest, scale=scaling, **_causal(kernel))
    return output[None], None  # [1, tokens, heads, dim], as transformers' attention functions return


def varlen_kwargs(lengths, device) -> dict:
    """The flash-attention keyword arguments of one lane holding rows of ``lengths``."""
    import torch

    cu = torch.zeros(len(lengths) + 1, dtype=torch.int32)
    cu[1:] = torch.tensor(lengths).cumsum(0)
    cu = cu.to(device)
    return {"cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": max(lengths), "max_length_k": max(lengths)}


@contextmanager
def attention_implementation(model, name: str):
    """Run ``model`` with attention ``name`` (registered if it is ours), then restore its own."""
    from transformers import AttentionInterface

    if name == VARLEN_ATTENTION and name not in AttentionInterface._global_mapping:
        AttentionInterface.register(VARLEN_ATTENTION, varlen_attention)
    previous = model.config._attn_implementation
    model.set_attn_implementation(name)
    try:
        yield
    finally:
        model.set_attn_implementation(previous)
