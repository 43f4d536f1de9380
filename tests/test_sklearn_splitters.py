"""Every exported splitter is a scikit-learn object (enumerated as ``tests/test_splitter_contract.py`` enumerates
them): scikit-learn's own parameter checks pass, ``sklearn.base.clone`` gives an equal unfitted splitter,
``set_params`` checks a value as the constructor does, and ``splitter.as_cv(...)`` is a ``cv=`` that
``check_cv``, ``cross_validate``, ``cross_val_score`` and ``GridSearchCV`` run on the splitter's own split; on the
SNLI rows of the Likelihood Splits reference, the fold is the reference generator's split."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, check_cv, cross_val_score, cross_validate
from sklearn.utils import estimator_checks
from test_splitter_contract import N, SPLITTERS, _data, examples, geoquery  # noqa: F401 (geoquery: the fixture)

from split_builders.errors import InvalidParameterError

# scikit-learn's checks of an estimator's parameters that need no fit
PARAMETER_CHECKS = ("check_parameters_default_constructible", "check_get_params_invariance", "check_set_params",
                    "check_no_attributes_set_in_init", "check_estimator_repr")


def _same(first, second) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_scikit_learns_parameter_checks_pass(cls, geoquery):
    for splitter, _, _, _ in examples(cls, geoquery, 0):
        for name in PARAMETER_CHECKS:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                getattr(estimator_checks, name)(cls.__name__, splitter)
            changed = [str(w.message) for w in caught if "parameters changed after set_params" in str(w.message)]
            assert not changed, f"{name}: {changed}"


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_clone_is_an_equal_unfitted_splitter_and_still_checks(cls, geoquery):
    for splitter, params, inputs, _ in examples(cls, geoquery, 0):
        split = splitter.split(**inputs)  # may leave fitted attributes (atom_swaps_, ...) on the splitter
        copy = clone(splitter)
        assert type(copy) is cls and copy is not splitter and copy.get_params(deep=False) == params
        assert not [name for name in vars(copy) if name.endswith("_")], "the clone carries fitted attributes"
        assert _same(copy.split(**inputs), split)
        name = "random_state" if "random_state" in params else "train_size"
        vars(splitter)[name] = -1  # a value the constructor refuses: clone makes the splitter again, and refuses it
        with pytest.raises(InvalidParameterError, match=name):
            clone(splitter)


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_set_params_checks_as_the_constructor_and_leaves_a_refused_splitter_as_it_was(cls, geoquery):
    for splitter, params, inputs, _ in examples(cls, geoquery, 0):
        name = "random_state" if "random_state" in params else "train_size"
        with pytest.raises(InvalidParameterError) as by_constructor:
            cls(**{**params, name: -1})
        with pytest.raises(InvalidParameterError, match=f"^{re.escape(str(by_constructor.value))}$"):
            splitter.set_params(**{name: -1})
        with pytest.raises(InvalidParameterError, match=f"^{cls.__name__} has no parameter 'nope'; its parameters"):
            splitter.set_params(nope=1)
        assert splitter.get_params() == params
        changed = {name: 7 if name == "random_state" else params[name] - 10}
        assert splitter.set_params(**changed) is splitter and splitter.get_params() == {**params, **changed}
        assert _same(splitter.split(**inputs), cls(**{**params, **changed}).split(**inputs))
        assert splitter.get_n_splits() == 1 == splitter.get_n_splits(np.zeros((N, 2)), None, None)


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_cross_validation_and_grid_search_run_on_the_splitters_own_split(cls, geoquery):
    """scikit-learn passes X and y (y's classes are the example's labels, where it has them); the other per-row
    inputs go to ``as_cv``. The fold is the splitter's own split; the scores are a model fitted on its train rows."""
    rng = np.random.default_rng(5)
    for splitter, _, inputs, _ in examples(cls, geoquery, 0):
        labelled = "labels" in inputs
        y = np.asarray(inputs["labels"] if labelled else _data(geoquery, rng)["labels"])
        X = np.column_stack([rng.normal(size=N), rng.normal(size=N) + (y == y[0])])
        fixed = {name: value for name, value in inputs.items() if name not in ("labels", "n_rows")}
        expected = splitter.split(**fixed, labels=y if labelled else None, n_rows=N)
        held, evaluate = (expected.test, "test") if len(expected.test) else (expected.validation, "validation")
        cv = splitter.as_cv(**fixed, evaluate=evaluate, stratify=labelled)
        assert check_cv(cv, y, classifier=True) is cv and cv.get_n_splits(X, y) == 1
        result = cross_validate(LogisticRegression(), X, y, cv=cv, return_indices=True)
        (train,), (test,) = result["indices"]["train"], result["indices"]["test"]
        assert np.array_equal(train, expected.train) and np.array_equal(test, held)
        alone = LogisticRegression().fit(X[train], y[train]).score(X[test], y[test])
        assert cross_val_score(LogisticRegression(), X, y, cv=cv).tolist() == [alone]
        search = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=cv, refit=False).fit(X, y)
        assert search.n_splits_ == 1
        assert search.cv_results_["split0_test_score"][1] == alone  # C=1.0 is LogisticRegression's default


@pytest.mark.parametrize("cls", SPLITTERS, ids=lambda cls: cls.__name__)
def test_an_empty_held_out_split_and_inputs_of_other_rows_are_refused_in_one_line(cls, geoquery):
    for splitter, _, inputs, _ in examples(cls, geoquery, 0):
        fixed = {name: value for name, value in inputs.items() if name not in ("labels", "n_rows")}
        labels = inputs.get("labels")
        split = splitter.split(**fixed, labels=labels, n_rows=N)
        for evaluate in ("test", "validation"):
            if not len(getattr(split, evaluate)):
                with pytest.raises(InvalidParameterError, match=rf"^{cls.__name__} gave no {evaluate} rows: choose"):
                    list(splitter.as_cv(**fixed, labels=labels, evaluate=evaluate).split(np.zeros((N, 1))))
        if fixed:
            with pytest.raises(InvalidParameterError, match=rf"^X has {N - 1} rows but \w+= given to as_cv has {N}"):
                list(splitter.as_cv(**fixed).split(np.zeros((N - 1, 1))))
    with pytest.raises(InvalidParameterError, match="evaluate must be 'test' or 'validation'"):
        splitter.as_cv(evaluate="dev")
    with pytest.raises(InvalidParameterError, match="as_cv takes the per-row inputs of split\\(\\), not 'n_rows'"):
        splitter.as_cv(n_rows=N)


def test_the_likelihood_split_of_snli_as_cv_is_the_reference_generators_split(shared):
    """The reference's SNLI rows and log-likelihoods: ``cross_validate`` fits on the reference generator's train
    rows and scores its test rows (``ll_split``, seed 42, 200 + 200); ``GridSearchCV`` with
    ``evaluate="validation"`` scores its dev rows and never a test row."""
    import pandas as pd
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline

    from split_builders import LikelihoodSplitter

    inputs, reference = shared / "reference/likelihood/inputs/snli", shared / "reference/likelihood/snli/ll_split"
    table = pd.read_csv(inputs / "all_examples.csv")
    scores = np.load(inputs / "all_examples__False_loglikelihoods.npy")
    X, y = (table["premise"] + " " + table["hypothesis"]).tolist(), table["gold_label"].to_numpy()
    expected = {part: sorted(json.loads((reference / f"{part}_idx.json").read_text())) for part in ("train", "dev",
                                                                                                  "test")}
    splitter = LikelihoodSplitter(validation_size=200, test_size=200, random_state=42)
    model = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000))
    result = cross_validate(model, X, y, cv=splitter.as_cv(scores), return_indices=True)
    assert result["indices"]["train"][0].tolist() == expected["train"]
    assert result["indices"]["test"][0].tolist() == expected["test"]
    search = GridSearchCV(model, {"logisticregression__C": [0.1, 1.0]}, refit=False,
                          cv=splitter.as_cv(scores, evaluate="validation")).fit(X, y)
    fitted = clone(model).set_params(logisticregression__C=search.best_params_["logisticregression__C"])
    fitted.fit([X[i] for i in expected["train"]], y[expected["train"]])
    assert search.best_score_ == fitted.score([X[i] for i in expected["dev"]], y[expected["dev"]])


def test_y_balances_the_evaluation_sets_only_where_it_holds_classes_the_splitter_balances_over():
    """As ``check_cv`` stratifies only a class target: classes in ``y`` are ``labels`` (the fold differs from the
    unbalanced one), numbers to regress are not, nor classes where the splitter refuses labels in its setting
    (``LikelihoodSplitter`` with ``train_size``); ``stratify=False`` leaves them out."""
    from split_builders import LikelihoodSplitter, RandomSplitter

    rng = np.random.default_rng(0)
    X, classes, numbers, scores = np.zeros((N, 1)), rng.choice(["a", "b"], size=N, p=[0.9, 0.1]), rng.normal(size=N), \
        rng.normal(size=N)
    splitter = RandomSplitter(validation_size=10, test_size=20, random_state=3)
    plain, balanced = splitter.split(n_rows=N), splitter.split(n_rows=N, labels=classes)
    assert not np.array_equal(plain.test, balanced.test)
    (fold,) = splitter.as_cv().split(X, classes)
    assert _same(fold, (balanced.train, balanced.test))
    for y, stratify in ((numbers, True), (classes, False)):
        (fold,) = splitter.as_cv(stratify=stratify).split(X, y)
        assert _same(fold, (plain.train, plain.test))
    by_size = LikelihoodSplitter(train_size=80)
    (fold,) = by_size.as_cv(scores).split(X, classes)
    assert _same(fold, (by_size.split(scores).train, by_size.split(scores).test))
