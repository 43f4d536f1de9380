"""Options: the :func:`option` metadata of a method's ``Options`` field (CLI flag, choices, bounds, whether
provenance records it), :class:`CommonOptions` (what every method shares, one default each) and the type
checker that refuses a value of the wrong kind before any work."""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from split_builders.errors import InvalidParameterError
from split_builders.splits import check_number

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

