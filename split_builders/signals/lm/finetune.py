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
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from split_builders.cache import load_arrays, save_arrays
from split_builders.errors import InvalidParameterError, ModelLoadError
from split_builders.signals.lm.kfold import assign_folds, check_k, holdout, training_schedule
from split_builders.signals.lm.scoring import (
    Encoded,
    LikelihoodScorer,
    encode,
    model_context_length,
    plan_batches,
    texts_digest,
)

FINETUNE_VERSION = 1  # bump when a change alters fine-tuned scores, so stale folds are not reused
# Most optimizer steps per fold. resplit's defaults, sized so that early stopping (not the cap)
# ends training on the full datasets; override with ``max_steps``.
DEFAULT_MAX_STEPS = {"snli": 3000, "boolq": 1000, None: 1000}
DTYPES = ("float32", "bfloat16", "float16")
FOLD_REPORT_KEYS = ("fold", "rows", "train_rows", "eval_rows", "steps", "best_step", "best_eval_loss",
                    "eval_losses", "train_losses", "param_checksum", "seconds", "num_processes")


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
    """

    scores: np.ndarray
    folds: np.ndarray
    fold_reports: list[dict] = field(default_factory=list)
    resumed_folds: int = 0
    num_processes: int = 1
    work_dir: Path | None = None


def default_max_steps(task: str | None) -> int:
    """The default step cap of a task (``snli``, ``boolq``; anything else gets the generic one)."""
    return DEFAULT_MAX_STEPS.get(task, DEFAULT_MAX_STEPS[None])


# -- training data --------------------------------------------------------------------------

class _Examples:
    """A map-style dataset over encoded rows, in a given order (rows may repeat)."""

    def __init__(self, encoded: list[Encoded], rows: np.ndarray):
        self.encoded, self.rows = encoded, np.asarray(rows, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict:
        row = int(self.rows[index])
        example = self.encoded[row]
        return {"row": row, "input_ids": example.ids, "query_start": example.query_start}


class _Collator:
    """Right-pad a batch; labels are the token ids on the query + EOS positions, -100 elsewhere.

    Position ids follow the attention mask, as in :class:`LikelihoodScorer`, so training sees the
    positions scoring uses. The model shifts the labels itself (position t predicts label t).
    """

    def __init__(self, pad_id: int):
        self.pad_id = pad_id

    def __call__(self, features: list[dict]) -> dict:
        import torch

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


# -- validation and keys --------------------------------------------------------------------

def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameterError(f"{name} must be an integer >= {minimum}, got {value!r}")


def check_parameters(n_rows: int, *, k, max_steps, batch_size, learning_rate, eval_steps, eval_fraction,
                     patience, dtype, score_batch_size, max_batch_tokens, num_processes) -> None:
    """Raise :class:`InvalidParameterError` for a parameter of :func:`finetune_scores` out of range
    for ``n_rows`` rows on ``num_processes`` processes (no I/O: callers check before any work);
    ``dtype`` None is not checked (not resolved yet)."""
    check_k(k, n_rows)
    smallest_training_set = n_rows - -(-n_rows // k)  # the rows outside the largest fold
    if smallest_training_set < 2:
        raise InvalidParameterError(
            f"with {n_rows} rows and k={k}, a fold trains on {smallest_training_set} row(s); at least 2 are needed "
            "(one to train on, one to pick the best checkpoint): use more rows")
    _check_int("max_steps", max_steps, 1)
    _check_int("batch_size", batch_size, 1)
    _check_int("eval_steps", eval_steps, 1)
    _check_int("patience", patience, 1)
    _check_int("score_batch_size", score_batch_size, 1)
    _check_int("max_batch_tokens", max_batch_tokens, 1)
    if not isinstance(learning_rate, (int, float)) or not learning_rate > 0:
        raise InvalidParameterError(f"learning_rate must be a number > 0, got {learning_rate!r}")
    if isinstance(eval_fraction, bool) or not isinstance(eval_fraction, (int, float)) or not 0 < eval_fraction < 1:
        raise InvalidParameterError(f"eval_fraction must be strictly between 0 and 1, got {eval_fraction!r}")
    if dtype is not None and dtype not in DTYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if batch_size % num_processes:
        raise InvalidParameterError(
            f"batch_size ({batch_size}) is the global batch and must be divisible by the number of processes "
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

def _training_arguments(output_dir: Path, *, hp: dict, seed: int, dtype: str, device, num_processes: int):
    import torch
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(output_dir),
        per_device_train_batch_size=hp["batch_size"] // num_processes,
        per_device_eval_batch_size=hp["score_batch_size"],
        max_steps=hp["max_steps"],
        learning_rate=hp["learning_rate"],
        lr_scheduler_type="constant",
        warmup_steps=0,
        optim="adamw_torch",  # the unfused AdamW: the same arithmetic on every device
        weight_decay=0.0,
        eval_strategy="steps",
        eval_steps=hp["eval_steps"],
        save_strategy="steps",
        save_steps=hp["eval_steps"],
        save_total_limit=2,  # the best and the latest; deleted when the fold is done
        save_only_model=True,  # no optimizer state: an unfinished fold restarts from scratch
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        greater_is_better=False,
        logging_strategy="steps",
        logging_steps=hp["eval_steps"],
        # The schedule fixes the order of the rows; sequential sampling keeps it.
        train_sampling_strategy="sequential",
        remove_unused_columns=False,
        report_to="none",
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,  # the fold's own bar (_FoldProgress) instead of the Trainer's bars and raw dicts
        use_cpu=device == "cpu" or not torch.cuda.is_available(),  # as process_state: gloo on CPUs
        bf16=(dtype == "bfloat16"),
        fp16=(dtype == "float16"),
        dataloader_num_workers=0,
        dataloader_pin_memory=device != "cpu" and torch.cuda.is_available(),  # pinning needs an accelerator
        ddp_find_unused_parameters=False,  # every parameter gets a gradient: skip the extra graph walk
    )


def _fit(model_ref, encoded, *, fit_rows, eval_rows, fold: int, folder: Path, hp: dict, seed: int, dtype: str,
         device, num_processes: int, pad_id: int, progress: bool, verbose: bool = False, label: str = ""):
    """Fine-tune a fresh copy of the model on ``fit_rows``; returns (trainer, best model)."""
    from transformers import EarlyStoppingCallback, PrinterCallback, Trainer

    schedule = training_schedule(fit_rows, steps=hp["max_steps"], batch_size=hp["batch_size"], seed=seed, fold=fold)
    args = _training_arguments(folder / f"fold{fold}-trainer", hp=hp, seed=seed, dtype=dtype, device=device,
                               num_processes=num_processes)
    trainer = Trainer(model=_load_trainable(model_ref), args=args, train_dataset=_Examples(encoded, schedule),
                      eval_dataset=_Examples(encoded, eval_rows), data_collator=_Collator(pad_id),
                      callbacks=[EarlyStoppingCallback(early_stopping_patience=hp["patience"]),
                                 _fold_progress(label or f"fold {fold + 1}", progress=progress)])
    if not verbose:
        trainer.remove_callback(PrinterCallback)  # the Trainer's raw log dicts: --verbose only
    trainer.train()
    return trainer, trainer.model


def _fold_progress(label: str, *, progress: bool):
    """A ``TrainerCallback``: one bar per fold (steps) and one line per evaluation, on the main process."""
    from transformers import TrainerCallback

    class FoldProgress(TrainerCallback):
        bar, best = None, float("inf")

        def on_train_begin(self, args, state, control, **kwargs):
            if progress and state.is_world_process_zero:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=state.max_steps, desc=label, unit="step", dynamic_ncols=True, file=sys.stderr)

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


def _score_rows(model, tokenizer, encoded, rows: np.ndarray, *, hp: dict, dtype: str, state) -> np.ndarray:
    """s(x) of ``rows`` with the trained model, batches shared r::N over processes and gathered."""
    import torch
    from accelerate.utils import gather_object

    model.eval()
    model.to({"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype])
    scorer = LikelihoodScorer(model, tokenizer, batch_size=hp["score_batch_size"],
                              max_batch_tokens=hp["max_batch_tokens"])
    examples = [encoded[i] for i in rows]
    batches = plan_batches(examples, batch_size=hp["score_batch_size"], max_batch_tokens=hp["max_batch_tokens"])
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


def _run_fold(model_ref, tokenizer, encoded, folds, fold: int, *, folder: Path, hp: dict, seed: int, dtype: str,
              device, state, keep_models: bool, progress: bool, verbose: bool = False, k: int | None = None):
    """Train without fold ``fold``, score it, write its checkpoint (main process); returns (scores, report)."""
    started = time.perf_counter()
    if state.is_main_process:  # checkpoints a killed run left behind must not be taken for this run's
        shutil.rmtree(folder / f"fold{fold}-trainer", ignore_errors=True)
    state.wait_for_everyone()
    rows = np.flatnonzero(folds == fold)
    fit_rows, eval_rows = holdout(np.flatnonzero(folds != fold), fraction=hp["eval_fraction"], seed=seed, fold=fold)
    trainer, model = _fit(model_ref, encoded, fit_rows=fit_rows, eval_rows=eval_rows, fold=fold, folder=folder,
                          hp=hp, seed=seed, dtype=dtype, device=device, num_processes=state.num_processes,
                          pad_id=tokenizer.pad_token_id, progress=progress, verbose=verbose,
                          label=f"fold {fold + 1}/{k}" if k else "")
    if keep_models:
        trainer.save_model(str(folder / f"fold{fold}-model"))  # every process calls it; the main one writes
    checksum = _param_checksum(model)
    scores = _score_rows(model, tokenizer, encoded, rows, hp=hp, dtype=dtype, state=state)
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

def finetune_scores(prompts, queries, *, model_ref, work_dir, k: int = 3, seed: int = 0, task: str | None = None,
                    max_steps: int | None = None, batch_size: int = 32, learning_rate: float = 2e-5,
                    eval_steps: int = 64, eval_fraction: float = 0.1, patience: int = 10, dtype: str = "float32",
                    device: str | None = None, score_batch_size: int = 32, max_batch_tokens: int = 8192,
                    keep_models: bool = False, progress: bool = True, verbose: bool = False,
                    stop_after_folds: int | None = None) -> FinetuneRun:
    """Score every pair with a model fine-tuned on the other folds (k-fold cross-fitting).

    Parameters
    ----------
    prompts, queries : list of str
        The rendered (prompt, query) pairs, as for :func:`split_builders.signals.lm.scoring.compute_scores`.
    model_ref : split_builders.signals.lm.models.ModelRef
        The causal LM to fine-tune (a fresh copy per fold).
    work_dir : path-like
        Root of the fold checkpoints; this run uses ``work_dir / <key>``.
    k : int, default=3
        Number of folds, 2 <= k <= number of rows.
    seed : int, default=0
        Seeds the folds, the held-out evaluation rows, the row order and the Trainer.
    task : str, optional
        Picks the default ``max_steps`` from :data:`DEFAULT_MAX_STEPS` (``snli``, ``boolq``).
    max_steps : int, optional
        Most optimizer steps per fold (>= 1); default: the task's.
    batch_size : int, default=32
        Global examples per step; with N processes each takes ``batch_size // N`` (must divide).
    learning_rate : float, default=2e-5
        Constant, no warmup (AdamW, no weight decay).
    eval_steps : int, default=64
        Evaluate (and checkpoint) every this many steps, and at the last step.
    eval_fraction : float, default=0.1
        Share of the training folds held out to pick the best checkpoint, in (0, 1).
    patience : int, default=10
        Stop after this many evaluations without a lower held-out loss.
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        Training precision (mixed precision for the half types) and scoring precision.
    device : str, optional
        ``"cpu"`` forces the CPU; default: what ``accelerate`` picks.
    score_batch_size, max_batch_tokens : int
        The scoring batch plan (as :class:`LikelihoodScorer`); ``score_batch_size`` is also the
        per-process batch size of the held-out evaluation.
    keep_models : bool, default=False
        Keep each fold's best model in ``<work folder>/fold<f>-model``.
    progress : bool, default=True
        Progress bars.
    stop_after_folds : int, optional
        Raise ``KeyboardInterrupt`` after this many newly finished folds: simulates a killed run
        (a run whose last fold has just finished returns normally).

    Returns
    -------
    FinetuneRun

    Raises
    ------
    InvalidParameterError
        A parameter out of range, or a query with no tokens left after truncation.
    EmptyTextError
        A query with no tokens.
    ModelLoadError
        The model cannot be loaded, or its tokenizer has neither a pad nor an EOS token.
    """
    from split_builders.signals.lm.scoring import process_state

    prompts, queries = list(prompts), list(queries)
    if len(prompts) != len(queries):
        raise InvalidParameterError(f"{len(prompts)} prompts but {len(queries)} queries; they must pair up")
    max_steps = default_max_steps(task) if max_steps is None else max_steps
    state = process_state(device)
    hp = {"max_steps": max_steps, "batch_size": batch_size, "learning_rate": learning_rate, "eval_steps": eval_steps,
          "eval_fraction": eval_fraction, "patience": patience, "score_batch_size": score_batch_size,
          "max_batch_tokens": max_batch_tokens}
    check_parameters(len(prompts), k=k, dtype=dtype, num_processes=state.num_processes, **hp)

    with state.main_process_first():  # the default model is converted from GGUF once, by one process
        tokenizer = _load_tokenizer(model_ref)
    # Encoded once, eagerly: a query with no tokens fails here, before any training.
    encoded = encode(tokenizer, prompts, queries, max_length=_context_length(model_ref))
    folds = assign_folds(len(prompts), k=k, seed=seed)
    folder = Path(work_dir) / work_key(prompts, queries, model_identity=model_ref.identity, k=k, seed=seed,
                                       dtype=dtype, hyperparameters=hp)
    if state.is_main_process:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "run.json").write_text(json.dumps({"model": model_ref.identity, "rows": len(prompts), "k": k,
                                                     "seed": seed, "dtype": dtype, **hp}, indent=2, sort_keys=True))
    state.wait_for_everyone()

    scores, reports, resumed, finished = np.full(len(prompts), np.nan), [], 0, 0
    for fold in range(k):
        rows = np.flatnonzero(folds == fold)
        done = _read_fold(folder, fold, len(rows))
        if done is not None:
            resumed += 1
        else:
            with _quiet(progress, verbose):
                done = _run_fold(model_ref, tokenizer, encoded, folds, fold, folder=folder, hp=hp, seed=seed,
                                 dtype=dtype, device=device, state=state, keep_models=keep_models, progress=progress,
                                 verbose=verbose, k=k)
            finished += 1
        scores[rows], report = done
        reports.append(report)
        if stop_after_folds is not None and finished >= stop_after_folds and fold < k - 1:
            raise KeyboardInterrupt(f"stopped after {finished} folds (stop_after_folds)")
    return FinetuneRun(scores=scores, folds=folds, fold_reports=reports, resumed_folds=resumed,
                       num_processes=state.num_processes, work_dir=folder)
