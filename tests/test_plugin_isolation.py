"""A plug-in fails alone (``split_builders.registry``): real distributions (a package and its ``.dist-info`` with
entry points, on ``sys.path``: :func:`test_registry_extensions.installed`) that fail to import, or whose name is a
built-in method or view, a key of a release's provenance, a command resplit has, or a name declared already. Each is
left out with one warning line naming its distribution; every other command, a real build included, works; nothing
it names is replaced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_registry_extensions import REPO, installed

from split_builders.errors import InvalidParameterError, PluginWarning
from split_builders.registry import VIEWS_ENV, Registry

BROKEN = 'raise RuntimeError("boom: a dependency of the plug-in is missing")\n'


def _resplit(root: Path, *args, env: dict | None = None, command=None) -> subprocess.CompletedProcess:
    """``resplit ARGS`` as a process, with the distribution installed in ``root`` on its path."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(root)]), **(env or {})}
    if not env or VIEWS_ENV not in env:
        environment.pop(VIEWS_ENV, None)
    return subprocess.run([*(command or [sys.executable, "-m", "split_builders.cli"]), *map(str, args)],
                          capture_output=True, text=True, env=environment, timeout=300)


def _warning(done: subprocess.CompletedProcess) -> str:
    """The one line the command printed on stderr: a warning, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("resplit: warning: the plug-in resplit-plugin 0.1 "), line
    return line


def _entry_points(root: Path, text: str) -> None:
    (root / "resplit_plugin-0.1.dist-info" / "entry_points.txt").write_text(text)


@pytest.fixture()
def plugin_site(tmp_path, monkeypatch):
    """``installed`` into a fresh folder on this process's path too; the plug-in's module is forgotten after."""
    def install(**kwargs) -> Path:
        root = installed(tmp_path / "site", **kwargs)
        monkeypatch.syspath_prepend(str(root))
        return root

    monkeypatch.delenv(VIEWS_ENV, raising=False)
    yield install
    sys.modules.pop("resplit_plugin", None)


def test_a_plugin_that_fails_to_import_leaves_help_and_a_real_build_working_with_one_warning_line(tmp_path):
    root = installed(tmp_path / "site", method="broken-plugin")
    (root / "resplit_plugin" / "__init__.py").write_text(BROKEN)
    source = tmp_path / "rows.csv"
    source.write_text("text,label\n" + "".join(f"row {i} says {'yes' if i % 2 else 'no'} to {i % 13},{i % 2}\n"
                                                for i in range(120)))
    runs = {"help": _resplit(root, "--help"),
            "method help": _resplit(root, "likelihood", "--source", "snli-sample", "--help"),
            "build": _resplit(root, "lexical-overlap", "--source", source, "--text-fields", "text", "--label-field",
                              "label", "--validation-size", "10", "--test-size", "10", "--null-splits", "0",
                              "--no-progress", "--out", tmp_path / "out")}
    for what, done in runs.items():
        assert done.returncode == 0, (what, done.stderr[-2000:])
        line = _warning(done)
        assert "(resplit.methods: broken-plugin = resplit_plugin:ShortestMethod) could not be loaded (RuntimeError: " \
               "boom: a dependency of the plug-in is missing): its method 'broken-plugin' is left out" in line, line
    assert "lexical-overlap" in runs["help"].stdout and "broken-plugin" not in runs["help"].stdout
    assert "--scores" in runs["method help"].stdout
    assert (tmp_path / "out" / "README.md").is_file()


def test_a_plugin_that_fails_to_import_is_refused_by_name_in_the_line_it_warned(plugin_site):
    root = plugin_site(method="broken-plugin")
    (root / "resplit_plugin" / "__init__.py").write_text(BROKEN)
    fresh = Registry()
    assert "broken-plugin" in fresh.names("methods")  # declared, not imported: loaded when its name is used
    with pytest.warns(PluginWarning) as warned, pytest.raises(InvalidParameterError) as refused:
        fresh.get("methods", "broken-plugin")
    assert [str(w.message) for w in warned] == [str(refused.value)] and "RuntimeError: boom" in str(refused.value)
    assert "broken-plugin" not in fresh.items("methods") and "likelihood" in fresh.items("methods")
    with pytest.raises(InvalidParameterError, match="could not be loaded"):
        fresh.get("methods", "broken-plugin")


def test_a_plugin_named_likelihood_is_refused_in_one_line_and_the_builtin_runs(tmp_path):
    root = installed(tmp_path / "site", method="likelihood")
    done = _resplit(root, "likelihood", "--source", "snli-sample", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    line = _warning(done)
    assert "(resplit.methods: likelihood = resplit_plugin:ShortestMethod) declares a method named 'likelihood', " \
           "which is the built-in method 'likelihood': it is left out" in line, line
    assert "--scores" in done.stdout and "resplit_plugin" not in done.stdout


@pytest.mark.parametrize("kind, name, taken", [
    ("methods", "audit", "the built-in view 'audit'"),
    ("views", "lexical-overlap", "the built-in method 'lexical-overlap'"),
    ("views", "seed", "a key of the release's provenance"),
    ("views", "rows", "a key of the release's provenance")])
def test_a_reserved_name_is_refused_in_one_line_and_never_replaced(plugin_site, monkeypatch, kind, name, taken):
    root = plugin_site()
    group = "resplit.methods" if kind == "methods" else "resplit.views"
    target = "resplit_plugin:ShortestMethod" if kind == "methods" else "resplit_plugin:VIEW"
    _entry_points(root, f"[{group}]\n{name} = {target}\n")
    monkeypatch.setenv(VIEWS_ENV, name)  # asked for, a view is refused all the same
    fresh = Registry()
    with pytest.warns(PluginWarning) as warned:
        names = fresh.names(kind)
    (line,) = [str(w.message) for w in warned]
    assert line.startswith(f"the plug-in resplit-plugin 0.1 ({group}: {name} = {target}) declares a {kind[:-1]} "
                           f"named {name!r}, which is {taken}") and "\n" not in line
    assert name not in names or fresh.origin(kind, name) == "built-in"
    if kind == "views":
        with pytest.raises(InvalidParameterError, match="which is " + taken):
            fresh.enable("views", name)


def test_a_view_named_seed_is_refused_by_a_build_and_by_register_view_and_never_replaces_the_seed(tmp_path):
    """The view a build names with ``--view seed`` is refused in the line of the warning (exit 2, nothing written);
    ``register_view`` refuses it too; a release's records cannot take a provenance key (the writer's guard)."""
    from split_builders.evidence import register_view, views
    from split_builders.evidence.view import View
    from split_builders.release.writer import _yaml_metadata

    root = installed(tmp_path / "site")
    _entry_points(root, "[resplit.views]\nseed = resplit_plugin:VIEW\n")
    done = _resplit(root, "lexical-overlap", "--source", "snli-sample", "--view", "seed", "--no-progress", "--out",
                    tmp_path / "out")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    warning, error = done.stderr.strip().splitlines()
    assert "declares a view named 'seed', which is a key of the release's provenance" in warning
    assert error.startswith("resplit lexical-overlap: error: the plug-in resplit-plugin 0.1") and "'seed'" in error
    assert not (tmp_path / "out").exists()

    class Seed(View):
        name, command, title, summary = "seed", "seed-view", "Seed", "overwrites the seed"

    with pytest.raises(InvalidParameterError, match="a view may not be named 'seed': that is a key of the release's"):
        register_view(Seed())
    assert "seed" not in views()
    with pytest.raises(InvalidParameterError, match="the evidence view 'seed' is named like a key of the release's"):
        _yaml_metadata(None, [], {}, license=None, pretty_name=None, provenance={"seed": 42},
                       evidence={"seed": ({"seed": 0}, {})})


def test_a_plugin_named_like_a_command_or_declared_already_is_left_out_with_one_line(tmp_path):
    root = installed(tmp_path / "site", method="verify")
    other = root / "other_plugin-0.2.dist-info"  # a second distribution declaring the same name
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other-plugin\nVersion: 0.2\n")
    (other / "entry_points.txt").write_text("[resplit.methods]\nverify = resplit_plugin:ShortestMethod\n")
    done = _resplit(root, "verify", "--help")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("resplit: warning: ") for line in lines), lines
    assert any("declares a method named 'verify', which is declared already (entry point of" in line
               for line in lines)
    assert any("would take the command 'verify', which resplit has already: it is left out" in line for line in lines)
    assert "--rescore" in done.stdout  # resplit's own verify


def test_a_plugin_named_like_a_method_the_user_registers_is_refused_not_used(tmp_path):
    """The tests' own ``cluster`` method (registered as a user registers one): a plug-in of that name makes the
    registration fail, naming the plug-in, instead of the plug-in silently standing in for it."""
    root = installed(tmp_path / "site", method="cluster")
    done = _resplit(root, "list", command=[sys.executable, str(REPO / "tests" / "resplit_cli.py")])
    assert done.returncode != 0 and "cluster" not in done.stdout
    assert ("a split method named 'cluster' is already registered (ShortestMethod, entry point of resplit-plugin)"
            in done.stderr.strip().splitlines()[-1]), done.stderr[-2000:]
