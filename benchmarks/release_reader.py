"""What checking every data file against the card's sha256 costs a command that reads a release.

    python benchmarks/release_reader.py                     # a synthetic release of 1,000,000 rows of text
    python benchmarks/release_reader.py FOLDER              # every config of a release, 5 repeats
    python benchmarks/release_reader.py FOLDER --repeats 3

Three ways to read every data file of every config (a ``pyarrow.Table`` per split), side by side, wall and CPU
seconds (the median of the repeats, the files in the page cache after a first untimed read):

- *unchecked*: ``pyarrow.parquet.read_table`` of each file, as the inspection commands read a release before
  issue 37 (a flipped byte in a file that still parses was used silently);
- *hash, then read*: ``hashlib.sha256(path.read_bytes())`` and then ``read_table(path)``: what ``verify`` did,
  the whole file in memory twice and read twice;
- *checked* (:class:`split_builders.release.folder.Released`): each file read once in blocks of 1 MiB, hashed as it
  is read, and the same bytes parsed; a second read of the same file (``all_rows`` after ``table``) is not
  hashed again.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(read, repeats: int) -> tuple[float, float, int]:
    read()  # the page cache warm for every way alike
    walls, cpus, rows = [], [], 0
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        rows = read()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), rows


def synthetic(folder: Path, rows: int) -> Path:
    """A release folder of one config (train / test) of ``rows`` rows of text, with the card's sha256 of each file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import yaml

    rng = np.random.default_rng(0)
    words = np.array("a man woman dog cat runs sits near the park street water blue red small big".split())
    texts = [" ".join(rng.choice(words, 12)) for _ in range(rows)]
    table = pa.table({"source_id": np.arange(rows, dtype=np.int64), "text": texts})
    cut = rows * 9 // 10
    (folder / "c").mkdir(parents=True)
    files, hashes = [], {}
    for split, part in (("train", table.slice(0, cut)), ("test", table.slice(cut))):
        path = folder / "c" / f"{split}.parquet"
        pq.write_table(part, path)
        files.append({"split": split, "path": f"c/{split}.parquet"})
        hashes[split] = hashlib.sha256(path.read_bytes()).hexdigest()
    card = {"configs": [{"config_name": "c", "data_files": files}],
            "resplit": {"method": "none", "configs": {"c": {"sha256": hashes}}}}
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(card) + "---\n# synthetic\n", encoding="utf-8")
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, nargs="?", help="a release folder (default: --synthetic)")
    parser.add_argument("--synthetic", type=int, default=1_000_000, metavar="ROWS",
                        help="without FOLDER: a release of one config of ROWS rows of text, written to a temporary "
                             "folder (default 1000000)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    import tempfile

    import pyarrow.parquet as pq

    from split_builders.release.folder import Released

    if args.folder is None:
        work = tempfile.TemporaryDirectory(prefix="release-reader-")
        args.folder = synthetic(Path(work.name) / "release", args.synthetic)

    released = Released(args.folder)
    files = [(c, s) for c, splits in released.files.items() for s in splits]
    size = sum(released.path(c, s).stat().st_size for c, s in files)
    print(f"{args.folder}: {len(released.files)} configs, {len(files)} data files, {size / 2 ** 20:.1f} MiB")

    def unchecked():
        return sum(pq.read_table(released.path(c, s)).num_rows for c, s in files)

    def hash_then_read():
        rows = 0
        for c, s in files:
            path = released.path(c, s)
            assert hashlib.sha256(path.read_bytes()).hexdigest() == released.recorded_sha256(c, s)
            rows += pq.read_table(path).num_rows
        return rows

    def checked():
        released._digests.clear()  # as a new reader: every file is hashed once, as a command reads it
        return sum(released.table(c, s).num_rows for c, s in files)

    print(f"{'way':<16}{'wall s':>9}{'cpu s':>9}{'rows':>10}")
    results = {}
    for name, read in (("unchecked", unchecked), ("hash, then read", hash_then_read), ("checked", checked)):
        wall, cpu, rows = timed(read, args.repeats)
        results[name] = wall
        print(f"{name:<16}{wall:>9.3f}{cpu:>9.3f}{rows:>10}")
    print(f"checked / unchecked: {results['checked'] / results['unchecked']:.2f}x; checked / hash-then-read: "
          f"{results['checked'] / results['hash, then read']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
