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
           integer: bool = False, minimum=None, maximum=None, exclusive: tuple = (), conflicts: tuple = (),
           conflict_note: str = "", role: str | None = None):
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
    conflicts : tuple of str
        Options this one contradicts: giving both (each away from its default) is refused in one line,
        with ``conflict_note`` saying why (e.g. the one would be ignored).
    role : {"label", "input"}, optional
        A field-naming option's role: the label field may not also be named as an input (text, prompt,
        query or target field), which is refused in one line.
    """
    number = None
    if integer or minimum is not None or maximum is not None:
        number = {"integer": integer, "minimum": minimum, "maximum": maximum, "exclusive": tuple(exclusive)}
    metadata = {"help": help, "flags": tuple(flags), "choices": choices, "parse": parse, "group": group,
                "record": record, "metavar": metavar, "number": number, "conflicts": tuple(conflicts),
                "conflict_note": conflict_note, "role": role}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


NULL_SPLITS_ENV = "RESPLIT_NULL_SPLITS"
DEFAULT_NULL_SPLITS = 200
MAX_NULL_SPLITS = 100_000
ROW_ORDERS = ("content", "position")
"""The choices of ``row_order``, the rule every random draw and tie-break follows (see
:data:`split_builders.splitters.partition.ROW_ORDERS`)."""


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
    rows are kept together in one split (:meth:`SplitMethod.groups`); ``row_order`` is the rule every draw
    and tie-break follows (``content``: the rows' content keys and the seed; ``position``: their order in
    the source, the reference generators' and every release's before the rule was recorded; see
    :data:`split_builders.splitters.partition.ROW_ORDERS`).
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
    row_order: str = option("content", "what every random draw and tie-break follows: content (each row's content "
                                       "key and the seed: the same rows in any order give the same configs) or "
                                       "position (the rows' order in the source, as the reference generators draw "
                                       "and as releases built before this option)", choices=ROW_ORDERS,
                            group="common", metavar="RULE")
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
        check_conflicts(self)
        check_label_not_input(self)
        if self.license is not None:
            self.license = check_license(self.license, "--license")
        if self.language is not None:
            self.language = check_languages(self.language, "--language")
        if self.org is not None:  # the card's load snippet prints ORG/<--out folder name>: a Hub id, or refused
            self.org = check_repo_id(self.org, "--org", namespace=True)
            from pathlib import Path

            check_repo_id(f"{self.org}/{Path(str(self.out)).name}", f"--org {self.org} names the release "
                          f"ORG/<--out folder name>, and")
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
            if not any(typing.get_origin(m) is tuple or m is tuple for m in members):
                continue
            value = getattr(self, spec.name)
            _refuse_empty_list(spec, value)
            if not any(typing.get_origin(m) is tuple for m in members):
                continue
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


def flag_name(name: str) -> str:
    """An option's command-line flag (``validation_size`` -> ``--validation-size``)."""
    return "--" + name.replace("_", "-")


def _default(spec):
    if spec.default is not dataclasses.MISSING:
        return spec.default
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else None


def _given(spec, value) -> bool:
    """Whether an option was set away from its default (what a contradiction needs)."""
    default = _default(spec)
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return tuple(value) != tuple(default)
    return value is not None and value != default


def _given_flag(spec) -> str:
    """The flag that set an option away from its default: ``--no-NAME`` for a switch that is on by default."""
    return ("--no-" if _default(spec) is True else "--") + spec.name.replace("_", "-")


def check_conflicts(options) -> None:
    """Refuse two options given together that contradict each other (:func:`option`'s ``conflicts``:
    ``--train-size`` sizes train and leaves the rest to evaluation, so ``--test-size`` would be ignored),
    in one line naming both, before any work."""
    specs = {spec.name: spec for spec in dataclasses.fields(options)}
    for spec in specs.values():
        for other in spec.metadata.get("conflicts", ()):
            if other in specs and _given(spec, getattr(options, spec.name)) \
                    and _given(specs[other], getattr(options, other)):
                note = spec.metadata.get("conflict_note")
                raise InvalidParameterError(f"{_given_flag(spec)} and {_given_flag(specs[other])} contradict each "
                                            "other" + (f": {note}" if note else "") + "; give only one of them")


def check_label_not_input(options) -> None:
    """Refuse a label field that is also named as an input (:func:`option`'s ``role``: ``--label-field`` against
    ``--text-fields``, ``--query-field``, ...): a model would read the answer from its input, and every score or
    PVI would say nothing about difficulty."""
    specs = dataclasses.fields(options)
    labels = [(s.name, getattr(options, s.name)) for s in specs if s.metadata.get("role") == "label"]
    for label_name, label in labels:
        if not label:
            continue
        for spec in specs:
            if spec.metadata.get("role") != "input":
                continue
            value = getattr(options, spec.name)
            names = (value,) if isinstance(value, str) else tuple(value or ())
            if label in names:
                flag = flag_name(spec.name)
                raise InvalidParameterError(f"the label field {label!r} ({flag_name(label_name)}) is also an input "
                                            f"({flag}): a model would read the answer from its input; leave it out "
                                            f"of {flag}")


def _refuse_empty_list(spec, value) -> None:
    """A list option given empty (``--phenomena ''``, ``configs: []``) is refused rather than read as its
    default (which may be everything): leaving the option out is how to ask for the default."""
    if value is None:
        return
    if isinstance(value, str):
        empty = not any(part.strip() for part in value.split(","))
    elif isinstance(value, (list, tuple)):
        empty = not value or all(isinstance(v, str) and not v.strip() for v in value)
        default = _default(spec)
        if isinstance(default, (list, tuple)) and tuple(default) == tuple(value):
            return
    else:
        return
    if empty:
        shown = f" ({value!r})" if isinstance(value, str) and value else ""
        raise InvalidParameterError(f"{flag_name(spec.name)} is empty{shown}: name at least one value, or leave "
                                    f"{flag_name(spec.name)} out for its default")


# The Hub's license identifiers (https://huggingface.co/docs/hub/repositories-licenses): what a card's
# `license:` may say. "other" is a license the card then describes; "unknown" is what a build states where nobody
# did (push refuses it).
HUB_LICENSES = frozenset("""
apache-2.0 mit openrail bigscience-openrail-m creativeml-openrail-m bigscience-bloom-rail-1.0 bigcode-openrail-m
afl-3.0 artistic-2.0 bsl-1.0 bsd bsd-2-clause bsd-3-clause bsd-3-clause-clear c-uda cc cc0-1.0 cc-by-2.0 cc-by-2.5
cc-by-3.0 cc-by-4.0 cc-by-sa-3.0 cc-by-sa-4.0 cc-by-nc-2.0 cc-by-nc-3.0 cc-by-nc-4.0 cc-by-nd-4.0 cc-by-nc-nd-3.0
cc-by-nc-nd-4.0 cc-by-nc-sa-2.0 cc-by-nc-sa-3.0 cc-by-nc-sa-4.0 cdla-sharing-1.0 cdla-permissive-1.0
cdla-permissive-2.0 wtfpl ecl-2.0 epl-1.0 epl-2.0 etalab-2.0 eupl-1.1 eupl-1.2 agpl-3.0 gfdl gpl gpl-2.0 gpl-3.0 lgpl
lgpl-2.1 lgpl-3.0 isc h-research intel-research lppl-1.3c ms-pl apple-ascl apple-amlr mpl-2.0 odc-by odbl
openrail++ osl-3.0 postgresql ofl-1.1 ncsa unlicense zlib pddl lgpl-lr deepfloyd-if-license llama2 llama3
llama3.1 llama3.2 llama3.3 llama4 gemma fair-noncommercial-research-license unknown other
""".split())


def check_license(value, where: str = "license") -> str:
    """A Hub license identifier (:data:`HUB_LICENSES`, any case), as the Hub spells it (lower case); anything
    else (``'not a license'``, ``'CC BY 4.0'``) is refused in one line before the card states it."""
    text = str(value).strip() if isinstance(value, str) else None
    if text and text.lower() in HUB_LICENSES:
        return text.lower()
    raise InvalidParameterError(f"{where} {value!r} is not a Hub license id; give one such as cc-by-4.0, "
                                "cc-by-sa-4.0, mit, apache-2.0 or other (the Hub's list: "
                                "https://huggingface.co/docs/hub/repositories-licenses)")


def check_repo_id(value, where: str = "repo id", *, namespace: bool = False) -> str:
    """A Hub repository id ``ORG/NAME`` (with ``namespace``: an organisation ``ORG`` alone) by the Hub's own rules
    (``huggingface_hub.utils.validate_repo_id``); anything else (``'bad repo id'``, ``'bad org/x'``) is refused in
    one line naming ``where`` before it is used or printed."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    text = value.strip() if isinstance(value, str) else None
    if text and text.count("/") == (0 if namespace else 1):
        try:
            validate_repo_id(text)
            return text
        except HFValidationError:
            pass
    wanted = "a Hub organisation or user name" if namespace else "a Hub id ORG/NAME"
    raise InvalidParameterError(f"{where} {value!r} is not {wanted}: letters, digits, '-', '_' and '.' only (no "
                                "spaces), at most 96, not starting or ending with '-' or '.'"
                                + ("" if namespace else ", one '/' between the organisation and the name"))


def check_languages(values, where: str = "language") -> tuple:
    """Language codes as the Hub's ``language:`` takes them (ISO 639-1 or 639-3, or a BCP 47 tag such as
    ``en-US``), checked by ``langcodes``; ``'xx'`` or ``'!!'`` is refused in one line naming the code."""
    import langcodes

    codes = (values,) if isinstance(values, str) else tuple(values)
    for code in codes:
        if not isinstance(code, str) or not code.strip() or not langcodes.tag_is_valid(code.strip()):
            raise InvalidParameterError(f"{where}: {code!r} is not a language code; give ISO 639-1 or 639-3 codes "
                                        "(or BCP 47 tags), comma-separated, e.g. en or en,de")
    return tuple(code.strip() for code in codes)


def option_names(options_class) -> dict:
    """``{name: field}`` of every name an option answers to: its field name and each of its flags' aliases
    written as a field name (``--dev-size`` -> ``dev_size``: ``validation_size``)."""
    names = {}
    for spec in dataclasses.fields(options_class):
        names.setdefault(spec.name, spec.name)
        for flag in spec.metadata.get("flags", ()):
            names.setdefault(flag.lstrip("-").replace("-", "_"), spec.name)
    return names


def suggest_option(key: str, options_class, *, among=None) -> str | None:
    """The option ``key`` most likely means, by ``difflib`` over the option names and their aliases
    (``dev_size`` -> ``validation_size``, not ``device``); None when nothing is close. ``among`` limits the
    answer to those field names (a recipe's settable options)."""
    import difflib

    names = {alias: name for alias, name in option_names(options_class).items() if among is None or name in among}
    wanted = key.strip().lstrip("-").replace("-", "_")
    if wanted in names:
        return names[wanted]
    close = difflib.get_close_matches(wanted, sorted(names), n=1)
    return names[close[0]] if close else None


# Keywords that name an option in another library's spelling: scikit-learn's ``random_state`` (the splitters'
# keyword) is the build's ``seed``.
KEYWORD_ALIASES = {"random_state": "seed"}


def resolve_keywords(options_class, values: dict, *, where: str, aliases=None, extra=()) -> dict:
    """``values`` (keyword arguments) by the options' field names, so that one name per option works in Python as on
    the command line: a flag's name as a keyword (``dev_size=`` for ``--dev-size``, i.e. ``validation_size``),
    :data:`KEYWORD_ALIASES` (``random_state=`` is ``seed``) and ``aliases`` (``{keyword: field}``: a method's
    ``--source`` aliases) name the option they stand for. One option named twice (``dev_size=`` and
    ``validation_size=``), and a keyword no option answers to, are refused in one line, the latter
    (:class:`~split_builders.errors.UnknownOptionError`, a ``TypeError`` too) with the option a near miss means
    (``difflib``, :func:`suggest_option`); ``extra`` are the caller's own keywords, offered as suggestions too."""
    import difflib

    from split_builders.errors import UnknownOptionError

    fields = {spec.name for spec in dataclasses.fields(options_class)}
    names = option_names(options_class)
    for alias, name in {**KEYWORD_ALIASES, **dict(aliases or {})}.items():
        if name in fields:
            names.setdefault(alias, name)
    resolved, given_as = {}, {}
    for key, value in values.items():
        name = names.get(key)
        if name is None:
            close = suggest_option(str(key), options_class)
            if close is None or close == key:
                close = next(iter(difflib.get_close_matches(str(key), sorted({*names, *extra}), n=1)), None)
                close = names.get(close, close)
            hint = f"; did you mean {close}=?" if close else f" (its options: {', '.join(sorted(fields))})"
            raise UnknownOptionError(f"{where} has no option {key}={hint}")
        if name in resolved:
            raise InvalidParameterError(f"{given_as[name]}= and {key}= name the same option ({name}); give it once")
        resolved[name], given_as[name] = value, key
    return resolved


def shown(value, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters (a list, an array or a long text given where a name or a
    number was expected is not printed whole in a one-line message)."""
    import reprlib

    short = reprlib.Repr()
    short.maxstring, short.maxother, short.maxlist, short.maxdict = limit, limit, 6, 4
    text = short.repr(value)
    return text if len(text) <= limit + 10 else text[:limit] + "..."


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
        if element is int:  # integer strings too: the CLI's "10,50" or "-5" (the method converts and bounds them)
            return all(_is_int(v) or (isinstance(v, str) and v.strip().lstrip("+-").isdigit()) for v in value)
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
    raise InvalidParameterError(f"{name} must be {' or '.join(wanted)}, got {shown(value)} ({_kind(value)})")


def _plain(value):
    """A value as YAML can hold it (tuples as lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value

