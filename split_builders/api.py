"""The contracts every split family shares: splits, splitters, options and methods.

A split method is one module of :mod:`split_builders.methods` that declares

1. ``Options``: a dataclass of its parameters (subclass of :class:`CommonOptions`). It is the one
   source of defaults, validation, CLI flags (:func:`option` metadata) and recorded parameters;
2. ``load(options)``: the source read through ``loading_scripts`` into a :class:`Loaded`;
3. ``signal(loaded, options, context)``: what it computes per row (cached, resumable where it is
   expensive), as a :class:`Signal`;
4. ``configs(loaded, signal, options)``: pure splitters applied to the signal, a list of
   :class:`~split_builders.release.writer.ConfigSplit`;
5. ``card(...)``: the card's method-specific text and figure specifications (no I/O).

:func:`split_builders.builder.build` takes every method through the same steps; the CLI, the
release writer, provenance and the card skeleton are shared. A new method is one module plus one
:func:`register` call.

Splitters follow scikit-learn's ``model_selection``: keyword-only parameters validated in
``__init__``, ``get_params()`` and ``repr`` from the constructor signature (:class:`BaseSplitter`),
and a ``split(...)`` that returns a :class:`Split` of sorted int64 row numbers.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import types
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from split_builders.errors import InvalidParameterError

if TYPE_CHECKING:
    import datasets

# ---------------------------------------------------------------------------------------------
# Splits and splitters
# ---------------------------------------------------------------------------------------------


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
    """

    name: str
    indices: dict
    method: str
    parameters: dict = field(default_factory=dict)
    description: str = ""
    rows: datasets.Dataset | None = None

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


class BaseSplitter:
    """Base class of every splitter: ``get_params()`` and ``repr`` read the constructor's
    keyword-only parameters from attributes of the same name (set in ``__init__``, validated there)."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]

    def get_params(self) -> dict:
        """The constructor's parameters and their values (as recorded in provenance)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def split(self, *args, **kwargs) -> Split:  # pragma: no cover - every splitter overrides it
        raise NotImplementedError


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
# Options
# ---------------------------------------------------------------------------------------------


def option(default: Any = dataclasses.MISSING, help: str = "", *, flags: tuple = (), choices=None,
           parse: Callable | None = None, group: str = "method", record: bool = True, metavar: str | None = None,
           integer: bool = False, minimum=None, maximum=None, exclusive: tuple = ()):
    """A field of a method's ``Options`` dataclass.

    Parameters
    ----------
    default
        The one default of this option (CLI, Python and recipes alike).
    help : str
        The CLI help text.
    flags : tuple of str
        Extra CLI spellings (aliases) besides ``--field-name``.
    choices : sequence, optional
        Allowed values (checked by the dataclass and by argparse).
    parse : callable, optional
        Converts the CLI text (default: from the field's type: int, float, str, bool flag).
    group : str
        The help section the flag is listed under.
    record : bool
        Whether provenance records the value (False for local paths such as cache folders).
    integer, minimum, maximum, exclusive
        A numeric option's bounds, checked by :func:`check_number` when the options are built (None
        passes where the default is None). Give none of them for an option checked otherwise.
    """
    number = None
    if integer or minimum is not None or maximum is not None:
        number = {"integer": integer, "minimum": minimum, "maximum": maximum, "exclusive": tuple(exclusive)}
    metadata = {"help": help, "flags": tuple(flags), "choices": choices, "parse": parse, "group": group,
                "record": record, "metavar": metavar, "number": number}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


NULL_SPLITS_ENV = "RESPLIT_NULL_SPLITS"
DEFAULT_NULL_SPLITS = 200
MAX_NULL_SPLITS = 100_000


def default_null_splits() -> int:
    """``--null-splits``' default: ``$RESPLIT_NULL_SPLITS`` where set (a machine that builds many
    releases and wants fewer or no diagnostics), else :data:`DEFAULT_NULL_SPLITS`."""
    import os

    value = os.environ.get(NULL_SPLITS_ENV, "").strip()
    if not value:
        return DEFAULT_NULL_SPLITS
    if not value.isdigit():
        raise InvalidParameterError(f"${NULL_SPLITS_ENV} must be a whole number of random splits (0 for no "
                                    f"diagnostics), got {value!r}; unset it for the default {DEFAULT_NULL_SPLITS}")
    return int(check_number(int(value), f"${NULL_SPLITS_ENV}", integer=True, minimum=0, maximum=MAX_NULL_SPLITS))


@dataclass(kw_only=True)
class CommonOptions:
    """The options every method shares, with one default each.

    ``source`` defaults to the method's ``default_source`` (None: the source is required); ``out``
    is the output folder (refused if it exists unless ``overwrite``); ``seed`` seeds every random
    choice; ``limit`` keeps only the first N rows (quick runs); ``group_field`` names a field whose
    rows are kept together in one split (:meth:`SplitMethod.groups`).
    """

    source: str | None = option(None, "the dataset to split: a bundled sample, a named dataset, a file or "
                                      "folder, or a Hub id", group="common")
    out: str | None = option(None, "output folder (must not exist unless --overwrite)", group="common",
                             record=False)
    overwrite: bool = option(False, "replace an existing output folder", group="common", record=False)
    seed: int = option(42, "seed of every random choice (default 42)", group="common", integer=True, minimum=0,
                       maximum=2**32 - 1)
    limit: int | None = option(None, "use only the first N rows (quick runs)", group="common", integer=True,
                               minimum=1)
    dedupe: bool = option(False, "drop exact duplicate rows before splitting (the first source_id of each is kept)",
                          group="common")
    strict: bool = option(False, "refuse a source with rows that reading would drop (a missing label) or values it "
                                 "would convert (labels of mixed types read as text), instead of dropping them and "
                                 "saying so in the card", group="common", record=False)
    group_field: str | None = option(None, "rows that share this field's value (e.g. premise) are kept in one split "
                                           "of every config (default: per example, as the papers)", group="common",
                                     metavar="FIELD")
    license: str | None = option(None, "the release's license in the card (a Hub license id, e.g. cc-by-4.0; default: "
                                       "the source's where resplit knows it, else 'unknown', which push refuses)",
                                 group="output", record=False, metavar="ID")
    language: tuple[str, ...] | None = option(None, "comma-separated language codes of the text, e.g. en (default: "
                                                    "the source's where resplit knows it)", group="output",
                                              record=False, metavar="CODES")
    org: str | None = option(None, "the Hub organisation the release is for: the card's load snippet names "
                                   "ORG/<--out folder name> (push fills in the repository it uploads to)",
                             group="output", record=False, metavar="ORG")
    null_splits: int | None = option(None, "random splits of the same sizes each config's diagnostics are set "
                                           f"against (default ${NULL_SPLITS_ENV}, else {DEFAULT_NULL_SPLITS}; 0: no "
                                           "diagnostics in the card)", group="evidence", integer=True, minimum=0,
                                     maximum=MAX_NULL_SPLITS, record=False, metavar="N")
    probe: bool = option(False, "train a quick baseline on each config's train split and add its accuracy, "
                                "interval and error increase over the random split to the card", group="evidence",
                         record=False)

    def __post_init__(self):
        self._normalise_lists()
        if self.null_splits is None:
            self.null_splits = default_null_splits()
        if self.out is None:
            raise InvalidParameterError("an output folder is required (--out)")
        booleans = self._boolean_fields()
        hints = _type_hints(type(self))
        for spec in dataclasses.fields(self):
            choices, number = spec.metadata.get("choices"), spec.metadata.get("number")
            value = getattr(self, spec.name)
            if spec.name in booleans and not isinstance(value, (bool, np.bool_)) and value is not None:
                raise InvalidParameterError(f"{spec.name} must be true or false, got {value!r}")
            if number is None:  # a numeric option's type and bounds are check_number's, below
                check_type(value, hints[spec.name], spec.name)
            if choices is not None and value is not None and value not in choices:
                raise InvalidParameterError(f"{spec.name.replace('_', '-')} must be one of "
                                            f"{', '.join(map(str, choices))}; got {value!r}")
            if number is not None:
                checked = check_number(value, spec.name, allow_none=spec.default is None, **number)
                if checked is not None and not isinstance(value, bool):
                    setattr(self, spec.name, checked)
        self.validate()

    def validate(self) -> None:
        """Cheap checks of the method's own options (no I/O); raise InvalidParameterError."""

    @classmethod
    def _boolean_fields(cls) -> set:
        """The options typed ``bool``: a recipe's ``'false'`` (a string) must not read as true."""
        import typing

        return {name for name, hint in typing.get_type_hints(cls).items() if hint is bool}

    def _normalise_lists(self) -> None:
        """A tuple-typed option given as ``"a,b"`` or a list becomes a tuple of stripped names; an
        empty one becomes None where None is allowed (as on the command line)."""
        import typing

        hints = typing.get_type_hints(type(self))
        for spec in dataclasses.fields(self):
            hint = hints[spec.name]
            members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
            if not any(typing.get_origin(m) is tuple for m in members):
                continue
            value = getattr(self, spec.name)
            if isinstance(value, str):
                value = tuple(part.strip() for part in value.split(",") if part.strip())
            elif isinstance(value, (list, tuple)):
                value = tuple(value)
            elif isinstance(value, Integral) and not isinstance(value, bool) and _element_type(hint) is int:
                value = (value,)  # one size is a list of one
            # anything else is left for check_type to refuse, naming the option
            if value == () and type(None) in members:
                value = None
            setattr(self, spec.name, value)

    def recorded(self) -> dict:
        """The parameters provenance records: every option except local paths and output handling."""
        return {spec.name: _plain(getattr(self, spec.name)) for spec in dataclasses.fields(self)
                if spec.metadata.get("record", True) and spec.name not in ("source", "seed")}


def _type_hints(cls) -> dict:
    import typing

    return typing.get_type_hints(cls)


def _members(hint) -> tuple:
    """The types a hint allows (``int | None`` -> ``(int, NoneType)``)."""
    import typing

    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _element_type(hint):
    """The element type of a ``tuple[X, ...]`` member of ``hint`` (None when there is none)."""
    import typing

    for member in _members(hint):
        if typing.get_origin(member) is tuple and typing.get_args(member):
            return typing.get_args(member)[0]
    return None


def _is_int(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, (bool, np.bool_))


def _fits(value, member) -> bool:
    """Whether ``value`` is a value of the type ``member`` (one member of an option's type hint)."""
    import os
    import typing

    if member is bool:
        return isinstance(value, (bool, np.bool_))
    if member is int:
        return _is_int(value)
    if member is float:
        return isinstance(value, Real) and not isinstance(value, (bool, np.bool_))
    if member is str:
        return isinstance(value, (str, os.PathLike))
    if member is tuple:  # a bare tuple: one name or index, or several (the method reads them)
        items = value if isinstance(value, (tuple, list)) else (value,)
        return all(isinstance(v, str) or _is_int(v) for v in items)
    if typing.get_origin(member) is tuple:
        element = (typing.get_args(member) or (None,))[0]
        if not isinstance(value, tuple):
            return False
        if element is str:
            return all(isinstance(v, str) for v in value)
        if element is int:  # digit strings too: the CLI's "10,50" (the method converts them)
            return all(_is_int(v) or (isinstance(v, str) and v.strip().isdigit()) for v in value)
        return True
    return True  # a type this check does not know: the method validates it


def _wanted(member) -> str:
    """A type in words, for a message."""
    import typing

    if typing.get_origin(member) is tuple:
        element = (typing.get_args(member) or (None,))[0]
        return {str: "a list of names (or comma-separated text)", int: "a list of integers"}.get(element, "a list")
    return {bool: "true or false", int: "an integer", float: "a number", str: "text",
            tuple: "a name or an index, or a list of them"}.get(member, getattr(member, "__name__", str(member)))


def _kind(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "a boolean"
    if isinstance(value, Real):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def check_type(value, hint, name: str) -> None:
    """Refuse an option value that is not of its declared type (a recipe's ``configs: 7`` where a list
    of names is expected, a list where text is), naming the option and the type, before any work.
    None passes where the type allows it; ``int | float`` is one kind, a number."""
    members = _members(hint)
    if value is None and type(None) in members:
        return
    members = [m for m in members if m is not type(None)]
    if any(_fits(value, m) for m in members):
        return
    numeric = [m for m in members if m in (int, float)]
    wanted = (["a number"] if len(numeric) > 1 else []) + [_wanted(m) for m in members
                                                            if not (len(numeric) > 1 and m in numeric)]
    raise InvalidParameterError(f"{name} must be {' or '.join(wanted)}, got {value!r} ({_kind(value)})")


def _plain(value):
    """A value as YAML can hold it (tuples as lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# ---------------------------------------------------------------------------------------------
# What a method hands to the shared build
# ---------------------------------------------------------------------------------------------


@dataclass
class SourceInfo:
    """What provenance and the card record of a method's source.

    Exactly one of ``revision`` (a Hub commit) and ``content_sha256`` (of the canonical rows) is
    needed; both may be given.
    """

    name: str
    rows: int
    content_sha256: str | None = None
    revision: str | None = None
    filters: dict = field(default_factory=dict)
    source_id: str = "0-based row number in the input file"
    license: str | None = None
    citation: str | None = None
    language: tuple | None = None  # ISO 639-1 codes of the source's text (the card's ``language``)
    hub_id: str | None = None  # the Hub id of the original dataset, where known (the card's ``source_datasets``)

    def __post_init__(self):
        self.name = self.public_name(self.name)
        if isinstance(self.language, str):
            self.language = (self.language,)
        self.language = tuple(self.language) if self.language else None

    @staticmethod
    def public_name(text) -> str:
        """``text`` with every local path in it (absolute, ``~/...``, or relative and existing here) replaced
        by its file name: a release names its source by file name (and sha256), never by where it was on
        the builder's machine. Hub ids (``org/name``) and URLs are kept."""
        import os
        import re

        def file_name(match) -> str:
            path = match.group(0)
            local = path.startswith(("/", "~", "./", "../")) or os.path.exists(path)
            return os.path.basename(path.rstrip("/")) or path if local else path

        return re.sub(r"(?<![\w:/.-])(?:~?/|\.{1,2}/|[\w.-]+/)[^\s'\"`,;()]*", file_name, str(text))


TASKS = ("classification", "semantic_parsing", "behavioural", "text")


@dataclass
class Fields:
    """What the columns of a method's released rows are, for the shared code that reads them
    (the leakage audit, diagnostics, the baseline probe, harness tasks, the card's Hub metadata).

    A method declares it with :meth:`SplitMethod.fields`; the build records it as ``resplit.fields``.

    Attributes
    ----------
    task : str
        ``classification`` (a label to predict from text), ``semantic_parsing`` (a target program
        from an input), ``behavioural`` (CheckList test cases) or ``text`` (text only).
    text : tuple of str
        The text columns of one example, in prompt order (premise, hypothesis; passage, question).
    query : str or None
        The one text column a query-only baseline reads (the hypothesis, the question, the input).
    label : str or None
        The label column.
    label_names : tuple of str or None
        The label's class names in class order (a ``ClassLabel``'s names).
    target : str or None
        The target program column.
    group : str or None
        The ``--group-field`` column.
    """

    task: str
    text: tuple = ()
    query: str | None = None
    label: str | None = None
    label_names: tuple | None = None
    target: str | None = None
    group: str | None = None

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}; got {self.task!r}")
        self.text = tuple(dict.fromkeys(f for f in self.text if f))
        if self.label_names is not None:
            self.label_names = tuple(str(name) for name in self.label_names)

    def record(self) -> dict:
        """The ``resplit.fields`` mapping (plain types, YAML-ready)."""
        return {"task": self.task, "text": list(self.text), "query": self.query, "label": self.label,
                "label_names": list(self.label_names) if self.label_names is not None else None,
                "target": self.target, "group": self.group}

    @classmethod
    def from_record(cls, record: dict | None) -> "Fields | None":
        """The fields a release's provenance (``resplit:``) records; None for releases without them."""
        value = (record or {}).get("fields")
        if not isinstance(value, dict) or value.get("task") not in TASKS:
            return None
        return cls(task=value["task"], text=tuple(value.get("text") or ()), query=value.get("query"),
                   label=value.get("label"), label_names=value.get("label_names"), target=value.get("target"),
                   group=value.get("group"))

    @property
    def columns(self) -> list:
        """Every column named here, once, in order."""
        return list(dict.fromkeys(c for c in (*self.text, self.query, self.label, self.target, self.group) if c))


@dataclass
class Loaded:
    """A method's source after ``load``: the method's own object (``data``) and its description."""

    data: Any
    info: SourceInfo
    groups: Any = None  # one group number per row with --group-field (set by build from SplitMethod.groups)


@dataclass
class Signal:
    """What a method computed per row.

    ``values`` is the method's own object (scores, PVI results, atoms, ...); ``provenance`` is
    recorded under ``resplit.signal`` (kind, model and revision, precision, whatever is needed to
    rebuild the configs); ``summary`` is a one-line account for the terminal.
    """

    values: Any
    provenance: dict
    summary: str = ""


@dataclass
class Context:
    """The run's environment as a method sees it: progress output, verbosity and the process group.

    ``progress``: show progress bars (on stderr); ``verbose``: also the libraries' own reports (a
    Trainer's raw logs, weight-loading reports) that a normal run keeps quiet; ``log``: one-line
    messages for the terminal.
    """

    progress: bool = True
    verbose: bool = False
    log: Callable[[str], None] = print

    @property
    def is_main_process(self) -> bool:
        import os

        return os.environ.get("RANK", "0") == "0"


# ---------------------------------------------------------------------------------------------
# Methods and the registry
# ---------------------------------------------------------------------------------------------


class SplitMethod:
    """Base class of a split family. Subclasses set the class attributes and implement ``load``,
    ``signal``, ``configs``, ``rows`` and ``card`` (the others have defaults); the shared build calls
    them in the order of :data:`HOOKS`.

    Attributes
    ----------
    name : str
        Registry key and CLI subcommand.
    paper : str
        The paper it implements (shown by ``resplit list`` and recorded in provenance).
    summary : str
        One line for ``resplit list`` and the CLI help.
    config_names : tuple of str
        The configs it can build (for ``resplit list``; a method may add variants).
    Options : type
        Its options dataclass (a subclass of :class:`CommonOptions`).
    default_source : str or None
        The source used when none is given (None: ``--source`` is required).
    source_aliases : tuple of str
        Older spellings of ``--source`` that keep working (``--data``, ``--suite``).
    signal_columns : tuple of str
        The per-row signal columns its released rows carry (``score``, ``pvi``, ...): ``verify
        --rescore`` compares them row by row with a rebuild and ``diff`` compares their train / test
        distributions. Every released row also carries ``source_id``, the row identity shared code uses.
    """

    name: str = ""
    paper: str = ""
    summary: str = ""
    config_names: tuple = ()
    Options: type = CommonOptions
    default_source: str | None = None
    source_aliases: tuple = ()
    signal_columns: tuple = ()

    def options(self, **values) -> CommonOptions:
        """The method's options from keyword values (validated; the default source filled in)."""
        if values.get("source") is None:
            if self.default_source is None:
                flags = ", ".join(("--source", *self.source_aliases))
                raise InvalidParameterError(f"{self.name} needs a source ({flags})")
            values["source"] = self.default_source
        return self.Options(**values)

    def check(self, options) -> None:
        """Checks that read little or nothing (a file exists, a field list is well formed); run
        with the output location check, before ``load``."""

    def load(self, options) -> Loaded:
        raise NotImplementedError

    def row_keys(self, loaded: Loaded):
        """One string per loaded row; rows with equal keys are exact duplicates (the fields the
        method splits on, e.g. premise + hypothesis + label). None: the method defines no duplicates.
        Rows of ``rows()`` beyond these (lexical copies) map back to row ``i % len(keys)``."""
        return None

    def select_rows(self, loaded: Loaded, keep) -> Loaded:
        """The loaded source restricted to the sorted positions ``keep`` (``--dedupe``)."""
        from split_builders.errors import InvalidParameterError

        raise InvalidParameterError(f"{self.name} does not support --dedupe")

    def check_loaded(self, loaded: Loaded, options) -> None:
        """Checks that need the rows but nothing expensive (sizes against the row count, fields)."""

    def groups(self, loaded: Loaded, field: str):
        """``--group-field``: the group number of every loaded row (rows of a group must never
        straddle train / validation / test), from
        :func:`split_builders.splitters.groups.column_groups`; called by build after ``check_loaded``,
        before the signal, and stored as ``loaded.groups`` for ``configs``. A method whose configs
        cannot keep groups whole refuses, saying why (the default)."""
        raise InvalidParameterError(f"{self.name} does not support --group-field")

    def signal(self, loaded: Loaded, options, context: Context) -> Signal:
        raise NotImplementedError

    def configs(self, loaded: Loaded, signal: Signal, options) -> list:
        raise NotImplementedError

    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        """The release's rows (canonical fields plus signal columns), or None when every config
        brings its own rows."""
        raise NotImplementedError

    def fields(self, loaded: Loaded, signal: Signal, options) -> Fields | None:
        """What the released rows' columns are (:class:`Fields`: text, query, label and its names,
        target, group), recorded as ``resplit.fields`` for the audit, diagnostics, probe, harness
        tasks and Hub metadata. None: shared code infers them from the column types."""
        return None

    def card(self, loaded: Loaded, signal: Signal, configs: list, options):
        """A :class:`split_builders.release.card.CardSpec`: text and figure specifications."""
        raise NotImplementedError

    def pretty_name(self, loaded: Loaded) -> str:
        return f"{self.name} splits of {loaded.info.name}"

    def report(self, result) -> list[str]:
        """Lines the CLI prints after a build (the shared summary table comes first)."""
        return []

    def rederive(self, released, record: dict) -> dict:
        """Every config's splits re-derived from the released rows alone (``resplit verify`` level 2).

        ``released`` is a :class:`split_builders.release.verify.Released` (the release's rows per
        config and split); ``record`` its ``resplit:`` provenance (parameters, seed, signal). The
        partition is a pure function of the per-row signal the rows carry, so this needs no source,
        no model and no GPU. Returns ``{config: {split: source_ids}}`` for the configs it can
        re-derive (the others are reported as not checked).
        """
        return {}

    def config_statistics(self, parameters: dict) -> dict:
        """Numbers a config's recorded ``parameters`` hold that ``resplit diff`` compares across
        versions (TMCD's compound and atom divergences, say): ``{name: value}``."""
        return {}


HOOKS = ("check", "load", "row_keys", "select_rows", "check_loaded", "groups", "signal", "configs", "rows", "fields", "card",
         "pretty_name", "report", "rederive", "config_statistics")
"""A method's hooks in the order :func:`split_builders.build` calls them (``row_keys`` and
``select_rows`` for ``--dedupe``, before the sizes are checked), then those ``verify`` and ``diff``
call; every method module defines the ones it implements in this order."""


_REGISTRY: dict[str, SplitMethod] = {}


def register(method):
    """Add a split method (a :class:`SplitMethod` subclass, or an instance of one) to the registry.

    Refuses an object that is not a SplitMethod, a method without a name or ``Options`` that do not
    derive from :class:`CommonOptions`, and a second method of a registered name (unregister the
    first one to replace it). Returns its argument, so it also works as a class decorator.
    """
    instance = method() if isinstance(method, type) and issubclass(method, SplitMethod) else method
    if not isinstance(instance, SplitMethod):
        raise InvalidParameterError(f"{method!r} is not a split method (a subclass of SplitMethod)")
    if not instance.name:
        raise InvalidParameterError(f"{type(instance).__name__} has no name")
    if not (isinstance(instance.Options, type) and issubclass(instance.Options, CommonOptions)):
        raise InvalidParameterError(f"{instance.name}: Options must be a dataclass derived from CommonOptions")
    _load_builtin()
    if instance.name in _REGISTRY:
        raise InvalidParameterError(f"a split method named {instance.name!r} is already registered "
                                    f"({type(_REGISTRY[instance.name]).__name__}); unregister it first to replace it")
    _REGISTRY[instance.name] = instance
    return method


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


_LOADED_BUILTIN = False


def _load_builtin() -> None:
    """Register the built-in methods (the table in :mod:`split_builders.methods`) once, first."""
    global _LOADED_BUILTIN
    if _LOADED_BUILTIN:
        return
    _LOADED_BUILTIN = True
    from split_builders.methods import BUILTIN

    for name, (module, cls) in BUILTIN.items():
        method = getattr(importlib.import_module(module), cls)()
        if method.name != name:
            raise InvalidParameterError(f"{module}.{cls} is named {method.name!r}, not {name!r}")
        _REGISTRY[name] = method


def registry() -> dict[str, SplitMethod]:
    """Every registered method by name (the built-in ones first)."""
    _load_builtin()
    return dict(_REGISTRY)


def get_method(name) -> SplitMethod:
    if isinstance(name, SplitMethod):
        return name
    methods = registry()
    if name not in methods:
        raise InvalidParameterError(f"unknown split method {name!r}; known: {', '.join(methods)}")
    return methods[name]
