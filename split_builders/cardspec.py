"""The plain data types of a release card: what a method (and each evidence view) says in it, without any
I/O or dependency: :class:`CardSpec` (the method's text), :class:`Section`, :class:`Figure` and :class:`Panel`
(figure specifications), :class:`EvidenceSection` (what an evidence view shows). :mod:`split_builders.release.card`
lays them out and draws the figures."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Panel:
    """One plot of a figure.

    ``kind``: ``"hist"`` (continuous values, 40 shared bins, density), ``"discrete"`` (integer
    values, one bin each, density) or ``"bars"`` (``series`` holds one count per category of
    ``categories``; grouped bars).
    """

    xlabel: str
    series: dict
    kind: str = "hist"
    categories: list | None = None
    ylabel: str | None = None
    markers: dict | None = None  # {label: x}: a vertical line at x per label (a config's value over a null)


@dataclass
class Figure:
    """A PNG of one or more panels side by side, written at ``path`` inside the release."""

    path: str
    title: str
    panels: list
    alt: str = ""


@dataclass
class Section:
    """A titled part of the card: Markdown text and figures shown after it."""

    title: str
    text: str = ""
    figures: list = field(default_factory=list)


@dataclass
class CardSpec:
    """What a method says in its card; :func:`split_builders.release.card.render` lays it out in the shared
    skeleton.

    Attributes
    ----------
    title : str
        The card's heading.
    intro : str
        What the release is (a paragraph).
    how_built : list of str
        Paragraphs of "How the splits were built" (the signal, its parameters, filters).
    configs : list of Section
        "How the splits differ": one section per config (or per group of configs).
    columns : dict
        Extra columns of the configs table: ``{column title: {config: cell text}}``.
    descriptions : dict
        ``{config: what it holds out}`` for the configs table (default: the config's description).
    extra : list of Section
        Sections after "How the splits differ" (maps, per-phenomenon tables, ...).
    citation : str
        BibTeX or a reference line of the source dataset (the method's paper is added).
    """

    title: str
    intro: str
    how_built: list = field(default_factory=list)
    configs: list = field(default_factory=list)
    columns: dict = field(default_factory=dict)
    descriptions: dict = field(default_factory=dict)
    extra: list = field(default_factory=list)
    citation: str | None = None
    duplicates: dict | None = None  # filled by the builder (builder.duplicate_report)
    evidence: list = field(default_factory=list)  # filled by the builder: an EvidenceSection per view it ran
    repo_id: str | None = None  # filled by the builder: the Hub repository, where known (--org, a recipe)
    labels: dict | None = None  # filled by the builder (label_view): the label column and its class names


@dataclass
class EvidenceSection:
    """What one evidence view shows in the card (:meth:`split_builders.evidence.view.View.section`).

    ``lines``: its section (Markdown, heading included), followed by ``figures``; ``columns``: columns of the
    configs table (``{title: {config: cell}}``); ``notes``: paragraphs under that table; ``covers_duplicates``:
    its columns replace the table's plain count of evaluation rows duplicated in train.
    """

    name: str
    lines: list
    figures: list = field(default_factory=list)
    columns: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    covers_duplicates: bool = False
