"""``resplit pass-rate`` and ``resplit concurrence``: the metrics from the command line.

The numbers come from the `evaluate` modules in ``metrics/`` themselves (loaded with
``evaluate.load`` from their folders), so the command line and ``evaluate.load`` users get
one implementation (found by :mod:`split_builders.metric_folders`). This module only reads files,
picks options and prints.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from split_builders.errors import FieldError, InvalidParameterError, SourceLoadError
from split_builders.metric_folders import METRICS_DIR_ENV, load_metric

PREDICTION_FORMATS = ("pred_only", "binary_conf", "softmax")
TESTCASE_CHOICES = ("auto", "all", "n500", "train", "validation", "test")
CONCURRENCE_METHODS = ("kendall", "pearson", "spearman")
RESULT_COLUMNS = ("model", "benchmark", "seed", "score")


def _run_metric(step):
    """Run ``step()``; the metric modules raise ValueError for bad input, which we report cleanly."""
    try:
        return step()
    except ValueError as error:
        raise InvalidParameterError(str(error)) from error


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    """The whole file as text: gunzipped if ``.gz``, strictly UTF-8, a byte-order mark (what spreadsheet
    programs write as "CSV UTF-8") dropped."""
    from loading_scripts.files import read_text

    try:
        return read_text(Path(path))
    except SourceLoadError:
        raise
    except OSError as error:
        raise SourceLoadError(f"cannot read {path}: {error}") from error


def read_suite(path: str) -> dict:
    """A CheckList suite (``.json`` or ``.json.gz``), validated by the suite reader, as the JSON
    object the pass_rate module takes."""
    from loading_scripts.checklist import read_checklist_suite

    return read_checklist_suite(path).as_dict()


def read_prediction_lines(path: str) -> list[str]:
    """One line per example; a final newline does not make an extra (empty) example."""
    lines = _read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_results(path: str) -> dict[str, list]:
    """The ``model,benchmark,seed,score`` CSV as columns (seed "" when a model has one run)."""
    text = _read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    available = reader.fieldnames or []
    for column in RESULT_COLUMNS:
        if column not in available:
            raise FieldError(column, available, role="results", source=path)
    columns = {column: [] for column in RESULT_COLUMNS}
    for line, row in enumerate(reader, start=2):
        try:
            score = float(row["score"])
        except (TypeError, ValueError):
            raise InvalidParameterError(f"{path}, line {line}: score {row['score']!r} is not a number") from None
        columns["model"].append(row["model"])
        columns["benchmark"].append(row["benchmark"])
        columns["seed"].append((row["seed"] or "").strip())
        columns["score"].append(score)
    if not columns["model"]:
        raise InvalidParameterError(f"{path} has no result rows")
    return columns


def _json_ready(value):
    """NaN (undefined pass rate or correlation) as null, so that the output is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_ready(item) for item in value]
    return value


def _print_json(value) -> None:
    print(json.dumps(_json_ready(value), indent=1, ensure_ascii=False, allow_nan=False))


def _format_rate(value: float) -> str:
    return "   n/a" if math.isnan(value) else f"{value:6.1f}"


# ---------------------------------------------------------------------------------------
# resplit pass-rate
# ---------------------------------------------------------------------------------------


def _suite_columns(metric, suite, predictions, confidences, testcases, beluga_labels):
    """compute() columns; with ``auto`` the predictions cover all test cases or CheckList's n500 sample."""
    choices = ("all", "n500") if testcases == "auto" else (testcases,)
    problems = []
    for choice in choices:
        try:
            return metric.testcases_from_suite(suite, predictions, confidences, testcases=choice,
                                               beluga_labels=beluga_labels)
        except ValueError as error:
            problems.append(str(error))
    raise InvalidParameterError("; ".join(problems))


def run_pass_rate(args) -> int:
    metric = load_metric("pass_rate", args.metrics_dir)
    suite = read_suite(args.suite)
    lines = read_prediction_lines(args.predictions)
    answers = metric.suite_uses_answers(suite)
    predictions, confidences = _run_metric(lambda: metric.read_predictions(
        lines, args.format, answers=answers, sentiment_binary=args.sentiment_binary))
    columns = _suite_columns(metric, suite, predictions, confidences, args.testcases, args.beluga_labels)
    result = _run_metric(lambda: metric.compute(**columns))
    if args.json:
        _print_json({"functionalities": result["functionalities"], "pass_rate": result["pass_rate"]})
        return 0
    _print_pass_rate_table(result)
    return 0


def _print_pass_rate_table(result) -> None:
    print(f"{'pass %':>6}  {'passed':>6}  {'failed':>6}  {'filtered':>8}  functionality")
    for name, counts in result["functionalities"].items():
        print(f"{_format_rate(counts['pass_rate'])}  {counts['passed']:6d}  {counts['failed']:6d}  "
              f"{counts['filtered']:8d}  {name}")
    print()
    for group in ("capabilities", "types"):
        for name, rate in result[group].items():
            print(f"{_format_rate(rate)}  {name}")
        print()
    print(f"{_format_rate(result['pass_rate'])}  suite score (mean over functionalities)")


# ---------------------------------------------------------------------------------------
# resplit concurrence
# ---------------------------------------------------------------------------------------


def run_concurrence(args) -> int:
    if args.heatmap:  # before the work: a figure that cannot be written is refused first
        from split_builders.release.places import check_output_file

        check_output_file(args.heatmap, "--heatmap", figure=True)
    metric = load_metric("concurrence", args.metrics_dir)
    columns = read_results(args.results)
    result = _run_metric(lambda: metric.compute(
        **columns, method=args.method, n_bootstrap=args.bootstrap,
        confidence_level=args.confidence_level, random_state=args.seed))
    if args.heatmap:  # as every file resplit writes: never through a link, beside its place then renamed
        import os
        from pathlib import Path

        from split_builders.release.places import write_file

        def draw(staging):
            named = f"{staging}{Path(args.heatmap).suffix}"  # matplotlib reads the format from the extension
            try:
                metric.plot_heatmap(result, named)
                os.replace(named, staging)
            finally:
                Path(named).unlink(missing_ok=True)

        write_file(Path(args.heatmap).expanduser(), draw, overwrite=True, flag="--heatmap")
    values = result["concurrence"]
    if args.bootstrap:
        intervals = result["confidence_interval"]
        values = {pair: {"concurrence": value, "confidence_interval": intervals[pair]}
                  for pair, value in values.items()}
    if args.json:
        _print_json(values)
        return 0
    for pair, value in result["concurrence"].items():
        interval = result.get("confidence_interval", {}).get(pair)
        shown = "n/a" if math.isnan(value) else f"{value:.4f}"
        extra = f"  [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
        print(f"{pair}  {shown}{extra}")
    return 0


# ---------------------------------------------------------------------------------------
# Parsers
# ---------------------------------------------------------------------------------------


def _add_metrics_dir(parser) -> None:
    parser.add_argument("--metrics-dir",
                        help=f"folder holding the metric modules (default: ${METRICS_DIR_ENV}, "
                             "else metrics/ of this checkout)")


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "pass-rate", help="CheckList pass rates of a model's predictions on a behavioural suite",
        description="Run a CheckList suite (resplit's JSON format) from a prediction file with one line per "
                    "example in suite order (tests, test cases, examples), as CheckList's run_from_file.")
    parser.add_argument("--suite", required=True, help="suite JSON (.json or .json.gz)")
    parser.add_argument("--predictions", required=True, help="prediction file, one line per example (.gz ok)")
    parser.add_argument("--format", required=True, choices=PREDICTION_FORMATS,
                        help="pred_only: the label or answer; binary_conf: p(class 1); "
                             "softmax: space-separated probabilities")
    parser.add_argument("--sentiment-binary", action="store_true",
                        help="map a binary model's p(positive) to CheckList's three sentiment classes")
    parser.add_argument("--testcases", choices=TESTCASE_CHOICES, default="auto",
                        help="which test cases the file covers: all, CheckList's n500 sample, or a BELUGA split "
                             "(default auto: all or n500, whichever matches the number of lines)")
    parser.add_argument("--beluga-labels", action="store_true", help="use BELUGA's relabelled tests")
    parser.add_argument("--json", action="store_true", help="print JSON: per-functionality counts and the mean")
    _add_metrics_dir(parser)
    parser.set_defaults(func=run_pass_rate)

    parser = subparsers.add_parser(
        "concurrence", help="agreement of benchmarks' model rankings (Sun, Williams & Hupkes, 2023)",
        description="Concurrence of every pair of benchmarks from a CSV with columns model,benchmark,seed,score "
                    "(seed empty when a model has one run).")
    parser.add_argument("--results", required=True, help="CSV with columns model,benchmark,seed,score")
    parser.add_argument("--method", choices=CONCURRENCE_METHODS, default="kendall",
                        help="kendall (tau-b, default), pearson or spearman")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N",
                        help="bootstrap resamples of the models for confidence intervals (default 0: none)")
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--heatmap", metavar="PNG", help="also write the pairwise matrix as a heatmap")
    parser.add_argument("--json", action="store_true",
                        help='print JSON {"A|B": value}; with --bootstrap each value is '
                             '{"concurrence": value, "confidence_interval": [low, high]}')
    _add_metrics_dir(parser)
    parser.set_defaults(func=run_concurrence)
