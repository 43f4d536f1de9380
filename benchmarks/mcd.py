"""MCD search quality and speed on SCAN and COGS, beside Keysers et al.'s published SCAN MCD splits.

    python benchmarks/mcd.py                              # SCAN, seeds 1 2 3, then COGS train+dev+test, seed 1
    python benchmarks/mcd.py --datasets scan --seeds 1 2 3 4 5 --swaps 5000
    python benchmarks/mcd.py --datasets cogs --json

For each dataset: the atoms and weighted compounds of every row (timed once), then resplit's search per
seed at the paper's shares (SCAN: train 8,365 and test 1,045 of 20,910 rows; COGS: the same shares of
its 30,155 train+dev+test rows), timed from the computed signal, with compound divergence (DC) and atom
divergence (DA); for SCAN, the published mcd1-3 measured under the same definitions beside the paper's
figures. ``--json`` prints every row as one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from split_builders.signals.programs.mcd_atoms import mcd_rows
from split_builders.splitters.mcd import MCDSplitter, config_divergences

SCAN_ROWS, SCAN_TRAIN, SCAN_TEST = 20_910, 8_365, 1_045
PAPER = {"mcd1": (0.736, 0.015), "mcd2": (0.734, 0.020), "mcd3": (0.735, 0.014)}


def programs(dataset: str, data: Path) -> tuple[list[str], dict]:
    """The programs whose derivations are read (SCAN commands; COGS train+dev+test logical forms) and
    the published MCD splits over them."""
    from loading_scripts import load_compositional

    if dataset == "scan":
        src = load_compositional(str(data / "scan"))
        return list(src.inputs), {k: v for k, v in src.published.items() if k.startswith("mcd")}
    src = load_compositional(str(data / "cogs"))
    origin = src.rows["origin"] if "origin" in src.rows.column_names else None
    targets = src.targets
    keep = [i for i in range(len(targets)) if origin is None or not str(origin[i]).startswith("gen")]
    return [targets[i] for i in keep], {}


def run(dataset: str, args) -> list[dict]:
    texts, published = programs(dataset, Path(args.data))
    started = time.perf_counter()
    found = mcd_rows(texts, dataset)
    signal_seconds = time.perf_counter() - started
    n = len(found.parsed_rows)
    rows = []
    parsed = found.parsed_rows
    atoms = [found.atoms[r] for r in parsed]
    compounds = [found.compounds[r] for r in parsed]
    for seed in args.seeds:
        splitter = MCDSplitter(train_size=SCAN_TRAIN / SCAN_ROWS, test_size=SCAN_TEST / SCAN_ROWS,
                               max_atom_divergence=args.max_atom_divergence, n_candidates=args.candidates,
                               n_swaps=args.swaps, random_state=seed)
        started = time.perf_counter()
        split = splitter.split(atoms=atoms, compounds=compounds)
        seconds = time.perf_counter() - started
        figures = config_divergences({"train": split.train, "test": split.test}, atoms, compounds)
        rows.append({"dataset": dataset, "split": f"resplit seed {seed}", "rows": n, "train": len(split.train),
                     "test": len(split.test), "seconds": round(seconds, 1), "signal_seconds": round(signal_seconds, 1),
                     "compound_divergence": round(figures["compound_divergence"], 4),
                     "atom_divergence": round(figures["atom_divergence"], 4)})
    for name, split in published.items():
        figures = config_divergences(split, found.atoms, found.compounds)
        paper = PAPER.get(name, (None, None))
        rows.append({"dataset": dataset, "split": f"published {name}", "rows": n, "train": len(split["train"]),
                     "test": len(split["test"]), "seconds": None, "signal_seconds": round(signal_seconds, 1),
                     "compound_divergence": round(figures["compound_divergence"], 4),
                     "atom_divergence": round(figures["atom_divergence"], 4),
                     "paper_compound_divergence": paper[0], "paper_atom_divergence": paper[1]})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"),
                        help="the shared data folder (default: ../shared/data)")
    parser.add_argument("--datasets", nargs="+", default=["scan", "cogs"], choices=["scan", "cogs"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--cogs-seeds", nargs="+", type=int, default=[1], help="seeds of the COGS search")
    parser.add_argument("--candidates", type=int, default=256)
    parser.add_argument("--swaps", type=int, default=2000)
    parser.add_argument("--max-atom-divergence", type=float, default=0.02)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import platform

    print(f"machine: {platform.processor() or platform.machine()}; search: {args.candidates} candidates, "
          f"{args.swaps} swaps, atom divergence <= {args.max_atom_divergence:g}")
    print(f"{'dataset':<8}{'split':<18}{'train':>7}{'test':>7}{'seconds':>9}{'DC':>9}{'DA':>9}{'paper DC':>10}{'paper DA':>10}")
    every = []
    for dataset in args.datasets:
        seeds = args.seeds if dataset == "scan" else args.cogs_seeds
        rows = run(dataset, argparse.Namespace(**{**vars(args), "seeds": seeds}))
        every += rows
        print(f"{dataset:<8}{'signal':<18}{'':>7}{'':>7}{rows[0]['signal_seconds']:>9.1f}   ({rows[0]['rows']} rows: atoms, "
              "weighted compounds)")
        for row in rows:
            seconds = "-" if row["seconds"] is None else f"{row['seconds']:.1f}"
            paper_dc = row.get("paper_compound_divergence")
            paper_da = row.get("paper_atom_divergence")
            print(f"{dataset:<8}{row['split']:<18}{row['train']:>7}{row['test']:>7}{seconds:>9}"
                  f"{row['compound_divergence']:>9.4f}{row['atom_divergence']:>9.4f}"
                  f"{'-' if paper_dc is None else paper_dc:>10}{'-' if paper_da is None else paper_da:>10}")
    if args.json:
        print(json.dumps(every))


if __name__ == "__main__":
    main()
