"""The public extension API: everything a split method (or an evidence view) of your own needs, from one module.

>>> from split_builders.api import MethodInfo, SplitMethod, TailSplitter, in_row_order, release_rows, check_method

A split method is a :class:`SplitMethod` subclass with a frozen :class:`MethodInfo` (its name, ``Options``, the
configs and signal columns it declares) and the hooks the build calls:

1. ``Options``: a dataclass of its parameters (subclass of :class:`CommonOptions`, each field an :func:`option`):
   the one source of defaults, validation, CLI flags and recorded parameters;
2. ``load(options)``: the source read into a :class:`Loaded` (:func:`load_source` for the named sources, Hub ids
   and the SNLI / BoolQ layouts; :func:`read_table` and :func:`with_row_numbers` for a plain table file), with its
   :class:`SourceInfo` (:func:`content_sha256` of the rows);
3. ``signal(loaded, options, context)``: what it computes per row, as a :class:`Signal`;
4. ``configs(loaded, signal, options)``: a config builder over splitters (:class:`BaseSplitter`, or
   :class:`TailSplitter`, which fills only ``_order``), a list of :class:`ConfigSplit`, under the row order rule
   (:func:`in_row_order` with :func:`source_content_keys` where ``options.row_order`` is :data:`CONTENT`);
5. ``rows(...)``: the released rows, through the one label policy :func:`release_rows`; ``fields(...)`` its
   :class:`Fields`; ``card(...)`` a :class:`CardSpec`; ``rederive(released, record)`` the same config builder on the
   released rows (:func:`content_keys`, :func:`recorded_row_order`), which ``resplit verify`` runs.

:func:`check_method` is its conformance check (:func:`method_checks`: one pytest parameter per check); :func:`register` adds it from your own code (an installed package
declares a ``resplit.methods`` entry point instead). An evidence view is a :class:`View` (entry point group
``resplit.views``). Docs/plugins.md is the worked example.

Splitters follow scikit-learn's ``model_selection``: keyword-only parameters validated in ``__init__``,
``get_params()``, ``set_params()``, ``clone`` and ``get_n_splits`` (:class:`BaseSplitter`), and a ``split(...)``
that returns a :class:`Split` of sorted int64 row numbers; ``splitter.as_cv(...)`` is the same split as
scikit-learn's ``cv=`` (:class:`SklearnCV`).

Each name lives in a module of one job (:mod:`split_builders.splits`, :mod:`split_builders.options`,
:mod:`split_builders.contracts`, :mod:`split_builders.registry`, :mod:`split_builders.splitters.partition`,
:mod:`loading_scripts.labels`, ...); resplit's own modules import them from there, and this module, which gathers
them for plug-in authors, is imported by none of them.
"""

from __future__ import annotations

from loading_scripts import load_source
from loading_scripts.files import read_table
from loading_scripts.labels import LABEL, encode_labels, label_names, release_rows
from loading_scripts.source import Source, content_sha256, with_row_numbers
from split_builders.cardspec import CardSpec, EvidenceSection, Figure, Panel, Section
from split_builders.contracts import (HOOKS, REQUIRED_HOOKS, SIGNAL_KINDS, TASKS, Context, Fields, HarnessTask, Loaded,
                                      MethodInfo, Signal, SourceInfo, SplitMethod)
from split_builders.evidence.view import Setting, View
from split_builders.options import (DEFAULT_NULL_SPLITS, MAX_NULL_SPLITS, NULL_SPLITS_ENV, ROW_ORDERS, CommonOptions,
                                    check_type, default_null_splits, option)
from split_builders.registry import get_method, register, registry, unregister
from split_builders.splits import (DEFAULT_SEED, SPLIT_INPUTS, SPLITS, BaseSplitter, ConfigSplit, SklearnCV, Split,
                                   check_number, check_random_state, check_size, parse_size, resolve_size)
from split_builders.splitters.base import TailSplitter
from split_builders.splitters.partition import (CONTENT, POSITION, content_keys, in_row_order, recorded_row_order,
                                                source_content_keys)
from split_builders.testing import CHECKS, HOOK_CHECKS, check_method
from split_builders.testing_pytest import method_checks

__all__ = [
    # what a method is and declares
    "SplitMethod", "MethodInfo", "Fields", "HarnessTask", "Loaded", "SourceInfo", "Signal", "Context", "HOOKS",
    "REQUIRED_HOOKS", "SIGNAL_KINDS", "TASKS",
    # its options
    "CommonOptions", "option", "check_type", "DEFAULT_NULL_SPLITS", "MAX_NULL_SPLITS", "NULL_SPLITS_ENV",
    "default_null_splits",
    # splits and splitters
    "Split", "ConfigSplit", "BaseSplitter", "TailSplitter", "SklearnCV", "SPLITS", "SPLIT_INPUTS", "DEFAULT_SEED",
    "check_number", "check_random_state", "check_size", "parse_size", "resolve_size",
    # the row order rule
    "ROW_ORDERS", "CONTENT", "POSITION", "in_row_order", "source_content_keys", "content_keys", "recorded_row_order",
    # source loading and the label policy
    "load_source", "Source", "read_table", "with_row_numbers", "content_sha256", "release_rows", "LABEL",
    "label_names", "encode_labels",
    # the card
    "CardSpec", "Section", "Figure", "Panel", "EvidenceSection",
    # evidence views
    "View", "Setting",
    # the registry and the conformance check
    "register", "registry", "get_method", "unregister", "check_method", "method_checks", "CHECKS",
    "HOOK_CHECKS",
]
