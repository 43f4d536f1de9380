"""``resplit diagnose FOLDER | HUB_ID[@REVISION]``: diagnostics against random splits of a release of
any family, or of any dataset with train / validation / test splits (:mod:`split_builders.evidence.diagnostics`)."""

from __future__ import annotations

import sys


def run_diagnose(args) -> int:
    from split_builders.evidence.diagnostics import check_null_splits, check_seed, diagnose_target, format_report

    from split_builders.cli.audit import report_on_target

    null_splits, seed = check_null_splits(args.null_splits), check_seed(args.seed)
    return report_on_target(args, "diagnose", lambda work: diagnose_target(
        args.target, work=work, revision=args.revision, null_splits=null_splits, seed=seed,
        progress=not args.no_progress), format_report)


def add_parsers(subparsers) -> None:
    from split_builders.cli.audit import add_target_arguments
    from split_builders.evidence.diagnostics import DEFAULT_NULL_SPLITS, DEFAULT_SEED

    parser = subparsers.add_parser(
        "diagnose", help="diagnostics against random splits: rare words, length, unseen words, reading grade, "
                         "signal, program divergence and SQL hardness, each with its percentile",
        description="Per config and evaluation split (validation, test) of TARGET, statistics of the evaluation rows "
                    "(query length, rare-word fraction, unseen-word rate, Flesch-Kincaid grade, the method's signal; "
                    "atom / compound divergence, unseen compounds and templates, Spider hardness for programs) with "
                    "their train value and their percentile among --null-splits random splits of the config's rows "
                    "with the same sizes (label-balanced or grouped as the config is). TARGET: a release folder of "
                    "any family, a dataset folder with train / validation / test data files, or a Hub dataset id.")
    add_target_arguments(parser, json_help="configs.<config>.<split>.<statistic>: value, train, percentile, "
                                           "null_p05, null_p95; null_distributions; held_out for behavioural releases")
    parser.add_argument("--null-splits", type=int, default=DEFAULT_NULL_SPLITS,
                        help=f"random splits per config (default {DEFAULT_NULL_SPLITS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                        help=f"seed of the random splits (default {DEFAULT_SEED}; a card states the one it used)")
    parser.set_defaults(func=run_diagnose)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["diagnose", *sys.argv[1:]]))
