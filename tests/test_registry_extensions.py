"""One registry for methods and evidence views (``split_builders.registry``): lazy ``module:attribute`` entries,
third-party entries from Python entry points of a real installed distribution (a ``.dist-info`` folder with
``entry_points.txt`` on ``sys.path``, read by ``importlib.metadata``), third-party views off until enabled, a second
name refused; a method's :class:`MethodInfo` checked when it is made, and its required hooks when it is registered."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from split_builders.api import MethodInfo, SplitMethod, register, registry
from split_builders.errors import InvalidParameterError
from split_builders.methods import BUILTIN
from split_builders.registry import VIEWS_ENV, Registry, load_target

REPO = Path(__file__).resolve().parents[1]

PLUGIN = textwrap.dedent('''
    """A package that extends resplit from outside it: one method and one evidence view."""
    from split_builders.api import MethodInfo, SplitMethod
    from split_builders.evidence.view import View


    class ShortestMethod(SplitMethod):
        info = MethodInfo(name="{method}", paper="a plug-in", summary="hold out the shortest rows",
                          config_names=("shortest",))

        def load(self, options):
            raise NotImplementedError("a plug-in of the tests")

        def signal(self, loaded, options, context):
            raise NotImplementedError

        def configs(self, loaded, signal, options):
            raise NotImplementedError

        def rows(self, loaded, signal, configs):
            raise NotImplementedError

        def card(self, loaded, signal, configs, options):
            raise NotImplementedError


    class RowTotal(View):
        name = "row_total"
        command = "row-total"
        title = "Rows"
        summary = "count the rows of every config"

        def compute(self, data, *, progress=False, **settings):
            return {{"configs": {{}}}}

        def record(self, report):
            return {{}}, {{}}

        def card_lines(self, report):
            return []

        def format_report(self, report):
            return ["rows"]


    VIEW = RowTotal()
''')


def installed(root: Path, *, method: str = "shortest-plugin") -> Path:
    """A distribution ``resplit-plugin`` installed into ``root`` (its package and its ``.dist-info``), as pip
    installs one: importlib.metadata finds its entry points once ``root`` is on ``sys.path``."""
    package = root / "resplit_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN.format(method=method))
    info = root / "resplit_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: resplit-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[resplit.methods]\n{method} = resplit_plugin:ShortestMethod\n\n"
                                           "[resplit.views]\nrow_total = resplit_plugin:VIEW\n")
    (info / "RECORD").write_text("")
    return root


@pytest.fixture()
def plugin(tmp_path, monkeypatch):
    root = installed(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv(VIEWS_ENV, raising=False)
    yield root
    sys.modules.pop("resplit_plugin", None)


def test_an_installed_package_adds_a_method_after_the_builtin_ones_lazily(plugin):
    fresh = Registry()
    names = fresh.names("methods")
    assert names[:len(BUILTIN)] == list(BUILTIN)  # the built-in methods first
    assert names[-1] == "shortest-plugin" and "resplit_plugin" not in sys.modules  # declared, not imported
    method = fresh.get("methods", "shortest-plugin")
    assert type(method).__name__ == "ShortestMethod" and method.info.config_names == ("shortest",)
    assert fresh.origin("methods", "shortest-plugin") == "entry point of resplit-plugin"


def test_a_third_party_view_is_off_until_enabled_by_name(plugin, monkeypatch):
    assert "row_total" not in Registry().names("views")
    assert Registry().disabled("views") == {"row_total": "resplit_plugin:VIEW"}
    monkeypatch.setenv(VIEWS_ENV, "row_total")
    fresh = Registry()
    assert fresh.names("views") == ["audit", "diagnostics", "probe", "row_total"]
    assert fresh.get("views", "row_total").subcommand == "row-total"


def test_enable_turns_on_an_installed_view_and_refuses_a_name_none_declares(plugin):
    fresh = Registry()
    fresh.enable("views", "row_total")
    assert fresh.names("views")[-1] == "row_total" and fresh.disabled("views") == {}
    assert fresh.origin("views", "row_total") == "entry point of resplit-plugin"
    fresh.enable("views", "audit")  # on already: left as it is
    with pytest.raises(InvalidParameterError, match="no installed view named 'nope' to enable"):
        Registry().enable("views", "nope")


def test_view_enables_a_third_party_view_for_one_build(tmp_path):
    """``--view NAME`` on a build command: the installed view runs for that build (its settings in the README's
    YAML; a build without it leaves the view off, as the registry does above); a name no installed package declares
    is one line, exit 2, nothing written."""
    import yaml

    root = installed(tmp_path / "site")
    source = tmp_path / "rows.csv"
    source.write_text("text,label\n" + "".join(f"row {i} says {'yes' if i % 2 else 'no'} to {i % 13},{i % 2}\n"
                                                for i in range(160)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(root)])}
    env.pop(VIEWS_ENV, None)

    def build(out, *extra):
        return subprocess.run([sys.executable, "-m", "split_builders.cli", "lexical-overlap", "--source", str(source),
                               "--text-fields", "text", "--label-field", "label", "--validation-size", "20",
                               "--test-size", "20", "--null-splits", "0", "--no-progress", "--out", str(out), *extra],
                              capture_output=True, text=True, env=env, timeout=300)

    def recorded(out):
        return yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])["resplit"]

    on = build(tmp_path / "on", "--view", "row_total")
    assert on.returncode == 0, on.stderr[-2000:]
    assert "row_total" in recorded(tmp_path / "on") and "audit" in recorded(tmp_path / "on")
    refused = build(tmp_path / "nope", "--view", "nope")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr[-2000:]
    (line,) = refused.stderr.strip().splitlines()
    assert "no installed view named 'nope'" in line and "row_total" in line
    assert not (tmp_path / "nope").exists()


def test_an_entry_point_of_a_registered_name_is_refused_in_one_line(tmp_path, monkeypatch):
    from split_builders.errors import PluginWarning

    monkeypatch.syspath_prepend(str(installed(tmp_path / "site", method="likelihood")))
    fresh = Registry()
    with pytest.warns(PluginWarning, match="the plug-in resplit-plugin 0.1 .* declares a method named 'likelihood', "
                                           "which is the built-in method 'likelihood': it is left out"):
        fresh.names("methods")
    assert fresh.origin("methods", "likelihood") == "built-in"  # never replaced


def test_the_command_lists_an_installed_method_without_any_change_to_resplit(tmp_path):
    root = installed(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(root)])}
    done = subprocess.run([sys.executable, "-m", "split_builders.cli", "list"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "shortest-plugin" in done.stdout and "lexical-overlap" in done.stdout


def test_a_reference_names_a_module_and_an_attribute():
    assert load_target("split_builders.methods.lexical_overlap:LexicalOverlapMethod").__name__ == \
        "LexicalOverlapMethod"
    with pytest.raises(InvalidParameterError, match="not a 'module:attribute' reference"):
        load_target("split_builders.methods.lexical_overlap")


def test_a_method_name_need_not_be_a_module_name():
    method = registry()["lexical-overlap"]
    assert type(method).__module__ == "split_builders.methods.lexical_overlap"


# -- the info object and the required hooks --------------------------------------------------------------------


def _info(**changes) -> MethodInfo:
    return MethodInfo(**{"name": "m", "paper": "p", "summary": "s", "config_names": ("a", "b"), **changes})


@pytest.mark.parametrize("changes, message", [
    ({"name": ""}, "has no name"),
    ({"signal_columns": {"x": "ordinal"}}, "signal_columns must map each signal column"),
    ({"baseline_config": "c"}, "baseline_config 'c' is not one of its config_names"),
    ({"evaluation_splits": ("dev",)}, "evaluation_splits must be a non-empty tuple"),
    ({"harness_task": "classification"}, "harness_task must be a HarnessTask"),
    ({"options": dict}, "Options must be a dataclass derived from CommonOptions"),
    ({"report_tables": ("g_score",)}, "declare them"),
    ({"scenarios": {"x": ("c",)}}, "scenarios must map a name"),
    ({"table_columns": ["input"]}, "table_columns must be a tuple")])
def test_the_info_is_checked_when_it_is_made_in_one_line(changes, message):
    with pytest.raises(InvalidParameterError, match=message) as refused:
        _info(**changes)
    assert "\n" not in str(refused.value)


def test_a_method_class_with_an_info_reads_as_the_old_attributes_and_derives_group_support():
    class Declared(SplitMethod):
        info = _info(baseline_config="b")

        def load(self, options): ...
        def signal(self, loaded, options, context): ...
        def configs(self, loaded, signal, options): ...
        def rows(self, loaded, signal, configs): ...
        def card(self, loaded, signal, configs, options): ...

    class Grouping(Declared):
        def groups(self, loaded, field): ...

    assert Declared.name == "m" and Declared.baseline_config == "b" and Declared.Options is Declared.info.options
    assert not Declared().supports_groups and Grouping().supports_groups


def test_register_refuses_a_method_missing_required_hooks_naming_them():
    class Incomplete(SplitMethod):
        info = _info(name="incomplete")

        def load(self, options): ...
        def rows(self, loaded, signal, configs): ...

    with pytest.raises(InvalidParameterError, match=r"Incomplete does not implement the required hook\(s\) card, "
                                                    r"configs, signal"):
        register(Incomplete)
    assert "incomplete" not in registry()


# -- the public conformance check ------------------------------------------------------------------------------


def test_check_method_runs_the_named_checks_on_a_method_that_need_not_be_registered(shared, tmp_path):
    from split_builders.methods.lexical_overlap import LexicalOverlapMethod
    from split_builders.testing import CHECKS, check_method

    class Renamed(LexicalOverlapMethod):
        info = MethodInfo(**{**LexicalOverlapMethod.info.__dict__, "name": "renamed-overlap"})

    assert check_method(Renamed, data=shared, work=tmp_path, checks=("declarations", "example")) == [
        "declarations", "example"]
    assert "renamed-overlap" not in registry()  # registered for its checks only
    with pytest.raises(ValueError, match="unknown check"):
        check_method(Renamed, data=shared, work=tmp_path / "x", checks=("nope",))
    assert {"declarations", "provenance", "verify", "groups", "group_policy", "probe"} <= set(CHECKS)


def test_check_method_names_the_check_a_method_fails(shared, tmp_path):
    from split_builders.methods.lexical_overlap import LexicalOverlapMethod
    from split_builders.testing import check_method

    class NoExample(LexicalOverlapMethod):
        info = MethodInfo(**{**LexicalOverlapMethod.info.__dict__, "name": "no-example"})

        def example_arguments(self, data, work):
            return None

    with pytest.raises(AssertionError, match=r"no-example: check 'example' \(example_arguments\(\)\) failed: no example arguments"):
        check_method(NoExample, data=shared, work=tmp_path, checks=("example",))
