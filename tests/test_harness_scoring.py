"""Every family's exported harness tasks scored by lm-evaluation-harness itself, with models that know the answer.

One release per registered family (the session's ``family_releases``, read only: the tasks are exported into a
temporary folder, where the harness writes its byte-code beside ``utils.py``) and a small CheckList SQuAD release
(answers as text: generation tasks); their groups run through ``lm_eval.evaluator.evaluate`` with two stand-in
language models (``lm_eval.api.model.LM`` subclasses, registered with the harness's model registry):

- an oracle that answers each document from its gold choice or target, as a causal LM writes it: a leading space,
  then a newline and more text after the answer (``" Indonesian\\nQuestion: ..."``); for multiple choice, the gold
  choice (preceded by a space, the target delimiter) is the one most likely;
- a model that always prefers the first choice and generates a newline alone (what a zero-shot causal LM writes
  first; the answer is then empty).

The oracle must score 1.0 on every task and metric (accuracy, exact match, Matthews correlation), the constant
models at most the share of the first class (chance) and 0 exact match. Nothing here knows a family: the gold
answer is what the task's own ``doc_to_target`` / ``doc_to_choice`` say.
"""

from __future__ import annotations

import pytest
import yaml

from split_builders.cli import main
from split_builders.publishing.export import export_lm_eval

pytest.importorskip("lm_eval", reason="lm-evaluation-harness is a test extra (pip install resplit[test])")

LIMIT = 6  # the first documents of each task (``--limit``; the harness's ``samples`` would decode every document)


@pytest.fixture(scope="module")
def exported(family_releases, shared, tmp_path_factory):
    """``{name: (release folder, Exported)}``: every family's release and a CheckList SQuAD release, each
    exported into a temporary folder (the releases' own ``lm_eval/``, written by their builds, hold the same
    tasks but for the path to the release)."""
    root = tmp_path_factory.mktemp("harness-scoring")
    out = {family: family_releases[family] for family in family_releases}
    squad = root / "squad"
    assert main(["behavioural", "--source", str(shared / "data" / "checklist" / "squad_suite.json.gz"), "--limit", "4",
                 "--functionalities", "0,1,9", "--capabilities", "Vocabulary", "--null-splits", "0",
                 "--out", str(squad), "--no-progress"]) == 0
    out["squad"] = squad
    return {name: (folder, export_lm_eval(folder, root / "tasks" / name)) for name, folder in out.items()}


def _task_objects(exported, names=None):
    """The harness's TaskDict of every exported group (or of the tasks ``names``)."""
    from lm_eval.tasks import TaskManager

    # include_defaults=False: the harness's own tasks are not indexed (seconds), and names cannot collide with them
    manager = TaskManager(include_path=[str(result.folder) for _, result in exported.values() if result.tasks],
                          include_defaults=False)
    return manager.load(names or [group for _, result in exported.values() if result.tasks
                                  for group in (result.group, *result.groups)])  # auxiliary groups too


def _gold(task, doc) -> str:
    """The answer a task's own configuration gives for a document: its target, or its gold choice."""
    target = task.doc_to_target(doc)
    if task.OUTPUT_TYPE == "multiple_choice":
        choices = task.doc_to_choice(doc)
        return choices[target] if isinstance(target, int) else str(target)
    return str(target[0] if isinstance(target, list) else target)


def _models(tasks):
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    class Oracle(LM):
        """Answers from each document's gold choice or target, formatted as a causal LM writes it."""

        def loglikelihood(self, requests):
            return [(0.0, True) if continuation == " " + _gold(tasks[r.task_name], r.doc) else (-10.0, False)
                    for r in requests for continuation in [r.args[1]]]

        def loglikelihood_rolling(self, requests):
            return [0.0 for _ in requests]

        def generate_until(self, requests):
            return [f" {_gold(tasks[r.task_name], r.doc)}\nQuestion: and something after the answer" for r in requests]

    class FirstChoice(Oracle):
        """Always the first choice; a newline alone as the generation."""

        def loglikelihood(self, requests):
            choices = {}
            for r in requests:  # the first continuation of each document is its first choice
                choices.setdefault((r.task_name, r.doc_id), r.args[1])
            return [(0.0, True) if choices[(r.task_name, r.doc_id)] == r.args[1] else (-10.0, False) for r in requests]

        def generate_until(self, requests):
            return ["\n" for _ in requests]

    for name, model in (("resplit-oracle", Oracle), ("resplit-first-choice", FirstChoice)):
        try:
            register_model(name)(model)
        except (AssertionError, ValueError):  # registered by an earlier run in this process
            pass
    return Oracle(), FirstChoice()


def _first_docs(tasks) -> dict:
    """``{task: its first LIMIT evaluation documents}`` (read once: ``eval_docs`` processes the split at every
    access)."""
    docs = {}
    for name, task in tasks.items():
        every = task.eval_docs
        docs[name] = [every[i] for i in range(min(LIMIT, len(every)))]
    return docs


def _evaluate(lm, task_dict):
    from lm_eval.evaluator import evaluate

    return evaluate(lm, task_dict, limit=LIMIT, bootstrap_iters=0, log_samples=False, verbosity="ERROR")["results"]


def test_every_family_scores_one_with_the_gold_answer_and_chance_or_zero_without(exported, harness_cache):
    task_dict = _task_objects(exported)
    tasks = task_dict["tasks"] if "tasks" in task_dict else task_dict
    tasks = {name: task for name, task in tasks.items() if hasattr(task, "doc_to_target")}
    names = {task for _, result in exported.values() for task in result.tasks.values()}
    assert names and names <= set(tasks), names - set(tasks)
    kinds = {tasks[name].OUTPUT_TYPE for name in names}
    assert kinds == {"multiple_choice", "generate_until"}, kinds
    oracle, first = _models(tasks)
    docs = _first_docs(tasks)

    scored = _evaluate(oracle, task_dict)
    for name in names:
        metrics = {k: v for k, v in scored[name].items() if "," in k and "_stderr" not in k}
        assert metrics, name
        task = tasks[name]
        classes = {_gold(task, doc) for doc in docs[name]}
        for key, value in metrics.items():  # Matthews correlation is 0 where the documents hold one class only
            assert value == pytest.approx(1.0 if key != "mcc,none" or len(classes) > 1 else 0.0), (name, key, value)
        if tasks[name].OUTPUT_TYPE == "generate_until":
            assert set(metrics) == {"exact_match,first_line"}, (name, metrics)
    for name, (folder, result) in exported.items():
        if result.tasks:  # the group row: one per metric (aggregate_metric_list)
            group = scored[result.group]
            assert any(k.startswith(("acc,", "exact_match,")) and v == pytest.approx(1.0) for k, v in group.items()), (
                name, group)

    scored = _evaluate(first, task_dict)
    for name in names:
        task = tasks[name]
        metrics = {k: v for k, v in scored[name].items() if "," in k and "_stderr" not in k}
        if task.OUTPUT_TYPE == "generate_until":
            assert metrics["exact_match,first_line"] == 0.0, (name, metrics)
            continue
        firsts = sum(task.doc_to_choice(d)[0] == _gold(task, d) for d in docs[name]) / len(docs[name])
        assert metrics["acc,none"] <= firsts + 1e-9, (name, metrics, firsts)  # no better than its first class
        if "mcc,none" in metrics:
            assert metrics["mcc,none"] == pytest.approx(0.0), (name, metrics)


def test_curriculums_default_group_scores_each_phenomenon_once_and_inoculation_is_a_group_of_its_own(
        exported, harness_cache):
    """CURRICULUM's release (one phenomenon, the default inoculation sizes): the group a user runs holds one task per
    non-inoculation config, each evaluation split once; the ``<phenomenon>_inoc_<n>`` tasks, whose evaluation split
    is the phenomenon's validation split again, are the group ``curriculum_inoculation``; both run in the harness."""
    folder, result = exported["curriculum"]
    card = yaml.safe_load((folder / "README.md").read_text().split("---\n", 2)[1])
    configs = [c["config_name"] for c in card["configs"]]
    inoculation = [c for c in configs if "_inoc_" in c]
    assert len(inoculation) == 5 and set(result.tasks) == set(configs)  # verbnet_inoc_10 ... _1000
    assert result.groups == {"curriculum_inoculation": [result.tasks[c] for c in inoculation]}
    assert result.default_tasks == [result.tasks[c] for c in configs if c not in inoculation]
    group = yaml.load((result.folder / "_curriculum.yaml").read_text().split("\n", 1)[1], Loader=_AnyTag)
    assert group["task"] == result.default_tasks
    assert "_curriculum_inoculation.yaml" in group["metadata"]["resplit_files"]
    loaded = {name: _task_objects(exported, [name]) for name in (result.group, *result.groups)}
    oracle, _ = _models({task: obj for d in loaded.values() for task, obj in d["tasks"].items()})
    default = _evaluate(oracle, loaded[result.group])
    assert set(loaded[result.group]["tasks"]) == set(result.default_tasks)
    assert {name for name in default if name != result.group} == set(result.default_tasks)
    evaluation = {yaml.load((result.folder / f"{c}.yaml").read_text().split("\n", 1)[1], Loader=_AnyTag)["test_split"]
                  for c in configs if c not in inoculation}
    assert evaluation == {"validation"}  # the phenomenon's validation split, scored once (and hypothesis-only)
    inoculated = _evaluate(oracle, loaded["curriculum_inoculation"])
    assert {name for name in inoculated if name != "curriculum_inoculation"} == set(
        result.groups["curriculum_inoculation"])
    assert inoculated["curriculum_inoculation"]["acc,none"] == pytest.approx(1.0)


def test_one_task_per_family_runs_on_the_real_smollm2(exported, harness_cache):
    """The real default LM (SmolLM2-135M-Instruct, converted into resplit's cache) through the harness's own
    ``hf`` model, on the first task of every family and of the SQuAD suite, one document each (two took twice the
    time: the model's forward passes over the few-shot prompts are the test's cost): every task reports its metrics
    within their range, and every answer a generation task keeps is a non-empty line (the first-line filter finds
    the answer in what a real causal LM writes after the few-shot prompt)."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from split_builders.signals.lm.models import ensure_local, resolve_model

    firsts = {name: next(iter(result.tasks.values())) for name, (_, result) in exported.items() if result.tasks}
    assert set(firsts) >= {"likelihood", "tmcd", "mcd", "pvi", "curriculum", "behavioural", "squad"}, firsts
    manager = TaskManager(include_path=[str(result.folder) for _, result in exported.values() if result.tasks],
                          include_defaults=False)
    model = HFLM(pretrained=str(ensure_local(resolve_model(None))), device="cpu", dtype="float32", batch_size=8)
    run = lm_eval.simple_evaluate(model=model, tasks=sorted(firsts.values()), task_manager=manager, limit=1,
                                  gen_kwargs="max_gen_toks=16", bootstrap_iters=0, log_samples=True,
                                  verbosity="ERROR")
    generated = 0
    for family, task in firsts.items():
        metrics = {k: v for k, v in run["results"][task].items() if "," in k and "_stderr" not in k}
        assert metrics, (family, task)
        for key, value in metrics.items():
            low = -1.0 if key.startswith("mcc,") else 0.0  # Matthews correlation lies in [-1, 1]
            assert low <= value <= 1.0, (family, key, value)
        for sample in run["samples"][task]:
            assert "source_id" in sample["doc"], (family, task)  # every logged document joins back to its row
            if "exact_match" in sample:  # a generation task: the kept answer is the first line, never empty
                generated += 1
                assert isinstance(sample["filtered_resps"][0], str) and sample["filtered_resps"][0].strip(), sample
    assert generated >= 3  # tmcd, mcd and the SQuAD suite, one document each


def test_every_config_with_an_evaluation_split_has_a_task_or_a_reason_in_the_card(exported):
    for name, (folder, result) in exported.items():
        card = yaml.safe_load((folder / "README.md").read_text().split("---\n", 2)[1])
        configs = [c["config_name"] for c in card["configs"]]
        assert set(result.tasks) | set(result.skipped) == set(configs), name
        body = (folder / "README.md").read_text().split("---\n", 2)[2]
        section = body.split("## Evaluating with lm-evaluation-harness", 1)[1].split("\n## ", 1)[0]
        for config, reason in result.skipped.items():
            assert f"`{config}`" in section and reason in section, (name, config)
        if result.tasks:
            assert f"--tasks {result.group}" in section
        if "generate_until" in result.kinds.values():  # few-shot by default, said in the task and the card
            assert "few-shot by default" in section
            task = yaml.load((folder / "lm_eval" / f"{next(c for c, k in result.kinds.items() if k == 'generate_until')}"
                                                    ".yaml").read_text().split("\n", 1)[1], Loader=_AnyTag)
            assert task["num_fewshot"] >= 1 and "\n" not in task["generation_kwargs"]["until"]
    # the CheckList SQuAD suite's INV configs: compared with each other's predictions, no harness task
    squad = exported["squad"][1]
    assert "type_INV" in squad.skipped and "INV and DIR" in squad.skipped["type_INV"]
    assert squad.kinds["type_MFT"] == "generate_until"


class _AnyTag(yaml.SafeLoader):
    """Reads ``!function`` as its text."""


_AnyTag.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))

