"""The plug-in guide's package, ``tests/fixtures/richest_split`` (docs/plugins.md includes its files, so the page
cannot go stale), installed as pip installs one (its folder on ``sys.path`` and a ``.dist-info`` whose
``entry_points.txt`` is written from its ``pyproject.toml``) and used as a contributor would: it imports
``split_builders.api`` only, its method is well under 150 lines, ``check_method`` passes it, and its view, off until
named, runs in a build (``--view``, ``build(views=...)``, ``split(views=...)``) and as its own subcommand."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import split_builders.api as api
from split_builders import evidence, registry as registry_module
from split_builders.errors import InvalidParameterError
from split_builders.registry import VIEWS_ENV, Registry

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "richest_split"
PACKAGE = FIXTURE / "richest_split"
PROJECT_PACKAGES = ("split_builders", "loading_scripts", "metrics")
BIBTEX = "@misc{richest, title = {Richest rows held out}, year = {2026}}"


def install(site: Path) -> dict:
    """The fixture's distribution metadata in ``site``, from its pyproject.toml (as pip writes it); its project."""
    project = tomllib.loads((FIXTURE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in project["entry-points"].items()))
    (info / "top_level.txt").write_text("richest_split\n")
    (info / "RECORD").write_text("")
    return project


@pytest.fixture()
def richest(tmp_path, monkeypatch):
    """The fixture package installed, and a registry that discovers it in the place of resplit's own."""
    install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(FIXTURE))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delenv(VIEWS_ENV, raising=False)
    fresh = Registry()
    monkeypatch.setattr(registry_module, "REGISTRY", fresh)
    monkeypatch.setattr(evidence, "REGISTRY", fresh)
    yield fresh
    for name in [name for name in sys.modules if name.partition(".")[0] == "richest_split"]:
        sys.modules.pop(name)


def rows(n: int = 120) -> list[dict]:
    """The rows of the method's own example: i % 17 + 1 distinct words, labels alternating."""
    return [{"text": " ".join(f"w{j}" for j in range(i % 17 + 1)) + f" row {i}", "label": "yes" if i % 2 else "no"}
            for i in range(n)]


def recorded(out: Path) -> dict:
    return yaml.safe_load((out / "README.md").read_text(encoding="utf-8").split("---\n")[1])["resplit"]


def test_the_package_imports_the_public_api_only_and_its_method_is_short():
    imported = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                if module.partition(".")[0] in PROJECT_PACKAGES:
                    assert module == "split_builders.api", f"{path.name} imports {module}: not the public API"
                    imported.update((alias.name, path.name) for alias in node.names)
    missing = sorted(name for name in imported if name not in api.__all__)
    assert not missing and len(imported) > 20, (missing, sorted(imported))
    lines = [line for line in (PACKAGE / "__init__.py").read_text().splitlines() if line.strip()]
    assert len(lines) < 150, len(lines)
    guide = (FIXTURE.parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    for path in [FIXTURE / "pyproject.toml", *sorted(PACKAGE.glob("*.py"))]:  # the page shows the files themselves
        assert f'{{% include "../{path.relative_to(FIXTURE.parents[2]).as_posix()}" %}}' in guide, path.name


def test_the_installed_package_is_discovered_and_passes_check_method(richest, tmp_path):
    from split_builders.testing import HOOK_CHECKS, check_method

    assert richest.names("methods")[-1] == "richest" and "richest_split" not in sys.modules  # declared, not imported
    assert richest.origin("methods", "richest") == "entry point of richest-split"
    assert richest.disabled("views") == {"split_rows": "richest_split.views:VIEW"}  # off until named
    method = richest.get("methods", "richest")
    names = ["declarations", "example", *HOOK_CHECKS]
    assert check_method(type(method), data=tmp_path, work=tmp_path / "work", checks=names) == names


def test_view_runs_in_a_build_and_its_subcommand_and_verify_and_diff_say_who_built_it(richest, tmp_path, capsys):
    from split_builders.cli import main

    source = tmp_path / "rows.csv"
    source.write_text("text,label\n" + "".join(f"{row['text']},{row['label']}\n" for row in rows()))
    out, recipe = tmp_path / "out", tmp_path / "richest.yaml"
    assert main(["richest", "--source", str(source), "--validation-size", "12", "--test-size", "12", "--null-splits",
                 "0", "--no-progress", "--view", "split_rows", "--out", str(out)]) == 0
    counts = recorded(out)["configs"]["richest"]["split_rows"]
    assert counts == {"train": 96, "validation": 12, "test": 12}, counts
    # the plug-in's view is recorded with the distribution that provides it, as the method is
    assert recorded(out)["built_by"]["views"] == {"split_rows": {"distribution": "richest-split", "version": "0.1.0"}}
    assert "split_rows" not in richest.names("views")  # on for that command only
    recipe.write_text(yaml.safe_dump({"repo": "{org}/richest", "method": "richest", "seed": 7, "license": "mit",
                                      "source": {"local": [str(source)]},
                                      "citation": {"method": BIBTEX, "source": BIBTEX},
                                      "options": {"validation_size": 12, "test_size": 12, "null_splits": 0}}))
    assert main(["release", str(recipe), "--out", str(tmp_path / "released"), "--view", "split_rows",
                 "--no-progress"]) == 0  # built, then verified
    assert recorded(tmp_path / "released")["configs"]["richest"]["split_rows"] == counts
    capsys.readouterr()
    assert main(["split-rows", str(out), "--view", "split_rows"]) == 0  # the view's own subcommand, by --view
    assert "richest test: 12 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # not named: no such command
        main(["split-rows", str(out)])
    assert main(["verify", str(out)]) == 0
    assert f"{out}: built by richest-split 0.1.0" in capsys.readouterr().out.splitlines()
    import shutil  # the same release, as a later version of the plug-in would have built it

    shutil.copytree(out, tmp_path / "later")
    readme = tmp_path / "later" / "README.md"
    text = readme.read_text(encoding="utf-8")
    built = "distribution: richest-split\n    version: 0.1.0\n"
    assert text.count(built) == 1
    readme.write_text(text.replace(built, built.replace("0.1.0", "0.2.0")), encoding="utf-8")
    assert main(["diff", str(out), str(tmp_path / "later")]) == 0
    assert "built by richest-split 0.1.0 -> built by richest-split 0.2.0" in capsys.readouterr().out.splitlines()


def test_build_and_split_take_views_for_that_build_only(richest, tmp_path):
    import split_builders

    first = split_builders.build("richest", source=rows(), out=str(tmp_path / "on"), views="split_rows",
                                 null_splits=0, progress=False, log=lambda line: None)
    assert recorded(first.out)["configs"]["richest"]["split_rows"]["test"] == 12
    off = split_builders.build("richest", source=rows(), out=str(tmp_path / "off"), null_splits=0,
                               progress=False, log=lambda line: None)
    assert "split_rows" not in recorded(off.out)["configs"]["richest"]
    split_builders.split("richest", rows(), out=tmp_path / "split", views=["split_rows"], null_splits=0)
    assert recorded(tmp_path / "split")["configs"]["richest"]["split_rows"]["validation"] == 12
    with pytest.raises(InvalidParameterError, match="no installed view named 'nope' to enable"):
        split_builders.build("richest", source=rows(), out=str(tmp_path / "nope"), views=["nope"])
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("record, said", [
    ({"built_by": {"distribution": "richest-split", "version": "0.1.0", "requires": {}}}, "richest-split 0.1.0"),
    ({"built_by": {"distribution": None, "version": None, "requires": {}}},
     "a method no installed distribution provides"),
    ({"method": "likelihood"}, None),  # a release from before resplit recorded it
])
def test_who_built_a_release_is_said_from_its_provenance(record, said):
    from split_builders.release.provenance import built_by_said

    assert built_by_said(record) == said
