"""``resplit probe FOLDER | HUB_ID[@REVISION]``: a quick baseline trained on each config's train split and
scored on its validation and test splits, with bootstrap intervals and the relative error increase over
the ``random`` (or ``standard``) config (:mod:`split_builders.evidence.probe`)."""

from __future__ import annotations

import sys


def run_probe(args) -> int:
    from split_builders.api import check_number
    from split_builders.evidence.probe import format_report, probe_target

    from split_builders.cli.audit import names, report_on_target

    seed, configs = int(check_number(args.seed, "--seed", integer=True, minimum=0)), names(args.configs)
    return report_on_target(args, "probe", lambda work: probe_target(
        args.target, work=work, revision=args.revision, configs=configs, seed=seed, progress=not args.no_progress),
        format_report)


def add_parsers(subparsers) -> None:
    from split_builders.cli.audit import add_target_arguments

    parser = subparsers.add_parser(
        "probe", help="baseline probe: a quick baseline's accuracy per config and evaluation split, with intervals",
        description="Trains a fast, deterministic baseline on each config's train split of TARGET and scores it on "
                    "its validation and test splits: TF-IDF word 1-2-grams + logistic regression on the whole input "
                    "and on the query alone (classification), nearest-neighbour retrieval by TF-IDF cosine with exact "
                    "match (semantic parsing), or the pass rate of the suite's own predictions (behavioural); with a "
                    "95% bootstrap interval and the relative error increase over the random (or standard) config. "
                    "A sanity check, not a replacement for evaluating strong models. TARGET: a release folder of any "
                    "family, a dataset folder with train / validation / test data files, or a Hub dataset id.")
    add_target_arguments(parser, json_help="configs.<config>.<split>: rows, accuracy, ci_low, ci_high, "
                                           "query_only_accuracy, relative_error_increase")
    parser.add_argument("--configs", help="the configs to probe, comma-separated (default: every config with a train "
                                          "split and a validation or test split)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the classifier and of the bootstrap (default 0)")
    parser.set_defaults(func=run_probe)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["probe", *sys.argv[1:]]))
