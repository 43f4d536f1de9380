"""The sha256 of every data file of a set of small real builds, one per family and per recipe.

A refactor must leave every release's data files byte-identical: run this before and after it and
compare the two JSON files::

    python benchmarks/release_hashes.py --out /tmp/before.json --keep /tmp/before-out   # on the old code
    python benchmarks/release_hashes.py --out /tmp/after.json --compare /tmp/before.json
    # a refactor that adds a column on purpose: the other columns and every split's rows unchanged
    python benchmarks/release_hashes.py --out /tmp/after.json --compare /tmp/before.json \
        --keep /tmp/after-out --compare-folders /tmp/before-out --ignore-columns source_id

Builds: every built-in family from its method's ``example_arguments`` (seed 7; the builds the contract tests
share) and every dataset recipe of ``releases/`` with the trial arguments of ``tests/test_release_recipes.py``. Needs
``../shared`` beside the checkout. ``--ignore-columns`` compares the other columns of parquet files
whose bytes differ (a refactor that adds a column), config by config and split by split, with the
folders of both runs (``--keep`` now, ``--compare-folders`` then).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_variable] = "1"
REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def builds(work: Path) -> dict:
    """name -> CLI arguments (without --out): each built-in method's own ``example_arguments`` (what the contract
    tests build, ``tests/conftest.py``'s ``family_releases``) with ``--seed 7``, then the recipes."""
    from split_builders.api import registry
    from split_builders.methods import BUILTIN
    from test_release_recipes import _trial_arguments

    recipe_work = work / "recipe-inputs"
    recipe_work.mkdir(parents=True)
    family = {}
    for name in BUILTIN:
        folder = work / "family-inputs" / name
        folder.mkdir(parents=True)
        family[name] = [name, *map(str, registry()[name].example_arguments(SHARED, folder)), "--seed", "7"]
    recipes = {f"recipe:{name}": ["release", name, *args, "--no-load-check"]
               for name, args in _trial_arguments(SHARED, recipe_work).items()}
    return {**family, **recipes}


def parquet_digests(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.parquet"))}


def tables_differ(before: Path, after: Path, ignored: set) -> list:
    """The ``config/split`` tables that differ between two builds once ``ignored`` columns are dropped
    (data files matched by config and split, whatever their content hash)."""
    import pyarrow.parquet as pq

    def tables(folder):
        return {f"{p.parent.name}/{p.name.split('-')[0]}": p for p in folder.rglob("*.parquet")}

    old, new = tables(before), tables(after)
    differ = sorted(set(old) ^ set(new))
    for key in sorted(set(old) & set(new)):
        a, b = pq.read_table(old[key]), pq.read_table(new[key])
        a = a.drop([c for c in a.column_names if c in ignored])
        b = b.drop([c for c in b.column_names if c in ignored])
        if not a.equals(b):
            differ.append(key)
    return differ


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file of {build: {data file: sha256}}")
    parser.add_argument("--compare", help="an earlier JSON file to compare with")
    parser.add_argument("--only", help="comma-separated build names")
    parser.add_argument("--keep", help="keep the built folders here")
    parser.add_argument("--compare-folders", help="the --keep folder of the earlier run")
    parser.add_argument("--ignore-columns", default="", help="comma-separated columns left out of the table "
                        "comparison of files whose bytes differ (needs --keep and --compare-folders)")
    args = parser.parse_args(argv)

    from split_builders.cli import main as resplit

    result = {}
    with tempfile.TemporaryDirectory(prefix="resplit-hashes-") as tmp:
        work = Path(tmp)
        root = Path(args.keep) if args.keep else work / "out"
        for name, arguments in builds(work).items():
            if args.only and name not in args.only.split(","):
                continue
            out = root / name.replace(":", "-")
            started = time.perf_counter()
            code = resplit([*arguments, "--out", str(out), "--no-progress"])
            if code != 0:
                print(f"{name}: build failed (exit {code})")
                return 1
            result[name] = parquet_digests(out)
            print(f"{name}: {len(result[name])} data files in {time.perf_counter() - started:.1f} s", flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    if not args.compare:
        return 0
    before = json.loads(Path(args.compare).read_text())
    same = True
    for name in sorted(result if args.only else before.keys() | result.keys()):
        old, new = before.get(name, {}), result.get(name, {})
        changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        print(f"{name:<36} {len(new):>4} files  {'identical' if not changed else f'{len(changed)} differ'}")
        if changed and args.ignore_columns and args.compare_folders and args.keep and new:
            folder = name.replace(":", "-")
            unequal = tables_differ(Path(args.compare_folders) / folder, Path(args.keep) / folder,
                                    set(args.ignore_columns.split(",")))
            print(f"    without {args.ignore_columns}: " + ("every split's table is equal" if not unequal
                                                              else f"{len(unequal)} differ: {unequal[:5]}"))
            same &= not unequal
            continue
        same &= not changed
        for path in changed[:5]:
            print(f"    {path}: {str(old.get(path))[:12]} -> {str(new.get(path))[:12]}")
    print(("all identical" + (f" (but the columns {args.ignore_columns})" if args.ignore_columns else ""))
          if same else "DIFFERENCES")
    return 0 if same else 2


if __name__ == "__main__":
    sys.exit(main())
