"""What every split method promises, read from the registry, and a sixth method defined in this file
(its own splitter, signal column, card section and diff statistic) that goes through the whole spine:
the CLI, a recipe, ``verify`` levels 1 to 3 and ``diff``, with no other file edited."""

import ast
import importlib
import inspect
from dataclasses import dataclass

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from split_builders.api import (HOOKS, BaseSplitter, CommonOptions, ConfigSplit, Loaded, Signal, SourceInfo, Split,
                                SplitMethod, check_random_state, check_size, option, register, registry,
                                resolve_size, unregister)
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.methods import BUILTIN

VOWELS = set("aeiouAEIOU")


class VowelShareSplitter(BaseSplitter):
    """The rows with the largest share of vowels are the test split; a seeded draw of the rest is
    validation (ties broken by row number)."""

    def __init__(self, *, test_size=0.25, validation_size=0.1, random_state=None):
        self.test_size = check_size(test_size, "test_size", allow_zero=False)
        self.validation_size = check_size(validation_size, "validation_size")
        self.random_state = check_random_state(random_state)

    def split(self, shares) -> Split:
        shares = np.asarray(shares, dtype=np.float64)
        order = np.argsort(-shares, kind="stable")
        n_test = resolve_size(self.test_size, shares.size)
        rest = np.random.default_rng(self.random_state).permutation(order[n_test:])
        n_validation = resolve_size(self.validation_size, shares.size)
        return Split.of(rest[n_validation:], rest[:n_validation], order[:n_test])


@dataclass(kw_only=True)
class VowelOptions(CommonOptions):
    text_field: str = option("text", "the column whose vowel share is the signal")
    test_size: float = option(0.25, "share of rows held out as test", minimum=0, maximum=1,
                              exclusive=("minimum", "maximum"))
    validation_size: float = option(0.1, "share of rows drawn for validation", minimum=0, maximum=1,
                                    exclusive=("maximum",))


class VowelShareMethod(SplitMethod):
    name = "vowel-share"
    paper = "nobody (a test of the spine)"
    summary = "hold out the rows richest in vowels"
    config_names = ("vowel_heavy",)
    Options = VowelOptions
    signal_columns = ("vowel_share",)

    def load(self, options):
        from loading_scripts.files import read_table
        from loading_scripts.source import content_sha256, with_row_numbers

        rows = with_row_numbers(read_table(options.source), name=options.source)
        return Loaded(rows, SourceInfo(name="vowels", rows=len(rows), content_sha256=content_sha256(rows)))

    def signal(self, loaded, options, context):
        texts = loaded.data[options.text_field]
        shares = np.asarray([sum(c in VOWELS for c in t) / max(len(t), 1) for t in texts])
        return Signal(shares, {"kind": "share of vowels among the characters"})

    def configs(self, loaded, signal, options):
        splitter = VowelShareSplitter(test_size=options.test_size, validation_size=options.validation_size,
                                      random_state=options.seed)
        split = splitter.split(signal.values)
        mean_test = round(float(signal.values[split.test].mean()), 6)
        return [ConfigSplit("vowel_heavy", split.as_indices(), method=self.name,
                            parameters={**splitter.get_params(), "mean_share_test": mean_test},
                            description="the rows richest in vowels held out")]

    def rows(self, loaded, signal, configs):
        return loaded.data.add_column("vowel_share", signal.values.tolist())

    def card(self, loaded, signal, configs, options):
        from split_builders.release.card import CardSpec, Figure, Panel, Section

        figure = Figure("figures/vowel_heavy.png", "vowel shares", [Panel("share of vowels", {
            s: signal.values[configs[0].indices[s]] for s in configs[0].splits})])
        return CardSpec(title="Vowel-heavy splits", intro="Rows rich in vowels are held out.",
                        how_built=["By the share of vowels."],
                        configs=[Section("`vowel_heavy`", "The vowel-richest rows are the test split.", [figure])])

    def rederive(self, released, record):
        rows = released.all_rows()
        parameters = dict(record["configs"]["vowel_heavy"]["parameters"])
        parameters.pop("mean_share_test")
        split = VowelShareSplitter(**parameters).split(rows.column("vowel_share").to_numpy())
        ids = rows.column("source_id").to_numpy()
        return {"vowel_heavy": {name: ids[part] for name, part in split.as_indices().items()}}

    def config_statistics(self, parameters):
        return {"mean_share_test": parameters["mean_share_test"]}


@pytest.fixture()
def vowel_method(tmp_path):
    register(VowelShareMethod)
    source = tmp_path / "data" / "vowels.csv"
    source.parent.mkdir()
    words = ["strength", "audio", "rhythm", "queue", "crypt", "eerie", "lynx", "aioli", "tsktsk", "ouija"]
    source.write_text("text,label\n" + "".join(f"{words[i % 10]} {i},{i % 2}\n" for i in range(90)))
    yield source
    unregister(VowelShareMethod.name)


def _front_matter(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _ids(folder, config="vowel_heavy"):
    meta = _front_matter(folder)
    files = {f["split"]: folder / f["path"] for c in meta["configs"] if c["config_name"] == config
             for f in c["data_files"]}
    return {split: set(pq.read_table(path).column("source_id").to_pylist()) for split, path in files.items()}


def test_a_sixth_method_builds_verifies_and_diffs_through_the_spine(vowel_method, tmp_path, hf_cache, capsys):
    from split_builders.release.diff import diff
    from split_builders.release.recipe import file_sha256
    from split_builders.release.verify import verify

    # 1. the CLI generated from the registry
    cli_out = tmp_path / "cli"
    assert main(["vowel-share", "--source", str(vowel_method), "--out", str(cli_out), "--seed", "1",
                 "--no-progress"]) == 0
    loaded = datasets.load_dataset(str(cli_out), "vowel_heavy", cache_dir=hf_cache)
    shares = {s: list(loaded[s]["vowel_share"]) for s in loaded}
    assert min(shares["test"]) >= max(shares["train"] + shares["validation"])
    card = (cli_out / "README.md").read_text()
    assert "The vowel-richest rows are the test split." in card and (cli_out / "figures" / "vowel_heavy.png").is_file()

    # 2. a recipe
    recipe = tmp_path / "releases" / "vowels.yaml"
    recipe.parent.mkdir()
    recipe.write_text(yaml.safe_dump({
        "repo": "{org}/vowels", "method": "vowel-share", "seed": 2, "options": {"test_size": 0.3},
        "source": {"files": [{"path": "vowels.csv", "sha256": file_sha256(vowel_method)}],
                   "local": [str(vowel_method)]},
        "license": "mit", "citation": {"method": "@misc{vowels}", "source": "@misc{words}"}}))
    recipe_out = tmp_path / "recipe"
    capsys.readouterr()
    assert main(["release", str(recipe), "--out", str(recipe_out), "--no-progress", "--no-load-check"]) == 0
    assert "OK" in capsys.readouterr().out
    meta = _front_matter(recipe_out)["resplit"]
    assert meta["method"] == "vowel-share" and meta["seed"] == 2 and meta["parameters"]["test_size"] == 0.3

    # 3. verify: level 1 (files), 2 (re-derived from the rows) and 3 (the signal column recomputed)
    report = verify(str(cli_out), rescore=True, source=str(vowel_method))
    assert report.ok and not [f for f in report.findings if f.status == "not checked"]
    assert {f.level for f in report.findings} == {1, 2, 3}
    assert any(f.level == 3 and f.config == "signal `vowel_share`" for f in report.findings)

    # 4. diff: moves equal an independent comparison, and the method's own statistics are compared
    result = diff(str(cli_out), str(recipe_out))
    entry = result["configs"]["vowel_heavy"]
    before, after = _ids(cli_out), _ids(recipe_out)
    moved = sum(len(before[a] & after[b]) for a in before for b in after if a != b)
    assert entry["moved"] == moved > 0 and entry["status"] == "changed"
    assert set(entry["statistics"]) >= {"mean_share_test", "ks_vowel_share_train_test"}
    assert result["provenance"]["seed"] == [1, 2]


def test_a_row_moved_in_the_sixth_methods_release_is_named(vowel_method, tmp_path, capsys):
    import shutil

    from test_verify_diff import _move_a_row

    out = tmp_path / "out"
    assert main(["vowel-share", "--source", str(vowel_method), "--out", str(out), "--no-progress"]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    moved = _move_a_row(copy, "vowel_heavy", "test", "train")
    capsys.readouterr()
    assert main(["verify", str(copy), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "level 2  vowel_heavy/test" in printed and f"source_id {moved}" in printed


# -- the registry ----------------------------------------------------------------------------------


def test_registering_a_second_method_of_a_registered_name_fails():
    class Impostor(VowelShareMethod):
        name = "likelihood"

    before = registry()["likelihood"]
    with pytest.raises(InvalidParameterError, match="'likelihood' is already registered"):
        register(Impostor)
    assert registry()["likelihood"] is before


def test_register_refuses_what_is_not_a_split_method():
    class NotAMethod:
        name = "nothing"

    class NoName(VowelShareMethod):
        name = ""

    class BadOptions(VowelShareMethod):
        name = "bad-options"
        Options = dict

    for thing, message in ((NotAMethod, "not a split method"), (NoName, "has no name"),
                           (BadOptions, "Options must be a dataclass derived from CommonOptions")):
        with pytest.raises(InvalidParameterError, match=message):
            register(thing)
    assert not {"nothing", "bad-options"} & set(registry())


def test_the_builtin_methods_are_listed_once_and_registered_in_that_order():
    assert list(registry())[:len(BUILTIN)] == list(BUILTIN)
    for name, (module, _) in BUILTIN.items():
        source = inspect.getsource(importlib.import_module(module))
        calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", getattr(n.func, "attr", None)) == "register"]
        assert not calls, f"{module} registers itself; the table in split_builders/methods/__init__.py does"


# -- one layout for every method module ------------------------------------------------------------


@pytest.mark.parametrize("name", list(BUILTIN))
def test_a_method_module_is_named_as_its_method_and_laid_out_options_method_helpers(name):
    method = registry()[name]
    module = importlib.import_module(type(method).__module__)
    assert module.__name__ == f"split_builders.methods.{name}"
    assert method.signal_columns, f"{name} declares no signal columns"
    tree = ast.parse(inspect.getsource(module))
    top = {n.name: n.lineno for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    method_line, options_line = top[type(method).__name__], top[method.Options.__name__]
    assert options_line < method_line, "the Options dataclass comes before the method"
    assert not [f for f, line in top.items() if line < method_line and not f[0].isupper()], \
        "helpers come after the method (module-level functions before it)"
    hooks = [n.name for n in next(n for n in tree.body if getattr(n, "name", "") == type(method).__name__).body
             if isinstance(n, ast.FunctionDef) and n.name in HOOKS]
    assert hooks == sorted(hooks, key=HOOKS.index), f"{name}'s hooks are not in build order: {hooks}"
