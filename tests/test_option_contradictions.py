"""Options that contradict each other or mean nothing are refused before any work, in one line, exit 2, nothing
written at ``--out``: each class runs over every method of the registry (and every evidence view, every recipe
method) that it applies to, from the options' own declarations.

* two options declared as contradicting each other (``option(conflicts=...)``: ``--train-size`` with
  ``--test-size``, ``--reference`` with ``--iterations``, ``--curriculum-compat`` with ``--validation-size``);
* a list option given empty (``--phenomena ''`` would otherwise build all 36 phenomena);
* a license that is not a Hub license id, language codes that are not codes;
* the label among the inputs; a search of no iterations; ``--revision`` for a folder here;
* scores that are booleans; and constant scores, which build, with a warning on the terminal and in the card;
* ``--set KEY=VALUE`` with an alias of an option's flag suggests that option (``dev_size``: ``validation_size``).
"""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

from split_builders.api import registry
from split_builders.cli import main
from split_builders.options import flag_name, option_names, suggest_option

METHODS = sorted(registry())


def _refused(code, err, out, *expected):
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert "Traceback" not in err and len(lines) == 1, err
    for text in expected:
        assert text in err, (text, err)
    assert out is None or not out.exists(), "something was written at --out"


def _run(args, out, capsys):
    code = main([*args, *(["--out", str(out)] if out is not None else []), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _spec(method, name):
    return next(s for s in dataclasses.fields(registry()[method].Options) if s.name == name)


def _without(args: list, method: str, names) -> list:
    """``args`` less every flag (with its value, unless the option is a switch) of the options ``names``."""
    hints = typing.get_type_hints(registry()[method].Options)
    takes_value = {}
    for name in names:
        spec = _spec(method, name)
        for flag in (flag_name(name), *spec.metadata["flags"]):
            takes_value[flag] = hints[name] is not bool
        takes_value[f"--no-{name.replace('_', '-')}"] = False
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = takes_value[arg]
        else:
            out.append(arg)
    return out


def _given(method: str, name: str) -> list:
    """Command-line arguments that set option ``name`` of ``method`` away from its default."""
    spec = _spec(method, name)
    default = spec.default
    if isinstance(default, bool):
        return [f"--no-{name.replace('_', '-')}" if default else flag_name(name)]
    if isinstance(default, float):
        return [flag_name(name), str(default / 2)]
    if isinstance(default, int):
        return [flag_name(name), str(default + 1)]
    if isinstance(default, tuple) and all(isinstance(v, int) for v in default):
        return [flag_name(name), "7"]  # a list of whole numbers (--inoculation-sizes)
    return [flag_name(name), "0.5"]  # a size given as a fraction


CONTRADICTIONS = [(method, spec.name, other) for method in METHODS
                  for spec in dataclasses.fields(registry()[method].Options)
                  for other in spec.metadata.get("conflicts", ())]


def test_the_contradictions_the_issue_names_are_declared():
    assert {("likelihood", "train_size", "test_size"), ("likelihood", "train_size", "validation_size"),
            ("tmcd", "reference", "iterations"), ("pvi", "curriculum_compat", "validation_size"),
            ("curriculum", "inoculation", "inoculation_sizes")} <= set(CONTRADICTIONS)


@pytest.mark.parametrize("method, name, other", CONTRADICTIONS)
def test_options_that_contradict_each_other_are_refused(method, name, other, family_args, tmp_path, capsys):
    conflicting = (name, *_spec(method, name).metadata["conflicts"])  # the example may give another one
    args = [*_without(family_args[method], method, conflicting), *_given(method, name), *_given(method, other)]
    out = tmp_path / "out"
    # each named by the flag given (--no-NAME for a switch on by default)
    _refused(*_run([method, *args], out, capsys)[::2], out, _given(method, name)[0], _given(method, other)[0],
             "contradict")


def _list_options(method, *, comma_separated: bool = False) -> list:
    """The list-typed options of ``method`` (``tuple[str, ...]``; with ``comma_separated`` False also a bare
    ``tuple``, one selection kept whole on the command line)."""
    hints = typing.get_type_hints(registry()[method].Options)
    found = []
    for spec in dataclasses.fields(registry()[method].Options):
        members = typing.get_args(hints[spec.name]) or (hints[spec.name],)
        if any(typing.get_origin(m) is tuple or (m is tuple and not comma_separated) for m in members):
            found.append(spec.name)
    return found


LIST_OPTIONS = [(method, name, empty) for method in METHODS for empty in ("", ",")
                for name in _list_options(method, comma_separated=empty == ",")]


@pytest.mark.parametrize("method, name, empty", LIST_OPTIONS)
def test_a_list_option_given_empty_is_refused_not_read_as_its_default(method, name, empty, family_args, tmp_path,
                                                                      capsys):
    out = tmp_path / "out"
    args = [*_without(family_args[method], method, (name,)), flag_name(name), empty]
    _refused(*_run([method, *args], out, capsys)[::2], out, flag_name(name), "is empty")


@pytest.mark.parametrize("method", METHODS)
def test_an_empty_list_in_python_or_a_recipe_is_refused_too(method, tmp_path):
    from split_builders.errors import InvalidParameterError

    for name in _list_options(method):
        with pytest.raises(InvalidParameterError, match="is empty"):
            registry()[method].options(**{name: []}, source=str(tmp_path), out=str(tmp_path / "out"))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("flag, value, expected", [
    ("--license", "not a license", "not a Hub license id"), ("--license", "CC BY 4.0", "not a Hub license id"),
    ("--language", "xx,!!", "'xx' is not a language code"), ("--language", "en,english", "'english'")])
def test_a_license_or_language_the_card_would_state_is_checked(method, flag, value, expected, family_args, tmp_path,
                                                               capsys):
    out = tmp_path / "out"
    _refused(*_run([method, *family_args[method], flag, value], out, capsys)[::2], out, flag, expected)


@pytest.mark.parametrize("given, expected", [({"license": "not a license"}, "the recipe's license 'not a license'"),
                                             ({"language": ["en", "!!"]}, "'!!' is not a language code")])
def test_a_recipes_license_or_language_is_checked_as_the_flags_are(given, expected, shared, tmp_path):
    """What a recipe states (``build(..., license=, language=)``, the path ``resplit release`` takes) is checked before
    any work, as ``--license`` and ``--language`` are."""
    from split_builders import build
    from split_builders.errors import InvalidParameterError

    inputs = shared / "reference" / "likelihood" / "inputs" / "snli"
    out = tmp_path / "out"
    with pytest.raises(InvalidParameterError, match=expected):
        build("likelihood", source=str(inputs / "all_examples.csv"), prompt_field="premise", query_field="hypothesis",
              scores=str(inputs / "all_examples__False_loglikelihoods.npy"), out=str(out), progress=False, **given)
    assert not out.exists()


def test_hub_license_ids_and_language_codes_are_accepted(tmp_path):
    options = registry()["likelihood"].options(out=str(tmp_path / "out"), license="CC-BY-SA-4.0",
                                               language="en,de-CH,fra")
    assert options.license == "cc-by-sa-4.0" and options.language == ("en", "de-CH", "fra")


def _roles(method, role) -> list:
    return [s.name for s in dataclasses.fields(registry()[method].Options) if s.metadata.get("role") == role]


LABEL_AS_INPUT = [(method, label, given) for method in METHODS for label in _roles(method, "label")
                  for given in _roles(method, "input")]


def test_the_methods_that_name_a_label_and_inputs_declare_their_roles():
    assert {"likelihood", "pvi"} <= {method for method, _, _ in LABEL_AS_INPUT}


@pytest.mark.parametrize("method, label, given", LABEL_AS_INPUT)
def test_the_label_among_the_inputs_is_refused(method, label, given, family_args, tmp_path, capsys):
    out = tmp_path / "out"
    args = [*_without(family_args[method], method, (label, given)), flag_name(label), "gold_label", flag_name(given),
            "gold_label"]
    _refused(*_run([method, *args], out, capsys)[::2], out, "'gold_label'", flag_name(label), flag_name(given),
             "answer")


def test_a_search_of_no_iterations_is_refused(family_args, tmp_path, capsys):
    out = tmp_path / "out"
    args = [*_without(family_args["tmcd"], "tmcd", ("iterations",)), "--iterations", "0"]
    _refused(*_run(["tmcd", *args], out, capsys)[::2], out, "iterations must be a positive integer")


def _views() -> list:
    from split_builders.evidence import views

    return sorted(view.subcommand for view in views().values())


@pytest.mark.parametrize("view", _views())
def test_a_revision_for_a_folder_here_is_refused(view, tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.csv").write_text("text,label\na b,0\n")
    code, _, err = _run([view, str(folder), "--revision", "v1.0"], None, capsys)
    _refused(code, err, None, "--revision v1.0", "is a folder here")


MODEL_REVISION = [m for m in METHODS if {"lm", "lm_revision"} <= {s.name for s in dataclasses.fields(registry()[m].Options)}]


@pytest.mark.parametrize("method", MODEL_REVISION)
@pytest.mark.parametrize("model", ["folder", None])
def test_a_model_revision_for_a_folder_here_or_the_bundled_model_is_refused(method, model, family_args, tmp_path,
                                                                            capsys):
    out = tmp_path / "out"
    (tmp_path / "model").mkdir()
    given = ["--lm", str(tmp_path / "model")] if model else []
    # (without --scores, which --lm contradicts: the revision is checked before any row is scored)
    args = [*_without(family_args[method], method, ("lm", "lm_revision", "scores")), *given, "--lm-revision", "v1.0"]
    _refused(*_run([method, *args], out, capsys)[::2], out, "--lm-revision v1.0 is for a Hub id")


SCORED = [m for m in METHODS if "scores" in {s.name for s in dataclasses.fields(registry()[m].Options)}]


def test_the_methods_that_take_scores_are_known():
    assert set(SCORED) >= {"likelihood", "tmcd"}


@pytest.mark.parametrize("method", SCORED)
@pytest.mark.parametrize("kind", ["bool", "zeros-and-ones"])
def test_boolean_scores_are_not_read_as_log_likelihoods(method, kind, family_args, tmp_path, capsys):
    values = np.random.default_rng(0).random(880) > 0.5
    path = tmp_path / "scores.npy"
    np.save(path, values if kind == "bool" else values.astype(np.int64))
    out = tmp_path / "out"
    args = [*_without(family_args[method], method, ("scores",)), "--scores", str(path)]
    _refused(*_run([method, *args], out, capsys)[::2], out, "not log-likelihoods")


def _constant_build(method, shared, tmp_path) -> list:
    """A small build of ``method`` from given scores that are all equal."""
    if method == "likelihood":
        import pandas as pd

        table = pd.read_csv(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv").head(200)
        table.to_csv(tmp_path / "nli.csv", index=False)
        np.save(tmp_path / "scores.npy", np.full(200, -7.5))
        return ["--source", str(tmp_path / "nli.csv"), "--prompt-field", "premise", "--query-field", "hypothesis",
                "--label-field", "gold_label", "--scores", str(tmp_path / "scores.npy"), "--dev-size", "20",
                "--test-size", "20"]
    lines = (shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:200]
    (tmp_path / "geo.tsv").write_text("\n".join(lines) + "\n")
    np.save(tmp_path / "scores.npy", np.full(200, -7.5))
    return ["--source", str(tmp_path / "geo.tsv"), "--train-size", "100", "--configs", "standard", "--scores",
            str(tmp_path / "scores.npy")]


@pytest.mark.parametrize("method", SCORED)
def test_constant_scores_build_with_a_warning_on_the_terminal_and_in_the_card(method, shared, tmp_path, capsys):
    out = tmp_path / "out"
    code, printed, err = _run([method, *_constant_build(method, shared, tmp_path)], out, capsys)
    assert code == 0, err
    warning = "are equal (-7.5): which rows the least / most likely configs hold out is an arbitrary tie-break"
    assert any(line.startswith("warning: ") and warning in line for line in printed.splitlines()), printed
    assert "**Warning:** " in (out / "README.md").read_text() and warning in (out / "README.md").read_text()


@pytest.mark.parametrize("method", METHODS)
def test_an_alias_of_a_flag_suggests_its_option(method):
    Options = registry()[method].Options
    for alias, name in option_names(Options).items():
        assert suggest_option(alias, Options) == name
        assert suggest_option(alias.upper(), Options) in (name, None) or True  # no crash on odd case
    assert suggest_option("no_such_option_at_all_xyz", Options) is None


def test_set_dev_size_suggests_validation_size_not_device(tmp_path, capsys):
    code, _, err = _run(["release", "snli-likelihood", "--set", "dev_size=10"], tmp_path / "out", capsys)
    _refused(code, err, tmp_path / "out", "unknown option 'dev_size'", "did you mean 'validation_size'?")
    assert "'device'?" not in err


def test_the_registry_refuses_option_declarations_the_checker_cannot_read(toy_method):
    from split_builders.api import CommonOptions, option
    from split_builders.errors import InvalidParameterError
    from split_builders.registry import check_declarations

    @dataclasses.dataclass(kw_only=True)
    class Conflicting(CommonOptions):
        a: int = option(1, "a", conflicts=("no_such_option",))

    @dataclasses.dataclass(kw_only=True)
    class Roled(CommonOptions):
        a: str | None = option(None, "a", role="labels")

    for options, expected in ((Conflicting, "declares conflicts with 'no_such_option'"), (Roled, "has role 'labels'")):
        method = type("Bad", (toy_method,), {"name": "bad-options", "Options": options})()
        with pytest.raises(InvalidParameterError, match=expected):
            check_declarations(method)
