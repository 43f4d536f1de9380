"""The card and terminal text of Likelihood Splits (:mod:`split_builders.methods.likelihood`): per-config summaries,
the signal, fine-tuning and atom-constraint paragraphs, and the warnings about scores that cannot order the rows."""

from __future__ import annotations

import numpy as np

from split_builders.contracts import Loaded, Signal
from split_builders.splitters.likelihood import CONFIG_NAMES


def score_warnings(values) -> list[str]:
    """Scores that cannot order the rows (all equal, or mostly one value), said on the terminal and in the card."""
    from split_builders.signals.given import score_warnings

    lines = score_warnings(values.scores)
    if values.finetuned is not None:
        lines += score_warnings(values.finetuned_scores, what="fine-tuned scores")
    return lines


def per_split(config, values: np.ndarray, data) -> dict:
    """Per split of a config: its signal, lengths and labels (empty arrays for a split it lacks)."""
    from split_builders.splits import SPLITS

    codes, classes = data.label_codes()
    parts = {}
    for split in SPLITS:
        rows = np.asarray(config.indices.get(split, ()), dtype=np.int64)
        parts[split] = {"signal": values[rows], "length": data.lengths[rows],
                        "labels": None if classes is None else classes[codes[rows]].tolist()}
    return parts


def summaries(loaded: Loaded, signal: Signal, configs) -> dict:
    """Per config: rows, label shares, mean score and length per split, and the train-vs-test
    Kolmogorov-Smirnov statistics of score and length (:func:`split_builders.summaries.split_summary`).
    Computed once per build (the card and the terminal report both show them)."""
    from split_builders.summaries import split_summary

    data = loaded.data
    key = tuple(id(c) for c in configs)
    if data.summaries_of != key:
        data.summaries = {c.name: split_summary(per_split(c, signal.values.of(c), data), "score", labels=data.labels)
                          for c in configs}
        data.summaries_of = key
    return data.summaries


def signal_paragraph(src, provenance: dict) -> str:
    signal = provenance.get("prompted", provenance)
    if "model" in signal:
        return (f"Scores s(x): log-likelihood of the query `{src.query_field}` given the prompt, from "
                f"{signal['model']} (revision `{signal['model_revision'][:19]}`, {signal['dtype']}), template "
                f"`{signal['template']['name']}`.")
    given = signal["given"]
    return f"Scores s(x): supplied by the curator ({given['file']}, sha256 `{given['sha256'][:16]}`)."


def finetune_lines(provenance: dict) -> list[str]:
    tuned, comparison = provenance.get("finetuned"), provenance.get("comparison", {})
    if tuned is None:
        return []
    folds = "; ".join(f"fold {f['fold']}: {f['steps']} steps, best at step {f['best_step']} "
                      f"(held-out loss {f['best_eval_loss']:.4f}), trained on {f['train_rows']} rows"
                      for f in tuned["fold_reports"])
    overlaps = ", ".join(f"{name} {100 * share:.1f}%" for name, share in comparison.get("eval_overlap", {}).items())
    return [
        f"Fine-tuned scores (`ll_split*`, column `score_finetuned`, fold in `fold`): {tuned['model']} fine-tuned "
        f"with k = {tuned['folds']} cross-fitting (each row scored by a model trained on the other folds), template "
        f"`{tuned['template']['name']}`, batch {tuned['batch_size']}, constant learning rate "
        f"{tuned['learning_rate']:g}, evaluation every {tuned['eval_steps']} steps on "
        f"{100 * tuned['eval_fraction']:.0f}% of the training folds, best checkpoint by held-out perplexity, "
        f"early stopping patience {tuned['patience']}, at most {tuned['max_steps']} steps. {folds}.",
        f"Prompted vs fine-tuned scores: Pearson correlation **{comparison.get('pearson', float('nan')):.3f}**; "
        f"shared evaluation rows (validation + test): {overlaps or 'n/a'}.",
    ]


def atom_lines(src, configs, atoms, unparseable) -> list[str]:
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


def describe_run(run) -> str:
    steps = ", ".join(str(r["steps"]) for r in run.fold_reports)
    resumed = f", {run.resumed_folds} fold(s) resumed" if run.resumed_folds else ""
    return f"steps per fold {steps}{resumed}"


def compare_signals(prompted: np.ndarray, tuned: np.ndarray, configs) -> dict:
    """Pearson correlation of the two signals and, per variant, the overlap of the evaluation sets
    (validation + test) their configs hold out: |both| / |eval|."""

    by_name = {c.name: c for c in configs}
    overlaps = {}
    for variant, tuned_name in CONFIG_NAMES["finetuned"].items():
        prompted_name = CONFIG_NAMES["prompted"][variant]
        if tuned_name in by_name and prompted_name in by_name:
            held = [set(np.concatenate([by_name[n].indices[s] for s in by_name[n].splits if s != "train"]).tolist())
                    for n in (prompted_name, tuned_name)]
            overlaps[f"{prompted_name} vs {tuned_name}"] = len(held[0] & held[1]) / max(len(held[1]), 1)
    return {"pearson": float(np.corrcoef(prompted, tuned)[0, 1]), "eval_overlap": overlaps}
