"""``check_method`` catches the mistakes a plug-in author makes (issue 53's broken variants), each with a message that
names the check, the hook, what was expected and what came back. Each mistake is a small subclass of a cheap
built-in (``lexical-overlap`` on 60 SNLI rows, 6 + 6 held out); the check stops at the first failure, so most never
build a release. The correct method passes the same checks (``test_the_correct_method_passes_the_hook_checks``)."""

import dataclasses

import numpy as np
import pytest

from split_builders.api import Fields, SplitMethod
from split_builders.methods.lexical_overlap import LexicalOverlapMethod, _snli_rows
from split_builders.testing import check_method
from split_builders.testing_hooks import HOOK_CHECKS

ROWS, HELD = 60, 6


class Tiny(LexicalOverlapMethod):
    """The correct method: lexical-overlap under its own name, on 60 rows."""

    info = dataclasses.replace(LexicalOverlapMethod.info, name="tiny-overlap", config_names=("lexical_overlap", "random"))

    def example_arguments(self, data, work):
        return ["--source", str(_snli_rows(data, work, ROWS)), "--text-fields", "premise,hypothesis", "--label-field",
                "gold_label", "--validation-size", str(HELD), "--test-size", str(HELD)]


def _moved(config, rows, source: str, target: str):
    """``config`` with ``rows`` (row numbers of ``source``) moved to ``target``."""
    indices = {split: np.asarray(values, dtype=np.int64) for split, values in config.indices.items()}
    indices[source] = np.setdiff1d(indices[source], rows)
    indices[target] = np.union1d(indices.get(target, np.array([], dtype=np.int64)), rows)
    return dataclasses.replace(config, indices=indices)


class WrongSizes(Tiny):
    def configs(self, loaded, signal, options):
        return [_moved(c, np.asarray(c.indices["train"])[:10], "train", "test")
                for c in super().configs(loaded, signal, options)]


class MissingValidation(Tiny):
    def configs(self, loaded, signal, options):
        configs = super().configs(loaded, signal, options)
        return [dataclasses.replace(_moved(c, c.indices["validation"], "validation", "train"),
                                    indices={s: v for s, v in _moved(c, c.indices["validation"], "validation",
                                                                     "train").indices.items() if s != "validation"})
                for c in configs]


def _unseeded(method) -> np.random.Generator:
    """A generator seeded by how many times ``method`` asked for one: another draw on every run, as an unseeded one
    gives (and the test stays the same from run to run)."""
    method.runs = getattr(method, "runs", 0) + 1
    return np.random.default_rng(method.runs)


class NondeterministicConfigs(Tiny):
    def configs(self, loaded, signal, options):
        rng = _unseeded(self)
        configs = super().configs(loaded, signal, options)
        test, train = configs[0].indices["test"], configs[0].indices["train"]
        swapped = _moved(_moved(configs[0], [rng.choice(test)], "test", "train"), [rng.choice(train)], "train", "test")
        return [swapped, *configs[1:]]


class NondeterministicSignal(Tiny):
    def signal(self, loaded, options, context):
        found = super().signal(loaded, options, context)
        found.values = found.values + _unseeded(self).uniform(0, 1e-6, size=found.values.shape)
        return found


class UndeclaredConfig(Tiny):
    def configs(self, loaded, signal, options):
        configs = super().configs(loaded, signal, options)
        return [*configs, dataclasses.replace(configs[0], name="extra")]


class UndeclaredSignalColumn(Tiny):
    def rows(self, loaded, signal, configs):
        from scipy.stats import rankdata

        return super().rows(loaded, signal, configs).add_column("overlap_rank", rankdata(signal.values).tolist())


class IgnoredRowOrder(Tiny):
    def configs(self, loaded, signal, options):  # always the rows' position, whatever --row-order says
        return super().configs(loaded, signal, dataclasses.replace(options, row_order="position"))


class Namesake(LexicalOverlapMethod):
    """Named like the installed built-in, with a rederive that moves a test row: only its own release shows it."""

    def example_arguments(self, data, work):
        return Tiny.example_arguments(self, data, work)

    def rederive(self, released, record):
        configs = super().rederive(released, record)
        return [_moved(configs[0], np.asarray(configs[0].indices["test"])[:1], "test", "train"), *configs[1:]]


class StatefulRederive(Tiny):
    """A rederive that keeps state between calls: from its second call on, a test row is moved to train."""

    def rederive(self, released, record):
        configs = super().rederive(released, record)
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 1:
            return configs
        return [_moved(configs[0], np.asarray(configs[0].indices["test"])[:1], "test", "train"), *configs[1:]]


class MissingRederive(Tiny):
    rederive = SplitMethod.rederive


class MissingFields(Tiny):
    def fields(self, loaded, signal, options) -> Fields | None:
        return None


class OverlappingRows(Tiny):
    def configs(self, loaded, signal, options):
        configs = super().configs(loaded, signal, options)
        first = configs[0]
        train = np.union1d(first.indices["train"], np.asarray(first.indices["test"])[:2])
        return [dataclasses.replace(first, indices={**first.indices, "train": train}), *configs[1:]]


MISTAKES = {  # mistake: (method, checks run (None: all), what the message says)
    "wrong sizes": (WrongSizes, None, ("check 'sizes'", "configs()", f"test {HELD + 10} rows for {HELD} requested")),
    "missing validation": (MissingValidation, None, ("check 'sizes'", f"validation 0 rows for {HELD} requested")),
    "nondeterministic configs": (NondeterministicConfigs, None,
                                 ("check 'determinism'", "configs(): two runs with seed 7", "'lexical_overlap'")),
    "nondeterministic signal": (NondeterministicSignal, None,
                                ("check 'determinism'", "signal(): two runs with seed 7 gave different `overlap`")),
    "undeclared config": (UndeclaredConfig, None, ("check 'configs'", "configs(): built config(s) ['extra']",
                                                   "config_names")),
    "undeclared signal column": (UndeclaredSignalColumn, None, ("check 'signal_columns'",
                                                                "rows(): column 'overlap_rank'", "signal_columns")),
    "ignored row order": (IgnoredRowOrder, None, ("check 'row_order'", "configs()",
                                                  "row order rule `content` was not honoured")),
    "namesake of an installed method": (Namesake, ("verify",), ("check 'verify'", "rederive()", "differs")),
    "rederive not idempotent": (StatefulRederive, ("verify",), ("check 'verify'", "rederive(): called a second time",
                                                              "differs")),
    "missing rederive": (MissingRederive, None, ("check 'hooks'", "rederive(): not implemented")),
    "missing fields": (MissingFields, None, ("check 'hooks'", "fields(): returned None")),
    "overlapping train and test rows": (OverlappingRows, None, ("check 'configs'", "configs()",
                                                                "puts 2 row(s) in both train and test")),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_check_method_catches_the_mistake_and_names_the_hook(mistake, shared, tmp_path):
    method, checks, said = MISTAKES[mistake]
    with pytest.raises(AssertionError) as caught:
        check_method(method, data=shared, work=tmp_path, checks=checks)
    message = str(caught.value)
    for text in said:
        assert text in message, (text, message)


class DeclaredStochasticSignal(NondeterministicSignal):
    """The same jitter, declared: ``signal_tolerance`` bounds how far two runs may move the signal."""

    info = dataclasses.replace(Tiny.info, signal_tolerance=1e-5)


def test_a_declared_stochastic_signal_is_held_to_its_bound(shared, tmp_path):
    assert check_method(DeclaredStochasticSignal, data=shared, work=tmp_path, checks=["determinism"]) == ["determinism"]
    tight = type("TightBound", (NondeterministicSignal,), {"info": dataclasses.replace(Tiny.info, signal_tolerance=1e-9)})
    with pytest.raises(AssertionError, match="by more than its declared signal_tolerance 1e-09"):
        check_method(tight, data=shared, work=tmp_path / "tight", checks=["determinism"])


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "0", True])
def test_a_signal_tolerance_that_is_not_a_bound_is_refused(bad):
    from split_builders.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="signal_tolerance must be a finite number >= 0"):
        dataclasses.replace(Tiny.info, signal_tolerance=bad)


def test_the_correct_method_passes_the_hook_checks(shared, tmp_path):
    names = ["declarations", "example", *HOOK_CHECKS]
    assert check_method(Tiny, data=shared, work=tmp_path, checks=names) == names


class ReportsSizes(Tiny):
    """Reports realised sizes (``ConfigSplit.requested``) that differ from its splits, with no ``--group-field``."""

    def configs(self, loaded, signal, options):
        return [dataclasses.replace(c, requested={"test": 2 * HELD}) for c in super().configs(loaded, signal, options)]


def test_realised_sizes_without_a_group_field_are_said_without_none_groups(shared, tmp_path):
    from split_builders.builder import build
    from split_builders.release.folder import front_matter

    said = []
    method = ReportsSizes()
    source = method.example_arguments(shared, tmp_path)[1]
    build(method, source=source, text_fields="premise,hypothesis", label_field="gold_label", validation_size=HELD,
          test_size=HELD, out=str(tmp_path / "out"), null_splits=0, progress=False, log=said.append)
    notes = [line for line in said if line.startswith("note:")]
    assert notes == [f"note: realised sizes: lexical_overlap: test {HELD} rows for {2 * HELD} requested",
                     f"note: realised sizes: random: test {HELD} rows for {2 * HELD} requested"], said
    _, body = front_matter(tmp_path / "out" / "README.md")
    assert "**Realised sizes:** lexical_overlap: test" in body and "whole `None` groups" not in body


def test_verify_exits_1_when_a_config_is_not_checked_and_its_help_says_so(small_release, capsys):
    """A release whose method re-derives none of its configs: nothing differs, yet verify does not exit 0."""
    from split_builders.cli import main
    from split_builders.methods.likelihood import LikelihoodMethod
    from split_builders.registry import REGISTRY

    class NoRederive(LikelihoodMethod):
        rederive = SplitMethod.rederive

    assert main(["verify", str(small_release), "--no-load-check"]) == 0  # the method as installed: all checked
    capsys.readouterr()
    with REGISTRY.standing_in("methods", "likelihood", NoRederive()):
        assert main(["verify", str(small_release), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "-> NOT ALL CHECKED" in printed and "5 config(s) not checked at level 2 (length, ll_split" in printed, printed
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    assert "exit 1 when anything differs or a config is not checked at level 2" in " ".join(
        capsys.readouterr().out.split())


from test_registry_extensions import plugin  # noqa: E402,F401 - the fixture: a distribution installed on sys.path


def test_provenance_names_the_distribution_that_built_it_and_the_versions_it_requires(plugin, monkeypatch):
    """A plug-in's release names its distribution and version (read from the installed metadata), a built-in's
    resplit and its version; each records the installed version of every distribution its info ``requires``."""
    from importlib import metadata

    from split_builders._version import __version__
    from split_builders.api import registry
    from split_builders.release.provenance import built_by

    (plugin / "resplit_plugin-0.1.dist-info" / "RECORD").write_text("resplit_plugin/__init__.py,,\n")
    import resplit_plugin

    method = resplit_plugin.ShortestMethod()
    monkeypatch.setattr(resplit_plugin.ShortestMethod, "info",
                        dataclasses.replace(method.info, requires=("numpy", "no-such-distribution")))
    assert built_by(method) == {"distribution": "resplit-plugin", "version": "0.1",
                                "requires": {"numpy": metadata.version("numpy"), "no-such-distribution": None}}
    assert built_by(registry()["lexical-overlap"]) == {
        "distribution": "resplit", "version": __version__,
        "requires": {"scikit-learn": metadata.version("scikit-learn"), "scipy": metadata.version("scipy")}}


def test_expected_failures_are_run_and_not_raised_and_one_that_passes_is(shared, tmp_path):
    names = ["declarations", "example", "sizes", "configs"]
    passed = check_method(WrongSizes, data=shared, work=tmp_path / "a", checks=names,
                          expected_failures={"sizes": "a known gap"})
    assert passed == ["declarations", "example", "configs"]  # the check after it ran
    with pytest.raises(AssertionError, match="check 'sizes' passed, but expected_failures says it fails \\(a known gap"):
        check_method(Tiny, data=shared, work=tmp_path / "b", checks=names, expected_failures={"sizes": "a known gap"})
    for wrong in ({"nope": "why"}, {"sizes": ""}, ["sizes"]):
        with pytest.raises(ValueError, match="expected_failures"):
            check_method(Tiny, data=shared, work=tmp_path / "c", checks=names, expected_failures=wrong)


def test_method_checks_gives_one_pytest_param_per_check_with_expected_failures_xfail(shared, tmp_path):
    from split_builders.testing import CHECKS
    from split_builders.testing_pytest import method_checks

    params = method_checks(WrongSizes, data=shared, expected_failures={"sizes": "a known gap"})
    assert [param.id for param in params] == list(CHECKS)
    marked = {param.id: param.marks for param in params if param.marks}
    assert list(marked) == ["sizes"] and marked["sizes"][0].kwargs == {"reason": "a known gap", "strict": True,
                                                                        "raises": AssertionError}
    check = dict(zip(CHECKS, (param.values[0] for param in params)))
    assert check["declarations"](tmp_path / "a") == ["declarations"]  # runs that check on the method
    with pytest.raises(AssertionError, match="check 'sizes'"):
        check["sizes"](tmp_path / "b")
