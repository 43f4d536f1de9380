"""Does scoring stay linear in the number of rows? The batch plan, the cache key, the sharding and
gather and the cache file, timed per row at growing sizes with a tiny random model.

    python benchmarks/scoring_linearity.py                       # 10k, 100k, 1M rows
    python benchmarks/scoring_linearity.py --sizes 10000,100000 --json

The model is a random 2-layer Llama (hidden size 32) with a word-level tokenizer, so the model
arithmetic is small and what is measured is resplit's own work around it:
``cache_key`` (sha256 of every text), ``encode`` (tokenising, BOS/EOS layout), ``plan_batches``
(length-sorted batches), the whole ``compute_scores`` with the tiny model (up to ``--model-rows``),
the same with the model arithmetic stubbed out (what is left is resplit's own work: model load,
encode, plan, the loop and its checkpoints, ``gather_object``, the checksummed cache file) at
every size, and a second ``compute_scores`` that reads the cache. Per-row times that stay flat from 10k to 1M rows mean linear growth. The texts are the
synthetic SNLI-like pairs of ``benchmarks/scale.py``.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def tiny_model(folder: Path) -> Path:
    """A random tiny Llama with a word-level tokenizer over the synthetic vocabulary (capitalised
    too) and punctuation, saved as a model folder."""
    import torch
    from scale import make_vocabulary
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = make_vocabulary(np.random.default_rng(0)).tolist()
    symbols = list(dict.fromkeys(["<pad>", "<s>", "</s>", "<unk>", *string.punctuation, "Premise", "Hypothesis",
                                  *words, *(w.capitalize() for w in words)]))
    tokenizer = Tokenizer(models.WordLevel(vocab={s: i for i, s in enumerate(symbols)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                        pad_token="<pad>", unk_token="<unk>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(symbols), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def pairs(n_rows: int, work: Path):
    import pyarrow.parquet as pq
    from scale import make_inputs

    table = pq.read_table(make_inputs(n_rows, work)[0])
    prompts = [f"Premise: {p} Hypothesis:" for p in table.column("premise").to_pylist()]
    return prompts, [" " + h for h in table.column("hypothesis").to_pylist()]


def measure(n_rows: int, model_dir: Path, work: Path, model_rows: int) -> dict:
    import torch

    from split_builders.signals.lm.models import load_model, resolve_model
    from split_builders.signals.lm.scoring import LikelihoodScorer, cache_key, compute_scores, encode, plan_batches

    torch.set_num_threads(1)
    prompts, queries = pairs(n_rows, work)
    ref = resolve_model(str(model_dir))
    tokenizer = load_model(ref, dtype=torch.float32, device="cpu").tokenizer
    timings = {}

    def timed(name, function):
        started = time.perf_counter()
        value = function()
        timings[name] = time.perf_counter() - started
        return value

    timed("cache_key", lambda: cache_key(prompts, queries, model_identity=ref.identity, dtype="float32",
                                         batch_size=32, max_batch_tokens=8192))
    encoded = timed("encode", lambda: encode(tokenizer, prompts, queries, max_length=1024))
    timed("plan_batches", lambda: plan_batches(encoded, batch_size=32, max_batch_tokens=8192))
    score = lambda cache: compute_scores(prompts, queries, model_ref=ref, cache_dir=work / cache,  # noqa: E731
                                         device="cpu", batch_size=32, progress=False)
    if n_rows <= model_rows:
        run = timed("with_model", lambda: score(f"scores-{n_rows}"))
        assert np.isfinite(run.scores).all()
    # resplit's own work around the model: the same call with the model arithmetic stubbed out.
    real = LikelihoodScorer.score_batch
    LikelihoodScorer.score_batch = lambda self, batch: -np.arange(1, len(batch) + 1, dtype=np.float64)
    try:
        run = timed("stubbed", lambda: score(f"stubbed-{n_rows}"))
        again = timed("cached", lambda: score(f"stubbed-{n_rows}"))
    finally:
        LikelihoodScorer.score_batch = real
    assert again.from_cache and np.array_equal(run.scores, again.scores) and np.isfinite(run.scores).all()
    return {"rows": n_rows, **{k: round(v, 3) for k, v in timings.items()},
            "per_row_us": {k: round(1e6 * v / n_rows, 2) for k, v in timings.items()}}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--work", default=None)
    parser.add_argument("--model-rows", type=int, default=100000,
                        help="score with the tiny model up to this many rows (the stubbed run: every size)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="resplit-scoring-"))
    work.mkdir(parents=True, exist_ok=True)
    model_dir = tiny_model(work / "tiny-char-llama")
    rows = []
    names = ("cache_key", "encode", "plan_batches", "with_model", "stubbed", "cached")
    print(f"{'rows':>9} " + " ".join(f"{n:>15}" for n in names) + "   (microseconds per row)")
    for n_rows in (int(float(s)) for s in args.sizes.split(",")):
        row = measure(n_rows, model_dir, work, args.model_rows)
        rows.append(row)
        print(f"{n_rows:>9} " + " ".join(f"{row['per_row_us'].get(n, float('nan')):>15.2f}" for n in names))
    result = {"rows": rows}
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
