"""Splits and sizes: :class:`Split` (what every splitter returns), :class:`ConfigSplit` (one config of a
release), :class:`BaseSplitter` (scikit-learn's ``get_params`` / ``set_params`` / ``repr`` from the constructor, so
``sklearn.base.clone`` works) and :class:`SklearnCV` (a splitter as a scikit-learn ``cv=``), and the one checker of
numeric parameters and sizes."""

from __future__ import annotations

import hashlib
import inspect
import math
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from split_builders.errors import InvalidParameterError

if TYPE_CHECKING:
    import datasets

class Split(NamedTuple):
    """Row numbers of one split: ``train``, ``validation`` (possibly empty) and ``test``, each a
    sorted int64 array. Unpacks as ``train, validation, test = splitter.split(...)``."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray

    @classmethod
    def of(cls, train, validation=(), test=()) -> "Split":
        """A Split from any three sequences of row numbers (sorted, int64)."""
        return cls(*(np.sort(np.asarray(part, dtype=np.int64).reshape(-1)) for part in (train, validation, test)))

    def as_indices(self) -> dict:
        """``{split: rows}`` for the release writer; an empty validation split is left out (a
        config loads only with the splits it has)."""
        parts = {"train": self.train, "validation": self.validation, "test": self.test}
        return {name: rows for name, rows in parts.items() if name == "train" or len(rows)}


SPLITS = ("train", "validation", "test")
"""The split names of every release, in release order."""


@dataclass
class ConfigSplit:
    """One config of a release: row positions per split, and how they were chosen.

    ``indices`` are positions in the release's rows (not source ids), or in ``rows`` when the
    config brings its own table (a release of several datasets, such as CURRICULUM's phenomena,
    whose columns differ per config).

    ``requested`` (``{split: rows}``) is what the options asked of a split where whole groups may make it
    come out otherwise (filled by a config builder under ``--group-field``; the build says where the two
    differ: :func:`split_builders.splitters.groups.size_gaps`).
    """

    name: str
    indices: dict
    method: str
    parameters: dict = field(default_factory=dict)
    description: str = ""
    rows: datasets.Dataset | None = None
    requested: dict | None = None

    def _sizes(self) -> str:
        return ", ".join(f"{s} {len(v)}" for s, v in self.indices.items()) or "no splits"

    @property
    def splits(self) -> tuple:
        """The config's splits in release order. An evaluation split may be absent (compositional
        splits such as TMCD have only train and test) and an empty one is left out: ``datasets``
        cannot load a split without rows."""
        return tuple(s for s in SPLITS if s in self.indices and (s == "train" or len(self.indices[s])))

    def check(self, n_rows: int) -> None:
        # train plus at least one evaluation split: TMCD has train/test, CURRICULUM train/validation.
        if not set(self.indices) <= set(SPLITS):
            raise InvalidParameterError(f"config {self.name!r} has unknown split(s) "
                                        f"{sorted(set(self.indices) - set(SPLITS))}; allowed: {', '.join(SPLITS)}")
        if "train" not in self.indices or len(self.splits) < 2:
            raise InvalidParameterError(f"config {self.name!r} must have a train split and at least one non-empty "
                                        f"validation or test split; has {self._sizes()}")
        seen = np.zeros(n_rows, dtype=np.int64)
        for split in self.splits:
            idx = np.asarray(self.indices[split])
            if idx.size and (idx.min() < 0 or idx.max() >= n_rows):
                raise InvalidParameterError(f"config {self.name!r} split {split!r} has row numbers outside 0..{n_rows - 1}")
            np.add.at(seen, idx, 1)
        if (seen > 1).any():
            raise InvalidParameterError(f"config {self.name!r}: {(seen > 1).sum()} row(s) are in more than one split")


DEFAULT_SEED = 42
"""The default ``random_state`` of every splitter (a build passes its ``--seed``)."""

SPLIT_INPUTS = {
    "signal": "the per-row signal the splitter orders or holds out by: scores, PVI, a functionality per row",
    "labels": "one label per row",
    "groups": "one group number per row; a group's rows are never divided",
    "lengths": "the word length of each row",
    "atoms": "the set of atoms of each row's program",
    "compounds": "the compounds of each row's program, a {compound: weight} mapping per row",
    "inputs": "the input text of each row",
    "targets": "the target text (program) of each row",
    "released": "the split each row was released in ('train' or 'validation')",
    "n_rows": "the number of rows, where no per-row input gives it",
}
"""The keywords every splitter's :meth:`BaseSplitter.split` accepts, and what each holds."""


class BaseSplitter:
    """Base class of every splitter, in scikit-learn's style.

    ``get_params()`` and ``repr`` read the constructor's keyword-only parameters from attributes of the same name
    (set in ``__init__``, validated there); ``random_state`` defaults to :data:`DEFAULT_SEED` everywhere.

    Every splitter is called the same way, :meth:`split` ``(signal=None, *, labels=None, groups=None,
    lengths=None, ...)`` with the keywords of :data:`SPLIT_INPUTS`: it reads those its :meth:`_split` names and
    ignores the others, and refuses, in one line naming it, an input it ``requires`` that is missing. A subclass
    writes ``requires`` and ``_split``; a splitter that holds out the tail of an order fills only ``_order``
    (:class:`split_builders.splitters.base.TailSplitter`)."""

    requires: tuple = ()
    """The inputs (names of :data:`SPLIT_INPUTS`) :meth:`split` cannot go without; ``n_rows`` is met by any
    per-row input."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters and their values (as recorded in provenance). ``deep`` is scikit-learn's
        argument (``sklearn.base.clone`` passes it); no parameter of a splitter is itself an estimator, so deep and
        shallow are the same."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> "BaseSplitter":
        """Change constructor parameters, as scikit-learn's ``set_params`` (``GridSearchCV``, ``clone``): checked as
        the constructor checks them (the splitter is made again with these changed), so a bad value or a name that
        is no parameter is refused in one line and the splitter is left as it was. Returns the splitter."""
        names = self._param_names()
        unknown = [name for name in params if name not in names]
        if unknown:
            raise InvalidParameterError(f"{type(self).__name__} has no parameter {unknown[0]!r}; its parameters: "
                                        f"{', '.join(names)}")
        made = type(self)(**{**self.get_params(), **params})
        vars(self).update(vars(made))
        return self

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """1: a splitter makes one split (scikit-learn's cross-validator protocol; ``X``, ``y`` and ``groups`` are
        ignored)."""
        return 1

    def as_cv(self, signal=None, *, evaluate: str = "test", stratify: bool = True, **inputs) -> "SklearnCV":
        """This splitter as a scikit-learn cross-validator (``cv=`` of ``cross_val_score``, ``GridSearchCV``,
        ``check_cv``): one fold, ``(train, test)`` row numbers of :meth:`split`.

        scikit-learn passes only ``X``, ``y`` and ``groups``; what else the splitter reads per row (``signal``, and
        ``lengths``, ``atoms``, ... of :data:`SPLIT_INPUTS`) is given here, one value per row of ``X``. ``y`` is
        the splitter's ``labels`` where it requires them, and, with ``stratify``, where ``y`` holds classes and the
        splitter balances its evaluation sets over labels in its setting (as ``check_cv`` stratifies a class
        target); ``labels=`` given here is used instead. ``groups`` keeps groups whole. ``evaluate``: the held-out
        split that is the fold's test, ``"test"`` or ``"validation"`` (to tune with ``GridSearchCV`` without
        reading the test rows); the other held-out split is in neither train nor test."""
        return SklearnCV(self, signal=signal, evaluate=evaluate, stratify=stratify, **inputs)

    def _reads_labels(self) -> bool:
        """Whether :meth:`split` balances over ``labels`` in this splitter's setting (:meth:`as_cv` then gives it
        ``y``); a splitter that refuses labels in some setting says so here."""
        return "labels" in _parameters(type(self)._split)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def split(self, signal=None, *, labels=None, groups=None, lengths=None, atoms=None, compounds=None,
              inputs=None, targets=None, released=None, n_rows=None, progress: bool = False) -> Split:
        """Return the sorted row numbers of train, validation and test (:class:`Split`).

        Every splitter accepts this call (:data:`SPLIT_INPUTS`) and reads what it needs: ``signal`` the per-row
        signal it orders or holds out by (a count of rows where a splitter reads none, e.g. ``RandomSplitter``),
        ``labels`` to balance over, ``groups`` to keep whole, ``lengths``, ``atoms`` and ``compounds``, ``inputs``
        and ``targets``, ``released``; ``n_rows`` where no per-row input gives it; ``progress`` shows a bar on
        stderr where a search is long."""
        given = {"signal": signal, "labels": labels, "groups": groups, "lengths": lengths, "atoms": atoms,
                 "compounds": compounds, "inputs": inputs, "targets": targets, "released": released, "n_rows": n_rows}
        if isinstance(signal, Integral) and not isinstance(signal, bool) and n_rows is None:
            given["signal"], given["n_rows"] = None, signal  # a count of rows as the first argument
        if given["n_rows"] is None:
            given["n_rows"] = _rows_given(given)
        for name in self.requires:
            if given[name] is None:
                wanted = "any per-row input" if name == "n_rows" else f"{name}="
                raise InvalidParameterError(f"{type(self).__name__}.split needs {wanted} ({SPLIT_INPUTS[name]})")
        read = _parameters(type(self)._split)
        return self._split(**{name: value for name, value in {**given, "progress": progress}.items() if name in read})

    def _split(self, **inputs) -> Split:  # pragma: no cover - every splitter fills it
        raise NotImplementedError

    @classmethod
    def _examples(cls, data: dict) -> list:
        """Small cases of this splitter that the contract tests run (``tests/test_splitter_contract.py``):
        ``[(constructor parameters, split() keywords, whether the split covers every row)]``, the keywords drawn
        from ``data``: ``n_rows`` rows of GeoQuery (``inputs``, ``targets``, ``atoms``, ``compounds``), and
        ``rng``, a seeded ``numpy.random.Generator`` for the rest (scores, labels, lengths, ...)."""
        return []


class SklearnCV:
    """A splitter as scikit-learn's cross-validator: ``split(X, y=None, groups=None)`` yields one ``(train,
    test)`` pair of row numbers, ``get_n_splits`` is 1 (made by :meth:`BaseSplitter.as_cv`, which says how ``y``
    and ``groups`` are read). It needs no scikit-learn until ``split`` reads ``y``."""

    EVALUATE = ("test", "validation")

    def __init__(self, splitter: BaseSplitter, signal=None, *, evaluate: str = "test", stratify: bool = True,
                 **inputs):
        if not isinstance(splitter, BaseSplitter):
            raise InvalidParameterError(f"as_cv needs a resplit splitter, got {type(splitter).__name__}")
        if evaluate not in self.EVALUATE:
            raise InvalidParameterError(f"evaluate must be 'test' or 'validation', got {evaluate!r}")
        if not isinstance(stratify, bool):
            raise InvalidParameterError(f"stratify must be True or False, got {stratify!r}")
        unknown = sorted(set(inputs) - (set(SPLIT_INPUTS) - {"n_rows"}))  # the rows are X's
        if unknown:
            raise InvalidParameterError(f"as_cv takes the per-row inputs of split(), not {unknown[0]!r}; they are: "
                                        f"{', '.join(name for name in SPLIT_INPUTS if name != 'n_rows')}")
        self.splitter, self.evaluate, self.stratify = splitter, evaluate, stratify
        self.inputs = {name: value for name, value in {"signal": signal, **inputs}.items() if value is not None}

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """1: the splitter's one split."""
        return 1

    def split(self, X, y=None, groups=None):
        """Yield the one ``(train, test)`` pair: sorted int64 row numbers of ``X``."""
        n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
        for name, values in self.inputs.items():
            if name != "groups" and len(values) != n_rows:
                raise InvalidParameterError(f"X has {n_rows} rows but {name}= given to as_cv has {len(values)} "
                                            "values: give one per row of X")
        given = dict(self.inputs)
        if "labels" not in given and y is not None and ("labels" in self.splitter.requires or (
                self.stratify and self.splitter._reads_labels() and _is_class_target(y))):
            given["labels"] = y
        if "groups" not in given and groups is not None:
            given["groups"] = groups
        split = self.splitter.split(**given, n_rows=n_rows)
        held = split.test if self.evaluate == "test" else split.validation
        if not len(held):
            raise InvalidParameterError(f"{type(self.splitter).__name__} gave no {self.evaluate} rows: choose "
                                        f"evaluate={'validation' if self.evaluate == 'test' else 'test'!r}")
        yield split.train, held

    def __repr__(self) -> str:
        given = "".join(f", {name}=<{len(values)} values>" for name, values in self.inputs.items())
        return f"{self.splitter!r}.as_cv(evaluate={self.evaluate!r}, stratify={self.stratify}{given})"


def _is_class_target(y) -> bool:
    """Whether ``y`` holds classes (scikit-learn's ``type_of_target``: binary or multiclass), which the
    evaluation sets are balanced over, rather than numbers to regress."""
    from sklearn.utils.multiclass import type_of_target

    return type_of_target(y) in ("binary", "multiclass")


def _rows_given(given: dict) -> int | None:
    """The number of rows of the first per-row input given (None: none)."""
    for name in ("signal", "labels", "groups", "lengths", "atoms", "compounds", "inputs", "targets", "released"):
        if given[name] is not None:
            try:
                return len(given[name])
            except TypeError:
                continue
    return None


_READ: dict = {}


def _parameters(function) -> frozenset:
    """The keyword names a splitter's ``_split`` reads (every one, where it takes ``**inputs``)."""
    if function not in _READ:
        parameters = inspect.signature(function).parameters.values()
        if any(p.kind == p.VAR_KEYWORD for p in parameters):
            _READ[function] = frozenset([*SPLIT_INPUTS, "progress"])
        else:
            _READ[function] = frozenset(p.name for p in parameters) - {"self"}
    return _READ[function]


def check_number(value, name: str, *, integer: bool = False, minimum=None, maximum=None,
                 exclusive: tuple = (), allow_none: bool = False):
    """The one check of a numeric parameter; returns it as an int (``integer``) or a float.

    ``minimum`` / ``maximum`` bound it (inclusive, unless named in ``exclusive``: ``("minimum",)``,
    ``("maximum",)`` or both). A bound of 0 and 1 with a real value reads as a fraction in the
    message, e.g. ``validation_size must be a fraction in (0, 1), got 1.5``. Booleans are refused
    (``True`` is an int to Python, never a count to a user); None passes only with ``allow_none``.
    """
    if value is None and allow_none:
        return None
    low_open, high_open = "minimum" in exclusive, "maximum" in exclusive
    if integer:
        if minimum == 0 and maximum is None and not low_open:
            wanted = "a non-negative integer"
        elif minimum == 1 and maximum is None and not low_open:
            wanted = "a positive integer"
        else:
            wanted = "an integer" + _bounds_text(minimum, maximum, low_open, high_open)
    elif minimum == 0 and maximum == 1:
        wanted = f"a fraction in {'(' if low_open else '['}0, 1{')' if high_open else ']'}"
    elif minimum == 0 and maximum is None and low_open:
        wanted = "a positive number"
    else:
        wanted = "a number" + _bounds_text(minimum, maximum, low_open, high_open)
    kinds = Integral if integer else Real
    ok = not isinstance(value, bool) and isinstance(value, kinds) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if low_open else value >= minimum
    if ok and maximum is not None:
        ok = value < maximum if high_open else value <= maximum
    if not ok:
        raise InvalidParameterError(f"{name} must be {wanted}, got {value!r}")
    return int(value) if integer else float(value)


def _bounds_text(minimum, maximum, low_open: bool, high_open: bool) -> str:
    if minimum is not None and maximum is not None:
        return f" in {'(' if low_open else '['}{minimum}, {maximum}{')' if high_open else ']'}"
    if minimum is not None:
        return f" {'>' if low_open else '>='} {minimum}"
    if maximum is not None:
        return f" {'<' if high_open else '<='} {maximum}"
    return ""


def check_size(value, name: str, *, allow_zero: bool = True):
    """Validate a size given as a count (int >= 0, or >= 1 without ``allow_zero``) or a fraction
    in (0, 1); returns it as an int or a float."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidParameterError(f"{name} must be a count or a fraction in (0, 1), got {value!r}")
    if isinstance(value, Integral):
        if value < (0 if allow_zero else 1):
            raise InvalidParameterError(f"{name} must be >= {0 if allow_zero else 1}, got {value}")
        return int(value)
    if not 0.0 < float(value) < 1.0:
        raise InvalidParameterError(f"{name} as a fraction must be in (0, 1), got {value}")
    return float(value)


def resolve_size(value, n_rows: int, *, rounding: str = "up") -> int:
    """A count stays a count; a fraction of ``n_rows`` is rounded ``"up"`` (``ceil``, as scikit-learn)
    or to the ``"nearest"`` count (Python's ``round``, ties to even: TMCD's rule, as Shaw et al.'s
    generators, which take counts; releases built with it rebuild unchanged)."""
    if isinstance(value, Integral):
        return int(value)
    if rounding == "up":
        return int(math.ceil(value * n_rows))
    if rounding == "nearest":
        return int(round(float(value) * n_rows))
    raise InvalidParameterError(f"rounding must be 'up' or 'nearest', got {rounding!r}")


def check_random_state(random_state) -> int | None:
    """A seed: a non-negative integer, or None."""
    return check_number(random_state, "random_state", integer=True, minimum=0, allow_none=True)


def parse_size(text: str):
    """A size as typed on the command line: an integer count, or a fraction such as ``0.1``."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"expected a count or a fraction in (0, 1), got {text!r}") from None


# ---------------------------------------------------------------------------------------------
# Row identity
# ---------------------------------------------------------------------------------------------


def row_ids(table) -> np.ndarray:
    """What identifies each row of a release's table across splits and versions: its ``source_id``
    (int64)."""
    if "source_id" not in table.column_names:
        raise InvalidParameterError(f"no source_id column among {', '.join(table.column_names)}: every released "
                                    "row carries one (rebuild the release with this version of resplit)")
    return np.asarray(table.column("source_id").to_numpy(), dtype=np.int64)


def membership_sha256(ids) -> str:
    """sha256 of a split's sorted row identities (little-endian int64): what a card records of a
    split that is taken as released rather than derived (a published split)."""
    ordered = np.sort(np.asarray(ids, dtype=np.int64)).astype("<i8")
    return hashlib.sha256(ordered.tobytes()).hexdigest()
