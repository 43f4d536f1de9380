"""``resplit curriculum``: CURRICULUM's phenomena (Chen & Gao 2022) as one release of configs.

One config per phenomenon with its released ``train`` and ``validation`` splits, and a
``<phenomenon>_hypothesis_only`` variant without the premise. With ``pvi``, cross-fitted PVI per
phenomenon (the CPU family, rows sharing a premise share a fold) and the four difficulty configs
``<phenomenon>_simple`` / ``_hard`` / ``_simple_to_hard`` / ``_hard_to_simple``
(:func:`~split_builders.splitters.difficulty.difficulty_configs`, as ``resplit pvi`` builds them).
By default also the inoculation configs ``<phenomenon>_inoc_<n>`` (``inoculation_sizes``, default
10, 50, 100, 500 and 1,000 training rows per label, nested, seeded; the released validation split;
:func:`~split_builders.splitters.inoculation.inoculation_configs`). Every config brings its own rows
(the phenomena's columns differ), so :meth:`CurriculumMethod.rows` is None.

The configs serve the paper's evaluation procedure step by step (:data:`PROCEDURE`); predictions on
them are read back by :mod:`split_builders.evaluation.curriculum_report` (``resplit
curriculum-report``).

:mod:`loading_scripts.curriculum` reads the zips (labels normalised, leakage report); this module
turns them into configs and the card.
"""

from __future__ import annotations

from pathlib import Path

import dataclasses
import hashlib
from dataclasses import dataclass

import numpy as np

from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.splits import ConfigSplit
from split_builders.errors import FieldError, InvalidParameterError
from split_builders.signals.pvi.columns import pvi_figure, with_pvi_columns
from split_builders.signals.pvi.crossfit import check_fold_labels, pvi_cache_dir
from split_builders.splitters.difficulty import CONFIGS as DIFFICULTY_CONFIGS
from split_builders.splitters.difficulty import difficulty_configs, part_mask, rederive_configs, rule_text
from split_builders.splitters.inoculation import METHOD as INOCULATION
from split_builders.splitters.inoculation import SIZES as INOCULATION_SIZES
from split_builders.splitters.inoculation import check_sizes, inoculation_configs
from split_builders.splitters.inoculation import rederive_configs as rederive_inoculation
from split_builders.splitters.partition import (CONTENT, back_in_place, content_order, in_row_order,
                                               recorded_row_order, take_rows)

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
PROCEDURE = (
    "**The evaluation procedure and its configs.** CURRICULUM evaluates a model on every phenomenon in four "
    "ways, each served by configs of this release: (1) *zero-shot diagnostic*: predict the `validation` split "
    "of `<phenomenon>` (the paper's test set) with a model trained elsewhere (an NLI model) and report the "
    "Matthews correlation per phenomenon and per category; (2) *inoculation*: fine-tune on the `train` split of "
    "`<phenomenon>_inoc_<n>` (n examples per label) and evaluate on its `validation` split (the phenomenon's "
    "released validation split), n growing (by default from 10 to 1,000); (3) *hypothesis-only baseline*: "
    "`<phenomenon>_hypothesis_only`, the same splits without the premise; (4) *cross-distribution "
    "generalisation* (with `--pvi`): train on `<phenomenon>_simple` and test on its `validation` split "
    "(simple -> simple) and on the `test` split of `<phenomenon>_simple_to_hard` (simple -> hard); likewise "
    "`<phenomenon>_hard` and `<phenomenon>_hard_to_simple`: the 2x2 matrix of the paper's Figure 3. "
    "`resplit curriculum-report --predictions FILE` turns predictions on these configs into the zero-shot table "
    "(with a heatmap), the inoculation curves and the 2x2 matrices.")
INOCULATION_TEXT = (
    "Inoculation by fine-tuning (Liu et al., 2019) as CURRICULUM does it: a model is fine-tuned on small samples "
    "of a phenomenon's training split, {sizes} examples per label, and evaluated on the phenomenon's released "
    "validation split after each. `<phenomenon>_inoc_<n>` has `train` = the sample of n rows per label and "
    "`validation` = every row of the phenomenon's `validation` split. The samples are drawn as CURRICULUM's "
    "released few-shot sampler draws them: one permutation of the phenomenon's training rows seeded with {seed} "
    "(`numpy.random.seed(seed); numpy.random.shuffle(rows)`), then the first n rows of each label in that "
    "order, so every sample is inside the next larger one (nested) and the same seed gives the same rows to "
    "everyone. Rows are drawn only from the released `train` split, per label as the paper does "
    "(`monotonicity_infer` per 2-way label, after its train labels are mapped, see above). A label with fewer "
    "training rows than n contributes all of them; the table lists where that happens. Their harness tasks are a "
    "group of their own, `curriculum_inoculation`, outside the default group `curriculum`: each "
    "scores its phenomenon's validation split, which the `<phenomenon>` task already scores zero-shot; run a task "
    "with the model fine-tuned on its `train` split.")


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
    inoculation: bool = option(True, "skip the <phenomenon>_inoc_<n> inoculation configs", group="split",
                               conflicts=("inoculation_sizes",),
                               conflict_note="without the inoculation configs their sizes would be ignored")
    inoculation_sizes: tuple[int, ...] = option(INOCULATION_SIZES, "training rows per label of the inoculation "
                                                "configs, comma-separated (nested; one config each)", group="split",
                                                metavar="N,N,...", parse=lambda text: tuple(text.split(",")))

    def validate(self) -> None:
        if self.inoculation or self.inoculation_sizes:
            self.inoculation_sizes = check_sizes(self.inoculation_sizes)


class CurriculumMethod(SplitMethod):
    """CURRICULUM's phenomena as loadable configs (``resplit curriculum``)."""

    info = MethodInfo(
        name="curriculum",
        paper=PAPER,
        summary=("CURRICULUM's 36 NLI phenomena as loadable configs (+ hypothesis-only, inoculation and PVI "
                 "difficulty variants)"),
        config_names=("<phenomenon>", "<phenomenon>_hypothesis_only", "<phenomenon>_inoc_<n>",
                      *(f"<phenomenon>_{c}" for c in DIFFICULTY_CONFIGS)),
        options=CurriculumOptions,
        signal_columns={"pvi": "continuous"},
        harness_task=HarnessTask("classification", "mcc"),  # the paper's zero-shot metric, beside accuracy
        # A phenomenon config has the released train and validation splits only: its validation split is the
        # paper's test set (the zero-shot diagnostic and inoculation evaluate on it); a difficulty config's
        # test split is the cross-distribution test.
        evaluation_splits=("test", "validation"),
        # An inoculation config's evaluation split is its phenomenon's validation split: its tasks are a group of their
        # own (curriculum_inoculation), so that the default group scores each validation split once.
        harness_groups={"inoculation": ("<phenomenon>_inoc_<n>",)},
        report_tables=("curriculum",),  # resplit report: the paper's zero-shot table of Matthews correlations
        # The phenomena are read from their released zips (a table is not a phenomenon's train and validation files).
        table_columns=None,
        source_kind="a folder of CURRICULUM's released zips (<phenomenon>.zip), or a URL prefix holding them",
        default_source=None,
        source_aliases=("--data",))

    # --dedupe does not apply (row_keys stays None): every config is a phenomenon's *released*
    # train / validation split, which --dedupe would change; the card's leakage report counts the
    # duplicate pairs within and across the released splits instead.

    def load(self, options) -> Loaded:
        from loading_scripts.curriculum import CITATION, LICENSE, read_curriculum

        phenomena = read_curriculum(options.source, phenomena=list(options.phenomena) if options.phenomena else None,
                                    limit=options.limit)
        info = SourceInfo(name=f"CURRICULUM (Chen & Gao 2022) released zips: {options.source}",
                          rows=sum(len(p.rows) for p in phenomena), content_sha256=content_sha256(phenomena),
                          source_id=SOURCE_ID, license=LICENSE, citation=CITATION, language=("en",))
        return Loaded(phenomena, info)

    def check_loaded(self, loaded, options) -> None:
        if options.group_field is not None and not options.pvi:
            raise InvalidParameterError("--group-field applies to the difficulty configs of --pvi: without --pvi a "
                                        "curriculum release holds the phenomena's released splits and subsets of "
                                        "their train splits, which it does not re-split")
        if options.pvi:
            for p in loaded.data:
                check_fold_labels(p.rows["label"], options.folds, where=f"phenomenon {p.name}")

    def groups(self, loaded, field):
        """``{phenomenon: group numbers}``: with ``--pvi``, each phenomenon's difficulty configs keep
        the rows that share ``field`` (e.g. the premise) whole (a group is placed by its mean PVI, as
        ``resplit pvi`` places it). The phenomena's own splits stay as released."""
        from split_builders.splitters.groups import column_groups

        out = {}
        for p in loaded.data:
            if field not in p.rows.column_names:
                raise FieldError(field, p.rows.column_names, role="group", source=f"phenomenon {p.name}")
            out[p.name] = column_groups(p.rows, field, source=f"phenomenon {p.name}")
        if not out:
            raise InvalidParameterError("no phenomenon to group")
        return out

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
            premises, hypotheses, labels = p.rows["premise"], p.rows["hypothesis"], _labels(p)
            # the row order rule: folds and training draw over row positions, so the rows go in in content order
            order = content_order(phenomenon_keys(p), options.seed) if options.row_order == CONTENT else None
            if order is not None:
                premises, hypotheses, labels = take_rows(premises, order), take_rows(hypotheses, order), labels[order]
            # Rows sharing a premise share a fold (see CrossFitPVI.compute's groups).
            result = scorer.compute(list(zip(premises, hypotheses)), labels, len(p.label_set), groups=premises)
            if order is not None:  # back in the rows' own order
                result = dataclasses.replace(result, **{name: back_in_place(getattr(result, name), order)
                                                        for name in ("pvi", "h_yx", "h_yb", "fold", "correct")})
            results[p.name] = result
            # I_V on the released validation rows: held out from the official train split as the paper's is.
            iv[p.name] = float(results[p.name].pvi[p.split_sizes["train"]:].mean())
        provenance = {"kind": "cross-fitted pointwise V-information (bits)", "family": family.fingerprint(),
                      "folds": options.folds, "null": "prior", "group_field": "premise",
                      "text_fields": ["premise", "hypothesis"], "I_V": iv}
        return Signal(results, provenance, summary=f"I_V of {len(iv)} phenomena")

    def configs(self, loaded, signal, options) -> list:
        # the row order rule: every draw and tie-break follows the rows' content keys (or their recorded position)
        keys = {p.name: phenomenon_keys(p) for p in loaded.data} if options.row_order == CONTENT else {}
        configs = curriculum_configs(loaded.data, hypothesis_only=options.hypothesis_only,
                                     inoculation_sizes=options.inoculation_sizes if options.inoculation else (),
                                     random_state=options.seed, keys=keys)
        for p in loaded.data:
            if p.name not in signal.values:
                continue
            result = signal.values[p.name]
            parameters = {"phenomenon": p.name, "folds": options.folds, "family": signal.provenance["family"]}
            difficulty = in_row_order(difficulty_configs, keys.get(p.name), options.seed, groups="groups",
                                      per_row=dict(pvi=result.pvi, labels=_labels(p),
                                                   groups=None if loaded.groups is None else loaded.groups[p.name]),
                                      parameters=parameters, curriculum_compat=options.curriculum_compat,
                                      random_state=options.seed, prefix=p.name + "_", group_field=options.group_field)
            rows = with_pvi_columns(p.rows, result, part_mask(difficulty[0], len(p.rows)))
            for config in difficulty:
                config.rows = rows
            configs += difficulty
        return configs

    def rows(self, loaded, signal, configs):
        return None

    def fields(self, loaded, signal, options) -> Fields:
        """Premise and hypothesis (the query of the hypothesis-only baseline) and the recast label,
        whose names are those of the phenomena's ``ClassLabel`` in order of first appearance."""
        names = tuple(dict.fromkeys(name for p in loaded.data for name in p.label_set))
        return Fields("classification", text=("premise", "hypothesis"), query="hypothesis", label="label",
                      label_names=names)

    def card(self, loaded, signal, configs, options):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

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
        how_built = [LABEL_NORMALISATION, LEAKAGE, PROCEDURE]
        inoculation = [c for c in configs if c.method == INOCULATION]
        if inoculation:
            sections.append(Section("Inoculation configs (`<phenomenon>_inoc_<n>`)",
                                    INOCULATION_TEXT.format(sizes=", ".join(map(str, options.inoculation_sizes)),
                                                            seed=options.seed)
                                    + "\n\n" + inoculation_table(inoculation)))
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
        inoculation = sum(c.method == INOCULATION for c in result.configs)
        if inoculation:
            lines.append(f"{inoculation} inoculation configs (<phenomenon>_inoc_<n>, n = "
                         f"{', '.join(map(str, result.options.inoculation_sizes))} training rows per label)")
        lines += [f"{name}: I_V {value:.3f} bits" for name, value in result.signal.provenance.get("I_V", {}).items()]
        return lines

    def rederive(self, released, record) -> list:
        """Phenomenon configs from the released sizes the card records (``source_id`` counts train
        rows first, then validation); inoculation configs drawn again by
        :func:`~split_builders.splitters.inoculation.inoculation_configs` from the labels of the
        phenomenon's released rows (:func:`_rederive_inoculation`); difficulty configs by
        :func:`~split_builders.splitters.difficulty.difficulty_configs` from their rows' ``pvi`` and label, one
        phenomenon at a time."""
        import pyarrow as pa

        out = []
        configs = record.get("configs", {})
        for name, entry in configs.items():
            sizes = (entry.get("parameters") or {}).get("released_rows")
            if entry.get("method") in ("curriculum", "curriculum-hypothesis-only") and sizes is not None:
                n_train, n_rows = int(sizes["train"]), int(sizes["train"]) + int(sizes["validation"])
                out.append(ConfigSplit(name, {"train": np.arange(n_train), "validation": np.arange(n_train, n_rows)},
                                       method=entry["method"], rows=pa.table({"source_id": np.arange(n_rows)})))
        # the rule the release was built under (position: a release from before it was recorded)
        content = recorded_row_order(record.get("parameters")) == CONTENT
        for phenomenon, members in _by_phenomenon(configs, "pvi-difficulty").items():
            # a phenomenon's difficulty configs split the same rows
            rows = released.all_rows(members)
            keys = _released_keys(rows, configs, phenomenon) if content else None
            if content and keys is None:  # its label names are not in the release: the keys cannot be read back
                continue
            out += rederive_configs(rows, configs[members[0]]["parameters"], prefix=phenomenon + "_", keys=keys,
                                    seed=record.get("seed"))
        return out + _rederive_inoculation(released, configs, content=content, seed=record.get("seed"))

    def example_arguments(self, data, work) -> list:
        """One phenomenon (verbnet) of the released zips."""
        return ["--source", str(Path(data) / "data" / "curriculum"), "--phenomena", "verbnet"]

    def group_example(self, data, work, values) -> tuple:
        """One phenomenon (verbnet's rows, half train, half validation) whose premise is the group value (empty where
        ``values`` has none), with PVI configs: ``(arguments, "premise")``."""
        import json
        import zipfile

        half = len(values) // 2
        with zipfile.ZipFile(Path(data) / "data" / "curriculum" / "tasks" / "verbnet.zip") as archive:
            rows = [json.loads(line) for part in ("train", "val")
                    for line in archive.read(f"verbnet/{part}.jsonl").decode().splitlines()[:half]]
        folder = Path(work) / "curriculum"
        folder.mkdir(exist_ok=True)
        premises = ["" if v is None or v != v else f"premise {v}" for v in values]  # None, NaN: no premise
        with zipfile.ZipFile(folder / "toy.zip", "w") as archive:
            for part, chunk in (("train", slice(0, half)), ("val", slice(half, 2 * half))):
                archive.writestr(f"toy/{part}.jsonl", "".join(json.dumps({**row, "premise": premise}) + "\n"
                                                              for row, premise in zip(rows[chunk], premises[chunk])))
        return (["--source", str(folder), "--phenomena", "toy", "--pvi", "--folds", "2", "--no-hypothesis-only",
                 "--no-inoculation", "--cache-dir", str(Path(work) / "pvi-cache"), "--group-field", "premise"],
                "premise")


def content_sha256(phenomena) -> str:
    """The source's identity: sha256 over ``"<name> <content_sha256 of its rows>\\n"`` for every
    phenomenon read, in name order (:func:`loading_scripts.source.content_sha256` per phenomenon)."""
    from loading_scripts.source import content_sha256 as rows_sha256

    digest = hashlib.sha256()
    for p in sorted(phenomena, key=lambda p: p.name):
        digest.update(f"{p.name} {rows_sha256(p.rows)}\n".encode())
    return digest.hexdigest()


def curriculum_configs(phenomena, *, hypothesis_only: bool = True, inoculation_sizes=(), random_state: int = 42,
                       keys: dict | None = None) -> list:
    """One config per phenomenon (its own rows, train and validation), its hypothesis-only variant and
    its inoculation configs ``<phenomenon>_inoc_<n>`` for each of ``inoculation_sizes`` (none when
    empty), drawn with ``random_state``; over each phenomenon's rows in their content order where ``keys``
    (``{phenomenon: content keys}``, the ``content`` row order rule) has them, else in the files' order."""
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
        if inoculation_sizes:
            # Only what re-deriving needs beside the splitter's parameters: the phenomenon config holds the rest
            # (every config's provenance is parsed whenever a config of the release is loaded).
            labels, released = _labels_and_splits(p)
            configs += in_row_order(inoculation_configs, (keys or {}).get(p.name), random_state,
                                    per_row=dict(labels=labels, released=released), sizes=inoculation_sizes,
                                    random_state=random_state, parameters={"phenomenon": p.name}, rows=p.rows,
                                    prefix=p.name + "_")
    return configs


def phenomenon_keys(p) -> np.ndarray:
    """A phenomenon's rows' content keys: premise, hypothesis and label by name (the released ``ClassLabel``'s)."""
    from split_builders.splitters.partition import source_content_keys

    return source_content_keys(p.rows, ("premise", "hypothesis"), label_field="label")


def _released_keys(rows, configs: dict, phenomenon: str):
    """The content keys of a phenomenon's released rows (``rows``, in ``source_id`` order), as
    :func:`phenomenon_keys` gives them at the build: the label's names are those its configs record."""
    from split_builders.splitters.partition import content_keys

    recorded = (configs.get(phenomenon) or configs.get(phenomenon + HYPOTHESIS_ONLY) or {}).get("parameters") or {}
    names = recorded.get("labels")
    if names is None or "premise" not in rows.column_names:
        return None
    return content_keys(rows, ("premise", "hypothesis"), label="label", label_names=names)


def _labels_and_splits(p) -> tuple[np.ndarray, np.ndarray]:
    """A phenomenon's label names and released split, one per row (train rows first)."""
    from loading_scripts.tables import arrow_column

    ids = arrow_column(p.rows, "label").to_numpy(zero_copy_only=False)
    released = np.repeat(np.array(["train", "validation"], dtype=object),
                         [p.split_sizes["train"], p.split_sizes["validation"]])
    return np.asarray(p.label_set, dtype=object)[ids], released


def _by_phenomenon(configs: dict, method: str) -> dict:
    """``{phenomenon: [config, ...]}`` of the recorded configs of ``method``."""
    out: dict = {}
    for name, entry in configs.items():
        if entry.get("method") == method:
            out.setdefault(entry["parameters"]["phenomenon"], []).append(name)
    return out


def _rederive_inoculation(released, configs: dict, *, content: bool = False, seed=None) -> list:
    """Inoculation configs drawn again from their phenomenon's released rows: the labels of the
    ``<phenomenon>`` config (or its hypothesis-only variant) and the split of each row from the sizes the
    card records (so a row moved in the phenomenon's files is reported there, not in every subset), train
    rows in ``source_id`` order as the build saw them. A phenomenon without either config in the release
    is left out (not checked)."""
    from split_builders.splits import row_ids

    out = []
    for phenomenon, members in _by_phenomenon(configs, INOCULATION).items():
        base = next((c for c in (phenomenon, phenomenon + HYPOTHESIS_ONLY) if c in released.files), None)
        if base is None:
            continue
        table, splits = released.rows(base)
        sizes = (configs[base].get("parameters") or {}).get("released_rows")
        if sizes is not None:  # the released split of each row, from the card (as the phenomenon's own check)
            splits = np.where(row_ids(table) < int(sizes["train"]), "train", "validation").astype(object)
        keys = _released_keys(table, configs, phenomenon) if content else None
        if content and keys is None:  # released without its premises: the content keys cannot be read back
            continue
        out += rederive_inoculation(table.column("label").to_numpy(zero_copy_only=False), splits,
                                    [configs[name]["parameters"] for name in members], rows=table,
                                    prefix=phenomenon + "_", keys=keys)
    return out


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


def inoculation_table(configs) -> str:
    """The training rows of each inoculation config per label, and where a label has fewer rows than
    the size asks for (the config then holds all of them)."""
    lines = ["| config | rows per label (drawn / available) | train | validation |", "|---|---|---|---|"]
    short = []
    for c in configs:
        per_label = c.parameters["per_label"]
        cells = ", ".join(f"{label} {drawn}" + (f"/{available} (all)" if available < c.parameters["size"] else "")
                          for label, (drawn, available) in per_label.items())
        lines.append(f"| `{c.name}` | {cells} | {len(c.indices['train'])} | {len(c.indices['validation'])} |")
        short += [label for label, (_, available) in per_label.items() if available < c.parameters["size"]]
    note = ("Every label has at least as many training rows as every size asks for." if not short else
            f"{len(short)} (config, label) pair(s) have fewer training rows than the size: those configs hold all "
            "of that label's rows, marked `(all)`; a size above every label's count repeats the whole train split.")
    return note + "\n\n" + "\n".join(lines)


def _labels(phenomenon) -> np.ndarray:
    """A phenomenon's label column as one array (the whole column, not row by row)."""
    from loading_scripts.tables import arrow_column

    return arrow_column(phenomenon.rows, "label").to_numpy(zero_copy_only=False)


def _label_share(phenomenon, label: str) -> float:
    """Share of a phenomenon's rows with ``label`` (0 when the label is not in its set)."""
    if label not in phenomenon.label_set:
        return 0.0
    ids = _labels(phenomenon)
    return float((ids == phenomenon.label_set.index(label)).mean()) if ids.size else 0.0
