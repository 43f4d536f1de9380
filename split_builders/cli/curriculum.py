"""``resplit curriculum-report --predictions FILE``: CURRICULUM's zero-shot table, inoculation curves and
2x2 generalisation matrices from predictions on a ``resplit curriculum`` release
(:mod:`split_builders.evaluation.curriculum_report`, which documents the file format)."""

from __future__ import annotations


def run_curriculum_report(args) -> int:
    import json

    from split_builders.errors import InvalidParameterError
    from split_builders.evaluation.curriculum_report import curriculum_report

    if args.model and len(args.predictions) > 1:
        raise InvalidParameterError("--model names the model of one predictions file; with several, each is named by "
                                    "its model column or its file name")
    if args.figure:  # before the work: a format matplotlib cannot write is refused first (its folder is made)
        from split_builders.release.places import check_figure_format, refuse_link

        refuse_link(args.figure, "--figure")
        check_figure_format(args.figure, "--figure")
    report = curriculum_report(args.predictions if len(args.predictions) > 1 else args.predictions[0],
                               model=args.model)
    figure = report.heatmap(args.figure) if args.figure else None
    if args.json:
        result = report.as_dict()
        if figure is not None:
            result["figure"] = str(figure)
        print(json.dumps(result, ensure_ascii=False))
        return 0
    for line in report.lines():
        print(line)
    if figure is not None:
        print(f"\nwrote the zero-shot heatmap to {figure}")
    return 0


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "curriculum-report", help="CURRICULUM's zero-shot table (MCC), inoculation curves and 2x2 generalisation "
                                  "matrices from predictions",
        description="Read predictions on a `resplit curriculum` release (CSV, TSV, JSON lines or Parquet; one row per "
                    "example with columns config (or phenomenon), prediction, label, and optionally split and model) "
                    "and print the paper's zero-shot diagnostic (Matthews correlation per phenomenon and per "
                    "category, hypothesis-only beside it), the inoculation accuracies per size and the 2x2 "
                    "generalisation matrix of every phenomenon (trained on simple / hard, tested on simple / hard).")
    parser.add_argument("--predictions", required=True, action="append", metavar="FILE",
                        help="predictions file (repeat the flag for several models; .gz ok)")
    parser.add_argument("--model", help="name of the model of rows without a model column (default: the file's name)")
    parser.add_argument("--figure", metavar="PATH", help="also draw the zero-shot heatmap as a PNG at PATH")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(func=run_curriculum_report)
