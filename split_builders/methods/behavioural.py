"""Behavioural-suite splits (BELUGA, Luz de Araujo & Roth 2023) over CheckList suites.

``resplit behavioural --source SUITE.json.gz --out DIR`` (``--suite`` still works). The parts every
split method has:

1. the source: a CheckList suite in resplit's JSON format, one row per test case
   (:func:`testcase_rows`: the pass_rate metric's own suite adapter, ``suite_testcases`` in
   ``metrics/pass_rate/suite_adapters.py``, plus ``label`` and ``source_id``): ``labels`` (one per
   example), ``meta`` and ``expectation`` are Arrow lists and structs, ``label`` the test case's
   class (a ``ClassLabel``) where the suite's labels are classes;
2. the signal: each test case's functionality, capability and test type;
3. the splitter: :class:`~split_builders.splitters.behavioural.BehaviouralSplitter` divides every
   functionality's test cases 50/25/25 into train/validation/test exactly as BELUGA did with
   scikit-learn (``train_test_split(ids, test_size=0.5, random_state=seed)``, then again on the
   held-out half);
4. the configs (:func:`~split_builders.splitters.behavioural.behavioural_configs`): ``seen`` (every
   functionality in all three splits) and held-out partitions that train and validate without some
   functionalities and test on exactly those: ``func_<i>`` (functionality ``i``, 0-based in suite
   order), ``class_<capability>`` and ``type_<MFT|INV|DIR>``.

A held-out config's test split is the held-out functionalities' *test* part of the seen division,
so its scores compare with the ``seen`` config's on the same test cases.

Seed: the common ``--seed`` defaults to 42 as for every method; **BELUGA's own draw is
``--seed 123 --row-order position``** (its ids in the suite's order; under the default ``content`` rule a
functionality's test cases are divided in their content order), which reproduces its published division of
every functionality of the
sentiment, QQP and SQuAD suites (``beluga_split`` in the suite files).

``--limit N`` keeps the first N test cases *of each functionality* (not of the suite), so a quick
run still has every functionality, capability and test type, and ``testcase_id`` keeps meaning
the test case's position in its functionality. N must be at least 3, the fewest test cases a
50/25/25 division can give a test case to each split.

Row identity: ``source_id`` (int64, the last column) is the test case's 0-based position in the
whole suite (functionalities in suite order, test cases in order), counted before ``--limit``, so
a test case has the same ``source_id`` in every build of the suite.

The source's ``content_sha256`` is :func:`loading_scripts.source.content_sha256` of the
test-case rows as released (after ``--limit`` and the label choice); the sha256 of the suite
file's bytes is recorded in the signal's provenance (``suite_sha256``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.splits import SPLITS
from split_builders.errors import InvalidParameterError
from split_builders.splitters.behavioural import BELUGA_SEED, behavioural_configs, resolve_names
from split_builders.splitters.partition import CONTENT, POSITION, recorded_row_order

PAPER = ("Luz de Araujo & Roth (2023), Cross-functional Analysis of Generalization in Behavioral Learning, "
         "TACL 11 (BELUGA)")
CHECKLIST_CITATION = """@inproceedings{ribeiro-etal-2020-beyond,
  title = {Beyond Accuracy: Behavioral Testing of {NLP} Models with {C}heck{L}ist},
  author = {Ribeiro, Marco Tulio and Wu, Tongshuang and Guestrin, Carlos and Singh, Sameer},
  booktitle = {Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics},
  year = {2020},
  pages = {4902--4912}
}"""
# The fewest test cases a functionality needs so that 50/25/25 gives each split one.
MIN_TESTCASES = 3
SOURCE_ID = ("the test case's 0-based position in the whole suite (functionalities in suite order, test cases "
             "in order), counted before `--limit`, so the same in every build of the suite; `functionality_id` "
             "and `testcase_id` are the functionality's position in the suite and the test case's in its "
             "functionality")

# The columns pass_rate's compute() takes besides predictions and confidences: a config's rows go
# into pass_rate as they are.
PASS_RATE_COLUMNS = ("labels", "meta", "functionality", "test_type", "capability", "expectation", "agg_fn")


@dataclass(kw_only=True)
class BehaviouralOptions(CommonOptions):
    """Options of ``resplit behavioural`` (besides source, out, overwrite and seed).

    ``seed`` defaults to 42 like every method's; BELUGA's own division is ``seed=123``. ``limit``
    keeps the first N test cases of each functionality (N >= 3).
    """

    limit: int | None = option(None, f"keep only the first N test cases of each functionality (N >= {MIN_TESTCASES}; "
                                     "quick runs)", group="common", integer=True, minimum=MIN_TESTCASES)
    # CLI text is kept whole: resolve_names splits it on commas, except inside a name that contains commas.
    functionalities: tuple | None = option(
        None, "build func_<i> only for these functionalities: names or 0-based indices, comma-separated "
              "(a name containing commas is recognised whole); default: all",
        flags=("--functionality",), parse=lambda text: (text,), metavar="NAMES_OR_INDICES")
    capabilities: tuple | None = option(
        None, "build class_<capability> only for these capabilities (comma-separated); default: all",
        flags=("--capability",), parse=lambda text: (text,), metavar="NAMES")
    beluga_labels: bool = option(True, "keep CheckList's labels where BELUGA relabelled a test (default: BELUGA's "
                                       "beluga_label_override)")

    def validate(self) -> None:
        for name in ("functionalities", "capabilities"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (tuple, list)):
                value = (value,)  # one selection, kept whole (as on the command line)
            if value is not None:
                if any(isinstance(v, bool) or not isinstance(v, (str, int, np.integer)) for v in value):
                    raise InvalidParameterError(f"{name} must be names or 0-based indices, got {value!r}")
                setattr(self, name, tuple(value))


class BehaviouralMethod(SplitMethod):
    """BELUGA splits of a CheckList suite (see the module docstring)."""

    info = MethodInfo(
        name="behavioural",
        paper=PAPER,
        summary=("BELUGA splits of a CheckList suite: seen, func_<i>, class_<capability>, type_<MFT|INV|DIR> "
                 "(BELUGA's own draw: --seed 123 --row-order position; --limit N keeps the first N test cases of each "
                 "functionality)"),
        config_names=("seen", "func_<i>", "class_<capability>", "type_<MFT|INV|DIR>"),
        options=BehaviouralOptions,
        # The signal is each row's functionality, capability and type; verify and diff compare numbers:
        # the functionality's position in the suite.
        signal_columns={"functionality_id": "categorical"},
        baseline_config="seen",
        harness_task=HarnessTask("multiple_choice"),
        # resplit report --iid CONFIG: BELUGA's G-score per scenario (the paper's seen / func / class / type settings)
        report_tables=("g_score",),
        scenarios={"seen": ("seen",), "func": ("func_<i>",), "class": ("class_<capability>",),
                   "type": ("type_<MFT|INV|DIR>",)},
        # A suite is its tests (functionality, capability, type, expectation), not a table of test cases.
        table_columns=None,
        source_kind="a CheckList suite file (JSON, optionally gzipped: see SPEC.md beside the released suites)",
        default_source=None,
        source_aliases=("--suite",))

    # --dedupe does not apply (row_keys stays None): a test case is defined by its functionality and
    # its position in it, and the same text under two functionalities tests two different behaviours.

    def check(self, options) -> None:
        if options.group_field is not None:
            raise InvalidParameterError(
                "--group-field does not apply to behavioural splits: their units are the suite's functionalities, "
                "capabilities and test types, which func_<i>, class_<capability> and type_<...> already hold out "
                "whole (and `seen` divides every functionality's test cases by design)")

    def load(self, options) -> Loaded:
        from loading_scripts.checklist import read_checklist_suite
        from loading_scripts.source import content_sha256

        suite = read_checklist_suite(options.source)
        rows = testcase_rows(suite, beluga_labels=options.beluga_labels, limit=options.limit)
        filters = {}
        if options.limit is not None:
            total = sum(len(test["data"]) for test in suite.tests)
            filters[f"beyond the first {options.limit} test cases of a functionality (limit)"] = total - len(rows)
        info = SourceInfo(
            name=f"CheckList {suite.name} suite ({Path(suite.source).name})", rows=len(rows),
            content_sha256=content_sha256(rows), filters=filters, source_id=SOURCE_ID,
            license="mit", citation=CHECKLIST_CITATION, language=("en",))
        return Loaded(SuiteRows(suite, rows), info)

    def check_loaded(self, loaded, options) -> None:
        # Unknown names fail here, before anything is divided.
        rows = loaded.data.rows
        resolve_names(options.functionalities, _distinct(rows, "functionality"), "functionality")
        resolve_names(options.capabilities, _distinct(rows, "capability"), "capability")

    def signal(self, loaded, options, context) -> Signal:
        suite, rows = loaded.data.suite, loaded.data.rows
        values = {column: _column(rows, column) for column in ("functionality", "capability", "test_type")}
        labels = ("BELUGA relabelling applied (beluga_label_override)" if options.beluga_labels
                  else "CheckList labels")
        provenance = {
            "kind": "functionality, capability and test type of each test case (CheckList suite)",
            "suite": suite.name,
            "suite_file": Path(suite.source).name,
            "suite_sha256": suite.sha256,
            "functionalities": len(suite.tests),
            "labels": labels,
            "functionality_ids": {i: test["name"] for i, test in enumerate(suite.tests)},
        }
        return Signal(values, provenance, f"{len(suite.tests)} functionalities, {len(rows)} test cases")

    def configs(self, loaded, signal, options) -> list:
        return suite_configs(loaded.data.rows, row_order=options.row_order, functionalities=options.functionalities,
                             capabilities=options.capabilities, random_state=options.seed)

    def rows(self, loaded, signal, configs):
        return loaded.data.rows

    def fields(self, loaded, signal, options) -> Fields:
        """A test case's examples are its text; its label (a ``ClassLabel``) where the suite's labels are
        classes (an answer suite's labels are answers, in ``labels``)."""
        names = loaded.data.suite.label_names
        return Fields("behavioural", text=("examples",), query="examples", label="label" if names else None,
                      label_names=list(names) if names else None)

    def card(self, loaded, signal, configs, options):
        return _card(loaded.data.suite, loaded.data.rows, configs, options)

    def pretty_name(self, loaded) -> str:
        return f"CheckList {loaded.data.suite.name} suite, BELUGA splits"

    def report(self, result) -> list[str]:
        suite = result.loaded.data.suite
        seed = result.options.seed
        belugas = seed == BELUGA_SEED and result.options.row_order == POSITION  # over the suite's order, as BELUGA
        draw = "BELUGA's draw" if belugas else f"BELUGA's own draw is --seed {BELUGA_SEED} --row-order position"
        return [f"CheckList {suite.name} suite: {len(suite.tests)} functionalities, {result.rows} test cases; "
                f"seed {seed} ({draw})"]

    def rederive(self, released, record) -> list:
        """Every config through :func:`~split_builders.splitters.behavioural.behavioural_configs`, as
        :meth:`configs` calls it, from the released test cases' functionality, capability and type (rows in
        ``source_id`` order, the suite's order) with the recorded selections and seed."""
        rows = released.all_rows()
        parameters = record.get("parameters") or {}
        # the rule the release was built under (position: a release from before it was recorded)
        configs = suite_configs(rows, row_order=recorded_row_order(parameters),
                                functionalities=parameters.get("functionalities"),
                                capabilities=parameters.get("capabilities"), random_state=record["seed"])
        for config in configs:
            config.rows = rows
        return configs

    def example_arguments(self, data, work) -> list:
        """CheckList's sentiment suite (JSON), its first 20 test cases of each functionality: every functionality,
        capability and test type in ``seen`` and the ``type_*`` configs, and three ``func_*`` and two ``class_*``
        held-out configs (every kind of config; 9 configs rather than 48, in a fraction of the whole suite's build)."""
        return ["--source", str(Path(data) / "data" / "checklist" / "sentiment_suite.json.gz"), "--limit", "20",
                "--functionalities", "0,1,9", "--capabilities", "Vocabulary,Negation"]


# ---------------------------------------------------------------------------------------
# The rows: one per test case
# ---------------------------------------------------------------------------------------



@dataclass
class SuiteRows:
    """A loaded suite and its test-case rows."""

    suite: object
    rows: object


CONTENT_FIELDS = ("functionality", "examples", "labels", "meta")
"""What a test case is, for its content key: its functionality, its examples, their labels and metadata."""


def content_keys(rows) -> np.ndarray:
    """Each test case's content key (:func:`~split_builders.splitters.partition.content_keys` of
    :data:`CONTENT_FIELDS`): the same in the build's rows and in the released ones."""
    from split_builders.splitters.partition import content_keys as keys_of

    return keys_of(rows, CONTENT_FIELDS)


def suite_configs(rows, *, row_order: str = CONTENT, random_state: int, **selections) -> list:
    """Every config of a suite's test cases (``rows``: a ``datasets.Dataset`` or ``pyarrow.Table`` of
    :func:`testcase_rows`' columns, in suite order) through
    :func:`~split_builders.splitters.behavioural.behavioural_configs`, under the row order rule ``row_order``: under
    ``content`` a functionality's test cases are divided in their content order (:func:`content_keys`), under
    ``position`` in the suite's (BELUGA's draw); ``func_<i>`` numbers the functionalities in suite order either
    way. ``selections``: ``functionalities`` and ``capabilities``. The build, ``rederive`` and ``resplit
    evaluate-suite`` all divide a suite here."""
    import pyarrow as pa

    from loading_scripts.tables import arrow_table
    from split_builders.splitters.partition import in_row_order

    table = rows if isinstance(rows, pa.Table) else arrow_table(rows)
    column = lambda name: np.asarray(table.column(name).to_pylist(), dtype=object)
    functionality, capability, test_type = column("functionality"), column("capability"), column("test_type")
    first = lambda values: list(dict.fromkeys(values.tolist()))
    keys = content_keys(table) if row_order == CONTENT else None
    return in_row_order(behavioural_configs, keys, random_state,
                        per_row=dict(functionality=functionality, capability=capability, test_type=test_type),
                        names=first(functionality), capability_names=first(capability), random_state=random_state,
                        **selections)


def testcase_rows(suite, *, beluga_labels: bool, limit: int | None = None):
    """Every test case of ``suite`` as a release row (suite order, test cases in order).

    The columns are those of the pass_rate metric's ``suite_testcases`` (one function turns a
    suite into test cases, for the metric and for the release), plus ``label`` (where the suite's
    labels are classes) and ``source_id``.

    Parameters
    ----------
    suite : loading_scripts.checklist.CheckListSuite
    beluga_labels : bool
        Use BELUGA's relabelling where a test has one (``beluga_label_override``).
    limit : int, optional
        Keep only the first ``limit`` test cases of each functionality.

    Returns
    -------
    datasets.Dataset
        ``testcase_id``, ``functionality``, ``functionality_id``, ``capability``, ``test_type``,
        ``examples``, ``label`` (a ``ClassLabel`` of the suite's :attr:`label_names`: the test case's
        class where all its examples share one, else -1; only where the labels are classes),
        ``labels`` (one per example, None where none), ``meta`` (one list of strings per example),
        ``expectation`` (a struct), ``agg_fn`` and, last, ``source_id``: the test case's position in
        the whole suite, counted before ``limit``.
    """
    import datasets
    import pyarrow as pa

    from split_builders.metric_folders import metric_module

    columns = metric_module("pass_rate", "suite_adapters").suite_testcases(
        suite.as_dict(), beluga_labels=beluga_labels, limit=limit)
    starts = np.cumsum([0] + [len(test["data"]) for test in suite.tests])
    columns["source_id"] = (starts[np.asarray(columns["functionality_id"], dtype=np.int64)]
                            + np.asarray(columns["testcase_id"], dtype=np.int64))
    names = suite.label_names
    if names:
        columns["label"] = [_testcase_label(labels) for labels in columns["labels"]]
    features = _features(names, answers=suite.answers)
    # Straight to Arrow with the declared schema: Dataset.from_dict would re-encode every nested
    # example list through the features in Python.
    table = pa.Table.from_pydict({name: columns[name] for name in features}, schema=features.arrow_schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features))


def _testcase_label(labels: list) -> int:
    """A test case's class: its examples' one label, or -1 (no label) where they have none or differ."""
    distinct = set(labels)
    return distinct.pop() if len(distinct) == 1 and None not in distinct else -1


def _features(label_names, *, answers: bool):
    """The rows' features: records as structs, per-example values as lists, the label a ``ClassLabel``."""
    import datasets

    text = datasets.Value("string")
    value = text if answers else datasets.Value("int64")  # an answer suite's labels are answers
    label = {"label": datasets.ClassLabel(names=list(label_names))} if label_names else {}
    return datasets.Features({
        "testcase_id": datasets.Value("int64"),
        "functionality": text,
        "functionality_id": datasets.Value("int64"),
        "capability": text,
        "test_type": text,
        "examples": datasets.Sequence(datasets.Sequence(text)),
        **label,
        "labels": datasets.Sequence(value),
        "meta": datasets.Sequence(datasets.Sequence(text)),
        "expectation": {
            "fn": text, "value": value, "tolerance": datasets.Value("float64"), "label": datasets.Value("int64"),
            "increasing": datasets.Value("bool"), "slice": {"fn": text, "value": value, "slice_agg_fn": text},
            "doc": text},
        "agg_fn": text,
        "source_id": datasets.Value("int64"),
    })


def _column(rows, name: str) -> np.ndarray:
    """One column of the rows as a numpy array (read from Arrow as a whole)."""
    return rows.data.column(name).to_numpy(zero_copy_only=False)


def _distinct(rows, name: str) -> list:
    """The distinct values of a column in order of first appearance."""
    return list(dict.fromkeys(_column(rows, name).tolist()))


# ---------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------


def _card(suite, rows, configs, options):
    """The card's text and figures: what the configs are, the functionalities, how to evaluate."""
    from split_builders.cardspec import CardSpec, Section

    intro = (
        f"Every test case of CheckList's {suite.name} suite is one row, with its examples, labels, expectation, "
        "functionality, capability and test type. The configs follow BELUGA (Luz de Araujo & Roth, 2023): train "
        "on behavioural tests and measure generalisation to functionalities, capabilities and test types never "
        "seen in training.\n\n"
        "Rows go straight into the `pass_rate` metric: "
        "`pass_rate.compute(predictions=..., confidences=..., **{c: ds['test'][c] for c in "
        f"{PASS_RATE_COLUMNS!r}}})`, with one prediction per example of each row.")
    if options.seed == BELUGA_SEED:
        seed_text = f"With seed {BELUGA_SEED} this reproduces BELUGA's published division."
    else:
        seed_text = (f"This release uses seed {options.seed}; BELUGA's published division is seed {BELUGA_SEED} "
                     f"(`--seed {BELUGA_SEED}`).")
    how_built = [
        "Per functionality, the test-case ids are divided as scikit-learn's "
        f"`train_test_split(ids, test_size=0.5, random_state={options.seed})` divides them, and the held-out "
        f"half again the same way into validation and test (50/25/25). {seed_text} A held-out config trains "
        "and validates on the `seen` train and validation rows of the other functionalities and tests on the "
        "`seen` test rows of the held-out ones. `testcase_id` is the test case's position in its functionality, "
        "`source_id` its position in the whole suite.",
        "Labels: " + ("BELUGA's relabelling is applied where a test has one (`beluga_label_override`)."
                      if options.beluga_labels else "CheckList's own labels."),
        "Columns: `examples` is a list of examples, each the list of its text fields; `labels` has one label "
        "per example (None where the test gives none), `meta` one list of strings per example (`[]` where "
        "there is none), `expectation` is a record (`fn`, `value`, `tolerance`, `label`, `increasing`, "
        "`slice`, `doc`; None where the test leaves one out): plain lists and dicts, no JSON text; the "
        "`pass_rate` metric reads them as they are. "
        + (f"`label` is the test case's class (a `ClassLabel`: {', '.join(suite.label_names)}), -1 where its "
           "examples have no label or differ (invariance and directional tests)."
           if suite.label_names else "The labels are answers (no `label` column: answers are not classes)."),
    ]
    if options.limit is not None:
        how_built.append(f"Quick build: only the first {options.limit} test cases of each functionality.")
    by_name = {c.name: c for c in configs}
    sections = [Section("`seen`", "Every functionality in all three splits.",
                        [_seen_figure(rows, by_name["seen"])])]
    groups = (("func_", "Held-out functionalities (`func_<i>`)", "One functionality held out of train and "
               "validation; test holds its `seen` test rows."),
              ("class_", "Held-out capabilities (`class_<capability>`)", "Every functionality of one capability "
               "held out."),
              ("type_", "Held-out test types (`type_<MFT|INV|DIR>`)", "Every functionality of one test type "
               "held out."))
    for prefix, title, text in groups:
        members = [c for c in configs if c.name.startswith(prefix)]
        if members:
            sections.append(Section(title, text, [_sizes_figure(members, prefix, title)]))
    return CardSpec(
        title=f"CheckList {suite.name} suite as behavioural-learning splits (BELUGA)",
        intro=intro, how_built=how_built, configs=sections,
        extra=[Section("Functionalities", _functionality_table(suite, rows))],
        citation=CHECKLIST_CITATION)


def _seen_figure(rows, seen):
    """Test cases per functionality (by id) in each split of ``seen``, as grouped bars."""
    from split_builders.cardspec import Figure, Panel

    ids = _column(rows, "functionality_id")
    categories = list(dict.fromkeys(ids.tolist()))
    width = max(categories) + 1
    series = {split: np.bincount(ids[seen.indices[split]], minlength=width)[categories].tolist() for split in SPLITS}
    return Figure("figures/seen.png", "Test cases per functionality and split (seen)",
                  [Panel("functionality id", series, kind="bars", categories=categories, ylabel="test cases")],
                  alt="test cases per functionality in train, validation and test")


def _sizes_figure(configs, prefix: str, title: str):
    """Test cases in each split of each config of one group, as grouped bars."""
    from split_builders.cardspec import Figure, Panel

    categories = [c.name[len(prefix):] for c in configs]
    series = {split: [int(len(c.indices[split])) for c in configs] for split in SPLITS}
    return Figure(f"figures/{prefix.rstrip('_')}.png", title.split(" (")[0],
                  [Panel(f"held out ({prefix}<...>)", series, kind="bars", categories=categories,
                         ylabel="test cases")],
                  alt=f"test cases per split of the {prefix}* configs")


def _functionality_table(suite, rows) -> str:
    counts = np.bincount(_column(rows, "functionality_id"), minlength=len(suite.tests))
    lines = ["| id | functionality | capability | type | test cases |", "|---|---|---|---|---|"]
    for i, test in enumerate(suite.tests):
        lines.append(f"| {i} | {test['name']} | {test['capability']} | {test['type']} | {counts[i]} |")
    return "\n".join(lines)
