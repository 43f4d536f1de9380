"""resplit's library: one spine (the contracts,
:func:`~split_builders.builder.build`) that every split family goes through.

* the contracts: :mod:`~split_builders.splits` (splits and sizes), :mod:`~split_builders.options`,
  :mod:`~split_builders.contracts` (what a method is and declares), :mod:`~split_builders.registry`,
  and :mod:`~split_builders.api`, the public extension API that gathers what a plug-in needs;
* :mod:`split_builders.signals`: what methods compute per row (LM scores, PVI, atoms, lengths);
* :mod:`split_builders.splitters`: pure scikit-learn-style splitters returning a
  :class:`~split_builders.api.Split`, and each family's config builder;
* :mod:`split_builders.methods`: one module per family (likelihood, compositional (TMCD and MCD), PVI difficulty,
  CURRICULUM, behavioural), each a registered :class:`~split_builders.api.SplitMethod`;
* :mod:`split_builders.release`: reading and writing release folders, provenance, the card, harness tasks,
  verify, diff, publishing;
* :mod:`split_builders.evidence`: what a release's splits test, a registry of views (audit, diagnostics, probe);
* :mod:`split_builders.evaluation`: reading model results on releases (``report``: runs as the papers' tables;
  CURRICULUM's report, BELUGA's losses);
* :mod:`split_builders.cli`: the ``resplit`` command, generated from the registries.

The layers and what each may import are in ARCHITECTURE.md (checked by ``tests/test_import_graph.py``).

>>> import split_builders
>>> sorted(split_builders.registry())                       # doctest: +SKIP
['behavioural', 'curriculum', 'likelihood', 'mcd', 'pvi', 'tmcd']
>>> split_builders.build("likelihood", source="snli-sample", out="out/snli")   # doctest: +SKIP
>>> configs = split_builders.split("likelihood", dataframe, query_field="text")   # doctest: +SKIP

Names are imported on first use, so ``import split_builders.errors`` (which the readers in
``loading_scripts`` need) loads neither torch nor nltk.
"""

from split_builders._version import __version__

# name -> module that defines it (imported lazily, PEP 562)
_EXPORTS = {
    "build": "split_builders.builder",
    "split": "split_builders.notebook",
    "report": "split_builders.evaluation.report",
    "BuildResult": "split_builders.builder",
    "registry": "split_builders.registry",
    "register": "split_builders.registry",
    "get_method": "split_builders.registry",
    "Split": "split_builders.splits",
    "BaseSplitter": "split_builders.splits",
    "SplitMethod": "split_builders.contracts",
    "CommonOptions": "split_builders.options",
    "TailSplitter": "split_builders.splitters.base",
    "LikelihoodSplitter": "split_builders.splitters.likelihood",
    "RandomSplitter": "split_builders.splitters.baselines",
    "LengthSplitter": "split_builders.splitters.baselines",
    "TMCDSplitter": "split_builders.splitters.tmcd",
    "MCDSplitter": "split_builders.splitters.mcd",
    "LongestToTestSplitter": "split_builders.splitters.compositional",
    "TemplateSplitter": "split_builders.splitters.compositional",
    "StandardSplitter": "split_builders.splitters.compositional",
    "DifficultySplitter": "split_builders.splitters.difficulty",
    "InoculationSplitter": "split_builders.splitters.inoculation",
    "BehaviouralSplitter": "split_builders.splitters.behavioural",
    "LexicalOverlapSplitter": "split_builders.splitters.lexical_overlap",
}
__all__ = ["__version__", *_EXPORTS]


def __getattr__(name):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'split_builders' has no attribute {name!r}")


def __dir__():
    return __all__
