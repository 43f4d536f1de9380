"""``resplit mcd``: Maximum Compound Divergence splits (Keysers et al. 2020, the CFQ paper).

One dataset whose examples have rule derivations (SCAN, from its grammar; COGS, read from its logical
forms) becomes a release with

* ``mcd``: compound divergence maximised by Keysers et al.'s greedy search while atom divergence
  stays within ``--max-atom-divergence``, with the sizes of their SCAN MCD splits by default (train
  8,365 and test 1,045 of SCAN's 20,910 rows; the same shares of another dataset's rows);
* ``random``: every parseable row split at random in ``mcd``'s train:test proportion (the baseline);
* the MCD splits published with the dataset (SCAN's ``mcd1``, ``mcd2``, ``mcd3``).

``--measure mcd1,mcd2,mcd3`` releases only the named published splits (no search) and prints their
divergences. The signal is each row's atoms and weighted compounds
(:mod:`split_builders.signals.programs.mcd_atoms`); the configs come from
:func:`split_builders.splitters.mcd.mcd_configs`. Every config records its compound and atom divergence
under MCD's definitions in its parameters (``divergences``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.splits import check_size, parse_size
from split_builders.errors import InvalidParameterError, SourceLoadError
from split_builders.splitters.partition import CONTENT, content_keys, in_row_order, recorded_row_order

LANGUAGES = ("scan", "cogs")
PROGRAM_SIDE = {"scan": "input", "cogs": "target"}  # the side of a row its derivation is read from
SCAN_ROWS, SCAN_TRAIN, SCAN_TEST = 20_910, 8_365, 1_045  # Keysers et al.'s SCAN MCD splits
DIVERGENCES = ("compound_divergence", "atom_divergence")  # what diff compares of a config's parameters
PAPER = ("Daniel Keysers, Nathanael Schärli, Nathan Scales, Hylke Buisman, Daniel Furrer, Sergii Kashubin, Nikola "
         "Momchev, Danila Sinopalnikov, Lukasz Stafiniak, Tibor Tihon, Dmitry Tsarkov, Xiao Wang, Marc van Zee and "
         "Olivier Bousquet. 2020. *Measuring Compositional Generalization: A Comprehensive Method on Realistic "
         "Data.* ICLR 2020.")
# The paper's figures for its SCAN MCD splits (compound divergence, atom divergence).
# What only the search reads: given with --measure (no search), each would be ignored.
SEARCH_OPTIONS = ("train_size", "test_size", "max_atom_divergence", "candidates", "restarts", "swaps")
PAPER_DIVERGENCES = {"mcd1": (0.736, 0.015), "mcd2": (0.734, 0.020), "mcd3": (0.735, 0.014)}


@dataclass(kw_only=True)
class MCDOptions(CommonOptions):
    """Options of ``resplit mcd`` (the common ones come from :class:`CommonOptions`)."""

    train_size: int | float = option(SCAN_TRAIN / SCAN_ROWS, "train rows of the mcd config: a count, or a fraction of "
                                                              "the parseable rows (default: the share of Keysers et "
                                                              "al.'s SCAN MCD splits, 8,365 of 20,910)",
                                     parse=parse_size)
    test_size: int | float = option(SCAN_TEST / SCAN_ROWS, "test rows of the mcd config: a count, or a fraction of the "
                                                            "parseable rows (default: the share of the SCAN MCD "
                                                            "splits, 1,045 of 20,910)", parse=parse_size)
    max_atom_divergence: float = option(0.02, "upper bound on the train/test atom divergence the search keeps",
                                        minimum=0, maximum=1, exclusive=("minimum",))
    candidates: int = option(256, "unused rows drawn at each step of the search; the row added is chosen among them",
                             integer=True, minimum=1)
    restarts: int = option(3, "greedy fillings from different random starts; the best goes on to the exchanges",
                           integer=True, minimum=1)
    swaps: int = option(2000, "exchanges between a side and the unused rows tried after the greedy phase",
                        integer=True, minimum=0)
    max_compound_size: int = option(12, "largest compound, in rule applications (12 is more than any SCAN "
                                        "derivation has)", integer=True, minimum=2)
    published: bool = option(True, "add the MCD splits published with the dataset as configs "
                                   "(--no-published leaves them out)")
    measure: tuple[str, ...] = option((), "comma-separated published splits (e.g. mcd1,mcd2,mcd3): release only "
                                          "them, no search, and print their divergences",
                                      conflicts=SEARCH_OPTIONS,
                                      conflict_note="--measure releases the published splits as they are, with no "
                                                    "search, so the search's sizes and settings would be ignored")

    def validate(self) -> None:
        self.train_size = check_size(self.train_size, "train_size", allow_zero=False)
        self.test_size = check_size(self.test_size, "test_size", allow_zero=False)
        if len(set(self.measure)) != len(self.measure):
            raise InvalidParameterError(f"--measure repeats a split: {','.join(self.measure)}")
        if self.measure and not self.published:
            raise InvalidParameterError("--measure names published splits: leave out --no-published")


class MCDMethod(SplitMethod):
    """MCD, random and published MCD configs of one dataset with rule derivations."""

    info = MethodInfo(
        name="mcd",
        paper=PAPER,
        summary="maximum compound divergence splits (Keysers et al.'s atoms, weighted compounds and greedy search)",
        config_names=("mcd", "random", "mcd1", "mcd2", "mcd3"),
        options=MCDOptions,
        signal_columns={"compound_weight": "continuous"},  # each row's total compound weight
        baseline_config="random",
        harness_task=HarnessTask("generation", "exact_match"),
        # A table held in memory is read as NQG's rows are: an input and a target per row.
        table_columns=("input", "target"),
        source_kind=("a GeoQuery / Spider / SCAN / COGS folder, an NQG-format file (input TAB target), a table with "
                     "input and target columns, or a Hub id"),
        default_source=None)

    def load(self, options: MCDOptions) -> Loaded:
        from loading_scripts import load_compositional
        from loading_scripts.source import content_sha256

        src = load_compositional(options.source)
        if len(src) == 0:
            raise SourceLoadError(f"{src.name} holds no rows: there is nothing to split")
        if src.target_language not in LANGUAGES:
            raise InvalidParameterError(f"{src.name}: mcd needs rule derivations, which resplit reads for "
                                        f"{' and '.join(LANGUAGES).upper()} only (this source is {src.target_language}); "
                                        "use resplit tmcd for it")
        filters = {}
        if options.limit is not None and options.limit < len(src):
            filters[f"beyond --limit {options.limit}"] = len(src) - options.limit
            src = src.head(options.limit)
        info = SourceInfo.of(src, content_sha256=content_sha256(src.rows), filters=filters)
        return Loaded(MCDSource(src, src.target_language, options.max_compound_size), info)

    def row_keys(self, loaded: Loaded):
        """Input and target: two rows with both equal are exact duplicates."""
        from loading_scripts.tables import row_keys

        return row_keys(loaded.data.source.rows, ("input", "target"))

    def select_rows(self, loaded: Loaded, keep) -> Loaded:
        """The kept rows; published splits follow them."""
        data = loaded.data
        return Loaded(dataclasses.replace(data, source=data.source.select(keep, "--dedupe")), loaded.info)

    def check_loaded(self, loaded: Loaded, options: MCDOptions) -> None:
        """Published splits named by ``--measure`` exist; the sizes fit the parseable rows (before the
        derivations are weighted: a parse is cheap)."""
        from split_builders.splitters.mcd import split_counts

        data = loaded.data
        check_derivations(data)
        published = mcd_published(data.source)
        unknown = [name for name in options.measure if name not in published]
        if unknown:
            known = ", ".join(published) or "none"
            raise InvalidParameterError(f"--measure {','.join(unknown)}: not a published MCD split of "
                                        f"{Path(data.source.name).name} (published: {known})")
        if not options.measure:
            split_counts(options.train_size, options.test_size, data.parsed.count)

    def signal(self, loaded: Loaded, options: MCDOptions, context) -> Signal:
        data = loaded.data
        found = data.mcd
        weights = np.asarray([sum(c.values()) if c is not None else np.nan for c in found.compounds])
        provenance = {"kind": "MCD atoms and weighted compounds of each row's derivation", "language": data.language,
                      "program_side": PROGRAM_SIDE[data.language], "max_compound_size": options.max_compound_size,
                      "compound_alpha": 0.1, "atom_alpha": 0.5, "parseable_rows": len(found.parsed_rows),
                      "unparseable_rows_excluded": len(found.unparseable),
                      "compounds": len({k for c in found.compounds if c for k in c})}
        summary = (f"{len(found.parsed_rows)} parseable {data.language} derivations"
                   + (f", {len(found.unparseable)} unparseable excluded" if found.unparseable else ""))
        return Signal(MCDSignal(found, weights, progress=context.progress), provenance, summary)

    def configs(self, loaded: Loaded, signal: Signal, options: MCDOptions) -> list:
        from split_builders.splits import membership_sha256
        from split_builders.splitters.mcd import mcd_configs

        src, values = loaded.data.source, signal.values
        published = mcd_published(src) if options.published else {}
        if options.measure:
            published = {name: published[name] for name in options.measure}
        # the row order rule: every draw and tie-break follows the rows' content keys (or their recorded position)
        keys = content_keys(src.rows, ("input", "target")) if options.row_order == CONTENT else None
        return in_row_order(mcd_configs, keys, options.seed, row_numbers=("published",),
                            per_row=dict(atoms=values.found.atoms, compounds=values.found.compounds,
                                      source_ids=src.source_ids),
                            **search_parameters(options), search=not options.measure, published=published,
                            published_from=src.published_from, membership=membership_sha256,
                            progress=values.progress, seconds=values.search_seconds)

    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        """The source rows (text as ``string``) with each row's total compound weight."""
        from loading_scripts.labels import release_rows

        rows = release_rows(loaded.data.source.rows)
        return rows.add_column("compound_weight", np.asarray(signal.values.weights, dtype=np.float64))

    def fields(self, loaded: Loaded, signal: Signal, options: MCDOptions) -> Fields:
        """An input command or sentence and its target program."""
        return Fields("semantic_parsing", text=("input",), query="input", target="target",
                      program_language=loaded.data.language)

    def card(self, loaded: Loaded, signal: Signal, configs: list, options: MCDOptions):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        src = loaded.data.source
        name = Path(src.name).name
        lengths = np.asarray([len(text.split()) for text in src.inputs])
        sections = []
        for config in configs:
            series = {s: lengths[np.asarray(config.indices[s], dtype=np.int64)] for s in ("train", "test")}
            figure = Figure(f"figures/{config.name}.png", config.name, alt="input lengths, train vs test",
                            panels=[Panel("input length (words)", series, kind="discrete")])
            sections.append(Section(f"`{config.name}`", config.description, [figure]))
        return CardSpec(
            title=f"MCD splits of `{name}`",
            intro=(f"Maximum Compound Divergence splits of `{name}` (Keysers et al. 2020): train and test share "
                   "their atoms (the grammar rules and words) in nearly the same proportions, while the compounds "
                   "(combinations of rules) of test are as rare in train as the search could make them; a random "
                   "baseline, and the MCD splits published with the data where there are any."),
            how_built=how_built(loaded, signal, options), configs=sections,
            columns=divergence_columns(configs, complete=not loaded.info.filters))

    def pretty_name(self, loaded: Loaded) -> str:
        return f"MCD splits of {Path(loaded.data.source.name).name}"

    def report(self, result) -> list[str]:
        values = result.signal.values
        lines = []
        for config in result.configs:
            if config.method == "mcd" and not config.parameters["search_met_bound"]:
                lines.append(f"warning: {config.name}: atom divergence "
                             f"{config.parameters['divergences']['atom_divergence']:.4f} is above "
                             f"{config.parameters['max_atom_divergence']:g} (raise --candidates or --swaps)")
        lines.append(f"{'config':<12}{'train':>7}{'test':>7}{'compound div':>14}{'atom div':>10}"
                     f"{'paper compound':>16}{'paper atom':>12}{'seconds':>9}")
        for config in result.configs:
            f = config.parameters["divergences"]
            paper = paper_figures(config, complete=not result.loaded.info.filters)
            seconds = values.search_seconds.get(config.name)  # None: a published or baseline split, not searched
            lines.append(f"{config.name:<12}{len(config.indices['train']):>7}{len(config.indices.get('test', ())):>7}"
                         f"{f['compound_divergence']:>14.4f}{f['atom_divergence']:>10.4f}"
                         f"{(f'{paper[0]:.3f}' if paper else '-'):>16}{(f'{paper[1]:.3f}' if paper else '-'):>12}"
                         f"{(f'{seconds:.1f}' if seconds is not None else '-'):>9}")
        return lines

    def rederive(self, released, record) -> list:
        """``mcd`` and ``random`` re-built from the released rows: together the configs hold every
        parseable row the search drew from (``random`` splits them all), so the compound weights are
        computed again over the same rows, and the search runs again with the recorded options and
        seed. Published splits are not derived: verify compares them with the membership the card
        records."""
        import datasets
        from datasets.table import InMemoryTable

        from loading_scripts.compositional import CompositionalSource
        from split_builders.splitters.mcd import mcd_configs

        configs = record.get("configs", {})
        if not any(entry.get("method") == "mcd" for entry in configs.values()):
            return []
        signal = record.get("signal") or {}
        table = released.all_rows()
        language = signal.get("language")
        source = CompositionalSource(datasets.Dataset(InMemoryTable(table)), name=str(released.folder),
                                     target_language=language, source_id_note="")
        fields = set(self.Options.__dataclass_fields__)
        recorded = {k: v for k, v in (record.get("parameters") or {}).items() if k in fields}
        options = self.Options(**{**recorded, "source": str(released.folder), "out": str(released.folder),
                                  "seed": record["seed"], "published": False, "measure": (),
                                  "row_order": recorded_row_order(record.get("parameters"))})
        data = MCDSource(source, language, options.max_compound_size)
        # the rule the release was built under (position: a release from before it was recorded)
        keys = content_keys(table, ("input", "target")) if options.row_order == CONTENT else None
        built = in_row_order(mcd_configs, keys, options.seed, per_row=dict(atoms=data.mcd.atoms,
                                                                         compounds=data.mcd.compounds),
                             **search_parameters(options))
        return [dataclasses.replace(c, rows=table) for c in built]

    def config_statistics(self, parameters: dict) -> dict:
        """The compound and atom divergence (train against test, MCD's definitions) the config records."""
        figures = parameters.get("divergences") or {}
        return {name: figures[name] for name in DIVERGENCES if name in figures}

    def example_arguments(self, data, work) -> list:
        """The first 1,500 SCAN commands (the published splits keep their rows among them), a short search."""
        return ["--source", str(Path(data) / "data" / "scan"), "--limit", "1500", "--train-size", "600",
                "--test-size", "75", "--candidates", "64", "--restarts", "1", "--swaps", "100"]


@dataclass
class MCDSource:
    """The loaded source, the language its derivations are read in, and (on first use) every row's
    atoms and weighted compounds."""

    source: object  # loading_scripts.compositional.CompositionalSource
    language: str
    max_compound_size: int

    @property
    def programs(self) -> list[str]:
        return self.source.inputs if PROGRAM_SIDE[self.language] == "input" else self.source.targets

    @cached_property
    def parsed(self) -> "Parsed":
        """Every row's derivation read once, before any compound is weighted (:class:`Parsed`)."""
        from split_builders.errors import UnparseableProgramError
        from split_builders.signals.programs.mcd_atoms import EXAMPLE_FUNCTIONS
        from split_builders.signals.programs.scan_grammar import scan_actions

        read, found = EXAMPLE_FUNCTIONS[self.language], Parsed()
        targets = self.source.targets if self.language == "scan" else None
        for row, program in enumerate(self.programs):
            try:
                _, tree = read(program)
            except UnparseableProgramError as error:
                found.first_problem = found.first_problem or str(error)
                continue
            found.count += 1
            if targets is not None:
                expected = scan_actions(tree)
                if expected != " ".join(str(targets[row]).split()):
                    found.wrong = found.wrong or (row, expected)
                    found.wrong_count += 1
        return found

    @cached_property
    def mcd(self):
        from split_builders.signals.programs.mcd_atoms import mcd_rows

        return mcd_rows(self.programs, self.language, max_size=self.max_compound_size)


@dataclass
class Parsed:
    """What reading the rows' derivations found: how many parse, the first reason one does not, and (SCAN) the
    rows whose actions are not what their command means (the first as ``(row, expected actions)``)."""

    count: int = 0
    first_problem: str | None = None
    wrong: tuple | None = None
    wrong_count: int = 0


def check_derivations(data: "MCDSource") -> None:
    """Refuse, before anything is weighted, a source of which no row parses (its first row's reason named: not a
    size nor a format problem) and a SCAN source whose ``OUT`` is not what its ``IN`` means on some row (lines out
    of step: a shifted file reads as valid commands with wrong actions, and would be split without a word)."""
    found, src = data.parsed, data.source
    name = Path(src.name).name
    if found.count == 0:
        side = "command" if PROGRAM_SIDE[data.language] == "input" else "logical form"
        raise InvalidParameterError(f"{name}: none of its {len(src)} row(s) is a {data.language.upper()} {side} its "
                                    f"grammar reads (first: {found.first_problem}); mcd splits rows by their "
                                    "derivations: give a SCAN or COGS source")
    if found.wrong is not None:
        row, expected = found.wrong
        short = lambda actions: " ".join(actions.split()[:6]) + (" ..." if len(actions.split()) > 6 else "")  # noqa: E731
        raise InvalidParameterError(
            f"{name}: {found.wrong_count} of its {found.count} SCAN row(s) have actions that are not what their "
            f"command means (source_id {int(src.source_ids[row])}: {src.inputs[row]!r} has "
            f"{short(src.targets[row])!r}, which should be {short(expected)!r}); the IN and OUT of its lines are out "
            "of step or edited: fix the file")


@dataclass
class MCDSignal:
    """Per row: atoms and weighted compounds (``found``, a :class:`~split_builders.signals.programs.mcd_atoms.MCDRows`)
    and the total compound weight (NaN where unparseable). ``search_seconds`` is for the terminal
    report only (never recorded)."""

    found: object
    weights: np.ndarray
    search_seconds: dict = field(default_factory=dict)
    progress: bool = False


def mcd_published(source) -> dict:
    """The published splits of the source that are MCD splits (SCAN's ``mcd1``...), in order."""
    return {name: split for name, split in source.published.items() if name.startswith("mcd")}


def search_parameters(options: MCDOptions) -> dict:
    """The options :func:`~split_builders.splitters.mcd.mcd_configs` builds with (a build and ``rederive`` alike)."""
    return {"train_size": options.train_size, "test_size": options.test_size,
            "max_atom_divergence": options.max_atom_divergence, "n_candidates": options.candidates,
            "n_swaps": options.swaps, "n_restarts": options.restarts, "random_state": options.seed}


def how_built(loaded: Loaded, signal: Signal, options: MCDOptions) -> list:
    """The card's "how it was built" paragraphs, the definitions in the first."""
    data, found = loaded.data, signal.values.found
    side = PROGRAM_SIDE[data.language]
    paragraphs = [
        f"Definitions (Keysers et al. 2020). Each row's {side} is derived by the `{data.language}` grammar "
        "(SCAN: Lake & Baroni's 18 rules; COGS: its logical form read as a tree of predicates and roles). "
        "**Atoms** are the rules a derivation applies and the example's words (COGS: predicate, role and "
        "constant names), counted once per example. **Compounds** are the connected sub-graphs of the "
        f"rule-application tree with 2 to {options.max_compound_size} rule applications, written as a rule "
        "with the compounds of its included children in right-hand-side order. A compound is **weighted** "
        "by how often it occurs on its own: over all parseable rows, P(G'|G) is the share of occurrences of G "
        "inside an occurrence of a compound G' one rule larger; an occurrence weighs 1 - max P(G'|G), and a "
        "compound's weight in a row is the largest of its occurrences. Distributions are normalised per "
        "split; **atom divergence** is 1 - C_0.5(train || test) over atoms and **compound divergence** "
        "1 - C_0.1(train || test) over compound weights, with the Chernoff coefficient "
        "C_a(P||Q) = sum_k p_k^a q_k^(1-a).",
    ]
    if not options.measure:
        paragraphs.append(
            f"`mcd` is Keysers et al.'s greedy search (seed {options.seed}, best of {options.restarts} random "
            "starts): train and test start from one random row each and grow one row at a time, to the side furthest behind its size, taking among "
            f"{options.candidates} drawn unused rows the one that gives the largest compound divergence while "
            f"atom divergence stays within {options.max_atom_divergence:g} (and, for test, whose atoms all occur "
            f"in train); then {options.swaps} exchanges with unused rows are tried and kept when they raise "
            "compound divergence within the bound. Rows in neither side are unused. `random` splits every "
            "parseable row at random in `mcd`'s train:test proportion.")
    else:
        paragraphs.append(f"Measured only: the published splits {', '.join(options.measure)}, no search.")
    if data.source.dropped_published:
        paragraphs.append("**Published splits left out:** " + "; ".join(data.source.dropped_published) + ".")
    if found.unparseable:
        paragraphs.append(f"**Excluded:** {found.describe_unparseable(data.source.source_ids)}. "
                          "These rows are in no split.")
    return paragraphs


def paper_figures(config, *, complete: bool) -> tuple | None:
    """The paper's (compound, atom) divergence of a published SCAN MCD split, when the source was read
    whole (no --limit or --dedupe: otherwise the config holds only some of the published rows)."""
    return PAPER_DIVERGENCES.get(config.name) if complete and config.method == "published" else None


def divergence_columns(configs: list, *, complete: bool) -> dict:
    """The card's table columns: each config's divergences, the paper's where it reports them, and the origin."""
    figures = {c.name: c.parameters["divergences"] for c in configs}
    paper = {c.name: (f"{p[0]:.3f} / {p[1]:.3f}" if (p := paper_figures(c, complete=complete)) else "-")
             for c in configs}
    return {
        "compound divergence": {k: f"{f['compound_divergence']:.4f}" for k, f in figures.items()},
        "atom divergence": {k: f"{f['atom_divergence']:.4f}" for k, f in figures.items()},
        "paper (compound / atom)": paper,
        "test with unseen atom": {k: f["test_rows_with_unseen_atom"] for k, f in figures.items()},
        "origin": {c.name: c.parameters.get("file", "resplit") if c.method == "published" else f"resplit ({c.method})"
                   for c in configs},
    }
