"""What a split method is: the hooks shared code calls (:class:`SplitMethod`, :data:`HOOKS`), what they
hand over (:class:`Loaded`, :class:`SourceInfo`, :class:`Signal`, :class:`Context`) and what a method declares
about its released columns (:class:`Fields`)."""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from split_builders.errors import InvalidParameterError
from split_builders.options import CommonOptions
from split_builders.splits import SPLITS  # noqa: F401  (the registry checks evaluation_splits against it)


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

    @classmethod
    def of(cls, source, **overrides) -> "SourceInfo":
        """What a source object of ``loading_scripts`` says of itself, in one call: ``name``, ``rows`` (its
        length), ``content_sha256`` (its ``content_hash()``), ``revision``, ``filters`` (``filtered``),
        ``source_id`` (``source_id_note``), ``license``, ``citation``, ``language`` and ``hub_id``, each where
        it has one; ``overrides`` replace any of them (what the method read differently: the rows it kept,
        its own filters). ``source`` may be None (a plain file): the overrides then say it all."""
        read = lambda attribute, default=None: getattr(source, attribute, default)
        values = {"name": read("name"), "revision": read("revision"), "filters": dict(read("filtered") or {}),
                  "source_id": read("source_id_note", cls.source_id), "license": read("license"),
                  "citation": read("citation"), "language": read("language"), "hub_id": read("hub_id")}
        if "rows" not in overrides:
            values["rows"] = len(source)
        if "content_sha256" not in overrides and source is not None:  # the one hash of the canonical rows
            values["content_sha256"] = source.content_hash()
        return cls(**{**values, **overrides})

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
SIGNAL_KINDS = ("continuous", "categorical")
"""How shared code reads a signal column: ``continuous`` (means, Kolmogorov-Smirnov distances, percentiles
against random splits) or ``categorical`` (ids: shares of held-out values, total-variation distances)."""
HARNESS_KINDS = ("classification", "multiple_choice", "generation")
REPORT_TABLES = ("curriculum", "g_score")
"""Tables of a paper a method may ask ``resplit report`` for (:attr:`SplitMethod.report_tables`)."""


@dataclass(frozen=True)
class HarnessTask:
    """What an evaluation harness scores on a method's configs.

    ``kind``: ``classification`` (the label, its choices the label names in class order), ``multiple_choice``
    (each example brings its own choices: CheckList test cases whose label is the expected prediction) or
    ``generation`` (the target text, scored by ``metric``). ``metric``: the harness metric (``acc`` for the
    first two, ``exact_match`` for generation by default).
    """

    kind: str
    metric: str | None = None

    def __post_init__(self):
        if self.kind not in HARNESS_KINDS:
            raise ValueError(f"harness kind must be one of {', '.join(HARNESS_KINDS)}; got {self.kind!r}")
        if self.metric is None:
            object.__setattr__(self, "metric", "exact_match" if self.kind == "generation" else "acc")

    def record(self) -> dict:
        return {"kind": self.kind, "metric": self.metric}

    @classmethod
    def for_task(cls, task: str) -> "HarnessTask | None":
        """What a release that records no harness task is scored as, from its :class:`Fields` task: CheckList test
        cases as multiple choice, semantic parsing as generation, classification as classification; text: none."""
        kind = {"behavioural": "multiple_choice", "semantic_parsing": "generation",
                "classification": "classification"}.get(task)
        return cls(kind) if kind else None

    @classmethod
    def from_record(cls, value) -> "HarnessTask | None":
        if not isinstance(value, dict) or value.get("kind") not in HARNESS_KINDS:
            return None
        return cls(value["kind"], value.get("metric"))


@dataclass
class Fields:
    """What the columns of a method's released rows are, for the shared code that reads them
    (the leakage audit, diagnostics, the baseline probe, harness tasks, the card's Hub metadata).

    A method declares it with :meth:`SplitMethod.fields` and its class attributes (``signal_columns``,
    ``baseline_config``, ``harness_task``); the build records it as ``resplit.fields``.

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
    program_language : str or None
        The language of the target programs (``sql``, ``funql``, ...), where known.
    signals : dict
        ``{column: kind}`` of the per-row signal columns (kinds in :data:`SIGNAL_KINDS`).
    baseline : str or None
        The config evidence compares the others with (a random or standard split).
    harness : HarnessTask or None
        What an evaluation harness scores.
    """

    task: str
    text: tuple = ()
    query: str | None = None
    label: str | None = None
    label_names: tuple | None = None
    target: str | None = None
    group: str | None = None
    program_language: str | None = None
    signals: dict = field(default_factory=dict)
    baseline: str | None = None
    harness: HarnessTask | None = None

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {', '.join(TASKS)}; got {self.task!r}")
        self.text = tuple(dict.fromkeys(f for f in self.text if f))
        if self.label_names is not None:
            self.label_names = tuple(str(name) for name in self.label_names)
        self.signals = dict(self.signals or {})
        wrong = {c: k for c, k in self.signals.items() if k not in SIGNAL_KINDS}
        if wrong:
            raise ValueError(f"signal kinds must be one of {', '.join(SIGNAL_KINDS)}; got {wrong}")

    def signal_kind(self, column: str) -> str | None:
        """The declared kind of a signal column (None: not a declared signal)."""
        return self.signals.get(column)

    def record(self) -> dict:
        """The ``resplit.fields`` mapping (plain types, YAML-ready)."""
        return {"task": self.task, "text": list(self.text), "query": self.query, "label": self.label,
                "label_names": list(self.label_names) if self.label_names is not None else None,
                "target": self.target, "group": self.group, "program_language": self.program_language,
                "signals": dict(self.signals), "baseline": self.baseline,
                "harness": self.harness.record() if self.harness is not None else None}

    @classmethod
    def from_record(cls, record: dict | None) -> "Fields | None":
        """The fields a release's provenance (``resplit:``) records; None for releases without them."""
        value = (record or {}).get("fields")
        if not isinstance(value, dict) or value.get("task") not in TASKS:
            return None
        signals = value.get("signals")
        return cls(task=value["task"], text=tuple(value.get("text") or ()), query=value.get("query"),
                   label=value.get("label"), label_names=value.get("label_names"), target=value.get("target"),
                   group=value.get("group"), program_language=value.get("program_language"),
                   signals={str(c): k for c, k in signals.items() if k in SIGNAL_KINDS} if isinstance(signals, dict)
                   else {},
                   baseline=value.get("baseline"), harness=HarnessTask.from_record(value.get("harness")))

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


_NAME_PATTERN = r"[a-z0-9]+(_[a-z0-9]+)*"
SOURCE_KIND = "a CSV / TSV / JSONL / JSON / Parquet file, a bundled sample or a Hub id"


@dataclass(frozen=True)
class MethodInfo:
    """Everything a split method declares about itself, in one object (as an ``evaluate`` module returns its
    ``EvaluationModuleInfo``): who it is, and what shared code would otherwise have to guess. Checked when it is
    made, so a method whose declarations shared code cannot read fails at its class definition, in one line that
    names the declaration. A method sets ``info = MethodInfo(...)`` in its class body; its attributes are then
    also readable as the class attributes of the same names (``Options`` for ``options``).

    Attributes
    ----------
    name : str
        Registry key and CLI subcommand (any name: it need not be a module's).
    paper : str
        The paper it implements (``resplit list``, provenance).
    summary : str
        One line for ``resplit list`` and the CLI help.
    config_names : tuple of str
        The configs it can build; ``<...>`` in a name stands for any text (``func_<i>``).
    options : type
        Its options dataclass (a subclass of :class:`CommonOptions`): CLI flags, recipe keys, provenance.
    signal_columns : dict
        ``{column: kind}`` of the per-row signal its released rows carry, each kind in :data:`SIGNAL_KINDS`.
    baseline_config : str or None
        The config evidence compares the others with (one of ``config_names``); None: none.
    harness_task : HarnessTask or None
        What an evaluation harness scores on its configs; None: no harness task.
    evaluation_splits : tuple of str
        The splits a config is evaluated on, in order of preference, each in ``SPLITS``.
    harness_groups, scenarios : dict
        ``{name: (config pattern, ...)}``: auxiliary harness groups; the scenarios a report table scores.
    report_tables : tuple of str
        Tables of its paper ``resplit report`` adds, each in :data:`REPORT_TABLES` (``g_score`` needs ``scenarios``).
    table_columns : tuple of str or None
        What it reads from a table held in memory: ``()`` any table, the columns a table must have, None none.
    source_kind : str
        What its source is, in words (the one line that refuses a table it cannot read).
    default_source : str or None
        The source used when none is given (None: ``--source`` is required).
    source_aliases : tuple of str
        Older spellings of ``--source`` that keep working.
    requires : tuple of str
        The distributions (as pip names them: ``"scikit-learn"``) whose code computes its signal or configs: their
        installed versions are recorded in every release's provenance (``resplit.built_by.requires``).
    signal_tolerance : float
        How far two runs with the same seed may move a numeric signal value (0: bit for bit, the default). A
        signal that is legitimately stochastic (nondeterministic kernels, a sampled model) declares its bound;
        ``check_method``'s determinism check then holds it to that bound, and to the same configs wherever the
        signal came out the same.

    Whether it keeps ``--group-field`` groups whole is not declared: it does exactly when it implements
    :meth:`SplitMethod.groups`.
    """

    name: str
    paper: str
    summary: str
    config_names: tuple
    options: type = CommonOptions
    signal_columns: dict = field(default_factory=dict)
    baseline_config: str | None = None
    harness_task: HarnessTask | None = None
    evaluation_splits: tuple = ("test",)
    harness_groups: dict = field(default_factory=dict)
    report_tables: tuple = ()
    scenarios: dict = field(default_factory=dict)
    table_columns: tuple | None = ()
    source_kind: str = SOURCE_KIND
    default_source: str | None = None
    source_aliases: tuple = ()
    requires: tuple = ()
    signal_tolerance: float = 0.0

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """Raise :class:`InvalidParameterError`, in one line naming the declaration, where shared code could not
        read one: a name that is empty or not a string, ``options`` not derived from :class:`CommonOptions`, a
        signal kind outside :data:`SIGNAL_KINDS`, a harness task that is not a :class:`HarnessTask`, a baseline
        that is not one of ``config_names``, an evaluation split outside ``SPLITS``, harness groups or scenarios
        whose patterns are not among ``config_names``, an unknown report table (or ``g_score`` without scenarios)."""
        import re

        name = self.name
        if not name or not isinstance(name, str):
            raise InvalidParameterError(f"a split method has no name (a non-empty string); got {name!r}")
        if not isinstance(self.config_names, tuple) or not all(isinstance(c, str) for c in self.config_names):
            raise InvalidParameterError(f"{name}: config_names must be a tuple of config names; got "
                                        f"{self.config_names!r}")
        if not (isinstance(self.options, type) and issubclass(self.options, CommonOptions)):
            raise InvalidParameterError(f"{name}: Options must be a dataclass derived from CommonOptions")
        columns = self.signal_columns
        if not isinstance(columns, dict) or any(kind not in SIGNAL_KINDS for kind in columns.values()):
            raise InvalidParameterError(f"{name}: signal_columns must map each signal column to one of "
                                        f"{', '.join(SIGNAL_KINDS)}; got {columns!r}")
        if self.harness_task is not None and not isinstance(self.harness_task, HarnessTask):
            raise InvalidParameterError(f"{name}: harness_task must be a HarnessTask or None; got "
                                        f"{self.harness_task!r}")
        if self.baseline_config is not None and self.baseline_config not in self.config_names:
            raise InvalidParameterError(f"{name}: baseline_config {self.baseline_config!r} is not one of its "
                                        f"config_names ({', '.join(self.config_names)})")
        splits = self.evaluation_splits
        if not isinstance(splits, tuple) or not splits or any(split not in SPLITS for split in splits):
            raise InvalidParameterError(f"{name}: evaluation_splits must be a non-empty tuple of {', '.join(SPLITS)}; "
                                        f"got {splits!r}")
        for attribute in ("harness_groups", "scenarios"):
            groups = getattr(self, attribute)
            if not isinstance(groups, dict) or any(
                    not isinstance(group, str) or not re.fullmatch(_NAME_PATTERN, group)
                    or not isinstance(patterns, tuple) or not patterns
                    or any(pattern not in self.config_names for pattern in patterns)
                    for group, patterns in groups.items()):
                raise InvalidParameterError(f"{name}: {attribute} must map a name ([a-z0-9_]) to a non-empty tuple of "
                                            f"its config_names ({', '.join(self.config_names)}); got {groups!r}")
        tables = self.report_tables
        if not isinstance(tables, tuple) or any(table not in REPORT_TABLES for table in tables):
            raise InvalidParameterError(f"{name}: report_tables must be a tuple of {', '.join(REPORT_TABLES)}; got "
                                        f"{tables!r}")
        if "g_score" in tables and not self.scenarios:
            raise InvalidParameterError(f"{name}: report_tables names g_score, which scores each of its scenarios: "
                                        "declare them (scenarios = {scenario: (config pattern, ...)})")
        tolerance = self.signal_tolerance
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < float("inf"):
            raise InvalidParameterError(f"{name}: signal_tolerance must be a finite number >= 0 (0: the signal is the "
                                        f"same bit for bit under one seed); got {tolerance!r}")
        if not isinstance(self.requires, tuple) or not all(isinstance(d, str) and d.strip() for d in self.requires):
            raise InvalidParameterError(f"{name}: requires must be a tuple of distribution names (e.g. "
                                        f"('scikit-learn',)); got {self.requires!r}")
        if self.table_columns is not None and not isinstance(self.table_columns, tuple):
            raise InvalidParameterError(f"{name}: table_columns must be a tuple of column names or None; got "
                                        f"{self.table_columns!r}")

    @classmethod
    def of_attributes(cls, method: type) -> "MethodInfo":
        """The info a class that declares its parts as class attributes (``name = ...``, ``Options = ...``; the
        style before :class:`MethodInfo`) stands for, checked."""
        values = {f.name: getattr(method, INFO_ATTRIBUTES[f.name]) for f in dataclasses.fields(cls)}
        return cls(**values)


INFO_ATTRIBUTES = {"name": "name", "paper": "paper", "summary": "summary", "config_names": "config_names",
                   "options": "Options", "signal_columns": "signal_columns", "baseline_config": "baseline_config",
                   "harness_task": "harness_task", "evaluation_splits": "evaluation_splits",
                   "harness_groups": "harness_groups", "report_tables": "report_tables", "scenarios": "scenarios",
                   "table_columns": "table_columns", "source_kind": "source_kind", "default_source": "default_source",
                   "source_aliases": "source_aliases", "requires": "requires", "signal_tolerance": "signal_tolerance"}
"""Each :class:`MethodInfo` field and the class attribute of a :class:`SplitMethod` that reads it (shared code written
before the info object reads the attributes)."""


class _InfoOfAttributes:
    """``SplitMethod.info`` of a class that declares class attributes instead of ``info``: made from them (and
    checked) when first read, per class."""

    def __get__(self, instance, owner):
        cached = owner.__dict__.get("_info_of_attributes")
        if cached is None:
            cached = MethodInfo.of_attributes(owner)
            owner._info_of_attributes = cached
        return cached


REQUIRED_HOOKS = ("load", "signal", "configs", "rows", "card")
"""The hooks every method implements (abstract in :class:`SplitMethod`: a class without one of them cannot be
registered, and :func:`~split_builders.registry.register` names it); the others have defaults."""


class SplitMethod(abc.ABC):
    """Base class of a split family: a :class:`MethodInfo` (``info = MethodInfo(...)`` in the class body) and the
    hooks shared code calls, in the order of :data:`HOOKS`. ``load``, ``signal``, ``configs``, ``rows`` and ``card``
    (:data:`REQUIRED_HOOKS`) are abstract: :func:`~split_builders.registry.register` refuses a class that leaves one
    out, naming it, before anything is built. The others have defaults. Each hook's docstring says what it receives
    and returns. :func:`split_builders.testing.check_method` runs the conformance checks on a method.

    The info's fields are also readable as class attributes of the same names (``Options`` for ``options``), and
    a class may still declare those attributes instead of ``info`` (the info is then made from them, and checked,
    when first read). ``supports_groups`` is not declared: it is true exactly when the class implements
    :meth:`groups`.
    """

    info = _InfoOfAttributes()
    # The info's fields as class attributes (a class that declares ``info`` has them copied from it).
    name: str = ""
    paper: str = ""
    summary: str = ""
    config_names: tuple = ()
    Options: type = CommonOptions
    default_source: str | None = None
    source_aliases: tuple = ()
    table_columns: tuple | None = ()
    source_kind: str = SOURCE_KIND
    signal_columns: dict = {}
    baseline_config: str | None = None
    harness_task: HarnessTask | None = None
    evaluation_splits: tuple = ("test",)
    harness_groups: dict = {}
    report_tables: tuple = ()
    scenarios: dict = {}
    requires: tuple = ()
    signal_tolerance: float = 0.0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("info")
        if isinstance(declared, MethodInfo):  # its fields as the class attributes shared code reads
            for field_name, attribute in INFO_ATTRIBUTES.items():
                setattr(cls, attribute, getattr(declared, field_name))
        elif declared is None and any(attribute in cls.__dict__ for attribute in INFO_ATTRIBUTES.values()):
            cls.info = _InfoOfAttributes()  # declared (or overridden) as attributes: the info follows them

    @property
    def supports_groups(self) -> bool:
        """Whether its configs keep ``--group-field`` groups whole: exactly when it implements :meth:`groups` (the
        CLI offers ``--group-field`` only then)."""
        return type(self).groups is not SplitMethod.groups

    def evaluation_split(self, splits) -> str | None:
        """The split a config that releases ``splits`` is evaluated on: the first of :attr:`evaluation_splits`
        among them; None when it releases none of them (it has no evaluation split)."""
        return next((split for split in self.evaluation_splits if split in tuple(splits)), None)

    def harness_group(self, config: str) -> str | None:
        """The auxiliary harness group (a key of :attr:`harness_groups`) whose patterns the config name ``config``
        matches; None: the config's task is in the default group."""
        return next((name for name, patterns in self.harness_groups.items()
                     if any(config_pattern(pattern).fullmatch(config) for pattern in patterns)), None)

    def scenario(self, config: str) -> str | None:
        """The scenario (a key of :attr:`scenarios`) whose patterns the config name ``config`` matches, or None."""
        return next((name for name, patterns in self.scenarios.items()
                     if any(config_pattern(pattern).fullmatch(config) for pattern in patterns)), None)

    def options(self, **values) -> CommonOptions:
        """The method's options from keyword values (validated; the default source filled in). A flag's name is a
        keyword too (``dev_size=`` is ``validation_size``, ``random_state=`` is ``seed``, a ``--source`` alias
        is ``source``); a keyword that names no option is refused in one line, with the option a near miss
        means (:func:`~split_builders.options.resolve_keywords`)."""
        from split_builders.options import resolve_keywords

        values = resolve_keywords(self.Options, values, where=self.name,
                                  aliases={alias.lstrip("-").replace("-", "_"): "source" for alias in self.source_aliases})
        if values.get("source") is None:
            if self.default_source is None:
                flags = ", ".join(("--source", *self.source_aliases))
                raise InvalidParameterError(f"{self.name} needs a source ({flags})")
            values["source"] = self.default_source
        return self.Options(**values)

    def check(self, options) -> None:
        """Checks that read little or nothing (a file exists, a field list is well formed); run
        with the output location check, before ``load``."""

    @abc.abstractmethod
    def load(self, options) -> Loaded:
        """Read the source. Receives the validated options (``options.source``, ``options.limit``, its field options);
        returns a :class:`Loaded`: the method's own object of canonical rows (``data``) and a :class:`SourceInfo`
        (name, rows, a content hash or revision, what was filtered). Raises in one line for a missing file or
        field (:class:`~split_builders.errors.FieldError`)."""

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

    @abc.abstractmethod
    def signal(self, loaded: Loaded, options, context: Context) -> Signal:
        """The expensive step: what the method computes per row (scores, PVI, atoms, overlaps), cached and resumable
        where it is costly. Receives the loaded rows (``loaded.groups`` set with ``--group-field``), the options and
        a :class:`Context` (progress, log). Returns a :class:`Signal`: ``values`` (its own object), ``provenance``
        (recorded as ``resplit.signal``; a given file as ``provenance["given"] = {file, sha256}``) and a one-line
        ``summary``."""

    @abc.abstractmethod
    def configs(self, loaded: Loaded, signal: Signal, options) -> list:
        """Every config: a list of :class:`~split_builders.splits.ConfigSplit` (name, sorted ``train`` /
        ``validation`` / ``test`` row numbers of the rows :meth:`rows` releases, ``method``, ``parameters`` that
        :meth:`rederive` reads back, a description), from the family's config builder in ``splitters/`` run
        through :func:`~split_builders.splitters.partition.in_row_order` (the row order rule). Grouped configs
        record ``grouped_by`` (:func:`~split_builders.splitters.groups.group_parameters`)."""

    @abc.abstractmethod
    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        """The release's rows (canonical fields plus signal columns), or None when every config
        brings its own rows. Receives what :meth:`load`, :meth:`signal` and :meth:`configs` returned; returns a
        ``datasets.Dataset`` of the canonical fields, ``source_id`` and the declared ``signal_columns``."""

    def fields(self, loaded: Loaded, signal: Signal, options) -> Fields | None:
        """What the released rows' columns are (:class:`Fields`: text, query, label and its names,
        target, group), recorded as ``resplit.fields`` for the audit, diagnostics, probe, harness
        tasks and Hub metadata. None: shared code infers them from the column types."""
        return None

    @abc.abstractmethod
    def card(self, loaded: Loaded, signal: Signal, configs: list, options):
        """The method's part of the card: a :class:`split_builders.cardspec.CardSpec` (title, intro, how the
        splits were built, one section per config with figure specifications), plain data with no I/O; the shared
        skeleton, the evidence views' sections and the figures' drawing are added by the build."""

    def pretty_name(self, loaded: Loaded) -> str:
        return f"{self.name} splits of {loaded.info.name}"

    def report(self, result) -> list[str]:
        """Lines the CLI prints after a build (the shared summary table comes first)."""
        return []

    def rederive(self, released, record: dict) -> list:
        """Every config's splits re-derived from the released rows alone (``resplit verify`` level 2).

        ``released`` is a :class:`split_builders.release.folder.Released` (the release's rows per
        config and split); ``record`` its ``resplit:`` provenance (parameters, seed, signal). The
        partition is a pure function of the per-row signal the rows carry, so this needs no source,
        no model and no GPU: map the released rows back to the inputs of the family's config builder
        (the function in :mod:`split_builders.splitters` that :meth:`configs` calls) and return what
        that same builder returns, a list of :class:`~split_builders.splits.ConfigSplit` whose indices
        count the released rows (``released.all_rows()``, or the config's own ``rows``). Shared code maps
        them to ``source_id`` (:func:`split_builders.publishing.verify.by_source_id`). Configs it does not
        return are reported as not checked.
        """
        return []

    def config_statistics(self, parameters: dict) -> dict:
        """Numbers a config's recorded ``parameters`` hold that ``resplit diff`` compares across
        versions (TMCD's compound and atom divergences, say): ``{name: value}``."""
        return {}


    def example_arguments(self, data, work) -> list | None:
        """Command-line arguments (after the subcommand, without ``--out``) that build a small real release of
        this method in seconds, from ``data`` (a folder laid out as the project's shared data: ``data/...``,
        ``reference/...``) with scratch files in ``work``. The contract tests build every registered method
        with them, and ``benchmarks/release_hashes.py`` compares those builds across versions. None: no
        example (the contract tests refuse such a method)."""
        return None

    def group_example(self, data, work, values) -> tuple | None:
        """Where the method implements :meth:`groups`: ``(arguments, field)``, command-line arguments (as
        :meth:`example_arguments`, with ``--group-field``) that build a small real release whose source has a
        group column ``field`` holding ``values`` (one per row; None or NaN: no value). The group checks of
        :func:`split_builders.testing.check_method` build it with groups of several shapes. None: no example."""
        return None


def config_pattern(name: str):
    """A compiled pattern of config names from one of a method's ``config_names``: each ``<...>`` placeholder
    stands for any non-empty text (``<phenomenon>_inoc_<n>`` matches ``verbnet_inoc_10``), the rest literally."""
    import re

    return re.compile("".join(".+" if part.startswith("<") else re.escape(part)
                              for part in re.split(r"(<[^<>]*>)", name) if part))


HOOKS = ("check", "load", "row_keys", "select_rows", "check_loaded", "groups", "signal", "configs", "rows", "fields",
         "card", "pretty_name", "report", "rederive", "config_statistics", "example_arguments", "group_example")
"""A method's hooks in the order :func:`split_builders.build` calls them (``row_keys`` and
``select_rows`` for ``--dedupe``, before the sizes are checked), then those ``verify`` and ``diff``
call, and the contract tests' example; every method module defines the ones it implements in this order."""

