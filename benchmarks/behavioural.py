"""Time and peak memory of ``resplit behavioural`` on the released CheckList suites.

    python benchmarks/behavioural.py [--data ../shared/data/checklist] [--seed 123]
                                     [--suites sentiment,qqp,squad] [--json]

Each suite is built in a fresh process (``resplit behavioural --source <suite>_suite.json.gz --seed
123 --no-progress`` into a temporary folder), so its peak resident memory is its own. Prints one line
per suite (test cases, configs, wall seconds, peak memory) and with ``--json`` one JSON object as the
last line. The issue's target for QQP (63,216 test cases): under 60 s and 4 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Run in the child: build, then report the child's own peak memory (ru_maxrss is KiB on Linux).
CHILD = """
import json, resource, sys
from split_builders.builder import build
result = build("behavioural", source=sys.argv[1], out=sys.argv[2], seed=int(sys.argv[3]), progress=False,
               log=lambda *_: None)
print(json.dumps({"rows": result.rows, "configs": len(result.configs),
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(suite: Path, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD, str(suite), str(Path(folder) / "out"), str(seed)],
                              capture_output=True, text=True, env=env, cwd=REPO)
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{suite.name}: build failed:\n{done.stderr[-2000:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "seconds": round(seconds, 2)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "checklist"))
    parser.add_argument("--suites", default="sentiment,qqp,squad")
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)

    results = {}
    print(f"{'suite':<10}{'test cases':>12}{'configs':>9}{'seconds':>9}{'peak MB':>9}  (cpus: {os.cpu_count()})")
    for name in args.suites.split(","):
        r = results[name] = measure(Path(args.data) / f"{name}_suite.json.gz", args.seed)
        print(f"{name:<10}{r['rows']:>12,}{r['configs']:>9}{r['seconds']:>9.1f}{r['peak_mb']:>9.0f}", flush=True)
    if args.json:
        print(json.dumps({"seed": args.seed, "cpus": os.cpu_count(), "suites": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
