"""Word lengths (``split_builders.signals.lengths.word_lengths``) against NLTK's ``word_tokenize`` on every
distinct text of SNLI's dev and test files, BoolQ's dev file and every CURRICULUM phenomenon: how many agree,
and the time of each, side by side.

    python benchmarks/word_lengths.py            # every distinct text (NLTK takes a few minutes here)
    python benchmarks/word_lengths.py --every 10 # every 10th distinct text

The test suite checks a deterministic sample of the same texts (``tests/test_likelihood_robustness.py``);
this script checks all of them. NLTK's count is the one the Likelihood Splits paper's length buckets use:
``len(word_tokenize(text))`` of one sentence, i.e. ``NLTKWordTokenizer().tokenize`` (no punkt data needed).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def real_texts(shared: Path) -> dict:
    from loading_scripts import load_source
    from loading_scripts.curriculum import read_curriculum

    texts = {}
    for file in ("snli/snli_1.0_dev.jsonl.gz", "snli/snli_1.0_test.jsonl.gz"):
        src = load_source(str(shared / "data" / file))
        texts[f"{file} premise"], texts[f"{file} hypothesis"] = src.texts("premise"), src.texts("hypothesis")
    src = load_source(str(shared / "data" / "boolq" / "dev.jsonl.gz"))
    texts["boolq question"], texts["boolq passage"] = src.texts("question"), src.texts("passage")
    premises, hypotheses = [], []
    for phenomenon in read_curriculum(shared / "data" / "curriculum"):
        premises += phenomenon.rows["premise"]
        hypotheses += phenomenon.rows["hypothesis"]
    texts["curriculum premise"], texts["curriculum hypothesis"] = premises, hypotheses
    return texts


def cpu_name() -> str:
    """The CPU model (``lscpu``'s "Model name"), which the speed ratios depend on."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    from nltk.tokenize import NLTKWordTokenizer

    from split_builders.signals.lengths import word_lengths

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=int, default=1, help="check every N-th distinct text (default: all)")
    parser.add_argument("--shared", type=Path, default=SHARED)
    args = parser.parse_args()
    tokenizer = NLTKWordTokenizer()
    print(f"CPU: {cpu_name()}; every {args.every} distinct text(s)")
    print(f"{'texts':<42}{'n':>9}{'agree':>9}{'resplit s':>11}{'NLTK s':>9}")
    failed = 0
    for name, texts in real_texts(args.shared).items():
        distinct = list(dict.fromkeys(texts))[::args.every]
        start = time.perf_counter()
        got = word_lengths(distinct)
        ours = time.perf_counter() - start
        start = time.perf_counter()
        expected = np.array([len(tokenizer.tokenize(t)) for t in distinct])
        theirs = time.perf_counter() - start
        agree = int((got == expected).sum())
        failed += len(distinct) - agree
        print(f"{name:<42}{len(distinct):>9}{agree:>9}{ours:>11.2f}{theirs:>9.2f}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
