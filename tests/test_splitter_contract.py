"""The contract every splitter keeps (scikit-learn's ``model_selection`` style): ``split`` returns
a :class:`~split_builders.api.Split` of sorted int64 row numbers with no row in two splits (every
row placed where the config covers all rows), the same output for the same seed, and
``get_params()`` equal to the constructor's parameters."""

import inspect
from collections import Counter

import numpy as np
import pytest

import split_builders
from split_builders.api import DEFAULT_SEED, BaseSplitter, Split
from split_builders.errors import InvalidParameterError

N = 120


@pytest.fixture(scope="module")
def geoquery(shared):
    from split_builders.signals.programs.atoms import atoms_by_row
    from split_builders.signals.programs.compounds import compounds_by_row

    lines = (shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:N]
    inputs, targets = zip(*(line.split("\t") for line in lines))
    return {"inputs": list(inputs), "targets": list(targets),
            "atoms": atoms_by_row(list(targets), "funql").atoms, "compounds": compounds_by_row(list(targets), "funql")}


def _data(geoquery, rng) -> dict:
    """What every splitter draws its example inputs from (:meth:`BaseSplitter._examples`): N rows of GeoQuery, a
    seeded generator, and scores, labels and lengths drawn from it."""
    return {**geoquery, "n_rows": N, "rng": rng, "scores": rng.normal(size=N),
            "labels": rng.choice(["a", "b", "c"], size=N).tolist(), "lengths": rng.integers(3, 30, size=N)}


def _splitter_classes() -> set:
    """Every public BaseSplitter subclass defined in a module of :mod:`split_builders.splitters` (an abstract
    base, such as ``TailSplitter``, declares no example and is left out)."""
    import importlib
    import inspect
    import pkgutil

    import split_builders.splitters as package

    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {cls for _, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, BaseSplitter) and cls.__module__ == module.__name__ and not cls.__name__.startswith("_")}
    return found


def _fills_no_hook(cls) -> bool:
    """A base to derive from (``TailSplitter``), not a splitter: it fills neither ``_split`` nor ``_order``."""
    from split_builders.splitters.base import TailSplitter

    return cls._split is BaseSplitter._split or (issubclass(cls, TailSplitter) and cls._order is TailSplitter._order)


SPLITTERS = sorted((cls for cls in _splitter_classes() if not _fills_no_hook(cls)), key=lambda cls: cls.__name__)


def examples(cls, geoquery, seed: int) -> list:
    """``(splitter, constructor parameters, split() keywords, covers every row)`` of each example ``cls``
    declares."""
    return [(cls(**params), params, inputs, covers)
            for params, inputs, covers in cls._examples(_data(geoquery, np.random.default_rng(seed)))]


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_split_is_sorted_int64_and_a_partition(cls, geoquery):
    for splitter, _, inputs, covers in examples(cls, geoquery, 0):
        split = splitter.split(**inputs)
        assert isinstance(split, Split) and isinstance(splitter, BaseSplitter)
        for part in split:
            assert part.dtype == np.int64 and part.ndim == 1 and np.all(np.diff(part) > 0)
        counts = Counter(np.concatenate(split).tolist())
        assert max(counts.values()) == 1, "a row is in two splits"
        assert len(split.train) and (len(split.validation) or len(split.test))
        if covers:
            assert sorted(counts) == list(range(N))


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_same_seed_same_split(cls, geoquery):
    for _, params, inputs, _ in examples(cls, geoquery, 1):
        first, second = cls(**params).split(**inputs), cls(**params).split(**inputs)
        assert all(np.array_equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_get_params_equals_the_constructor_and_repr_shows_them(cls, geoquery):
    for splitter, params, _, _ in examples(cls, geoquery, 0):
        assert splitter.get_params() == params
        assert repr(splitter).startswith(f"{cls.__name__}(") and all(f"{k}=" in repr(splitter) for k in params)


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_every_splitter_accepts_the_one_call_and_names_a_missing_input(cls, geoquery):
    """The one signature: every input given, each splitter reads what it needs; none given, it names one."""
    (params, _, _), *_ = cls._examples(_data(geoquery, np.random.default_rng(0)))
    signature = inspect.signature(cls.split)
    assert list(signature.parameters)[1:] == list(inspect.signature(BaseSplitter.split).parameters)[1:]
    if "random_state" in inspect.signature(cls.__init__).parameters:
        assert inspect.signature(cls.__init__).parameters["random_state"].default == DEFAULT_SEED
    with pytest.raises(InvalidParameterError, match=rf"^{cls.__name__}\.split needs "):
        cls(**params).split()


def test_every_splitter_is_exported_and_has_a_contract_case():
    classes = _splitter_classes()
    assert {cls.__name__ for cls in classes} <= set(split_builders.__all__), "a splitter is not exported"
    assert len(SPLITTERS) >= 11  # sanity
    data = _data({"inputs": [], "targets": [], "atoms": [], "compounds": []}, np.random.default_rng(0))
    assert all(cls._examples(data) for cls in SPLITTERS), "a splitter has no example (_examples)"
