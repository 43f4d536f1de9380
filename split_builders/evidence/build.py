"""The evidence of a build: every registered view its options enable, computed on the rows it is about to
release, rendered for the card and recorded for the README's YAML."""

from __future__ import annotations

from dataclasses import dataclass, field

from split_builders.evidence import views
from split_builders.evidence.fields import NoTextError
from split_builders.evidence.inputs import EvidenceInput


@dataclass
class Evidence:
    """``reports``: ``{view name: report}`` of the views a build ran, in the registry's order."""

    reports: dict = field(default_factory=dict)

    def sections(self) -> list:
        """The card's :class:`~split_builders.cardspec.EvidenceSection` of each view."""
        return [views()[name].section(report) for name, report in self.reports.items()]

    def records(self) -> dict:
        """``{name: (settings, {config: numbers})}``: what the README's YAML records of each view."""
        return {name: views()[name].record(report) for name, report in self.reports.items()}


def build_evidence(rows, configs, *, record: dict, options, progress: bool = False) -> Evidence:
    """The evidence of the configs a build releases (``rows`` and ``configs`` as the writer takes them;
    ``record`` the release's provenance, its fields included): each view that ``options`` enable
    (:meth:`~split_builders.evidence.view.View.enabled`), left out where the rows hold nothing it reads. The views
    run at once, each in its own thread (:func:`~split_builders.overlap.concurrently`): each report is the one
    it computes alone."""
    from functools import partial

    from split_builders.overlap import concurrently

    data = EvidenceInput.from_build(rows, configs, record=record)
    data.fields  # resolved once, before the views share it
    enabled = {name: (view, settings) for name, view in list(views().items())
               if (settings := view.enabled(options)) is not None}

    def compute(view, settings):
        try:
            return view.compute(data, progress=progress, **settings)
        except NoTextError:
            return None

    reports = concurrently({name: partial(compute, view, settings) for name, (view, settings) in enabled.items()})
    return Evidence({name: report for name, report in reports.items() if report is not None})
