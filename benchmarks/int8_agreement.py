"""Does the int8 path pick the same evaluation rows as float32? (issue 52: >= 99% of ll_split's)

Builds the likelihood release of the bundled SNLI sample (1,964 rows) with ``--dtype float32`` and each
other precision asked for (default: ``int8``, CTranslate2), and prints, per prompted config, the share of
the float32 build's evaluation rows (validation + test) that the other build holds out too, with
Spearman's rho of the score vectors and the time of each build (a ratio in the same run: the machine may
be loaded). bfloat16 gives the floor a reduced precision can be held to: how many rows its own rounding
moves.

    python benchmarks/int8_agreement.py                  # the whole sample: two full scorings (minutes)
    python benchmarks/int8_agreement.py --dtypes bfloat16,int8 --cache /tmp/agreement-scores
    python benchmarks/int8_agreement.py --limit 300 --json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import split_builders  # noqa: E402

CONFIGS = ("ll_split_pt", "ll_split_pt_len", "ll_split_pt_reverse")


def evaluation_rows(result, config: str) -> set:
    chosen = next(c for c in result.configs if c.name == config)
    return {int(r) for split in ("validation", "test") for r in chosen.indices.get(split, ())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N rows of the sample (default: all)")
    parser.add_argument("--dtypes", default="int8",
                        help="comma-separated precisions to hold against float32 (default int8; e.g. bfloat16,int8)")
    parser.add_argument("--cache", default=None,
                        help="score cache folder kept between runs (default: a new temporary one); a cached "
                             "precision's time is then that of the build without scoring")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    others = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    work = Path(tempfile.mkdtemp(prefix="int8-agreement-"))
    cache = Path(args.cache) if args.cache else work / "scores"
    results, seconds = {}, {}
    for dtype in ("float32", *others):
        start = time.perf_counter()
        results[dtype] = split_builders.build("likelihood", source="snli-sample", out=str(work / dtype), dtype=dtype,
                                              limit=args.limit, cache_dir=str(cache), progress=False)
        seconds[dtype] = time.perf_counter() - start
    fp32 = np.asarray(results["float32"].signal.values.scores)
    summary = {"rows": results["float32"].rows, "seconds": seconds, "by_dtype": {}}
    print(f"{summary['rows']} rows; build with scoring: " + ", ".join(f"{d} {seconds[d]:.0f} s" for d in seconds))
    for dtype in others:
        scores = np.asarray(results[dtype].signal.values.scores)
        figures = {"speedup": seconds["float32"] / seconds[dtype],
                   "spearman": float(spearmanr(fp32, scores).statistic), "kept": {}}
        print(f"{dtype}: {figures['speedup']:.2f}x float32's build; Spearman to float32 {figures['spearman']:.5f}; "
              f"largest |difference| {np.abs(scores - fp32).max():.3f} nats")
        for config in CONFIGS:
            reference, other = evaluation_rows(results["float32"], config), evaluation_rows(results[dtype], config)
            kept = len(reference & other) / len(reference)
            figures["kept"][config] = kept
            print(f"  {config:<22} {len(reference & other)} of {len(reference)} float32 evaluation rows kept: "
                  f"{100 * kept:.1f}% (goal >= 99%)")
        summary["by_dtype"][dtype] = figures
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
