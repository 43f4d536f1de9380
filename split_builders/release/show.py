"""``python -m split_builders.release.show FOLDER CONFIG``: load a built config with ``datasets`` and print
a few rows of each split (what ``make demo`` ends with)."""

from __future__ import annotations

import sys
import tempfile


def main(argv=None) -> int:
    import datasets
    import numpy as np

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m split_builders.release.show FOLDER CONFIG", file=sys.stderr)
        return 2
    folder, config = argv
    with tempfile.TemporaryDirectory() as cache:  # a fresh cache: never a stale copy of the folder
        loaded = datasets.load_dataset(folder, config, cache_dir=cache)
        print(f"\nload_dataset({folder!r}, {config!r}):")
        print(loaded)
        for split in ("train", "test"):
            part = loaded[split]
            scores = np.asarray(part["score"])
            order = np.argsort(-scores if split == "train" else scores, kind="stable")[:3]
            print(f"\n{split}: the {'most' if split == 'train' else 'least'} likely rows")
            for row in part.select(order.tolist()):
                text = {k: v for k, v in row.items() if isinstance(v, str)}
                print(f"  score {row['score']:8.2f}  length {row['length']:3d}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
