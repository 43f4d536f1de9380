"""lm-evaluation-harness tasks of a release (``resplit export lm-eval``, :mod:`split_builders.publishing.export`),
run offline through the harness's own Python API on a tiny random causal LM."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import zipfile

import numpy as np
import pytest
import yaml

from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.publishing.export import export_lm_eval, write_lm_eval

pytest.importorskip("lm_eval", reason="lm-evaluation-harness is a test extra (pip install resplit[test])")

SENTIMENT = {"suite": "sentiment", "tests": [
    {"name": "positive words", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all",
     "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 2, "meta": None,
     "data": ["good", "great", "nice", "fine", "lovely", "superb"]},
    {"name": "negative words", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all",
     "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 0, "meta": None,
     "data": ["bad", "awful", "poor", "dull", "nasty", "grim"]},
    {"name": "typos", "type": "INV", "capability": "Robustness", "agg_fn": "all_except_first",
     "expectation": {"fn": "inv", "tolerance": 0.1}, "nested": True, "labels": None, "meta": None,
     "data": [["good film", "godo film"], ["bad film", "bda film"], ["ok film", "ko film"], ["fun", "fnu"]]},
]}


def _build(args):
    assert main([*args, "--no-progress"]) == 0


@pytest.fixture(scope="module")
def releases(shared, tmp_path_factory):
    """Small releases built under a deep temporary path: SNLI-sample likelihood (given random scores;
    ClassLabel), a CSV likelihood (string ``gold_label``), TMCD's GeoQuery ``length``, two CURRICULUM
    phenomena and a CheckList sentiment toy suite; each exported to ``<release>/lm_eval``."""
    root = tmp_path_factory.mktemp("lm-eval") / "a deep" / "place"
    root.mkdir(parents=True)
    data = shared / "data"
    np.save(root / "scores.npy", np.random.default_rng(0).normal(size=2000))
    _build(["likelihood", "--source", "snli-sample", "--scores", str(root / "scores.npy"), "--validation-size", "20",
            "--test-size", "20", "--out", str(root / "snli")])
    inputs = shared / "reference" / "likelihood" / "inputs" / "snli"
    _build(["likelihood", "--source", str(inputs / "all_examples.csv"), "--prompt-field", "premise", "--query-field",
            "hypothesis", "--label-field", "gold_label", "--scores", str(inputs / "all_examples__False_loglikelihoods.npy"),
            "--dev-size", "20", "--test-size", "20", "--out", str(root / "csv")])
    shutil.copy(data / "geoquery" / "geoquery_nqg.tsv", root / "geo.tsv")  # no published splits beside it
    _build(["tmcd", "--source", str(root / "geo.tsv"), "--train-size", "440", "--configs", "length",
            "--out", str(root / "geo")])
    _build(["curriculum", "--data", str(data / "curriculum"), "--phenomena", "verbnet,entailment_tree",
            "--no-inoculation", "--out", str(root / "cur")])
    (root / "sentiment_suite.json").write_text(json.dumps(SENTIMENT))
    _build(["behavioural", "--suite", str(root / "sentiment_suite.json"), "--out", str(root / "beh")])
    _older_release(root / "csv", root / "old")
    exported = {name: export_lm_eval(root / name) for name in ("snli", "csv", "old", "geo", "cur", "beh")}
    return root, exported


def _older_release(source, out, *, fields=True):
    """``source`` as releases built before the label policy were: the label as text in ``gold_label``
    (the parquet written without ``datasets`` features, no ``dataset_info``); ``fields`` False: no
    ``resplit.fields`` either."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    shutil.copytree(source, out, ignore=shutil.ignore_patterns("lm_eval"))
    _, yaml_text, body = (out / "README.md").read_text().split("---\n", 2)
    card = yaml.safe_load(yaml_text)
    names = card["resplit"]["fields"]["label_names"]
    for path in out.glob("*/*.parquet"):
        table = pq.read_table(path)
        text = pa.array(np.asarray(names, dtype=object)[table.column("label").to_numpy()].tolist(), pa.large_string())
        table = table.drop_columns(["label"]).append_column("gold_label", text).replace_schema_metadata(None)
        pq.write_table(table, path)
        config, split = path.parent.name, path.name.split("-")[0]
        card["resplit"]["configs"][config]["sha256"][split] = hashlib.sha256(path.read_bytes()).hexdigest()
    card.pop("dataset_info", None)
    card["resplit"]["source"]["name"] = f"{out.name}.csv"
    if fields:
        card["resplit"]["fields"]["label"] = "gold_label"
    else:
        del card["resplit"]["fields"]
    (out / "README.md").write_text("---\n" + yaml.safe_dump(card, sort_keys=False) + "---\n" + body)


def _card(folder):
    return yaml.safe_load((folder / "README.md").read_text().split("---\n", 2)[1])


def _configs(folder):
    return [c["config_name"] for c in _card(folder)["configs"]]


def _task_yaml(folder, config):
    return yaml.load((folder / "lm_eval" / f"{config}.yaml").read_text(), Loader=_AnyTag)


class _AnyTag(yaml.SafeLoader):
    """Reads ``!function`` as its text."""


_AnyTag.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


@pytest.fixture(scope="module")
def manager(releases):
    """One harness TaskManager over every release's tasks (indexing the harness's own tasks takes seconds)."""
    from lm_eval.tasks import TaskManager

    root, exported = releases
    return TaskManager(include_path=[str(result.folder) for result in exported.values() if result.tasks],
                       include_defaults=False)


def _task(manager, name):
    """The harness's task object (no model) of task ``name``."""
    from lm_eval.tasks import get_task_dict

    return get_task_dict([name], manager)[name]


# ---------------------------------------------------------------------------------------------
# The contract: the harness runs every config
# ---------------------------------------------------------------------------------------------


def test_the_harness_reports_a_number_for_every_config(releases, manager, harness_cache, tiny_llama, tmp_path,
                                                       monkeypatch):
    import lm_eval

    root, exported = releases
    monkeypatch.chdir(tmp_path)  # the tasks find their release from any working directory
    names = ("snli", "old", "geo", "cur")
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_llama},dtype=float32", tasks=[exported[n].group for n in names],
        task_manager=manager, limit=2, device="cpu", batch_size=4, gen_kwargs="max_gen_toks=4",
        bootstrap_iters=0)["results"]  # no bootstrapped standard errors (mcc's takes minutes)
    for name in names:
        configs = _configs(root / name)
        assert set(exported[name].tasks) == set(configs) and not exported[name].skipped
        for config in configs:
            result = results[exported[name].tasks[config]]
            metric = "exact_match,first_line" if name == "geo" else "acc,none"
            assert 0.0 <= result[metric] <= 1.0, (config, result)


def test_choices_are_the_class_names_in_class_order_and_targets_point_at_the_row_label(releases, manager, harness_cache,
                                                                                       shared):
    root, exported = releases
    # SNLI sample: a ClassLabel; the row's label name read independently from the official jsonl by pair id.
    with gzip.open(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt") as lines:
        gold = {row["pairID"]: row["gold_label"] for row in map(json.loads, lines)}
    task = _task(manager, exported["snli"].tasks["ll_split"])
    docs = list(task.eval_docs)
    assert len(docs) == 20
    for doc in docs:
        assert task.doc_to_choice(doc) == ["entailment", "neutral", "contradiction"]
        assert task.doc_to_choice(doc)[task.doc_to_target(doc)] == gold[doc["pair_id"]]
    # A CSV release (its label's names sorted), and one built before the label policy, whose label is
    # text: the Jinja target maps it to its index; both give the row's own label.
    csv, old = (_task(manager, exported[name].tasks["random"]) for name in ("csv", "old"))
    csv_docs, old_docs = list(csv.eval_docs), list(old.eval_docs)
    assert len(old_docs) == 20 and [d["source_id"] for d in csv_docs] == [d["source_id"] for d in old_docs]
    int2str = csv.dataset["test"].features["label"].int2str
    for csv_doc, old_doc in zip(csv_docs, old_docs):
        assert csv.doc_to_choice(csv_doc) == old.doc_to_choice(old_doc) == ["contradiction", "entailment", "neutral"]
        assert old.doc_to_choice(old_doc)[old.doc_to_target(old_doc)] == old_doc["gold_label"]
        assert csv.doc_to_choice(csv_doc)[csv.doc_to_target(csv_doc)] == int2str(csv_doc["label"]) == old_doc["gold_label"]
    # CURRICULUM: the phenomenon's own ClassLabel; the label read from the released zip by idx.
    with zipfile.ZipFile(shared / "data" / "curriculum" / "tasks" / "verbnet.zip") as archive:
        val = {r["idx"]: r["gold_label"] for r in map(json.loads, archive.read("verbnet/val.jsonl").splitlines())}
    for config in ("verbnet", "verbnet_hypothesis_only"):
        task = _task(manager, exported["cur"].tasks[config])
        docs = list(task.eval_docs)
        assert len(docs) == len(val)
        assert all(task.doc_to_choice(d)[task.doc_to_target(d)] == val[d["idx"]] for d in docs)


def test_splits_output_types_and_prompts_follow_each_family(releases):
    root, _ = releases
    geo = _task_yaml(root / "geo", "length")
    assert geo["output_type"] == "generate_until" and geo["doc_to_target"] == "target"
    assert geo["metric_list"][0]["metric"] == "exact_match" and "{{input}}" in geo["doc_to_text"]
    assert (geo["test_split"], geo["training_split"]) == ("test", "train") and "validation_split" not in geo
    cur = _task_yaml(root / "cur", "entailment_tree")
    assert (cur["test_split"], cur["fewshot_split"], cur["output_type"]) == ("validation", "train", "multiple_choice")
    assert "validation_split" not in cur  # CURRICULUM configs have train + validation only
    assert "{{premise}}" in cur["doc_to_text"] and "{{hypothesis}}" in cur["doc_to_text"]
    only = _task_yaml(root / "cur", "entailment_tree_hypothesis_only")
    assert "premise" not in only["doc_to_text"] and "{{hypothesis}}" in only["doc_to_text"]
    snli = _task_yaml(root / "snli", "ll_split")
    assert (snli["test_split"], snli["validation_split"]) == ("test", "validation")
    for task in (geo, cur, snli):
        assert task["custom_dataset"] == "!function utils.load_release" and task["dataset_kwargs"]["resplit_folder"] == ".."
    group = yaml.safe_load((root / "cur" / "lm_eval" / "_curriculum.yaml").read_text())
    assert group["task"] == [f"curriculum_{c}" for c in _configs(root / "cur")]
    assert {m["metric"] for m in group["aggregate_metric_list"]} == {"acc", "acc_norm", "mcc"}  # CURRICULUM declares mcc
    assert {m["metric"] for m in cur["metric_list"]} == {"acc", "acc_norm", "mcc"}  # Matthews correlation beside acc
    # generation: the first line of the answer, stripped; a blank line stops it; few-shot by default
    assert geo["num_fewshot"] >= 1 and geo["generation_kwargs"]["until"] == ["\n\n"]
    assert [f["function"] for f in geo["filter_list"][0]["filter"]] == ["regex", "take_first"]
    assert geo["process_results"] == "!function utils.exact_match_program"


def test_behavioural_test_cases_with_a_label_become_tasks_and_the_others_are_skipped_with_a_reason(
        releases, manager, harness_cache):
    root, exported = releases
    beh = exported["beh"]
    assert {"func_2", "type_INV", "class_Robustness"} <= set(beh.skipped)
    assert "INV and DIR" in beh.skipped["type_INV"]
    assert "type_MFT" in beh.tasks and "func_0" in beh.tasks
    task = _task(manager, beh.tasks["type_MFT"])
    docs = list(task.eval_docs)
    words = {w: "positive" for w in SENTIMENT["tests"][0]["data"]} | {w: "negative" for w in SENTIMENT["tests"][1]["data"]}
    assert docs and all(task.doc_to_choice(d)[task.doc_to_target(d)] == words[d["text"]] for d in docs)


# ---------------------------------------------------------------------------------------------
# Files: no absolute path, deterministic, older releases, the writer's entry point
# ---------------------------------------------------------------------------------------------


def test_no_absolute_path_is_written_and_an_export_is_byte_identical(releases, tmp_path):
    root, exported = releases
    for name, result in exported.items():
        for path in result.paths:
            text = path.read_text()
            assert str(root) not in text and str(root.resolve()) not in text and "/tmp" not in text, path
    first = {p.name: p.read_bytes() for p in exported["cur"].paths}
    again = export_lm_eval(root / "cur")
    assert {p.name: p.read_bytes() for p in again.paths} == first


def test_a_release_without_recorded_fields_gets_the_same_tasks(releases, tmp_path):
    root, exported = releases
    old = tmp_path / "old"
    _older_release(root / "csv", old, fields=False)  # label names: the distinct values sorted
    paths = write_lm_eval(old)
    assert {p.parent for p in paths} == {old / "lm_eval"}
    for config in _configs(old):
        now, before = _task_yaml(old, config), _task_yaml(root / "old", config)
        for key in ("doc_to_text", "doc_to_target", "doc_to_choice", "output_type", "test_split"):
            assert now[key] == before[key], key
    assert "gold_label" in now["doc_to_target"] and "Gold label:" in now["doc_to_text"]


def test_a_hub_id_is_read_at_a_revision_and_the_names_do_not_change(releases, tmp_path):
    root, exported = releases
    out = tmp_path / "hub"
    with pytest.raises(InvalidParameterError, match="--revision"):
        export_lm_eval(root / "geo", out, repo_id="org/geo-tmcd")  # tasks are pinned
    result = export_lm_eval(root / "geo", out, repo_id="org/geo-tmcd", revision="v1.0.0")
    task = yaml.load((out / "length.yaml").read_text(), Loader=_AnyTag)
    assert (task["dataset_path"], task["dataset_name"], task["dataset_kwargs"]) == (
        "org/geo-tmcd", "length", {"revision": "v1.0.0"})
    assert "custom_dataset" not in task
    # the names come from the release, not from where it is read
    assert result.group == exported["geo"].group and task["task"] == exported["geo"].tasks["length"]


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------


def test_export_command_writes_the_tasks_and_says_how_to_run_them(releases, tmp_path, capsys):
    root, exported = releases
    out = tmp_path / "tasks"
    assert main(["export", "lm-eval", str(root / "beh"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert exported["beh"].group == "checklist_sentiment_suite_behavioural"
    assert "lm_eval --model hf" in printed and f"--tasks {exported['beh'].group}\n" in printed
    assert "skipped type_INV: " in printed
    task = yaml.load((out / "type_MFT.yaml").read_text(), Loader=_AnyTag)
    assert task["custom_dataset"] == "!function utils.load_release"
    # relative to the tasks' folder, wherever it is
    assert (out / task["dataset_kwargs"]["resplit_folder"]).resolve() == (root / "beh").resolve()
    assert main(["export", "lm-eval", str(root / "geo"), "--out", str(tmp_path / "hub"),
                 "--dataset-path", "org/geo-tmcd", "--revision", "v1.2.0"]) == 0
    task = yaml.load((tmp_path / "hub" / "length.yaml").read_text(), Loader=_AnyTag)
    assert (task["dataset_path"], task["dataset_kwargs"]["revision"]) == ("org/geo-tmcd", "v1.2.0")


def test_export_command_bad_input_is_one_line(releases, tmp_path, capsys):
    root, _ = releases
    assert main(["export", "lm-eval", str(tmp_path / "missing")]) == 2
    assert "folder not found" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["export", "lm-eval", str(root / "geo"), "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# Named once, pinned, and nothing of the user's lost
# ---------------------------------------------------------------------------------------------


def test_groups_are_named_after_the_dataset_and_method_and_differ_between_sources(releases):
    root, exported = releases
    groups = {name: result.group for name, result in exported.items()}
    assert groups["snli"] == "snli_likelihood"  # the reader recognises SNLI (the bundled sample)
    assert groups["csv"] == "all_examples_likelihood" and groups["cur"] == "curriculum"
    assert len(set(groups.values())) == len(groups)  # one name per release: no "overrides existing task"
    for result in exported.values():
        assert all(task == f"{result.group}_{config}" for config, task in result.tasks.items())


def test_export_revision_is_the_tasks_dataset_revision(releases, tmp_path):
    root, exported = releases
    for args, where in (([], "custom_dataset"), (["--dataset-path", "org/snli-ll"], "dataset_path")):
        out = tmp_path / where
        assert main(["export", "lm-eval", str(root / "snli"), "--revision", "v3.1.4", "--out", str(out), *args]) == 0
        task = yaml.load((out / "ll_split.yaml").read_text(), Loader=_AnyTag)
        assert task["dataset_kwargs"]["revision"] == "v3.1.4" and where in task
        assert task["task"] == exported["snli"].tasks["ll_split"]


def test_a_local_task_reads_the_files_it_was_written_for_and_refuses_another_version(releases, tmp_path, hf_cache):
    import importlib.util

    import datasets

    root, _ = releases
    folder = tmp_path / "cur"
    shutil.copytree(root / "cur", folder)
    export_lm_eval(folder)
    task = _task_yaml(folder, "verbnet")
    spec = importlib.util.spec_from_file_location("release_utils", folder / "lm_eval" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", hf_cache)
        loaded = utils.load_release(**task["dataset_kwargs"])
        assert loaded["validation"].num_rows == _card(folder)["resplit"]["configs"]["verbnet"]["rows"]["validation"]
        data = folder / task["dataset_kwargs"]["resplit_files"]["validation"]["path"]
        data.write_bytes(data.read_bytes()[:-8] + b"\0" * 8)  # another version of the file
        with pytest.raises(ValueError, match="another version of the release"):
            utils.load_release(**task["dataset_kwargs"])


def test_exporting_again_keeps_the_users_files_and_refuses_those_in_the_way(releases, tmp_path, capsys):
    root, exported = releases
    folder = tmp_path / "geo"
    shutil.copytree(root / "geo", folder)
    mine = {"my_task.yaml": "task: my_own_geo_task\n", "notes.txt": "my notes\n"}
    for name, text in mine.items():
        (folder / "lm_eval" / name).write_text(text)
    before = {p.name: p.read_bytes() for p in (folder / "lm_eval").iterdir()}
    assert main(["export", "lm-eval", str(folder)]) == 0
    assert "left 2 file(s) resplit did not write" in capsys.readouterr().out
    after = {p.name: p.read_bytes() for p in (folder / "lm_eval").iterdir()}
    assert after == before  # the user's files kept, resplit's written again identically
    # a task file the user edited is no longer resplit's: refused, named, nothing changed
    (folder / "lm_eval" / "length.yaml").write_text("task: edited\n")
    assert main(["export", "lm-eval", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "length.yaml (changed since resplit wrote it)" in err and len(err.strip().splitlines()) == 1
    assert (folder / "lm_eval" / "length.yaml").read_text() == "task: edited\n"
    # --out DIR holding the user's own utils.py: refused; DIR unchanged
    out = tmp_path / "tasks"
    out.mkdir()
    (out / "utils.py").write_text("print('mine')\n")
    (out / "other.txt").write_text("x")
    assert main(["export", "lm-eval", str(root / "geo"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "utils.py" in err and "resplit did not write" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == ["other.txt", "utils.py"]
    assert (out / "utils.py").read_text() == "print('mine')\n"


def test_the_card_says_how_to_run_the_tasks_and_why_a_config_has_none(releases):
    root, exported = releases
    body = (root / "beh" / "README.md").read_text().split("---\n", 2)[2]
    section = body.split("## Evaluating with lm-evaluation-harness", 1)[1].split("\n## ", 1)[0]
    assert f"--tasks {exported['beh'].group}" in section and "`type_INV`" in section and "INV and DIR" in section
    geo = (root / "geo" / "README.md").read_text().split("---\n", 2)[2]
    assert "few-shot by default" in geo and body.count("## Evaluating with lm-evaluation-harness") == 1


# ---------------------------------------------------------------------------------------------
# Issue 42: documents keep their row / test case; auxiliary groups; what the card says
# ---------------------------------------------------------------------------------------------


def _rows(folder, config, split):
    """``{source_id: row}`` of one config's split, read from its data file."""
    import pyarrow.parquet as pq

    path = next((folder / config).glob(f"{split}-*.parquet"))
    return {row["source_id"]: row for row in pq.read_table(path).to_pylist()}


def test_logged_samples_keep_their_row_and_behavioural_ones_their_test_case(releases, manager, harness_cache,
                                                                           tiny_llama, tmp_path, monkeypatch):
    """A real harness run with ``log_samples``: every logged document of a classification and a generation task
    carries its row's ``source_id``, and every behavioural document its test case (``source_id``, ``example``,
    ``functionality``, ``capability``, ``test_type``), so samples can be joined to the release and scored per test
    case."""
    import lm_eval

    from split_builders.publishing.export import DOC_FIELDS, TASK_VERSION

    root, exported = releases
    monkeypatch.chdir(tmp_path)
    beh = exported["beh"]
    tasks = [exported["snli"].tasks["ll_split"], exported["geo"].tasks["length"], beh.tasks["seen"],
             beh.tasks["type_MFT"]]
    run = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={tiny_llama},dtype=float32", tasks=tasks,
                                  task_manager=manager, limit=8, device="cpu", batch_size=8,
                                  gen_kwargs="max_gen_toks=4", bootstrap_iters=0, log_samples=True)
    assert DOC_FIELDS == ("text", "answer", "expectation", "ruled_out", "source_id", "example", "functionality",
                          "capability", "test_type")
    for name, config, task in (("snli", "ll_split", tasks[0]), ("geo", "length", tasks[1])):
        rows = _rows(root / name, config, "test")
        samples = run["samples"][task]
        assert len(samples) == 8, task
        for sample in samples:  # the released row, source_id included
            doc = sample["doc"]
            assert doc == {k: v for k, v in rows[doc["source_id"]].items() if k in doc}, (task, doc)
    suite = {test["name"]: test for test in SENTIMENT["tests"]}
    for config, task in (("seen", tasks[2]), ("type_MFT", tasks[3])):
        rows = _rows(root / "beh", config, "test")
        samples = run["samples"][task]
        assert samples and {s["doc"]["source_id"] for s in samples} <= set(rows), task
        for sample in samples:
            doc = sample["doc"]
            assert tuple(doc) == DOC_FIELDS, doc
            case = rows[doc["source_id"]]
            assert isinstance(doc["example"], int) and 0 <= doc["example"] < len(case["examples"])
            assert doc["text"] == "\n".join(case["examples"][doc["example"]])
            assert (doc["functionality"], doc["capability"], doc["test_type"]) == (
                case["functionality"], case["capability"], case["test_type"])
            test = suite[doc["functionality"]]  # read independently from the suite the release was built from
            assert (test["capability"], test["type"]) == (doc["capability"], doc["test_type"])
            assert doc["text"] in test["data"] and doc["answer"] == str(test["labels"])
    for name, result in exported.items():
        for config in result.tasks:
            assert _task_yaml(root / name, config)["metadata"]["version"] == TASK_VERSION == 3.0


def test_behavioural_documents_keep_a_test_case_of_several_examples_and_index_each(releases, tmp_path, hf_cache):
    """``utils.behavioural_docs`` on the released rows: a test case of several examples gives one document per
    scored example, numbered in the test case from 0; columns a release lacks are ''."""
    import importlib.util

    import datasets

    root, _ = releases
    spec = importlib.util.spec_from_file_location("beh_utils", root / "beh" / "lm_eval" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    rows = datasets.Dataset.from_list([
        {"source_id": 7, "examples": [["good"], ["great"], ["fine"]], "labels": [2, None, 2],
         "expectation": {"fn": "eq", "value": None}, "functionality": "positive words", "capability": "Vocabulary",
         "test_type": "MFT"},
        {"source_id": 9, "examples": [["bad film"], ["bda film"]], "labels": [None, None],
         "expectation": {"fn": "inv", "value": None}, "functionality": "typos", "capability": "Robustness",
         "test_type": "INV"}])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", hf_cache)
        docs = utils.behavioural_docs(rows).to_list()
        bare = utils.behavioural_docs(rows.remove_columns(["capability", "test_type"])).to_list()
    assert [(d["source_id"], d["example"], d["text"], d["answer"]) for d in docs] == [
        (7, 0, "good", "2"), (7, 2, "fine", "2")]  # the example without a label is not scored; INV: no document
    assert all((d["functionality"], d["capability"], d["test_type"]) == ("positive words", "Vocabulary", "MFT")
               for d in docs)
    assert [(d["source_id"], d["example"], d["capability"], d["test_type"]) for d in bare] == [
        (7, 0, "", ""), (7, 2, "", "")]


def test_curriculum_inoculation_tasks_are_a_group_of_their_own_and_exporting_again_replaces_only_resplits(
        releases, shared, tmp_path, capsys):
    from split_builders.publishing.export import written_before

    root, exported = releases
    folder = tmp_path / "cur"
    _build(["curriculum", "--data", str(shared / "data" / "curriculum"), "--phenomena", "verbnet",
            "--inoculation-sizes", "10,50", "--out", str(folder)])
    result = export_lm_eval(folder)  # what the build wrote, again: the same files
    inoculation = ["curriculum_verbnet_inoc_10", "curriculum_verbnet_inoc_50"]
    assert result.group == "curriculum" and result.groups == {"curriculum_inoculation": inoculation}
    assert result.group_configs == {"curriculum_inoculation": ("<phenomenon>_inoc_<n>",)}
    assert result.default_tasks == ["curriculum_verbnet", "curriculum_verbnet_hypothesis_only"]
    default = yaml.safe_load((folder / "lm_eval" / "_curriculum.yaml").read_text())
    auxiliary = yaml.safe_load((folder / "lm_eval" / "_curriculum_inoculation.yaml").read_text())
    assert default["task"] == result.default_tasks and not any("_inoc_" in t for t in default["task"])
    assert auxiliary["group"] == "curriculum_inoculation" and auxiliary["task"] == inoculation
    assert {m["metric"] for m in auxiliary["aggregate_metric_list"]} == {"acc", "acc_norm", "mcc"}
    files = default["metadata"]["resplit_files"]  # both groups are the export's: listed with their sha256
    assert {"_curriculum_inoculation.yaml", "verbnet_inoc_10.yaml", "utils.py"} <= set(files)
    assert files["_curriculum_inoculation.yaml"] == hashlib.sha256(
        (folder / "lm_eval" / "_curriculum_inoculation.yaml").read_bytes()).hexdigest()
    assert set(written_before(folder / "lm_eval")) == {p.name for p in (folder / "lm_eval").iterdir()}
    # the card: both groups, each a command the pinned harness's CLI accepts (it has no --bootstrap_iters flag: mcc is
    # aggregated by utils.matthews_corrcoef, which the harness does not bootstrap)
    body = (folder / "README.md").read_text().split("---\n", 2)[2]
    section = body.split("## Evaluating with lm-evaluation-harness", 1)[1].split("\n## ", 1)[0]
    assert "--tasks curriculum\n" in section and "--bootstrap_iters" not in section
    assert "--tasks curriculum_inoculation\n" in section and "`<phenomenon>_inoc_<n>`" in section
    assert "utils.matthews_corrcoef" in section
    assert "`curriculum_inoculation`, outside the default group `curriculum`" in body  # the method's own card text
    # a rebuild over it (--overwrite) finds only resplit's files, the auxiliary group included
    _build(["curriculum", "--data", str(shared / "data" / "curriculum"), "--phenomena", "verbnet",
            "--inoculation-sizes", "10,50", "--out", str(folder), "--overwrite"])
    # the tasks of a release without inoculation configs exported over them (in a folder outside both releases: one
    # inside a release is refused, its tasks would read another release): the stale group and tasks removed
    tasks = tmp_path / "tasks"
    assert main(["export", "lm-eval", str(folder), "--out", str(tasks)]) == 0
    assert (tasks / "_curriculum_inoculation.yaml").is_file()
    capsys.readouterr()
    assert main(["export", "lm-eval", str(root / "cur"), "--out", str(tasks)]) == 0
    printed = capsys.readouterr().out
    assert "did not write" not in printed and "--tasks curriculum\n" in printed and "--bootstrap_iters" not in printed
    left = {p.name for p in tasks.iterdir()}
    assert "_curriculum_inoculation.yaml" not in left and not any("_inoc_" in name for name in left)
    assert exported["cur"].groups == {}  # no inoculation configs: one group


def test_the_registry_checks_harness_groups_and_curriculum_declares_its_inoculation_configs(toy_method):
    from split_builders.api import registry
    from split_builders.registry import check_declarations

    curriculum = registry()["curriculum"]
    assert curriculum.harness_groups == {"inoculation": ("<phenomenon>_inoc_<n>",)}
    assert [curriculum.harness_group(c) for c in ("verbnet_inoc_10", "verbnet", "verbnet_hypothesis_only",
                                                  "verbnet_simple_to_hard")] == ["inoculation", None, None, None]
    assert all(method.harness_groups == {} for name, method in registry().items() if name != "curriculum")
    for groups in ({"extra": ("no_such_config",)}, {"Extra group": ("shortest",)}, {"extra": "shortest"},
                   {"extra": ()}, [("extra", ("shortest",))]):
        method = type("Bad", (toy_method,), {"name": "bad-groups", "harness_groups": groups})()
        with pytest.raises(InvalidParameterError, match="harness_groups must map a name"):
            check_declarations(method)
    check_declarations(type("Good", (toy_method,), {"name": "good-groups", "harness_groups": {
        "extra": (toy_method.config_names[0],)}})())


def test_cards_name_the_metrics_their_tasks_report(releases):
    root, exported = releases

    def section(name):
        body = (root / name / "README.md").read_text().split("---\n", 2)[2]
        return body.split("## Evaluating with lm-evaluation-harness", 1)[1].split("\n## ", 1)[0]

    snli, cur, beh = section("snli"), section("cur"), section("beh")
    assert "accuracy (`acc`, `acc_norm`)." in snli and "mcc" not in snli and "--bootstrap_iters" not in snli
    assert exported["snli"].metrics == ["acc", "acc_norm"]
    assert "(`acc`, `acc_norm`) and Matthews correlation (`mcc`)" in cur
    assert "--tasks curriculum\n" in cur and "--bootstrap_iters" not in cur
    assert exported["cur"].metrics == ["acc", "acc_norm", "mcc"]
    assert "acc_norm" not in beh and "`acc`, the only metric" in beh and exported["beh"].metrics == ["acc"]
    assert all(f"`{name}`" in beh for name in ("source_id", "example", "functionality", "capability", "test_type"))
    assert "Classification tasks" not in beh and "--bootstrap_iters" not in beh


def test_the_docs_say_what_the_tasks_report_and_which_splits_mcd_releases():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "docs" / "releases.md").read_text()  # moved from README.md
    harness = readme.split("## Evaluation harness tasks: `lm_eval/`", 1)[1].split("\n## ", 1)[0]
    assert "`acc`, `acc_norm` and Matthews correlation" not in harness
    # mcc is aggregated by the release's utils.matthews_corrcoef: no --bootstrap_iters (lm-eval 0.4.13's CLI refuses it)
    assert "CURRICULUM's also by Matthews correlation (`mcc`" in harness and "utils.matthews_corrcoef" in harness
    assert "--bootstrap_iters" not in harness
    assert "`curriculum_inoculation`" in harness and "`source_id`, `example`, `functionality`" in harness
    rows = [line for line in readme.splitlines() if line.startswith("| `mcd` |")]
    assert any("published" in row and "train, validation, test" in row for row in rows), rows
    assert not any("published" in row and "no validation" in row for row in rows), rows
