"""What a split method is: the hooks shared code calls (:class:`SplitMethod`, :data:`HOOKS`), what they
hand over (:class:`Loaded`, :class:`SourceInfo`, :class:`Signal`, :class:`Context`) and what a method declares
about its released columns (:class:`Fields`)."""

from __future__ import annotations

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
        Older spellings of ``--source`` that keep working (``--data``, ``--suite``; as keywords ``data=``,
        ``suite=``).
    table_columns : tuple of str or None
        What it reads from a table held in memory (a pandas ``DataFrame``, a ``datasets.Dataset``:
        ``split_builders.split`` and ``build(source=...)``), written as a Parquet file its reader reads as
        ``--source FILE``: ``()`` any table (its field options name the columns), a tuple the columns the table
        must have (TMCD and MCD: ``input`` and ``target``, what their readers produce), None no table at all.
    source_kind : str
        What its source is, in words, for the one line that refuses a table it cannot read (``table_columns``
        None or a column missing): "a CheckList suite file (JSON)".
    signal_columns : dict
        ``{column: kind}`` of the per-row signal columns its released rows carry (``score``, ``pvi``, ...),
        each kind in :data:`SIGNAL_KINDS` (``continuous`` or ``categorical``): ``verify --rescore`` compares
        them row by row with a rebuild; ``diff``, the diagnostics and the card compare their train / test
        distributions as the kind says. Every released row also carries ``source_id``, the row identity
        shared code uses.
    baseline_config : str or None
        The config the evidence compares the others with (the probe's relative error increase): a random
        or standard split of the same rows. None: there is none.
    harness_task : HarnessTask or None
        What an evaluation harness scores on its configs (None: no harness task).
    supports_groups : bool
        Whether its configs keep ``--group-field`` groups whole (it implements :meth:`groups`); the CLI
        offers ``--group-field`` only then.
    evaluation_splits : tuple of str
        The splits a config is evaluated on, in order of preference, each one of ``SPLITS``: a config's
        evaluation split is the first of them it releases (:meth:`evaluation_split`). ``("test",)`` by
        default; CURRICULUM's phenomenon configs release no test split and are evaluated on
        ``validation`` (the paper's test set). The card's "How to load it" and the harness tasks read it.
    harness_groups : dict
        ``{name: (config pattern, ...)}``: auxiliary configs whose harness tasks go into a group of their own,
        ``<group>_<name>``, instead of the release's default group (the one a user runs). A pattern is one of
        :attr:`config_names` (``<...>`` standing for any text: ``<phenomenon>_inoc_<n>``). ``{}`` by default:
        every task is in the default group. CURRICULUM's inoculation configs are evaluated on their
        phenomenon's validation split: in the default group, a zero-shot run would score it once per size.
    report_tables : tuple of str
        Tables of its paper that ``resplit report`` adds to the shared ones (results, gaps, comparisons,
        concurrence), each one of :data:`REPORT_TABLES`: ``curriculum`` (CURRICULUM's zero-shot table of Matthews
        correlations per phenomenon and category), ``g_score`` (BELUGA's G-score per model and scenario: the
        harmonic mean of a model's i.i.d. score, ``resplit report --iid CONFIG``, and its suite score on each
        scenario's configs, :attr:`scenarios`). ``()`` by default. CheckList releases (harness kind
        ``multiple_choice``) get pass rates per functionality and capability from their kind alone.
    scenarios : dict
        ``{scenario: (config pattern, ...)}``: the configs of each scenario of its paper that a report table
        scores together (BELUGA: ``seen``, ``func``, ``class``, ``type``); patterns as in :attr:`harness_groups`.
        ``{}`` by default.
    """

    name: str = ""
    paper: str = ""
    summary: str = ""
    config_names: tuple = ()
    Options: type = CommonOptions
    default_source: str | None = None
    source_aliases: tuple = ()
    table_columns: tuple | None = ()
    source_kind: str = "a CSV / TSV / JSONL / JSON / Parquet file, a bundled sample or a Hub id"
    signal_columns: dict = {}
    baseline_config: str | None = None
    harness_task: HarnessTask | None = None
    supports_groups: bool = False
    evaluation_splits: tuple = ("test",)
    harness_groups: dict = {}
    report_tables: tuple = ()
    scenarios: dict = {}

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
        """A :class:`split_builders.release.cardspec.CardSpec`: text and figure specifications."""
        raise NotImplementedError

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
        them to ``source_id`` (:func:`split_builders.release.verify.by_source_id`). Configs it does not
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


def config_pattern(name: str):
    """A compiled pattern of config names from one of a method's ``config_names``: each ``<...>`` placeholder
    stands for any non-empty text (``<phenomenon>_inoc_<n>`` matches ``verbnet_inoc_10``), the rest literally."""
    import re

    return re.compile("".join(".+" if part.startswith("<") else re.escape(part)
                              for part in re.split(r"(<[^<>]*>)", name) if part))


HOOKS = ("check", "load", "row_keys", "select_rows", "check_loaded", "groups", "signal", "configs", "rows", "fields", "card",
         "pretty_name", "report", "rederive", "config_statistics", "example_arguments")
"""A method's hooks in the order :func:`split_builders.build` calls them (``row_keys`` and
``select_rows`` for ``--dedupe``, before the sizes are checked), then those ``verify`` and ``diff``
call, and the contract tests' example; every method module defines the ones it implements in this order."""

