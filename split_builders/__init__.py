"""resplit's library: signals, splitters, the release writer and the CLI.

One module per split method (:mod:`~split_builders.splitters.likelihood`, ...), each with a signal, a
scikit-learn-style splitter and the configs it contributes; the scoring engine
(:mod:`~split_builders.signals.lm.scoring`), the release writer (:mod:`~split_builders.release.writer`) and the CLI
are shared by all methods.
"""

from split_builders._version import __version__
from split_builders.splitters.baselines import LengthSplitter, RandomSplitter
from split_builders.splitters.likelihood import LikelihoodSplitter, likelihood_configs

__all__ = ["__version__", "LikelihoodSplitter", "LengthSplitter", "RandomSplitter", "likelihood_configs",
           "build_likelihood"]


def build_likelihood(*args, **kwargs):
    """See :func:`split_builders.methods.likelihood.build_likelihood` (imported lazily: it pulls in torch)."""
    from split_builders.methods.likelihood import build_likelihood as build

    return build(*args, **kwargs)
