"""Evidence of what a release's splits test, computed on whole columns of its released rows: diagnostics set
against random splits of the same sizes (:mod:`.diagnostics`) and a quick baseline probe (:mod:`.probe`)."""

from __future__ import annotations

from importlib import import_module

# Each kind of evidence and the module whose ``yaml_record(report) -> (settings, {config: numbers})`` records it.
VIEWS = {"audit": "split_builders.release.audit", "diagnostics": "split_builders.evidence.diagnostics",
         "probe": "split_builders.evidence.probe"}


def evidence_records(evidence: dict) -> dict:
    """``{name: (settings, {config: numbers})}`` of the reports in ``evidence`` (``{name: report or
    None}``), in the order of :data:`VIEWS`: what the README's YAML records as ``resplit.<name>`` and
    ``resplit.configs.<config>.<name>``."""
    unknown = set(evidence) - set(VIEWS)
    if unknown:
        raise ValueError(f"unknown evidence {sorted(unknown)}; known: {', '.join(VIEWS)}")
    return {name: import_module(VIEWS[name]).yaml_record(evidence[name])
            for name in VIEWS if evidence.get(name) is not None}
