"""TMCD search quality and speed on GeoQuery, SCAN and COGS, beside the splits released with them.

    python benchmarks/tmcd.py                        # GeoQuery (N=440), SCAN (train 80%), COGS (train 24,155)
    python benchmarks/tmcd.py --datasets geoquery --reference-iterations 1000
    python benchmarks/tmcd.py --datasets spider --spider-train-size 3282 --iterations 20000 --json

For each dataset: resplit's search at the default settings (or ``--iterations``), timed from the
parsed atoms and compounds (the search alone: balancing, bookkeeping and the annealing), with
compound divergence (CD), atom divergence (AD), test rows with an unseen atom and the share of
test rows with a novel compound; then Shaw et al.'s reference greedy for GeoQuery and Spider
(``--reference-iterations``), and every split published with the dataset (not timed). ``--json``
prints every row as one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import time

from split_builders.signals.programs.atoms import atoms_by_row
from split_builders.signals.programs.compounds import compounds_by_row
from split_builders.signals.programs.divergence import split_divergences
from split_builders.splitters.tmcd import TMCDSplitter, reference_tmcd, train_count

# dataset: (folder under --data, train size of resplit's search)
DATASETS = {"geoquery": ("geoquery", 440), "scan": ("scan", 0.8), "cogs": ("cogs", 24155), "spider": ("spider", 3282)}
PROGRAM_SIDE = {"scan": "input"}  # SCAN's structure is in its commands; the others' in the targets


def _row(dataset, search, seconds, figures, **extra) -> dict:
    return {"dataset": dataset, "search": search, "seconds": None if seconds is None else round(seconds, 2),
            "compound_divergence": round(figures["compound_divergence"], 4),
            "atom_divergence": round(figures["atom_divergence"], 4),
            "unseen_atom_rows": figures["test_rows_with_unseen_atom"],
            "novel_compound_share": round(figures["test_share_with_novel_compound"], 4), **extra}


def run(dataset: str, args) -> list[dict]:
    from loading_scripts import load_compositional

    folder, train_size = DATASETS[dataset]
    if dataset == "spider":
        train_size = args.spider_train_size
    src = load_compositional(f"{args.data}/{folder}")
    programs = src.inputs if PROGRAM_SIDE.get(dataset) == "input" else src.targets
    atoms = atoms_by_row(programs, src.target_language).atoms
    compounds = compounds_by_row(programs, src.target_language)
    n_train = train_count(train_size, len(atoms))
    rows = []
    started = time.perf_counter()
    splitter = TMCDSplitter(train_size=n_train, n_iterations=args.iterations, random_state=args.seed,
                            max_atom_divergence=args.max_atom_divergence)
    split = splitter.split(atoms=atoms, compounds=compounds, progress=args.progress)
    rows.append(_row(dataset, f"resplit ({args.iterations} swaps, AD <= {args.max_atom_divergence:g})",
                     time.perf_counter() - started, split_divergences(split.train, split.test, atoms, compounds),
                     rows=len(atoms), train=n_train, bound_met=splitter.bound_met_))
    if dataset in ("geoquery", "spider") and args.reference_iterations:
        started = time.perf_counter()
        train, test, _ = reference_tmcd(atoms, compounds, train_size=n_train, random_state=args.seed,
                                        max_iterations=args.reference_iterations)
        rows.append(_row(dataset, f"reference greedy ({args.reference_iterations} iterations)",
                         time.perf_counter() - started, split_divergences(train, test, atoms, compounds),
                         rows=len(atoms), train=n_train))
    for name, published in src.published.items():
        figures = split_divergences(list(published["train"]), list(published.get("test", [])), atoms, compounds)
        rows.append(_row(dataset, f"published {name}", None, figures, rows=len(atoms), train=len(published["train"])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="geoquery,scan,cogs", help=f"comma-separated, of {','.join(DATASETS)}")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--reference-iterations", type=int, default=1000)
    parser.add_argument("--spider-train-size", type=int, default=3282)
    parser.add_argument("--max-atom-divergence", type=float, default=0.05,
                        help="atom-divergence bound of resplit's search (the reference has none)")
    parser.add_argument("--progress", action="store_true", help="show the search's progress bar")
    parser.add_argument("--json", action="store_true", help="print every row as one JSON object last")
    args = parser.parse_args()
    unknown = [d for d in args.datasets.split(",") if d not in DATASETS]
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; known: {', '.join(DATASETS)}")
    rows = []
    print(f"{'dataset':<10}{'search / split':<44}{'rows':>7}{'train':>7}{'CD':>8}{'AD':>8}{'unseen':>8}"
          f"{'novel':>8}{'seconds':>9}")
    for dataset in args.datasets.split(","):
        for row in run(dataset, args):
            rows.append(row)
            seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f}"
            print(f"{row['dataset']:<10}{row['search']:<44}{row['rows']:>7}{row['train']:>7}"
                  f"{row['compound_divergence']:>8.4f}{row['atom_divergence']:>8.4f}{row['unseen_atom_rows']:>8}"
                  f"{100 * row['novel_compound_share']:>7.1f}%{seconds:>9}", flush=True)
    if args.json:
        print(json.dumps({"seed": args.seed, "iterations": args.iterations, "rows": rows}))


if __name__ == "__main__":
    main()
