"""How fast resplit fine-tunes, and what the paper's ``ll_split`` setting costs at full scale.

1. A measurement: the default model (SmolLM2-135M) is fine-tuned for ``--steps`` optimizer steps
   of ``--batch`` SNLI examples on this machine, with the same encoding, collator (loss on the
   query + EOS only, position ids from the mask) and optimizer settings as
   :func:`split_builders.signals.lm.finetune.finetune_scores` (AdamW, constant 2e-5). Prints training
   tokens/s (real, unpadded tokens), examples/s, and the model FLOP/s that implies
   (6 x parameters x tokens).
2. An estimate (arithmetic, nothing run): GPT-2 medium (355M parameters), k=3 cross-fitted
   fine-tuning on SNLI's 570,152 pairs, on 8 GPUs. Tokens per example are measured on the SNLI
   sample with the ``snli`` template (the one the fine-tuned setting scores), tokenised with the
   SmolLM2 tokenizer as a proxy for GPT-2's (both are byte-level BPE over English; GPT-2's
   tokenizer is not available offline here). FLOPs: training 6 x N x tokens per step x steps
   x k; held-out evaluation (every ``eval_steps`` on 10% of the training folds) and scoring
   2 x N x tokens; at an assumed 40% model FLOP utilisation of the dense bf16 peak
   (A100 312 TFLOP/s, H100 SXM 989 TFLOP/s). Step counts are upper bounds: early stopping can
   end a fold sooner.

    python benchmarks/finetune.py                     # 10 steps of 8 on this CPU, then the table
    python benchmarks/finetune.py --steps 20 --batch 16 --device cuda
    python benchmarks/finetune.py --json              # last line: one JSON object
    python benchmarks/finetune.py --packing           # padded vs packed training, side by side

3. ``--packing``: the same SNLI rows trained step for step on a random GPT-2-shaped model
   (``--width``, ``--layers``, SmolLM2's vocabulary) the padded way (``packing=False``: right-padded
   rows, the model's own loss over every position's logits) and the packed way (the default: rows
   concatenated, :class:`~split_builders.signals.lm.training_batches.PackedCollator`, the chunked linear
   cross-entropy on the labelled positions only), rounds alternating so that a loaded machine
   slows both alike. Prints real training tokens/s of each and their ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loading_scripts import load_source  # noqa: E402
from split_builders.signals.lm.finetune import DEFAULT_MAX_STEPS, FinetuneOptions  # noqa: E402
from split_builders.signals.lm.training_batches import Examples, PaddedCollator  # noqa: E402
from split_builders.signals.lm.models import ensure_local, resolve_model  # noqa: E402
from split_builders.signals.lm.prompts import render_all, resolve_template  # noqa: E402
from split_builders.signals.lm.scoring import encode, model_context_length  # noqa: E402

SNLI_PAIRS = 570_152  # train 550,152 + validation 10,000 + test 10,000
GPT2_MEDIUM_PARAMS = 355e6
PEAKS = {"A100 (312 TFLOP/s bf16)": 312e12, "H100 SXM (989 TFLOP/s bf16)": 989e12}
MFU = 0.40
GPUS = 8
PAPER = FinetuneOptions()  # k = 3, batch 32, evaluation every 64 steps on 10% of the training folds


def snli_encoded(n: int | None, tokenizer, max_length: int):
    source = load_source("snli-sample")
    if n is not None:
        source.dataset = source.dataset.select(range(min(n, len(source))))
    prompts, queries = render_all(resolve_template("snli", task="snli", prompt_field=None, query_field=None), source)
    return encode(tokenizer, prompts, queries, max_length=max_length)


def measure(*, steps: int, batch: int, device: str, threads: int | None) -> dict:
    """Fine-tune SmolLM2 for ``steps`` steps; tokens/s and examples/s of the training loop alone."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads:
        torch.set_num_threads(threads)
    path = ensure_local(resolve_model(None))
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).train()
    encoded = snli_encoded(None, tokenizer, model_context_length(model))
    rows = np.random.default_rng(0).permutation(len(encoded))
    rows = np.resize(rows, (steps + 1) * batch)  # one warm-up step, then the timed ones
    dataset, collate = Examples(encoded, rows), PaddedCollator(tokenizer.pad_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=PAPER.learning_rate, weight_decay=0.0)
    tokens = padded = 0
    for step in range(steps + 1):
        if step == 1:
            started = time.perf_counter()
        features = [dataset[i] for i in range(step * batch, (step + 1) * batch)]
        inputs = {name: value.to(device) for name, value in collate(features).items()}
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= 1:
            tokens += int(inputs["attention_mask"].sum())
            padded += inputs["attention_mask"].numel()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    params = sum(p.numel() for p in model.parameters())
    return {"model": "SmolLM2-135M-Instruct", "parameters": params, "device": device,
            "threads": torch.get_num_threads(), "steps": steps, "batch": batch, "seconds": round(seconds, 2),
            "tokens_per_s": round(tokens / seconds, 1), "padded_tokens_per_s": round(padded / seconds, 1),
            "examples_per_s": round(steps * batch / seconds, 2),
            "achieved_flop_per_s": round(6 * params * tokens / seconds, 1), "final_loss": round(loss.item(), 4)}


def compare_packing(*, steps: int, batch: int, device: str, threads: int | None, width: int, layers: int,
                    rounds: int = 2) -> dict:
    """Real training tokens/s of padded and packed steps over the same rows (see the module docstring)."""
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from split_builders.signals.lm.linear_ce import causal_lm_loss, hidden_states
    from split_builders.signals.lm.training_batches import PackedCollator

    if threads:
        torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(ensure_local(resolve_model(None)))
    encoded = snli_encoded(None, tokenizer, 1024)
    rows = np.resize(np.random.default_rng(0).permutation(len(encoded)), (steps + 1) * batch)
    dataset = Examples(encoded, rows)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=width, n_layer=layers, n_head=max(1, width // 64),
                        n_positions=1024, use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)  # no dropout: same curves
    collators = {"padded": PaddedCollator(tokenizer.pad_token_id), "packed": PackedCollator()}

    def loss_of(mode, model, inputs):
        if mode == "padded":
            return model(**inputs).loss
        labels = inputs.pop("labels")
        inputs.pop("rows")
        _, hidden = hidden_states(model, model, inputs)
        return causal_lm_loss(hidden, labels, model.lm_head.weight)

    seconds, tokens, losses = {mode: 0.0 for mode in collators}, {mode: 0 for mode in collators}, {}
    for _ in range(rounds):
        for mode, collate in collators.items():
            torch.manual_seed(0)
            model = GPT2LMHeadModel(config).to(device).train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=PAPER.learning_rate, weight_decay=0.0)
            curve = []
            for step in range(steps + 1):
                if step == 1:
                    started = time.perf_counter()
                features = [dataset[i] for i in range(step * batch, (step + 1) * batch)]
                inputs = {name: value.to(device) for name, value in collate(features).items()}
                real = sum(len(f["input_ids"]) for f in features)
                loss = loss_of(mode, model, inputs)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                curve.append(loss.item())
                if step >= 1:
                    tokens[mode] += real
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            seconds[mode] += time.perf_counter() - started
            losses[mode] = curve
    rate = {mode: tokens[mode] / seconds[mode] for mode in collators}
    return {"model": f"random GPT-2 shape, width {width}, {layers} layers, vocabulary {len(tokenizer)}",
            "device": device, "threads": torch.get_num_threads(), "steps": steps, "batch": batch, "rounds": rounds,
            "tokens_per_s": {mode: round(value, 1) for mode, value in rate.items()},
            "packed_over_padded": round(rate["packed"] / rate["padded"], 3),
            "max_loss_difference": float(np.max(np.abs(np.subtract(losses["packed"], losses["padded"]))))}


def tokens_per_example() -> float:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(ensure_local(resolve_model(None)))
    encoded = snli_encoded(None, tokenizer, 1024)
    return float(np.mean([len(e.ids) for e in encoded]))


def estimate(tokens: float, *, max_steps: int) -> dict:
    """FLOPs and hours of GPT-2 medium k-fold fine-tuning + scoring of SNLI on 8 GPUs."""
    n = GPT2_MEDIUM_PARAMS
    eval_rows = SNLI_PAIRS * (PAPER.folds - 1) / PAPER.folds * PAPER.eval_fraction
    evaluations = -(-max_steps // PAPER.eval_steps)
    flops = {
        "training": 6 * n * tokens * PAPER.batch_size * max_steps * PAPER.folds,
        "held-out evaluation": 2 * n * tokens * eval_rows * evaluations * PAPER.folds,
        "scoring (each pair once)": 2 * n * tokens * SNLI_PAIRS,
    }
    flops["total"] = sum(flops.values())
    hours = {gpu: {part: value / (GPUS * MFU * peak) / 3600 for part, value in flops.items()}
             for gpu, peak in PEAKS.items()}
    # Not FLOPs but often the real bottleneck: every evaluation writes a float32 checkpoint.
    checkpoint_bytes = 4 * n * evaluations * PAPER.folds
    return {"checkpoint_bytes_written": checkpoint_bytes, "tokens_per_example": round(tokens, 1), "params": n,
            "pairs": SNLI_PAIRS, "k": PAPER.folds, "batch": PAPER.batch_size, "max_steps_per_fold": max_steps, "eval_every": PAPER.eval_steps, "eval_rows_per_evaluation": int(eval_rows),
            "evaluations_per_fold": evaluations, "gpus": GPUS, "mfu": MFU, "flops": flops, "hours": hours}


def table(result: dict) -> str:
    lines = [f"| part | FLOPs | {' | '.join(f'hours, 8x {gpu}' for gpu in result['hours'])} |",
             "|---|---:|" + "---:|" * len(result["hours"])]
    for part, value in result["flops"].items():
        cells = " | ".join(f"{result['hours'][gpu][part]:.3f}" for gpu in result["hours"])
        lines.append(f"| {part} | {value:.2e} | {cells} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    parser.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS["snli"],
                        help="optimizer steps per fold in the estimate (resplit's SNLI default cap)")
    parser.add_argument("--json", action="store_true", help="also print one JSON object as the last line")
    parser.add_argument("--packing", action="store_true", help="only compare padded and packed training (3.)")
    parser.add_argument("--width", type=int, default=128, help="GPT-2 shape of --packing: hidden size")
    parser.add_argument("--layers", type=int, default=2, help="GPT-2 shape of --packing: layers")
    args = parser.parse_args(argv)

    if args.packing:
        compared = compare_packing(steps=args.steps, batch=args.batch, device=args.device, threads=args.threads,
                                   width=args.width, layers=args.layers)
        rates = compared["tokens_per_s"]
        print(f"padded vs packed training, {compared['model']}, {compared['steps']} steps of {compared['batch']} SNLI "
              f"rows x {compared['rounds']} rounds on {compared['device']} ({compared['threads']} threads): padded "
              f"{rates['padded']:.0f} tokens/s, packed {rates['packed']:.0f} tokens/s, packed/padded "
              f"{compared['packed_over_padded']:.2f}x; largest loss difference {compared['max_loss_difference']:.2e}")
        if args.json:
            print(json.dumps(compared))
        return

    measured = measure(steps=args.steps, batch=args.batch, device=args.device, threads=args.threads)
    print(f"measured: {measured['model']} ({measured['parameters'] / 1e6:.0f}M), {measured['steps']} steps of "
          f"{measured['batch']} on {measured['device']} ({measured['threads']} threads): "
          f"{measured['tokens_per_s']:.0f} tokens/s, {measured['examples_per_s']:.2f} examples/s, "
          f"{measured['achieved_flop_per_s'] / 1e9:.1f} GFLOP/s (6 N tokens), {measured['seconds']} s")
    projected = estimate(tokens_per_example(), max_steps=args.max_steps)
    print(f"estimate: GPT-2 medium (355M), k={PAPER.folds}, SNLI {SNLI_PAIRS:,} pairs, {projected['tokens_per_example']} "
          f"tokens/pair (snli template, SmolLM2 tokenizer as a proxy for GPT-2's), batch {PAPER.batch_size}, "
          f"{args.max_steps} steps/fold max, eval every {PAPER.eval_steps} steps on {projected['eval_rows_per_evaluation']:,} "
          f"rows, {GPUS} GPUs at {MFU:.0%} MFU of the dense bf16 peak")
    print(table(projected))
    print(f"not in the FLOPs: {projected['evaluations_per_fold'] * PAPER.folds} checkpoint writes of {4 * GPT2_MEDIUM_PARAMS / 1e9:.2f} GB "
          f"(float32 weights) = {projected['checkpoint_bytes_written'] / 1e9:.0f} GB written; and {PAPER.batch_size} pairs of "
          f"~{projected['tokens_per_example']:.0f} tokens per step is ~{PAPER.batch_size * projected['tokens_per_example']:.0f} tokens "
          f"per step over {GPUS} GPUs, far too little work to reach {MFU:.0%} MFU: read the hours as a lower bound")
    if args.json:
        print(json.dumps({"measured": measured, "estimate": projected}))


if __name__ == "__main__":
    main()
