"""``resplit report`` says what it was made from, and its outputs are read back by the tools they feed (issue 54).

Runs are small files in the layouts the harnesses write (:mod:`test_report_round6`'s writers: an lm_eval
``--output_path`` folder, inspect-ai logs written with inspect-ai's own writer, predictions tables) on the
session's small likelihood release (built from a CSV); no harness is run. Every digest is computed here with
hashlib, independently of the report.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import refused_in_one_line
from split_builders.cli import main
from split_builders.evaluation.report import report
from split_builders.publishing.export import group_name
from split_builders.release.folder import read_card
from test_report_round6 import _ids, _inspect_log, _lm_eval_run, _outcome, _table

EPOCH = 1_000_000_000  # SOURCE_DATE_EPOCH: 2001-09-09T01:46:40Z


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _runs(release: Path, where: Path) -> dict:
    """An lm_eval run (recording its lm_eval_version), an inspect-ai log and a predictions table of one release."""
    lm_eval = _lm_eval_run(where / "lm", release, configs=("random", "ll_split"), model="org/lm")
    results = next(lm_eval.rglob("results_*.json"))
    document = json.loads(results.read_text(encoding="utf-8"))
    results.write_text(json.dumps({**document, "lm_eval_version": "0.4.99"}), encoding="utf-8")
    log = _inspect_log(where / "logs" / "one.eval", release, "random", model="mockllm/other")
    from inspect_ai.log import read_eval_log, write_eval_log

    written = read_eval_log(str(log))  # inspect eval records its own version in the log's packages
    written.eval.packages = {"inspect_ai": "0.3.99"}
    write_eval_log(written, str(log))
    table = _table(where / "predictions.csv", release, configs=("random", "ll_split"), models=("tfidf",))
    return {"lm": lm_eval, "inspect": log, "table": table}


def test_the_json_and_report_json_record_the_release_the_runs_and_the_settings(small_release, tmp_path, capsys,
                                                                              monkeypatch):
    import split_builders

    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    runs = _runs(small_release, tmp_path)
    out = tmp_path / "report"
    assert main(["report", str(small_release), str(runs["lm"]), str(runs["inspect"]), f"{runs['table']}=tfidf",
                 "--json", "--bootstrap-iters", "50", "--seed", "7", "--confidence", "0.9", "--out", str(out)]) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert json.loads((out / "report.json").read_text(encoding="utf-8")) == data
    provenance = data["provenance"]
    assert provenance["created"] == "2001-09-09T01:46:40Z"
    assert provenance["resplit_version"] == split_builders.__version__
    assert (provenance["seed"], provenance["bootstrap_resamples"], provenance["confidence"]) == (7, 50, 0.9)
    group = group_name(read_card(small_release)[0])
    assert provenance["releases"] == [{"release": str(small_release), "group": group, "hub_id": None,
                                       "revision": None, "card_sha256": _sha256(small_release / "README.md")}]
    assert data["results"][0]["release"] == group  # the tables keep the group name the runs' tasks carry
    by_model = {run["model"]: run for run in provenance["runs"]}
    assert set(by_model) == {"org/lm", "mockllm/other", "tfidf"}
    lm = by_model["org/lm"]
    lm_files = sorted(p for p in runs["lm"].rglob("*") if p.is_file())
    assert (lm["path"], lm["harness"], lm["harness_version"]) == (str(runs["lm"]), "lm-eval", "0.4.99")
    assert sorted((f["path"], f["sha256"]) for f in lm["files"]) == sorted((str(p), _sha256(p)) for p in lm_files)
    log = by_model["mockllm/other"]
    assert (log["harness"], log["harness_version"]) == ("inspect-ai", "0.3.99")
    assert log["files"] == [{"path": str(runs["inspect"]), "sha256": _sha256(runs["inspect"])}]
    table = by_model["tfidf"]
    assert (table["path"], table["harness"], table["harness_version"]) == (str(runs["table"]), "predictions table",
                                                                          None)
    assert table["files"] == [{"path": str(runs["table"]), "sha256": _sha256(runs["table"])}]
    header = (out / "report.md").read_text(encoding="utf-8").split("## ")[0]
    assert "2001-09-09T01:46:40Z" in header and f"group `{group}`" in header and str(small_release) in header
    assert _sha256(small_release / "README.md")[:12] in header and _sha256(runs["table"])[:12] in header


def test_a_report_is_byte_identical_when_made_again_at_a_fixed_time(small_release, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    table = _table(tmp_path / "p.csv", small_release, configs=("random", "ll_split"), models=("a", "b"))
    for out in ("one", "two"):
        assert main(["report", str(small_release), str(table), "--bootstrap-iters", "50", "--out",
                     str(tmp_path / out)]) == 0
    names = sorted(p.name for p in (tmp_path / "one").iterdir() if not p.name.endswith(".png"))
    assert "report.json" in names and "report.md" in names
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(Exception, match="SOURCE_DATE_EPOCH is 'yesterday'"):
        report(small_release, [str(table)], n_resamples=0)


def test_report_tex_holds_every_table_and_results_csv_feeds_concurrence(small_release, tmp_path, capsys):
    """Three models on every config: the report's results.csv given to ``resplit concurrence`` as it is gives the
    report's own concurrence table; report.tex holds each table the report has, not only the gaps."""
    configs = sorted(p.name for p in small_release.iterdir() if p.is_dir() and any(p.glob("test-*.parquet")))
    rows = []
    for rank, model in enumerate(("a", "b", "c")):
        for number, config in enumerate(configs):
            for source_id in _ids(small_release, config):  # the models' order changes from config to config
                rows.append({"model": model, "config": config, "split": "test", "source_id": source_id,
                             "correct": int((source_id + rank * (number + 1)) % (3 + rank) != 0)})
    pd.DataFrame(rows).to_csv(tmp_path / "p.csv", index=False)
    out = tmp_path / "report"
    assert main(["report", str(small_release), str(tmp_path / "p.csv"), "--bootstrap-iters", "0", "--out",
                 str(out)]) == 0
    concurrence = pd.read_csv(out / "concurrence.csv")
    assert len(concurrence) == len(configs) * (len(configs) - 1) // 2
    assert concurrence["kendall_tau"].nunique() > 1  # the rankings differ between configs
    capsys.readouterr()
    assert main(["concurrence", "--results", str(out / "results.csv"), "--json"]) == 0
    values = json.loads(capsys.readouterr().out)
    for row in concurrence.itertuples():
        assert values[f"{row.config_a}|{row.config_b}"] == pytest.approx(row.kendall_tau, nan_ok=True)
    tex = (out / "report.tex").read_text(encoding="utf-8")
    tables = [p.stem for p in out.glob("*.csv")]
    assert {"results", "gaps", "comparisons", "concurrence"} <= set(tables)
    assert tex.count("\\begin{table}") == len(tables)
    for name in tables:
        assert f"\\label{{tab:resplit-{name}}}" in tex
    assert tex.count("\\bottomrule") == len(tables)


# -- inspect eval hf/ORG/NAME@REV (the release's eval.yaml run from the Hub) ----------------------------------------


HUB_ID = "org/snli-ll"


@pytest.fixture(scope="module")
def published(small_release, tmp_path_factory) -> Path:
    """The small release as published: its card records its Hub id and version (v1.0.0), as ``push`` writes it."""
    import shutil

    folder = tmp_path_factory.mktemp("published") / "release"
    shutil.copytree(small_release, folder)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.count("\nresplit:\n") == 1
    (folder / "README.md").write_text(card.replace("\nresplit:\n", f"\nresplit:\n  repo_id: {HUB_ID}\n"
                                                   "  release_version: 1.0.0\n"), encoding="utf-8")
    return folder


def _hub_log(path: Path, release: Path, task: str, config: str, **task_args) -> Path:
    """A log as ``inspect eval hf/...`` writes it (inspect-ai's own writer): task named by inspect's Hub loader,
    the dataset its Hub id, no resplit metadata; each sample keeps eval.yaml's metadata fields and is scored by
    the pattern scorer."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.scorer import Score

    ids = _ids(release, config)
    samples = [EvalSample(id=n + 1, epoch=1, input="Premise: x", target="1",
                          metadata={"premise": "x", "hypothesis": "y", "source_id": i},
                          scores={"pattern": Score(value="C" if _outcome(i) else "I")}) for n, i in enumerate(ids)]
    spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task=task, task_args=task_args, model="mockllm/model",
                    config=EvalConfig(), dataset=EvalDataset(name=HUB_ID, location=HUB_ID, samples=len(ids)),
                    packages={"inspect_ai": "0.3.285"})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))
    return path


@pytest.mark.parametrize("task, config, args", [
    (f"hf/{HUB_ID}@v1.0.0/random", "random", {}),          # every task of eval.yaml, pinned
    (f"hf/{HUB_ID}/ll_split@v1.0.0/ll_split", "ll_split", {}),  # one task asked for
    (f"hf/{HUB_ID}/ll_split_len", "ll_split_len", {"revision": "v1.0.0"}),  # -T revision=v1.0.0
])
def test_a_log_of_the_hub_route_is_read_and_its_revision_checked(task, config, args, published, tmp_path, capsys):
    log = _hub_log(tmp_path / "logs" / "hub.eval", published, task, config, **args)
    result = report(published, [str(log)], n_resamples=0)
    (row,) = result.results.itertuples()
    expected = np.mean([_outcome(i) for i in _ids(published, config)])
    assert (row.config, row.split, row.metric, row.n, bool(row.complete)) == (config, "test", "acc", 40, True)
    assert row.value == pytest.approx(expected)
    assert result.provenance["runs"][0]["harness"] == "inspect-ai"
    assert not any("not checked" in note for note in result.notes), result.notes
    other = _hub_log(tmp_path / "other" / "hub.eval", published, task.replace("v1.0.0", "v2.0.0"), config,
                     **{k: v.replace("v1.0.0", "v2.0.0") for k, v in args.items()})
    line = refused_in_one_line(["report", str(published), str(other), "--bootstrap-iters", "0"], capsys, published)
    assert "revision v2.0.0" in line and "v1.0.0" in line, line


def test_a_hub_log_of_the_main_branch_is_read_with_a_note_and_another_dataset_is_left_out(published, tmp_path):
    log = _hub_log(tmp_path / "logs" / "main.eval", published, f"hf/{HUB_ID}/random", "random")
    result = report(published, [str(log)], n_resamples=0)
    assert len(result.results) == 1
    assert any("main branch" in note and "not checked" in note for note in result.notes), result.notes
    foreign = _hub_log(tmp_path / "foreign" / "f.eval", published, "hf/org/another@v1.0.0/random", "random")
    with pytest.raises(Exception, match="none of its inspect-ai logs is of the release"):
        report(published, [str(foreign)], n_resamples=0)


# -- the docs' predictions example reads labels by name -------------------------------------------------------------


@pytest.fixture(scope="module")
def snli_release(tmp_path_factory) -> Path:
    """A small likelihood release of the bundled SNLI sample (its labels a ClassLabel in SNLI's order: entailment
    is 0), with given scores."""
    folder = tmp_path_factory.mktemp("snli-sample")
    np.save(folder / "scores.npy", np.random.default_rng(0).normal(size=2000))
    assert main(["likelihood", "--source", "snli-sample", "--scores", str(folder / "scores.npy"), "--limit", "120",
                 "--validation-size", "20", "--test-size", "30", "--null-splits", "0", "--out",
                 str(folder / "release"), "--no-progress"]) == 0
    return folder / "release"


def _gold(release: Path, config: str, source: pd.DataFrame) -> dict:
    """``{source_id: gold label text}`` of a config's test rows, found by their premise and hypothesis in the
    source file (not through the release's label encoding)."""
    import pyarrow.parquet as pq

    (path,) = (release / config).glob("test-*.parquet")
    rows = pq.read_table(path, columns=["source_id", "premise", "hypothesis"]).to_pylist()
    gold = source.groupby(["premise", "hypothesis"])["gold_label"].agg(set).to_dict()
    assert all(len(gold[(r["premise"], r["hypothesis"])]) == 1 for r in rows)
    return {r["source_id"]: next(iter(gold[(r["premise"], r["hypothesis"])])) for r in rows}


@pytest.mark.parametrize("page", ["README.md", "docs/evaluation.md"])
def test_the_docs_always_entailment_model_answers_entailment_on_a_csv_and_on_snli(page, small_release, snli_release,
                                                                                  shared, tmp_path, monkeypatch):
    import datasets

    from test_docs import REPO, blocks

    (block,) = [b for b in blocks(REPO / page) if b.lang == "python" and "always-entailment" in b.code]
    csv = pd.read_csv(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv")
    sample = pd.read_json(REPO / "loading_scripts" / "samples" / "snli_1.0_dev_sample.jsonl.gz", lines=True)
    sample = sample.rename(columns={"sentence1": "premise", "sentence2": "hypothesis"})
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets-cache"))
    for name, release, source in (("csv", small_release, csv), ("snli", snli_release, sample)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)  # the block writes predictions.csv where it runs
        code = block.code.replace("demo_out/snli-sample-likelihood", str(release)).replace('"ll_split_pt"',
                                                                                          '"ll_split"')
        exec(compile(code, f"{page} on the {name} release", "exec"), {"__name__": "__main__"})
        written = pd.read_csv("predictions.csv")
        assert set(written["config"]) == {"random", "ll_split"} and set(written["model"]) == {"always-entailment"}
        for config, rows in written.groupby("config"):
            gold = _gold(release, config, source)
            assert sorted(rows["source_id"]) == sorted(gold)
            expected = {i: gold[i] == "entailment" for i in gold}
            assert dict(zip(rows["source_id"], rows["correct"].astype(bool))) == expected
            assert 0 < sum(expected.values()) < len(expected)


# -- Croissant: where the scores came from, and the method's paper -------------------------------------------------


def _property(entity: dict, name: str):
    return next((p["value"] for p in entity.get("additionalProperty", []) if p["name"] == name), None)


def test_croissant_records_the_given_scores_and_cites_the_method(snli_release):
    document = json.loads((snli_release / "croissant.json").read_text(encoding="utf-8"))
    record = read_card(snli_release)[0]["resplit"]
    used = document["prov:wasGeneratedBy"]["prov:used"]
    assert _property(used, "scores_sha256") == _sha256(snli_release.parent / "scores.npy")
    assert _property(used, "scores_file") == "scores.npy" and _property(used, "kind") == record["signal"]["kind"]
    bibtex = read_card(snli_release)[1].split("```bibtex\n")[1].split("\n```")[0]
    assert "bowman" in bibtex and "Godbole" in record["paper"]  # the card's BibTeX is the source's (SNLI)
    assert document["citeAs"] == f"{record['paper']}\n\n{bibtex}"


def test_croissant_records_the_model_that_scored_the_rows():
    from split_builders.publishing.croissant import _document

    signal = {"kind": "prompted LM log-likelihood", "model": "HuggingFaceTB/SmolLM2-135M", "model_revision": "abc123",
              "dtype": "int8", "engine": "ctranslate2", "engine_version": "4.6.0", "template": "snli: {premise} ...",
              "batch_size": 32, "fold_reports": [{"fold": 0}]}
    record = {"method": "likelihood", "version": "0.1.0", "paper": "Godbole & Jia 2023", "signal": signal}
    recipe = "```bibtex\n@inproceedings{godbole-jia-2023,\n  title = {Benchmarking Long-tail Generalization with " \
             "Likelihood Splits},\n}\n```"
    document = _document({}, recipe, {**record, "paper": "A. Godbole and R. Jia. 2023. *Benchmarking Long-tail "
                                                           "Generalization with Likelihood Splits.* EACL."}, [], [])
    assert document["citeAs"].startswith("@inproceedings{godbole-jia-2023")  # a recipe's BibTeX has the method's
    used = _document({}, "", record, [], [])["prov:wasGeneratedBy"]["prov:used"]
    assert used["prov:wasAttributedTo"] == {"@type": "prov:SoftwareAgent", "name": "HuggingFaceTB/SmolLM2-135M",
                                            "version": "abc123"}
    for key in ("model", "model_revision", "dtype", "engine", "engine_version", "template"):
        assert _property(used, key) == signal[key], key
    assert _property(used, "fold_reports") is None and _property(used, "scores_sha256") is None
