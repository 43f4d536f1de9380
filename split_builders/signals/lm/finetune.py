"""Cross-fitted fine-tuned scoring: the Likelihood Splits paper's ``ll_split`` signal.

The rows are dealt into k seeded folds. For each fold f, the causal LM is fine-tuned on the
other folds and then scores fold f, so no example is scored by a model that saw it (Godbole &
Jia, 2023, use k = 3). Fine-tuning and scoring use the very same spans: every example is
``BOS + prompt | query + EOS`` from :func:`split_builders.signals.lm.scoring.encode`; the training loss
covers exactly the query tokens and the EOS (the positions :class:`LikelihoodScorer` scores),
and the held-out fold is scored by :class:`LikelihoodScorer`, the code that computes the
prompted scores.

Training follows the paper: ``transformers.Trainer``, AdamW, constant learning rate 2e-5 with
no warmup, 32 examples per (global) batch, evaluation every 64 steps on a seeded 10% of the
training folds, the checkpoint with the lowest held-out loss (perplexity) kept, early stopping
after 10 evaluations without improvement, at most ``max_steps`` steps.

What makes it fast on an accelerator (:mod:`split_builders.signals.lm.training_batches`): rows are packed
into one sequence per forward pass (no FLOP on padding; ``packing=False`` pads as before), the
loss projects only the labelled positions' hidden states onto the vocabulary, a chunk at a time
(:mod:`split_builders.signals.lm.linear_ce`), the global batch can be given in tokens
(``batch_tokens``) and split into forward passes of about ``micro_batch_tokens`` tokens
(gradient accumulation), and ``dtype="bfloat16"`` trains in mixed precision.

What makes it safe to run for hours:

* each finished fold is checkpointed (its scores as ``.npy`` written atomically, then a small
  JSON report that marks the fold done) in a work folder keyed by everything that determines the
  result, so a killed run resumes at the next unfinished fold and a changed input never reuses a
  stale fold; an unfinished fold restarts from its beginning;
* the Trainer's checkpoints (full model weights) are deleted once a fold is done, unless
  ``keep_models=True``, which keeps the best model of each fold;
* the order in which training rows are visited is fixed in advance (seeded epochs cut at exactly
  ``max_steps`` global batches, fed sequentially), so runs are reproducible to the bit on CPU,
  and N data-parallel processes see the same global batches as one process.

Under ``torchrun`` / ``accelerate launch`` every process calls :func:`finetune_scores`. The
Trainer trains data-parallel (per-process batch = ``batch_size // N``). The held-out fold is then
scored the way :func:`split_builders.signals.lm.scoring.compute_scores` does it: the batches are planned
once, process r scores batches r, r+N, ... and the scores are gathered to every process. Every
process holds the same trained weights after the all-reduced updates, every example is scored in
the very same batch whatever N is, and the work is shared (a fold of SNLI is 190k rows, so
scoring on the main process alone would leave N-1 accelerators idle). Only the main process
writes files.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from split_builders.splits import check_number
from split_builders.cache import cache_root, load_arrays, save_arrays
from split_builders.errors import InvalidParameterError, ModelLoadError
from split_builders.progress import progress_bar
from split_builders.signals.lm.kfold import assign_folds, check_k, holdout
from split_builders.signals.lm.training_batches import (
    Examples,
    MicroBatches,
    PackedCollator,
    PaddedCollator,
    accumulation_steps,
    micro_batches,
    step_rows,
)
from split_builders.signals.lm.scoring import (
    Encoded,
    LikelihoodScorer,
    encode,
    model_context_length,
    texts_digest,
)

FINETUNE_VERSION = 2  # bump when a change alters fine-tuned scores, so stale folds are not reused
# Most optimizer steps per fold. resplit's defaults, sized so that early stopping (not the cap)
# ends training on the full datasets; override with ``max_steps``.
DEFAULT_MAX_STEPS = {"snli": 3000, "boolq": 1000, None: 1000}
DTYPES = ("float32", "bfloat16", "float16")


def _bounded(default, **bounds):
    """A field of :class:`FinetuneOptions` checked by :func:`~split_builders.api.check_number`."""
    return field(default=default, metadata={"number": bounds})


@dataclass(frozen=True, kw_only=True)
class FinetuneOptions:
    """The settings of a k-fold fine-tuning run, validated when built (defaults: the paper's).

    Attributes
    ----------
    folds : int, default=3
        Number of folds k, 2 <= k <= number of rows.
    seed : int, default=0
        Seeds the folds, the held-out evaluation rows, the row order and the Trainer.
    max_steps : int, optional
        Most optimizer steps per fold (>= 1); None: the task's (:meth:`for_task`).
    batch_size : int, default=32
        Global examples per step; with N processes each takes ``batch_size // N`` (must divide).
    batch_tokens : int, optional
        The global batch in tokens instead: each step takes rows until the next would exceed it
        (``batch_size`` is then unused).
    micro_batch_tokens : int, optional
        About this many tokens per forward pass and process: a step is split into several forward
        passes (gradient accumulation) when it holds more; None: one forward pass per process.
    packing : bool, default=True
        Concatenate a forward pass's rows into one unpadded sequence and compute the loss with the
        chunked linear cross-entropy; False: right-padded rows and the model's own loss (resplit
        before version 2: same loss curve up to float rounding, a test checks).
    learning_rate : float, default=2e-5
        Constant, no warmup (AdamW, no weight decay).
    eval_steps : int, default=64
        Evaluate (and checkpoint) every this many steps, and at the last step.
    eval_fraction : float, default=0.1
        Share of the training folds held out to pick the best checkpoint, in (0, 1).
    patience : int, default=10
        Stop after this many evaluations without a lower held-out loss.
    score_batch_size, max_batch_tokens : int, default=32 and 8192
        The scoring batch plan (as :class:`LikelihoodScorer`); ``score_batch_size`` is also the
        per-process batch size of the held-out evaluation.
    keep_models : bool, default=False
        Keep each fold's best model in ``<work folder>/fold<f>-model``.
    work_dir : path-like, optional
        Root of the fold checkpoints (default: ``$RESPLIT_CACHE/finetune``); a run uses
        ``work_dir / <key>``.
    """

    folds: int = _bounded(3, integer=True, minimum=2)
    seed: int = _bounded(0, integer=True, minimum=0)
    max_steps: int | None = _bounded(None, integer=True, minimum=1)
    batch_size: int = _bounded(32, integer=True, minimum=1)
    batch_tokens: int | None = _bounded(None, integer=True, minimum=1)
    micro_batch_tokens: int | None = _bounded(None, integer=True, minimum=1)
    packing: bool = True
    learning_rate: float = _bounded(2e-5, minimum=0, exclusive=("minimum",))
    eval_steps: int = _bounded(64, integer=True, minimum=1)
    eval_fraction: float = _bounded(0.1, minimum=0, maximum=1, exclusive=("minimum", "maximum"))
    patience: int = _bounded(10, integer=True, minimum=1)
    score_batch_size: int = _bounded(32, integer=True, minimum=1)
    max_batch_tokens: int = _bounded(8192, integer=True, minimum=1)
    keep_models: bool = False
    work_dir: str | Path | None = None

    def __post_init__(self):
        for spec in fields(self):
            if "number" in spec.metadata:
                value = check_number(getattr(self, spec.name), spec.name, allow_none=spec.default is None,
                                     **spec.metadata["number"])
                object.__setattr__(self, spec.name, value)

    def for_task(self, task: str | None) -> "FinetuneOptions":
        """These options with ``max_steps`` filled in from the task's default when not given."""
        return self if self.max_steps is not None else replace(self, max_steps=default_max_steps(task))

    @property
    def work_root(self) -> Path:
        """The folder of every run's keyed work folder."""
        return Path(self.work_dir) if self.work_dir is not None else cache_root() / "finetune"

    def recorded(self) -> dict:
        """What provenance records: every setting except the local ones (work folder, kept models)."""
        return {name: value for name, value in asdict(self).items() if name not in _LOCAL}

    def hyperparameters(self) -> dict:
        """The training settings a work folder is keyed by besides the folds and the seed."""
        return {name: value for name, value in self.recorded().items() if name not in ("folds", "seed")}


_LOCAL = ("keep_models", "work_dir")  # settings that do not change the scores


@dataclass
class FinetuneRun:
    """What :func:`finetune_scores` did.

    Attributes
    ----------
    scores : numpy.ndarray of float64, shape (n_rows,)
        s(x) of every row under the model fine-tuned without its fold, in input order.
    folds : numpy.ndarray of int64, shape (n_rows,)
        The fold of each row.
    fold_reports : list of dict
        Per fold: rows, train_rows, eval_rows, steps, best_step, best_eval_loss, eval_losses and
        train_losses (``[step, loss]`` pairs), param_checksum (sum of the best model's
        parameters), seconds, num_processes.
    resumed_folds : int
        Folds read from the work folder instead of computed.
    num_processes : int
    work_dir : Path
        The keyed folder holding the fold checkpoints.
    options : FinetuneOptions
        The options the run used (``max_steps`` filled in).
    """

    scores: np.ndarray
    folds: np.ndarray
    fold_reports: list[dict] = field(default_factory=list)
    resumed_folds: int = 0
    num_processes: int = 1
    work_dir: Path | None = None
    options: FinetuneOptions | None = None


def default_max_steps(task: str | None) -> int:
    """The default step cap of a task (``snli``, ``boolq``; anything else gets the generic one)."""
    return DEFAULT_MAX_STEPS.get(task, DEFAULT_MAX_STEPS[None])


# -- validation and keys --------------------------------------------------------------------

def check_parameters(n_rows: int, options: FinetuneOptions, *, dtype, num_processes: int) -> None:
    """Raise :class:`InvalidParameterError` where ``options`` (validated on their own) do not fit
    ``n_rows`` rows on ``num_processes`` processes (no I/O: callers check before any work); ``dtype``
    None is not checked (not resolved yet)."""
    check_k(options.folds, n_rows)
    smallest_training_set = n_rows - -(-n_rows // options.folds)  # the rows outside the largest fold
    if smallest_training_set < 2:
        raise InvalidParameterError(
            f"with {n_rows} rows and k={options.folds}, a fold trains on {smallest_training_set} row(s); at least 2 are "
            "needed (one to train on, one to pick the best checkpoint): use more rows")
    if dtype is not None and dtype not in DTYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if options.batch_tokens is None and options.batch_size % num_processes:
        raise InvalidParameterError(
            f"batch_size ({options.batch_size}) is the global batch and must be divisible by the number of processes "
            f"({num_processes}): each process trains on batch_size // {num_processes} examples per step")


def work_key(prompts, queries, *, model_identity: str, k: int, seed: int, dtype: str, hyperparameters: dict) -> str:
    """Key of a work folder: the exact texts, weights, folds, seed, precision and training setup.

    The number of processes is not part of it: N processes train on the same global batches
    as one (results agree to float rounding of the gradient all-reduce).
    """
    payload = json.dumps({"texts": texts_digest(prompts, queries), "model": model_identity, "k": k, "seed": seed,
                          "dtype": dtype, "hyperparameters": hyperparameters, "version": FINETUNE_VERSION},
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


# -- files ----------------------------------------------------------------------------------

def _fold_file(folder: Path, fold: int) -> Path:
    return folder / f"fold{fold}.entry"


def _read_fold(folder: Path, fold: int, n_rows: int):
    """(scores, report) of a finished fold, or None (absent, damaged or of another size)."""
    saved = load_arrays(_fold_file(folder, fold))
    if saved is None or saved["scores"].shape != (n_rows,):
        return None
    return saved["scores"], json.loads(str(saved["report"]))


def _write_fold(folder: Path, fold: int, scores: np.ndarray, report: dict) -> None:
    """One checksummed entry per finished fold: its held-out scores and its JSON report."""
    save_arrays(_fold_file(folder, fold), scores=scores, report=np.array(json.dumps(report, sort_keys=True)))


# -- model ----------------------------------------------------------------------------------

def _load_tokenizer(model_ref):
    """The model's tokenizer with a pad token (EOS when it has none)."""
    from transformers import AutoTokenizer

    from split_builders.signals.lm.models import ensure_local

    ensure_local(model_ref)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_ref.path, trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot load the tokenizer of {model_ref.name!r} from {model_ref.path}: "
                             f"{str(error).splitlines()[0][:300]}") from None
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token_id is None:
            raise ModelLoadError(
                f"the tokenizer of {model_ref.name!r} has neither a pad nor an EOS token; fine-tuning needs one "
                "to pad batches and scoring needs EOS (s(x) ends with it): pick a causal LM that defines EOS")
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _context_length(model_ref) -> int:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_ref.path, trust_remote_code=False)
    return model_context_length(SimpleNamespace(config=config))


def _load_trainable(model_ref):
    """The model in float32 with gradients (mixed precision, if asked, is the Trainer's job)."""
    import torch

    from split_builders.signals.lm.models import load_causal_lm

    return load_causal_lm(model_ref, dtype=torch.float32)


def _param_checksum(model) -> float:
    """Sum of every parameter in float64: a cheap fingerprint to compare trained models."""
    return float(sum(p.detach().double().sum().item() for p in model.parameters()))


# -- one fold -------------------------------------------------------------------------------

def _training_arguments(output_dir: Path, options: FinetuneOptions, *, dtype: str, device, accumulation: int):
    import torch
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=1,  # one micro-batch (MicroBatches) per forward pass
        gradient_accumulation_steps=accumulation,
        per_device_eval_batch_size=options.score_batch_size,
        max_steps=options.max_steps,
        learning_rate=options.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        optim="adamw_torch",  # the unfused AdamW: the same arithmetic on every device
        weight_decay=0.0,
        eval_strategy="steps",
        eval_steps=options.eval_steps,
        save_strategy="steps",
        save_steps=options.eval_steps,
        save_total_limit=2,  # the best and the latest; deleted when the fold is done
        save_only_model=True,  # no optimizer state: an unfinished fold restarts from scratch
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        logging_strategy="steps",
        logging_steps=options.eval_steps,
        # The step plan fixes the order of the rows; sequential sampling keeps it.
        train_sampling_strategy="sequential",
        remove_unused_columns=False,
        report_to="none",
        seed=options.seed,
        data_seed=options.seed,
        disable_tqdm=True,  # the fold's own bar (_FoldProgress) instead of the Trainer's bars and raw dicts
        use_cpu=device == "cpu" or not torch.cuda.is_available(),  # as process_state: gloo on CPUs
        bf16=(dtype == "bfloat16"),
        fp16=(dtype == "float16"),
        dataloader_num_workers=0,
        dataloader_pin_memory=device != "cpu" and torch.cuda.is_available(),  # pinning needs an accelerator
        ddp_find_unused_parameters=False,  # every parameter gets a gradient: skip the extra graph walk
    )


def _fit(model_ref, encoded, *, fit_rows, eval_rows, fold: int, folder: Path, options: FinetuneOptions, dtype: str,
         device, num_processes: int, pad_id: int, progress: bool, verbose: bool = False, label: str = ""):
    """Fine-tune a fresh copy of the model on ``fit_rows``; returns (trainer, best model)."""
    from transformers import EarlyStoppingCallback, PrinterCallback

    from split_builders.signals.lm.linear_ce import chunked_loss_matches, trainer_class

    batches, accumulation = training_batches(encoded, fit_rows, options=options, fold=fold,
                                             num_processes=num_processes)
    args = _training_arguments(folder / f"fold{fold}-trainer", options, dtype=dtype, device=device,
                               accumulation=accumulation)
    model = _load_trainable(model_ref)
    collator = PackedCollator(pad_id) if options.packing else PaddedCollator(pad_id)
    trainer = trainer_class(options.packing)(
        model=model, args=args, train_dataset=MicroBatches(encoded, batches), eval_dataset=Examples(encoded, eval_rows),
        data_collator=collator,
        callbacks=[EarlyStoppingCallback(early_stopping_patience=options.patience),
                   _fold_progress(label or f"fold {fold + 1}", progress=progress)])
    if options.packing:
        trainer.chunked_loss = chunked_loss_matches(model)  # on the model's own attention: before any switch
    if not verbose:
        trainer.remove_callback(PrinterCallback)  # the Trainer's raw log dicts: --verbose only
    with _varlen_training(trainer, collator, dtype=dtype):
        trainer.train()
    return trainer, trainer.model


@contextlib.contextmanager
def _varlen_training(trainer, collator, *, dtype: str):
    """Packed training on a GPU in bfloat16 / float16 with attention through PyTorch's varlen kernel (the scorer's,
    :func:`~split_builders.signals.lm.packing.varlen_attention`, which has a backward): the collator adds the rows'
    boundaries and the model runs that attention for the training, then gets its own back. Elsewhere (a CPU, float32,
    a torch without the kernel, padded batches) nothing changes: the block-diagonal mask of ``transformers``."""
    import torch

    from split_builders.signals.lm.models import torch_dtype
    from split_builders.signals.lm.packing import VARLEN_ATTENTION, attention_implementation, use_varlen

    half = torch_dtype(dtype) if dtype in ("bfloat16", "float16") else torch.float32
    if not (isinstance(collator, PackedCollator) and use_varlen(torch.device(trainer.args.device), half)):
        yield
        return
    collator.varlen = True
    try:
        with attention_implementation(trainer.model, VARLEN_ATTENTION):
            yield
    finally:
        collator.varlen = False


def training_batches(encoded, fit_rows: np.ndarray, *, options: FinetuneOptions, fold: int,
                     num_processes: int) -> tuple[list[np.ndarray], int]:
    """(the rows of every forward pass, in the order the Trainer reads them; gradient accumulation
    steps) of a fold's training: ``max_steps`` optimizer steps (:func:`~split_builders.signals.lm.training_batches.step_rows`),
    each cut into ``num_processes x accumulation`` forward passes."""
    lengths = np.array([len(e.ids) for e in encoded])
    plan = step_rows(fit_rows, lengths, steps=options.max_steps, batch_size=options.batch_size,
                     batch_tokens=options.batch_tokens, seed=options.seed, fold=fold)
    accumulation = accumulation_steps(plan, lengths, micro_batch_tokens=options.micro_batch_tokens,
                                      num_processes=num_processes)
    return micro_batches(plan, lengths, parts=num_processes * accumulation,
                         by_tokens=options.batch_tokens is not None), accumulation


def _fold_progress(label: str, *, progress: bool):
    """A ``TrainerCallback``: one bar per fold (steps) and one line per evaluation, on the main process."""
    from transformers import TrainerCallback

    class FoldProgress(TrainerCallback):
        bar, best = None, float("inf")

        def on_train_begin(self, args, state, control, **kwargs):
            if progress and state.is_world_process_zero:
                self.bar = progress_bar(total=state.max_steps, description=label, unit="step")

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            if not state.is_world_process_zero or not metrics or "eval_loss" not in metrics:
                return
            loss = metrics["eval_loss"]
            mark = " (best so far)" if loss < self.best else f" (best {self.best:.4f})"
            self.best = min(self.best, loss)
            line = f"{label}, step {state.global_step}/{state.max_steps}: held-out loss {loss:.4f}{mark}"
            if self.bar is not None:
                self.bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)

        def on_train_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return FoldProgress()


def _score_rows(model, tokenizer, encoded, rows: np.ndarray, *, options: FinetuneOptions, dtype: str,
                state) -> np.ndarray:
    """s(x) of ``rows`` with the trained model, batches shared r::N over processes and gathered."""
    from accelerate.utils import gather_object

    from split_builders.signals.lm.models import torch_dtype

    model.eval()
    model.to(torch_dtype(dtype))
    # the scoring path itself (packed passes planned by tokens where training packs; padded batches otherwise)
    scorer = LikelihoodScorer(model, tokenizer, batch_size=options.score_batch_size,
                              max_batch_tokens=options.max_batch_tokens,
                              packing="packed" if options.packing else "padded")
    examples = [encoded[i] for i in rows]
    batches = scorer.plan(examples)
    mine = batches[state.process_index::state.num_processes]
    parts = [(batch.tolist(), scorer.score_batch([examples[i] for i in batch]).tolist()) for batch in mine]
    scores = np.full(len(rows), np.nan)
    for part in gather_object(parts) if state.num_processes > 1 else parts:
        scores[part[0]] = part[1]
    if np.isnan(scores).any():
        raise RuntimeError("some held-out examples were not scored by any process")  # a bug, not bad input
    return scores


def _history(trainer, key: str) -> list[list]:
    return [[log["step"], log[key]] for log in trainer.state.log_history if key in log and "step" in log]


def _fold_report(trainer, *, fold, rows, fit_rows, eval_rows, checksum, seconds, num_processes) -> dict:
    best = trainer.state.best_model_checkpoint
    match = re.search(r"checkpoint-(\d+)$", best or "")
    return {"fold": fold, "rows": len(rows), "train_rows": len(fit_rows), "eval_rows": len(eval_rows),
            "steps": trainer.state.global_step, "best_step": int(match.group(1)) if match else None,
            "best_eval_loss": trainer.state.best_metric, "eval_losses": _history(trainer, "eval_loss"),
            "train_losses": _history(trainer, "loss"), "param_checksum": checksum, "seconds": round(seconds, 3),
            "num_processes": num_processes}


@contextlib.contextmanager
def _quiet(progress: bool, verbose: bool = False):
    """Silence transformers' own loading/saving bars and its reports (weights loaded, missing or
    tied keys, ...) unless ``verbose``: a fold shows its bar and one line per evaluation."""
    from transformers.utils import logging as hf_logging

    was_enabled, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    if not verbose:
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if was_enabled:
            hf_logging.enable_progress_bar()


def _run_fold(model_ref, tokenizer, encoded, folds, fold: int, *, folder: Path, options: FinetuneOptions, dtype: str,
              device, state, progress: bool, verbose: bool = False):
    """Train without fold ``fold``, score it, write its checkpoint (main process); returns (scores, report)."""
    started = time.perf_counter()
    if state.is_main_process:  # checkpoints a killed run left behind must not be taken for this run's
        shutil.rmtree(folder / f"fold{fold}-trainer", ignore_errors=True)
    state.wait_for_everyone()
    rows = np.flatnonzero(folds == fold)
    fit_rows, eval_rows = holdout(np.flatnonzero(folds != fold), fraction=options.eval_fraction, seed=options.seed,
                                  fold=fold)
    trainer, model = _fit(model_ref, encoded, fit_rows=fit_rows, eval_rows=eval_rows, fold=fold, folder=folder,
                          options=options, dtype=dtype, device=device, num_processes=state.num_processes,
                          pad_id=tokenizer.pad_token_id, progress=progress, verbose=verbose,
                          label=f"fold {fold + 1}/{options.folds}")
    if options.keep_models:
        trainer.save_model(str(folder / f"fold{fold}-model"))  # every process calls it; the main one writes
    checksum = _param_checksum(model)
    scores = _score_rows(model, tokenizer, encoded, rows, options=options, dtype=dtype, state=state)
    report = _fold_report(trainer, fold=fold, rows=rows, fit_rows=fit_rows, eval_rows=eval_rows, checksum=checksum,
                          seconds=time.perf_counter() - started, num_processes=state.num_processes)
    state.wait_for_everyone()
    if state.is_main_process:
        _write_fold(folder, fold, scores, report)
        shutil.rmtree(folder / f"fold{fold}-trainer", ignore_errors=True)  # checkpoints: full weights each
    state.wait_for_everyone()
    del trainer, model
    gc.collect()
    return scores, report


# -- all folds ------------------------------------------------------------------------------

def finetune_scores(prompts, queries, *, model_ref, options: FinetuneOptions = FinetuneOptions(),
                    task: str | None = None, dtype: str = "float32", device: str | None = None, progress: bool = True,
                    verbose: bool = False, stop_after_folds: int | None = None) -> FinetuneRun:
    """Score every pair with a model fine-tuned on the other folds (k-fold cross-fitting).

    Parameters
    ----------
    prompts, queries : list of str
        The rendered (prompt, query) pairs, as for :func:`split_builders.signals.lm.scoring.compute_scores`.
    model_ref : split_builders.signals.lm.models.ModelRef
        The causal LM to fine-tune (a fresh copy per fold).
    options : FinetuneOptions
        Folds, seed, training and scoring settings, work folder.
    task : str, optional
        Picks the default ``max_steps`` from :data:`DEFAULT_MAX_STEPS` (``snli``, ``boolq``) when
        ``options`` give none.
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        Training precision (mixed precision for the half types) and scoring precision.
    device : str, optional
        ``"cpu"`` forces the CPU; default: what ``accelerate`` picks.
    progress : bool, default=True
        Progress bars.
    verbose : bool, default=False
        Also the Trainer's raw logs and transformers' loading reports.
    stop_after_folds : int, optional
        Raise ``KeyboardInterrupt`` after this many newly finished folds: simulates a killed run
        (a run whose last fold has just finished returns normally).

    Returns
    -------
    FinetuneRun

    Raises
    ------
    InvalidParameterError
        Options that do not fit the rows, or a query with no tokens left after truncation.
    EmptyTextError
        A query with no tokens.
    ModelLoadError
        The model cannot be loaded, or its tokenizer has neither a pad nor an EOS token.
    """
    from split_builders.distributed import process_state

    prompts, queries = list(prompts), list(queries)
    if len(prompts) != len(queries):
        raise InvalidParameterError(f"{len(prompts)} prompts but {len(queries)} queries; they must pair up")
    options = options.for_task(task)
    state = process_state(device)
    check_parameters(len(prompts), options, dtype=dtype, num_processes=state.num_processes)

    with state.main_process_first():  # the default model is converted from GGUF once, by one process
        tokenizer = _load_tokenizer(model_ref)
    # Encoded once, eagerly: a query with no tokens fails here, before any training.
    encoded = encode(tokenizer, prompts, queries, max_length=_context_length(model_ref))
    folds = assign_folds(len(prompts), k=options.folds, seed=options.seed)
    folder = options.work_root / work_key(prompts, queries, model_identity=model_ref.identity, k=options.folds,
                                          seed=options.seed, dtype=dtype, hyperparameters=options.hyperparameters())
    if state.is_main_process:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "run.json").write_text(json.dumps({"model": model_ref.identity, "rows": len(prompts), "dtype": dtype,
                                                     **options.recorded()}, indent=2, sort_keys=True))
    state.wait_for_everyone()

    scores, reports, resumed, finished = np.full(len(prompts), np.nan), [], 0, 0
    for fold in range(options.folds):
        rows = np.flatnonzero(folds == fold)
        done = _read_fold(folder, fold, len(rows))
        if done is not None:
            resumed += 1
        else:
            with _quiet(progress, verbose):
                done = _run_fold(model_ref, tokenizer, encoded, folds, fold, folder=folder, options=options,
                                 dtype=dtype, device=device, state=state, progress=progress, verbose=verbose)
            finished += 1
        scores[rows], report = done
        reports.append(report)
        if stop_after_folds is not None and finished >= stop_after_folds and fold < options.folds - 1:
            raise KeyboardInterrupt(f"stopped after {finished} folds (stop_after_folds)")
    return FinetuneRun(scores=scores, folds=folds, fold_reports=reports, resumed_folds=resumed,
                       num_processes=state.num_processes, work_dir=folder, options=options)
