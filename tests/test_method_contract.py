"""What every split method promises, read from the registry, and a sixth method defined in this file
("cluster": whole TF-IDF k-means clusters held out; its own splitters, a categorical signal column, its own
baseline config ``iid``, no group support, card sections and a diff statistic) that goes through the whole
spine: the CLI, a recipe, ``verify`` levels 1 to 3, ``diff`` and the probe, with no other file edited.
``tests/conftest.py`` registers it for the whole session, so every test parametrized over ``registry()``
(contract, labels, Hub metadata, bad input) runs over it too."""

import ast
import importlib
import inspect
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from split_builders.api import (HOOKS, BaseSplitter, CommonOptions, ConfigSplit, Fields, HarnessTask, Loaded, MethodInfo,
                                Signal, SourceInfo, Split, SplitMethod, check_number, check_random_state, check_size,
                                option, register, registry, resolve_size)
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.methods import BUILTIN

class HeldOutClustersSplitter(BaseSplitter):
    """Whole clusters are held out: a seeded draw of ``test_clusters`` of the clusters present is the test
    split; a seeded share ``validation_size`` of the other rows is validation."""

    def __init__(self, *, test_clusters=2, validation_size=0.1, random_state=None):
        self.test_clusters = check_number(test_clusters, "test_clusters", integer=True, minimum=1)
        self.validation_size = check_size(validation_size, "validation_size")
        self.random_state = check_random_state(random_state)

    def split(self, clusters) -> Split:
        clusters = np.asarray(clusters, dtype=np.int64)
        present = np.unique(clusters)
        if self.test_clusters >= present.size:
            raise InvalidParameterError(f"test_clusters must be below the {present.size} clusters present, "
                                        f"got {self.test_clusters}")
        rng = np.random.default_rng(self.random_state)
        held = rng.permutation(present)[: self.test_clusters]
        test = np.flatnonzero(np.isin(clusters, held))
        rest = rng.permutation(np.flatnonzero(~np.isin(clusters, held)))
        n_validation = resolve_size(self.validation_size, clusters.size)
        return Split.of(rest[n_validation:], rest[:n_validation], test)


class IIDSplitter(BaseSplitter):
    """A seeded random split of given sizes (the baseline of the same sizes as the held-out clusters)."""

    def __init__(self, *, validation_size=0, test_size=1, random_state=None):
        self.validation_size = check_size(validation_size, "validation_size")
        self.test_size = check_size(test_size, "test_size", allow_zero=False)
        self.random_state = check_random_state(random_state)

    def split(self, n_rows) -> Split:
        order = np.random.default_rng(self.random_state).permutation(int(n_rows))
        n_validation = resolve_size(self.validation_size, n_rows)
        n_test = resolve_size(self.test_size, n_rows)
        return Split.of(order[n_validation + n_test:], order[:n_validation], order[n_validation:n_validation + n_test])


@dataclass(kw_only=True)
class ClusterOptions(CommonOptions):
    text_fields: tuple[str, ...] = option(("text",), "comma-separated text fields; their TF-IDF is clustered",
                                          group="source")
    label_field: str | None = option(None, "the label field", group="source")
    clusters: int = option(8, "k-means clusters of the TF-IDF vectors", integer=True, minimum=2)
    test_clusters: int = option(2, "clusters held out whole as the test split", integer=True, minimum=1)
    validation_size: float = option(0.1, "share of rows drawn for validation from the other clusters", minimum=0,
                                    maximum=1, exclusive=("maximum",))

    def validate(self):
        if self.test_clusters >= self.clusters:
            raise InvalidParameterError(f"test-clusters ({self.test_clusters}) must be below clusters "
                                        f"({self.clusters})")


def cluster_configs(clusters, *, test_clusters, validation_size, random_state) -> list:
    """The cluster method's config builder (build and verify both call it): whole clusters held out, and a random
    split of the same sizes."""
    splitter = HeldOutClustersSplitter(test_clusters=test_clusters, validation_size=validation_size,
                                       random_state=random_state)
    held = splitter.split(clusters)
    iid = IIDSplitter(validation_size=len(held.validation), test_size=len(held.test), random_state=random_state)
    return [ConfigSplit("held_out_clusters", held.as_indices(), method="cluster", parameters=splitter.get_params(),
                        description="whole TF-IDF clusters held out as the test split"),
            ConfigSplit("iid", iid.split(len(clusters)).as_indices(), method="cluster", parameters=iid.get_params(),
                        description="a random split of the same sizes")]


class ClusterMethod(SplitMethod):
    """Hold out whole TF-IDF k-means clusters (the sixth method: defined here, registered for the whole
    test session by ``tests/conftest.py``). Its signal is categorical (a cluster id), its baseline is
    ``iid`` (not ``random``), and it cannot keep ``--group-field`` groups whole."""

    info = MethodInfo(name="cluster", paper="nobody (a test of the spine)",
                      summary="hold out whole TF-IDF k-means clusters", config_names=("held_out_clusters", "iid"),
                      options=ClusterOptions, signal_columns={"cluster": "categorical"}, baseline_config="iid",
                      harness_task=HarnessTask("classification"))

    def load(self, options):
        from loading_scripts.files import read_table
        from loading_scripts.source import content_sha256, with_row_numbers
        from split_builders.errors import FieldError

        rows = with_row_numbers(read_table(options.source), name=options.source)
        for role, column in [*(("text", f) for f in options.text_fields), ("label", options.label_field)]:
            if column is not None and column not in rows.column_names:
                raise FieldError(column, rows.column_names, role=role, source=options.source)
        if options.limit is not None:
            rows = rows.select(range(min(options.limit, len(rows))))
        return Loaded(ClusterRows(rows, options.label_field),
                      SourceInfo(name=options.source, rows=len(rows), content_sha256=content_sha256(rows)))

    def check_loaded(self, loaded, options):
        if len(loaded.data.dataset) < 2 * options.clusters:
            raise InvalidParameterError(f"{len(loaded.data.dataset)} rows are too few for {options.clusters} clusters")

    def signal(self, loaded, options, context):
        """k-means over the rows in their content order (the row order rule): the same rows in any order get the
        same clusters."""
        from split_builders.splitters.partition import CONTENT, content_order, source_content_keys

        rows = loaded.data.dataset
        if options.row_order != CONTENT:
            return Signal(cluster_ids(rows, options.text_fields, options.clusters, options.seed),
                          {"kind": "TF-IDF k-means cluster", "clusters": options.clusters,
                           "text_fields": list(options.text_fields)})
        keys = source_content_keys(rows, options.text_fields, label_field=options.label_field)
        order = content_order(keys, options.seed)
        ids = np.empty(len(rows), dtype=np.int64)
        ids[order] = cluster_ids(rows.select(order), options.text_fields, options.clusters, options.seed)
        return Signal(ids,
                      {"kind": "TF-IDF k-means cluster", "clusters": options.clusters,
                       "text_fields": list(options.text_fields)})

    def configs(self, loaded, signal, options):
        from split_builders.splitters.partition import CONTENT, in_row_order, source_content_keys

        keys = None
        if options.row_order == CONTENT:
            keys = source_content_keys(loaded.data.dataset, options.text_fields, label_field=options.label_field)
        return in_row_order(cluster_configs, keys, options.seed, per_row=dict(clusters=signal.values),
                            test_clusters=options.test_clusters, validation_size=options.validation_size,
                            random_state=options.seed)

    def rows(self, loaded, signal, configs):
        from loading_scripts.labels import release_rows

        released = release_rows(loaded.data.dataset, label_field=loaded.data.label_field)
        return released.add_column("cluster", signal.values.tolist())

    def fields(self, loaded, signal, options):
        from loading_scripts.labels import LABEL, label_names

        text = tuple(options.text_fields)
        if options.label_field is None:
            return Fields("text", text=text, query=text[-1])
        return Fields("classification", text=text, query=text[-1], label=LABEL,
                      label_names=label_names(loaded.data.dataset, options.label_field))

    def card(self, loaded, signal, configs, options):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        held = configs[0]
        figure = Figure("figures/held_out_clusters.png", "clusters per split", [Panel("cluster", {
            s: signal.values[held.indices[s]] for s in held.splits}, kind="discrete")])
        return CardSpec(title="Held-out clusters", intro="Whole TF-IDF k-means clusters are held out.",
                        how_built=["TF-IDF vectors of the text fields, k-means clusters, whole clusters held out."],
                        configs=[Section("`held_out_clusters`", "Whole clusters are the test split.", [figure]),
                                 Section("`iid`", "A random split of the same sizes.", [])])

    def rederive(self, released, record):
        """The released rows in source order, their cluster ids through the same config builder."""
        rows = released.all_rows()
        rows = rows.take(np.argsort(rows.column("source_id").to_numpy(), kind="stable"))
        from split_builders.splitters.partition import CONTENT, content_keys, in_row_order, recorded_row_order

        held = record["configs"]["held_out_clusters"]["parameters"]
        keys = None
        if recorded_row_order(record.get("parameters")) == CONTENT:
            fields = record.get("fields") or {}
            keys = content_keys(rows, fields.get("text") or (), label="label" if "label" in rows.column_names else None,
                                label_names=fields.get("label_names") or ())
        configs = in_row_order(cluster_configs, keys, held["random_state"], per_row=dict(clusters=rows.column(
            "cluster").to_numpy()), **held)
        for config in configs:
            config.rows = rows
        return configs

    def config_statistics(self, parameters):
        return {"test_clusters": parameters["test_clusters"]} if "test_clusters" in parameters else {}

    def example_arguments(self, data, work):
        """The SNLI rows of the likelihood reference, clustered by premise and hypothesis."""
        snli = Path(data) / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv"
        return ["--source", str(snli), "--text-fields", "premise,hypothesis", "--label-field", "gold_label",
                "--clusters", "6", "--test-clusters", "2"]


@dataclass
class ClusterRows:
    """The loaded rows and the label field asked for."""

    dataset: datasets.Dataset
    label_field: str | None


def cluster_ids(rows, text_fields, clusters, seed) -> np.ndarray:
    """k-means (``clusters``, seeded) cluster of each row's TF-IDF vector of its text fields joined."""
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [" ".join("" if v is None else str(v) for v in values) for values in zip(*(rows[f] for f in text_fields))]
    vectors = TfidfVectorizer().fit_transform(texts)
    model = KMeans(n_clusters=clusters, n_init=3, random_state=seed).fit(vectors)
    return np.asarray(model.labels_, dtype=np.int64)


@pytest.fixture()
def cluster_source(tmp_path):
    """A small CSV of two topics' texts with a label: what the CLI, recipe and verify tests build from."""
    source = tmp_path / "data" / "topics.csv"
    source.parent.mkdir()
    topics = [["cat", "dog", "fur", "paw", "tail"], ["tax", "bank", "loan", "rate", "debt"],
              ["rain", "wind", "snow", "storm", "cloud"], ["goal", "team", "ball", "score", "match"]]
    rng = np.random.default_rng(0)
    lines = [f"{' '.join(rng.choice(topics[i % 4], size=4))} {i},{i % 2}\n" for i in range(120)]
    source.write_text("text,label\n" + "".join(lines))
    return source


def _front_matter(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _ids(folder, config="held_out_clusters"):
    meta = _front_matter(folder)
    files = {f["split"]: folder / f["path"] for c in meta["configs"] if c["config_name"] == config
             for f in c["data_files"]}
    return {split: set(pq.read_table(path).column("source_id").to_pylist()) for split, path in files.items()}


def test_a_sixth_method_builds_verifies_and_diffs_through_the_spine(cluster_source, tmp_path, hf_cache, capsys):
    from split_builders.publishing.diff import diff
    from conftest import verify_rescore
    from split_builders.release.recipe import file_sha256

    # 1. the CLI generated from the registry
    cli_out = tmp_path / "cli"
    assert main(["cluster", "--source", str(cluster_source), "--label-field", "label", "--clusters", "4",
                 "--test-clusters", "1", "--out", str(cli_out), "--seed", "1", "--no-progress"]) == 0
    loaded = datasets.load_dataset(str(cli_out), "held_out_clusters", cache_dir=hf_cache)
    clusters = {s: set(loaded[s]["cluster"]) for s in loaded}
    assert len(clusters["test"]) == 1 and not clusters["test"] & (clusters["train"] | clusters["validation"])
    iid = datasets.load_dataset(str(cli_out), "iid", cache_dir=hf_cache)
    assert {s: len(iid[s]) for s in iid} == {s: len(loaded[s]) for s in loaded}  # the baseline: the same sizes
    card = (cli_out / "README.md").read_text()
    assert "Whole clusters are the test split." in card and (cli_out / "figures" / "held_out_clusters.png").is_file()

    # 2. a recipe
    recipe = tmp_path / "releases" / "topics.yaml"
    recipe.parent.mkdir()
    recipe.write_text(yaml.safe_dump({
        "repo": "{org}/topics", "method": "cluster", "seed": 2,
        "options": {"label_field": "label", "clusters": 4, "test_clusters": 2},
        "source": {"files": [{"path": "topics.csv", "sha256": file_sha256(cluster_source)}],
                   "local": [str(cluster_source)]},
        "license": "mit", "citation": {"method": "@misc{clusters}", "source": "@misc{topics}"}}))
    recipe_out = tmp_path / "recipe"
    capsys.readouterr()
    assert main(["release", str(recipe), "--out", str(recipe_out), "--no-progress", "--no-load-check"]) == 0
    assert "OK" in capsys.readouterr().out
    meta = _front_matter(recipe_out)["resplit"]
    assert meta["method"] == "cluster" and meta["seed"] == 2 and meta["parameters"]["test_clusters"] == 2

    # 3. verify: level 1 (files), 2 (re-derived from the rows) and 3 (the signal column recomputed)
    report = verify_rescore(cli_out, source=str(cluster_source))
    assert report.ok and not [f for f in report.findings if f.status == "not checked"]
    assert {f.level for f in report.findings} == {1, 2, 3}
    assert any(f.level == 3 and f.config == "signal `cluster`" for f in report.findings)

    # 4. diff: moves equal an independent comparison, and the method's own statistics are compared
    result = diff(str(cli_out), str(recipe_out))
    entry = result["configs"]["held_out_clusters"]
    before, after = _ids(cli_out), _ids(recipe_out)
    moved = sum(len(before[a] & after[b]) for a in before for b in after if a != b)
    assert entry["moved"] == moved > 0 and entry["status"] == "changed"
    assert entry["statistics"]["test_clusters"] == [1, 2]
    assert result["provenance"]["seed"] == [1, 2]


def test_diff_compares_a_categorical_signal_as_categories_not_by_a_ks_statistic(cluster_source, tmp_path):
    """A cluster id is a category: ``diff`` reports no Kolmogorov-Smirnov statistic of the ids, and still
    compares the signal's train / test distributions (as categories). Needs diff to read the declared kind."""
    from split_builders.publishing.diff import diff

    outs = []
    for seed, held in ((1, 1), (2, 2)):
        out = tmp_path / f"seed{seed}"
        assert main(["cluster", "--source", str(cluster_source), "--label-field", "label", "--clusters", "4",
                     "--test-clusters", str(held), "--seed", str(seed), "--out", str(out), "--no-progress"]) == 0
        outs.append(out)
    # iid: train and test share clusters, in proportions that differ between the two seeds (held_out_clusters'
    # train and test share none, so any distance between them is the same maximum in both)
    statistics = diff(str(outs[0]), str(outs[1]))["configs"]["iid"]["statistics"]
    assert not [name for name in statistics if name.startswith("ks_") and "cluster" in name], statistics
    assert [name for name in statistics if "cluster" in name], statistics


def test_a_row_moved_in_the_sixth_methods_release_is_named(family_releases, tmp_path, capsys):
    import shutil

    from test_verify_diff import _move_a_row

    copy = tmp_path / "copy"
    shutil.copytree(family_releases["cluster"], copy)
    moved = _move_a_row(copy, "held_out_clusters", "test", "train")
    capsys.readouterr()
    assert main(["verify", str(copy), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "level 2  held_out_clusters/test" in printed and f"source_id {moved}" in printed


def test_the_sixth_method_is_registered_for_the_session_and_declares_what_shared_code_reads():
    """The contract, label, metadata and bad-input tests parametrize over ``registry()``: the sixth
    method is in it (registered by conftest), with its declarations read from the class."""
    import test_bad_input
    import test_registered_methods

    method = registry()["cluster"]
    assert isinstance(method, ClusterMethod)
    assert method.signal_columns == {"cluster": "categorical"} and method.baseline_config == "iid"
    assert not method.supports_groups
    for module in (test_registered_methods, test_bad_input):  # the label and metadata checks: split_builders.testing
        assert "cluster" in module.FAMILIES, module.__name__


def test_the_sixth_methods_release_records_its_declarations(family_releases):
    fields = _front_matter(family_releases["cluster"])["resplit"]["fields"]
    assert fields["signals"] == {"cluster": "categorical"} and fields["baseline"] == "iid"
    assert fields["label"] == "label" and fields["text"] == ["premise", "hypothesis"]


def test_the_card_reads_a_categorical_signal_as_categories_not_as_a_mean(family_releases):
    """Built with random splits: the diagnostics section is there, and it never averages cluster ids."""
    card = (family_releases["cluster"] / "README.md").read_text(encoding="utf-8")
    assert "## Diagnostics against random splits" in card
    assert "mean `cluster`" not in card and "mean cluster" not in card


def test_the_probe_compares_with_the_declared_baseline_config(family_releases, capsys):
    """The relative error increase is measured against ``iid`` (the declared baseline), not against a config
    that happens to be called ``random``."""
    import json

    capsys.readouterr()
    assert main(["probe", str(family_releases["cluster"]), "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reference"] == "iid"
    test = report["configs"]["held_out_clusters"]["test"]
    assert test["relative_error_increase"] is not None


def test_group_field_is_offered_only_by_methods_that_keep_groups_whole(capsys):
    for name, method in registry().items():
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        offered = "--group-field" in capsys.readouterr().out
        assert offered == bool(method.supports_groups), name
    assert not registry()["cluster"].supports_groups and registry()["likelihood"].supports_groups


# -- the registry ----------------------------------------------------------------------------------


def test_registering_a_second_method_of_a_registered_name_fails():
    class Impostor(ClusterMethod):
        name = "likelihood"

    before = registry()["likelihood"]
    with pytest.raises(InvalidParameterError, match="'likelihood' is already registered"):
        register(Impostor)
    assert registry()["likelihood"] is before


def test_register_refuses_what_is_not_a_split_method():
    class NotAMethod:
        name = "nothing"

    class NoName(ClusterMethod):
        name = ""

    class BadOptions(ClusterMethod):
        name = "bad-options"
        Options = dict

    for thing, message in ((NotAMethod, "not a split method"), (NoName, "has no name"),
                           (BadOptions, "Options must be a dataclass derived from CommonOptions")):
        with pytest.raises(InvalidParameterError, match=message):
            register(thing)
    assert not {"nothing", "bad-options"} & set(registry())


def test_the_builtin_methods_are_listed_once_and_registered_in_that_order():
    assert list(registry())[:len(BUILTIN)] == list(BUILTIN)
    for name, target in BUILTIN.items():
        module = target.partition(":")[0]
        source = inspect.getsource(importlib.import_module(module))
        calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", getattr(n.func, "attr", None)) == "register"]
        assert not calls, f"{module} registers itself; the table in split_builders/methods/__init__.py does"


# -- one layout for every method module ------------------------------------------------------------


@pytest.mark.parametrize("name", list(BUILTIN))
def test_a_method_module_is_in_the_methods_package_and_laid_out_options_method_helpers(name):
    method = registry()[name]
    module = importlib.import_module(type(method).__module__)
    assert module.__name__ == BUILTIN[name].partition(":")[0] and module.__name__.startswith("split_builders.methods.")
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
