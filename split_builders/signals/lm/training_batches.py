"""The fine-tuning's batches: which rows make each optimizer step and each forward pass, and the tensors.

A fold's training rows are read in seeded epochs (:func:`~split_builders.signals.lm.kfold.epochs`).
An optimizer step takes either ``batch_size`` rows (the paper's 32 examples) or, with a token
budget, rows until the next one would exceed ``batch_tokens`` real tokens. Each step is then cut
into ``num_processes x accumulation`` contiguous micro-batches, one per forward pass, so the
``Trainer`` (per-device batch of one micro-batch, sequential sampling) sees every global step's
rows exactly once whatever the number of processes.

A micro-batch becomes tensors in one of two ways, with the same loss positions (the query and the
EOS, as :class:`~split_builders.signals.lm.scoring.LikelihoodScorer` scores):

* :class:`PaddedCollator`: rows right-padded to the longest, position ids from the mask;
* :class:`PackedCollator`: rows concatenated into one sequence with position ids restarting at
  each row (``transformers``' ``DataCollatorWithFlattening``), no padding at all. ``transformers``'
  masking utils read the restarts as sequence boundaries (a block-diagonal causal mask under
  sdpa/eager), so no row attends to another; on a GPU in bfloat16 / float16 the rows' boundaries go
  with the batch and attention runs through PyTorch's varlen kernel, as scoring's does
  (:mod:`~split_builders.signals.lm.packing`): no mask, no FLOP across rows.
"""

from __future__ import annotations

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.signals.lm.kfold import epochs, training_schedule


# -- step plans ------------------------------------------------------------------------------

def step_rows(fit_rows: np.ndarray, lengths: np.ndarray, *, steps: int, batch_size: int, batch_tokens: int | None,
              seed: int, fold: int) -> list[np.ndarray]:
    """The rows of each of ``steps`` optimizer steps, in the order they are read.

    ``batch_tokens`` None: ``batch_size`` rows a step (:func:`training_schedule`). Otherwise rows
    are taken from the same seeded epochs until the next row would take the step past
    ``batch_tokens`` tokens (``lengths`` gives each row's tokens; a row longer than the budget is a
    step of its own). Either way the concatenated steps are a prefix of the epochs, so every row is
    visited once per epoch.
    """
    if batch_tokens is None:
        schedule = training_schedule(fit_rows, steps=steps, batch_size=batch_size, seed=seed, fold=fold)
        return np.split(schedule, steps)
    plan, current, used = [], [], 0
    for epoch in epochs(fit_rows, seed=seed, fold=fold):
        for row, tokens in zip(epoch.tolist(), lengths[epoch].tolist()):
            if current and used + tokens > batch_tokens:
                plan.append(np.array(current, dtype=np.int64))
                if len(plan) == steps:
                    return plan
                current, used = [], 0
            current.append(row)
            used += tokens


def accumulation_steps(plan: list[np.ndarray], lengths: np.ndarray, *, micro_batch_tokens: int | None,
                       num_processes: int) -> int:
    """Forward passes per process per step so that one holds about ``micro_batch_tokens`` tokens
    (None: one)."""
    if micro_batch_tokens is None:
        return 1
    most = max(int(lengths[rows].sum()) for rows in plan)
    return max(1, -(-most // (num_processes * micro_batch_tokens)))


def micro_batches(plan: list[np.ndarray], lengths: np.ndarray, *, parts: int, by_tokens: bool) -> list[np.ndarray]:
    """Every step cut into ``parts`` contiguous, non-empty micro-batches (equal row counts, or
    balanced by tokens when ``by_tokens``), step after step."""
    out = []
    for step, rows in enumerate(plan):
        if len(rows) < parts:
            raise InvalidParameterError(
                f"optimizer step {step} has {len(rows)} row(s), fewer than the {parts} forward passes it is shared "
                "over (processes x gradient accumulation): raise batch_tokens (or batch_size) or micro_batch_tokens")
        if not by_tokens:
            out.extend(np.array_split(rows, parts))
            continue
        cumulative = np.cumsum(lengths[rows])
        cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, parts) / parts, side="right")
        for i in range(parts - 1):  # non-empty parts: strictly increasing cuts in [1, len - 1]
            low = cuts[i - 1] + 1 if i else 1
            cuts[i] = min(max(cuts[i], low), len(rows) - (parts - 1 - i))
        out.extend(np.split(rows, cuts))
    return out


# -- datasets ---------------------------------------------------------------------------------

def example(encoded, row: int) -> dict:
    """One encoded row as the collators read it."""
    return {"row": int(row), "input_ids": encoded[row].ids, "query_start": encoded[row].query_start}


class Examples:
    """A map-style dataset over encoded rows, in a given order (rows may repeat)."""

    def __init__(self, encoded, rows: np.ndarray):
        self.encoded, self.rows = encoded, np.asarray(rows, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict:
        return example(self.encoded, self.rows[index])


class MicroBatches:
    """A map-style dataset whose items are whole micro-batches (lists of rows as :class:`Examples`
    gives them): the ``Trainer`` takes one item per forward pass."""

    def __init__(self, encoded, batches: list[np.ndarray]):
        self.encoded, self.batches = encoded, batches

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> list[dict]:
        return [example(self.encoded, row) for row in self.batches[index]]


# -- collators --------------------------------------------------------------------------------

class PaddedCollator:
    """Right-pad the rows; labels are the token ids on the query + EOS positions, -100 elsewhere.

    Position ids follow the attention mask, as in :class:`LikelihoodScorer`, so training sees the
    positions scoring uses. The model shifts the labels itself (position t predicts label t).
    """

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    @staticmethod
    def rows(features: list) -> list[dict]:
        """The rows of a batch: single rows (:class:`Examples`) or micro-batches (:class:`MicroBatches`)."""
        return [row for feature in features for row in (feature if isinstance(feature, list) else [feature])]

    def __call__(self, features: list) -> dict:
        import torch

        features = self.rows(features)
        width = max(len(f["input_ids"]) for f in features)
        ids = torch.full((len(features), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(features), width), dtype=torch.long)
        labels = torch.full((len(features), width), -100, dtype=torch.long)
        for row, feature in enumerate(features):
            tokens = torch.tensor(feature["input_ids"], dtype=torch.long)
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1
            labels[row, feature["query_start"]:len(tokens)] = tokens[feature["query_start"]:]
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        return {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "labels": labels}


class PackedCollator(PaddedCollator):
    """Concatenate the rows into one sequence (shape ``[1, tokens]``), no padding, no attention mask.

    ``transformers``' ``DataCollatorWithFlattening`` builds ``input_ids``, ``position_ids``
    (restarting at 0 on each row) and ``labels`` (-100 on each row's first token, so no row
    predicts the next one's start; the prompt is -100 anyway). ``rows`` (the dataset rows, first
    key) lets the ``Trainer`` weigh a held-out batch by its rows, as it weighs a padded one; the
    trainer drops it before the forward pass.
    """

    def __init__(self, pad_id: int = 0, *, varlen: bool = False):
        from transformers import DataCollatorWithFlattening

        super().__init__(pad_id)
        self.flatten = DataCollatorWithFlattening(return_position_ids=True, separator_id=-100)
        self.varlen = varlen  # add the rows' boundaries for varlen attention (a GPU: packing.varlen_attention)

    def __call__(self, features: list) -> dict:
        return self.pack(self.rows(features))

    def pack(self, features: list[dict]) -> dict:
        """The packed tensors of rows as :func:`example` gives them."""
        import torch

        flat = self.flatten([{"input_ids": f["input_ids"],
                              "labels": [-100] * f["query_start"] + f["input_ids"][f["query_start"]:]}
                             for f in features])
        packed = {"rows": torch.tensor([f["row"] for f in features], dtype=torch.long), **flat}
        if self.varlen:
            from split_builders.signals.lm.packing import varlen_kwargs

            packed.update(varlen_kwargs([len(f["input_ids"]) for f in features], torch.device("cpu")))
        return packed
