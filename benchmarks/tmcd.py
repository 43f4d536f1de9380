"""TMCD search quality and speed: one annealing run against the best of ``--restarts``, per seed and row order.

    python benchmarks/tmcd.py                        # GeoQuery (N=440), seeds 1-5, both row orders
    python benchmarks/tmcd.py --seeds 1 --row-orders content --restarts 2
    python benchmarks/tmcd.py --datasets geoquery,scan,cogs --seeds 1 --row-orders content
    python benchmarks/tmcd.py --datasets spider --spider-train-size 3282 --iterations 20000 --json

For each dataset, row order (``content``: the rows in their content order under the seed, as ``resplit tmcd``
hands them to the search by default; ``position``: as read) and seed: the search of one restart (the search before
restarts: ``--restarts 1``) and the search of ``--restarts`` (default: resplit's), side by side in the same run,
each timed from the parsed atoms and compounds (the search alone: balancing, bookkeeping and the annealing), with
compound divergence (CD) and atom divergence (AD) of each, the restart kept and every restart's CD. The best of
several restarts includes restart 0, the one-restart search: the script checks that its CD is never lower. Then the
reference greedy (Shaw et al.) for GeoQuery and Spider (``--reference-iterations``, seed 1, as read) and every split
published with the dataset (not timed), with test rows with an unseen atom and the share of test rows with a novel
compound. ``--json`` prints every row as one JSON object on the last line. Times are of a shared, loaded machine:
compare the two columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import json
import time

from split_builders.signals.programs.atoms import atoms_by_row
from split_builders.signals.programs.compounds import compounds_by_row
from split_builders.signals.programs.divergence import split_divergences
from split_builders.splitters.partition import ROW_ORDERS, content_keys, content_order, take_rows
from split_builders.splitters.tmcd import DEFAULT_RESTARTS, TMCDSplitter, reference_tmcd, train_count

# dataset: (folder under --data, train size of resplit's search)
DATASETS = {"geoquery": ("geoquery", 440), "scan": ("scan", 0.8), "cogs": ("cogs", 24155), "spider": ("spider", 3282)}
PROGRAM_SIDE = {"scan": "input"}  # SCAN's structure is in its commands; the others' in the targets


def _row(dataset, search, seconds, figures, **extra) -> dict:
    return {"dataset": dataset, "search": search, "seconds": None if seconds is None else round(seconds, 2),
            "compound_divergence": round(figures["compound_divergence"], 4),
            "atom_divergence": round(figures["atom_divergence"], 4),
            "unseen_atom_rows": figures["test_rows_with_unseen_atom"],
            "novel_compound_share": round(figures["test_share_with_novel_compound"], 4), **extra}


def _search(atoms, compounds, n_train: int, seed: int, restarts: int, args) -> tuple:
    """(figures of the split, seconds, splitter) of resplit's search with ``restarts`` restarts."""
    started = time.perf_counter()
    splitter = TMCDSplitter(train_size=n_train, n_iterations=args.iterations, n_restarts=restarts, random_state=seed,
                            max_atom_divergence=args.max_atom_divergence)
    split = splitter.split(atoms=atoms, compounds=compounds, progress=args.progress)
    seconds = time.perf_counter() - started
    return split_divergences(split.train, split.test, atoms, compounds), seconds, splitter


def restart_rows(dataset: str, atoms, compounds, keys, n_train: int, args) -> list[dict]:
    """Per row order and seed: one restart against ``--restarts``, in the same run."""
    rows = []
    for row_order in args.row_orders.split(","):
        for seed in map(int, args.seeds.split(",")):
            # content: the rows as resplit tmcd hands them to the search (partition.in_row_order)
            order = content_order(keys, seed) if row_order == "content" else None
            a, c = (atoms, compounds) if order is None else (take_rows(atoms, order), take_rows(compounds, order))
            old, old_seconds, _ = _search(a, c, n_train, seed, 1, args)
            new, new_seconds, splitter = _search(a, c, n_train, seed, args.restarts, args)
            if new["compound_divergence"] < old["compound_divergence"] - 1e-12:
                raise SystemExit(f"{dataset} {row_order} seed {seed}: the best of {args.restarts} restarts is below "
                                 "restart 0")
            rows.append({"dataset": dataset, "row_order": row_order, "seed": seed, "rows": len(atoms),
                         "train": n_train, "old_cd": round(old["compound_divergence"], 4),
                         "old_ad": round(old["atom_divergence"], 4), "old_seconds": round(old_seconds, 2),
                         "new_cd": round(new["compound_divergence"], 4), "new_ad": round(new["atom_divergence"], 4),
                         "new_seconds": round(new_seconds, 2), "restart_kept": splitter.restart_,
                         "restart_cds": splitter.restart_divergences_, "bound_met": splitter.bound_met_})
    return rows


def run(dataset: str, args) -> tuple[list[dict], list[dict]]:
    from loading_scripts import load_compositional

    folder, train_size = DATASETS[dataset]
    if dataset == "spider":
        train_size = args.spider_train_size
    src = load_compositional(f"{args.data}/{folder}")
    programs = src.inputs if PROGRAM_SIDE.get(dataset) == "input" else src.targets
    atoms = atoms_by_row(programs, src.target_language).atoms
    compounds = compounds_by_row(programs, src.target_language)
    n_train = train_count(train_size, len(atoms))
    searches = restart_rows(dataset, atoms, compounds, content_keys(src.rows, ("input", "target")), n_train, args)
    rows = []
    if dataset in ("geoquery", "spider") and args.reference_iterations:
        started = time.perf_counter()
        train, test, _ = reference_tmcd(atoms, compounds, train_size=n_train, random_state=1,
                                        max_iterations=args.reference_iterations)
        rows.append(_row(dataset, f"reference greedy ({args.reference_iterations} iterations)",
                         time.perf_counter() - started, split_divergences(train, test, atoms, compounds),
                         rows=len(atoms), train=n_train))
    for name, published in src.published.items():
        figures = split_divergences(list(published["train"]), list(published.get("test", [])), atoms, compounds)
        rows.append(_row(dataset, f"published {name}", None, figures, rows=len(atoms), train=len(published["train"])))
    return searches, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="geoquery", help=f"comma-separated, of {','.join(DATASETS)}")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated seeds of the searches")
    parser.add_argument("--row-orders", default=",".join(ROW_ORDERS), help="comma-separated, of "
                        f"{','.join(ROW_ORDERS)}: the order the rows reach the search in")
    parser.add_argument("--restarts", type=int, default=DEFAULT_RESTARTS,
                        help="restarts of the search compared with one (default: resplit's)")
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
    if any(order not in ROW_ORDERS for order in args.row_orders.split(",")) or args.restarts < 1:
        parser.error(f"--row-orders takes {','.join(ROW_ORDERS)}; --restarts at least 1")
    searches, rows = [], []
    print(f"{args.iterations} swaps per restart, AD <= {args.max_atom_divergence:g}; 1 restart vs {args.restarts}")
    print(f"{'dataset':<10}{'order':<10}{'seed':>5}{'CD (1)':>9}{'AD (1)':>8}{'s (1)':>7}{f'CD ({args.restarts})':>9}"
          f"{f'AD ({args.restarts})':>8}{f's ({args.restarts})':>7}{'kept':>6}  CD of each restart")
    for dataset in args.datasets.split(","):
        found, published = run(dataset, args)
        for row in found:
            print(f"{row['dataset']:<10}{row['row_order']:<10}{row['seed']:>5}{row['old_cd']:>9.4f}{row['old_ad']:>8.4f}"
                  f"{row['old_seconds']:>7.1f}{row['new_cd']:>9.4f}{row['new_ad']:>8.4f}{row['new_seconds']:>7.1f}"
                  f"{row['restart_kept']:>6}  {' '.join(f'{v:.4f}' if v is not None else '-' for v in row['restart_cds'])}",
                  flush=True)
        searches += found
        rows += published
    print(f"\n{'dataset':<10}{'split':<44}{'rows':>7}{'train':>7}{'CD':>8}{'AD':>8}{'unseen':>8}{'novel':>8}{'seconds':>9}")
    for row in rows:
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f}"
        print(f"{row['dataset']:<10}{row['search']:<44}{row['rows']:>7}{row['train']:>7}"
              f"{row['compound_divergence']:>8.4f}{row['atom_divergence']:>8.4f}{row['unseen_atom_rows']:>8}"
              f"{100 * row['novel_compound_share']:>7.1f}%{seconds:>9}", flush=True)
    if args.json:
        print(json.dumps({"iterations": args.iterations, "restarts": args.restarts, "searches": searches,
                          "rows": rows}))


if __name__ == "__main__":
    main()
