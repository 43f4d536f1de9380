"""``resplit evaluate-suite``: run a classifier over one behavioural config and score it with the
``pass_rate`` and ``g_score`` modules (loaded as ``resplit pass-rate`` loads them, so there is one
implementation of each number)."""

from __future__ import annotations

from split_builders.splits import SPLITS
from split_builders.options import ROW_ORDERS

SUITE_DIR_ENV = "RESPLIT_CHECKLIST_DIR"
NAMED_SUITES = ("sentiment", "qqp", "squad")


def resolve_suite(suite: str, suite_dir: str | None = None):
    """A suite file path, or a released suite's name looked up in ``suite_dir`` / $RESPLIT_CHECKLIST_DIR."""
    import os
    from pathlib import Path

    from loading_scripts.checklist import read_checklist_suite
    from split_builders.errors import InvalidParameterError

    from loading_scripts.files import looks_like_path, not_found

    if Path(suite).expanduser().is_file():
        return read_checklist_suite(Path(suite).expanduser())
    if Path(suite).expanduser().is_dir():
        raise InvalidParameterError(f"--suite {suite!r} is a folder: give a suite file (.json or .json.gz), or a "
                                    f"suite's name ({', '.join(NAMED_SUITES)}) with --suite-dir {suite}")
    if suite in NAMED_SUITES:
        folder = suite_dir or os.environ.get(SUITE_DIR_ENV)
        if not folder:
            raise InvalidParameterError(f"suite {suite!r}: pass --suite-dir (or set ${SUITE_DIR_ENV}) to the folder "
                                        f"holding {suite}_suite.json.gz, or give the file's path")
        return read_checklist_suite(Path(folder) / f"{suite}_suite.json.gz")
    if looks_like_path(suite):
        raise not_found(suite, "--suite", "a CheckList suite file, .json or .json.gz")
    raise InvalidParameterError(f"suite {suite!r} is neither a file nor one of {', '.join(NAMED_SUITES)}")


def select_config(suite, config: str, split: str, *, seed: int = 42, row_order: str = "content"):
    """The rows (test cases) of one config's split, built in memory with ``seed`` and the row order rule
    ``row_order`` (those of the release being evaluated: ``resplit behavioural``'s defaults are 42 and
    ``content``; BELUGA's own draw is 123 over the suite's order, ``position``)."""
    from split_builders.errors import InvalidParameterError
    from split_builders.methods.behavioural import suite_configs, testcase_rows

    rows = testcase_rows(suite, beluga_labels=True)
    configs = {c.name: c for c in suite_configs(rows, row_order=row_order, random_state=seed)}
    if config not in configs:
        raise InvalidParameterError(f"unknown config {config!r}; valid configs: {', '.join(configs)}")
    return rows.select(sorted(int(i) for i in configs[config].indices[split]))


def check_model_path(model: str) -> None:
    """A ``--model`` that looks like a local path must be a folder that exists (not a Hub lookup)."""
    from pathlib import Path

    from loading_scripts.files import looks_like_path, not_found
    from split_builders.errors import InvalidParameterError

    path = Path(model).expanduser()
    if path.is_file():
        raise InvalidParameterError(f"--model {model!r} is a file: give the folder of a sequence classifier (its "
                                    "config.json and weights) or a Hub id")
    if not path.exists() and looks_like_path(model):
        raise not_found(model, "--model", "the folder of a sequence classifier, or a Hub id org/name")


def testcase_columns(rows, predictions, confidences) -> dict:
    """pass_rate's compute() arguments: per-example predictions cut into the rows' test cases.

    Raises
    ------
    InvalidParameterError
        When there is not exactly one prediction (and one probability vector) per example.
    """
    from split_builders.methods.behavioural import PASS_RATE_COLUMNS
    from split_builders.errors import InvalidParameterError

    sizes = [len(examples) for examples in rows["examples"]]
    total = sum(sizes)
    if len(predictions) != total or (confidences is not None and len(confidences) != total):
        got = f"{len(predictions)} predictions" + ("" if confidences is None else f" and {len(confidences)} "
                                                                                 "probability vectors")
        raise InvalidParameterError(f"expected one prediction per example: {total} examples in "
                                    f"{len(sizes)} test cases, got {got}")
    columns = {"predictions": [], "confidences": []}
    start = 0
    for size in sizes:
        columns["predictions"].append(list(predictions[start:start + size]))
        columns["confidences"].append([] if confidences is None else [list(c) for c in confidences[start:start + size]])
        start += size
    columns.update({column: rows[column] for column in PASS_RATE_COLUMNS})
    return columns


def classify(model_path: str, rows, *, batch_size: int = 32, max_length: int = 128, progress: bool = True):
    """Class probabilities of a Hugging Face sequence classifier for every example of ``rows``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from split_builders.errors import ModelLoadError
    from split_builders.progress import progress_bar

    try:
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(model_path)
            model, loading = AutoModelForSequenceClassification.from_pretrained(model_path, output_loading_info=True)
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot load a sequence classifier from {model_path!r}: {error}") from None
    check_weights_loaded(model_path, loading)
    model.eval()
    examples = [example for case in rows["examples"] for example in case]
    probabilities = []
    with torch.no_grad():
        for start in progress_bar(range(0, len(examples), batch_size), description="classifying", unit="batch",
                                  enabled=progress):
            batch = examples[start:start + batch_size]
            first = [e[0] for e in batch]
            # Pairs (QQP) go in as text and text_pair; single texts alone.
            second = [e[1] for e in batch] if all(len(e) > 1 for e in batch) else None
            encoded = tokenizer(first, second, padding=True, truncation=True, max_length=max_length,
                                return_tensors="pt")
            probabilities.append(torch.softmax(model(**encoded).logits.float(), dim=-1))
    return torch.cat(probabilities).tolist() if probabilities else []


def check_weights_loaded(model_path: str, loading: dict) -> None:
    """Refuse a model whose weights were not all read from its checkpoint.

    ``from_pretrained`` initialises at random whatever the checkpoint lacks (a causal LM or a base
    encoder has no classification head) or has in another shape; such a model's pass rates and
    G-score measure a random head, not the model.

    Raises
    ------
    ModelLoadError
        Naming the model and the weights that were newly initialised.
    """
    from split_builders.errors import ModelLoadError

    missing = sorted(loading.get("missing_keys") or ())
    mismatched = sorted(key[0] if isinstance(key, tuple) else key for key in loading.get("mismatched_keys") or ())
    if missing or mismatched:
        names = missing + [f"{k} (shape differs)" for k in mismatched]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        raise ModelLoadError(f"{model_path!r} is not a trained sequence classifier: its checkpoint lacks {shown}, "
                             "which would be initialised at random (give a model fine-tuned for this task)")


def _quiet_transformers():
    """Keep transformers' loading reports and weight-loading bars off the terminal."""
    import contextlib

    from transformers.utils import logging as hf_logging

    @contextlib.contextmanager
    def quiet():
        verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()

    return quiet()


def to_checklist_predictions(metric, suite_name: str, probabilities):
    """CheckList predictions from class probabilities (a binary sentiment model -> three classes)."""
    from split_builders.errors import InvalidParameterError

    classes = len(probabilities[0]) if probabilities else 0
    if suite_name == "sentiment" and classes == 2:
        return metric.sentiment_from_binary([p[1] for p in probabilities])
    expected = {"sentiment": (3,), "qqp": (2,)}.get(suite_name)
    if expected is not None and classes not in expected:
        raise InvalidParameterError(f"the {suite_name} suite needs a classifier with {' or '.join(map(str, expected))} "
                                    f"labels{' (or 2: p(positive))' if suite_name == 'sentiment' else ''}, "
                                    f"this one has {classes}")
    # CheckList predicts the most probable class; ties go to the lower id.
    return [max(range(classes), key=lambda c: (p[c], -c)) for p in probabilities], probabilities


def run_evaluate_suite(args) -> int:
    import json

    from split_builders.errors import InvalidParameterError
    from split_builders.cli.metrics import _print_pass_rate_table, _run_metric, load_metric

    if not 0.0 <= args.iid_score <= 1.0:
        raise InvalidParameterError(f"--iid-score is a fraction in [0, 1] (accuracy on i.i.d. data), got {args.iid_score}")
    check_model_path(args.model)
    suite = resolve_suite(args.suite, args.suite_dir)
    if suite.name == "squad":
        raise InvalidParameterError("evaluate-suite runs sequence classifiers; the squad suite needs a question-"
                                    "answering model: write its answers to a file and use `resplit pass-rate`")
    rows = select_config(suite, args.config, args.split, seed=args.seed, row_order=args.row_order)
    pass_rate = load_metric("pass_rate", args.metrics_dir)
    g_score = load_metric("g_score", args.metrics_dir)
    probabilities = classify(args.model, rows, batch_size=args.batch_size, max_length=args.max_length,
                             progress=not args.no_progress)
    predictions, confidences = to_checklist_predictions(pass_rate, suite.name, probabilities)
    columns = testcase_columns(rows, predictions, confidences)
    result = _run_metric(lambda: pass_rate.compute(**columns))
    suite_score = result["pass_rate"] / 100
    g = float(g_score.harmonic_mean(args.iid_score, suite_score))
    if args.json:
        from split_builders.cli.metrics import _json_ready

        print(json.dumps(_json_ready({"config": args.config, "split": args.split,
                                      "functionalities": result["functionalities"], "pass_rate": result["pass_rate"],
                                      "iid_score": args.iid_score, "suite_score": suite_score, "g_score": g}),
                         indent=1, ensure_ascii=False))
        return 0
    _print_pass_rate_table(result)
    print(f"\ni.i.d. score {args.iid_score:.4f}, suite score {suite_score:.4f}, "
          f"G-score ({args.config}, {args.split}) {g:.4f}")
    return 0


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "evaluate-suite", help="run a classifier over a behavioural config: pass rates and BELUGA's G-score",
        description="Run a Hugging Face sequence classifier over the test cases of one config of a CheckList "
                    "suite and print per-functionality pass rates and the G-score (harmonic mean of the "
                    "i.i.d. score and the suite score).")
    parser.add_argument("--model", required=True, help="Hub id or local folder of a sequence classifier")
    parser.add_argument("--suite", required=True,
                        help="suite file (.json/.json.gz) or a released suite's name: " + ", ".join(NAMED_SUITES))
    parser.add_argument("--suite-dir", help=f"folder of the named suites (default: ${SUITE_DIR_ENV})")
    parser.add_argument("--config", default="seen", help="seen, func_<i>, class_<capability> or type_<T>")
    parser.add_argument("--split", default="test", choices=SPLITS)
    parser.add_argument("--seed", type=int, default=42,
                        help="seed the config's split was drawn with, as given to `resplit behavioural` "
                             "(default 42; BELUGA's own draw: 123 with --row-order position)")
    parser.add_argument("--row-order", default="content", choices=ROW_ORDERS, metavar="RULE",
                        help="the row order rule the config's split was drawn under, as given to `resplit "
                             "behavioural` (its card says which: content, the default, or position, BELUGA's)")
    parser.add_argument("--iid-score", type=float, required=True,
                        help="the model's score on i.i.d. test data, a fraction in [0, 1]")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--metrics-dir", help="folder holding the metric modules (default: metrics/ of this checkout)")
    parser.set_defaults(func=run_evaluate_suite)
