"""The protocol of an evidence view: what it computes on a release's rows, and how it records, renders and
reports the result.

A view is a :class:`View` subclass in one module, registered with
:func:`split_builders.evidence.register_view`. Shared code knows nothing else about it: a build runs every
view its options enable (:meth:`View.enabled`) and puts each one's section in the card
(:meth:`View.section`) and its numbers in the README's YAML (:meth:`View.record`: ``resplit.<name>`` and
``resplit.configs.<config>.<name>``); ``resplit <command> TARGET`` computes it on any release or dataset
and prints :meth:`View.format_report` or, with ``--json``, the report itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from split_builders.cardspec import EvidenceSection


@dataclass(frozen=True)
class Setting:
    """One setting of a view: the keyword of :meth:`View.compute`, its command-line ``flag``, ``default`` and
    ``help``; ``parse`` reads the flag's text (argparse's ``type``), ``check`` validates the value (raising an
    :class:`~split_builders.errors.InvalidParameterError`) before anything is read."""

    name: str
    flag: str
    default: Any
    help: str
    parse: Callable = str
    check: Callable | None = None

    def value(self, given):
        return self.check(given) if self.check is not None and given is not None else given


def names(text: str | None) -> tuple | None:
    """A comma-separated setting (``--fields a,b``, ``--configs a,b``) as a tuple of names; None when not given."""
    return tuple(part.strip() for part in text.split(",") if part.strip()) if text else None


def aligned(headers: list, rows: list, *, left: int = 2) -> list[str]:
    """A terminal table: the first ``left`` columns left-aligned, the others right-aligned."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    return [line(headers), *(line(r) for r in rows)]


class View:
    """Base class of an evidence view.

    Attributes
    ----------
    name : str
        Registry key; the YAML records the view as ``resplit.<name>`` and ``resplit.configs.<config>.<name>``.
    command : str
        Its ``resplit`` subcommand (default: ``name``).
    title : str
        The heading of its card section.
    summary, description : str
        The subcommand's help line and description.
    json_help : str
        What ``--json`` prints, for ``--help``.
    settings : tuple of Setting
        Its settings: keywords of :meth:`compute` and the subcommand's flags.
    covers_duplicates : bool
        Whether its table columns replace the card's plain count of evaluation rows duplicated in train.
    """

    name: str = ""
    command: str = ""
    title: str = ""
    summary: str = ""
    description: str = ""
    json_help: str = "the report"
    settings: tuple = ()
    covers_duplicates: bool = False

    def enabled(self, options) -> dict | None:
        """The settings a build with ``options`` computes the view with, or None where it does not run it."""
        return {}

    def compute(self, data, *, progress: bool = False, **settings) -> dict:
        """The report (a plain, JSON-ready dict) of ``data`` (an :class:`~split_builders.evidence.inputs.EvidenceInput`).
        Raises :class:`~split_builders.evidence.fields.NoTextError` where the rows hold nothing to compute on."""
        raise NotImplementedError

    def record(self, report: dict) -> tuple[dict, dict]:
        """What the README's YAML records: ``(settings, {config: numbers})``."""
        raise NotImplementedError

    def card_lines(self, report: dict) -> list[str]:
        """The card section's Markdown lines, heading included."""
        raise NotImplementedError

    def figures(self, report: dict) -> list:
        """The section's :class:`~split_builders.cardspec.Figure` specifications (drawn after its lines)."""
        return []

    def table_columns(self, report: dict) -> dict:
        """Columns of the card's configs table: ``{title: {config: cell}}``."""
        return {}

    def notes(self, report: dict) -> list[str]:
        """Paragraphs shown under the card's configs table."""
        return []

    def format_report(self, report: dict) -> list[str]:
        """The lines ``resplit <command>`` prints."""
        raise NotImplementedError

    def section(self, report: dict) -> EvidenceSection:
        """Everything the card shows of ``report``."""
        return EvidenceSection(self.name, self.card_lines(report), self.figures(report), self.table_columns(report),
                               self.notes(report), self.covers_duplicates)

    @property
    def subcommand(self) -> str:
        return self.command or self.name
