"""Evidence of what a release's splits test, as a registry of views with one protocol
(:class:`~split_builders.evidence.view.View`): the leakage audit (:mod:`.audit`), diagnostics against random
splits of the same sizes (:mod:`.diagnostics`) and a quick baseline probe (:mod:`.probe`), each computed on an
:class:`~split_builders.evidence.inputs.EvidenceInput` (a build, a release folder, a dataset folder or a Hub id)
whose fields come from one resolver (:mod:`.fields`).

A new view is one module (a ``View`` subclass) plus one line in :data:`BUILTIN`, one :func:`register_view` call
from your own code, or an entry point of an installed package (group ``resplit.views``, enabled by name in
``RESPLIT_VIEWS``: see :mod:`split_builders.registry`): it then appears in every card and YAML header its build
enables it in, and as a ``resplit`` subcommand with ``--json``. Views live in the one registry of
:mod:`split_builders.registry` (kind ``views``), beside the methods.
"""

from __future__ import annotations

from split_builders.evidence.view import Setting, View
from split_builders.registry import REGISTRY

# The built-in views, in the order of the card: name -> "module:attribute" (each module defines ``VIEW``).
BUILTIN = {"audit": "split_builders.evidence.audit_card:VIEW",
           "diagnostics": "split_builders.evidence.diagnostics_card:VIEW",
           "probe": "split_builders.evidence.probe_card:VIEW"}


def register_view(view: View) -> View:
    """Add ``view`` (a :class:`View` instance) to the registry; a second view of a name or a subcommand is refused."""
    if not isinstance(view, View):
        raise TypeError(f"an evidence view must be a View instance, got {type(view).__name__}")
    if not view.name:
        raise ValueError(f"{type(view).__name__} has no name")
    known = views()
    if view.name in known:
        raise ValueError(f"an evidence view named {view.name!r} is registered already")
    if any(other.subcommand == view.subcommand for other in known.values()):
        raise ValueError(f"an evidence view with the subcommand {view.subcommand!r} is registered already")
    REGISTRY.add("views", view.name, view)
    return view


def unregister_view(name: str) -> None:
    """Remove the view ``name`` (tests that register a view of their own)."""
    REGISTRY.remove("views", name)


def views() -> dict:
    """``{name: View}`` of every registered view, in order (the built-in ones first)."""
    return REGISTRY.items("views")


def get_view(name: str) -> View:
    """The registered view ``name``."""
    if name not in REGISTRY.names("views"):
        raise ValueError(f"unknown evidence view {name!r}; known: {', '.join(REGISTRY.names('views'))}")
    return REGISTRY.get("views", name)


__all__ = ["BUILTIN", "Setting", "View", "get_view", "register_view", "unregister_view", "views"]
