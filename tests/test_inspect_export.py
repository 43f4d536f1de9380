"""inspect-ai tasks in every release (``inspect_tasks.py``, ``eval.yaml``), run by inspect-ai's own ``eval()``.

Over the registry: every family's example release carries one inspect-ai task per config that has an
lm-evaluation-harness task; inspect-ai's ``mockllm`` model answering each sample's gold answer scores 1.0 on
every one of them, and a constant answer scores what an independent count of the samples says (the share of the
first class, or 0 for a generation). ``eval.yaml`` is read by inspect-ai's own Hub-task loader (its download and
dataset calls pointed at the local folder) and scored the same way. Bad input: a file of the user's in the way,
a damaged release, a bad revision: one line, nothing changed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from split_builders.registry import registry

LIMIT = 12  # samples per task: enough to see every kind of sample, few enough for the whole registry


def _copy(release: Path, tmp_path: Path) -> Path:
    """A copy to run in (inspect-ai imports the task file, and Python caches its byte code beside it)."""
    folder = tmp_path / release.name
    shutil.copytree(release, folder)
    return folder


def _output(text: str):
    from inspect_ai.model import ModelOutput, ModelUsage

    output = ModelOutput.from_content("mockllm", text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer download
    return output


def _module(folder: Path):
    spec = importlib.util.spec_from_file_location(f"inspect_tasks_{abs(hash(folder))}", folder / "inspect_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _text(messages) -> str:
    return "\n".join(message.text for message in messages)


def _oracle(samples: list):
    """A model that answers each sample's gold answer: the target letter (as ``ANSWER: X``) where the sample has
    choices, else the target text; found by the sample's input, which the prompt contains."""
    answers = sorted(((s.input, f"ANSWER: {s.target}" if s.choices else s.target) for s in samples),
                     key=lambda pair: -len(pair[0]))

    def answer(messages, *args):
        text = _text(messages)
        found = [reply for prompt, reply in answers if prompt in text]
        assert found, f"no sample's input is in the prompt {text[:200]!r}"
        return _output(found[0])

    return answer


def _run(folder: Path, configs: list, model_args: dict, tmp_path: Path) -> dict:
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval([f"{folder / 'inspect_tasks.py'}@{name}" for name in configs], model="mockllm/model",
                        model_args=model_args, log_dir=str(tmp_path / "logs"), display="none", limit=LIMIT,
                        max_tasks=4)
    results = {}
    for log in logs:
        assert log.status == "success", log.error
        config = log.eval.metadata["resplit"]["config"]
        results[config] = (log.results.scores[0].metrics, log)
    return results


def _passes_first_class(meta: dict) -> bool:
    """CheckList's rule (data/checklist/SPEC.md) for the prediction "0", written out independently."""
    expectation, answer, ruled_out = meta["expectation"], meta["answer"], meta["ruled_out"]
    if expectation == "pred_not_equal":
        return ruled_out != "0"
    if expectation == "allow_for_neutral" and answer == "1":
        return True
    return answer == "0"


class OracleAndConstant:
    """Per family, its release's inspect-ai tasks run twice (in a copy): by the oracle (each sample's gold answer)
    and by a constant answer (``ANSWER: A``), each into its own log folder. Run when a test first asks for a family
    and kept for the module: the oracle test and the report test read the same two runs of the likelihood release."""

    def __init__(self, family_releases, root: Path):
        self.family_releases, self.root, self.runs = family_releases, root, {}

    def __getitem__(self, family: str) -> SimpleNamespace:
        if family not in self.runs:
            work = self.root / family
            work.mkdir()
            folder = _copy(self.family_releases[family], work)
            module = _module(folder)
            configs = sorted(module.TASKS)
            samples = {config: list(module._task(config).dataset)[:LIMIT] for config in configs}
            everything = [sample for config in configs for sample in samples[config]]
            gold = _run(folder, configs, {"custom_outputs": _oracle(everything)}, work / "gold")
            constant = _run(folder, configs, {"custom_outputs": lambda *args: _output("ANSWER: A")}, work / "constant")
            self.runs[family] = SimpleNamespace(folder=folder, module=module, configs=configs, samples=samples,
                                                everything=everything, gold=gold, constant=constant,
                                                gold_logs=work / "gold" / "logs", constant_logs=work / "constant" / "logs")
        return self.runs[family]


@pytest.fixture(scope="module")
def oracle_and_constant(family_releases, tmp_path_factory) -> OracleAndConstant:
    return OracleAndConstant(family_releases, tmp_path_factory.mktemp("inspect-runs"))


@pytest.mark.parametrize("family", sorted(registry()))
def test_gold_answers_score_one_and_constant_answers_score_chance(family, family_releases, oracle_and_constant):
    release = family_releases[family]
    lm_tasks = sorted(p.stem for p in (release / "lm_eval").glob("[!_]*.yaml")) if (release / "lm_eval").is_dir() else []
    if not lm_tasks:
        assert not (release / "inspect_tasks.py").exists()
        return
    runs = oracle_and_constant[family]  # the tasks of a copy, run by the oracle and by a constant answer
    module, configs, samples, everything = runs.module, runs.configs, runs.samples, runs.everything
    assert configs == lm_tasks  # a task exactly where the harness has one
    for sample in everything:
        assert "source_id" in sample.metadata  # every sample keeps its row
    gold = runs.gold
    for config in configs:
        metrics, log = gold[config]
        assert metrics["accuracy"].value == 1.0, (family, config)
        assert len(log.samples) == len(samples[config])
        ids = {s.metadata["source_id"] for s in log.samples}
        assert ids == {s.metadata["source_id"] for s in samples[config]}
        if "mcc" in metrics:
            assert metrics["mcc"].value == pytest.approx(1.0) or len({s.target for s in samples[config]}) == 1
    constant = runs.constant
    for config in configs:
        metrics, _ = constant[config]
        chosen = samples[config]
        if module.TASKS[config]["kind"] == "choice":
            expected = sum(s.target == "A" for s in chosen) / len(chosen)
        elif module.TASKS[config]["kind"] == "behavioural_choice":
            expected = sum(_passes_first_class(s.metadata) for s in chosen) / len(chosen)
        else:
            expected = 0.0
        assert metrics["accuracy"].value == pytest.approx(expected), (family, config)


@pytest.mark.parametrize("family", sorted(registry()))
def test_eval_yaml_runs_through_inspects_own_hub_loader(family, family_releases, tmp_path, monkeypatch):
    """``inspect eval hf/ORG/NAME@REV`` as inspect-ai runs it: its own loader reads ``eval.yaml`` (download and
    dataset pointed at the folder), its own solvers and scorers; gold answers score 1.0."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai._eval.task import hf as hub_tasks

    release = family_releases[family]
    if not (release / "eval.yaml").is_file():
        return
    document = yaml.safe_load((release / "eval.yaml").read_text(encoding="utf-8"))
    entries = document["tasks"]
    if not entries:
        assert "eval.yaml reads one row as one sample" in (release / "README.md").read_text(encoding="utf-8")
        return
    folder = _copy(release, tmp_path)
    real_dataset = hub_tasks.hf_dataset
    monkeypatch.setattr("huggingface_hub.hf_hub_download", lambda **kwargs: str(folder / "eval.yaml"))
    monkeypatch.setattr(hub_tasks, "verify_required_version", lambda *args: None)
    monkeypatch.setattr(hub_tasks, "hf_dataset", lambda path, revision, **kwargs: real_dataset(
        str(folder), cache_dir=str(tmp_path / "cache"), **kwargs))
    tasks = hub_tasks.task_create_from_hf("hf/org/release@v1.0.0")
    assert sorted(t.name.rsplit("/", 1)[-1] for t in tasks) == sorted(e["id"] for e in entries)
    task, entry = tasks[0], entries[0]
    rows = list(task.dataset)[:LIMIT]
    text = entry["field_spec"]["metadata"][0]
    answers = {str(s.metadata[text]): s.target for s in rows}

    def answer(messages, *args):
        prompt = _text(messages)
        found = [target for value, target in answers.items() if value in prompt]
        return _output(found[0])

    [log] = inspect_eval(task, model="mockllm/model", model_args={"custom_outputs": answer},
                         log_dir=str(tmp_path / "logs"), display="none", limit=LIMIT)
    assert log.status == "success", log.error
    assert log.results.scores[0].metrics["accuracy"].value == 1.0


def test_export_refuses_a_users_file_and_replaces_its_own(family_releases, family_args, tmp_path, capsys):
    from conftest import FAMILY_BUILD, refused_in_one_line

    from split_builders.cli import main

    folder = _copy(family_releases["likelihood"], tmp_path)
    before = (folder / "inspect_tasks.py").read_bytes()
    assert main(["export", "inspect", str(folder)]) == 0  # its own files: replaced, the same bytes
    assert (folder / "inspect_tasks.py").read_bytes() == before
    (folder / "inspect_tasks.py").write_text(before.decode() + "\n# my edit\n", encoding="utf-8")
    line = refused_in_one_line(["export", "inspect", str(folder)], capsys, folder)
    assert "inspect_tasks.py (changed since resplit wrote it)" in line
    # a build with --overwrite refuses to replace it too, by name
    assert "inspect_tasks.py (changed since resplit wrote it)" in refused_in_one_line(
        ["likelihood", *family_args["likelihood"], *FAMILY_BUILD, "--out", str(folder), "--overwrite"], capsys, folder)
    (folder / "inspect_tasks.py").write_bytes(before)
    (folder / "eval.yaml").write_text("tasks: []\n", encoding="utf-8")  # someone else's eval.yaml
    assert "eval.yaml (not written by resplit)" in refused_in_one_line(["export", "inspect", str(folder)], capsys,
                                                                       folder)


@pytest.mark.parametrize("args, message", [
    (["--revision", "v1 0"], "is not a tag, branch or commit name"),
    (["--revision", "v9.9.9", "--dataset-path", "bad repo"], "is not a Hub id"),
    (["--dataset-path", "org/name"], "need the version they read"),
])
def test_bad_options_are_one_line(args, message, family_releases, tmp_path, capsys):
    from conftest import refused_in_one_line

    folder = _copy(family_releases["likelihood"], tmp_path)
    assert message in refused_in_one_line(["export", "inspect", str(folder), *args], capsys, folder)


def test_a_damaged_release_is_refused(family_releases, tmp_path, capsys):
    from conftest import refused_in_one_line

    folder = _copy(family_releases["likelihood"], tmp_path)
    data = sorted(folder.glob("*/test-*.parquet"))[0]
    data.write_bytes(data.read_bytes()[:-10])
    assert data.name in refused_in_one_line(["export", "inspect", str(folder)], capsys, folder)


def test_tasks_read_the_hub_at_the_pushed_revision(family_releases, tmp_path):
    """Exported for a Hub id (as ``push`` does), the tasks read that repository at that revision: no local pin."""
    from split_builders.publishing.inspect_export import export_inspect

    folder = _copy(family_releases["likelihood"], tmp_path)
    exported = export_inspect(folder, repo_id="org/snli-likelihood", revision="v1.2.0")
    module = _module(folder)
    assert module.RELEASE == {"path": "org/snli-likelihood", "revision": "v1.2.0"}
    assert all(spec["files"] is None for spec in module.TASKS.values())
    assert exported.dataset_path == "org/snli-likelihood"
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "`org/snli-likelihood` at revision `v1.2.0`" in card
    assert str(tmp_path) not in (folder / "inspect_tasks.py").read_text(encoding="utf-8")
    assert json.loads(json.dumps(module.TASKS))  # plain data
    sys.modules.pop(module.__name__, None)


# -- inspect-ai logs read back by `resplit report` ---------------------------------------------------------------


def test_report_reads_inspect_logs_and_matches_inspects_own_scores(oracle_and_constant, capsys):
    """Two models' logs on the likelihood release: the report's value per config is inspect-ai's own accuracy, its
    n the samples logged (complete: false under --limit), and the gap to the baseline config is their difference."""
    from split_builders.evaluation.report import report

    # the oracle ("gold") and the constant answer ("constant") on a copy of the release: the runs the oracle test reads
    runs = oracle_and_constant["likelihood"]
    folder, configs, gold, constant = runs.folder, runs.configs, runs.gold, runs.constant
    result = report(folder, [f"{runs.gold_logs}=gold", f"{runs.constant_logs}=constant"], n_resamples=200)
    table = result.results.set_index(["model", "config"])
    for name, runs in (("gold", gold), ("constant", constant)):
        for config, (metrics, log) in runs.items():
            row = table.loc[(name, config)]
            assert row["value"] == pytest.approx(metrics["accuracy"].value)
            assert row["n"] == len(log.samples) and not row["complete"]
    baseline = registry()["likelihood"].baseline_config
    gaps = result.gaps.set_index(["model", "config"])
    other = next(c for c in configs if c != baseline)
    assert gaps.loc[("constant", other), "difference"] == pytest.approx(
        constant[other][0]["accuracy"].value - constant[baseline][0]["accuracy"].value)
    assert any("complete: false" in note for note in result.notes)


def test_report_refuses_an_inspect_log_of_another_version(family_releases, tmp_path, capsys):
    from inspect_ai.log import read_eval_log, write_eval_log

    from conftest import refused_in_one_line

    folder = _copy(family_releases["likelihood"], tmp_path)
    config = sorted(_module(folder).TASKS)[0]
    runs = _run(folder, [config], {"custom_outputs": lambda *args: _output("ANSWER: B")}, tmp_path)
    log = read_eval_log(runs[config][1].location)
    split = log.eval.metadata["resplit"]["split"]
    log.eval.metadata["resplit"]["files"][split]["sha256"] = "0" * 64  # run on other data files
    other = tmp_path / "other"
    other.mkdir()
    write_eval_log(log, str(other / "old.eval"))
    line = refused_in_one_line(["report", str(folder), str(other)], capsys, folder)
    assert "another version of the release" in line and "old.eval" in line


def test_g_scores_match_an_independent_computation(family_releases, tmp_path):
    """BELUGA's G-score per scenario from predictions tables: the i.i.d. share of hits (``--iid``), the mean over
    functionalities of the share of passed test cases per scenario, and their harmonic mean, computed here
    without resplit from the release's own files."""
    import numpy as np
    import pandas as pd
    import pyarrow.parquet as pq

    from split_builders.evaluation.report import report
    from split_builders.publishing.export import group_name
    from split_builders.release.folder import data_files, read_card

    behavioural, iid_release = family_releases["behavioural"], family_releases["likelihood"]
    suite_group, iid_group = group_name(read_card(behavioural)[0]), group_name(read_card(iid_release)[0])
    rng = np.random.default_rng(5)
    rows, expected_suite = [], {}
    method = registry()["behavioural"]
    for config, splits in data_files(read_card(behavioural)[0]).items():
        table = pq.read_table(behavioural / splits["test"], columns=["source_id", "functionality"]).to_pandas()
        table["correct"] = rng.integers(0, 2, len(table))
        rows.append(table.assign(model="m", release=suite_group, config=config, split="test")[
            ["model", "release", "config", "split", "source_id", "correct"]])
        scenario = method.scenario(config)
        for functionality, part in table.groupby("functionality"):
            expected_suite.setdefault(scenario, {}).setdefault(functionality, []).extend(part["correct"].tolist())
    suite_table = tmp_path / "suite.csv"
    pd.concat(rows).to_csv(suite_table, index=False)
    iid_file = next((iid_release / "random").glob("test-*.parquet"))
    ids = pq.read_table(iid_file, columns=["source_id"]).column("source_id").to_pylist()
    hits = rng.integers(0, 2, len(ids))
    iid_table = tmp_path / "iid.csv"
    pd.DataFrame({"model": "m", "release": iid_group, "config": "random", "split": "test", "source_id": ids,
                  "correct": hits}).to_csv(iid_table, index=False)
    result = report([behavioural, iid_release], [str(suite_table), str(iid_table)], n_resamples=0,
                    iid=f"{iid_group}/random")
    assert result.g_scores is not None, result.notes
    g = result.g_scores.set_index("scenario")
    iid_score = hits.mean()
    means = []
    for scenario, functionalities in expected_suite.items():
        suite = np.mean([np.mean(v) for v in functionalities.values()])
        harmonic = 0.0 if suite == 0 or iid_score == 0 else 2 * suite * iid_score / (suite + iid_score)
        means.append(harmonic)
        assert g.loc[scenario, "suite_score"] == pytest.approx(suite)
        assert g.loc[scenario, "iid_score"] == pytest.approx(iid_score)
        assert g.loc[scenario, "g_score"] == pytest.approx(harmonic)
    assert g.loc["mean", "g_score"] == pytest.approx(np.mean(means))


def test_g_scores_need_iid_and_refuse_a_wrong_one(family_releases, tmp_path):
    import pandas as pd
    import pyarrow.parquet as pq

    from split_builders.errors import InvalidParameterError
    from split_builders.evaluation.report import report

    behavioural = family_releases["behavioural"]
    path = next((behavioural / "seen").glob("test-*.parquet"))
    ids = pq.read_table(path, columns=["source_id"]).column("source_id").to_pylist()
    table = tmp_path / "suite.csv"
    pd.DataFrame({"model": "m", "config": "seen", "split": "test", "source_id": ids, "correct": 1}).to_csv(table,
                                                                                                       index=False)
    result = report(behavioural, [str(table)], n_resamples=0)
    assert result.g_scores is None and any("--iid CONFIG" in note for note in result.notes)
    with pytest.raises(InvalidParameterError, match="--iid nope"):
        report(behavioural, [str(table)], n_resamples=0, iid="nope")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["likelihood", "tmcd"])
def test_smollm2_runs_through_inspects_transformers_provider(family, family_releases, tmp_path):
    """The real SmolLM2 (the project's default model) through inspect-ai's own ``hf`` provider, a few samples of
    one task (multiple choice; generation): every sample answered and scored, and the report reads the log."""
    from inspect_ai import eval as inspect_eval

    from split_builders.evaluation.report import report
    from split_builders.signals.lm.models import resolve_model

    folder = _copy(family_releases[family], tmp_path)
    config = sorted(_module(folder).TASKS)[0]
    [log] = inspect_eval(f"{folder / 'inspect_tasks.py'}@{config}", model="hf/local",
                         # greedy: the provider samples by default, and a sampled answer may be empty
                         model_args={"model_path": str(resolve_model(None).path), "device": "cpu", "do_sample": False},
                         log_dir=str(tmp_path / "logs"),
                         display="none", limit=3, max_tokens=24)
    assert log.status == "success", log.error
    assert len(log.samples) == 3 and all(s.output.completion and s.scores for s in log.samples)
    table = report(folder, [f"{tmp_path / 'logs'}=smollm2"], n_resamples=0).results
    row = table[table["config"] == config].iloc[0]
    assert row["n"] == 3 and row["value"] == pytest.approx(log.results.scores[0].metrics["accuracy"].value)


@pytest.mark.parametrize("edited", ["lm_eval", "inspect"])
def test_a_task_edited_after_export_fails_verify_and_push(edited, family_releases, tmp_path, capsys):
    """A task file changed by hand would be published as the release's own: ``verify`` says so, naming the file,
    and ``push --dry-run`` refuses; the untouched copy verifies."""
    from conftest import refused_in_one_line

    from split_builders.cli import main

    folder = _copy(family_releases["likelihood"], tmp_path)
    assert main(["verify", str(folder), "--no-load-check", "--all"]) == 0
    assert "task file(s) as resplit wrote them" in capsys.readouterr().out
    path = (sorted((folder / "lm_eval").glob("[!_]*.yaml"))[0] if edited == "lm_eval"
            else folder / "inspect_tasks.py")
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert main(["verify", str(folder), "--no-load-check"]) == 1
    out = capsys.readouterr().out
    name = path.relative_to(folder).as_posix()
    assert f"{name}" in out and "changed since resplit wrote it" in out
    line = refused_in_one_line(["push", str(folder), "org/name", "--version", "1.0.0", "--dry-run", "--license",
                                "mit"], capsys, folder)
    assert name in line
