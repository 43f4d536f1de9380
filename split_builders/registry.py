"""One registry for what resplit is extended with: split methods (``methods``), evidence views (``views``) and room
for report readers (``readers``).

Every entry is a name and, until it is first used, a lazy ``"module:attribute"`` string, so importing the registry
imports no method or view. The entries come from three places, in this order:

1. the built-in tables (:data:`split_builders.methods.BUILTIN`, :data:`split_builders.evidence.BUILTIN`);
2. Python entry points of installed distributions, groups :data:`ENTRY_POINT_GROUPS` (``resplit.methods``,
   ``resplit.views``): a package adds a method or a view by declaring one in its metadata, without touching
   resplit::

       [project.entry-points."resplit.methods"]
       my-method = "my_package.module:MyMethod"

   A third-party method is registered under its entry point's name (which must be its ``info.name``). A
   third-party *view* is off until it is enabled by name in the environment variable :data:`VIEWS_ENV`
   (``RESPLIT_VIEWS=name1,name2``) or, for one build, with the command's ``--view NAME`` (:meth:`Registry.enable`):
   a view runs in every build, so an installed package must not change what a release holds unless asked to;
3. :func:`register` (a method) and ``evidence.register_view`` (a view) from your own code.

A second entry of a name is refused, whichever place it comes from. A method's name need not be a module name.

A plug-in (an entry point) fails alone: one that fails to import or to check is left out with one
:class:`~split_builders.errors.PluginWarning` line naming its distribution and the error, when its name is first used
(listing every method, as ``resplit --help`` does, uses every name); one whose name is reserved (a built-in method
or view, or, for a view, a key of a release's provenance, beside which its record is written) or declared already
is left out the same way, and never replaces the entry it names.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
import warnings

from split_builders.contracts import REQUIRED_HOOKS, SplitMethod
from split_builders.errors import InvalidParameterError, PluginWarning

KINDS = ("methods", "views", "readers")
ENTRY_POINT_GROUPS = {"methods": "resplit.methods", "views": "resplit.views", "readers": "resplit.readers"}
BUILTIN_TABLES = {"methods": "split_builders.methods", "views": "split_builders.evidence"}
"""The module whose ``BUILTIN`` (``{name: "module:attribute"}``) lists a kind's built-in entries (imported by name)."""
VIEWS_ENV = "RESPLIT_VIEWS"
"""Comma-separated names of the third-party (entry point) views to enable; none by default."""
PROVENANCE = "split_builders.release.provenance"
"""The module whose ``RECORD_KEYS`` and ``CONFIG_KEYS`` no view may be named like (imported by name: the release's
format is a layer above)."""


def load_target(target: str):
    """The object a ``"module:attribute"`` string names (``attribute`` may be dotted)."""
    module, _, attribute = target.partition(":")
    if not module or not attribute:
        raise InvalidParameterError(f"{target!r} is not a 'module:attribute' reference")
    found = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


class Registry:
    """Entries of every kind in :data:`KINDS`, each a name mapped to a lazy ``"module:attribute"`` or a loaded
    object, in order (built-in, entry points, registered). ``make`` turns what a reference names into the
    registered object and checks it (a method class into its checked instance), per kind."""

    def __init__(self, *, entry_points: bool = True):
        self._entries = {kind: {} for kind in KINDS}   # name -> object, or the "module:attribute" not yet loaded
        self._origins = {kind: {} for kind in KINDS}   # name -> "built-in", "entry point <dist>" or "registered"
        self._disabled = {kind: {} for kind in KINDS}  # third-party views not enabled: name -> (reference, origin)
        self._left_out = {kind: {} for kind in KINDS}  # plug-ins refused or broken: name -> the one line said
        self._plugins = {kind: {} for kind in KINDS}  # entry points: name -> "the plug-in DIST VERSION (...)"
        self._started = set()
        self._entry_points = entry_points
        self.makers = {"methods": _make_method, "views": _make_view, "readers": lambda obj, name: obj}

    # -- filling -------------------------------------------------------------------------------------------
    def _start(self, kind: str) -> None:
        """Fill ``kind`` once: its built-in table, then its entry points."""
        if kind in self._started:
            return
        self._started.add(kind)
        table = BUILTIN_TABLES.get(kind)
        if table is not None:
            for name, target in importlib.import_module(table).BUILTIN.items():
                self._declare(kind, name, target, "built-in")
        if self._entry_points:
            self._discover(kind)

    def _discover(self, kind: str) -> None:
        from importlib.metadata import entry_points

        enabled = {name.strip() for name in os.environ.get(VIEWS_ENV, "").split(",") if name.strip()}
        points = entry_points(group=ENTRY_POINT_GROUPS[kind])
        reserved = self._reserved(kind) if points else {}
        for point in points:
            origin = f"entry point of {point.dist.name if point.dist is not None else 'an installed package'}"
            plugin = _plugin(point)
            taken = reserved.get(point.name) or (
                f"declared already ({(self._origins[kind].get(point.name) or self._disabled[kind][point.name][1])})"
                if point.name in self._entries[kind] or point.name in self._disabled[kind] else None)
            if taken:
                self._leave_out(kind, point.name, f"{plugin} declares a {kind[:-1]} named {point.name!r}, which is "
                                                  f"{taken}: it is left out (the plug-in must rename it)")
                continue
            self._plugins[kind][point.name] = plugin
            if kind == "views" and point.name not in enabled:
                self._disabled[kind][point.name] = (point.value, origin)
            else:
                self._declare(kind, point.name, point.value, origin)

    def _reserved(self, kind: str, *, builtin: bool = True) -> dict:
        """``{name: what reserves it}``: what no entry of ``kind`` from a plug-in may be named (the built-in methods and
        views with ``builtin``; for a view, the keys of a release's provenance)."""
        reserved = {}
        if kind == "views":
            provenance = importlib.import_module(PROVENANCE)
            reserved.update((key, f"a key of the release's provenance ({PROVENANCE}.RECORD_KEYS / CONFIG_KEYS)")
                            for key in (*provenance.RECORD_KEYS, *provenance.CONFIG_KEYS))
        for table_kind, table in BUILTIN_TABLES.items() if builtin else ():
            reserved.update((name, f"the built-in {table_kind[:-1]} {name!r}")
                            for name in importlib.import_module(table).BUILTIN)
        return reserved

    def _leave_out(self, kind: str, name: str, line: str, *, declared: bool = False) -> None:
        """Leave a plug-in's entry out (``declared``: remove the entry it declared), with one :class:`PluginWarning`
        line; asked for by name, it is refused in the same line (where no other entry has the name)."""
        self._left_out[kind][name] = line
        if declared:
            self._entries[kind].pop(name, None)
            self._origins[kind].pop(name, None)
        warnings.warn(line, PluginWarning, stacklevel=3)

    def _declare(self, kind: str, name: str, entry, origin: str) -> None:
        if name in self._entries[kind]:
            raise InvalidParameterError(f"{origin} declares a {kind[:-1]} named {name!r}, which is registered already "
                                        f"({self._origins[kind][name]})")
        self._entries[kind][name] = entry
        self._origins[kind][name] = origin

    def add(self, kind: str, name: str, obj, origin: str = "registered") -> None:
        """Add a loaded object; a second name, and a view named like a key of a release's provenance, are refused."""
        self._start(kind)
        taken = self._reserved(kind, builtin=False).get(name)
        if taken:
            raise InvalidParameterError(f"a {kind[:-1]} may not be named {name!r}: that is {taken}; rename it")
        self._declare(kind, name, obj, origin)

    def enable(self, kind: str, name: str) -> None:
        """Turn on the installed entry point ``name`` of ``kind`` that was left off (a third-party view not named in
        :data:`VIEWS_ENV`), as naming it there would; one already on is left as it is. A name no installed package
        declares is refused in one line naming those that could be enabled."""
        self._start(kind)
        if name in self._entries[kind]:
            return
        if name in self._left_out[kind]:
            raise InvalidParameterError(self._left_out[kind][name])
        if name not in self._disabled[kind]:
            off = ", ".join(self._disabled[kind]) or "none"
            raise InvalidParameterError(f"no installed {kind[:-1]} named {name!r} to enable (installed and off: "
                                        f"{off}; on: {', '.join(self._entries[kind])})")
        self._declare(kind, name, *self._disabled[kind].pop(name))

    @contextlib.contextmanager
    def enabling(self, kind: str, names):
        """The installed entry points ``names`` of ``kind`` turned on (:meth:`enable`) for the ``with`` block, and
        those it turned on turned off again after it, so that one build's ``views=`` (or one command's ``--view``)
        changes no other. ``names``: a name or an iterable of names; a name no installed package declares is refused
        in :meth:`enable`'s one line before the block runs."""
        names = (names,) if isinstance(names, str) else tuple(names or ())
        unnamed = [name for name in names if not isinstance(name, str) or not name]
        if unnamed:
            raise InvalidParameterError(f"installed {kind} are enabled by their names (strings); got {unnamed[0]!r}")
        self._start(kind)
        turned = {}  # name -> (reference, origin) it had while off
        try:
            for name in names:
                off = self._disabled[kind].get(name)
                self.enable(kind, name)
                if off is not None:
                    turned[name] = off
            yield
        finally:
            for name, off in turned.items():
                self._entries[kind].pop(name, None)
                self._origins[kind].pop(name, None)
                self._disabled[kind][name] = off

    def remove(self, kind: str, name: str) -> None:
        self._start(kind)
        self._entries[kind].pop(name, None)
        self._origins[kind].pop(name, None)

    @contextlib.contextmanager
    def standing_in(self, kind: str, name: str, obj):
        """``obj`` as the entry ``name`` of ``kind`` for the ``with`` block (in the place of a namesake, which is
        put back after it, or added and removed): what a check of ``obj`` runs through the CLI is ``obj`` itself."""
        self._start(kind)
        had = name in self._entries[kind]
        saved = (self._entries[kind].get(name), self._origins[kind].get(name))
        self._entries[kind][name], self._origins[kind][name] = obj, "under check"
        try:
            yield obj
        finally:
            if had:
                self._entries[kind][name], self._origins[kind][name] = saved
            else:
                self._entries[kind].pop(name, None)
                self._origins[kind].pop(name, None)

    # -- reading -------------------------------------------------------------------------------------------
    def names(self, kind: str) -> list:
        """The names of ``kind``, in order, without loading any entry."""
        self._start(kind)
        return list(self._entries[kind])

    def disabled(self, kind: str) -> dict:
        """``{name: reference}`` of the entry points of ``kind`` left off (third-party views not enabled)."""
        self._start(kind)
        return {name: reference for name, (reference, _) in self._disabled[kind].items()}

    def origin(self, kind: str, name: str) -> str:
        self._start(kind)
        return self._origins[kind][name]

    def get(self, kind: str, name: str):
        """The entry ``name`` of ``kind``, loaded (and checked) on first use; KeyError where there is none. A plug-in
        that fails to load (or was left out) is refused in the line its :class:`PluginWarning` said."""
        self._start(kind)
        if name not in self._entries[kind] and name in self._left_out[kind]:
            raise InvalidParameterError(self._left_out[kind][name])
        entry = self._entries[kind][name]
        if isinstance(entry, str):
            try:
                made = self.makers[kind](load_target(entry), name)
            except Exception as error:  # noqa: BLE001 - any failure of a plug-in's own code is the plug-in's
                origin = self._origins[kind][name]
                if not origin.startswith("entry point"):
                    raise
                detail = " ".join(f"{type(error).__name__}: {error}".split())  # one line, whatever it raised
                self._leave_out(kind, name, f"{self._plugins[kind][name]} could not be loaded ({detail}): its "
                                            f"{kind[:-1]} {name!r} is left out", declared=True)
                raise InvalidParameterError(self._left_out[kind][name]) from error
            if self._entries[kind].get(name) is entry:  # not replaced while loading
                self._entries[kind][name] = made
            entry = made
        return entry

    def items(self, kind: str) -> dict:
        """``{name: object}`` of ``kind``, every entry loaded, in order; a plug-in that fails to load is left out
        (with its one warning line)."""
        found = {}
        for name in self.names(kind):
            try:
                found[name] = self.get(kind, name)
            except InvalidParameterError:
                if name in self._entries[kind] or name not in self._left_out[kind]:
                    raise
        return found


def _plugin(point) -> str:
    """How a warning names the distribution of an entry point: ``the plug-in NAME VERSION (group: name = value)``."""
    dist = point.dist
    who = f"{dist.name} {dist.version}" if dist is not None else "an installed package"
    return f"the plug-in {who} ({point.group}: {point.name} = {point.value})"


def _make_method(found, name: str) -> SplitMethod:
    method = instantiate(found)
    check_declarations(method)
    if method.info.name != name:
        raise InvalidParameterError(f"{type(method).__module__}.{type(method).__name__} is named "
                                    f"{method.info.name!r}, not {name!r}")
    return method


def _make_view(found, name: str):
    view = found() if isinstance(found, type) else found
    if not isinstance(view, load_target("split_builders.evidence.view:View")):  # by name: evidence is a layer above
        raise InvalidParameterError(f"the evidence view {name!r} is {view!r}, not a View")
    if view.name != name:
        raise InvalidParameterError(f"the evidence view {found!r} is named {view.name!r}, not {name!r}")
    return view


REGISTRY = Registry()
"""The registry every part of resplit reads."""


def register(method):
    """Add a split method (a :class:`SplitMethod` subclass, or an instance of one) to the registry.

    Refuses, in one line: an object that is not a SplitMethod, a class that leaves a required hook abstract (naming
    it), a method whose :class:`~split_builders.contracts.MethodInfo` shared code cannot read (no name, ``Options``
    not derived from :class:`CommonOptions`, a signal kind, baseline, split or pattern it does not know), and a
    second method of a registered name (unregister the first one to replace it). Returns its argument, so it also
    works as a class decorator.
    """
    instance = instantiate(method)
    check_declarations(instance)
    name = instance.info.name
    if name in REGISTRY.names("methods"):
        existing = REGISTRY.get("methods", name)
        raise InvalidParameterError(f"a split method named {name!r} is already registered "
                                    f"({type(existing).__name__}, {REGISTRY.origin('methods', name)}); unregister it "
                                    "first to replace it")
    REGISTRY.add("methods", name, instance)
    return method


def instantiate(method) -> SplitMethod:
    """The instance of a split method class (or the instance itself); a class that leaves required hooks abstract is
    refused in one line that names them."""
    if isinstance(method, type) and issubclass(method, SplitMethod):
        missing = sorted(getattr(method, "__abstractmethods__", ()))
        if missing:
            raise InvalidParameterError(f"{method.__name__} does not implement the required hook(s) "
                                        f"{', '.join(missing)} (every split method implements "
                                        f"{', '.join(REQUIRED_HOOKS)})")
        method = method()
    if not isinstance(method, SplitMethod):
        raise InvalidParameterError(f"{method!r} is not a split method (a subclass of SplitMethod)")
    return method


def check_declarations(method: SplitMethod) -> None:
    """Refuse a method whose declarations shared code could not read: its :class:`MethodInfo` (checked as it is
    made: :meth:`MethodInfo.check`), ``supports_groups`` where a class still declares it (it must say whether it
    implements ``groups``) and its options' declarations (:func:`check_option_declarations`)."""
    info = method.info
    if not info.name:
        raise InvalidParameterError(f"{type(method).__name__} has no name")
    info.check()
    implements_groups = type(method).groups is not SplitMethod.groups
    if bool(method.supports_groups) != implements_groups:
        raise InvalidParameterError(f"{info.name}: supports_groups is {method.supports_groups} but it "
                                    f"{'implements' if implements_groups else 'does not implement'} groups()")
    check_option_declarations(method)


def check_option_declarations(method: SplitMethod) -> None:
    """Refuse ``Options`` whose option declarations the shared checker could not read: a ``conflicts`` entry that
    names no option of the method, a ``role`` other than ``label`` or ``input``."""
    import dataclasses

    fields = {spec.name: spec for spec in dataclasses.fields(method.Options)}
    for spec in fields.values():
        unknown = [other for other in spec.metadata.get("conflicts", ()) if other not in fields or other == spec.name]
        if unknown:
            raise InvalidParameterError(f"{method.name}: option {spec.name} declares conflicts with "
                                        f"{', '.join(map(repr, unknown))}, which are not its other options")
        if spec.metadata.get("role") not in (None, "label", "input"):
            raise InvalidParameterError(f"{method.name}: option {spec.name} has role {spec.metadata['role']!r}; "
                                        "a role is 'label' or 'input'")


def unregister(name: str) -> None:
    REGISTRY.remove("methods", name)


def registry() -> dict[str, SplitMethod]:
    """Every registered method by name (the built-in ones first, then those of entry points, then registered ones)."""
    return REGISTRY.items("methods")


def get_method(name) -> SplitMethod:
    """The registered method ``name`` (only its own module is imported), or a method instance as it is."""
    if isinstance(name, SplitMethod):
        return name
    if name not in REGISTRY.names("methods"):
        raise InvalidParameterError(f"unknown split method {name!r}; known: {', '.join(REGISTRY.names('methods'))}")
    return REGISTRY.get("methods", name)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`registry`. Importing a submodule sets the package's attribute of its name,
    so once anything imported ``split_builders.registry`` (every build does), ``split_builders.registry`` is this
    module rather than the package's lazy name for the function (PEP 562 is consulted only for a missing name):
    calling the module is calling the function, so ``sorted(split_builders.registry())`` works in any order."""

    def __call__(self) -> dict[str, SplitMethod]:
        return registry()


sys.modules[__name__].__class__ = _CallableModule
