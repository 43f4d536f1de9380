"""The CURRICULUM reader on the released zips, and `resplit curriculum` (the acceptance contract)."""

import json
import shutil

import datasets
import pytest
import yaml

from loading_scripts.curriculum import find_zips, read_curriculum, read_phenomenon, read_tasks_json
from split_builders.cli import main


@pytest.fixture(scope="module")
def curriculum(shared):
    return shared / "data" / "curriculum"


@pytest.fixture(scope="module")
def tasks(curriculum):
    return json.loads((curriculum / "tasks.json").read_text())


def _card_yaml(folder):
    return yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])


def test_monotonicity_labels_are_normalised_to_two_way(curriculum, tasks):
    p = read_phenomenon(curriculum / "tasks" / "monotonicity_infer.zip", info=tasks["monotonicity_infer"])
    assert p.label_set == ("entailed", "not-entailed")
    assert p.rows.features["label"].names == ["entailed", "not-entailed"]
    original = tasks["monotonicity_infer"]["train_labels"]  # entailment / neutral in the release
    assert p.report["original_labels"]["train"] == original
    train = p.rows.select(range(p.split_sizes["train"]))
    counts = {name: train["label"].count(i) for i, name in enumerate(p.label_set)}
    assert counts == {"entailed": original["entailment"], "not-entailed": original["neutral"]}
    assert p.report["labels_normalised"] == p.split_sizes["train"]


def test_label_sets_are_inferred_without_tasks_json(curriculum, tasks, tmp_path):
    for name in ("monotonicity_infer", "boolean", "verbnet"):
        shutil.copy(curriculum / "tasks" / f"{name}.zip", tmp_path)
    assert read_tasks_json(tmp_path) == {}
    for p in read_curriculum(tmp_path):
        assert list(p.label_set) == tasks[p.name]["label_set"]
        assert p.category == tasks[p.name]["category"]  # from the built-in catalogue
        assert p.split_sizes == {"train": tasks[p.name]["train_size"], "validation": tasks[p.name]["val_size"]}


def test_tasks_json_is_found_from_either_folder(curriculum):
    assert read_tasks_json(curriculum) == read_tasks_json(curriculum / "tasks") != {}
    assert find_zips(curriculum) == find_zips(curriculum / "tasks")
    assert len(find_zips(curriculum)) == 36


@pytest.mark.parametrize("name, key, value", [
    ("transitive", "train_validation_duplicate_pairs", 5919),   # MANIFEST's known quirks
    ("coreference", "train_validation_duplicate_pairs", 3990),
])
def test_leakage_report_counts_train_validation_overlap(curriculum, name, key, value):
    assert read_phenomenon(curriculum / "tasks" / f"{name}.zip").report[key] == value


def test_leakage_report_counts_empty_fields(curriculum):
    hyponymy = read_phenomenon(curriculum / "tasks" / "hyponymy.zip").report
    logiqa = read_phenomenon(curriculum / "tasks" / "logiqa.zip").report
    assert hyponymy["train_empty_premise"] + hyponymy["validation_empty_premise"] > 0
    assert logiqa["train_empty_hypothesis"] + logiqa["validation_empty_hypothesis"] > 0


EVERY_LIMIT = 200  # rows of each phenomenon's train and validation in the build of all 36 (the shapes)
FULL = ("monotonicity_infer", "boolean", "transitive")  # built whole: the sizes, label counts and leakage of tasks.json


@pytest.fixture(scope="module")
def every_release(curriculum, tmp_path_factory):
    """All 36 phenomena, the first rows of each (what the configs, splits and features are does not depend on how
    many rows there are; the inoculation configs are tested in test_curriculum_inoculation.py)."""
    out = tmp_path_factory.mktemp("curriculum") / "every"
    assert main(["curriculum", "--data", str(curriculum / "tasks"), "--out", str(out), "--no-inoculation",
                 "--limit", str(EVERY_LIMIT), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def full_release(curriculum, tmp_path_factory):
    """Three phenomena whole, for the numbers tasks.json states of them."""
    out = tmp_path_factory.mktemp("curriculum") / "full"
    assert main(["curriculum", "--data", str(curriculum / "tasks"), "--out", str(out), "--no-inoculation",
                 "--phenomena", ",".join(FULL), "--no-progress"]) == 0
    return out


def test_every_phenomenon_and_its_hypothesis_only_variant_load(every_release, tasks, hf_cache):
    metadata = _card_yaml(every_release)
    names = [c["config_name"] for c in metadata["configs"]]
    assert len(names) == 72
    assert set(names) == set(tasks) | {f"{n}_hypothesis_only" for n in tasks}
    for config in metadata["configs"]:
        assert [f["split"] for f in config["data_files"]] == ["train", "validation"]
    for name in tasks:
        for config in (name, f"{name}_hypothesis_only"):
            entry = metadata["resplit"]["configs"][config]
            assert entry["rows"] == {"train": min(EVERY_LIMIT, tasks[name]["train_size"]),
                                     "validation": min(EVERY_LIMIT, tasks[name]["val_size"])}, config
    loaded = datasets.load_dataset(str(every_release), "analytic_hypothesis_only", cache_dir=hf_cache)
    assert list(loaded) == ["train", "validation"] and "premise" not in loaded["train"].column_names
    assert loaded["train"].features["label"].names == tasks["analytic"]["label_set"]


def test_whole_phenomena_load_with_the_sizes_and_labels_of_tasks_json(full_release, tasks, hf_cache):
    loaded = datasets.load_dataset(str(full_release), "monotonicity_infer", cache_dir=hf_cache)
    assert list(loaded) == ["train", "validation"]
    assert len(loaded["train"]) == tasks["monotonicity_infer"]["train_size"]
    assert loaded["validation"].features["label"].names == ["entailed", "not-entailed"]
    three_way = datasets.load_dataset(str(full_release), "boolean_hypothesis_only", cache_dir=hf_cache)
    assert "premise" not in three_way["train"].column_names
    assert three_way["train"].features["label"].names == ["entailment", "neutral", "contradiction"]
    counts = {name: three_way["validation"]["label"].count(i)
              for i, name in enumerate(three_way["validation"].features["label"].names)}
    assert counts == tasks["boolean"]["val_labels"]


def test_card_shows_category_abbreviation_and_leakage(full_release, tasks):
    body = (full_release / "README.md").read_text()
    table = body.split("\n## Phenomena\n", 1)[1]  # the per-phenomenon table (after the configs table)
    line = next(line for line in table.splitlines() if line.startswith("| `transitive`"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:3] == [tasks["transitive"]["category"], tasks["transitive"]["abbrev"]]
    assert cells[6] == "5919"
    assert "monotonicity_infer" in body and "entailment` -> `entailed`" in body


def test_build_is_byte_reproducible_on_a_small_subset(curriculum, tmp_path):
    outs = []
    for i in range(2):
        out = tmp_path / f"run{i}"
        assert main(["curriculum", "--data", str(curriculum), "--phenomena", "verbnet,entailment_tree",
                     "--out", str(out)]) == 0
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(outs[1]) for p in outs[1].rglob("*") if p.is_file())
    for relative in files:
        assert (outs[0] / relative).read_bytes() == (outs[1] / relative).read_bytes()


def test_pvi_difficulty_configs_per_phenomenon(curriculum, tmp_path, hf_cache):
    out = tmp_path / "cur"
    assert main(["curriculum", "--data", str(curriculum), "--phenomena", "verbnet", "--pvi", "--folds", "3",
                 "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 0
    metadata = _card_yaml(out)
    names = [c["config_name"] for c in metadata["configs"]]
    assert names == ["verbnet", "verbnet_hypothesis_only", *(f"verbnet_inoc_{n}" for n in (10, 50, 100, 500, 1000)),
                     "verbnet_simple", "verbnet_hard", "verbnet_simple_to_hard", "verbnet_hard_to_simple"]
    iv = metadata["resplit"]["signal"]["I_V"]["verbnet"]
    hard = datasets.load_dataset(str(out), "verbnet_simple_to_hard", split="test", cache_dir=hf_cache)
    simple = datasets.load_dataset(str(out), "verbnet_simple", cache_dir=hf_cache)
    assert hard.features["pvi"].dtype == "float64"
    assert set(hard["difficulty"]) == {"hard"}
    for label in (0, 1):  # the median rule works within each label
        simple_pvi = [v for s in simple for v, y in zip(simple[s]["pvi"], simple[s]["label"]) if y == label]
        hard_pvi = [v for v, y in zip(hard["pvi"], hard["label"]) if y == label]
        assert min(simple_pvi) >= max(hard_pvi)
        assert len(simple_pvi) - len(hard_pvi) in (0, 1)
    assert len(hard) + sum(len(simple[s]) for s in simple) == 1398 + 160
    assert f"{iv:.3f}" in (out / "README.md").read_text()


def test_bad_data_folder_and_unknown_phenomenon_are_one_line_errors(curriculum, tmp_path, capsys):
    assert main(["curriculum", "--data", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["curriculum", "--data", str(curriculum), "--phenomena", "atomic", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown phenomena ['atomic']" in err and "defeasible" in err
    assert main(["curriculum", "--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no <phenomenon>.zip files" in capsys.readouterr().err


def test_release_configs_with_own_rows_need_train_and_an_evaluation_split(tmp_path):
    from split_builders.errors import InvalidParameterError
    from split_builders.api import ConfigSplit
    from split_builders.release.writer import write_release

    rows = datasets.Dataset.from_dict({"source_id": [0, 1, 2], "text": ["a", "b", "c"]})
    with pytest.raises(InvalidParameterError, match="at least one non-empty validation or test"):
        write_release(tmp_path / "o", None, [ConfigSplit("x", {"train": [0, 1]}, "m", rows=rows)],
                      provenance={}, render_card=lambda *_: "")
    with pytest.raises(InvalidParameterError, match="has no rows of its own"):
        write_release(tmp_path / "o", None, [ConfigSplit("x", {"train": [0], "validation": [1]}, "m")],
                      provenance={}, render_card=lambda *_: "")
    assert not (tmp_path / "o").exists()


@pytest.fixture()
def zip_server(curriculum):
    """A local HTTP server serving the released zips (a stand-in for the original URL; no network)."""
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(curriculum / "tasks"))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_zips_by_url_are_downloaded_once_and_read_like_the_folder(curriculum, zip_server, tmp_path, monkeypatch):
    from loading_scripts.curriculum import download_zips

    monkeypatch.setenv("RESPLIT_CACHE", str(tmp_path / "cache"))
    names = ["verbnet", "entailment_tree"]
    online = read_curriculum(zip_server, phenomena=names)
    local = read_curriculum(curriculum, phenomena=names)
    for got, expected in zip(online, local):
        assert got.name == expected.name and got.label_set == expected.label_set
        assert got.rows.to_list() == expected.rows.to_list()
    cached = sorted((tmp_path / "cache" / "curriculum").rglob("*.zip"))
    assert [p.name for p in cached] == ["entailment_tree.zip", "verbnet.zip"]
    assert not list((tmp_path / "cache").rglob("*.part"))
    # Cached: a second call reads the files already there, even with the server unreachable.
    assert download_zips(zip_server, names) == cached[0].parent
    assert download_zips("http://127.0.0.1:9", names, cache_dir=cached[0].parent) == cached[0].parent


def test_a_failed_download_is_one_line_and_leaves_no_partial_file(tmp_path, zip_server, capsys, monkeypatch):
    monkeypatch.setenv("RESPLIT_CACHE", str(tmp_path / "cache"))
    code = main(["curriculum", "--data", zip_server, "--phenomena", "no_such_phenomenon", "--out", str(tmp_path / "o")])
    assert code == 2
    error = capsys.readouterr().err
    assert "cannot download" in error and "no_such_phenomenon.zip" in error and "Traceback" not in error
    assert not list((tmp_path / "cache").rglob("*.part")) and not list((tmp_path / "cache").rglob("*.zip"))
