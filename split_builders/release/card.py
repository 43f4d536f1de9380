"""The human part of a release card, one skeleton for every split method.

Every card has the same sections, in order: what it is (title and intro), how to load it, the
configs table (sizes per split plus the method's columns), how it was built, how the splits differ
(one subsection per config, with figures), anything else the method adds, and the source and
citations. A method describes its card as a :class:`CardSpec` of text and :class:`Figure`
specifications (no I/O); :func:`render` draws the figures into the release and writes the Markdown.

The statistics method cards show per split live in :mod:`split_builders.summaries`; the plain data types (:class:`CardSpec`,
:class:`Section`, :class:`Figure`, :class:`Panel`, :class:`EvidenceSection`) live in
:mod:`split_builders.cardspec`; every evidence view the build ran brings its own section.

:func:`hub_metadata` is the card's Hub metadata (the YAML keys the Hub's search and filters read):
``pretty_name``, ``license``, ``language``, ``task_categories`` and ``task_ids`` (from the method's
:class:`~split_builders.api.Fields`, in the Hub's own vocabulary), ``size_categories`` (the Hub's
buckets), ``source_datasets`` and ``tags``.
"""

from __future__ import annotations

from pathlib import Path

import re

import numpy as np

from split_builders.splits import SPLITS
from split_builders.cardspec import CardSpec, Figure, Panel, Section

SPLIT_COLOURS = {"train": "#4c72b0", "validation": "#dd8452", "test": "#c44e52"}
# A discrete histogram draws one bin per whole value up to this many; a wider range (one 2 MB text among short ones)
# gets bins of several whole values each: drawing millions of bins took minutes and showed nothing more.
MAX_DISCRETE_BINS = 1000
UNKNOWN_LICENSE = "unknown"  # the Hub's own id for "not stated"; push refuses it
# The load snippet's dataset before the Hub repository is known (push fills in the one it uploads to).
REPO_PLACEHOLDER = "ORG/NAME"
# The Hub's size buckets (upper bounds, exclusive) for ``size_categories``.
SIZE_BUCKETS = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
                (10_000_000_000, "1B<n<10B"), (100_000_000_000, "10B<n<100B"), (1_000_000_000_000, "100B<n<1T"))
# The Hub's task ids (``task_ids``) of the task categories resplit writes: the subtasks of each pipeline type in
# huggingface.js, packages/tasks/src/pipelines.ts (PIPELINE_DATA; SUBTASK_TYPES is their union). A task category
# such as text2text-generation is not a task id; text-generation has no subtask for semantic parsing.
HUB_TASK_IDS = {
    "text-classification": ("acceptability-classification", "entity-linking-classification", "fact-checking",
                            "intent-classification", "language-identification", "multi-class-classification",
                            "multi-label-classification", "multi-input-text-classification",
                            "natural-language-inference", "semantic-similarity-classification",
                            "sentiment-classification", "topic-classification", "semantic-similarity-scoring",
                            "sentiment-scoring", "sentiment-analysis", "hate-speech-detection", "text-scoring"),
    "question-answering": ("extractive-qa", "open-domain-qa", "closed-domain-qa"),
    "text-generation": ("dialogue-modeling", "dialogue-generation", "conversational", "language-modeling"),
}
# CheckList suites by a word of their name: (task category, task id) in the Hub's vocabulary.
SUITE_TASKS = {"sentiment": ("text-classification", "sentiment-classification"),
               "qqp": ("text-classification", "semantic-similarity-classification"),
               "squad": ("question-answering", "extractive-qa")}
NLI_LABELS = {"entailment", "contradiction", "neutral", "not_entailment", "non-entailment"}


# ---------------------------------------------------------------------------------------------
# Hub metadata
# ---------------------------------------------------------------------------------------------


ROW_ORDER_TEXT = {
    "content": ("Row order rule: `content`. Every random draw and every tie-break follows each row's content key "
                "(a hash of its fields) and the seed, never its position in the source: the same rows in any order, "
                "or read through another reader, give the same configs (recorded as `row_order: content`)."),
    "position": ("Row order rule: `position`. Random draws and ties follow the rows' order in the source, as the "
                 "reference generators draw them and as releases built before the rule was recorded: the same rows "
                 "in another order give other configs (recorded as `row_order: position`)."),
}
"""The card's sentence on the row order rule a release was built under (the option ``row_order``)."""


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a dataset of ``rows`` examples (``n<1K``, ``1K<n<10K``, ...)."""
    for bound, name in SIZE_BUCKETS:
        if rows < bound:
            return name
    return "n>1T"


def hub_tasks(fields, *, hint: str = "") -> tuple[list, list]:
    """``task_categories`` and ``task_ids`` (the Hub's vocabulary) of rows a method declares as ``fields``.

    Task ids are only those of the Hub's list (:data:`HUB_TASK_IDS`). Semantic parsing is ``text-generation``
    (no task id); classification is
    ``text-classification``, with ``natural-language-inference`` for premise/hypothesis pairs or NLI
    labels, else ``multi-class-classification`` for more than two classes, and
    ``multi-input-text-classification`` for more than one text column; a CheckList suite's task comes
    from its name (``hint``: sentiment, QQP, SQuAD). Nothing for text-only rows or undeclared fields.
    """
    if fields is None or fields.task not in ("classification", "semantic_parsing", "behavioural"):
        return [], []
    if fields.task == "semantic_parsing":  # no task id of the Hub's list fits: none
        return ["text-generation"], []
    if fields.task == "behavioural":
        found = next((task for word, task in SUITE_TASKS.items() if word in hint.lower()), None)
        return ([found[0]], _known_ids(found[0], [found[1]])) if found else (["text-classification"], [])
    names = {str(name).lower() for name in fields.label_names or ()}
    ids = []
    if {"premise", "hypothesis"} <= set(fields.text) or len(names & NLI_LABELS) >= 2:
        ids.append("natural-language-inference")
    elif len(names) > 2:
        ids.append("multi-class-classification")
    if len(fields.text) > 1:
        ids.append("multi-input-text-classification")
    return ["text-classification"], _known_ids("text-classification", ids)


def _known_ids(category: str, ids: list) -> list:
    """``ids`` that are task ids of ``category`` in the Hub's list (:data:`HUB_TASK_IDS`), in order."""
    return [i for i in ids if i in HUB_TASK_IDS.get(category, ())]


def source_datasets(info) -> list[str]:
    """``source_datasets``: the source's Hub id where known (``extended|org/name``: resplit adds columns
    and splits), else ``extended|other-<name>`` (the Hub's form for a dataset that is not on it)."""
    if info.hub_id:
        return [f"extended|{info.hub_id}"]
    name = re.split(r" \(|: ", str(info.name))[0].rsplit("/", 1)[-1].split(".")[0]
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return [f"extended|other-{slug}"] if slug else []


def label_view(fields, features) -> dict | None:
    """The label column and its class names in class order, for the card's load section:
    ``{"column", "names", "class_label"}`` from the column's ``ClassLabel``, else from the declared
    ``Fields.label_names`` (a column of names); None when there is no label with names. The declared
    label column is looked up as declared, then as ``label`` (the name a label is released under)."""
    import datasets

    if features is None:
        return None
    declared = [fields.label, "label"] if fields is not None and fields.label else []
    column = next((name for name in declared if name in features), None) if fields is not None else next(
        (name for name, feature in features.items() if isinstance(feature, datasets.ClassLabel)), None)
    if column is None:
        return None
    if isinstance(features[column], datasets.ClassLabel):
        return {"column": column, "names": list(features[column].names), "class_label": True}
    if fields is not None and fields.label_names:
        return {"column": column, "names": list(fields.label_names), "class_label": False}
    return None


def hub_metadata(*, method, info, fields, sizes: dict, license: str | None = None, language=None,
                 pretty_name: str | None = None) -> dict:
    """The card's Hub metadata, in the order the Hub shows it (keys without a value are left out).

    ``sizes`` is ``{config: {split: rows}}``: ``size_categories`` is the bucket of the largest config;
    ``license`` defaults to ``unknown`` (which push refuses); ``tags`` are ``resplit`` and the method.
    """
    categories, ids = hub_tasks(fields, hint=str(info.name))
    rows = max((sum(splits.values()) for splits in sizes.values()), default=0)
    tags = ["resplit", method.name, *({"semantic_parsing": ["semantic-parsing"],
                                       "behavioural": ["checklist"]}.get(getattr(fields, "task", None), []))]
    metadata = {"pretty_name": pretty_name, "license": license or UNKNOWN_LICENSE,
                "language": list(language) if language else None, "task_categories": categories,
                "task_ids": ids, "size_categories": [size_category(rows)], "source_datasets": source_datasets(info),
                "tags": tags}
    # task_ids stays (an empty list) beside a task category: "no task id fits" is stated, not left out
    return {key: value for key, value in metadata.items() if value or (key == "task_ids" and categories)}


# ---------------------------------------------------------------------------------------------
# The card skeleton and figure specifications
# ---------------------------------------------------------------------------------------------


def render_figure(path: Path, figure: Figure) -> None:
    """Draw ``figure`` as a PNG at ``path`` (stable bytes: no software version in the metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(figure.panels)
    fig, axes = plt.subplots(1, n, figsize=(5 * n, 3.6), squeeze=False)
    for ax, panel in zip(axes[0], figure.panels):
        _draw_panel(ax, panel)
    fig.suptitle(figure.title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)


def _colour(label: str, position: int) -> str:
    palette = ["#4c72b0", "#dd8452", "#c44e52", "#55a868", "#8172b3", "#937860"]
    return SPLIT_COLOURS.get(str(label).split(" ")[0], palette[position % len(palette)])


def _draw_panel(ax, panel: Panel) -> None:
    if panel.kind == "bars":
        categories = list(panel.categories or [])
        width = 0.8 / max(len(panel.series), 1)
        positions = np.arange(len(categories))
        for i, (label, counts) in enumerate(panel.series.items()):
            ax.bar(positions + i * width - 0.4 + width / 2, counts, width=width, label=str(label),
                   color=_colour(label, i))
        ax.set_xticks(positions)
        ax.set_xticklabels([str(c) for c in categories], rotation=90 if len(categories) > 6 else 0, fontsize=6)
        ax.set_ylabel(panel.ylabel or "rows")
    else:
        values = [np.asarray(v, dtype=float) for v in panel.series.values()]
        everything = np.concatenate(values) if values else np.array([])
        if not everything.size:
            bins = 10
        elif panel.kind == "discrete":
            low, high = everything.min(), everything.max()
            width = max(1, int(np.ceil((high - low + 1) / MAX_DISCRETE_BINS)))  # 1: one bin per value, as always
            bins = np.arange(low, high + width + 1, width) - 0.5
        else:
            low, high = float(everything.min()), float(everything.max())
            # One value everywhere (a statistic every split shares): one bin around it, not 40 of width zero.
            bins = np.linspace(low, high, 41) if high > low else np.array([low - 0.5, high + 0.5])
        for i, (label, data) in enumerate(zip(panel.series, values)):
            if data.size:
                ax.hist(data, bins=bins, density=True, histtype="step", linewidth=1.6, color=_colour(label, i),
                        label=f"{label} ({data.size})")
        ax.set_ylabel(panel.ylabel or "density")
    palette = ["#c44e52", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"]
    for i, (label, x) in enumerate((panel.markers or {}).items()):
        ax.axvline(float(x), color=palette[i % len(palette)], linestyle="--", linewidth=1.4, label=str(label))
    ax.set_xlabel(panel.xlabel)
    if panel.series:
        ax.legend(fontsize=8)


def render(spec: CardSpec, *, method, info, configs, written, staging: Path) -> str:
    """The card's Markdown in the shared skeleton; figures are drawn under ``staging``."""
    lines = [f"# {spec.title}", "", spec.intro.strip(), "",
             f"Built with resplit (`resplit {method.name}`).", "",
             *load_section(spec, configs[0].name, info, method=method, configs=configs), "## Configs", ""]
    columns = dict(spec.columns)
    covered = any(section.covers_duplicates for section in spec.evidence)  # the leakage audit counts duplicates
    for section in spec.evidence:
        columns.update(section.columns)
    if spec.duplicates is not None and not covered:
        columns["evaluation rows duplicated in train"] = spec.duplicates["eval_rows_in_train"]
    header = ["config", "train", "validation", "test", *columns, "what is held out"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for config in configs:
        files = written[config.name]
        sizes = [str(files[s].num_examples) if s in files else "-" for s in SPLITS]
        extra = [str(column.get(config.name, "")) for column in columns.values()]
        what = spec.descriptions.get(config.name, config.description)
        lines.append("| " + " | ".join([f"`{config.name}`", *sizes, *extra, what]) + " |")
    lines += ["", *_paragraphs([note for section in spec.evidence for note in section.notes])]
    lines += ["## How the splits were built", "", *_paragraphs(spec.how_built),
              f"Rows dropped while reading the source: {_filters(info.filters)}.", ""]
    lines += _grouping(configs)
    if spec.duplicates is not None:
        lines += [f"Exact duplicates: {spec.duplicates['duplicate_rows']} row(s) repeat an earlier row; the configs "
                  "table counts, per config, the evaluation rows whose exact duplicate is in train (`--dedupe` "
                  "drops duplicates before splitting, keeping the first `source_id`"
                  + ("; the leakage audit below has the details" if covered else "") + ").", ""]
    lines += [
              "The YAML header (`resplit:`) records the method, every parameter, the seed, the source's "
              "content hash or revision, the signal (model and revision, precision), the library versions "
              "and the sha256 of every data file.", "",
              "## How the splits differ", ""]
    for section in spec.configs:
        lines += _section(section, staging, level="###")
    for section in spec.extra:
        lines += [f"## {section.title}", "", section.text.strip(), ""]
        lines += _figures(section.figures, staging)
    for section in spec.evidence:  # each evidence view's section, in the order of the views' registry
        lines += section.lines
        lines += _figures(section.figures, staging)
    lines += ["## Source and citation", "",
              f"Source: {info.name}" + (f", license {info.license}." if info.license else "."), ""]
    if spec.citation or info.citation:
        lines += ["```bibtex", (spec.citation or info.citation).strip(), "```", ""]
    lines += [f"Method: {method.paper}"]
    return "\n".join(lines)


def load_section(spec: CardSpec, first: str, info, *, method=None, configs=()) -> list[str]:
    """"How to load it": the snippet (the Hub repository where known, else a placeholder that push
    fills in), the splits each config releases and the one to evaluate on (the method's declared
    ``evaluation_splits``), where ``source_id`` comes from, and the label's class names in class order."""
    repo = spec.repo_id or REPO_PLACEHOLDER
    evaluate_on = method.evaluation_split(configs[0].splits) if method is not None and configs else None
    lines = ["## How to load it", "", "```python", "from datasets import load_dataset", "",
             f'ds = load_dataset("{repo}", "{first}")']
    if evaluate_on:
        lines.append(f'evaluation = ds["{evaluate_on}"]')
    lines += ["```", ""]
    if not spec.repo_id:
        lines += [f"`{REPO_PLACEHOLDER}` stands for the Hub repository this release is published under (`resplit "
                  "push` writes it here in the copy it uploads), or the path of this folder to load it locally.", ""]
    lines += _splits_table(method, configs)
    lines += [f"Every row keeps `source_id` ({info.source_id}), so any split can be joined back to the source.", ""]
    labels = spec.labels
    if labels:
        names = ", ".join(f"{i} `{name}`" for i, name in enumerate(labels["names"]))
        lines += ([f"`{labels['column']}` is a `ClassLabel`; its classes in order: {names} "
                   f"(`ds[\"train\"].features[\"{labels['column']}\"].names`)."] if labels["class_label"] else
                  [f"`{labels['column']}` holds the class names as text; in class order: "
                   + ", ".join(f"`{name}`" for name in labels["names"]) + "."]) + [""]
    return lines


def _splits_table(method, configs) -> list[str]:
    """The splits the configs release and the split each is evaluated on, one table row per kind of config
    (configs releasing the same splits), and a line for the configs without a ``test`` split."""
    if method is None or not configs:
        return []
    kinds: dict = {}
    for config in configs:
        kinds.setdefault(config.splits, []).append(config.name)
    lines = ["| configs | splits | evaluate on |", "|---|---|---|"]
    for splits, names in kinds.items():
        shown = ", ".join(f"`{n}`" for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        where = method.evaluation_split(splits)
        lines.append(f"| {shown} | {', '.join(splits)} | {f'`{where}`' if where else 'none'} |")
    lines.append("")
    without = [n for splits, names in kinds.items() if "test" not in splits for n in names]
    if without:
        where = {method.evaluation_split(s) for s, names in kinds.items() if "test" not in s}
        target = " / ".join(f"`{w}`" for w in sorted(w for w in where if w)) or "no split"
        lines += [f"{len(without)} config(s) release no `test` split; evaluate them on {target} (the method's "
                  f"declared evaluation split: `{'`, then `'.join(method.evaluation_splits)}`, the first a config "
                  "releases).", ""]
    return lines


def _grouping(configs) -> list[str]:
    """The line saying which configs keep a ``--group-field``'s groups whole."""
    fields = {c.parameters.get("grouped_by") for c in configs if c.parameters.get("grouped_by")}
    if not fields:
        return []
    grouped = [f"`{c.name}`" for c in configs if c.parameters.get("grouped_by")]
    others = [f"`{c.name}`" for c in configs if not c.parameters.get("grouped_by")]
    line = (f"Grouped by {', '.join(f'`{f}`' for f in sorted(fields))} (`--group-field`): in "
            f"{', '.join(grouped)}, rows that share the value are kept in one split, so no group straddles train, "
            "validation and test; sizes and label balance are met as closely as whole groups allow (the tables "
            "show the label shares per split).")
    missing = max((int(c.parameters.get("missing_group_values") or 0) for c in configs), default=0)
    if missing:  # the one policy for missing values (splitters.groups), which the audit follows
        line += (f" {missing} row(s) have no value (null or empty): each is a group of its own and may sit in any "
                 "split (the audit counts no missing value as shared).")
    if others:
        line += f" Not grouped: {', '.join(others)} (the method's note says why)."
    return [line, ""]


def _paragraphs(texts) -> list[str]:
    out = []
    for text in texts:
        if text:
            out += [text.strip(), ""]
    return out


def _filters(filters: dict) -> str:
    if not filters:
        return "none"
    return ", ".join(f"{reason}: {count}" for reason, count in filters.items())


def _section(section: Section, staging: Path, *, level: str) -> list[str]:
    lines = [f"{level} {section.title}", ""]
    if section.text:
        lines += [section.text.strip(), ""]
    return lines + _figures(section.figures, staging)


def _figures(figures, staging: Path) -> list[str]:
    lines = []
    for figure in figures:
        render_figure(staging / figure.path, figure)
        lines += [f"![{figure.alt or figure.title}]({figure.path})", ""]
    return lines
