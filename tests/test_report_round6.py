"""``resplit report`` reads any run defensively (issue 56): every value a run holds is checked where it is read,
and a run that cannot be read as it stands is refused in one line naming the file, the line and the field.

The runs are small files written here in the layouts the harnesses write (an lm-evaluation-harness
``--output_path`` folder: ``results_<time>.json`` and ``samples_<task>_<time>.jsonl``; inspect-ai ``.eval`` logs
written with inspect-ai's own writer; predictions tables), on the session's small likelihood release and the
example CURRICULUM and CheckList releases; no harness is run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import refused_in_one_line
from split_builders.cli import main
from split_builders.evaluation.report import report
from split_builders.publishing.export import group_name
from split_builders.release.folder import Released, read_card

TIME = "2026-01-01T00-00-00"


def _ids(release: Path, config: str, split: str = "test") -> list:
    return sorted(int(i) for i in Released(release).source_ids(config, split))


def _outcome(source_id) -> float:
    """A planted 0/1 outcome of a row (right on about two rows in three)."""
    return float(int(source_id) % 3 != 0)


def _lm_eval_run(folder: Path, release: Path, configs=("random",), *, model="org/model", time=TIME, edit=None,
                 metric="acc", split="test") -> Path:
    """An lm_eval ``--output_path`` folder of ``model`` on ``configs`` of ``release`` (one results file and one
    samples file per task, as lm_eval writes them); ``edit(config, lines)`` may change the samples' JSON lines."""
    group = group_name(read_card(release)[0])
    where = folder / model.replace("/", "__")
    where.mkdir(parents=True, exist_ok=True)
    tasks, counts = {}, {}
    for config in configs:
        task = f"{group}_{config}"
        ids = _ids(release, config, split)
        lines = []
        for number, source_id in enumerate(ids):
            value = _outcome(source_id)
            sample = {"doc_id": number, "doc": {"source_id": source_id}, "target": 0, "filter": "none",
                      "filtered_resps": [[-1.0, False], [-2.0, False]]}
            sample[metric] = [0, int(value)] if metric == "mcc" else value
            if metric == "mcc":
                sample["acc"] = float(value == 0)
            lines.append(json.dumps(sample))
        if edit is not None:
            lines = edit(config, lines)
        (where / f"samples_{task}_{time}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        tasks[task] = {"task": task, "dataset_name": config, "test_split": split,
                       "dataset_kwargs": {"resplit_config": config},
                       "metric_list": [{"metric": "acc"}, *([{"metric": "mcc"}] if metric == "mcc" else [])]}
        counts[task] = {"original": len(ids), "effective": len(ids)}
    (where / f"results_{time}.json").write_text(json.dumps({"configs": tasks, "n-samples": counts,
                                                            "model_name": model}), encoding="utf-8")
    return folder


def _inspect_log(path: Path, release: Path, config: str, *, model="mockllm/model", ids=None, status="success",
                 metadata=None, split="test") -> Path:
    """An inspect-ai log (written with inspect-ai's own writer) of the release's task for ``config``: each
    sample keeps its row's ``source_id`` and is scored C or I by :func:`_outcome`."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.scorer import Score

    group = group_name(read_card(release)[0])
    ids = _ids(release, config, split) if ids is None else ids
    samples = [EvalSample(id=n + 1, epoch=1, input="x", target="A",
                          metadata={"source_id": i} if metadata is None else metadata(i),
                          scores={"choice": Score(value="C" if _outcome(i) else "I")})
               for n, i in enumerate(ids)] if status == "success" else []
    spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task=f"{group}_{config}", model=model, config=EvalConfig(),
                    dataset=EvalDataset(samples=len(_ids(release, config, split))),
                    metadata={"resplit": {"task": f"{group}_{config}", "config": config, "split": split}})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(EvalLog(eval=spec, samples=samples, status=status), str(path))
    return path


def _table(path: Path, release: Path, configs=("random",), models=("a",), **columns) -> Path:
    rows = [{"model": m, "config": c, "split": "test", "source_id": i, "correct": int(_outcome(i))}
            for m in models for c in configs for i in _ids(release, c)]
    frame = pd.DataFrame(rows)
    for name, value in columns.items():
        frame[name] = value(frame) if callable(value) else value
    frame.to_csv(path, index=False)
    return path


def _refused(release: Path, runs: list, capsys, *extra) -> str:
    return refused_in_one_line(["report", str(release), *map(str, runs), "--bootstrap-iters", "0", *extra], capsys,
                               release)


# -- encodings, ids, values ---------------------------------------------------------------------------------------


def test_a_samples_file_with_a_byte_that_is_not_utf8_is_one_line_naming_its_line(small_release, tmp_path, capsys):
    run = _lm_eval_run(tmp_path / "run", small_release)
    (samples,) = run.rglob("samples_*.jsonl")
    data = samples.read_bytes().split(b"\n")
    data[4] = data[4].replace(b'"none"', b'"n\xf6ne"')  # Latin-1, not UTF-8
    samples.write_bytes(b"\n".join(data))
    line = _refused(small_release, [run], capsys)
    assert samples.name in line and "line 5" in line and "UTF-8" in line, line


def _set(index: int, field: str, value):
    """An ``edit`` of :func:`_lm_eval_run`: line ``index`` (0-based) gets ``value`` in ``field`` (``doc.NAME`` for a
    field of the document; ``...`` removes it)."""
    def edit(config, lines):
        sample = json.loads(lines[index])
        holder, key = (sample["doc"], field[4:]) if field.startswith("doc.") else (sample, field)
        if value is ...:
            del holder[key]
        else:
            holder[key] = value
        return [*lines[:index], json.dumps(sample), *lines[index + 1:]]
    return edit


@pytest.mark.parametrize("field, value, expected", [
    ("doc.source_id", "abc", "source_id"),  # not a number (a ValueError from int() before)
    ("doc.source_id", 12.5, "source_id"),  # a fraction (read as 12 before)
    ("doc.source_id", True, "source_id"),
    ("acc", float("inf"), "acc"),  # not finite (a point outside its own interval, then --json crashed)
    ("acc", ..., "acc"),  # missing (NaN before)
    ("acc", "yes", "acc"),
])
def test_an_lm_eval_sample_value_that_is_not_what_the_harness_writes_is_refused(field, value, expected, small_release,
                                                                                tmp_path, capsys):
    run = _lm_eval_run(tmp_path / "run", small_release, edit=_set(6, field, value))
    line = _refused(small_release, [run], capsys)
    assert "samples_" in line and "line 7" in line and expected in line, line


@pytest.mark.parametrize("value", ["abc", 12.5, None])
def test_an_inspect_sample_whose_source_id_is_not_a_whole_number_is_refused(value, small_release, tmp_path, capsys):
    ids = _ids(small_release, "random")
    log = _inspect_log(tmp_path / "logs" / "a.eval", small_release, "random",
                       metadata=lambda i: {"source_id": value if i == ids[3] else i})
    line = _refused(small_release, [log.parent], capsys)
    assert "a.eval" in line and "sample 4" in line and "source_id" in line, line


@pytest.mark.parametrize("column, value, expected", [
    ("source_id", lambda f: f["source_id"].where(f.index != 5, 12.5), "source_id"),  # read as 12 before
    ("source_id", lambda f: f["source_id"].astype(object).where(f.index != 5, "x7"), "source_id"),
    ("model", lambda f: f["model"].where(f.index != 5, ""), "model"),  # empty model cells
    ("model", lambda f: f["model"].where(f.index != 5, None), "model"),
])
def test_a_table_cell_that_is_not_a_whole_id_or_a_model_name_is_refused(column, value, expected, small_release,
                                                                         tmp_path, capsys):
    table = _table(tmp_path / "p.csv", small_release, **{column: value})
    line = _refused(small_release, [table], capsys)
    assert "p.csv" in line and "line 7" in line and expected in line, line


@pytest.mark.parametrize("score", ["inf", "-inf", ""])
def test_a_score_that_is_not_a_finite_number_is_refused(score, small_release, tmp_path, capsys):
    table = tmp_path / "scores.csv"
    ids = _ids(small_release, "random")
    text = "model,config,source_id,score\n" + "".join(f"a,random,{i},{0.5 if n != 2 else score}\n"
                                                      for n, i in enumerate(ids))
    table.write_text(text)
    line = _refused(small_release, [table], capsys)
    assert "scores.csv" in line and "line 4" in line and "score" in line, line


@pytest.mark.parametrize("prediction", ["1.7", "-0.4", "-1", "3"])
def test_a_prediction_that_is_not_a_class_is_refused(prediction, small_release, tmp_path, capsys):
    ids = _ids(small_release, "random")
    table = tmp_path / "preds.csv"
    table.write_text("model,config,source_id,prediction\n" + "".join(
        f"a,random,{i},{'entailment' if n != 1 else prediction}\n" for n, i in enumerate(ids)))
    line = _refused(small_release, [table], capsys)
    assert "preds.csv" in line and "line 3" in line and repr(prediction) in line, line


def test_class_ids_are_read_as_whole_numbers_and_fractions_are_refused(small_release, tmp_path):
    ids = _ids(small_release, "random")
    released = Released(small_release).table("random", "test", columns=["source_id", "label"]).to_pandas()
    gold = dict(zip(released["source_id"], released["label"]))
    predictions = [gold[i] if n % 4 else (gold[i] + 1) % 3 for n, i in enumerate(ids)]
    table = tmp_path / "preds.csv"
    table.write_text("model,config,source_id,prediction\n" + "".join(
        f"a,random,{i},{float(p) if n % 2 else p}\n" for n, (i, p) in enumerate(zip(ids, predictions))))
    (row,) = report(small_release, [str(table)], n_resamples=0).results.itertuples()
    assert row.value == np.mean([p == gold[i] for i, p in zip(ids, predictions)]) and row.n == len(ids)
    table.write_text(table.read_text().replace(f",{float(predictions[1])}\n", ",1.5\n", 1))  # 1.5 is no class
    from split_builders.evaluation.runs import RunError

    with pytest.raises(RunError, match="line 3: prediction '1.5' is not one of the labels"):
        report(small_release, [str(table)], n_resamples=0)


# -- duplicate keys -----------------------------------------------------------------------------------------------


def test_duplicate_rows_of_a_table_are_refused_with_their_count(small_release, tmp_path, capsys):
    table = _table(tmp_path / "p.csv", small_release)
    frame = pd.read_csv(table)
    twice = pd.concat([frame, frame.iloc[[3, 8]].assign(correct=1 - frame["correct"].iloc[[3, 8]])],
                      ignore_index=True)  # the same keys again, with the opposite outcome: the last won before
    twice.to_csv(table, index=False)
    line = _refused(small_release, [table], capsys)
    assert "p.csv" in line and "2 rows" in line and "line 5" in line and f"line {len(frame) + 2}" in line, line


def test_a_document_logged_twice_alike_is_read_once_with_a_note(small_release, tmp_path):
    """The same line twice (outcome and all) is one row, said in a note (issue 54: identical repeats are counted
    once; repeats with different outcomes are refused, ``test_report_intervals.py``)."""
    run = _lm_eval_run(tmp_path / "run", small_release, edit=lambda config, lines: [*lines, lines[0]])
    result = report(small_release, [run], n_resamples=0)
    (row,) = result.results.itertuples()
    assert row.n == 40 and row.complete
    (note,) = [note for note in result.notes if "outcome and all" in note]
    assert "samples_" in note and "1 row" in note and "line 1 and line 41" in note, note


# -- runs given twice, merged or left out -------------------------------------------------------------------------


def test_the_same_run_given_twice_is_refused(small_release, tmp_path, capsys):
    run = _lm_eval_run(tmp_path / "run", small_release)
    table = _table(tmp_path / "p.csv", small_release)
    for runs in ([run, run], [table, table], [run, run / "org__model"]):
        line = _refused(small_release, runs, capsys)
        assert "twice" in line, line


def test_a_second_results_file_of_one_model_is_read_once_or_refused(small_release, tmp_path, capsys):
    run = _lm_eval_run(tmp_path / "run", small_release, configs=("random", "ll_split"))
    _lm_eval_run(tmp_path / "run", small_release, configs=("random",), time="2026-01-02T00-00-00")  # the same again
    result = report(small_release, [str(run)], n_resamples=0)
    assert result.models == ["org/model"] and len(result.results) == 2, result.results
    assert any("read once" in note for note in result.notes), result.notes
    # a second run of the model with other outcomes is refused: which of them is the model's is the user's to say
    _lm_eval_run(tmp_path / "run", small_release, configs=("random",), time="2026-01-03T00-00-00",
                 edit=_set(0, "acc", 1.0 - _outcome(_ids(small_release, "random")[0])))
    line = _refused(small_release, [run], capsys)
    assert "org/model" in line and "2026-01-03" in line and "random" in line, line


def test_two_models_logs_under_one_name_are_refused(small_release, tmp_path, capsys):
    logs = tmp_path / "logs"
    _inspect_log(logs / "a.eval", small_release, "random", model="mockllm/a")
    _inspect_log(logs / "b.eval", small_release, "random", model="mockllm/b")
    line = _refused(small_release, [f"{logs}=mine"], capsys)
    assert "2 models" in line and "=NAME" in line, line
    # one model's logs of two configs under a name are one run
    logs = tmp_path / "one"
    _inspect_log(logs / "a.eval", small_release, "random", model="mockllm/a")
    _inspect_log(logs / "b.eval", small_release, "ll_split", model="mockllm/a")
    result = report(small_release, [f"{logs}=mine"], n_resamples=0)
    assert result.models == ["mine"] and len(result.results) == 2


def test_inspect_logs_beside_an_lm_eval_run_are_read(small_release, tmp_path):
    run = _lm_eval_run(tmp_path / "runs", small_release)
    _inspect_log(run / "inspect" / "a.eval", small_release, "ll_split", model="mockllm/b")
    result = report(small_release, [str(run)], n_resamples=0)
    table = result.results.set_index(["model", "config"])
    assert set(table.index) == {("org/model", "random"), ("mockllm/b", "ll_split")}
    ids = _ids(small_release, "ll_split")
    assert table.loc[("mockllm/b", "ll_split"), "value"] == np.mean([_outcome(i) for i in ids])


# -- refusals that name the real problem --------------------------------------------------------------------------


def test_right_rows_under_the_wrong_split_name_the_split_column(small_release, tmp_path, capsys):
    table = _table(tmp_path / "p.csv", small_release, split="validation")
    line = _refused(small_release, [table], capsys)
    assert "split" in line and "test" in line and "give the release it was run on" not in line, line


def test_a_cancelled_log_without_samples_says_so(small_release, tmp_path, capsys):
    log = _inspect_log(tmp_path / "logs" / "a.eval", small_release, "random", status="cancelled")
    line = _refused(small_release, [log.parent], capsys)
    assert "cancelled" in line and "a.eval" in line and "is of the release's tasks" not in line, line


# -- the release, the options -------------------------------------------------------------------------------------


def test_a_release_with_a_data_file_deleted_is_one_line_as_verify_says_it(small_release, tmp_path, capsys):
    release = tmp_path / "release"
    shutil.copytree(small_release, release)
    (missing,) = (release / "ll_split").glob("validation-*.parquet")
    missing.unlink()
    table = _table(tmp_path / "p.csv", release)
    capsys.readouterr()
    assert main(["verify", str(release)]) != 0
    said = capsys.readouterr()
    assert f"ll_split/{missing.name}: the card lists data files that do not exist" in said.out + said.err
    line = _refused(release, [table], capsys)  # the same file named, and verify to list the rest (not an Arrow error)
    assert f"the data file ll_split/{missing.name} of ll_split/validation is missing" in line, line
    assert "resplit verify" in line and "rebuild the release" in line, line


@pytest.mark.parametrize("option, value, expected", [
    ("--bootstrap-iters", "1", "--bootstrap-iters must be 0"), ("--bootstrap-iters", "39", "at least 40"),
    ("--bootstrap-iters", "-1", "--bootstrap-iters must be 0"), ("--confidence", "1", "--confidence must be"),
    ("--confidence", "0", "--confidence must be"), ("--confidence", "nan", "--confidence must be"),
])
def test_resamples_and_confidence_that_cannot_give_an_interval_are_refused(option, value, expected, small_release,
                                                                            tmp_path, capsys):
    line = refused_in_one_line(["report", str(small_release), str(tmp_path / "no-such-run"), option, value], capsys,
                               small_release)
    assert expected in line and "no such file" not in line, line


def test_a_bad_iid_is_refused_before_any_run_is_read(family_releases, small_release, tmp_path, capsys):
    behavioural = family_releases["behavioural"]
    line = refused_in_one_line(["report", str(behavioural), str(tmp_path / "no-such-run"), "--iid", "nope"], capsys,
                               behavioural)
    assert "--iid nope" in line, line
    line = refused_in_one_line(["report", str(small_release), str(tmp_path / "no-such-run"), "--iid", "random"],
                               capsys, small_release)
    assert "--iid random" in line and "G-scores" in line, line


# -- CURRICULUM's Matthews correlation ----------------------------------------------------------------------------


@pytest.mark.parametrize("pair", [[-1, 0], [0, -3], [0, 1.5], [None, 1], [0, 7]])
def test_an_edited_curriculum_log_whose_classes_are_not_class_ids_is_one_line(pair, family_releases, tmp_path,
                                                                              capsys):
    release = family_releases["curriculum"]
    run = _lm_eval_run(tmp_path / "run", release, configs=("verbnet",), metric="mcc", split="validation",
                       edit=_set(2, "mcc", pair))
    line = _refused(release, [run], capsys)
    assert "samples_" in line and "line 3" in line and "mcc" in line, line


# -- the concurrence bootstrap: one rank computation per resample for every pair ----------------------------------


def test_kendall_resamples_equal_scipys_tau_b_for_every_pair_and_resample():
    from scipy.stats import kendalltau

    from split_builders.metric_folders import metric_module

    metric = metric_module("concurrence", "concurrence")
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, (6, 5)) / 4  # ties within a benchmark, and resamples that draw a model twice
    picks = rng.integers(0, 5, (60, 5))
    taus = metric.kendall_resamples(scores, picks)
    for r, pick in enumerate(picks):
        for i in range(6):
            for j in range(i + 1, 6):
                expected = kendalltau(scores[i, pick], scores[j, pick]).statistic
                assert taus[r, i, j] == expected or (np.isnan(expected) and np.isnan(taus[r, i, j])), (r, i, j)


def test_the_concurrence_bootstrap_calls_scipy_once_per_pair_not_per_resample(monkeypatch):
    from scipy import stats

    from split_builders.metric_folders import metric_module

    metric = metric_module("concurrence", "concurrence")
    rng = np.random.default_rng(3)
    benchmarks, models, resamples = 6, 4, 100
    scores = np.round(rng.random((benchmarks, models)), 1)
    rows = [(f"m{m}", f"b{b}", scores[b, m]) for b in range(benchmarks) for m in range(models)]
    expected_picks = np.random.default_rng(5).integers(0, models, size=(resamples, models))
    expected = {}  # the interval of each pair from scipy's tau-b of every resample, computed here
    for i in range(benchmarks):
        for j in range(i + 1, benchmarks):
            values = np.array([stats.kendalltau(scores[i, p], scores[j, p]).statistic for p in expected_picks])
            values = values[~np.isnan(values)]
            expected[f"b{i}|b{j}"] = list(np.quantile(values, [0.025, 0.975]))
    calls = []
    kendalltau = stats.kendalltau
    monkeypatch.setattr(stats, "kendalltau", lambda *a, **k: calls.append(1) or kendalltau(*a, **k))
    model, benchmark, score = ([row[k] for row in rows] for k in range(3))
    result = metric.compute_concurrence(model, benchmark, [None] * len(rows), score, n_bootstrap=resamples,
                                        random_state=5)
    pairs = benchmarks * (benchmarks - 1) // 2
    assert len(calls) == pairs + benchmarks  # the point values (the diagonal too); the resamples are ranked at once
    assert result["confidence_interval"].keys() == expected.keys()
    for key, interval in expected.items():
        assert result["confidence_interval"][key] == pytest.approx(interval, abs=1e-12), key


def test_an_interval_level_is_printed_as_given(small_release, tmp_path):
    table = _table(tmp_path / "p.csv", small_release)
    result = report(small_release, [str(table)], n_resamples=2000, confidence=0.999)
    assert "Results per config (99.9% intervals)" in result.lines()  # not "100%"
    assert "99.9% percentile bootstrap" in result.markdown()


def test_a_hub_revision_the_release_cannot_be_compared_with_is_said(small_release, tmp_path):
    """A task run on a Hub revision of a release that records none cannot be checked against it: a note says so
    (it was passed over in silence); a revision the release records and the run's differ is still refused."""
    run = _lm_eval_run(tmp_path / "runs", small_release)
    results = next(run.rglob("results_*.json"))
    document = json.loads(results.read_text(encoding="utf-8"))
    for task in document["configs"].values():
        task["dataset_kwargs"]["revision"] = "v1.0.0"
    results.write_text(json.dumps(document), encoding="utf-8")
    assert read_card(small_release)[0].get("resplit", {}).get("revision") is None
    notes = report(small_release, [str(run)], n_resamples=0).notes
    assert any("revision v1.0.0" in note and "not checked" in note for note in notes), notes
