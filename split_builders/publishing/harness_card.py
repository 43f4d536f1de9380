"""What the lm-evaluation-harness export (:mod:`split_builders.publishing.export`) wrote (:class:`Exported`) and
what the card and the terminal say of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

NUM_FEWSHOT = 5  # the default number of few-shot examples of a generation task


@dataclass
class Exported:
    """What :func:`export_lm_eval` wrote: the files, the default group, every task (``{config: task}``), the
    auxiliary groups (``groups``: ``{group: [task, ...]}``, tasks outside the default group, and
    ``group_configs``: ``{group: the config patterns the method declares for it}``), the configs it skipped
    (``{config: reason}``), where the tasks read the release (``dataset_path`` and ``revision``; None: the local
    folder), the output type of each task (``kinds``), the harness kind the release declares (``harness``:
    ``classification``, ``multiple_choice`` or ``generation``), the metrics and the files of others it left in
    place."""

    folder: Path
    group: str
    paths: list = field(default_factory=list)
    tasks: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    dataset_path: str | None = None
    revision: str | None = None
    kinds: dict = field(default_factory=dict)
    kept: list = field(default_factory=list)
    metrics: list = field(default_factory=list)
    groups: dict = field(default_factory=dict)
    group_configs: dict = field(default_factory=dict)
    harness: str | None = None

    @property
    def default_tasks(self) -> list:
        """The tasks of the default group (every task outside the auxiliary groups), in config order."""
        auxiliary = {task for tasks in self.groups.values() for task in tasks}
        return [task for task in self.tasks.values() if task not in auxiliary]


def card_lines(exported: Exported) -> list[str]:
    """The card's harness section: the group and how to run it, where the tasks read the release, how each
    kind of task is scored, and every config without a task with the reason."""
    lines = ["## Evaluating with lm-evaluation-harness", ""]
    if exported.tasks:
        where = (f"the Hub repository `{exported.dataset_path}` at revision `{exported.revision}`"
                 if exported.dataset_path and exported.revision else f"`{exported.dataset_path}`"
                 if exported.dataset_path else "this folder, each data file pinned by its sha256 (a task refuses a "
                                               "folder that holds another version of the release)")
        bootstrap = ""
        run = "lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks "
        default = exported.default_tasks
        lines += [f"`lm_eval/` holds one task per config (`{exported.group}_<config>`); the group `{exported.group}`, "
                  f"the one to run, holds {_tasks(default, exported.tasks)} and its row averages each metric over "
                  f"them. The tasks read {where}.", "", "```bash", f"{run}{exported.group}{bootstrap}", "```", "",
                  "With `--output_path runs/MODEL --log_samples` added, `resplit report . runs/MODEL` reads the run "
                  "back by `source_id`: per config the metric with its interval, and the gap to the baseline config.",
                  ""]
        for name, members in exported.groups.items():
            patterns = ", ".join(f"`{p}`" for p in exported.group_configs.get(name, ()))
            lines += [f"The tasks of the configs {patterns} ({len(members)}) are not in `{exported.group}` but in a "
                      f"group of their own, `{name}`, run only when named:", "", "```bash", f"{run}{name}{bootstrap}",
                      "```", ""]
        if "mcc" in exported.metrics:
            lines += ["`mcc` is aggregated by the release's own `utils.matthews_corrcoef` (scikit-learn's), so the "
                      "harness gives it no standard error (it would bootstrap one with 100,000 resamples per task, "
                      "minutes over a group); `resplit report RELEASE RUN` gives intervals from the logged samples.",
                      ""]
        kinds = set(exported.kinds.values())
        if exported.harness == "multiple_choice":  # CheckList test cases
            lines += ["CheckList tasks have one document per example of the test cases whose expectation judges a "
                      "prediction on its own, and every document keeps its test case: `source_id` (the test case's), "
                      "`example` (the example's 0-based index in it), `functionality`, `capability` and `test_type`, "
                      "so that samples logged with `--log_samples` can be scored as CheckList scores them: a test "
                      "case passes when all its scored examples pass."
                      + (" Where the labels are classes, the suite's class names are the choices and accuracy (`acc`, "
                         "the only metric) is 1 where the most likely class passes the test case's expectation "
                         "(`eq`, `pred_not_equal`, `allow_for_neutral`)." if "multiple_choice" in kinds else ""), ""]
        elif "multiple_choice" in kinds:
            metrics = sorted({m for m in exported.metrics if m not in ("acc", "acc_norm", "exact_match")})
            extra = {"mcc": "Matthews correlation (`mcc`)"}
            lines += ["Classification tasks score the label's class names, in class order, as the choices: accuracy "
                      "(`acc`, `acc_norm`)" + "".join(f" and {extra.get(m, f'`{m}`')}" for m in metrics) + ".", ""]
        if "generate_until" in kinds:
            lines += [f"Generation tasks are few-shot by default ({NUM_FEWSHOT} examples from train; `--num_fewshot` "
                      "changes it): zero-shot, a causal LM's first line is rarely an answer. The answer is the first "
                      "non-empty line of the generation, stripped (filter `first_line`); `exact_match` compares it "
                      "with the target (programs with whitespace normalised; CheckList answers as their test case's "
                      "expectation says, `squad_clean_eq` with CheckList's SQuAD cleaning).", ""]
    else:
        lines += ["No config has an lm-evaluation-harness task.", ""]
    if exported.skipped:
        reasons = {}
        for config, reason in exported.skipped.items():
            reasons.setdefault(reason, []).append(f"`{config}`")
        lines += ["Configs without a task:", ""]
        lines += [f"- {', '.join(configs)}: {reason}." for reason, configs in reasons.items()]
        lines.append("")
    return lines


def _tasks(members: list, tasks: dict) -> str:
    """``"every task"``, or how many of them."""
    return "every task" if len(members) == len(tasks) else f"{len(members)} of the {len(tasks)} tasks"


def describe(exported: Exported) -> list[str]:
    """Lines for the terminal: where the tasks are, how to run them, and the configs skipped and why."""
    lines = []
    if exported.tasks:
        source = (f"{exported.dataset_path} at revision {exported.revision}" if exported.dataset_path and exported.revision
                  else f"dataset_path {exported.dataset_path}" if exported.dataset_path
                  else "the release folder, each data file pinned by its sha256"
                       + (f" (revision {exported.revision})" if exported.revision else ""))
        lines += [f"wrote {len(exported.tasks)} lm-evaluation-harness task(s) to {exported.folder} (group "
                  f"{exported.group}; data from {source})",
                  *(f"  {task}" for task in exported.tasks.values()),
                  f"run them with: lm_eval --model hf --model_args pretrained=MODEL --include_path {exported.folder} "
                  f"--tasks {exported.group}"]
        for name, members in exported.groups.items():
            lines.append(f"the tasks of {', '.join(exported.group_configs.get(name, ()))} ({len(members)}) are in their "
                         f"own group, {name}, not in {exported.group}: --tasks {name} runs them")
        if "generate_until" in exported.kinds.values():
            lines.append(f"generation tasks are {NUM_FEWSHOT}-shot by default (zero-shot, a first line is rarely an "
                         "answer); --num_fewshot changes it")
    for config, reason in exported.skipped.items():
        lines.append(f"skipped {config}: {reason}")
    if exported.kept:
        shown = ", ".join(exported.kept[:5]) + (f" and {len(exported.kept) - 5} more" if len(exported.kept) > 5 else "")
        lines.append(f"left {len(exported.kept)} file(s) resplit did not write as they were: {shown}")
    if not exported.tasks:
        lines.append("no config fits a harness task: nothing written")
    return lines
