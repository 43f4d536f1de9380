"""The Python API behind ``resplit likelihood``: source -> signal -> configs -> release folder.

>>> from split_builders.methods.likelihood import build_likelihood
>>> result = build_likelihood("snli-sample", out="out/snli-likelihood")   # doctest: +SKIP
>>> result.configs                                                        # doctest: +SKIP
['ll_split_pt', 'll_split_pt_len', 'll_split_pt_reverse', 'random', 'length']
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loading_scripts import load_source, nqg
from split_builders.release import card
from split_builders.signals.programs.atoms import atom_function, atoms_by_row
from split_builders.errors import FieldError, InvalidParameterError
from split_builders.signals.lengths import quantile_buckets, word_lengths
from split_builders.splitters.likelihood import CONFIG_NAMES, likelihood_configs
from split_builders.signals.lm.models import cache_root, resolve_model
from split_builders.signals.lm.prompts import render_all, resolve_template
from split_builders.release.writer import SPLITS, write_release
from split_builders.signals.lm.scoring import SCORER_VERSION, compute_scores

DEFAULT_LENGTH_BUCKETS = 4
# The fine-tuned setting's template per task: no label in the prompt (the paper's ll_split).
FINETUNE_TEMPLATE = {"snli": "snli", "boolq": "boolq"}
PAPER = ("Ameya Godbole and Robin Jia. 2023. *Benchmarking Long-tail Generalization with Likelihood "
         "Splits.* Findings of EACL 2023.")


@dataclass
class BuildResult:
    """What a build produced (``out`` is None on processes other than the main one)."""

    out: Path | None
    configs: list
    sizes: dict
    rows: int
    scored: str
    summaries: dict = field(default_factory=dict)
    unparseable: list = field(default_factory=list)


@dataclass(frozen=True)
class FinetuneOptions:
    """The fine-tuned (``ll_split``) setting: k-fold cross-fitting and the paper's training defaults
    (see :func:`split_builders.signals.lm.finetune.finetune_scores`, which validates them)."""

    k: int = 3
    seed: int = 0
    max_steps: int | None = None
    batch_size: int = 32
    learning_rate: float = 2e-5
    eval_steps: int = 64
    eval_fraction: float = 0.1
    patience: int = 10
    keep_models: bool = False
    work_dir: str | None = None


@dataclass
class _Tuned:
    run: object
    scores: np.ndarray
    signal: dict

    def describe(self) -> str:
        steps = ", ".join(str(r["steps"]) for r in self.run.fold_reports)
        resumed = f", {self.run.resumed_folds} fold(s) resumed" if self.run.resumed_folds else ""
        return f"steps per fold {steps}{resumed}"


def _finetuned_scores(src, options: FinetuneOptions, *, template, ref, dtype, device, progress) -> _Tuned:
    """k-fold cross-fitted fine-tuned scores. The template is the task's unconditioned one (the
    fine-tuned LM learns the dataset, so SNLI's prompt does not name the label), or ``template``."""
    from split_builders.signals.lm.finetune import default_max_steps, finetune_scores

    name = template if template is not None else FINETUNE_TEMPLATE.get(src.task)
    chosen = resolve_template(name, task=src.task, prompt_field=src.prompt_field, query_field=src.query_field)
    prompts, queries = render_all(chosen, src)
    max_steps = options.max_steps if options.max_steps is not None else default_max_steps(src.task)
    work_dir = Path(options.work_dir) if options.work_dir else cache_root() / "finetune"
    run = finetune_scores(prompts, queries, model_ref=ref, work_dir=work_dir, k=options.k, seed=options.seed,
                          task=src.task, max_steps=max_steps, batch_size=options.batch_size,
                          learning_rate=options.learning_rate, eval_steps=options.eval_steps,
                          eval_fraction=options.eval_fraction, patience=options.patience, dtype=dtype,
                          device=device, keep_models=options.keep_models, progress=progress)
    signal = {"kind": "log-likelihood s(x) under an LM fine-tuned on the other folds (k-fold cross-fitting)",
              "model": ref.name, "model_revision": ref.revision, "dtype": dtype, "template": chosen.describe(),
              "k": options.k, "seed": options.seed, "max_steps": max_steps, "batch_size": options.batch_size,
              "learning_rate": options.learning_rate, "lr_schedule": "constant, no warmup (AdamW)",
              "eval_steps": options.eval_steps, "eval_fraction": options.eval_fraction,
              "patience": options.patience, "work_key": run.work_dir.name,
              "folds": [{key: report[key] for key in ("fold", "rows", "train_rows", "eval_rows", "steps",
                                                      "best_step", "best_eval_loss")}
                        for report in run.fold_reports]}
    return _Tuned(run, np.asarray(run.scores, dtype=np.float64), signal)


def _compare_signals(prompted: np.ndarray, tuned: np.ndarray, configs) -> dict:
    """Pearson correlation of the two signals and, per variant, the overlap of the evaluation sets
    (validation + test) their configs hold out: |both| / |eval|."""
    by_name = {c.name: c for c in configs}
    overlaps = {}
    for variant, tuned_name in CONFIG_NAMES["finetuned"].items():
        prompted_name = CONFIG_NAMES["prompted"][variant]
        if tuned_name in by_name and prompted_name in by_name:
            held = [set(np.concatenate([by_name[n].indices["validation"], by_name[n].indices["test"]]).tolist())
                    for n in (prompted_name, tuned_name)]
            overlaps[f"{prompted_name} vs {tuned_name}"] = len(held[0] & held[1]) / max(len(held[1]), 1)
    return {"pearson": float(np.corrcoef(prompted, tuned)[0, 1]), "eval_overlap": overlaps}


def resolve_dtype(dtype: str, device: str | None) -> str:
    """The precision "auto" stands for: bfloat16 on a CUDA device, float32 otherwise."""
    if dtype != "auto":
        return dtype
    import torch

    on_gpu = device != "cpu" and torch.cuda.is_available()
    return "bfloat16" if on_gpu and torch.cuda.is_bf16_supported() else "float16" if on_gpu else "float32"


def _given_scores(path, source) -> np.ndarray:
    """User-supplied scores: one per input row, in row order (``.npy``, no pickles)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidParameterError(f"scores file {str(path)!r} does not exist")
    try:
        scores = np.load(path, allow_pickle=False)
    except ValueError as error:
        raise InvalidParameterError(f"scores file {str(path)!r} is not a plain .npy array ({error})") from None
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.asarray(source.source_ids)
    if scores.size == len(source):
        return scores
    if ids.size and ids.max() < scores.size:  # the reader filtered rows: pick them by row number
        return scores[ids]
    raise InvalidParameterError(f"scores file {str(path)!r} has {scores.size} values but the source has "
                                f"{len(source)} rows; give one log-likelihood per input row, in row order")


def _info_buckets(lengths, labels, n_buckets) -> np.ndarray:
    """Per-row length bucket within its class (as the length-controlled split uses); -1 where
    equal-frequency buckets are impossible."""
    buckets = np.full(len(lengths), -1, dtype=np.int64)
    groups = np.zeros(len(lengths), dtype=np.int64) if labels is None else np.unique(np.asarray(labels, dtype=str), return_inverse=True)[1]
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        try:
            buckets[rows] = quantile_buckets(lengths[rows], n_buckets)
        except InvalidParameterError:
            pass
    return buckets


def build_likelihood(source: str = "snli-sample", *, out, lm: str | None = None, scores=None,
                     prompt_field: str | None = None, query_field: str | None = None, label_field: str | None = None,
                     target_field: str | None = None, atoms: str | None = None, task: str | None = None,
                     template: str | None = None, dev_size=0.1, test_size=0.1,
                     train_size=None, length_buckets="auto", seed: int = 42, dtype: str = "auto",
                     device: str | None = None, batch_size: int = 32, max_batch_tokens: int = 8192,
                     limit: int | None = None, cache_dir=None, overwrite: bool = False,
                     progress: bool = True, lm_revision: str | None = None,
                     finetune: FinetuneOptions | None = None) -> BuildResult:
    """Build a Likelihood Splits release folder.

    Parameters
    ----------
    source : str
        ``snli-sample`` (bundled default), ``snli``, ``boolq``, a file or a Hub id
        (see :func:`loading_scripts.load_source`).
    out : path
        Output folder (refused if it exists, unless ``overwrite``).
    lm : str, optional
        Causal LM: Hub id, local folder, or None for the offline SmolLM2-135M.
    scores : path, optional
        ``.npy`` of one log-likelihood per input row; nothing is scored and configs are named
        ``ll_split*`` instead of ``ll_split_pt*``.
    dev_size, test_size, train_size, seed
        As :class:`~split_builders.splitters.likelihood.LikelihoodSplitter`.
    target_field : str, optional
        The target program column (a headerless NQG TSV has ``target``).
    atoms : {"sql", "funql"}, optional
        Semantic-parsing mode's atom constraint (needs ``train_size``): rows are swapped until every
        evaluation atom occurs in train. Rows whose program cannot be parsed are excluded and listed
        by ``source_id`` in the card and in ``BuildResult.unparseable``.
    length_buckets : int, None or "auto"
        Buckets of the length-controlled config; "auto" is 4 when scoring, none with ``scores``.
    dtype : {"auto", "float32", "bfloat16", "float16"}
        Precision of the LM. "auto": bfloat16 on a GPU, float32 on a CPU (where bfloat16 is the
        opt-in fast mode on CPUs with AMX: it keeps the ranking, not the exact scores).
    limit : int, optional
        Use only the first ``limit`` rows of the source (quick runs).
    finetune : FinetuneOptions, optional
        Also build the paper's fine-tuned configs (``ll_split``, ``ll_split_len``,
        ``ll_split_reverse``) from k-fold cross-fitted fine-tuned scores
        (:func:`split_builders.signals.lm.finetune.finetune_scores`), beside the prompted ones; the card
        compares the two signals. Not with ``scores``.
    """
    from accelerate import PartialState

    if finetune is not None and scores is not None:
        raise InvalidParameterError("fine-tuning scores the rows itself: give either --finetune or --scores, not both")
    if atoms is not None:
        atom_function(atoms)  # an unknown target language fails before anything is read
        if train_size is None:
            raise InvalidParameterError("the atom constraint (--atoms) is for semantic parsing: give --train-size too")
    src = load_source(source, prompt_field=prompt_field, query_field=query_field, label_field=label_field,
                      target_field=target_field, task=task)
    if limit is not None:
        if limit < 3:
            raise InvalidParameterError(f"limit must be at least 3 rows, got {limit}")
        src.dataset = src.dataset.select(range(min(limit, len(src.dataset))))
    src.check_queries()
    row_atoms, unparseable = None, []
    if atoms is not None:
        row_atoms, unparseable = _parse_targets(src, atoms)
    # Length is measured on the question (a Spider NQG input's "db_id:" prefix is not part of it).
    lengths = word_lengths(nqg.questions(src.texts(src.query_field)))
    labels = src.labels()
    if length_buckets == "auto":
        length_buckets = None if scores is not None else DEFAULT_LENGTH_BUCKETS

    if scores is not None:
        values = _given_scores(scores, src)
        signal = {"kind": "given log-likelihoods", "file": Path(scores).name,
                  "sha256": hashlib.sha256(Path(scores).read_bytes()).hexdigest()}
        setting, scored = "given", f"given scores ({Path(scores).name})"
    else:
        chosen = resolve_template(template, task=src.task, prompt_field=src.prompt_field, query_field=src.query_field)
        prompts, queries = render_all(chosen, src)
        ref = resolve_model(lm, revision=lm_revision)
        dtype = resolve_dtype(dtype, device)
        run = compute_scores(prompts, queries, model_ref=ref, dtype=dtype, device=device,
                             cache_dir=Path(cache_dir) if cache_dir else cache_root() / "scores",
                             batch_size=batch_size, max_batch_tokens=max_batch_tokens, progress=progress)
        values = run.scores
        signal = {"kind": "prompted LM log-likelihood s(x) = sum of log p(query tokens + EOS | BOS + prompt)",
                  "model": ref.name, "model_revision": ref.revision, "dtype": dtype, "template": chosen.describe(),
                  "scorer_version": SCORER_VERSION, "batch_size": batch_size, "max_batch_tokens": max_batch_tokens}
        setting = "prompted"
        scored = f"{'cached' if run.from_cache else 'scored'} with {ref.name} ({dtype}, {run.num_processes} process(es))"

    split_options = dict(labels=labels, lengths=lengths, dev_size=dev_size, test_size=test_size,
                         train_size=train_size, length_buckets=length_buckets, atoms=row_atoms, random_state=seed)
    configs = likelihood_configs(values, setting=setting, **split_options)
    config_scores = {c.name: values for c in configs}
    tuned = None
    if finetune is not None:
        # The model and precision the prompted scores used: resolved (and hashed) once.
        tuned = _finetuned_scores(src, finetune, template=template, ref=ref, dtype=dtype, device=device,
                                  progress=progress)
        tuned_configs = likelihood_configs(tuned.scores, setting="finetuned", baselines=False, **split_options)
        config_scores.update({c.name: tuned.scores for c in tuned_configs})
        configs = [*configs[:-2], *tuned_configs, *configs[-2:]] if train_size is None else [*configs, *tuned_configs]
        signal = {"prompted": signal, "finetuned": tuned.signal,
                  "comparison": _compare_signals(values, tuned.scores, configs)}
        scored += f"; fine-tuned {finetune.k}-fold ({tuned.describe()})"
    sizes = {c.name: {s: int(len(c.indices[s])) for s in SPLITS} for c in configs}
    state = PartialState()
    if not state.is_main_process:
        state.wait_for_everyone()
        return BuildResult(None, [c.name for c in configs], sizes, len(src), scored, unparseable=unparseable)

    rows = src.dataset.add_column("score", values.tolist()).add_column("length", lengths.tolist())
    if tuned is not None:
        rows = rows.add_column("score_finetuned", tuned.scores.tolist()).add_column("fold", tuned.run.folds.tolist())
    rows = rows.add_column("length_bucket", _info_buckets(lengths, labels, length_buckets or DEFAULT_LENGTH_BUCKETS).tolist())
    summaries = {}

    def render(staging: Path, written) -> str:
        sections = []
        for config in configs:
            signal_values = config_scores[config.name]
            per_split = {s: {"signal": signal_values[config.indices[s]], "length": lengths[config.indices[s]],
                             "labels": None if labels is None else [labels[i] for i in config.indices[s]]}
                         for s in SPLITS}
            summaries[config.name] = card.split_summary(per_split, "score", labels=labels)
            figure = f"figures/{config.name}.png"
            card.plot_config(staging / figure, per_split, title=config.name, signal_label="s(x), log-likelihood (nats)")
            sections.append(card.config_section(config.name, config.description, summaries[config.name],
                                                signal="score", figure=figure))
        return _card_body(src, signal, configs, sizes, sections, length_buckets, atoms, unparseable)

    provenance = {
        "method": "likelihood",
        "paper": PAPER,
        "seed": seed,
        "source": {"name": src.name, "rows": len(src), "revision": src.revision, "content_sha256": src.content_hash(),
                   "filtered": src.filtered, "source_id": src.source_id_note, "limit": limit},
        "fields": {"prompt": src.prompt_field, "query": src.query_field, "label": src.label_field,
                   "target": src.target_field},
        "signal": signal,
        "length": {"unit": "NLTK word tokens of the query (NLTKWordTokenizer)",
                   "length_bucket_column": f"quantile bucket within the row's class, {length_buckets or DEFAULT_LENGTH_BUCKETS} buckets"},
    }
    if atoms is not None:
        provenance["atom_constraint"] = {
            "target_language": atoms, "definition": atom_function(atoms).__doc__.strip().splitlines()[0],
            "unparseable_source_ids": [sid for sid, _ in unparseable]}
    written_out = write_release(out, rows, configs, provenance=provenance, render_card=render, license=src.license,
                                pretty_name=f"Likelihood Splits of {src.name}", overwrite=overwrite)
    state.wait_for_everyone()
    return BuildResult(written_out, [c.name for c in configs], sizes, len(src), scored, summaries, unparseable)


def _finetune_lines(tuned, comparison) -> list[str]:
    if tuned is None:
        return []
    folds = "; ".join(f"fold {f['fold']}: {f['steps']} steps, best at step {f['best_step']} "
                      f"(held-out loss {f['best_eval_loss']:.4f}), trained on {f['train_rows']} rows"
                      for f in tuned["folds"])
    overlaps = ", ".join(f"{name} {100 * share:.1f}%" for name, share in comparison.get("eval_overlap", {}).items())
    return [
        "",
        f"Fine-tuned scores (`ll_split*`, column `score_finetuned`, fold in `fold`): {tuned['model']} fine-tuned "
        f"with k = {tuned['k']} cross-fitting (each row scored by a model trained on the other folds), template "
        f"`{tuned['template']['name']}`, batch {tuned['batch_size']}, constant learning rate "
        f"{tuned['learning_rate']:g}, evaluation every {tuned['eval_steps']} steps on "
        f"{100 * tuned['eval_fraction']:.0f}% of the training folds, best checkpoint by held-out perplexity, "
        f"early stopping patience {tuned['patience']}, at most {tuned['max_steps']} steps. {folds}.",
        f"Prompted vs fine-tuned scores: Pearson correlation **{comparison.get('pearson', float('nan')):.3f}**; "
        f"shared evaluation rows (validation + test): {overlaps or 'n/a'}.",
    ]


def _atom_lines(src, configs, atoms, unparseable) -> list[str]:
    if atoms is None:
        return []
    swaps = ", ".join(f"`{c.name}` {c.parameters.get('atom_swaps', 0)}" for c in configs if "atom_swaps" in c.parameters)
    lines = [f"Atom constraint ({atoms} atoms of `{src.target_field}`): every atom of a validation or test "
             f"program occurs in some train program; rows swapped to meet it: {swaps}."]
    if unparseable:
        shown = "; ".join(f"source_id {sid}: {reason}" for sid, reason in unparseable[:20])
        more = f"; and {len(unparseable) - 20} more" if len(unparseable) > 20 else ""
        lines.append(f"Excluded: {len(unparseable)} row(s) whose program does not parse ({shown}{more}).")
    return lines


def _parse_targets(src, target_language: str):
    """Atoms of every row's target program; rows that do not parse are excluded from the source
    (counted in ``src.filtered``) and returned as ``(source_id, reason)`` pairs."""
    target = src.target_field
    if target is None:
        raise FieldError("(none given)", src.dataset.column_names, role="target",
                         source=f"{src.name}: pass --target-field for the atom constraint")
    parsed = atoms_by_row(src.texts(target), target_language)
    ids = src.source_ids
    unparseable = [(int(ids[row]), reason) for row, reason in parsed.unparseable]
    if unparseable:
        keep = parsed.parsed_rows
        src.dataset = src.dataset.select(keep)
        src.filtered = {**src.filtered, f"unparseable {target_language} program": len(unparseable)}
        return [parsed.atoms[row] for row in keep], unparseable
    return parsed.atoms, unparseable


def _card_body(src, signal, configs, sizes, sections, length_buckets, atoms=None, unparseable=()) -> str:
    first = configs[0].name
    lines = [
        f"# Likelihood Splits of {src.name}",
        "",
        "Train/validation/test splits that test generalisation to the long tail: the examples a language "
        "model finds least likely are held out for evaluation (Godbole & Jia, 2023). Built with "
        "[resplit](https://github.com/resplit/resplit).",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("PATH_OR_HUB_ID", "{first}")',
        "```",
        "",
        "## Configs",
        "",
        "| config | train | validation | test | what is held out |",
        "|---|---|---|---|---|",
    ]
    for config in configs:
        s = sizes[config.name]
        lines.append(f"| `{config.name}` | {s['train']} | {s['validation']} | {s['test']} | {config.description} |")
    tuned, comparison = signal.get("finetuned"), signal.get("comparison")
    if tuned is not None:
        signal = signal["prompted"]
    if "model" in signal:
        how = (f"Scores s(x): log-likelihood of the query `{src.query_field}` given the prompt, from "
               f"{signal['model']} (revision `{signal['model_revision'][:19]}`, {signal['dtype']}), template "
               f"`{signal['template']['name']}`.")
    else:
        how = f"Scores s(x): supplied by the curator ({signal['file']}, sha256 `{signal['sha256'][:16]}`)."
    lines += [
        "",
        "## How the splits were built",
        "",
        how,
        f"Every row keeps `source_id` ({src.source_id_note}), `score`, `length` (NLTK word tokens of the "
        f"query) and `length_bucket`. Evaluation sets are {'balanced over `' + src.label_field + '`' if src.label_field else 'not label-balanced (no label field)'}.",
        f"Rows dropped by the source filter: {src.filtered or 'none'}.",
        *_atom_lines(src, configs, atoms, unparseable),
        *_finetune_lines(tuned, comparison),
        "The YAML header records every parameter, the seed, the source content hash, the model revision "
        "and the sha256 of every data file.",
        "",
        "## How the splits differ",
        "",
        *sections,
        "",
        "## Source and citation",
        "",
        f"Source: {src.name}" + (f", license {src.license}." if src.license else "."),
    ]
    if src.citation:
        lines += ["", "```bibtex", src.citation, "```"]
    lines += ["", f"Method: {PAPER}"]
    return "\n".join(lines)
