"""CURRICULUM's evaluation procedure: the inoculation configs (``<phenomenon>_inoc_<n>``) on the released
zips, and ``resplit curriculum-report`` (zero-shot Matthews correlations, inoculation curves, the 2x2
generalisation matrices) against scikit-learn."""

import hashlib
import json
import shutil
import zipfile

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from sklearn.metrics import matthews_corrcoef

from loading_scripts.curriculum import read_curriculum
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.evaluation.curriculum_report import curriculum_report
from split_builders.splitters.inoculation import SIZES, InoculationSplitter, inoculation_configs

PHENOMENA = ["verbnet", "boolean", "monotonicity_infer"]  # 2-way, 3-way, labels that differ train / validation


@pytest.fixture(scope="module")
def curriculum(shared):
    return shared / "data" / "curriculum"


@pytest.fixture(scope="module")
def phenomena(curriculum):
    return {p.name: p for p in read_curriculum(curriculum, phenomena=PHENOMENA)}


def _labels_and_splits(p):
    labels = np.asarray(p.label_set, dtype=object)[np.asarray(p.rows["label"])]
    released = np.array(["train"] * p.split_sizes["train"] + ["validation"] * p.split_sizes["validation"], dtype=object)
    return labels, released


def _card(folder):
    return yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])


# ---------------------------------------------------------------------------------------------
# The subsets
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PHENOMENA)
def test_subsets_are_nested_label_balanced_from_train_only_with_the_released_validation(phenomena, name):
    p = phenomena[name]
    labels, released = _labels_and_splits(p)
    n_train = p.split_sizes["train"]
    available = {label: int((labels[:n_train] == label).sum()) for label in p.label_set}
    configs = inoculation_configs(labels, released, sizes=SIZES, random_state=42, prefix=f"{name}_")
    assert [c.name for c in configs] == [f"{name}_inoc_{n}" for n in SIZES]
    previous = set()
    for size, config in zip(SIZES, configs):
        train = np.asarray(config.indices["train"])
        assert train.max() < n_train  # drawn only from the released train split
        counts = {label: int((labels[train] == label).sum()) for label in p.label_set}
        assert counts == {label: min(size, available[label]) for label in p.label_set}
        assert previous <= set(train.tolist())  # nested: the smaller subset is inside this one
        previous = set(train.tolist())
        assert np.array_equal(config.indices["validation"], np.arange(n_train, len(p.rows)))  # as released
        assert set(config.indices) == {"train", "validation"}
    if name == "monotonicity_infer":  # per 2-way label, after its train labels were mapped
        assert configs[-1].parameters["per_label"] == {"entailed": [1000, 17869], "not-entailed": [1000, 18022]}
    if name == "verbnet":  # fewer rows than 1,000 per label: all of them
        assert configs[-1].parameters["per_label"] == {"entailed": [834, 834], "not-entailed": [564, 564]}
        assert sorted(configs[-1].indices["train"]) == list(range(n_train))


def test_same_seed_same_subsets_another_seed_other_subsets(phenomena):
    labels, released = _labels_and_splits(phenomena["boolean"])
    draw = lambda seed: InoculationSplitter(size=50, random_state=seed).split(labels=labels, released=released).train
    assert np.array_equal(draw(42), draw(42))
    assert not np.array_equal(draw(42), draw(43))
    assert len(draw(42)) == len(draw(43)) == 150


@pytest.mark.parametrize("name", ["boolean", "monotonicity_infer"])
def test_subsets_are_curriculum_released_few_shot_sampler(curriculum, phenomena, name):
    """CURRICULUM's ``get_k_shot_data_multi`` (few_shot_bo.py): ``np.random.seed(seed)``, shuffle the
    train lines, then the first k lines of each gold label, here on the raw train.jsonl lines."""
    with zipfile.ZipFile(curriculum / "tasks" / f"{name}.zip") as archive:
        member = next(m for m in archive.namelist() if m.endswith("/train.jsonl") and not m.startswith("__MACOSX"))
        lines = [dict(json.loads(line), position=i) for i, line in enumerate(archive.read(member).splitlines())
                 if line.strip()]
    np.random.RandomState(42).shuffle(lines)  # what np.random.seed(42); np.random.shuffle(lines) does
    labels, released = _labels_and_splits(phenomena[name])
    for k in (10, 500):
        by_label = {}
        for line in lines:
            by_label.setdefault(line["gold_label"], []).append(line["position"])  # raw labels (entailment/neutral)
        expected = sorted(position for positions in by_label.values() for position in positions[:k])
        assert InoculationSplitter(size=k, random_state=42).split(labels=labels, released=released).train.tolist() == expected


@pytest.mark.parametrize("kwargs, released, message", [
    ({"size": 0}, None, "size must be a positive integer"),
    ({"random_state": None}, None, "random_state must be"),
    ({}, ["train", "dev"], "released split names must be"),
    ({}, ["validation", "validation"], "no row is released as train"),
    ({}, ["train", "train"], "needs an evaluation split"),
])
def test_splitter_refuses_bad_parameters_and_rows(kwargs, released, message):
    with pytest.raises(InvalidParameterError, match=message):
        InoculationSplitter(**kwargs).split(labels=["a", "b"], released=released or ["train", "validation"])


# ---------------------------------------------------------------------------------------------
# Through the CLI, the card, verify and the recipe
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def release(curriculum, tmp_path_factory):
    out = tmp_path_factory.mktemp("inoculation") / "cur"
    assert main(["curriculum", "--source", str(curriculum), "--phenomena", "verbnet,boolean", "--out", str(out),
                 "--no-progress"]) == 0
    return out


def test_cli_builds_inoculation_configs_with_train_and_the_released_validation(release, hf_cache):
    metadata = _card(release)
    names = [c["config_name"] for c in metadata["configs"]]
    for phenomenon in ("verbnet", "boolean"):
        inoculation = [n for n in names if n.startswith(f"{phenomenon}_inoc_")]
        assert inoculation == [f"{phenomenon}_inoc_{n}" for n in SIZES]
        recorded = metadata["resplit"]["configs"]
        for name in inoculation:
            assert [f["split"] for c in metadata["configs"] if c["config_name"] == name
                    for f in c["data_files"]] == ["train", "validation"]
            # the evaluation split is the phenomenon's released validation split, byte for byte
            assert recorded[name]["sha256"]["validation"] == recorded[phenomenon]["sha256"]["validation"]
    loaded = datasets.load_dataset(str(release), "boolean_inoc_10", cache_dir=hf_cache)
    phenomenon = datasets.load_dataset(str(release), "boolean", cache_dir=hf_cache)
    assert len(loaded["train"]) == 30 and sorted(loaded["train"]["label"]) == [0] * 10 + [1] * 10 + [2] * 10
    assert set(loaded["train"]["source_id"]) <= set(phenomenon["train"]["source_id"])
    assert loaded["validation"]["source_id"] == phenomenon["validation"]["source_id"]
    body = (release / "README.md").read_text()
    assert "The evaluation procedure and its configs" in body and "CURRICULUM's released few-shot sampler" in body
    # boolean's neutral (872) and entailment (942) train rows are fewer than 1,000: all of them, and the card says so
    section = body.split("### Inoculation configs", 1)[1]
    line = next(line for line in section.splitlines() if line.startswith("| `boolean_inoc_1000`"))
    assert "entailment 942/942 (all)" in line and "neutral 872/872 (all)" in line and "contradiction 1000," in line


def test_verify_level_2_rederives_every_inoculation_config(release, tmp_path):
    from split_builders.publishing.verify import verify
    from test_verify_diff import _card as read_card, _write_card

    report = verify(str(release), load=False)
    checked = {(f.config, f.split) for f in report.findings if f.level == 2 and f.status == "identical"}
    assert report.ok
    assert {(f"{p}_inoc_{n}", s) for p in ("verbnet", "boolean") for n in SIZES for s in ("train", "validation")} <= checked
    # One training row swapped for another row of the same label: the counts still match, level 2 does not.
    copy = tmp_path / "tampered"
    shutil.copytree(release, copy)
    meta, body = read_card(copy)
    files = {c["config_name"]: {f["split"]: copy / f["path"] for f in c["data_files"]} for c in meta["configs"]}
    subset, full = pq.read_table(files["verbnet_inoc_10"]["train"]), pq.read_table(files["verbnet"]["train"])
    taken = set(subset.column("source_id").to_pylist())
    label = subset.column("label")[0].as_py()
    other = next(i for i, (s, y) in enumerate(zip(full.column("source_id").to_pylist(), full.column("label").to_pylist()))
                 if s not in taken and y == label)
    pq.write_table(pa.concat_tables([full.slice(other, 1), subset.slice(1)]), files["verbnet_inoc_10"]["train"])
    meta["resplit"]["configs"]["verbnet_inoc_10"]["sha256"]["train"] = hashlib.sha256(
        files["verbnet_inoc_10"]["train"].read_bytes()).hexdigest()
    _write_card(copy, meta, body)
    from split_builders.publishing.readers import write_readers

    write_readers(copy)  # its tasks (which pin every data file's sha256) and croissant.json (which lists them)
    tampered = verify(str(copy), load=False)
    assert not tampered.ok
    assert [(f.level, f.config, f.split) for f in tampered.findings if f.status == "differs"] == [
        (2, "verbnet_inoc_10", "train")]


def test_options_turn_them_off_and_choose_sizes(curriculum, tmp_path, capsys):
    off = tmp_path / "off"
    assert main(["curriculum", "--source", str(curriculum), "--phenomena", "verbnet", "--no-inoculation",
                 "--no-hypothesis-only", "--out", str(off), "--no-progress"]) == 0
    assert [c["config_name"] for c in _card(off)["configs"]] == ["verbnet"]
    sized = tmp_path / "sized"
    assert main(["curriculum", "--source", str(curriculum), "--phenomena", "verbnet", "--inoculation-sizes", "20,5",
                 "--no-hypothesis-only", "--out", str(sized), "--no-progress"]) == 0
    assert [c["config_name"] for c in _card(sized)["configs"]] == ["verbnet", "verbnet_inoc_5", "verbnet_inoc_20"]
    assert _card(sized)["resplit"]["parameters"]["inoculation_sizes"] == [5, 20]
    capsys.readouterr()
    for sizes, message in (("0", "inoculation_sizes must be a positive integer, got 0"),
                           ("10,ten", "'ten'"), ("10,10", "names 10 more than once")):
        assert main(["curriculum", "--source", str(curriculum), "--phenomena", "verbnet", "--inoculation-sizes", sizes,
                     "--out", str(tmp_path / "bad")]) == 2
        error = capsys.readouterr().err
        assert message in error and "inoculation_sizes" in error
        assert len(error.strip().splitlines()) == 1 and "Traceback" not in error
    assert not (tmp_path / "bad").exists()


def test_recipe_keys_build_and_verify_them(tmp_path, capsys):
    out = tmp_path / "recipe"
    assert main(["release", "curriculum", "--limit", "90", "--set", "phenomena=[boolean]", "--set", "pvi=false",
                 "--set", "inoculation_sizes=[5, 30]", "--out", str(out), "--no-progress", "--no-load-check"]) == 0
    names = [c["config_name"] for c in _card(out)["configs"]]
    assert names == ["boolean", "boolean_hypothesis_only", "boolean_inoc_5", "boolean_inoc_30"]
    recorded = _card(out)["resplit"]["configs"]
    for size in (5, 30):
        per_label = recorded[f"boolean_inoc_{size}"]["parameters"]["per_label"]
        assert sum(available for _, available in per_label.values()) == 90
        assert all(drawn == min(size, available) for drawn, available in per_label.values())
        assert recorded[f"boolean_inoc_{size}"]["rows"] == {"train": sum(d for d, _ in per_label.values()),
                                                            "validation": 90}
    assert any(available < 30 for _, available in per_label.values())  # a label short of 30 gives all its rows
    assert "-> OK" in capsys.readouterr().out  # the release command verified it (level 2 included)


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


def _rows(config, labels, predictions, **extra):
    return [{"config": config, "label": y, "prediction": p, **extra} for y, p in zip(labels, predictions)]


def _accuracy_rows(config, correct, total, split=None):
    labels = ["entailed"] * total
    predictions = ["entailed"] * correct + ["not-entailed"] * (total - correct)
    return _rows(config, labels, predictions, **({"split": split} if split else {}))


def test_matrix_is_filled_from_the_right_configs_and_names_its_cells():
    rows = (_accuracy_rows("verbnet_simple", 9, 10) + _accuracy_rows("verbnet_simple_to_hard", 6, 10, "test")
            + _accuracy_rows("verbnet_hard_to_simple", 7, 10) + _accuracy_rows("verbnet_hard", 5, 10)
            # a simple_to_hard validation split (the simple rows): not a cell while verbnet_simple is there
            + _accuracy_rows("verbnet_simple_to_hard", 1, 10, "validation"))
    report = curriculum_report(rows)
    (matrix,) = report.generalisation()
    cells = {(c["train"], c["test"]): (c["config"], c["split"], c["accuracy"]) for c in matrix["cells"]}
    assert cells == {("simple", "simple"): ("verbnet_simple", "validation", 0.9),
                     ("simple", "hard"): ("verbnet_simple_to_hard", "test", 0.6),
                     ("hard", "simple"): ("verbnet_hard_to_simple", "test", 0.7),
                     ("hard", "hard"): ("verbnet_hard", "validation", 0.5)}
    lines = report.lines()
    header = next(i for i, line in enumerate(lines) if line.startswith(" ") and "tested on simple" in line)
    assert lines[header].index("tested on simple") < lines[header].index("tested on hard")
    simple_row, hard_row = lines[header + 1], lines[header + 2]
    assert simple_row.startswith("trained on simple") and hard_row.startswith("trained on hard")
    column = lines[header].index("tested on hard")
    assert simple_row[:column].rstrip().endswith("0.900 (verbnet_simple/validation)")
    assert simple_row[column:] == "0.600 (verbnet_simple_to_hard/test)"
    assert hard_row[:column].rstrip().endswith("0.700 (verbnet_hard_to_simple/test)")
    assert hard_row[column:] == "0.500 (verbnet_hard/validation)"
    # Without verbnet_simple, its rows' other home (simple_to_hard's validation split) fills the cell.
    report = curriculum_report(rows[10:])
    (cell,) = [c for c in report.generalisation()[0]["cells"] if (c["train"], c["test"]) == ("simple", "simple")]
    assert (cell["config"], cell["split"], cell["accuracy"]) == ("verbnet_simple_to_hard", "validation", 0.1)


def test_matthews_correlations_equal_scikit_learns_on_random_predictions():
    rng = np.random.default_rng(0)
    expected, rows = {}, []
    for phenomenon, names, n in (("verbnet", ("entailed", "not-entailed"), 160), ("ner", ("entailed", "not-entailed"), 93),
                                 ("boolean", ("entailment", "neutral", "contradiction"), 211), ("counting", None, 57)):
        labels = rng.integers(0, 3 if names is None else len(names), size=n)
        predictions = np.where(rng.random(n) < 0.6, labels, rng.integers(0, 3 if names is None else len(names), size=n))
        expected[phenomenon] = matthews_corrcoef(labels, predictions)
        if names is not None:  # names and class ids are both read
            labels, predictions = np.asarray(names)[labels], np.asarray(names)[predictions]
        rows += _rows(phenomenon, labels.tolist(), predictions.tolist())
    report = curriculum_report(rows)
    table = {row["phenomenon"]: row["mcc"]["model"] for row in report.zero_shot()}
    assert table == pytest.approx(expected, abs=1e-12) and set(table) == set(expected)
    categories = {row["category"]: row["mcc"]["model"] for row in report.categories()}
    assert categories["lexical"] == pytest.approx(expected["ner"])
    assert categories["logical"] == pytest.approx((expected["boolean"] + expected["counting"]) / 2)
    assert categories["all"] == pytest.approx(np.mean(list(expected.values())))


@pytest.mark.filterwarnings("ignore:A single label was found")  # scikit-learn's own call, the reference
@pytest.mark.parametrize("labels, predictions, note", [
    (["entailed", "not-entailed"] * 20, ["entailed"] * 40, "every prediction is 'entailed'"),
    (["entailed"] * 15, ["entailed"] * 15, "all one class"),
    ([0, 1, 0, 1], [0, 1, 0, 1], None),
    ([0, 1, 0, 1], [1, 0, 1, 0], None),
])
def test_edge_cases_equal_scikit_learn_and_are_explained(labels, predictions, note):
    report = curriculum_report({"verbnet": {"predictions": predictions, "labels": labels}})
    (score,) = report.scores
    assert score.mcc == matthews_corrcoef(labels, predictions)
    assert score.accuracy == np.mean(np.asarray(labels) == np.asarray(predictions))
    assert (note is None) == (not report.notes) and (note is None or note in report.notes[0])


def test_monotonicity_labels_are_folded_and_explained():
    rng = np.random.default_rng(3)
    gold = rng.choice(["entailed", "not-entailed"], size=200)
    three_way = rng.choice(["entailment", "neutral", "contradiction"], size=200)  # an NLI model's predictions
    report = curriculum_report(_rows("monotonicity_infer", gold.tolist(), three_way.tolist())
                               + _rows("monotonicity_infer_inoc_10", ["entailment", "neutral"], ["neutral", "neutral"]))
    folded = np.where(three_way == "entailment", "entailed", "not-entailed")
    assert report.zero_shot()[0]["mcc"]["model"] == pytest.approx(matthews_corrcoef(gold, folded), abs=1e-12)
    assert report.score("model", "monotonicity_infer_inoc_10", "validation").accuracy == 0.5
    (note,) = [n for n in report.notes if n.startswith("monotonicity_infer")]
    assert "train split is labelled entailment/neutral" in note and "validation split entailed/not-entailed" in note
    assert "2 gold label(s) and 202 prediction(s) folded" in note


def _write_csv(path, rows, *, bom=False):
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode())
    return path


def test_cli_reads_a_bom_file_like_a_plain_one_and_prints_json_and_a_stable_figure(tmp_path, capsys):
    rng = np.random.default_rng(1)
    labels = rng.choice(["entailed", "not-entailed"], size=80).tolist()
    rows = _rows("verbnet", labels, rng.choice(["entailed", "not-entailed"], size=80).tolist())
    rows += _accuracy_rows("verbnet_simple", 8, 10) + _accuracy_rows("verbnet_inoc_50", 3, 4)
    plain, bom = _write_csv(tmp_path / "plain.csv", rows), _write_csv(tmp_path / "bom" / "plain.csv", rows, bom=True)
    outputs = []
    for path in (plain, bom):
        assert main(["curriculum-report", "--predictions", str(path), "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0] == outputs[1] and outputs[0]["models"] == ["plain"]
    assert outputs[0]["zero_shot"][0]["mcc"]["plain"] == pytest.approx(
        matthews_corrcoef(labels, [r["prediction"] for r in rows[:80]]), abs=1e-12)
    assert outputs[0]["inoculation"] == [{"model": "plain", "phenomenon": "verbnet", "accuracy": {"50": 0.75}}]
    figures = [tmp_path / "a.png", tmp_path / "b" / "b.png"]
    for figure in figures:
        assert main(["curriculum-report", "--predictions", str(plain), "--figure", str(figure)]) == 0
    assert "Zero-shot diagnostic" in capsys.readouterr().out
    assert figures[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figures[0].read_bytes() == figures[1].read_bytes()


@pytest.mark.parametrize("content, message", [
    ("\ufeffconfig,prediction\nverbnet,entailed\n", "has no 'label' column; columns: 'config', 'prediction'"),
    ("\ufeffconfig,prediction,label\natomic,entailed,entailed\n", "line 2: unknown phenomenon 'atomic'"),
    ("config,prediction,label\nverbnet_simple,entailed,entailed\nverbnet_harder,entailed,entailed\n",
     "line 3: unknown phenomenon 'verbnet_harder'"),
    ("config,prediction,label\nverbnet,entailed,entailed\nverbnet,1,entailed\n", "mixes label names and class ids"),
    ("config,prediction,label,split\nverbnet,entailed,entailed,test\n", "evaluated on its validation split, not 'test'"),
    ("config,prediction,label\nboolean,entailed,entailment\n", "a 3-way phenomenon cannot take 2-way names"),
    ("config,prediction,label\nverbnet,,entailed\n", "line 2: no prediction"),
    (None, "does not exist"),
])
def test_bad_predictions_are_one_line_errors(tmp_path, capsys, content, message):
    path = tmp_path / "predictions.csv"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["curriculum-report", "--predictions", str(path)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    assert captured.out == ""


def test_several_files_compare_models(tmp_path, capsys):
    good = _write_csv(tmp_path / "good.csv", _accuracy_rows("verbnet", 9, 10))
    bad = _write_csv(tmp_path / "bad.csv", _accuracy_rows("verbnet", 2, 10))
    assert main(["curriculum-report", "--predictions", str(good), "--predictions", str(bad), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["models"] == ["good", "bad"]
    assert result["zero_shot"][0]["accuracy"] == {"good": 0.9, "bad": 0.2}
