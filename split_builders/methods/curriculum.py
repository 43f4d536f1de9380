"""``resplit curriculum``: CURRICULUM's phenomena (Chen & Gao 2022) as one release of configs.

One config per phenomenon with its released ``train`` and ``validation`` splits, and a
``<phenomenon>_hypothesis_only`` variant without the premise. With ``pvi``, cross-fitted PVI per
phenomenon (the CPU family, rows sharing a premise share a fold) and the four difficulty configs
``<phenomenon>_simple`` / ``_hard`` / ``_simple_to_hard`` / ``_hard_to_simple``
(:func:`~split_builders.splitters.difficulty.difficulty_configs`, as ``resplit pvi`` builds them).
Every config brings its own rows (the phenomena's columns differ), so
:meth:`CurriculumMethod.rows` is None.

:mod:`loading_scripts.curriculum` reads the zips (labels normalised, leakage report); this module
turns them into configs and the card.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from split_builders.api import CommonOptions, ConfigSplit, Loaded, Signal, SourceInfo, SplitMethod, option
from split_builders.signals.pvi.columns import pvi_figure, with_pvi_columns
from split_builders.signals.pvi.crossfit import check_fold_labels, pvi_cache_dir
from split_builders.splitters.difficulty import CONFIGS as DIFFICULTY_CONFIGS
from split_builders.splitters.difficulty import difficulty_configs, part_mask, rederive_configs, rule_text

PAPER = "Chen & Gao 2022, Curriculum: A Broad-Coverage Benchmark for Linguistic Phenomena in NLU (NAACL)"
HYPOTHESIS_ONLY = "_hypothesis_only"
SOURCE_ID = "0-based position in the phenomenon's train rows then its validation rows"
INTRO = (
    "36 linguistic phenomena recast as NLI (Chen & Gao, NAACL 2022), one config per phenomenon with its "
    "released `train` and `validation` splits, and a `<phenomenon>_hypothesis_only` variant without the "
    "premise for the hypothesis-only baseline. `label` is a `ClassLabel`: `entailed`/`not-entailed` (2-way) "
    "or `entailment`/`neutral`/`contradiction` (3-way). `source_id` is the row's position in train then "
    "validation; `idx` is the release's own id.")
LABEL_NORMALISATION = (
    "**Label normalisation.** `monotonicity_infer` labels its train rows `entailment`/`neutral` but its "
    "validation rows `entailed`/`not-entailed`; the phenomenon is 2-way and the train labels are mapped "
    "`entailment` -> `entailed`, `neutral` (and `contradiction`) -> `not-entailed`. The count of mapped rows "
    "is in the table. The paper's `atomic` phenomenon is released as `defeasible`.")
LEAKAGE = (
    "**Leakage report.** Rows are kept as released. `train∩val` counts distinct (premise, hypothesis) pairs "
    "found in both splits; `val seen` the validation rows whose pair occurs in train; `dup` duplicate rows "
    "within a split; `empty` empty premises / hypotheses (train + validation).")


@dataclass(kw_only=True)
class CurriculumOptions(CommonOptions):
    """Options of ``resplit curriculum``. ``source`` (``--data``) is a folder with the zips (or its
    parent holding ``tasks/`` and ``tasks.json``), or a URL prefix holding ``<name>.zip`` files
    (downloaded once into the resplit cache). ``limit`` keeps the first N rows of each phenomenon's
    train split and the first N of its validation split."""

    phenomena: tuple[str, ...] | None = option(None, "comma-separated subset of phenomena (default: every zip)")
    hypothesis_only: bool = option(True, "skip the <phenomenon>_hypothesis_only variants (no premise column)")
    pvi: bool = option(False, "compute cross-fitted PVI per phenomenon (CPU family) and add its simple / hard "
                              "difficulty configs", group="signal")
    folds: int = option(5, "cross-fitting folds with --pvi", group="signal", integer=True, minimum=2)
    curriculum_compat: bool = option(False, "with --pvi: CURRICULUM's midrange threshold and 60/40 division",
                                     group="split")
    cache_dir: str | None = option(None, "per-fold PVI checkpoints (default: $RESPLIT_CACHE/pvi)",
                                   group="signal", record=False)


class CurriculumMethod(SplitMethod):
    """CURRICULUM's phenomena as loadable configs (``resplit curriculum``)."""

    name = "curriculum"
    paper = PAPER
    summary = "CURRICULUM's 36 NLI phenomena as loadable configs (+ hypothesis-only and PVI difficulty variants)"
    config_names = ("<phenomenon>", "<phenomenon>_hypothesis_only",
                    *(f"<phenomenon>_{c}" for c in DIFFICULTY_CONFIGS))
    Options = CurriculumOptions
    default_source = None
    source_aliases = ("--data",)
    signal_columns = ("pvi",)

    # --dedupe does not apply (row_keys stays None): every config is a phenomenon's *released*
    # train / validation split, which --dedupe would change; the card's leakage report counts the
    # duplicate pairs within and across the released splits instead.

    def load(self, options) -> Loaded:
        from loading_scripts.curriculum import CITATION, LICENSE, read_curriculum

        phenomena = read_curriculum(options.source, phenomena=list(options.phenomena) if options.phenomena else None,
                                    limit=options.limit)
        info = SourceInfo(name=f"CURRICULUM (Chen & Gao 2022) released zips: {options.source}",
                          rows=sum(len(p.rows) for p in phenomena), content_sha256=content_sha256(phenomena),
                          source_id=SOURCE_ID, license=LICENSE, citation=CITATION)
        return Loaded(phenomena, info)

    def check_loaded(self, loaded, options) -> None:
        if options.pvi:
            for p in loaded.data:
                check_fold_labels(p.rows["label"], options.folds, where=f"phenomenon {p.name}")

    def signal(self, loaded, options, context) -> Signal:
        if not options.pvi:
            return Signal({}, {"kind": "none: the released train / validation splits"})
        from split_builders.progress import progress_bar
        from split_builders.signals.pvi.crossfit import CrossFitPVI
        from split_builders.signals.pvi.families import HashedNgramFamily

        family = HashedNgramFamily(random_state=options.seed)
        scorer = CrossFitPVI(family, folds=options.folds, random_state=options.seed,
                             cache_dir=pvi_cache_dir(options.cache_dir))
        results, iv = {}, {}
        bar = progress_bar(loaded.data, description="PVI", unit="phenomenon", enabled=context.progress)
        for p in bar:
            bar.set_postfix_str(f"{p.name} ({len(p.rows)} rows)")
            premises = p.rows["premise"]
            # Rows sharing a premise share a fold (see CrossFitPVI.compute's groups).
            results[p.name] = scorer.compute(list(zip(premises, p.rows["hypothesis"])), p.rows["label"],
                                             len(p.label_set), groups=premises)
            # I_V on the released validation rows: held out from the official train split as the paper's is.
            iv[p.name] = float(results[p.name].pvi[p.split_sizes["train"]:].mean())
        provenance = {"kind": "cross-fitted pointwise V-information (bits)", "family": family.fingerprint(),
                      "folds": options.folds, "null": "prior", "group_field": "premise",
                      "text_fields": ["premise", "hypothesis"], "I_V": iv}
        return Signal(results, provenance, summary=f"I_V of {len(iv)} phenomena")

    def configs(self, loaded, signal, options) -> list:
        configs = curriculum_configs(loaded.data, hypothesis_only=options.hypothesis_only)
        for p in loaded.data:
            if p.name not in signal.values:
                continue
            result = signal.values[p.name]
            parameters = {"phenomenon": p.name, "folds": options.folds, "family": signal.provenance["family"]}
            difficulty = difficulty_configs(result.pvi, np.asarray(p.rows["label"]), parameters=parameters,
                                            curriculum_compat=options.curriculum_compat,
                                            random_state=options.seed, prefix=p.name + "_")
            rows = with_pvi_columns(p.rows, result, part_mask(difficulty[0], len(p.rows)))
            for config in difficulty:
                config.rows = rows
            configs += difficulty
        return configs

    def rows(self, loaded, signal, configs):
        return None

    def card(self, loaded, signal, configs, options):
        from split_builders.release.card import CardSpec, Figure, Panel, Section

        phenomena, iv = loaded.data, signal.provenance.get("I_V", {})
        names = [p.name for p in phenomena]
        sizes = Figure("figures/phenomena_sizes.png", "Rows per phenomenon", [Panel(
            "phenomenon", {split: [p.split_sizes[split] for p in phenomena] for split in ("train", "validation")},
            kind="bars", categories=names)], alt="train and validation rows per phenomenon")
        label_names = list(dict.fromkeys(name for p in phenomena for name in p.label_set))
        balance = Figure("figures/label_balance.png", "Label balance per phenomenon (train + validation)", [Panel(
            "phenomenon", {label: [_label_share(p, label) for p in phenomena] for label in label_names},
            kind="bars", categories=names, ylabel="share of rows")], alt="share of each label per phenomenon")
        sections = [Section("Phenomena (`<phenomenon>`, `<phenomenon>_hypothesis_only`)",
                            "Each phenomenon's released `train` and `validation` splits, as released; the "
                            "`_hypothesis_only` variant has the same rows without the `premise` column.",
                            [sizes, balance])]
        how_built = [LABEL_NORMALISATION, LEAKAGE]
        if iv:
            how_built.append(
                f"**PVI (`--pvi`).** Cross-fitted pointwise V-information over {options.folds} folds of each "
                "phenomenon's pooled train and validation rows (hashed n-gram linear family on the CPU; rows "
                "sharing a premise share a fold; label-prior null model). I_V in the table is the mean PVI of "
                "the released validation rows. Simple/hard: "
                + rule_text(curriculum_compat=options.curriculum_compat)
                + " `<phenomenon>_simple_to_hard` trains on the simple part and tests on every hard row; "
                "`_hard_to_simple` the reverse.")
            figures = []
            for p in phenomena:
                simple = part_mask(next(c for c in configs if c.name == f"{p.name}_simple"), len(p.rows))
                figures.append(pvi_figure(f"figures/{p.name}_pvi.png", f"{p.name}: PVI, simple vs hard",
                                          signal.values[p.name].pvi, simple))
            sections.append(Section("Difficulty configs (`<phenomenon>_simple`, `_hard`, `_simple_to_hard`, "
                                    "`_hard_to_simple`)", "PVI of the simple and the hard rows of each phenomenon.",
                                    figures))
        return CardSpec(title="CURRICULUM", intro=INTRO, how_built=how_built, configs=sections,
                        extra=[Section("Phenomena", phenomena_table(phenomena, iv=iv))],
                        citation=loaded.info.citation)

    def pretty_name(self, loaded) -> str:
        return "CURRICULUM"

    def report(self, result) -> list[str]:
        phenomena = result.loaded.data
        lines = [f"{len(phenomena)} phenomena, {sum(len(p.rows) for p in phenomena)} rows"]
        lines += [f"{name}: I_V {value:.3f} bits" for name, value in result.signal.provenance.get("I_V", {}).items()]
        return lines

    def rederive(self, released, record) -> dict:
        """Phenomenon configs from the released sizes the card records (``source_id`` counts train
        rows first, then validation); difficulty configs from their rows' ``pvi`` and label
        (:func:`~split_builders.splitters.difficulty.rederive_configs`, one phenomenon at a time)."""
        out = {}
        configs = record.get("configs", {})
        for name, entry in configs.items():
            parameters = entry.get("parameters") or {}
            sizes = parameters.get("released_rows")
            if entry.get("method", "").startswith("curriculum") and sizes is not None:
                n_train = int(sizes["train"])
                out[name] = {"train": np.arange(n_train, dtype=np.int64),
                             "validation": np.arange(n_train, n_train + int(sizes["validation"]), dtype=np.int64)}
        by_phenomenon: dict = {}
        for name, entry in configs.items():
            if entry.get("method") == "pvi-difficulty":
                by_phenomenon.setdefault(entry["parameters"]["phenomenon"], []).append(name)
        for members in by_phenomenon.values():  # a phenomenon's difficulty configs split the same rows
            out.update(rederive_configs(released.all_rows(members),
                                        {name: configs[name]["parameters"] for name in members}))
        return out


def content_sha256(phenomena) -> str:
    """The source's identity: sha256 over ``"<name> <content_sha256 of its rows>\\n"`` for every
    phenomenon read, in name order (:func:`loading_scripts.source.content_sha256` per phenomenon)."""
    from loading_scripts.source import content_sha256 as rows_sha256

    digest = hashlib.sha256()
    for p in sorted(phenomena, key=lambda p: p.name):
        digest.update(f"{p.name} {rows_sha256(p.rows)}\n".encode())
    return digest.hexdigest()


def curriculum_configs(phenomena, *, hypothesis_only: bool = True) -> list:
    """One config per phenomenon (its own rows, train and validation) and its hypothesis-only variant."""
    configs = []
    for p in phenomena:
        # The released sizes make the split a function of source_id (train first): verify re-derives it.
        params = {"phenomenon": p.name, "category": p.category, "abbrev": p.abbrev, "labels": list(p.label_set),
                  "released_rows": {split: int(n) for split, n in p.split_sizes.items()}}
        configs.append(ConfigSplit(p.name, p.indices(), method="curriculum", parameters=params, rows=p.rows,
                                   description=f"{p.category} / {p.abbrev}"))
        if hypothesis_only:
            # The premise column is removed, not blanked: a baseline cannot read it by accident.
            configs.append(ConfigSplit(p.name + HYPOTHESIS_ONLY, p.indices(), method="curriculum-hypothesis-only",
                                       parameters=params, rows=p.rows.remove_columns("premise"),
                                       description=f"{p.name} without the premise (hypothesis-only baseline)"))
    return configs


def phenomena_table(phenomena, *, iv: dict | None = None) -> str:
    """One line per phenomenon: category, abbreviation, labels, sizes, leakage and (with PVI) I_V."""
    lines = ["| config | category | abbrev | labels | train | validation | train∩val | val seen | dup train/val "
             "| empty premise/hyp | labels mapped |" + (" I_V (bits) |" if iv else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if iv else "")]
    for p in phenomena:
        r = p.report
        cells = [f"`{p.name}`", str(p.category), str(p.abbrev), "/".join(p.label_set),
                 str(p.split_sizes["train"]), str(p.split_sizes["validation"]),
                 str(r["train_validation_duplicate_pairs"]), str(r["validation_rows_seen_in_train"]),
                 f"{r['train_duplicate_pairs']}/{r['validation_duplicate_pairs']}",
                 f"{r['train_empty_premise'] + r['validation_empty_premise']}/"
                 f"{r['train_empty_hypothesis'] + r['validation_empty_hypothesis']}",
                 str(r["labels_normalised"])]
        if iv:
            cells.append(f"{iv[p.name]:.3f}" if p.name in iv else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _label_share(phenomenon, label: str) -> float:
    """Share of a phenomenon's rows with ``label`` (0 when the label is not in its set)."""
    if label not in phenomenon.label_set:
        return 0.0
    ids = np.asarray(phenomenon.rows["label"])
    return float((ids == phenomenon.label_set.index(label)).mean()) if ids.size else 0.0
