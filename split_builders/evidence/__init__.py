"""Evidence of what a release's splits test, as a registry of views with one protocol
(:class:`~split_builders.evidence.view.View`): the leakage audit (:mod:`.audit`), diagnostics against random
splits of the same sizes (:mod:`.diagnostics`) and a quick baseline probe (:mod:`.probe`), each computed on an
:class:`~split_builders.evidence.inputs.EvidenceInput` (a build, a release folder, a dataset folder or a Hub id)
whose fields come from one resolver (:mod:`.fields`).

A new view is one module (a ``View`` subclass) plus one line in :data:`BUILTIN`, or one :func:`register_view`
call from your own code: it then appears in every card and YAML header its build enables it in, and as a
``resplit`` subcommand with ``--json``.
"""

from __future__ import annotations

from importlib import import_module

from split_builders.evidence.view import Setting, View

# The built-in views, in the order of the card: each module defines ``VIEW``.
BUILTIN = ("split_builders.evidence.audit_card", "split_builders.evidence.diagnostics_card",
           "split_builders.evidence.probe_card")

_VIEWS: dict = {}
_LOADED = False


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
    _VIEWS[view.name] = view
    return view


def unregister_view(name: str) -> None:
    """Remove the view ``name`` (tests that register a view of their own)."""
    views().pop(name, None)


def views() -> dict:
    """``{name: View}`` of every registered view, in order (the built-in ones first)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for module in BUILTIN:
            view = import_module(module).VIEW
            _VIEWS.setdefault(view.name, view)
    return _VIEWS


def get_view(name: str) -> View:
    """The registered view ``name``."""
    try:
        return views()[name]
    except KeyError:
        raise ValueError(f"unknown evidence view {name!r}; known: {', '.join(views())}") from None


__all__ = ["BUILTIN", "Setting", "View", "get_view", "register_view", "unregister_view", "views"]
