"""Behavioural-suite splits (BELUGA, Luz de Araujo & Roth 2023) over CheckList suites.

The three parts every split method has:

1. the signal: each test case's functionality (with its capability and test type), read from
   the suite (:func:`testcase_rows`);
2. the splitter: :class:`BehaviouralSplitter` divides every functionality's test cases 50/25/25
   into train/validation/test exactly as BELUGA did with scikit-learn
   (``train_test_split(ids, test_size=0.5, random_state=123)``, then again on the held-out half);
3. the configs (:func:`behavioural_configs`): ``seen`` (every functionality in all three
   splits) and held-out partitions that train and validate without some functionalities and
   test on exactly those: ``func_<i>`` (functionality ``i``, 0-based in suite order),
   ``class_<capability>`` and ``type_<MFT|INV|DIR>``.

A held-out config's test split is the held-out functionalities' *test* part of the seen
division, so its scores compare with the ``seen`` config's on the same test cases.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import datasets
import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splitters.partition import check_random_state
from split_builders.release.writer import SPLITS, ConfigSplit, write_release

PAPER = ("Luz de Araujo & Roth (2023), Cross-functional Analysis of Generalization in Behavioral Learning, "
         "TACL 11")
BELUGA_SEED = 123
TEST_TYPES = ("MFT", "INV", "DIR")

# The columns pass_rate's compute() takes besides predictions and confidences. ``test_type``
# repeats ``type`` so that a config's rows go into pass_rate without renaming.
PASS_RATE_COLUMNS = ("labels", "meta", "functionality", "test_type", "capability", "expectation", "agg_fn")

FEATURES = datasets.Features({
    "testcase_id": datasets.Value("int64"),
    "functionality": datasets.Value("string"),
    "functionality_id": datasets.Value("int64"),
    "capability": datasets.Value("string"),
    "type": datasets.Value("string"),
    "test_type": datasets.Value("string"),
    "examples": datasets.Sequence(datasets.Sequence(datasets.Value("string"))),
    "labels": datasets.Value("string"),
    "meta": datasets.Value("string"),
    "expectation": datasets.Value("string"),
    "agg_fn": datasets.Value("string"),
})


# ---------------------------------------------------------------------------------------
# 1. The signal: one row per test case
# ---------------------------------------------------------------------------------------


def _per_testcase(value, index):
    """``labels`` / ``meta`` of one test case: one value for the whole test, or one per test case."""
    return value[index] if isinstance(value, list) else value


def testcase_rows(suite, *, beluga_labels: bool = True) -> datasets.Dataset:
    """Every test case of ``suite`` as a row (suite order, test cases in order).

    Parameters
    ----------
    suite : loading_scripts.checklist.CheckListSuite
    beluga_labels : bool, default=True
        Use BELUGA's relabelling where a test has one (``beluga_label_override``).

    Returns
    -------
    datasets.Dataset
        Columns of :data:`FEATURES`. ``examples`` holds each example as a list of its text
        fields (one for sentiment, two for a QQP pair or a SQuAD context + question);
        ``labels``, ``meta`` and ``expectation`` are JSON, as ``pass_rate`` reads them.
    """
    columns = {name: [] for name in FEATURES}
    for functionality_id, test in enumerate(suite.tests):
        labels = test.get("labels")
        if beluga_labels and test.get("beluga_label_override") is not None:
            labels = test["beluga_label_override"]
        # sort_keys: the same JSON text as pass_rate.testcases_from_suite writes.
        expectation = json.dumps(test["expectation"], sort_keys=True)
        for index, case in enumerate(test["data"]):
            examples = case if test["nested"] else [case]
            columns["testcase_id"].append(index)
            columns["functionality"].append(test["name"])
            columns["functionality_id"].append(functionality_id)
            columns["capability"].append(test["capability"])
            columns["type"].append(test["type"])
            columns["test_type"].append(test["type"])
            columns["examples"].append([[e] if isinstance(e, str) else list(e) for e in examples])
            columns["labels"].append(json.dumps(_per_testcase(labels, index)))
            columns["meta"].append(json.dumps(_per_testcase(test.get("meta"), index)))
            columns["expectation"].append(expectation)
            columns["agg_fn"].append(test["agg_fn"])
    return datasets.Dataset.from_dict(columns, features=FEATURES)


# ---------------------------------------------------------------------------------------
# 2. The splitter
# ---------------------------------------------------------------------------------------


def _check_fraction(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
        raise InvalidParameterError(f"{name} must be a fraction in (0, 1), got {value!r}")
    return float(value)


def shuffle_split(n: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(train, test)`` of ``n`` items as scikit-learn's ``train_test_split`` picks them.

    scikit-learn's ``ShuffleSplit`` draws ``RandomState(seed).permutation(n)``; the first
    ``ceil(test_size * n)`` positions are the test part and the next
    ``floor((1 - test_size) * n)`` the train part (in permutation order).
    """
    n_test = math.ceil(test_size * n)
    n_train = math.floor((1.0 - test_size) * n)
    if n_train == 0 or n_test == 0:
        raise InvalidParameterError(f"cannot split {n} test case(s) with test_size={test_size}: one part is empty")
    permutation = np.random.RandomState(seed).permutation(n)
    return permutation[n_test:n_test + n_train], permutation[:n_test]


class BehaviouralSplitter:
    """Divide each functionality's test cases into train, validation and test (BELUGA).

    Parameters
    ----------
    holdout_size : float, default=0.5
        Fraction of each functionality's test cases kept out of training.
    test_share : float, default=0.5
        Fraction of the held-out test cases that go to test (the rest validate).
    random_state : int, default=123
        Seed of both divisions; every functionality starts afresh from it, as BELUGA's
        repeated ``train_test_split(..., random_state=123)`` calls do.

    Examples
    --------
    >>> train, validation, test = BehaviouralSplitter().split(["a"] * 4 + ["b"] * 4)
    >>> len(train), len(validation), len(test)
    (4, 2, 2)
    """

    def __init__(self, *, holdout_size=0.5, test_share=0.5, random_state=BELUGA_SEED):
        self.holdout_size = _check_fraction(holdout_size, "holdout_size")
        self.test_share = _check_fraction(test_share, "test_share")
        if random_state is None:
            raise InvalidParameterError("random_state must be a non-negative integer (BELUGA uses 123)")
        self.random_state = check_random_state(random_state)

    def get_params(self) -> dict:
        return {"holdout_size": self.holdout_size, "test_share": self.test_share, "random_state": self.random_state}

    def split(self, groups):
        """Return the row positions of train, validation and test, each sorted.

        Parameters
        ----------
        groups : array-like, shape (n_rows,)
            The functionality of each row; a functionality's rows are its test cases in
            test-case-id order.
        """
        groups = np.asarray(groups, dtype=object)
        if groups.ndim != 1 or groups.size == 0:
            raise InvalidParameterError("groups must be a non-empty flat list, one functionality per row")
        parts = {split: [] for split in SPLITS}
        for group in dict.fromkeys(groups.tolist()):
            rows = np.flatnonzero(groups == group)
            try:
                train, held_out = shuffle_split(len(rows), self.holdout_size, self.random_state)
                validation, test = shuffle_split(len(held_out), self.test_share, self.random_state)
            except InvalidParameterError as error:
                raise InvalidParameterError(f"functionality {group!r}: {error}") from None
            parts["train"].append(rows[train])
            parts["validation"].append(rows[held_out[validation]])
            parts["test"].append(rows[held_out[test]])
        return tuple(np.sort(np.concatenate(parts[split])) for split in SPLITS)


# ---------------------------------------------------------------------------------------
# 3. The configs
# ---------------------------------------------------------------------------------------


def _resolve(requested, valid: list, what: str) -> list:
    """Names (or, for functionalities, 0-based indices) asked for, checked against ``valid``."""
    if requested is None:
        return list(valid)
    chosen = []
    for item in requested:
        if isinstance(item, (int, np.integer)) or (isinstance(item, str) and item.isdigit() and item not in valid):
            index = int(item)
            if not 0 <= index < len(valid):
                raise InvalidParameterError(f"{what} index {index} is out of range 0..{len(valid) - 1}")
            item = valid[index]
        if item not in valid:
            raise InvalidParameterError(f"unknown {what} {item!r}; valid {what} names: "
                                        + ", ".join(repr(v) for v in valid))
        chosen.append(item)
    return list(dict.fromkeys(chosen))


def behavioural_configs(functionality, capability, test_type, *, functionalities=None, capabilities=None,
                        random_state=BELUGA_SEED) -> list[ConfigSplit]:
    """The ``seen``, ``func_<i>``, ``class_<capability>`` and ``type_<type>`` configs.

    Parameters
    ----------
    functionality, capability, test_type : array-like, shape (n_rows,)
        Per row (test case), in suite order.
    functionalities : list of str or int, optional
        Hold out only these functionalities (names or 0-based indices) as ``func_<i>``
        configs; default all.
    capabilities : list of str, optional
        Build ``class_<capability>`` configs only for these; default all.
    random_state : int, default=123
    """
    functionality = np.asarray(functionality, dtype=object)
    capability = np.asarray(capability, dtype=object)
    test_type = np.asarray(test_type, dtype=object)
    names = list(dict.fromkeys(functionality.tolist()))
    splitter = BehaviouralSplitter(random_state=random_state)
    seen = dict(zip(SPLITS, splitter.split(functionality)))
    params = splitter.get_params()
    configs = [ConfigSplit("seen", seen, "behavioural", {**params, "held_out": None},
                           "every functionality: 50/25/25 of its test cases in train/validation/test")]

    def held_out(name, mask, what, description):
        indices = {"train": seen["train"][~mask[seen["train"]]],
                   "validation": seen["validation"][~mask[seen["validation"]]],
                   "test": seen["test"][mask[seen["test"]]]}
        configs.append(ConfigSplit(name, indices, "behavioural", {**params, "held_out": what}, description))

    for chosen in _resolve(functionalities, names, "functionality"):
        i = names.index(chosen)
        held_out(f"func_{i}", functionality == chosen, {"functionality": chosen},
                 f"held-out functionality {i}: {chosen}")
    for chosen in _resolve(capabilities, list(dict.fromkeys(capability.tolist())), "capability"):
        held_out(f"class_{chosen}", capability == chosen, {"capability": chosen},
                 f"held-out capability {chosen} (all its functionalities)")
    for kind in TEST_TYPES:
        if (test_type == kind).any():
            held_out(f"type_{kind}", test_type == kind, {"type": kind}, f"held-out test type {kind}")
    return configs


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------


def build_behavioural(suite, *, out, functionalities=None, capabilities=None, beluga_labels: bool = True,
                      overwrite: bool = False):
    """Write a suite's behavioural configs as a Hub-style folder (``org/checklist-<suite>``).

    Parameters
    ----------
    suite : loading_scripts.checklist.CheckListSuite
    out : path
        The folder to write.
    functionalities, capabilities : list, optional
        Restrict the ``func_<i>`` / ``class_<capability>`` configs (see :func:`behavioural_configs`).
    beluga_labels : bool, default=True
        Use BELUGA's relabelling where a test has one.
    overwrite : bool, default=False

    Returns
    -------
    (Path, list of ConfigSplit)
    """
    rows = testcase_rows(suite, beluga_labels=beluga_labels)
    configs = behavioural_configs(rows["functionality"], rows["capability"], rows["type"],
                                  functionalities=functionalities, capabilities=capabilities)
    provenance = {
        "method": "behavioural",
        "paper": PAPER,
        "seed": BELUGA_SEED,
        "source": {"name": f"CheckList {suite.name} suite", "file": Path(suite.source).name,
                   "content_sha256": suite.sha256, "functionalities": len(suite.tests), "test_cases": len(rows)},
        "labels": "BELUGA relabelling applied (beluga_label_override)" if beluga_labels else "CheckList labels",
        "functionality_ids": {i: test["name"] for i, test in enumerate(suite.tests)},
    }
    written = write_release(out, rows, configs, provenance=provenance,
                            render_card=lambda staging, files: card_body(suite, configs),
                            license="mit", pretty_name=f"CheckList {suite.name} suite, BELUGA splits",
                            overwrite=overwrite)
    return written, configs


def card_body(suite, configs) -> str:
    """The human part of the card: what the configs are, the functionalities, how to evaluate."""
    lines = [
        f"# CheckList {suite.name} suite as behavioural-learning splits (BELUGA)",
        "",
        f"Every test case of CheckList's {suite.name} suite is one row, with its examples, labels, "
        "expectation, functionality, capability and test type. The configs follow BELUGA "
        "(Luz de Araujo & Roth, 2023): train on behavioural tests and measure generalisation to "
        "functionalities, capabilities and test types never seen in training. Built with "
        "[resplit](https://github.com/resplit/resplit).",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("org/checklist-{suite.name}", "seen")',
        "```",
        "",
        "Rows go straight into the `pass_rate` metric: "
        "`pass_rate.compute(predictions=..., confidences=..., **{c: ds['test'][c] for c in "
        "('labels', 'meta', 'functionality', 'test_type', 'capability', 'expectation', 'agg_fn')})`, "
        "with one prediction per example of each row.",
        "",
        "## Configs",
        "",
        "| config | train | validation | test | held out |",
        "|---|---|---|---|---|",
    ]
    for config in configs:
        sizes = [str(len(config.indices[s])) for s in SPLITS]
        lines.append(f"| `{config.name}` | " + " | ".join(sizes) + f" | {config.description} |")
    lines += [
        "",
        "## How the splits were built",
        "",
        "Per functionality, the test-case ids are divided as scikit-learn's "
        "`train_test_split(ids, test_size=0.5, random_state=123)` divides them, and the held-out "
        "half again the same way into validation and test (50/25/25), which reproduces BELUGA's "
        "published division. A held-out config trains and validates on the `seen` train and "
        "validation rows of the other functionalities and tests on the `seen` test rows of the held-out "
        "ones. `testcase_id` is the test case's position in its functionality.",
        "",
        "## Functionalities",
        "",
        "| id | functionality | capability | type | test cases |",
        "|---|---|---|---|---|",
    ]
    for i, test in enumerate(suite.tests):
        lines.append(f"| {i} | {test['name']} | {test['capability']} | {test['type']} | {len(test['data'])} |")
    lines += ["", "## Citation", "", f"Ribeiro et al. (2020), Beyond Accuracy: Behavioral Testing of NLP "
              f"Models with CheckList, ACL. {PAPER}."]
    return "\n".join(lines)
