"""The baseline probe as an evidence view: its card section, YAML record and terminal table (``resplit probe``)."""

from __future__ import annotations

from split_builders.evidence import probe as computed
from split_builders.evidence.view import Setting, View, aligned, names
from split_builders.splits import check_number


SETTINGS = ("baseline", "task", "seed", "confidence", "resamples", "fields", "reference", "skipped")
NUMBERS = ("rows", "accuracy", "ci_low", "ci_high", "query_only_accuracy", "relative_error_increase")


def yaml_record(report: dict) -> tuple[dict, dict]:
    """What the README's YAML records: the settings (``resplit.probe``) and per config its numbers
    (``resplit.configs.<config>.probe``: ``{split: {rows, accuracy, ci_low, ci_high, query_only_accuracy,
    relative_error_increase}}``)."""
    settings = {key: report[key] for key in SETTINGS}
    per_config = {config: {split: {k: entry[k] for k in NUMBERS if k in entry} for split, entry in splits.items()}
                  for config, splits in report["configs"].items()}
    return settings, per_config


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _interval(entry: dict, prefix: str = "") -> str:
    accuracy = entry.get(f"{prefix}accuracy")
    if accuracy is None:
        return "-"
    return f"{_percent(accuracy)} [{_percent(entry[f'{prefix}ci_low'])}, {_percent(entry[f'{prefix}ci_high'])}]"


def _increase(value) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def card_lines(report: dict) -> list[str]:
    """The card's "Baseline probe" section (Markdown lines, heading included)."""
    lines = ["## Baseline probe", ""]
    if report.get("skipped"):
        return lines + [f"No baseline was run: {report['skipped']}.", ""]
    fields = report["fields"]
    query = report["task"] == "classification" and fields.get("query")
    reference = report.get("reference")
    what = {"classification": f"a logistic regression on TF-IDF word 1-2-grams (scikit-learn) of "
                              f"{', '.join(f'`{t}`' for t in fields['text'])} (one block of features per field)"
                              + (f", and the same on `{fields['query']}` alone (the query-only baseline)"
                                 if query else ""),
            "semantic_parsing": f"nearest-neighbour retrieval: the `{fields['target']}` of the train row whose "
                                f"{', '.join(f'`{t}`' for t in fields['text'])} is most similar by TF-IDF cosine "
                                "(word 1-2-grams), scored by exact match",
            "behavioural": f"the pass rate of the suite's own predictions (`{fields.get('passed')}`)"}[report["task"]]
    lines += [f"A quick sanity check, not a measure of what models can do: {what}, trained on each config's train "
              f"split and scored on its validation and test splits (seed {report['seed']}). Intervals are "
              f"{100 * report['confidence']:.0f}% percentile bootstrap intervals of accuracy "
              f"({report['resamples']} resamples, `scipy.stats.bootstrap`)"
              + (f"; the relative error increase is (error - error of `{reference}`) / error of `{reference}` on "
                 "the same split, as the Likelihood Splits paper reports it" if reference else
                 "; the release has no baseline config to compare errors with")
              + ". Stronger models (fine-tuned transformers, the papers' own) should be evaluated on the release "
                "before drawing conclusions; `resplit probe FOLDER --json` recomputes these numbers. A config "
                "without some of these fields is read with those it has (a hypothesis-only config: the hypothesis "
                "alone).", ""]
    if report.get("skipped_configs"):
        lines += ["Not probed: " + "; ".join(f"`{c}` ({why})" for c, why in report["skipped_configs"].items())
                  + ".", ""]
    header = ["config", "split", "rows", "accuracy [95% CI]"]
    header += [f"`{fields['query']}`-only accuracy [95% CI]"] if query else []
    header += [f"relative error increase vs `{reference}`"] if reference else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            cells = [f"`{config}`", split, str(entry["rows"]), _interval(entry)]
            cells += [_interval(entry, "query_only_")] if query else []
            cells += [_increase(entry["relative_error_increase"]) if config != reference else "(reference)"] \
                if reference else []
            lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def format_report(report: dict) -> list[str]:
    """The terminal table of ``resplit probe``."""
    if report.get("skipped"):
        return [f"no baseline was run: {report['skipped']}"]
    query = report["task"] == "classification" and report["fields"].get("query")
    reference = report.get("reference")
    headers = ["config", "split", "rows", "accuracy [95% CI]", *(["query-only"] if query else []),
               *([f"err. increase vs {reference}"] if reference else [])]
    table = []
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            row = [config, split, str(entry["rows"]), _interval(entry)]
            row += [_interval(entry, "query_only_")] if query else []
            row += [_increase(entry["relative_error_increase"])] if reference else []
            table.append(row)
    head = f"baseline: {report['baseline']}; seed {report['seed']}"
    head += f"; query: {report['fields']['query']}" if query else ""
    skipped = [f"not probed: {c} ({why})" for c, why in (report.get("skipped_configs") or {}).items()]
    return [head, *aligned(headers, table), *skipped]


class ProbeView(View):
    """The baseline probe (:mod:`split_builders.evidence.probe`): in a build with ``--probe``."""

    name = "probe"
    title = "Baseline probe"
    summary = "baseline probe: a quick baseline's accuracy per config and evaluation split, with intervals"
    description = ("Trains a fast, deterministic baseline on each config's train split of TARGET and scores it on "
                   "its validation and test splits: TF-IDF word 1-2-grams + logistic regression on the whole input "
                   "and on the query alone (classification), nearest-neighbour retrieval by TF-IDF cosine with exact "
                   "match (semantic parsing), or the pass rate of the suite's own predictions (behavioural); with a "
                   "95% bootstrap interval and the relative error increase over the baseline config (the method's "
                   "declared one; random or standard for releases that record none). A sanity check, not a "
                   "replacement for evaluating strong models. TARGET: a release folder of any family, a dataset "
                   "folder with train / validation / test data files, or a Hub dataset id.")
    json_help = "configs.<config>.<split>: rows, accuracy, ci_low, ci_high, query_only_accuracy, relative_error_increase"
    settings = (
        Setting("configs", "--configs", None, "the configs to probe, comma-separated (default: every config with a "
                                              "train split and a validation or test split)", names),
        Setting("seed", "--seed", 0, "seed of the classifier and of the bootstrap (default 0)", int,
                lambda value: int(check_number(value, "--seed", integer=True, minimum=0))),
    )

    def enabled(self, options) -> dict | None:
        return {} if options.probe else None

    # the protocol's methods are this module's functions
    compute = staticmethod(computed.compute)
    record = staticmethod(yaml_record)
    card_lines = staticmethod(card_lines)
    format_report = staticmethod(format_report)


VIEW = ProbeView()
