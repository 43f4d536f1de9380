"""One very long text cell (issue 46, "Slow"): a 600-row ``text,label`` JSONL table, one of whose texts is 2 MB,
built with ``resplit likelihood --scores`` (given scores: no model), with the card's discrete histograms drawn
one bin per value (the rule before: a bin per word count from 1 to 400,000) and with at most
``split_builders.release.card.MAX_DISCRETE_BINS`` bins (now), side by side; the same table without the long cell
as the baseline.

    python benchmarks/long_cell.py               # 2 MB cell (the old rule takes about two minutes here)
    python benchmarks/long_cell.py --mb 0.5      # a shorter cell

The data files of the two builds are the same bytes (only the figures differ); the test suite checks only that
such a build completes with its rows (``tests/test_faults_round5.py``), never a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_variable] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WORDS = "the a man woman dog cat runs sits eats plays outside inside park street red blue big small".split()


def table(folder: Path, rows: int, mb: float) -> tuple[Path, Path, Path]:
    """The table with the long cell, the same without it, and one given score per row."""
    import numpy as np

    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(12)) + f" {i}" for i in range(rows)]
    long = " ".join(rng.choice(WORDS) for _ in range(int(mb * 2**20) // 3))[: int(mb * 2**20)]
    paths = {}
    for name, cell in (("long", long), ("short", None)):
        paths[name] = folder / f"{name}.jsonl"
        with open(paths[name], "w", encoding="utf-8") as handle:
            for i, text in enumerate(texts):
                handle.write(json.dumps({"text": cell if cell and i == 7 else text, "label": i % 3}) + "\n")
    scores = folder / "scores.npy"
    np.save(scores, np.random.default_rng(0).normal(-30, 5, rows))
    return paths["long"], paths["short"], scores


def build(source: Path, scores: Path, out: Path, *, bins: int) -> float:
    from split_builders.cli import main
    from split_builders.release import card

    card.MAX_DISCRETE_BINS, kept = bins, card.MAX_DISCRETE_BINS
    try:
        start = time.perf_counter()
        code = main(["likelihood", "--source", str(source), "--query-field", "text", "--label-field", "label",
                     "--scores", str(scores), "--out", str(out), "--no-progress"])
        seconds = time.perf_counter() - start
    finally:
        card.MAX_DISCRETE_BINS = kept
    if code != 0:
        raise SystemExit(f"the build of {source.name} exited {code}")
    return seconds


def data_bytes(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=2.0, help="size of the long cell in MB (default 2)")
    parser.add_argument("--rows", type=int, default=600, help="rows of the table (default 600)")
    args = parser.parse_args()
    from contextlib import redirect_stdout
    from io import StringIO

    from split_builders.release.card import MAX_DISCRETE_BINS

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        long, short, scores = table(work, args.rows, args.mb)
        with redirect_stdout(StringIO()):
            baseline = build(short, scores, work / "short", bins=MAX_DISCRETE_BINS)
            now = build(long, scores, work / "now", bins=MAX_DISCRETE_BINS)
            before = build(long, scores, work / "before", bins=10**12)  # one bin per value: the rule before
        same = data_bytes(work / "now") == data_bytes(work / "before")
    print(f"{args.rows} rows, one text of {args.mb:g} MB; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'build':34s} {'before':>9s} {'now':>9s}")
    print(f"{'without the long cell':34s} {baseline:8.1f}s {baseline:8.1f}s")
    print(f"{'with it':34s} {before:8.1f}s {now:8.1f}s")
    print(f"data files the same bytes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
