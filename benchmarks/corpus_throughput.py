"""How fast ``resplit audit TARGET --against-corpus SOURCE`` streams a corpus on datatrove's local executor, per
core, for short, medium and long documents; the cost model fitted to it (a cost per document plus a cost per
byte); and what that model means for Dolma and FineWeb-Edu on a cluster.

    python benchmarks/corpus_throughput.py          # 100,000 short, 24,000 medium, 6,000 long; 1 and 2 workers
    python benchmarks/corpus_throughput.py --quick  # a quarter of the documents
    python benchmarks/corpus_throughput.py --json   # last line: one JSON object
    python benchmarks/corpus_throughput.py --sizes medium --executors local,ray  # local against Ray (no model)

**Corpora.** Three, each of 2 Parquet shards (``text``, ``id``), written in a temporary folder from real English
text: the sentences of BoolQ's dev passages and its questions (``../shared/data/boolq``, Wikipedia text; see
``MANIFEST.md``), drawn at random, a line break after every 3 to 6 sentences, each document cut at the last
space before a length drawn log-normal around its size: short (median 100 bytes), medium (1,000) and long
(5,000). 20 documents of each carry a copy of an evaluation row (premise and hypothesis as two lines); every
run must find all 20. A fourth corpus holds those 20 documents alone: its runs measure the fixed cost of a
command (imports, the evaluation index, starting the workers, the merge).

**Target.** A likelihood release of SNLI-like rows (the reference inputs under ``../shared/reference``), 500
validation and 500 test rows per config; all five configs are checked.

**Runs**, each a fresh process, on the same shards, with 1 and 2 workers (2 tasks): resplit's pipeline (reader
-> matcher -> writer, then the merge) and, as the peer, datatrove's ``ParquetReader`` alone (reading and
making documents, nothing matched). Printed per corpus and worker count: the scan's wall seconds (the
executor's run: ``this_run`` of the command's JSON; the peer times the same call) and documents/s; the CPU
seconds of the command and its workers (``getrusage`` of the children: the cost on a cluster, where each core
runs one task, and the figure least disturbed by other work on a shared machine), less the fixed cost
measured on the 20-document corpus, and from them documents and MB of text (UTF-8) per CPU-second; the peak
resident memory of one task (each task records its process's ``VmHWM``; with 1 worker the tasks run in the
command's own process).

**Model.** ``CPU-seconds = a x documents + b x bytes``, fitted by least squares (numpy) on the relative error of
each run (the fixed cost taken out first), per worker count (and for all runs together), printed beside the
measurements. The estimate takes the fit of as many workers as cores (every core busy, as on a cluster: each
core's CPU-seconds per document rise when its neighbours work). Last: the core-hours and 64-node wall time of
Dolma v1.6 and FineWeb-Edu by that model, from the document counts and sizes their own cards and papers publish
(:data:`CORPORA`).

The machine is shared: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
PLANTED = 20  # evaluation rows copied into each corpus
SHARDS = 2  # per corpus: as many tasks as the most workers run
SIZES = {"short": 100, "medium": 1_000, "long": 5_000}  # median bytes of a document
DOCUMENTS = {"short": 100_000, "medium": 24_000, "long": 6_000}  # --quick: a quarter
NODES, CORES_PER_NODE = 64, 64

# The corpora of the estimate, as their own cards and papers give them. None: not published there (searched).
CORPORA = {
    "Dolma v1.6": {
        "documents": 4.367e9, "bytes": 11.519e12, "tokens": 3.059e12,
        "source": "allenai/dolma dataset card, 'Summary Statistics (v1.6)', Total row: 11,519 GB of UTF-8 text, "
                  "4,367 million documents, 3,059 billion Llama tokens (https://huggingface.co/datasets/allenai/dolma;"
                  " the same table is Table 1 of Soldaini et al. 2024, https://arxiv.org/abs/2402.00159)"},
    "FineWeb-Edu": {
        "documents": None, "bytes": None, "tokens": 1.3e12,
        "source": "HuggingFaceFW/fineweb-edu dataset card: 1.3T GPT-2 tokens "
                  "(https://huggingface.co/datasets/HuggingFaceFW/fineweb-edu; Penedo et al. 2024, "
                  "https://arxiv.org/abs/2406.17557); neither gives its document count or bytes of text"},
}


def fit_cost(documents, text_bytes, seconds) -> tuple[float, float]:
    """``(a, b)`` of ``seconds = a x documents + b x bytes``: least squares on the relative error (each run's
    equation divided by its seconds, so a long run does not outweigh a short one)."""
    documents, text_bytes, seconds = (np.asarray(v, dtype=float) for v in (documents, text_bytes, seconds))
    design = np.column_stack([documents, text_bytes]) / seconds[:, None]
    (a, b), *_ = np.linalg.lstsq(design, np.ones_like(seconds), rcond=None)
    return float(a), float(b)


def core_seconds(a: float, b: float, documents: float, text_bytes: float) -> float:
    """The model's CPU-seconds for a corpus of ``documents`` documents and ``text_bytes`` bytes of text (the
    fixed cost of each task, seconds against its hours of work on a real corpus, left out)."""
    return a * documents + b * text_bytes


def sentences() -> list[str]:
    """BoolQ's dev passages cut into sentences, and its questions: real English text, none of it SNLI's."""
    out = []
    with gzip.open(SHARED / "data" / "boolq" / "dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out += [s for s in re.split(r"(?<=[.!?]) +", row["passage"].strip()) if s]
            out.append(row["question"].strip().capitalize() + "?")
    return out


def write_corpus(folder: Path, size: int, documents: int, planted: list[str], seed: int = 0) -> None:
    """:data:`SHARDS` Parquet files of ``documents`` documents of about ``size`` bytes (median); ``size`` 0:
    the planted rows alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    pool = sentences()
    lengths = np.exp(rng.normal(np.log(max(size, 1)), 0.35, size=documents)).astype(int).clip(20)
    picks = iter(rng.integers(len(pool), size=int(lengths.sum() // 40) + 10 * documents).tolist())
    breaks = iter(rng.integers(3, 7, size=int(lengths.sum() // 40) + 10 * documents).tolist())
    texts = []
    for length in lengths.tolist():
        parts, total, until_break = [], 0, next(breaks)
        while total < length:
            sentence = pool[next(picks)]
            until_break -= 1
            parts.append(sentence + ("\n" if until_break == 0 else " "))
            total += len(parts[-1])
            if until_break == 0:
                until_break = next(breaks)
        text = "".join(parts)
        cut = text.rfind(" ", 0, length)
        texts.append((text[:cut] if cut > 0 else text[:length]).strip())
    if not size:
        texts = [""] * documents
    for k, row in zip(rng.choice(documents, size=len(planted), replace=False).tolist(), planted):
        text = texts[k]
        cut = text.find("\n", len(text) // 2)
        texts[k] = row if not text else (text + "\n" + row if cut < 0 else f"{text[:cut]}\n{row}{text[cut:]}")
    folder.mkdir(parents=True, exist_ok=True)
    per_shard = -(-documents // SHARDS)
    for s in range(SHARDS):
        part = slice(s * per_shard, min(documents, (s + 1) * per_shard))
        table = pa.table({"text": pa.array(texts[part], pa.large_string()),
                          "id": pa.array([f"doc-{k:09d}" for k in range(documents)][part], pa.string())})
        pq.write_table(table, folder / f"shard-{s:05d}.parquet", row_group_size=20_000)


PEER = """
import sys, time
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.readers import ParquetReader
from datatrove.utils.logging import logger
logger.remove()
folder, tasks, workers, logs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
runner = LocalPipelineExecutor([ParquetReader(folder, read_metadata=True)], tasks=tasks, workers=workers,
                               logging_dir=logs)
start = time.perf_counter()
runner.run()
print(time.perf_counter() - start)
"""


def run(command: list, env: dict) -> str:
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return done.stdout


def build_target(root: Path, python: str, env: dict) -> Path:
    reference = SHARED / "reference" / "likelihood" / "inputs" / "snli"
    target = root / "target"
    if not target.exists():
        run([python, "-m", "split_builders.cli", "likelihood", "--source", str(reference / "all_examples.csv"),
             "--prompt-field", "premise", "--query-field", "hypothesis", "--label-field", "gold_label",
             "--scores", str(reference / "all_examples__False_loglikelihoods.npy"), "--validation-size", "500",
             "--test-size", "500", "--limit", "5000", "--out", str(target), "--no-progress"], env)
    return target


def measure(root: Path, name: str, corpus: Path, target: Path, workers: int, python: str, env: dict,
            executor: str = "local") -> dict:
    """One corpus, one worker count, one executor: the peer's scan (datatrove's local reader), and resplit's
    scan and its tasks' CPU-seconds. Ray: a local Ray of ``workers`` CPUs started by the command itself
    (``RAY_ADDRESS=local``: never a cluster another user started on this machine)."""
    logs = root / f"peer-{name}-{workers}"
    shutil.rmtree(logs, ignore_errors=True)
    out = run([python, "-c", PEER, str(corpus), str(SHARDS), str(workers), str(logs)], env)
    work = root / f"work-{name}-{workers}-{executor}"
    shutil.rmtree(work, ignore_errors=True)
    report = json.loads(run([python, "-m", "split_builders.cli", "audit", str(target), "--against-corpus",
                             str(corpus), "--work", str(work), "--tasks", str(SHARDS), "--workers", str(workers),
                             "--executor", executor, "--json", "--no-progress"],
                            {**env, "RAY_ADDRESS": "local"} if executor == "ray" else env))
    tasks = [json.loads(p.read_text()) for p in (work / "tasks").glob("*.json")]
    found = report["against"]["random"]["test"]["exact"]
    if found < PLANTED:
        raise SystemExit(f"{name}, {workers} worker(s): only {found} of the {PLANTED} planted rows were found")
    return {"corpus": name, "executor": executor, "workers": workers, "documents": sum(t["documents"] for t in tasks),
            "bytes": sum(t["bytes"] for t in tasks), "scan_seconds": report["corpus"]["this_run"]["seconds"],
            "cpu_seconds": sum(t["cpu_seconds"] for t in tasks), "peer_seconds": float(out.split()[-1]),
            "task_peak_rss_mb": max(t["peak_rss_kb"] for t in tasks) / 1024, "planted_found": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the documents")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--keep", help="keep the corpora, the target and the work folders here")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--sizes", default=",".join(SIZES), help="the corpora to measure (default: all three)")
    parser.add_argument("--executors", default="local",
                        help="local, ray or local,ray (Ray: a local Ray started by each command; the model is "
                             "fitted on the local runs)")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="resplit-corpus-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    python = sys.executable
    worker_counts = [int(w) for w in args.workers.split(",")]
    try:
        began = time.perf_counter()
        target = build_target(root, python, env)
        import pandas as pd

        test = pd.read_parquet(next((target / "random").glob("test-*.parquet")))
        planted = [f"{r.premise}\n{r.hypothesis}" for r in test.head(PLANTED).itertuples()]
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "?")
        print(f"CPU: {cpu}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')}; target built in "
              f"{time.perf_counter() - began:.0f} s", flush=True)
        sizes = {"fixed": 0, **{k: SIZES[k] for k in args.sizes.split(",")}}
        executors = args.executors.split(",")
        results, others, fixed = [], [], {}
        for seed, (name, size) in enumerate(sizes.items()):
            documents = PLANTED if not size else DOCUMENTS[name] // (4 if args.quick else 1)
            corpus = root / f"corpus-{name}-{documents}"
            if not corpus.exists():
                write_corpus(corpus, size, documents, planted, seed=seed)
            for executor, workers in [(e, w) for e in executors for w in worker_counts]:
                r = measure(root, name, corpus, target, workers, python, env, executor)
                print(f"  {name}, {executor}, {workers} worker(s): scan {r['scan_seconds']:.1f} s "
                      f"(peer {r['peer_seconds']:.1f} "
                      f"s), tasks {r['cpu_seconds']:.1f} CPU-s, {r['planted_found']} of {PLANTED} planted rows found",
                      flush=True)
                if size:
                    r["cpu_seconds_less_fixed"] = r["cpu_seconds"] - fixed[executor, workers]
                    (results if executor == "local" else others).append(r)
                else:  # the tasks' own fixed cost: loading the index, the first batch's imports
                    fixed[executor, workers] = r["cpu_seconds"]
        if len({r["corpus"] for r in results}) < 2:  # one size: a and b cannot be told apart
            print("\n(one corpus size: the model is not fitted; give --sizes with two or more)")
        fits = {str(w): fit_cost(*([r[k] for r in results if r["workers"] == w]
                                   for k in ("documents", "bytes", "cpu_seconds_less_fixed"))) for w in worker_counts}
        fits["all"] = fit_cost(*([r[k] for r in results] for k in ("documents", "bytes", "cpu_seconds_less_fixed")))
        cores = str(max(worker_counts))  # as many workers as cores: every core busy, as on a cluster
        a, b = fits[cores]
        print(f"\nfixed cost of {SHARDS} tasks (the {PLANTED}-document corpus): "
              + ", ".join(f"{e} {w} worker(s) {v:.2f} CPU-s" for (e, w), v in fixed.items()))
        print(f"\n{'corpus':7} {'exec':5} {'wkr':>3} {'docs':>7} {'mean B':>6} {'scan s':>6} {'docs/s':>7} "
              f"{'CPU s':>6} "
              f"{'- fixed':>7} {'docs/CPU-s':>10} {'MB/CPU-s':>8} {'model':>7} {'error':>6} {'task RSS':>9} "
              f"{'peer docs/s':>11} {'ours/peer':>9}")
        for r in results + others:
            r["docs_per_s"] = r["documents"] / r["scan_seconds"]
            r["docs_per_cpu_s"] = r["documents"] / r["cpu_seconds_less_fixed"]
            r["mb_per_cpu_s"] = r["bytes"] / r["cpu_seconds_less_fixed"] / 1e6
            r["model_docs_per_cpu_s"] = r["documents"] / core_seconds(*fits[str(r["workers"])], r["documents"],
                                                                      r["bytes"])
            r["peer_docs_per_s"] = r["documents"] / r["peer_seconds"]
            print(f"{r['corpus']:7} {r['executor']:5} {r['workers']:>3} {r['documents']:>7,} "
                  f"{r['bytes'] / r['documents']:>6,.0f} "
                  f"{r['scan_seconds']:>6.1f} {r['docs_per_s']:>7,.0f} {r['cpu_seconds']:>6.1f} "
                  f"{r['cpu_seconds_less_fixed']:>7.1f} {r['docs_per_cpu_s']:>10,.0f} {r['mb_per_cpu_s']:>8.2f} "
                  f"{r['model_docs_per_cpu_s']:>7,.0f} {r['model_docs_per_cpu_s'] / r['docs_per_cpu_s'] - 1:>+6.0%} "
                  f"{r['task_peak_rss_mb']:>6.0f} MB {r['peer_docs_per_s']:>11,.0f} "
                  f"{r['scan_seconds'] / r['peer_seconds']:>8.1f}x")
        print("\nmodel: CPU-seconds = a x documents + b x bytes (least squares on the relative error; 'model' "
              "above: the fit of the row's worker count)")
        for name, (fa, fb) in fits.items() if len({r["corpus"] for r in results}) > 1 else ():
            label = "all runs" if name == "all" else f"{name} worker(s)"
            print(f"  {label:12} a = {fa * 1e6:6.1f} us per document, b = {fb * 1e6:.3f} us per byte (equal shares "
                  f"at {fa / fb:,.0f} bytes a document)")
        for r in others:  # Ray beside the local run of the same corpus and worker count
            local = next((q for q in results if q["corpus"] == r["corpus"] and q["workers"] == r["workers"]), None)
            if local:
                print(f"  {r['corpus']}, {r['workers']} worker(s): {r['executor']} scan {r['scan_seconds']:.1f} s vs "
                      f"local {local['scan_seconds']:.1f} s "
                      f"({local['scan_seconds'] / r['scan_seconds']:.2f}x the local rate); CPU-s {r['cpu_seconds']:.1f} "
                      f"vs {local['cpu_seconds']:.1f}")
        long_rate = next((r["mb_per_cpu_s"] for r in results if r["corpus"] == "long" and str(r["workers"]) == cores),
                         None)
        if long_rate is None:  # no long corpus measured: no estimate
            print(f"\ntotal {time.perf_counter() - began:.0f} s")
            return
        per_billion, per_tb = a * 1e9 / 3600, b * 1e12 / 3600
        print(f"\nEstimate by the {cores}-worker model (a = {a * 1e6:.1f} us, b = {b * 1e6:.3f} us): core-hours = "
              f"{per_billion:.2f} x billions of documents + {per_tb:.1f} x TB of text; {NODES} nodes x "
              f"{CORES_PER_NODE} cores, one task per core:")
        estimates = {}
        for name, figures in CORPORA.items():
            if figures["documents"] is None:
                print(f"  {name}: {figures['tokens'] / 1e12:.1f}e12 tokens; no estimate: {figures['source']}")
                estimates[name] = {**figures, "core_hours_per_billion_documents": per_billion,
                                   "core_hours_per_tb": per_tb}
                continue
            seconds = core_seconds(a, b, figures["documents"], figures["bytes"])
            hours = seconds / 3600
            wall = hours / (NODES * CORES_PER_NODE)
            bytes_only = figures["bytes"] / (long_rate * 1e6) / 3600
            estimates[name] = {**figures, "core_hours": hours, "wall_hours": wall,
                               "core_hours_by_mb_per_s_of_long_documents": bytes_only}
            print(f"  {name}: {figures['documents'] / 1e9:.3f}e9 documents x {a * 1e6:.1f} us + "
                  f"{figures['bytes'] / 1e12:.3f}e12 B x {b * 1e6:.3f} us = {seconds:.3g} CPU-seconds = "
                  f"{hours:,.0f} core-hours; / {NODES * CORES_PER_NODE} cores = {wall * 60:.1f} minutes wall\n"
                  f"    (by MB/s alone, at the long documents' {long_rate:.2f} MB per CPU-second: {bytes_only:,.0f} "
                  f"core-hours; the model gives {hours / bytes_only:.2f}x that)\n    {figures['source']}")
        print(f"\ntotal {time.perf_counter() - began:.0f} s")
        if args.json:
            print(json.dumps({"cpu": cpu, "fixed_cpu_seconds": {f"{e}/{w}": v for (e, w), v in fixed.items()},
                              "results": results, "ray": others,
                              "fits": {k: {"per_document_s": fa, "per_byte_s": fb} for k, (fa, fb) in fits.items()},
                              "estimates": estimates}))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
