"""Does the int8 path pick the same evaluation rows as float32? (issue 52: >= 99% of ll_split's)

Builds the likelihood release of the bundled SNLI sample (1,964 rows) twice, ``--dtype float32`` and
``--dtype int8`` (CTranslate2), and prints, per prompted config, the share of the float32 build's
evaluation rows (validation + test) that the int8 build holds out too, with Spearman's rho of the two
score vectors and the time of each scoring (a ratio in the same run: the machine may be loaded).

    python benchmarks/int8_agreement.py                  # the whole sample: two full scorings (minutes)
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
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="int8-agreement-"))
    results, seconds = {}, {}
    for dtype in ("float32", "int8"):
        start = time.perf_counter()
        results[dtype] = split_builders.build("likelihood", source="snli-sample", out=str(work / dtype), dtype=dtype,
                                              limit=args.limit, cache_dir=str(work / "scores"), progress=False)
        seconds[dtype] = time.perf_counter() - start
    fp32, int8 = (np.asarray(results[d].signal.values.scores) for d in ("float32", "int8"))
    summary = {"rows": results["float32"].rows, "seconds": seconds, "int8_speedup": seconds["float32"] / seconds["int8"],
               "spearman": float(spearmanr(fp32, int8).statistic), "kept": {}}
    print(f"{summary['rows']} rows; build with scoring: float32 {seconds['float32']:.0f} s, int8 "
          f"{seconds['int8']:.0f} s ({summary['int8_speedup']:.2f}x); Spearman int8 vs float32 {summary['spearman']:.4f}")
    for config in CONFIGS:
        reference, other = evaluation_rows(results["float32"], config), evaluation_rows(results["int8"], config)
        kept = len(reference & other) / len(reference)
        summary["kept"][config] = kept
        print(f"{config:<22} {len(reference & other)} of {len(reference)} float32 evaluation rows kept by int8: "
              f"{100 * kept:.1f}% (goal >= 99%)")
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
