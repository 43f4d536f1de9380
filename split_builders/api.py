"""The contracts every split family shares: splits, splitters, options and methods.

A split method is one module of :mod:`split_builders.methods` that declares

1. ``Options``: a dataclass of its parameters (subclass of :class:`CommonOptions`). It is the one
   source of defaults, validation, CLI flags (:func:`option` metadata) and recorded parameters;
2. ``load(options)``: the source read through ``loading_scripts`` into a :class:`Loaded`;
3. ``signal(loaded, options, context)``: what it computes per row (cached, resumable where it is
   expensive), as a :class:`Signal`;
4. ``configs(loaded, signal, options)``: pure splitters applied to the signal, a list of
   :class:`~split_builders.release.writer.ConfigSplit`;
5. ``card(...)``: the card's method-specific text and figure specifications (no I/O).

:func:`split_builders.builder.build` takes every method through the same steps; the CLI, the
release writer, provenance and the card skeleton are shared. A new method is one module plus one
:func:`register` call.

Splitters follow scikit-learn's ``model_selection``: keyword-only parameters validated in
``__init__``, ``get_params()``, ``set_params()`` and ``repr`` from the constructor signature (:class:`BaseSplitter`:
``sklearn.base.clone`` works), and a ``split(...)`` that returns a :class:`Split` of sorted int64 row numbers;
``splitter.as_cv(...)`` is the same split as scikit-learn's ``cv=`` (:class:`SklearnCV`).

This module gathers the contracts for their users; each lives in a module of one job:
:mod:`split_builders.splits` (splits and sizes), :mod:`split_builders.options` (options and their checks),
:mod:`split_builders.contracts` (what a method declares and hands over) and :mod:`split_builders.registry`.
"""

from __future__ import annotations

from split_builders.contracts import (HOOKS, REQUIRED_HOOKS, SIGNAL_KINDS, TASKS, Context, Fields, HarnessTask, Loaded,
                                      MethodInfo, Signal, SourceInfo, SplitMethod)
from split_builders.options import (DEFAULT_NULL_SPLITS, MAX_NULL_SPLITS, NULL_SPLITS_ENV, CommonOptions, check_type,
                                    default_null_splits, option)
from split_builders.registry import get_method, register, registry, unregister
from split_builders.splits import (DEFAULT_SEED, SPLIT_INPUTS, SPLITS, BaseSplitter, ConfigSplit, SklearnCV, Split,
                                   check_number, check_random_state, check_size, parse_size, resolve_size)

__all__ = ["BaseSplitter", "CommonOptions", "ConfigSplit", "Context", "DEFAULT_NULL_SPLITS", "DEFAULT_SEED", "Fields",
           "HOOKS", "HarnessTask", "Loaded", "MAX_NULL_SPLITS", "MethodInfo", "NULL_SPLITS_ENV", "REQUIRED_HOOKS",
           "SIGNAL_KINDS", "SPLITS", "SPLIT_INPUTS", "Signal", "SklearnCV", "SourceInfo", "Split", "SplitMethod",
           "TASKS", "check_number", "check_random_state", "check_size",
           "check_type", "default_null_splits", "get_method", "option", "parse_size", "register", "registry",
           "resolve_size", "unregister"]
