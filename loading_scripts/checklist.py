"""Read a CheckList suite in resplit's JSON format and check its schema.

The format is described in ``SPEC.md`` next to the released suites (``sentiment``, ``qqp``,
``squad``); users may write their own suites in it. CheckList itself stores suites as pickles:
resplit never unpickles anything, so suites travel as (optionally gzipped) JSON only.

Every problem found is reported with the test's position and name, so that a hand-written
suite can be fixed from the message alone.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from loading_scripts.errors import SourceLoadError

TEST_TYPES = ("MFT", "INV", "DIR")
AGG_FNS = ("all", "all_except_first")
EXPECTATIONS = (
    "eq", "pred_not_equal", "allow_for_neutral", "squad_clean_eq", "inv", "monotonic",
    "diff_up", "diff_down", "qqp_triplet", "squad_expect_same",
)
# Expectations that compare a prediction with the test case's label. ``eq`` with an explicit
# ``value`` compares with that value instead and needs no labels.
LABELLED_EXPECTATIONS = ("eq", "allow_for_neutral", "squad_clean_eq")
REQUIRED_FIELDS = ("name", "type", "capability", "agg_fn", "expectation", "nested", "data")
BELUGA_SPLITS = ("train", "validation", "test")
# The keys an expectation (and its slice) may have: every row of a release has each of them.
EXPECTATION_KEYS = ("fn", "value", "tolerance", "label", "increasing", "slice", "doc")
SLICE_KEYS = ("fn", "value", "slice_agg_fn")
# The class names of the released suites (SPEC.md: "sentiment: three classes (0 negative, 1 neutral,
# 2 positive)", "qqp: binary"); a suite of one's own names its classes in a top-level ``label_names``.
RELEASED_LABEL_NAMES = {"sentiment": ("negative", "neutral", "positive"), "qqp": ("not_duplicate", "duplicate")}


@dataclass
class CheckListSuite:
    """A validated suite.

    Attributes
    ----------
    name : str
        The suite's ``suite`` field (``sentiment``, ``qqp``, ``squad`` or a user's name).
    tests : list of dict
        One dict per functionality, in suite order, as in the JSON.
    source : str
        The file it was read from.
    sha256 : str
        sha256 of the file's bytes (recorded as the release's source content hash).
    label_names : tuple of str or None
        The class names of its labels, in class order (the suite's ``label_names``, or the released
        suite's :data:`RELEASED_LABEL_NAMES`); None where its labels are answers (SQuAD).
    answers : bool
        Whether its labels (and predictions) are answer strings rather than class ids.
    """

    name: str
    tests: list
    source: str
    sha256: str
    label_names: tuple | None = None
    answers: bool = False

    def as_dict(self) -> dict:
        """The suite as the JSON object (what ``pass_rate.testcases_from_suite`` takes)."""
        return {"suite": self.name, "tests": self.tests}

    @property
    def functionalities(self) -> list[str]:
        return [test["name"] for test in self.tests]

    @property
    def capabilities(self) -> list[str]:
        """Capabilities in order of first appearance."""
        return list(dict.fromkeys(test["capability"] for test in self.tests))


def read_checklist_suite(path) -> CheckListSuite:
    """Read and validate a suite file (``.json`` or ``.json.gz``).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    CheckListSuite

    Raises
    ------
    SourceLoadError
        The file is missing, not JSON, or does not follow the suite schema.
    """
    path = Path(path)
    if not path.exists():
        raise SourceLoadError(f"cannot read CheckList suite {str(path)!r}: file not found")
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise SourceLoadError(f"cannot read CheckList suite {str(path)!r}: {error}") from None
    if path.suffix == ".pkl" or raw[:1] == b"\x80":
        raise SourceLoadError(f"{path} looks like a pickle; resplit reads CheckList suites as JSON only "
                              "(see SPEC.md next to the released suites)")
    try:
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    except (OSError, EOFError) as error:
        raise SourceLoadError(f"{path}: not a readable gzip file ({error})") from None
    if not data.strip():
        raise SourceLoadError(f"{path} is empty: a CheckList suite is a JSON object with a 'tests' list")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark (spreadsheet "CSV UTF-8") is read transparently
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SourceLoadError(f"{path}: line {line} is not UTF-8 (byte 0x{data[error.start]:02x} at offset "
                              f"{error.start}); re-encode the file as UTF-8") from None
    try:
        suite = json.loads(text)
    except json.JSONDecodeError as error:
        raise SourceLoadError(f"{path} is not a (gzipped) JSON file: {error}") from None
    return validate_suite(suite, source=str(path), sha256=hashlib.sha256(raw).hexdigest())


def validate_suite(suite, *, source: str = "<suite>", sha256: str = "") -> CheckListSuite:
    """Check a suite object already parsed from JSON; see :func:`read_checklist_suite`."""
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list):
        raise SourceLoadError(f"{source} is not a CheckList suite: expected a JSON object with a 'tests' list")
    if not suite["tests"]:
        raise SourceLoadError(f"{source} has no tests")
    seen = set()
    for position, test in enumerate(suite["tests"]):
        _check_test(test, f"{source}: test {position}", seen)
    name = str(suite.get("suite", Path(source).name))
    answers = _label_kind(suite["tests"], source) == "answers"
    names = None if answers else _label_names(suite, name, source)
    return CheckListSuite(name=name, tests=suite["tests"], source=source, sha256=sha256, label_names=names,
                          answers=answers)


def _labels_of(test) -> list:
    """Every label value of a test (BELUGA's relabelling included), flattened; None left out."""
    values, stack = [], [test.get("labels"), test.get("beluga_label_override")]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif value is not None:
            values.append(value)
    return values


def _label_kind(tests, source: str) -> str:
    """``classes`` (integer labels) or ``answers`` (strings); a suite mixing them is refused."""
    kinds = {"answers" if isinstance(v, str) else "classes" if isinstance(v, int) and not isinstance(v, bool)
             else repr(v) for test in tests for v in _labels_of(test)}
    unknown = kinds - {"answers", "classes"}
    if unknown:
        raise SourceLoadError(f"{source}: a label is a class id (an integer) or an answer (a string), got "
                              f"{sorted(unknown)[0]:.60}")
    if len(kinds) > 1:
        raise SourceLoadError(f"{source} mixes class ids and answer strings as labels; a suite has one kind")
    return kinds.pop() if kinds else "classes"


def _label_names(suite: dict, name: str, source: str) -> tuple:
    """The class names: the suite's ``label_names``, else the released suite's, else ``0`` .. ``k-1``."""
    given = suite.get("label_names")
    if given is not None and (not isinstance(given, list) or not given
                              or not all(isinstance(n, str) and n for n in given) or len(set(given)) != len(given)):
        raise SourceLoadError(f"{source}: label_names must be a list of distinct non-empty class names")
    largest = max((v for test in suite["tests"] for v in _labels_of(test)), default=-1)
    if given is None and name not in RELEASED_LABEL_NAMES:
        return tuple(str(i) for i in range(max(largest + 1, 1)))
    names = tuple(given) if given is not None else RELEASED_LABEL_NAMES[name]
    smallest = min((v for test in suite["tests"] for v in _labels_of(test)), default=0)
    if smallest < 0 or largest >= len(names):
        raise SourceLoadError(f"{source}: labels run from {smallest} to {largest} but the suite has {len(names)} "
                              f"classes ({', '.join(names)}); give one name per class in label_names")
    return names


def _check_test(test, where: str, seen: set) -> None:
    if not isinstance(test, dict):
        raise SourceLoadError(f"{where} is not an object")
    missing = [field for field in REQUIRED_FIELDS if field not in test]
    if missing:
        raise SourceLoadError(f"{where} lacks field(s) {', '.join(missing)}; a test needs {', '.join(REQUIRED_FIELDS)}")
    name = test["name"]
    where = f"{where} ({name!r})"
    if not isinstance(name, str) or not name:
        raise SourceLoadError(f"{where}: name must be a non-empty string")
    if name in seen:
        raise SourceLoadError(f"{where}: functionality names must be unique in a suite")
    seen.add(name)
    _check_choice(test["type"], TEST_TYPES, f"{where}: type")
    _check_choice(test["agg_fn"], AGG_FNS, f"{where}: agg_fn")
    if not isinstance(test["capability"], str) or not test["capability"]:
        raise SourceLoadError(f"{where}: capability must be a non-empty string")
    spec = test["expectation"]
    if not isinstance(spec, dict) or "fn" not in spec:
        raise SourceLoadError(f"{where}: expectation must be an object with 'fn'")
    _check_choice(spec["fn"], EXPECTATIONS, f"{where}: expectation fn")
    unknown = sorted(set(spec) - set(EXPECTATION_KEYS)) + sorted(
        f"slice.{key}" for key in set(spec.get("slice") or {}) - set(SLICE_KEYS))
    if unknown:
        raise SourceLoadError(f"{where}: expectation key(s) {', '.join(unknown)} unknown; an expectation has "
                              f"{', '.join(EXPECTATION_KEYS)} (a slice {', '.join(SLICE_KEYS)})")
    if spec.get("slice") is not None and not isinstance(spec["slice"], dict):
        raise SourceLoadError(f"{where}: expectation slice must be an object")
    data = test["data"]
    if not isinstance(data, list) or not data:
        raise SourceLoadError(f"{where}: data must be a non-empty list of test cases")
    if test.get("n_testcases") is not None and test["n_testcases"] != len(data):
        raise SourceLoadError(f"{where}: n_testcases is {test['n_testcases']} but data has {len(data)} test cases")
    for index, case in enumerate(data):
        for example in (case if test["nested"] else [case]):
            if not _is_example(example):
                raise SourceLoadError(f"{where}, test case {index}: an example is a string or a list of strings, "
                                      f"got {example!r:.80}")
        if test["nested"] and (not isinstance(case, list) or not case):
            raise SourceLoadError(f"{where}, test case {index}: a nested test case is a non-empty list of examples")
    _check_per_testcase(test, "labels", where)
    _check_per_testcase(test, "meta", where)
    _check_meta(test, where)
    _check_labels_present(test, where)
    if test.get("beluga_split") is not None:
        _check_beluga_split(test["beluga_split"], len(data), where)


def _check_choice(value, allowed, what: str) -> None:
    if value not in allowed:
        raise SourceLoadError(f"{what} {value!r} is not one of {', '.join(allowed)}")


def _is_example(example) -> bool:
    if isinstance(example, str):
        return True
    # A pair (QQP questions, SQuAD context + question) is a list of strings.
    return isinstance(example, list) and bool(example) and all(isinstance(part, str) for part in example)


def _check_per_testcase(test, field: str, where: str) -> None:
    """``labels`` / ``meta``: null, one value for the whole test, or one entry per test case."""
    value = test.get(field)
    if isinstance(value, list) and len(value) != len(test["data"]):
        raise SourceLoadError(f"{where}: {field} is a list of {len(value)} but the test has {len(test['data'])} "
                              "test cases (give one value for the whole test, or one per test case)")


def _check_meta(test, where: str) -> None:
    """An example's meta is released as a list of strings: null, ``{}``, a string or a list of strings."""
    stack = [test.get("meta")]
    while stack:
        value = stack.pop()
        if value is None or value == {} or isinstance(value, str):
            continue
        if isinstance(value, list):
            stack.extend(value)
            continue
        raise SourceLoadError(f"{where}: meta holds {value!r:.60}; an example's meta is null, a string or a list "
                              "of strings (released as a list of strings)")


def _check_labels_present(test, where: str) -> None:
    """A test whose expectation compares with labels must have one for every test case."""
    spec = test["expectation"]
    if spec["fn"] not in LABELLED_EXPECTATIONS or (spec["fn"] == "eq" and spec.get("value") is not None):
        return
    labels = test.get("beluga_label_override", None)
    labels = test.get("labels") if labels is None else labels
    per_case = labels if isinstance(labels, list) else [labels] * len(test["data"])
    missing = [index for index, label in enumerate(per_case) if label is None]
    if missing:
        raise SourceLoadError(
            f"{where}: {test['type']} with expectation {spec['fn']!r} needs labels, but test case(s) "
            f"{missing[:5]}{' ...' if len(missing) > 5 else ''} have none (set 'labels', or give the "
            "expectation a 'value')")


def _check_beluga_split(split, n_testcases: int, where: str) -> None:
    if not isinstance(split, dict) or set(split) != set(BELUGA_SPLITS):
        raise SourceLoadError(f"{where}: beluga_split must have exactly the keys {', '.join(BELUGA_SPLITS)}")
    ids = [i for part in BELUGA_SPLITS for i in split[part]]
    if len(set(ids)) != len(ids) or any(not isinstance(i, int) or not 0 <= i < n_testcases for i in ids):
        raise SourceLoadError(f"{where}: beluga_split ids must be distinct test-case ids in 0..{n_testcases - 1}")
