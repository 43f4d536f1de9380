"""How fast ``resplit audit TARGET --against-corpus SOURCE`` streams a corpus on datatrove's local executor, per
core, and what that means for FineWeb-Edu and Dolma on a cluster.

    python benchmarks/corpus_throughput.py                       # 2,000,000 documents, 1 and 2 workers
    python benchmarks/corpus_throughput.py --documents 200000 --shards 8 --json

**Corpus.** A synthetic web-like corpus written as Parquet shards (``text``, ``id``) in a temporary folder:
words drawn from a Zipf law over a 50,000-word vocabulary (real English words first: SNLI's), sentences of
4 to 30 words, paragraphs (lines) of 1 to 8 sentences with short header / menu lines between them, document
lengths log-normal (median about 1,900 characters, mean about 2,600, as web pages after text extraction),
seeded. 200 documents carry a copy of an evaluation row (premise and hypothesis as two lines) among their
paragraphs; the run must find every one.

**Target.** A likelihood release of SNLI-like rows (the reference inputs under ``../shared/reference``), 500
validation and 500 test rows per config; all five configs are checked.

**Runs**, each a fresh process, on the same shards: datatrove's ``ParquetReader`` alone (the peer: reading and
making documents, nothing matched) and resplit's pipeline (reader -> matcher -> writer, then the merge), each
with 1 and 2 workers (as many tasks as shards). Printed: wall seconds, documents/s and GB/s of text (UTF-8),
per worker, the scaling from 1 to 2 workers, and the peak resident memory of one task (each task records its
process's ``VmHWM``; with 1 worker the tasks run in the command's own process). One worker already uses more
than one core (numpy and Arrow threads), so the per-core figure to use is that of as many workers as cores.
Last: the core-hours and 64-node wall time for FineWeb-Edu and Dolma, with the arithmetic, at the lower
per-worker rate.

The machine is shared: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PLANTED = 200

# The corpora of the estimate: tokens as published; bytes of text per token assumed (English web text, GPT-2 /
# Llama-2 style tokenizers: about 4.5 characters, nearly all ASCII, per token).
BYTES_PER_TOKEN = 4.5
CORPORA = {
    "FineWeb-Edu (HuggingFaceFW/fineweb-edu, 1.3T tokens, GPT-2 tokenizer)": 1.3e12,
    "Dolma v1.6 (allenai/dolma, 3T tokens, Llama-2 tokenizer)": 3.0e12,
}
NODES, CORES_PER_NODE = 64, 64


def snli_words() -> list[str]:
    words: dict = {}
    with gzip.open(SHARED / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for w in (row["sentence1"] + " " + row["sentence2"]).lower().replace(".", " ").split():
                words[w] = None
    return list(words)


def write_corpus(folder: Path, documents: int, shards: int, planted: list[str], seed: int = 0) -> dict:
    """The synthetic corpus: ``shards`` Parquet files of ``documents`` documents in all; returns its size."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    real = snli_words()
    vocabulary = real + [f"w{k}" for k in range(50_000 - len(real))]
    rank = np.arange(1, len(vocabulary) + 1)
    p = 1.0 / rank ** 1.07
    p /= p.sum()
    # each token: a word and what follows it (a space, a sentence end, a line end)
    suffixes = [" ", ". ", ".\n"]
    tokens = np.array([(w + s).encode() for w in vocabulary for s in suffixes], dtype=object)
    sizes = np.array([len(t) for t in tokens], dtype=np.int64)
    folder.mkdir(parents=True, exist_ok=True)
    plant_at = set(rng.choice(documents, size=len(planted), replace=False).tolist())
    plant_of = dict(zip(sorted(plant_at), planted))
    total_bytes = 0
    per_shard = -(-documents // shards)
    for s in range(shards):
        first, last = s * per_shard, min(documents, (s + 1) * per_shard)
        n = last - first
        chars = np.exp(rng.normal(np.log(1900), 0.8, size=n)).clip(200, 100_000)
        words = np.maximum(3, (chars / 6.3).astype(np.int64))
        total = int(words.sum())
        word = rng.choice(len(vocabulary), size=total, p=p)
        end = rng.random(total)
        suffix = np.where(end < 1 / 60, 2, np.where(end < 1 / 12, 1, 0))
        data = b"".join(tokens[word * 3 + suffix])
        lengths = sizes[word * 3 + suffix]
        offsets = np.concatenate([[0], np.cumsum(lengths)])[np.concatenate([[0], np.cumsum(words)])]
        texts = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(data))
        mine = [k for k in range(first, last) if k in plant_of]
        if mine:  # a planted evaluation row: two lines among the paragraphs of its document
            values = texts.to_pylist()
            for k in mine:
                text = values[k - first]
                cut = text.find("\n", len(text) // 2)
                head, tail = (text, "") if cut < 0 else (text[:cut + 1], text[cut + 1:])
                values[k - first] = head.rstrip("\n") + "\n" + plant_of[k] + "\n" + tail
            texts = pa.array(values, pa.large_string())
        ids = pa.array([f"doc-{k:09d}" for k in range(first, last)], pa.string())
        pq.write_table(pa.table({"text": texts, "id": ids}), folder / f"shard-{s:05d}.parquet",
                       row_group_size=20_000)
        total_bytes += int(pa.compute.sum(pa.compute.binary_length(texts)).as_py())
    return {"documents": documents, "shards": shards, "bytes": total_bytes}


PEER = """
import sys, time, resource
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.utils.logging import logger
logger.remove()
folder, tasks, workers, logs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
LocalPipelineExecutor([ParquetReader(folder, read_metadata=True)], tasks=tasks, workers=workers,
                      logging_dir=logs).run()
"""


def timed(command: list, env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=2_000_000)
    parser.add_argument("--shards", type=int, default=40)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--keep", help="keep the corpus and work folders here")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="resplit-corpus-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    python = sys.executable
    try:
        reference = SHARED / "reference" / "likelihood" / "inputs" / "snli"
        target = root / "target"
        if not target.exists():
            timed([python, "-m", "split_builders.cli", "likelihood", "--source", str(reference / "all_examples.csv"),
                   "--prompt-field", "premise", "--query-field", "hypothesis", "--label-field", "gold_label",
                   "--scores", str(reference / "all_examples__False_loglikelihoods.npy"), "--validation-size", "500",
                   "--test-size", "500", "--limit", "5000", "--out", str(target), "--no-progress"], env)
        import pandas as pd

        test = pd.read_parquet(next((target / "random").glob("test-*.parquet")))
        planted = [f"{r.premise}\n{r.hypothesis}" for r in test.head(PLANTED).itertuples()]
        corpus = root / "corpus"
        started = time.perf_counter()
        if not corpus.exists():
            size = write_corpus(corpus, args.documents, args.shards, planted)
            (root / "corpus.json").write_text(json.dumps(size))
        size = json.loads((root / "corpus.json").read_text())
        made = time.perf_counter() - started
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "?")
        flags = Path("/proc/cpuinfo").read_text()
        print(f"corpus: {size['documents']:,} documents, {size['bytes'] / 1e9:.2f} GB of text, {size['shards']} "
              f"Parquet shards (written in {made:.0f} s); CPU: {cpu}, {os.cpu_count()} cores, "
              f"{'avx512_bf16' if 'avx512_bf16' in flags else 'no avx512_bf16'}, "
              f"{'AMX' if 'amx_tile' in flags else 'no AMX'}", flush=True)
        results = []
        for workers in [int(w) for w in args.workers.split(",")]:
            logs = root / f"peer-{workers}"
            shutil.rmtree(logs, ignore_errors=True)
            seconds, _ = timed([python, "-c", PEER, str(corpus), str(args.shards), str(workers), str(logs)], env)
            results.append({"run": "datatrove ParquetReader alone (peer)", "workers": workers, "seconds": seconds})
            print(f"  peer, {workers} worker(s): {seconds:.1f} s", flush=True)
            work = root / f"work-{workers}"
            shutil.rmtree(work, ignore_errors=True)
            seconds, out = timed([python, "-m", "split_builders.cli", "audit", str(target), "--against-corpus",
                                  str(corpus), "--work", str(work), "--tasks", str(args.shards), "--workers",
                                  str(workers), "--json", "--no-progress"], env)
            report = json.loads(out)
            tasks = [json.loads(p.read_text()) for p in (work / "tasks").glob("*.json")]
            exact = report["against"]["random"]["test"]["exact"]
            results.append({"run": "resplit reader -> matcher -> writer + merge", "workers": workers,
                            "seconds": seconds, "task_peak_rss_mb": max(t["peak_rss_kb"] for t in tasks) / 1024,
                            "records": report["corpus"]["records"], "planted_found": exact})
            print(f"  resplit, {workers} worker(s): {seconds:.1f} s, {exact} of {PLANTED} planted rows found, one "
                  f"task's peak RSS {results[-1]['task_peak_rss_mb']:.0f} MB", flush=True)
            if exact < PLANTED:
                raise SystemExit(f"only {exact} of the {PLANTED} planted rows were found")
        print()
        print(f"{'run':46} {'workers':>7} {'seconds':>8} {'docs/s':>9} {'docs/s/wkr':>11} {'MB/s/wkr':>9} "
              f"{'task RSS':>9}")
        for r in results:
            r["docs_per_s"] = size["documents"] / r["seconds"]
            r["docs_per_s_core"] = r["docs_per_s"] / r["workers"]
            r["gb_per_s_core"] = size["bytes"] / r["seconds"] / r["workers"] / 1e9
            rss = f"{r['task_peak_rss_mb']:.0f} MB" if "task_peak_rss_mb" in r else ""
            print(f"{r['run']:46} {r['workers']:>7} {r['seconds']:>8.1f} {r['docs_per_s']:>9,.0f} "
                  f"{r['docs_per_s_core']:>11,.0f} {1000 * r['gb_per_s_core']:>9.2f} {rss:>9}")
        ours = {r["workers"]: r for r in results if r["run"].startswith("resplit")}
        if 1 in ours and 2 in ours:
            print(f"\nscaling 1 -> 2 workers: {ours[1]['seconds'] / ours[2]['seconds']:.2f}x "
                  f"(2 shared cores; peer: {results[0]['seconds'] / results[2]['seconds']:.2f}x)")
        best = max(r["gb_per_s_core"] for r in ours.values())
        per_core = min(r["gb_per_s_core"] for r in ours.values())  # the conservative per-core figure
        print(f"\nEstimate, at {per_core * 1000:.2f} MB/s of text per core (the lower of the two runs; the higher: "
              f"{best * 1000:.2f}), {BYTES_PER_TOKEN} bytes of text per token, {NODES} nodes x {CORES_PER_NODE} "
              "cores, one task per core:")
        estimates = {}
        for name, tokens in CORPORA.items():
            text = tokens * BYTES_PER_TOKEN
            core_hours = text / (per_core * 1e9) / 3600
            wall = core_hours / (NODES * CORES_PER_NODE)
            estimates[name] = {"tokens": tokens, "bytes": text, "core_hours": core_hours, "wall_hours": wall}
            print(f"  {name}: {tokens / 1e12:.1f}e12 tokens x {BYTES_PER_TOKEN} B = {text / 1e12:.2f} TB; "
                  f"/ {per_core * 1e3:.2f} MB/s = {core_hours:,.0f} core-hours; / {NODES * CORES_PER_NODE} cores = "
                  f"{wall * 60:.1f} minutes wall")
        if args.json:
            print(json.dumps({"corpus": size, "cpu": cpu, "results": results, "estimates": estimates}))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
