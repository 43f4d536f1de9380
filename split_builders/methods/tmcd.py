"""``resplit tmcd``: compositional splits (Shaw et al. 2021, as used by Sun, Williams & Hupkes 2023).

One dataset of (input, program) pairs (GeoQuery, Spider, SCAN, COGS, an NQG-format file or a Hub
id) becomes a release with

* the configs resplit builds (``--configs``): ``tmcd`` (maximum compound divergence under the atom
  constraint), ``length`` (longest inputs to test), ``template`` (no program template in both
  train and test) and ``standard`` (random);
* the splits published with the dataset (``published_*``, SCAN's ``mcd1``..., COGS's ``gen``);
* with ``--lexical``, a wug-word copy of every one of them (``<config>_rstr``, ``<config>_rcvcv``);
* with ``--scores``, Likelihood Splits from given log-likelihoods (``ll_split*``) beside TMCD.

The signal is each row's atoms and compounds (:mod:`split_builders.signals.programs`); rows whose
program cannot be parsed are in no split. The configs come from
:func:`split_builders.splitters.compositional.compositional_configs`. The card reports compound and
atom divergence of every config, and provenance records them in each config's parameters.
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
from split_builders.errors import InvalidParameterError
from split_builders.splitters.compositional import BUILT
from split_builders.splitters.partition import CONTENT, content_keys, in_row_order, recorded_row_order
from split_builders.splitters.restarts import recorded_restarts
from split_builders.splitters.tmcd import DEFAULT_RESTARTS

TARGET_LANGUAGES = ("funql", "sql", "scan", "cogs")
# The side of a row whose structure the atoms and compounds describe.
PROGRAM_SIDE = {"funql": "target", "sql": "target", "scan": "input", "cogs": "target"}
DEFAULT_TRAIN_SHARE = 0.5
DIVERGENCES = ("compound_divergence", "atom_divergence")  # what diff compares of a config's parameters
PAPER = ("Peter Shaw, Ming-Wei Chang, Panupong Pasupat and Kristina Toutanova. 2021. *Compositional "
         "Generalization and Natural Language Variation: Can a Semantic Parsing Approach Handle Both?* "
         "ACL 2021 (TMCD splits); as used by Kaiser Sun, Adina Williams and Dieuwke Hupkes. 2023. *The "
         "Validity of Evaluation Results: Assessing Concurrence Across Compositionality Benchmarks.* CoNLL 2023.")


@dataclass(kw_only=True)
class TMCDOptions(CommonOptions):
    """Options of ``resplit tmcd`` (the common ones come from :class:`CommonOptions`)."""

    target_language: str | None = option(None, "atom/compound definition (default: from the source)",
                                         choices=TARGET_LANGUAGES)
    train_size: int | float | None = option(None, "train rows: a count in (0, parseable rows) or a fraction in "
                                                  "(0, 1) (default: half of the parseable rows)", parse=parse_size)
    configs: tuple[str, ...] = option(("tmcd",), f"comma-separated subset of {','.join(BUILT)}")
    reference: bool = option(False, "TMCD by Shaw et al.'s first-improvement greedy (1000 iterations; "
                                    "reproduces tmcd_1.json with --seed 1 --row-order position)",
                             conflicts=("iterations", "max_atom_divergence", "restarts"),
                             conflict_note="the reference search runs its own 1000 iterations once, without an "
                                           "atom divergence bound")
    iterations: int = option(50_000, "annealing steps of the TMCD search (at least 1: without a step the search "
                                     "returns its random start split)", integer=True, minimum=1)
    max_atom_divergence: float = option(0.05, "upper bound on the train/test atom divergence the TMCD search keeps",
                                        minimum=0, maximum=1, exclusive=("minimum",))
    restarts: int = option(DEFAULT_RESTARTS, "annealing runs of the TMCD search, each from its own start seeded from "
                                             "--seed; the best split within the atom bound is kept", integer=True,
                           minimum=1)
    validation_size: int | float = option(0, "rows of each built config's test moved to a validation split: a count, "
                                             "or a fraction of test (default 0: none)", parse=parse_size)
    lexical: bool = option(False, "add <config>_rstr and <config>_rcvcv wug-word variants")
    published: bool = option(True, "add the splits published with the dataset as configs "
                                       "(--no-published leaves them out)")
    scores: str | None = option(None, ".npy of log-likelihoods, one per row: adds ll_split* configs beside TMCD",
                                record=False)

    def validate(self) -> None:
        unknown = [c for c in self.configs if c not in BUILT]
        if unknown or not self.configs:
            raise InvalidParameterError(f"unknown config(s) {unknown}; known: {', '.join(BUILT)}" if unknown
                                        else f"configs must name at least one of {', '.join(BUILT)}")
        if len(set(self.configs)) != len(self.configs):
            raise InvalidParameterError(f"configs repeat: {', '.join(self.configs)}")
        if self.train_size is not None:
            self.train_size = check_size(self.train_size, "train_size", allow_zero=False)
        self.validation_size = check_size(self.validation_size, "validation_size")
        if self.reference and self.group_field is not None:
            raise InvalidParameterError("--reference reproduces Shaw et al.'s per-example search and cannot keep "
                                        "groups whole: leave out --group-field or --reference")


class TMCDMethod(SplitMethod):
    """TMCD, length, template, standard, published and lexical-variant configs of one dataset."""

    info = MethodInfo(
        name="tmcd",
        paper=PAPER,
        summary=("compositional splits (TMCD, length, template, standard; published splits; wug-word variants) "
                 "with atom and compound divergence"),
        config_names=(*BUILT, "published_*", "<config>_rstr", "<config>_rcvcv"),
        options=TMCDOptions,
        signal_columns={"score": "continuous"},  # the given log-likelihoods the ll_split* configs were split by (--scores)
        baseline_config="standard",
        harness_task=HarnessTask("generation", "exact_match"),
        # A table held in memory is read as NQG's rows are: an input and a target per row.
        table_columns=("input", "target"),
        source_kind=("a GeoQuery / Spider / SCAN / COGS folder, an NQG-format file (input TAB target), a table with "
                     "input and target columns, or a Hub id"),
        default_source=None)

    def check(self, options: TMCDOptions) -> None:
        if options.scores is not None:  # missing, a folder, a FIFO: said as what it is
            from loading_scripts.files import check_file

            check_file(options.scores, "scores file", "a .npy file of log-likelihoods (numpy.save)")

    def load(self, options: TMCDOptions) -> Loaded:
        from loading_scripts import load_compositional
        from loading_scripts.source import content_sha256

        src = load_compositional(options.source)
        input_rows = len(src)
        filters = {}
        if options.limit is not None and options.limit < len(src):
            filters[f"beyond --limit {options.limit}"] = len(src) - options.limit
            src = src.head(options.limit)
        info = SourceInfo.of(src, content_sha256=content_sha256(src.rows), filters=filters)
        return Loaded(CompositionalRows(src, options.target_language or src.target_language, input_rows), info)

    def row_keys(self, loaded: Loaded):
        """Input and target: two rows with both equal are exact duplicates."""
        from loading_scripts.tables import row_keys

        return row_keys(loaded.data.source.rows, ("input", "target"))

    def select_rows(self, loaded: Loaded, keep) -> Loaded:
        """The kept rows; published splits follow them (see ``CompositionalSource.select``)."""
        rows = loaded.data
        return Loaded(dataclasses.replace(rows, source=rows.source.select(keep, "--dedupe")), loaded.info)

    def check_loaded(self, loaded: Loaded, options: TMCDOptions) -> None:
        """Parseable programs, the train size among them and the validation size against the
        test size, all before the search."""
        from split_builders.splitters.compositional import validation_count
        from split_builders.splitters.tmcd import train_count

        from loading_scripts.compositional import check_target_language

        rows = loaded.data
        check_target_language(options.target_language, rows.source.targets, source=rows.source.name)
        if options.published:
            check_published(rows.source)
        n_parsed = rows.parsed.size
        if n_parsed < 2:
            unparseable = rows.row_atoms.unparseable
            raise InvalidParameterError(
                f"{rows.source.name}: {len(rows.source)} row(s) read, {n_parsed} with a parseable {rows.language} "
                "program; a split needs at least 2 (one train, one test)"
                + (f"; {rows.row_atoms.describe_unparseable(rows.source.source_ids)}" if unparseable else ""))
        # the template split's test can only be larger
        validation_count(options.validation_size, n_parsed - train_count(train_share(options), n_parsed))
        if options.scores is not None:
            rows.given_scores(options.scores)

    def groups(self, loaded: Loaded, field: str):
        """A column of the rows (Spider's ``db_id``): the configs resplit searches keep a group in
        one split (see :func:`~split_builders.splitters.compositional.compositional_configs`)."""
        from split_builders.splitters.groups import column_groups

        return column_groups(loaded.data.source.rows, field, source=loaded.info.name)

    def signal(self, loaded: Loaded, options: TMCDOptions, context) -> Signal:
        from split_builders.signals.given import given_scores_record
        from split_builders.signals.programs.compounds import compounds_by_row
        from split_builders.signals.programs.divergence import ATOM_ALPHA, COMPOUND_ALPHA

        rows = loaded.data
        atoms, parsed = rows.row_atoms.atoms, rows.parsed
        values = ProgramSignal(atoms, compounds_by_row(rows.programs, rows.language), parsed,
                               progress=context.progress)
        provenance = {"kind": "atoms and compounds of each row's program", "target_language": rows.language,
                      "program_side": PROGRAM_SIDE[rows.language], "compound_alpha": COMPOUND_ALPHA,
                      "atom_alpha": ATOM_ALPHA, "parseable_rows": int(parsed.size),
                      "unparseable_programs_excluded": len(rows.row_atoms.unparseable)}
        if options.scores is not None:
            values.scores = rows.given_scores(options.scores)
            provenance["given"] = given_scores_record(options.scores)
        if options.lexical:
            from split_builders.signals.programs.lexical import KINDS, WUG_SEED, WugReplacer, shared_items

            items = shared_items(rows.source.inputs, [atoms[r] for r in parsed])
            values.wugs = {kind: WugReplacer(kind=kind, random_state=WUG_SEED).fit(items) for kind in KINDS}
            provenance["wug_words"] = {"kinds": list(KINDS), "seed": WUG_SEED, "items": len(items)}
        summary = (f"{parsed.size} parseable {rows.language} programs"
                   + (f", {len(rows.row_atoms.unparseable)} unparseable excluded" if rows.row_atoms.unparseable else ""))
        return Signal(values, provenance, summary)

    def configs(self, loaded: Loaded, signal: Signal, options: TMCDOptions) -> list:
        from split_builders.splits import membership_sha256
        from split_builders.splitters.compositional import compositional_configs

        from split_builders.splitters.groups import group_parameters

        src, values = loaded.data.source, signal.values
        published = src.published if options.published else None
        # the row order rule: every draw and tie-break follows the rows' content keys (or their recorded position)
        keys = content_keys(src.rows, ("input", "target")) if options.row_order == CONTENT else None
        configs = in_row_order(compositional_configs, keys, options.seed, groups="groups", row_numbers=("published",),
                               per_row=dict(atoms=values.atoms, compounds=values.compounds, inputs=src.inputs,
                                         targets=src.targets, scores=values.scores, source_ids=src.source_ids,
                                         groups=loaded.groups),
                               target_language=loaded.data.language, **search_parameters(options),
                               published=published, published_from=src.published_from, membership=membership_sha256,
                               wugs=values.wugs, progress=values.progress, seconds=values.search_seconds,
                               group_field=options.group_field)
        for config in configs:  # how many rows had no group value (each a group of its own)
            if config.parameters.get("grouped_by"):
                config.parameters.update(group_parameters(loaded.groups, options.group_field))
        return configs

    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        """The source rows with ``variant`` = original, then one wug-word copy per kind (text as
        ``string``: :func:`loading_scripts.labels.release_rows`)."""
        import datasets

        from loading_scripts.labels import release_rows

        src = loaded.data.source
        rows = release_rows(src.rows).add_column("variant", ["original"] * len(src))
        if signal.values.scores is not None:  # what the ll_split* configs were split by
            rows = rows.add_column("score", np.asarray(signal.values.scores, dtype=np.float64))
        if not signal.values.wugs:
            return rows
        variants = [rows]
        for kind, replacer in signal.values.wugs.items():
            columns = {c: rows[c] for c in rows.column_names}
            columns.update(input=replacer.transform(src.inputs), target=replacer.transform(src.targets),
                           variant=[kind] * len(src))
            variants.append(datasets.Dataset.from_dict(columns, features=rows.features))
        return datasets.concatenate_datasets(variants)

    def fields(self, loaded: Loaded, signal: Signal, options: TMCDOptions) -> Fields:
        """An input utterance and its target program, in the language its atoms are read in."""
        return Fields("semantic_parsing", text=("input",), query="input", target="target",
                      program_language=loaded.data.language)

    def card(self, loaded: Loaded, signal: Signal, configs: list, options: TMCDOptions):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        src, language, values = loaded.data.source, loaded.data.language, signal.values
        name = Path(src.name).name
        # Wug words replace whole tokens, so a copy's input lengths are the original's.
        lengths = np.asarray([len(text.split()) for text in src.inputs])
        sections = []
        for config in configs:
            series = {s: lengths[np.asarray(config.indices[s], dtype=np.int64) % len(src)] for s in ("train", "test")}
            figure = Figure(f"figures/{config.name}.png", config.name, alt="input lengths, train vs test",
                            panels=[Panel("input length (words)", series, kind="discrete")])
            sections.append(Section(f"`{config.name}`", config.description, [figure]))
        maps = [Section(f"Wug-word map `{kind}` (seed {replacer.random_state})",
                        "\n".join(["| item | replacement |", "|---|---|",
                                   *(f"| `{k}` | `{v}` |" for k, v in replacer.mapping_.items())]))
                for kind, replacer in values.wugs.items()]
        return CardSpec(
            title=f"Compositional splits of `{name}`",
            intro=(f"Compositional-generalisation splits of `{name}` (target language `{language}`): configs that "
                   "hold out new combinations of known parts (TMCD), long inputs (length), unseen program "
                   "templates (template), a random baseline (standard), and the splits published with the data."),
            how_built=how_built(loaded, signal, options),
            configs=sections, columns=divergence_columns(configs), extra=maps)

    def pretty_name(self, loaded: Loaded) -> str:
        return f"Compositional splits of {Path(loaded.data.source.name).name}"

    def report(self, result) -> list[str]:
        values = result.signal.values
        unparseable = result.loaded.data.row_atoms.unparseable
        lines = [f"{len(unparseable)} unparseable program(s) excluded (listed in the card)"] if unparseable else []
        lines += [f"warning: {line}" for line in _score_warnings(values)]
        for config in result.configs:
            if config.method == "tmcd" and "search_met_bound" in config.parameters:
                bound, found = config.parameters["max_atom_divergence"], config.parameters["divergences"]["atom_divergence"]
                if not config.parameters["search_met_bound"]:
                    lines.append(f"warning: {config.name}: the search found no split with atom divergence <= {bound:g}; "
                                 f"the config is its start split (atom divergence {found:.4f}, see the card)")
                elif found > bound + 1e-12:
                    lines.append(f"warning: {config.name}: atom divergence {found:.4f} > {bound:g} on the final splits "
                                 "(validation rows taken from test changed it; see the card)")
        lines.append(f"{'config':<28}{'train':>7}{'test':>7}{'compound div':>14}{'atom div':>10}{'seconds':>9}")
        for config in result.configs:
            f = config.parameters["divergences"]
            seconds = values.search_seconds.get(config.name, float("nan"))
            lines.append(f"{config.name:<28}{len(config.indices['train']):>7}{len(config.indices.get('test', ())):>7}"
                         f"{f['compound_divergence']:>14.4f}{f['atom_divergence']:>10.4f}{seconds:>9.1f}")
        return lines

    def rederive(self, released, record) -> list:
        """The configs resplit built, re-built from the released rows: the original rows (``variant``
        original, in ``source_id`` order) are the source, their atoms and compounds are read again
        from the programs, and the search runs again with the recorded options and seed. A lexical
        variant holds the same source_ids as the config it copies; ``ll_split*`` come from the rows'
        ``score``. Published splits are not derived: verify compares them with the membership the
        card records."""
        import dataclasses

        import datasets
        from datasets.table import InMemoryTable

        from loading_scripts.compositional import CompositionalSource
        from split_builders.signals.programs.compounds import compounds_by_row
        from split_builders.splitters.compositional import compositional_configs

        configs = record.get("configs", {})
        signal = record.get("signal") or {}
        originals = [c for c, entry in configs.items() if "+" not in entry.get("method", "")]
        table = released.all_rows(originals)
        language = signal.get("target_language")
        source = CompositionalSource(datasets.Dataset(InMemoryTable(table)), name=str(released.folder),
                                     target_language=language, source_id_note="")
        data = CompositionalRows(source, language)
        fields = set(self.Options.__dataclass_fields__)
        recorded = {k: v for k, v in (record.get("parameters") or {}).items() if k in fields}
        options = self.Options(**{**recorded, "source": str(released.folder), "out": str(released.folder),
                                  "seed": record["seed"], "published": False, "lexical": False, "scores": None,
                                  "row_order": recorded_row_order(record.get("parameters")),
                                  # the reference search has no restarts (and refuses a count away from the default)
                                  **({} if recorded.get("reference") else
                                     {"restarts": recorded_restarts(record.get("parameters"))})})
        scores = None
        if "score" in table.column_names and any(e.get("method") == "likelihood" for e in configs.values()):
            scores = np.asarray(table.column("score").to_numpy(), dtype=np.float64)
        groups = None
        if options.group_field is not None:
            from split_builders.splitters.groups import group_codes

            groups = group_codes(table.column(options.group_field).to_numpy(zero_copy_only=False))
        # the rule the release was built under (position: a release from before it was recorded)
        keys = content_keys(table, ("input", "target")) if options.row_order == CONTENT else None
        built = in_row_order(compositional_configs, keys, options.seed, groups="groups",
                             per_row=dict(atoms=data.row_atoms.atoms, compounds=compounds_by_row(data.programs, language),
                                       inputs=source.inputs, targets=source.targets, scores=scores, groups=groups),
                             target_language=language, **search_parameters(options), group_field=options.group_field)
        by_name = {c.name: dataclasses.replace(c, rows=table) for c in built}
        for name, entry in configs.items():  # a lexical variant holds the rows of the config it copies
            base = name.removesuffix("_" + entry["parameters"]["wug"]) if "+" in entry.get("method", "") else None
            if base in by_name:
                by_name[name] = dataclasses.replace(by_name[base], name=name)
        return list(by_name.values())

    def config_statistics(self, parameters: dict) -> dict:
        """The compound and atom divergence (train against test) the config records."""
        figures = parameters.get("divergences") or {}
        return {name: figures[name] for name in DIVERGENCES if name in figures}

    def example_arguments(self, data, work) -> list:
        """GeoQuery in NQG's format, two configs, a short search of two restarts."""
        return ["--source", str(Path(data) / "data" / "geoquery" / "geoquery_nqg.tsv"), "--train-size", "440",
                "--iterations", "300", "--restarts", "2", "--configs", "tmcd,length"]

    def group_example(self, data, work, values) -> tuple:
        """GeoQuery's first rows as a table (input, target) with a ``grp`` column holding ``values`` (one per row),
        the length and standard configs (the TMCD search cannot meet its atom constraint under a few groups):
        ``(arguments, "grp")``."""
        import json

        lines = (Path(data) / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:len(values)]
        source = Path(work) / "geo.jsonl"
        source.write_text("".join(json.dumps({"input": line.split("\t")[0], "target": line.split("\t")[1], "grp": value})
                                  + "\n" for line, value in zip(lines, values)))
        return (["--source", str(source), "--train-size", str(len(lines) // 2), "--configs", "length,standard",
                 "--group-field", "grp"], "grp")


@dataclass
class CompositionalRows:
    """The loaded source, the target language its atoms are read in, and (parsed on first use)
    the atoms of every row."""

    source: object  # loading_scripts.compositional.CompositionalSource
    language: str
    input_rows: int = 0  # rows of the source before --limit (given scores are one per source row)

    def given_scores(self, path) -> np.ndarray:
        from split_builders.signals.given import read_given_scores

        return read_given_scores(path, source_ids=self.source.source_ids, input_rows=self.input_rows)

    @property
    def programs(self) -> list[str]:
        """The side of each row whose structure atoms and compounds describe."""
        return self.source.inputs if PROGRAM_SIDE[self.language] == "input" else self.source.targets

    @cached_property
    def row_atoms(self):
        from split_builders.signals.programs.atoms import atoms_by_row

        return atoms_by_row(self.programs, self.language)

    @property
    def parsed(self) -> np.ndarray:
        """Row numbers with a parseable program: the rows the configs resplit builds split."""
        return np.asarray(self.row_atoms.parsed_rows, dtype=np.int64)


@dataclass
class ProgramSignal:
    """Per row: atoms (None where unparseable) and compound counts; the given scores; the fitted
    wug-word replacers (``--lexical``). ``search_seconds`` is filled by ``configs`` for the
    terminal report only (never recorded: it differs between runs)."""

    atoms: list
    compounds: list
    parsed: np.ndarray
    scores: np.ndarray | None = None
    wugs: dict = field(default_factory=dict)
    search_seconds: dict = field(default_factory=dict)
    progress: bool = False  # the search's progress bar (Context.progress; never recorded)


def train_share(options: TMCDOptions) -> int | float:
    """``--train-size``, or half of the parseable rows when it is not given."""
    return options.train_size if options.train_size is not None else DEFAULT_TRAIN_SHARE


def search_parameters(options: TMCDOptions) -> dict:
    """The options :func:`~split_builders.splitters.compositional.compositional_configs` builds the
    configs with (a build and ``rederive`` alike)."""
    return {"names": options.configs, "train_size": train_share(options), "iterations": options.iterations,
            "restarts": options.restarts, "max_atom_divergence": options.max_atom_divergence,
            "reference": options.reference,
            "validation_size": options.validation_size, "random_state": options.seed}


def check_published(source) -> None:
    """Every published split is a partition of some of the source's rows (no row in two splits,
    train and an evaluation split present), checked before any search: a split file that does
    not match the data fails at once, naming it."""
    from split_builders.splits import ConfigSplit
    from split_builders.errors import SourceLoadError

    for name, split in source.published.items():
        try:
            ConfigSplit(name, {k: np.asarray(v, dtype=np.int64) for k, v in split.items()}, method="published").check(len(source))
        except InvalidParameterError as error:
            raise SourceLoadError(f"published split {name!r} ({source.published_from[name]}) is inconsistent: "
                                  f"{error}; fix or remove its files, or pass --no-published") from None


def _score_warnings(values) -> list[str]:
    """Given scores that cannot order the parseable rows the ll_split* configs split (all equal, mostly one value)."""
    from split_builders.signals.given import score_warnings

    if values.scores is None:
        return []
    return score_warnings(np.asarray(values.scores)[values.parsed], what="given scores of the parseable rows")


def how_built(loaded: Loaded, signal: Signal, options: TMCDOptions) -> list:
    """The card's "how it was built" paragraphs."""
    from split_builders.splitters.tmcd import train_count

    rows, values = loaded.data, signal.values
    n_train = train_count(train_share(options), values.parsed.size)
    side = PROGRAM_SIDE[rows.language]
    paragraphs = [
        f"Each row's {side} is read as a `{rows.language}` program; its atoms (predicates, entities, "
        "tokens) and compounds (a parent with one argument in its place) are the signal. "
        f"The configs resplit builds put {n_train} of the {values.parsed.size} parseable rows in train "
        f"(seed {options.seed}).",
        "Divergences: Chernoff coefficient, alpha 0.1 over compound counts, alpha 0.5 over atoms counted "
        "once per example (Keysers et al. 2020); train against test.",
        ("`tmcd` is Shaw et al.'s reference first-improvement greedy search, reproduced choice for choice."
         if options.reference else
         f"`tmcd` starts from Shaw et al.'s shuffled, atom-balanced split and anneals over swaps "
         f"({options.iterations} iterations, each choosing among 256 sampled rows per side), keeping the "
         f"best split whose atom divergence is at most {options.max_atom_divergence:g} (the bound used) and "
         f"whose test atoms all occur in train; the search runs {options.restarts} time(s), each from its own "
         "shuffle seeded from the seed, and the best run is kept; the divergences in the table are measured on "
         "the final splits (after any validation rows are taken from test)."),
    ]
    if rows.source.dropped_published:
        paragraphs.append("**Published splits left out:** " + "; ".join(rows.source.dropped_published) + ".")
    if rows.row_atoms.unparseable:
        paragraphs.append(f"**Excluded:** {rows.row_atoms.describe_unparseable(rows.source.source_ids)}. "
                          "These rows are in no split.")
    if options.validation_size:
        size = options.validation_size
        drawn = f"{size} random rows" if isinstance(size, int) else f"a random {size:g} share (rounded up)"
        paragraphs.append(f"Validation: {drawn} of each built config's test split.")
    if values.scores is not None:
        paragraphs.append("`ll_split*`: Likelihood Splits (Godbole & Jia 2023) of the parseable rows from the "
                          "given log-likelihoods, under the atom constraint.")
        paragraphs += [f"**Warning:** {line}." for line in _score_warnings(values)]
    if values.wugs:
        paragraphs.append("Lexical variants (Sun et al. 2023, section 4.5): the target atoms that also occur as "
                          "input words are replaced by the same made-up word in inputs and targets; the "
                          "`variant` column names the copy a row belongs to.")
    return paragraphs


def divergence_columns(configs: list) -> dict:
    """The card's table columns: each config's divergences and where it comes from."""
    figures = {c.name: c.parameters["divergences"] for c in configs}
    origin = {c.name: c.parameters.get("file", "resplit") if c.method == "published" else f"resplit ({c.method})"
              for c in configs}
    return {
        "compound divergence": {k: f"{f['compound_divergence']:.4f}" for k, f in figures.items()},
        "atom divergence": {k: f"{f['atom_divergence']:.4f}" for k, f in figures.items()},
        "test with novel compound": {k: f"{100 * f['test_share_with_novel_compound']:.1f}%"
                                     for k, f in figures.items()},
        "test with unseen atom": {k: f["test_rows_with_unseen_atom"] for k, f in figures.items()},
        "origin": origin,
    }
