"""``resplit report RELEASE [RELEASE ...] RUN[=NAME] [RUN[=NAME] ...]``: evaluation runs on a release turned into
the papers' tables with intervals (:mod:`split_builders.evaluation.report`)."""

from __future__ import annotations


def run_report(args) -> int:
    import json
    import tempfile
    from pathlib import Path

    from split_builders.errors import InvalidParameterError
    from split_builders.evaluation.report import check_intervals, report
    from split_builders.release.folder import front_matter

    check_intervals(args.bootstrap_iters, args.confidence, names=("--bootstrap-iters", "--confidence"))
    if args.out is not None:  # before any work: a place the report may not go is refused first
        from split_builders.release.file_sets import check_file_set

        check_file_set(args.out, ("report.md", "report.json", "report.tex"), overwrite=args.overwrite)
    releases, runs = [], []
    for item in args.inputs:  # releases first (a folder whose README records a resplit release), then runs
        path = Path(item).expanduser()
        is_release = (path / "README.md").is_file() and ((front_matter(path / "README.md")[0] or {}).get("resplit")
                                                         is not None)
        if not runs and (is_release or (not path.exists() and "@" in item and "=" not in item)):
            releases.append(item)
        else:
            runs.append(item)
    if not releases:
        raise InvalidParameterError(f"{args.inputs[0]} is not a resplit release: give the release folder (or "
                                    "HUB_ID@REV) first, then the runs")
    if not runs:
        raise InvalidParameterError("no run given: add an lm_eval --output_path folder (written with --log_samples) "
                                    "or a predictions table after the release")
    with tempfile.TemporaryDirectory(prefix="resplit-report-") as work:
        result = report(releases, runs, baseline=args.baseline, n_resamples=args.bootstrap_iters, seed=args.seed,
                        confidence=args.confidence, iid=args.iid, work=Path(work))
    written = result.write(args.out, overwrite=args.overwrite) if args.out is not None else []
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, allow_nan=False, default=str))
        return 0
    for line in result.lines():
        print(line)
    if written:
        print(f"wrote {len(written)} file(s) to {args.out}: {', '.join(p.name for p in written)}")
    return 0


def add_parsers(subparsers) -> None:
    from split_builders.evaluation.report import CONFIDENCE, N_RESAMPLES

    parser = subparsers.add_parser(
        "report", help="evaluation runs on a release as the papers' tables: metric per config with intervals, the gap "
                       "to the baseline config and the relative error increase, paired model comparisons, concurrence",
        description="Read evaluation runs of a release (lm-evaluation-harness --output_path folders written with "
                    "--log_samples, inspect-ai logs (.eval) or their --log-dir, or predictions tables with columns model, config, split, source_id and one of "
                    "correct, score or prediction), join every sample to its release row by source_id, and print per "
                    "model and config the declared metric with its interval (Wilson's score interval for 0/1 outcomes, "
                    "a percentile bootstrap otherwise), the gap to the method's baseline "
                    "config with the relative error increase, paired comparisons of models (McNemar's exact test), "
                    "with three or more models the concurrence (Kendall's tau) of model rankings between configs, and "
                    "the tables of a method's paper (CheckList pass rates, CURRICULUM's MCC table, BELUGA's G-scores "
                    "with --iid).")
    parser.add_argument("inputs", nargs="+", metavar="RELEASE_OR_RUN",
                        help="the release folder (or HUB_ID@REV; several releases may come first), then the runs: "
                             "RUN or RUN=NAME (NAME names the model)")
    parser.add_argument("--baseline", metavar="CONFIG", help="the config gaps are measured against (default: the "
                                                             "method's declared baseline config, e.g. random)")
    parser.add_argument("--out", metavar="DIR", help="also write report.md, report.json, one CSV per table, report.tex "
                                                     "and the figures (gaps.png, concurrence.png) into DIR")
    parser.add_argument("--iid", metavar="[RELEASE/]CONFIG",
                        help="the config of the i.i.d. test set the models were also run on: its hits and each "
                             "scenario's test cases give BELUGA's G-scores on a behavioural release")
    parser.add_argument("--overwrite", action="store_true", help="replace report files already in --out")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the last line) instead of tables")
    parser.add_argument("--bootstrap-iters", type=int, default=N_RESAMPLES, metavar="N",
                        help=f"resamples of every bootstrap interval (default {N_RESAMPLES}; 0: no intervals at all, "
                             "score intervals included)")
    parser.add_argument("--confidence", type=float, default=CONFIDENCE, help=f"interval level (default {CONFIDENCE})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstraps (default 0)")
    parser.set_defaults(func=run_report)
