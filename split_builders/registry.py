"""The registry of split methods: refuses a second entry of a name. The built-in methods are named in the
table of :mod:`split_builders.methods` and imported by name on first use, so importing the registry
imports no method."""

from __future__ import annotations

import importlib
import re
import sys
import types

from split_builders.contracts import REPORT_TABLES, SIGNAL_KINDS, SPLITS, HarnessTask, SplitMethod
from split_builders.errors import InvalidParameterError
from split_builders.options import CommonOptions

_REGISTRY: dict[str, SplitMethod] = {}


def register(method):
    """Add a split method (a :class:`SplitMethod` subclass, or an instance of one) to the registry.

    Refuses an object that is not a SplitMethod, a method without a name or ``Options`` that do not
    derive from :class:`CommonOptions`, and a second method of a registered name (unregister the
    first one to replace it). Returns its argument, so it also works as a class decorator.
    """
    instance = method() if isinstance(method, type) and issubclass(method, SplitMethod) else method
    if not isinstance(instance, SplitMethod):
        raise InvalidParameterError(f"{method!r} is not a split method (a subclass of SplitMethod)")
    if not instance.name:
        raise InvalidParameterError(f"{type(instance).__name__} has no name")
    if not (isinstance(instance.Options, type) and issubclass(instance.Options, CommonOptions)):
        raise InvalidParameterError(f"{instance.name}: Options must be a dataclass derived from CommonOptions")
    check_declarations(instance)
    _load_builtin()
    if instance.name in _REGISTRY:
        raise InvalidParameterError(f"a split method named {instance.name!r} is already registered "
                                    f"({type(_REGISTRY[instance.name]).__name__}); unregister it first to replace it")
    _REGISTRY[instance.name] = instance
    return method


def check_declarations(method: SplitMethod) -> None:
    """Refuse a method whose declarations shared code could not read: ``signal_columns`` a mapping of column
    to a kind in :data:`~split_builders.contracts.SIGNAL_KINDS`, ``harness_task`` a
    :class:`~split_builders.contracts.HarnessTask` or None, ``baseline_config`` one of its ``config_names``,
    ``evaluation_splits`` splits it can release, ``harness_groups`` group names mapped to some of its
    ``config_names``, and ``supports_groups`` exactly when it implements ``groups``."""
    name = method.name
    columns = method.signal_columns
    if not isinstance(columns, dict) or any(kind not in SIGNAL_KINDS for kind in columns.values()):
        raise InvalidParameterError(f"{name}: signal_columns must map each signal column to one of "
                                    f"{', '.join(SIGNAL_KINDS)}; got {columns!r}")
    if method.harness_task is not None and not isinstance(method.harness_task, HarnessTask):
        raise InvalidParameterError(f"{name}: harness_task must be a HarnessTask or None; got {method.harness_task!r}")
    if method.baseline_config is not None and method.baseline_config not in method.config_names:
        raise InvalidParameterError(f"{name}: baseline_config {method.baseline_config!r} is not one of its "
                                    f"config_names ({', '.join(method.config_names)})")
    splits = method.evaluation_splits
    if not isinstance(splits, tuple) or not splits or any(split not in SPLITS for split in splits):
        raise InvalidParameterError(f"{name}: evaluation_splits must be a non-empty tuple of {', '.join(SPLITS)}; "
                                    f"got {splits!r}")
    for attribute in ("harness_groups", "scenarios"):
        groups = getattr(method, attribute)
        if not isinstance(groups, dict) or any(
                not isinstance(group, str) or not re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", group)
                or not isinstance(patterns, tuple) or not patterns
                or any(pattern not in method.config_names for pattern in patterns)
                for group, patterns in groups.items()):
            raise InvalidParameterError(f"{name}: {attribute} must map a name ([a-z0-9_]) to a non-empty tuple of its "
                                        f"config_names ({', '.join(method.config_names)}); got {groups!r}")
    tables = method.report_tables
    if not isinstance(tables, tuple) or any(table not in REPORT_TABLES for table in tables):
        raise InvalidParameterError(f"{name}: report_tables must be a tuple of {', '.join(REPORT_TABLES)}; got "
                                    f"{tables!r}")
    if "g_score" in tables and not method.scenarios:
        raise InvalidParameterError(f"{name}: report_tables names g_score, which scores each of its scenarios: "
                                    "declare them (scenarios = {scenario: (config pattern, ...)})")
    implements_groups = type(method).groups is not SplitMethod.groups
    if bool(method.supports_groups) != implements_groups:
        raise InvalidParameterError(f"{name}: supports_groups is {method.supports_groups} but it "
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
    _REGISTRY.pop(name, None)


_LOADED_BUILTIN = False


def _load_builtin() -> None:
    """Register the built-in methods (the table in :mod:`split_builders.methods`) once, first."""
    global _LOADED_BUILTIN
    if _LOADED_BUILTIN:
        return
    _LOADED_BUILTIN = True
    # By name: the registry imports no method module until a method is asked for.
    builtin = importlib.import_module("split_builders.methods").BUILTIN
    for name, (module, cls) in builtin.items():
        method = getattr(importlib.import_module(module), cls)()
        if method.name != name:
            raise InvalidParameterError(f"{module}.{cls} is named {method.name!r}, not {name!r}")
        check_declarations(method)
        _REGISTRY[name] = method


def registry() -> dict[str, SplitMethod]:
    """Every registered method by name (the built-in ones first)."""
    _load_builtin()
    return dict(_REGISTRY)


def get_method(name) -> SplitMethod:
    if isinstance(name, SplitMethod):
        return name
    methods = registry()
    if name not in methods:
        raise InvalidParameterError(f"unknown split method {name!r}; known: {', '.join(methods)}")
    return methods[name]


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`registry`. Importing a submodule sets the package's attribute of its name,
    so once anything imported ``split_builders.registry`` (every build does), ``split_builders.registry`` is this
    module rather than the package's lazy name for the function (PEP 562 is consulted only for a missing name):
    calling the module is calling the function, so ``sorted(split_builders.registry())`` works in any order."""

    def __call__(self) -> dict[str, SplitMethod]:
        return registry()


sys.modules[__name__].__class__ = _CallableModule
