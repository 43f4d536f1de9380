"""The contract every splitter keeps (scikit-learn's ``model_selection`` style): ``split`` returns
a :class:`~split_builders.api.Split` of sorted int64 row numbers with no row in two splits (every
row placed where the config covers all rows), the same output for the same seed, and
``get_params()`` equal to the constructor's parameters."""

from collections import Counter

import numpy as np
import pytest

import split_builders
from split_builders.api import BaseSplitter, Split

N = 120


@pytest.fixture(scope="module")
def geoquery(shared):
    from split_builders.signals.programs.atoms import atoms_by_row
    from split_builders.signals.programs.compounds import compounds_by_row

    lines = (shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:N]
    inputs, targets = zip(*(line.split("\t") for line in lines))
    return {"inputs": list(inputs), "targets": list(targets),
            "atoms": atoms_by_row(list(targets), "funql").atoms, "compounds": compounds_by_row(list(targets), "funql")}


def _inputs(name, geoquery, rng):
    scores = rng.normal(size=N)
    labels = rng.choice(["a", "b", "c"], size=N).tolist()
    lengths = rng.integers(3, 30, size=N)
    return {
        "likelihood": ((scores,), {"labels": labels, "lengths": lengths}),
        "likelihood_train_size": ((scores,), {"lengths": lengths}),
        "random": ((N,), {"labels": labels}),
        "length": ((lengths,), {"labels": labels}),
        "tmcd": ((geoquery["atoms"], geoquery["compounds"]), {}),
        "mcd": ((geoquery["atoms"], geoquery["compounds"]), {}),
        "longest": ((geoquery["inputs"], geoquery["targets"]), {}),
        "template": ((geoquery["targets"],), {}),
        "standard": ((N,), {}),
        "difficulty_simple_to_hard": ((rng.normal(size=N), rng.integers(0, 3, size=N)), {}),
        "difficulty_simple": ((rng.normal(size=N), rng.integers(0, 3, size=N)), {}),
        "behavioural": ((rng.integers(0, 6, size=N),), {}),
        "inoculation": ((rng.choice(["a", "b", "c"], size=N), np.where(np.arange(N) < 90, "train", "validation")), {}),
    }[name]


CASES = {  # name: (class name, constructor parameters, covers every row)
    "likelihood": ("LikelihoodSplitter", dict(validation_size=12, test_size=12, train_size=None, length_buckets=2,
                                               reverse=False, random_state=3), True),
    "likelihood_train_size": ("LikelihoodSplitter", dict(validation_size=0.1, test_size=0.1, train_size=80,
                                                          length_buckets=None, reverse=True, random_state=3), True),
    "random": ("RandomSplitter", dict(validation_size=0.1, test_size=0.2, random_state=3), True),
    "length": ("LengthSplitter", dict(validation_size=9, test_size=9, random_state=3), True),
    "tmcd": ("TMCDSplitter", None, True),
    "mcd": ("MCDSplitter", dict(train_size=60, test_size=20, max_atom_divergence=0.1, n_candidates=16, n_swaps=20,
                                n_restarts=2, n_seed=1, random_state=3), False),
    "longest": ("LongestToTestSplitter", dict(train_size=90, by="input"), True),
    "template": ("TemplateSplitter", dict(train_size=60, target_language="funql", random_state=3), True),
    "standard": ("StandardSplitter", dict(train_size=70, random_state=3), True),
    "difficulty_simple_to_hard": ("DifficultySplitter", dict(config="simple_to_hard", threshold="median",
                                                             validation_size=0.4, random_state=3), True),
    "difficulty_simple": ("DifficultySplitter", dict(config="simple", threshold="midrange", validation_size=0.25,
                                                     random_state=3), False),
    "behavioural": ("BehaviouralSplitter", dict(holdout_size=0.5, test_share=0.5, random_state=3), True),
    "inoculation": ("InoculationSplitter", dict(size=10, random_state=3), False),
}


def make(name):
    class_name, params, _ = CASES[name]
    cls = getattr(split_builders, class_name)
    if params is None:  # TMCD: every parameter given explicitly, a short search
        params = {p: getattr(cls(train_size=60), p) for p in cls._param_names()}
        params.update(train_size=60, n_iterations=300, random_state=3)
    return cls(**params), params


@pytest.mark.parametrize("name", CASES)
def test_split_is_sorted_int64_and_a_partition(name, geoquery):
    splitter, _ = make(name)
    args, kwargs = _inputs(name, geoquery, np.random.default_rng(0))
    split = splitter.split(*args, **kwargs)
    assert isinstance(split, Split) and isinstance(splitter, BaseSplitter)
    for part in split:
        assert part.dtype == np.int64 and part.ndim == 1 and np.all(np.diff(part) > 0)
    counts = Counter(np.concatenate(split).tolist())
    assert max(counts.values()) == 1, "a row is in two splits"
    assert len(split.train) and (len(split.validation) or len(split.test))
    if CASES[name][2]:
        assert sorted(counts) == list(range(N))


@pytest.mark.parametrize("name", CASES)
def test_same_seed_same_split(name, geoquery):
    args, kwargs = _inputs(name, geoquery, np.random.default_rng(1))
    first, second = make(name)[0].split(*args, **kwargs), make(name)[0].split(*args, **kwargs)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("name", CASES)
def test_get_params_equals_the_constructor_and_repr_shows_them(name):
    splitter, params = make(name)
    assert splitter.get_params() == params
    assert repr(splitter).startswith(f"{CASES[name][0]}(") and all(f"{k}=" in repr(splitter) for k in params)


def _splitter_classes() -> set:
    """Every BaseSplitter subclass defined in a module of :mod:`split_builders.splitters`."""
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


def test_every_splitter_is_exported_and_has_a_contract_case():
    classes = _splitter_classes()
    assert {cls.__name__ for cls in classes} <= set(split_builders.__all__), "a splitter is not exported"
    assert {cls.__name__ for cls in classes} <= {case[0] for case in CASES.values()}, "a splitter has no case"
