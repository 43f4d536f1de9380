"""TMCD search quality and speed, side by side with Shaw et al.'s reference greedy.

    python benchmarks/tmcd.py --dataset geoquery --train-size 440 --data ../shared/data/geoquery
    python benchmarks/tmcd.py --dataset spider --train-size 3282 --data ../shared/data/spider --reference-iterations 10000

Prints compound divergence, atom divergence, unseen test atoms and seconds for both searches.
"""

from __future__ import annotations

import argparse
import time

from split_builders.signals.programs.atoms import atoms_by_row
from split_builders.signals.programs.compounds import compounds_by_row
from split_builders.signals.programs.divergence import split_divergences
from split_builders.splitters.tmcd import TMCDSplitter, reference_tmcd


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", choices=["geoquery", "spider"], default="geoquery")
    parser.add_argument("--data", default="../shared/data/geoquery")
    parser.add_argument("--train-size", type=int, default=440)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--reference-iterations", type=int, default=1000)
    parser.add_argument("--max-atom-divergence", type=float, default=0.05,
                        help="atom-divergence bound of resplit's search (the reference has none)")
    parser.add_argument("--skip-reference", action="store_true")
    args = parser.parse_args()
    from loading_scripts import geoquery, spider

    src = (geoquery if args.dataset == "geoquery" else spider).load(args.data)
    atoms = atoms_by_row(src.targets, src.target_language).atoms
    compounds = compounds_by_row(src.targets, src.target_language)
    rows = []
    if not args.skip_reference:
        start = time.perf_counter()
        train, test, _ = reference_tmcd(atoms, compounds, train_size=args.train_size, random_state=args.seed,
                                        max_iterations=args.reference_iterations)
        rows.append(("reference greedy", time.perf_counter() - start, split_divergences(train, test, atoms, compounds)))
    start = time.perf_counter()
    splitter = TMCDSplitter(train_size=args.train_size, n_iterations=args.iterations, random_state=args.seed,
                            max_atom_divergence=args.max_atom_divergence)
    train, _, test = splitter.split(atoms, compounds)
    rows.append((f"resplit annealing ({args.iterations} swaps, AD <= {args.max_atom_divergence:g})", time.perf_counter() - start,
                 split_divergences(train, test, atoms, compounds)))
    print(f"{args.dataset}, {len(src)} rows, train {args.train_size}, seed {args.seed}")
    print(f"{'search':<44}{'compound div':>13}{'atom div':>10}{'unseen':>8}{'novel cmp':>10}{'seconds':>9}")
    for name, seconds, f in rows:
        print(f"{name:<44}{f['compound_divergence']:>13.4f}{f['atom_divergence']:>10.4f}{f['test_rows_with_unseen_atom']:>8}"
              f"{100 * f['test_share_with_novel_compound']:>9.1f}%{seconds:>9.1f}")


if __name__ == "__main__":
    main()
