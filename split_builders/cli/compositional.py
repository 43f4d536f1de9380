"""``resplit tmcd``: compositional splits (TMCD, length, template, standard) into a Hub-style folder."""

from __future__ import annotations

from split_builders.cli.likelihood import size


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "tmcd", help="build TMCD / length / template / standard splits (Shaw et al. 2021) into a Hub-style folder",
        description="Read GeoQuery/Spider (NQG format), SCAN or COGS and write compositional splits with atom and "
                    "compound divergence in the card.")
    parser.add_argument("--source", required=True,
                        help="NQG-format TSV (input TAB program, one example per line), a GeoQuery/Spider/SCAN/COGS "
                             "folder, or a Hub dataset id (org/name)")
    parser.add_argument("--target-language", choices=["funql", "sql", "scan", "cogs"],
                        help="atom/compound definition (default: from the source)")
    parser.add_argument("--train-size", type=size, required=True, help="train rows N (count in (0, rows) or fraction)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--configs", default="tmcd",
                        help="comma-separated subset of tmcd,length,template,standard (default: tmcd)")
    parser.add_argument("--reference", action="store_true",
                        help="TMCD by Shaw et al.'s first-improvement greedy (1000 iterations; reproduces tmcd_1.json)")
    parser.add_argument("--iterations", type=int, default=50_000, help="annealing steps of the TMCD search")
    parser.add_argument("--max-atom-divergence", type=float, default=0.05,
                        help="upper bound on the train/test atom divergence the TMCD search keeps (default 0.05)")
    parser.add_argument("--validation-size", type=int, default=0, help="rows of test moved to a validation split")
    parser.add_argument("--lexical", action="store_true", help="add <config>_rstr and <config>_rcvcv wug-word variants")
    parser.add_argument("--no-published", action="store_true", help="leave out the splits published with the dataset")
    parser.add_argument("--scores", help=".npy of log-likelihoods, one per row: adds ll_split* configs beside TMCD")
    parser.add_argument("--out", required=True)
    parser.add_argument("--overwrite", action="store_true")
    parser.set_defaults(func=run)


def run(args) -> int:
    from split_builders.methods.compositional import build_compositional

    result = build_compositional(
        args.source, out=args.out, target_language=args.target_language, train_size=args.train_size,
        seed=args.seed, configs=tuple(c.strip() for c in args.configs.split(",") if c.strip()),
        reference=args.reference, n_iterations=args.iterations,
        max_atom_divergence=args.max_atom_divergence, validation_size=args.validation_size,
        lexical=args.lexical, published=not args.no_published, scores=args.scores, overwrite=args.overwrite)
    if result["unparseable"]:
        print(f"{result['unparseable']} unparseable program(s) excluded (listed in the card)")
    print(f"{'config':<28}{'train':>7}{'test':>7}{'compound div':>14}{'atom div':>10}{'seconds':>9}")
    for name, f in result["figures"].items():
        print(f"{name:<28}{f['train']:>7}{f['test']:>7}{f['compound_divergence']:>14.4f}{f['atom_divergence']:>10.4f}"
              f"{f.get('seconds', float('nan')):>9.1f}")
    return 0
