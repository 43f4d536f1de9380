"""The scoring engine: s(x) = sum of log p(query token | prompt, earlier query tokens).

Each text is ``BOS + prompt`` followed by ``query + EOS``; only the query tokens and the final
EOS are scored (Godbole & Jia, 2023). What makes it fast and exact:

* texts are tokenised once and sorted by length; a forward pass is either a padded batch (little
  padding) or padding-free: rows packed with restarting position ids, attention never crossing
  rows, passes planned by tokens (:mod:`~split_builders.signals.lm.packing`; the default);
* position ids follow each row, so padding side, packing and batch composition do not change a
  score beyond float rounding;
* the vocabulary projection runs only on positions that predict a query token, in float32 even
  when the model runs in bfloat16 / float16, a chunk of positions at a time: log p is the target
  logit minus a logsumexp over the vocabulary, never a full log-softmax;
* batches are fixed before any work is shared out: with N processes, process r scores batches
  r, r+N, ... so every example is computed in the very same batch whatever N is, and the gathered
  scores are identical to a one-process run;
* finished batches are checkpointed (every 30 s, and on Ctrl-C or SIGTERM before stopping), so an
  interrupted run resumes where it stopped and repeats no finished batch, and the final scores are
  cached on disk keyed by (texts, model weights, dtype).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.splits import check_number
from split_builders.cache import atomic_write, load_arrays, save_arrays
from split_builders.distributed import process_state, sigterm_as_interrupt
from split_builders.errors import EmptyTextError, InvalidParameterError, ModelLoadError
from split_builders.progress import progress_bar

SCORER_VERSION = 2  # bump when a change alters scores, so stale cache entries are not reused


@dataclass
class Encoded:
    """Token ids of one example and where its query starts."""

    ids: list[int]
    query_start: int


def encode(tokenizer, prompts, queries, *, max_length: int) -> list[Encoded]:
    """Tokenise (prompt, query) pairs as ``BOS prompt | query EOS``.

    Prompt and query are tokenised separately (as a text pair), so the query's tokens do not
    depend on the prompt. A prompt too long for the context loses tokens from its left (after
    BOS); a query that does not fit at all is an error.
    """
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ModelLoadError("the tokenizer has neither an EOS nor a BOS token, which scoring needs "
                             "(s(x) ends with EOS); pick a causal LM whose tokenizer defines one")
    prompt_ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    query_ids = tokenizer(list(queries), add_special_tokens=False)["input_ids"]
    encoded = []
    for i, (p, q) in enumerate(zip(prompt_ids, query_ids)):
        if not q:
            raise EmptyTextError(f"row {i}: the query {queries[i]!r} has no tokens to score")
        query = q + [eos]
        if len(query) + 1 > max_length:
            raise InvalidParameterError(
                f"row {i}: the query alone has {len(query)} tokens, more than the model's context "
                f"({max_length}) allows after BOS; no query tokens would be left after truncation")
        room = max_length - 1 - len(query)
        prompt = [bos] + (p[len(p) - room:] if len(p) > room else p)
        encoded.append(Encoded(ids=prompt + query, query_start=len(prompt)))
    return encoded


def plan_batches(encoded: list[Encoded], *, batch_size: int, max_batch_tokens: int) -> list[np.ndarray]:
    """Group examples of similar length: longest first, at most ``batch_size`` examples and
    ``max_batch_tokens`` padded tokens per batch (a single longer example still gets a batch;
    :func:`~split_builders.signals.lm.packing.plan_passes`)."""
    from split_builders.signals.lm.packing import plan_passes

    return plan_passes([len(e.ids) for e in encoded], batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                       padded=True)


def model_context_length(model) -> int:
    config = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return 2048


PACKINGS = ("auto", "padded", "packed")
# Longest lane of a packed pass where attention takes a dense block mask (CPU; float32 on a GPU):
# its attention costs the lane's length squared, so short lanes keep that near a padded batch's.
DENSE_PACK_LENGTH = 256
# Most logits alive at once in the chunked log-softmax (256 MiB in float32): ~1,300 positions of a
# 50k vocabulary, enough for full-width matrix products on a GPU.
LOGIT_CHUNK = 1 << 26


def resolve_packing(packing: str) -> str:
    """``"padded"`` or ``"packed"``; ``auto`` is packed (on a CPU, lanes of 256 tokens measured
    1.3x padded batches in float32 and level in bfloat16: ``benchmarks/scoring.py --packing``)."""
    if packing not in PACKINGS:
        raise InvalidParameterError(f"packing must be one of {', '.join(PACKINGS)}, got {packing!r}")
    if packing != "auto":
        return packing
    return "packed"


def target_logprobs(hidden, targets, weight, bias=None, *, chunk: int = LOGIT_CHUNK):
    """log p(target) = logit[target] - logsumexp(logits) for each row of ``hidden``, in ``weight``'s
    precision (float32, or float64 for a float64 model), projecting a chunk of rows at a time so
    that at most ``chunk`` logits exist at once (never the full [positions x vocabulary] log-softmax)."""
    import torch

    rows = max(1, chunk // weight.shape[0])
    out = torch.empty(len(targets), dtype=weight.dtype, device=hidden.device)
    for start in range(0, len(targets), rows):
        logits = hidden[start:start + rows].to(weight.dtype) @ weight.T
        if bias is not None:
            logits = logits + bias
        picked = logits.gather(1, targets[start:start + rows, None])[:, 0]
        out[start:start + rows] = picked - torch.logsumexp(logits, dim=-1)
    return out


class LikelihoodScorer:
    """Score (prompt, query) pairs with a causal LM.

    Parameters
    ----------
    model, tokenizer
        A ``transformers`` causal LM (in eval mode) and its tokenizer.
    batch_size : int, default=32
        Most examples per forward pass (a GPU wants more: packed passes are then bounded by tokens).
    max_batch_tokens : int, default=8192
        Most tokens per forward pass (padded: counting the padding).
    padding_side : {"right", "left"}, default="right"
        Where padding goes; scores do not depend on it (a test checks).
    packing : {"auto", "padded", "packed"}, default="auto"
        ``padded``: length-sorted batches padded to their longest row. ``packed``: no padding;
        rows concatenated with restarting position ids and attention that never crosses rows
        (:mod:`~split_builders.signals.lm.packing`), passes planned by tokens. ``auto``: packed.
    pack_length : int, optional
        Longest lane of a packed pass when attention takes a dense block mask (default 256); a
        GPU in bfloat16 / float16 runs one lane per pass through varlen attention instead.
    """

    def __init__(self, model, tokenizer, *, batch_size: int = 32, max_batch_tokens: int = 8192,
                 padding_side: str = "right", packing: str = "auto", pack_length: int | None = None):
        import torch

        from split_builders.signals.lm.packing import use_varlen

        batch_size = check_number(batch_size, "batch_size", integer=True, minimum=1)
        max_batch_tokens = check_number(max_batch_tokens, "max_batch_tokens", integer=True, minimum=1)
        pack_length = check_number(pack_length, "pack_length", integer=True, minimum=1, allow_none=True)
        if padding_side not in ("right", "left"):
            raise InvalidParameterError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        self.model, self.tokenizer = model, tokenizer
        self.batch_size, self.max_batch_tokens, self.padding_side = batch_size, max_batch_tokens, padding_side
        self.max_length = model_context_length(model)
        self.device = next(model.parameters()).device
        self.packing = resolve_packing(packing)
        # One lane per pass through varlen attention where the kernel exists, else lanes of pack_length.
        self.varlen = self.packing == "packed" and use_varlen(self.device, next(model.parameters()).dtype)
        self.pack_length = None if self.varlen else (pack_length or DENSE_PACK_LENGTH)
        head = model.get_output_embeddings()
        # Only the positions that predict query tokens need the vocabulary projection: run the
        # body, pick those positions, project them in float32 (float64 for a float64 model). Checked
        # once against the full model (a model that post-processes its logits falls back to the plain
        # forward).
        self._precision = torch.promote_types(next(model.parameters()).dtype, torch.float32)
        linear = isinstance(head, torch.nn.Linear)
        self._head_weight = head.weight.detach().to(self._precision) if linear else None
        self._head_bias = head.bias.detach().to(self._precision) if linear and head.bias is not None else None
        self._shortcut = self._head_weight is not None and self._shortcut_matches()

    def plan(self, encoded: list[Encoded]) -> list[np.ndarray]:
        """The forward passes of ``encoded`` for this scorer's packing (fixed before any sharding)."""
        if self.packing == "packed":
            from split_builders.signals.lm.packing import plan_packs

            return plan_packs([len(e.ids) for e in encoded], max_batch_tokens=self.max_batch_tokens,
                              batch_size=self.batch_size)
        return plan_batches(encoded, batch_size=self.batch_size, max_batch_tokens=self.max_batch_tokens)

    # -- one batch -----------------------------------------------------------------------
    def _padded(self, batch: list[Encoded]):
        """Model inputs of a padded pass and where each example starts: ``(kwargs, rows, starts)``."""
        import torch

        width = max(len(e.ids) for e in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)  # pad id is masked out: any id works
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        offsets = []
        for row, example in enumerate(batch):
            offset = width - len(example.ids) if self.padding_side == "left" else 0
            ids[row, offset:offset + len(example.ids)] = torch.tensor(example.ids)
            mask[row, offset:offset + len(example.ids)] = 1
            offsets.append(offset)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        inputs = {"input_ids": ids.to(self.device), "attention_mask": mask.to(self.device),
                  "position_ids": positions.to(self.device)}
        return inputs, list(range(len(batch))), offsets

    def _packed(self, batch: list[Encoded]):
        """Model inputs of a packed pass (``attention_mask=None``: ``transformers`` reads the row
        boundaries from the restarting position ids) and where each example starts."""
        from split_builders.signals.lm.packing import packed_inputs, varlen_kwargs

        packed = packed_inputs([e.ids for e in batch], pack_length=self.pack_length)
        inputs = {"input_ids": packed.ids.to(self.device), "attention_mask": None,
                  "position_ids": packed.positions.to(self.device)}
        if self.varlen:
            inputs.update(varlen_kwargs(packed.lengths, self.device))
        return inputs, packed.lane, packed.start

    def _forward(self, module, inputs):
        if not self.varlen:
            return module(**inputs, use_cache=False)
        from split_builders.signals.lm.packing import VARLEN_ATTENTION, attention_implementation

        with attention_implementation(self.model, VARLEN_ATTENTION):
            return module(**inputs, use_cache=False)

    def _token_logprobs(self, batch: list[Encoded], *, shortcut: bool):
        """log p of every query token (and EOS) of the batch, and the example each belongs to."""
        import torch

        inputs, rows, starts = self._packed(batch) if self.packing == "packed" else self._padded(batch)
        lane, col, targets, owner = [], [], [], []
        for number, (example, row, start) in enumerate(zip(batch, rows, starts)):
            count = len(example.ids) - example.query_start
            lane.extend([row] * count)
            # the hidden state before a token predicts it (ranges and slices: no Python step per token)
            col.extend(range(start + example.query_start - 1, start + len(example.ids) - 1))
            targets.extend(example.ids[example.query_start:])
            owner.extend([number] * count)
        where = (torch.tensor(lane, device=self.device), torch.tensor(col, device=self.device))
        targets = torch.tensor(targets, device=self.device)
        if shortcut:
            hidden = self._forward(self.model.base_model, inputs).last_hidden_state[where]
            token_lp = target_logprobs(hidden, targets, self._head_weight, self._head_bias)
        else:  # the model's own logits, whatever its head does
            logits = self._forward(self.model, inputs).logits[where].to(self._precision)
            token_lp = logits.gather(1, targets[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
        return token_lp.double().cpu().numpy(), np.asarray(owner)

    def score_batch(self, batch: list[Encoded]) -> np.ndarray:
        """s(x) of each example of one batch (one forward pass), as float64."""
        import torch

        with torch.inference_mode():
            token_lp, owner = self._token_logprobs(batch, shortcut=self._shortcut)
        return np.bincount(owner, weights=token_lp, minlength=len(batch))

    def _shortcut_matches(self) -> bool:
        """Whether the shortcut may stand for the model's logits: on a small probe, the logits are the
        head's projection of the last hidden state, in the model's own precision
        (:func:`~split_builders.signals.lm.linear_ce.logits_are_projection`)."""
        import torch

        from split_builders.signals.lm.linear_ce import logits_are_projection

        probe = [Encoded(ids=[1, 2, 3, 4, 5, 6], query_start=3), Encoded(ids=[6, 5, 4], query_start=1)]
        vocab = self._head_weight.shape[0]
        probe = [Encoded(ids=[i % vocab for i in e.ids], query_start=e.query_start) for e in probe]
        inputs, _, _ = self._packed(probe) if self.packing == "packed" else self._padded(probe)
        with torch.inference_mode():
            hidden = self._forward(self.model.base_model, inputs).last_hidden_state
            logits = self._forward(self.model, inputs).logits
        return logits_are_projection(self.model, logits, hidden)

    # -- many examples --------------------------------------------------------------------
    def score(self, prompts, queries, *, progress: bool = False) -> np.ndarray:
        """s(x) of every (prompt, query) pair, in input order."""
        return self.score_encoded(encode(self.tokenizer, prompts, queries, max_length=self.max_length),
                                  progress=progress)

    def score_encoded(self, encoded: list[Encoded], *, progress: bool = False) -> np.ndarray:
        """s(x) of every encoded example, in input order."""
        scores = np.full(len(encoded), np.nan)
        for batch in progress_bar(self.plan(encoded), description="scoring", unit="batch", enabled=progress):
            scores[batch] = self.score_batch([encoded[i] for i in batch])
        return scores


# -- cached, resumable, distributed scoring -------------------------------------------------

def texts_digest(prompts, queries) -> str:
    digest = hashlib.sha256()
    for prompt, query in zip(prompts, queries):
        digest.update(prompt.encode() + b"\0" + query.encode() + b"\1")
    return digest.hexdigest()


def cache_key(prompts, queries, *, model_identity: str, dtype: str, batch_size: int, max_batch_tokens: int,
              packing: str = "padded", engine: dict | None = None) -> str:
    """Key of a score file: the exact texts, the exact weights, the numeric precision, the engine
    (:func:`~split_builders.signals.lm.engines.engine_record`: empty for PyTorch, so those keys are
    unchanged) and the batch plan and packing (scores are reproducible to the bit only for the same
    passes)."""
    fields = {"texts": texts_digest(prompts, queries), "model": model_identity, "dtype": dtype,
              "batch_size": batch_size, "max_batch_tokens": max_batch_tokens, "packing": packing,
              "scorer": SCORER_VERSION}
    if engine:
        fields["engine"] = engine
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


@dataclass
class ScoreRun:
    """What :func:`compute_scores` did: the scores and how they were obtained."""

    scores: np.ndarray
    cache_file: Path
    from_cache: bool
    num_processes: int
    resumed_batches: int = 0
    packing: str = "padded"




def _scorer(model_ref, *, dtype: str, engine: dict, device, batch_size: int, max_batch_tokens: int, packing: str):
    """The scorer of ``dtype``: :class:`LikelihoodScorer` on the PyTorch model, or CTranslate2's int8 one."""
    if engine:
        from functools import partial

        from split_builders.signals.lm.engines import CT2Scorer

        return CT2Scorer(model_ref, device=device, context_length=model_context_length,
                         plan=partial(plan_batches, batch_size=batch_size, max_batch_tokens=max_batch_tokens))
    from split_builders.signals.lm.models import load_model, torch_dtype

    loaded = load_model(model_ref, dtype=torch_dtype(dtype), device=device)
    return LikelihoodScorer(loaded.model, loaded.tokenizer, batch_size=batch_size, max_batch_tokens=max_batch_tokens,
                            packing=packing)


def compute_scores(prompts, queries, *, model_ref, cache_dir: Path, dtype: str = "float32",
                   device: str | None = None, batch_size: int = 32, max_batch_tokens: int = 8192,
                   checkpoint_seconds: float = 30.0, progress: bool = True,
                   stop_after_batches: int | None = None, packing: str = "auto") -> ScoreRun:
    """Score every pair once, with caching, checkpoints and sharding over processes.

    Parameters
    ----------
    prompts, queries : list of str
    model_ref : split_builders.signals.lm.models.ModelRef
        The model is loaded only when the scores are not cached yet.
    cache_dir : Path
        Folder of score files (``<key>.npy``) and in-progress checkpoints.
    dtype : {"float32", "bfloat16", "float16", "int8"}
        int8 scores on the CPU with CTranslate2 (:mod:`split_builders.signals.lm.engines`).
    device : str, optional
        ``"cpu"`` or ``"cuda"``; default: what ``accelerate`` picks.
    packing : {"auto", "padded", "packed"}
        Padded or padding-free forward passes (:class:`LikelihoodScorer`); ``auto``: packed.
        Part of the cache key.
    checkpoint_seconds : float
        Save progress when this many seconds have passed since the last save (and always after the
        last batch): a ``kill -9`` loses at most this much work, however small the batches. Ctrl-C
        and SIGTERM lose none: every finished batch is saved before the run stops.
    stop_after_batches : int, optional
        Stop (without a final file) after this many new batches: simulates an interruption in tests.

    Under ``torchrun`` / ``accelerate launch`` every process calls this function; each scores its
    share of the batches, and every process returns the full, gathered scores.
    """
    from accelerate.utils import gather_object

    from split_builders.signals.lm.engines import engine_record

    engine = engine_record(dtype)  # an unknown dtype, or int8 without its engine, is one line
    state = process_state(device)
    packing = resolve_packing(packing)  # checked whatever the engine
    if engine:
        packing = "padded"  # CTranslate2 pads its own batches: packing is PyTorch's
    key = cache_key(prompts, queries, model_identity=model_ref.identity, dtype=dtype,
                    batch_size=batch_size, max_batch_tokens=max_batch_tokens, packing=packing, engine=engine)
    final = Path(cache_dir) / f"{key}.scores"
    cached = load_arrays(final)  # None when absent or damaged (then it is recomputed)
    if cached is not None and cached["scores"].shape == (len(prompts),):
        return ScoreRun(cached["scores"], final, True, state.num_processes, packing=packing)

    # The default model is converted from GGUF once, by the main process: under torch.distributed
    # transformers saves the weights from rank 0 only, so a conversion by another rank is incomplete.
    with state.main_process_first():
        scorer = _scorer(model_ref, dtype=dtype, engine=engine, device=state.device, batch_size=batch_size,
                         max_batch_tokens=max_batch_tokens, packing=packing)
    encoded = encode(scorer.tokenizer, prompts, queries, max_length=scorer.max_length)
    batches = scorer.plan(encoded)
    mine = list(range(state.process_index, len(batches), state.num_processes))

    checkpoint = Path(cache_dir) / f"{key}.partial" / f"rank{state.process_index}-of-{state.num_processes}"
    saved = load_arrays(checkpoint)
    done = saved["scores"] if saved is not None and saved["scores"].shape == (len(encoded),) else np.full(len(encoded), np.nan)
    todo = [b for b in mine if np.isnan(done[batches[b]]).any()]
    resumed = len(mine) - len(todo)
    if resumed and state.is_main_process:
        print(f"resuming: {resumed} of {len(mine)} batches were scored before the interruption", file=sys.stderr)
    new_batches, last_save, saved_batches = 0, time.monotonic(), 0
    try:
        with sigterm_as_interrupt():  # progress is saved on SIGTERM as on Ctrl-C
            for b in progress_bar(todo, description="scoring", unit="batch",
                                  enabled=progress and state.is_main_process):
                done[batches[b]] = scorer.score_batch([encoded[i] for i in batches[b]])
                new_batches += 1
                stopping = stop_after_batches is not None and new_batches >= stop_after_batches
                if stopping or new_batches == len(todo) or time.monotonic() - last_save >= checkpoint_seconds:
                    save_arrays(checkpoint, scores=done)
                    last_save, saved_batches = time.monotonic(), new_batches
                if stopping:
                    raise KeyboardInterrupt(f"stopped after {new_batches} batches (stop_after_batches)")
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: keep every finished batch (not only those of the last timed checkpoint).
        if new_batches > saved_batches:
            save_arrays(checkpoint, scores=done)
        print(f"resplit: scoring interrupted; {resumed + new_batches} of {len(mine)} batches are saved in "
              f"{checkpoint.parent}: run the same command again to resume", file=sys.stderr, flush=True)
        raise

    indices = np.concatenate([batches[b] for b in mine]) if mine else np.array([], dtype=np.int64)
    gathered = gather_object([(indices.tolist(), done[indices].tolist())])
    scores = np.full(len(encoded), np.nan)
    for part_indices, part_scores in gathered:
        scores[part_indices] = part_scores
    if np.isnan(scores).any():
        raise RuntimeError("some examples were not scored by any process")  # a bug, not bad input
    if state.is_main_process:
        save_arrays(final, scores=scores)
        meta = {"model": model_ref.identity, "dtype": dtype, "rows": len(scores), "batch_size": batch_size,
                "max_batch_tokens": max_batch_tokens, "packing": packing, "num_processes": state.num_processes,
                **engine}
        atomic_write(final.with_suffix(".json"), json.dumps(meta, indent=2, sort_keys=True).encode())
    state.wait_for_everyone()
    if checkpoint.is_file():
        checkpoint.unlink()
    return ScoreRun(scores, final, False, state.num_processes, resumed, packing)
