"""inspect-ai tasks of a release: ``inspect_tasks.py`` and ``eval.yaml`` at its root.

Written by the same export as ``lm_eval/`` and from the same decision per config
(:func:`split_builders.publishing.export.task_config`, the one dispatch on the method's declared harness task), so
a config has an inspect-ai task exactly when it has a harness task, scored by the same rule:

- ``inspect_tasks.py``: one ``@task`` per config (``inspect eval RELEASE/inspect_tasks.py@<config>``), reading the
  release where its lm-evaluation-harness tasks do (the folder itself, each data file pinned by its sha256, or the
  Hub repository at a revision). Classification: inspect-ai's ``multiple_choice`` over the label's class names,
  scored by its ``choice`` scorer (and the Matthews correlation beside accuracy where the method declares it,
  CURRICULUM); generation: the first non-empty line of the answer compared with the target (programs with
  whitespace normalised), few-shot from train as the harness tasks are; CheckList test cases: one sample per
  example, keeping its test case, scored as its expectation says. Every sample keeps the row it came from
  (``source_id``) in its metadata, so ``resplit report`` joins a log back to the release.
- ``eval.yaml``: the Hub's benchmark-dataset form (``inspect eval hf/ORG/NAME@REV``), one task per config with
  inspect-ai's built-in solvers and scorers only. That form reads one row as one sample and takes choices only
  from columns, so a class is answered by its number (``pattern`` scorer) and a generation by its first line
  (``pattern``, exact); CheckList test cases (several examples per row) have no entry there, only in
  ``inspect_tasks.py``, and the card says so.

Only files resplit wrote are replaced: ``eval.yaml`` records the sha256 of the ``inspect_tasks.py`` it was
written with (``resplit.files``) and carries its own fingerprint; a changed or foreign file (or a link) in the way
is refused in one line naming it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

TASKS_FILE = "inspect_tasks.py"
EVAL_FILE = "eval.yaml"
CARD_START, CARD_END = "<!-- resplit:inspect -->", "<!-- /resplit:inspect -->"
# The helpers of lm_eval/utils.py an inspect task needs too (the loader, CheckList's documents and comparisons).
SHARED_HELPERS = ("_sha256", "load_release", "_value", "behavioural_docs", "passes", "_program", "squad_clean")
FIRST_LINE_PATTERN = r"^\s*([^\n]*[^\s])"  # the first non-empty line of a completion, stripped (eval.yaml's pattern)
_NUMBER_PATTERN = r"^\s*(\d+)"

TASKS_SOURCE = r'''"""inspect-ai tasks of this release (written by resplit: ``resplit export inspect``; exporting again
replaces this file, so keep your own tasks in another file).

One task per config: ``inspect eval inspect_tasks.py@<config> --model MODEL``. Each task reads the release at a
fixed version (``RELEASE``: this folder with every data file pinned by its sha256, or the Hub repository at a
revision) and keeps each sample's row (``source_id``) in its metadata, so ``resplit report RELEASE LOG`` reads the
log back. Needs ``inspect-ai`` and ``datasets``.
"""

import hashlib
import json
import re
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import CORRECT, INCORRECT, SampleScore, Score, accuracy, choice, metric, scorer, stderr
from inspect_ai.solver import generate, multiple_choice

EXPECTATIONS = __EXPECTATIONS__  # CheckList expectations that judge each prediction on its own
CASE_FIELDS = ("functionality", "capability", "test_type")  # a test case's columns each of its samples keeps
FIRST_LINE = __FIRST_LINE__  # the answer of a generation: its first non-empty line, stripped
RELEASE = __RELEASE__  # where the tasks read the release: {"path": Hub id or None (this folder), "revision": ...}
TASKS = __TASKS__


__HELPERS__


def _rows(spec):
    """The evaluated split of a config (CheckList test cases as one document per example)."""
    if RELEASE["path"]:
        import datasets

        data = datasets.load_dataset(RELEASE["path"], spec["config"], revision=RELEASE["revision"])
    else:
        data = load_release(".", spec["config"], spec["files"])
    rows = {split: data[split] for split in (spec["split"], spec.get("fewshot_split")) if split}
    if spec["kind"] in ("behavioural_choice", "behavioural_answer"):
        rows = {split: behavioural_docs(split_rows) for split, split_rows in rows.items()}
    return rows


def _prompt(spec, row):
    return "\n".join(f"{name.replace('_', ' ').strip().capitalize()}: {row[name]}" for name in spec["text"])


def _letter(index):
    return chr(ord("A") + int(index))


def _sample(spec, row, number):
    metadata = {"source_id": row["source_id"]} if "source_id" in row else {}
    kind = spec["kind"]
    if kind in ("behavioural_choice", "behavioural_answer"):
        metadata.update({name: row[name] for name in ("example", "expectation", "answer", "ruled_out", *CASE_FIELDS)})
        identity = f"{row['source_id']}/{row['example']}"
    else:
        identity = str(row.get("source_id", number))
    if kind == "choice":
        names = spec["choices"]
        label = row[spec["label"]]
        index = label if spec["class_label"] else names.index(str(label))
        return Sample(input=_prompt(spec, row), choices=list(names), target=_letter(index), id=identity,
                      metadata={**metadata, "label": int(index)})
    if kind == "behavioural_choice":
        answer, ruled_out = row["answer"], row["ruled_out"]
        allowed = int(answer) if answer else (1 if ruled_out == "0" else 0)  # a class the test case allows
        return Sample(input=row["text"], choices=list(spec["choices"]), target=_letter(allowed), id=identity,
                      metadata=metadata)
    if kind == "behavioural_answer":
        return Sample(input=row["text"], target=row["answer"], id=identity, metadata=metadata)
    return Sample(input=_prompt(spec, row), target=str(row[spec["target"]]), id=identity, metadata=metadata)


def _fewshot(spec, rows):
    """The first ``fewshot`` rows of the training split, as worked examples before each generation."""
    if not spec.get("fewshot_split") or not spec.get("fewshot"):
        return ""
    shots = rows[spec["fewshot_split"]].select(range(min(spec["fewshot"], len(rows[spec["fewshot_split"]]))))
    answer = spec.get("target") or "answer"
    title = answer.replace("_", " ").strip().capitalize()
    return "".join(f"{_prompt(spec, row) if spec['text'] else row['text']}\n{title}: "
                   f"{row[spec['target']] if spec.get('target') else row['answer']}\n\n" for row in shots)


def _dataset(spec):
    rows = _rows(spec)
    samples = [_sample(spec, row, number) for number, row in enumerate(rows[spec["split"]])]
    if spec["kind"] in ("generation", "behavioural_answer"):
        prefix = _fewshot(spec, rows)
        title = (spec.get("target") or "answer").replace("_", " ").strip().capitalize()
        for sample in samples:
            sample.input = f"{prefix}{sample.input}\n{title}:"
    return MemoryDataset(samples, name=spec["config"])


def _answer(completion):
    found = re.match(FIRST_LINE, completion or "")
    return found.group(1).strip() if found else ""


def _chosen(state):
    chosen = [i for i, option in enumerate(state.choices) if option.correct is True]
    return chosen[0] if len(chosen) == 1 else -1


@metric
def mcc():
    """The Matthews correlation of the samples' (label, chosen class) pairs (scikit-learn's)."""
    def compute(scores: list[SampleScore]) -> float:
        from sklearn.metrics import matthews_corrcoef

        pairs = [(s.score.metadata["label"], s.score.metadata["prediction"]) for s in scores]
        return float(matthews_corrcoef(*zip(*pairs))) if pairs else 0.0

    return compute


def _label_choice(metrics):
    base = choice()

    @scorer(metrics=metrics, name="choice")
    def label_choice():
        async def score(state, target):
            result = await base(state, target)
            result.metadata = {"label": state.metadata["label"], "prediction": _chosen(state)}
            return result

        return score

    return label_choice()


@scorer(metrics=[accuracy(), stderr()])
def expectation_choice():
    """CheckList's rule for a class: 1 when the chosen class passes the test case's expectation."""
    async def score(state, target):
        meta = state.metadata
        prediction = str(_chosen(state))
        passed = passes(meta["expectation"], prediction, meta["answer"], meta["ruled_out"])
        return Score(value=CORRECT if passed else INCORRECT, answer=prediction)

    return score


@scorer(metrics=[accuracy(), stderr()])
def expectation_match():
    """CheckList's rule for an answer: its first line passes the test case's expectation (SQuAD cleaning)."""
    async def score(state, target):
        meta, answer = state.metadata, _answer(state.output.completion)
        passed = passes(meta["expectation"], answer, meta["answer"], meta["ruled_out"])
        return Score(value=CORRECT if passed else INCORRECT, answer=answer)

    return score


@scorer(metrics=[accuracy(), stderr()])
def program_match():
    """1 when the first line of the answer equals the target with whitespace normalised."""
    async def score(state, target):
        answer = _answer(state.output.completion)
        return Score(value=CORRECT if _program(answer) == _program(target.text) else INCORRECT, answer=answer)

    return score


def _task(config):
    spec = TASKS[config]
    kind = spec["kind"]
    if kind == "choice":
        solver, scorer_ = multiple_choice(), _label_choice([accuracy(), stderr(), *([mcc()] if spec.get("mcc") else [])])
    elif kind == "behavioural_choice":
        solver, scorer_ = multiple_choice(), expectation_choice()
    elif kind == "behavioural_answer":
        solver, scorer_ = generate(), expectation_match()
    else:
        solver, scorer_ = generate(), program_match()
    pinned = {"files": spec.get("files")} if not RELEASE["path"] else {"path": RELEASE["path"],
                                                                       "revision": RELEASE["revision"]}
    return Task(dataset=_dataset(spec), solver=solver, scorer=scorer_,
                metadata={"resplit": {"config": config, "split": spec["split"], "task": spec["task"], **pinned}})
'''


@dataclass
class InspectExported:
    """What :func:`export_inspect` wrote: ``tasks`` (``{config: task}``, in ``inspect_tasks.py``), ``hub``
    (``{config: task}`` of ``eval.yaml``) and ``hub_skipped`` (``{config: reason}``: in ``inspect_tasks.py`` only),
    ``skipped`` (``{config: reason}``: no task), where the tasks read the release, the files written and those of
    others left in place."""

    folder: Path
    tasks: dict = field(default_factory=dict)
    hub: dict = field(default_factory=dict)
    hub_skipped: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    dataset_path: str | None = None
    revision: str | None = None
    paths: list = field(default_factory=list)
    mcc: bool = False
    hub_id: str | None = None  # the Hub repository the card names (a build with --org, or a published copy)
    hub_revision: str | None = None


def _helpers() -> str:
    """The helpers of ``lm_eval/utils.py`` an inspect task shares (one source: :data:`export.UTILS_SOURCE`)."""
    from split_builders.publishing.export import UTILS_SOURCE

    tree = ast.parse(UTILS_SOURCE)
    found = {node.name: ast.get_source_segment(UTILS_SOURCE, node) for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name in SHARED_HELPERS}
    text = "\n\n\n".join(found[name] for name in SHARED_HELPERS)
    return text.replace("resplit export lm-eval", "resplit export inspect")


def _spec(task: dict, config, fields, pinned: dict | None) -> dict:
    """A config's inspect task from its harness task (``export.task_config``): its kind, split and fields."""
    spec = {"task": task["task"], "config": config.name, "split": task["test_split"],
            "text": [name for name in fields.text if name in config.features]}
    behavioural = str(task.get("process_docs") or "") == "utils.behavioural_docs"
    if behavioural:
        spec["text"] = []
    if task["output_type"] == "multiple_choice":
        spec["choices"] = list(task["doc_to_choice"])
        if behavioural:
            spec["kind"] = "behavioural_choice"
        else:
            label = task["doc_to_target"] if task["doc_to_target"] in config.features else (
                fields.label if fields.label in config.features else "label")
            import datasets

            spec.update(kind="choice", label=label,
                        class_label=isinstance(config.features.get(label), datasets.ClassLabel),
                        mcc=any(m["metric"] == "mcc" for m in task["metric_list"]))
    else:
        spec["kind"] = "behavioural_answer" if behavioural else "generation"
        if not behavioural:
            spec["target"] = task["doc_to_target"]
        if task.get("num_fewshot") and task.get("fewshot_split"):
            spec.update(fewshot_split=task["fewshot_split"], fewshot=int(task["num_fewshot"]))
    spec["files"] = pinned
    return spec


def _hub_task(spec: dict) -> dict | None:
    """The config's entry of ``eval.yaml`` (built-in solvers and scorers only), or None where that form cannot
    express it (CheckList test cases: several examples per row)."""
    if spec["kind"] not in ("choice", "generation"):
        return None
    text = spec["text"]
    lines = "\n".join(f"{name.replace('_', ' ').strip().capitalize()}: {{{name}}}" for name in text)
    entry = {"id": spec["config"], "config": spec["config"], "split": spec["split"]}
    if spec["kind"] == "choice":
        if spec["class_label"]:
            options = ", ".join(f"{i} ({name})" for i, name in enumerate(spec["choices"]))
            ask, pattern = f"Answer with the number of the {spec['label']} only: {options}.", _NUMBER_PATTERN
        else:
            ask, pattern = (f"Answer with the {spec['label']} only, one of: {', '.join(spec['choices'])}.",
                            FIRST_LINE_PATTERN)
        target = spec["label"]
    else:
        ask, pattern, target = f"Answer with the {spec['target']} only, on one line.", FIRST_LINE_PATTERN, spec["target"]
    entry["field_spec"] = {"input": text[0], "target": target, "metadata": list(dict.fromkeys([*text, "source_id"]))}
    entry["solvers"] = [{"name": "prompt_template", "args": {"template": f"{lines}\n\n{ask}"}}, {"name": "generate"}]
    entry["scorers"] = [{"name": "pattern", "args": {"pattern": pattern, "ignore_case": spec["kind"] == "choice"}}]
    return entry


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def written_before(folder: Path) -> dict:
    """``{file name: sha256 or None}`` of what an earlier inspect export wrote at the release root ``folder``:
    ``eval.yaml`` where it is resplit's (it records ``resplit.files``), with the digest its own fingerprint gives
    (:func:`~split_builders.release.provenance.sealed_digest`: an edited one is the user's), and the files it
    lists."""
    from split_builders.release.provenance import sealed_digest

    path = Path(folder) / EVAL_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    files = ((data.get("resplit") or {}).get("files") if isinstance(data, dict) and isinstance(data.get("resplit"), dict)
             else None)
    if not isinstance(files, dict):
        return {}
    return {EVAL_FILE: sealed_digest(path),
            **{str(name): str(digest) for name, digest in files.items() if name == TASKS_FILE}}


def export_inspect(folder, *, repo_id: str | None = None, revision: str | None = None) -> InspectExported:
    """Write ``inspect_tasks.py`` and ``eval.yaml`` into the release ``folder`` (its root) and the card's inspect
    section; the tasks read the Hub repository ``repo_id`` at ``revision`` (default: the Hub id and version a
    published card records), else the folder itself, each data file pinned by its sha256 (as the harness tasks:
    :func:`~split_builders.publishing.export.where_tasks_read`, :func:`~split_builders.publishing.export.plan_tasks`)."""
    from split_builders.publishing import export as lm
    from split_builders.release.folder import read_card

    from split_builders.release.places import refuse_link

    folder = Path(folder)
    refuse_link(folder / "README.md", "the card")  # its section is written too: refused before any task is written
    metadata, _ = read_card(folder)
    repo_id, revision = lm.where_tasks_read(folder, metadata, repo_id=repo_id, revision=revision)
    configs, fields, group, tasks, skipped = lm.plan_tasks(folder, metadata)
    exported = InspectExported(folder, dataset_path=repo_id, revision=revision, skipped=skipped,
                               hub_id=repo_id or lm.recorded_repo_id(metadata),
                               hub_revision=revision if repo_id else lm.recorded_revision(metadata))
    by_name = {config.name: config for config in configs}
    specs = {name: _spec(task, by_name[name], fields, None if repo_id else lm._pinned(folder, by_name[name]))
             for name, task in tasks.items()}
    exported.tasks = {name: _identifier(name) for name in specs}
    writes = {}
    if specs:
        writes[TASKS_FILE] = _tasks_source(specs, repo_id, revision)
        entries = []
        for config, spec in specs.items():
            entry = _hub_task(spec)
            if entry is None:
                exported.hub_skipped[config] = ("a CheckList test case holds several examples, and eval.yaml reads one "
                                                "row as one sample: run inspect_tasks.py")
            else:
                entries.append(entry)
                exported.hub[config] = entry["id"]
        exported.mcc = any(spec.get("mcc") for spec in specs.values())
        # written even without entries: it records the task file, so that both are known as resplit's
        writes[EVAL_FILE] = _eval_yaml(metadata, group, entries, _sha256_text(writes[TASKS_FILE]))
    # the harness export's policy: only what resplit wrote (unchanged since) is replaced, a file in the way refused
    stale, _ = lm._plan(folder, writes, written_before(folder), what="the inspect-ai tasks")
    exported.paths = lm._write_files(folder, writes, stale, what="the inspect-ai tasks",
                                     instead="a writable copy of the release")
    write_card_section(folder, exported)
    return exported


def expected_eval_yaml(folder) -> str | None:
    """The ``eval.yaml`` resplit writes for the release ``folder`` with the ``inspect_tasks.py`` it holds (what
    ``verify`` compares the file with where no fingerprint of it is stored); None where no config has a task or the
    folder holds no ``inspect_tasks.py``. Its entries do not depend on where the tasks read the release."""
    from split_builders.publishing import export as lm
    from split_builders.release.folder import read_card
    from split_builders.release.provenance import file_sha256

    folder = Path(folder)
    if not (folder / TASKS_FILE).is_file():
        return None
    metadata, _ = read_card(folder)
    configs, fields, group, tasks, _ = lm.plan_tasks(folder, metadata)
    if not tasks:
        return None
    by_name = {config.name: config for config in configs}
    specs = [_spec(task, by_name[name], fields, None) for name, task in tasks.items()]
    entries = [entry for entry in map(_hub_task, specs) if entry is not None]
    return _eval_yaml(metadata, group, entries, file_sha256(folder / TASKS_FILE))


def _identifier(config: str) -> str:
    name = re.sub(r"\W", "_", config)
    return name if name and not name[0].isdigit() and name.isidentifier() else f"config_{name}"


def _tasks_source(specs: dict, repo_id: str | None, revision: str | None) -> str:
    from split_builders.publishing.export import FIRST_LINE, LABEL_EXPECTATIONS

    tasks = json.dumps(specs, indent=1, sort_keys=True, ensure_ascii=False)
    source = (TASKS_SOURCE.replace("__EXPECTATIONS__", repr(LABEL_EXPECTATIONS))
              .replace("__FIRST_LINE__", repr(FIRST_LINE))
              .replace("__RELEASE__", repr({"path": repo_id, "revision": revision}))
              .replace("__TASKS__", f"json.loads({tasks!r})")
              .replace("__HELPERS__", _helpers()))
    functions = "".join(f"\n\n@task\ndef {_identifier(config)}():\n    return _task({config!r})\n" for config in specs)
    return source + functions


def _eval_yaml(metadata: dict, group: str, entries: list, tasks_sha256: str) -> str:
    """``eval.yaml``'s text: the Hub's benchmark form of ``entries``, recording the sha256 of the
    ``inspect_tasks.py`` written with it."""
    pretty = str(metadata.get("pretty_name") or group)
    document = {"name": pretty,
                "description": f"{pretty}: one inspect-ai task per config, written by resplit (resplit export inspect).",
                "evaluation_framework": "inspect-ai", "tasks": entries,
                "resplit": {"group": group, "files": {TASKS_FILE: tasks_sha256}}}
    from split_builders.release.provenance import UNSEALED, sealed

    header = ("# Written by resplit (resplit export inspect); exporting again replaces it unless it was edited. "
              "Run: inspect eval hf/ORG/NAME@REVISION\n"
              f"# {UNSEALED} (this file's fingerprint: an edited copy is yours, never replaced)\n")
    return sealed(header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120))


def card_lines(exported: InspectExported) -> list[str]:
    """The card's inspect-ai section: how to run the tasks, where they read the release, and what has none."""
    lines = ["## Evaluating with inspect-ai", ""]
    if not exported.tasks:
        return [*lines, "No config has an inspect-ai task.", ""]
    first = next(iter(exported.tasks.values()))
    where = (f"the Hub repository `{exported.dataset_path}` at revision `{exported.revision}`" if exported.dataset_path
             else "this folder, each data file pinned by its sha256")
    lines += [f"`{TASKS_FILE}` holds one task per config, named after it; they read {where}, and each sample keeps "
              "its row's `source_id`, so `resplit report` reads the log back:", "", "```bash",
              f"inspect eval {TASKS_FILE}@{first} --model MODEL", "```", ""]
    if exported.hub:
        run = (f"`inspect eval hf/{exported.hub_id}@{exported.hub_revision or '<version tag>'}`" if exported.hub_id
               else "`inspect eval hf/<repository>@<version tag>` once pushed")
        lines += [f"`{EVAL_FILE}` lists {len(exported.hub)} task(s) in the Hub's benchmark form, run from the Hub as "
                  f"{run}; it uses inspect-ai's built-in scorers only, so a class is answered by its number and a "
                  "generation by its first line (exact, whitespace as generated).", ""]
    if exported.mcc:
        lines += ["Classification tasks report the Matthews correlation (`mcc`) beside accuracy in "
                  f"`{TASKS_FILE}`; `{EVAL_FILE}`'s built-in scorers give accuracy only.", ""]
    reasons = {}
    for config, reason in exported.hub_skipped.items():
        reasons.setdefault(reason, []).append(f"`{config}`")
    for config, reason in exported.skipped.items():
        reasons.setdefault(f"no inspect-ai task: {reason}", []).append(f"`{config}`")
    if reasons:
        lines += [f"Configs not in `{EVAL_FILE}`:", ""]
        lines += [f"- {', '.join(configs)}: {reason}." for reason, configs in reasons.items()]
        lines.append("")
    return lines


def write_card_section(folder: Path, exported: InspectExported) -> None:
    """The inspect-ai section of the card (:func:`card_lines`), after the lm-evaluation-harness section."""
    from split_builders.publishing.export import CARD_END as LM_END
    from split_builders.publishing.export import replace_card_section

    replace_card_section(folder, CARD_START, CARD_END, card_lines(exported), after=LM_END)


def describe(exported: InspectExported) -> list[str]:
    """Lines for the terminal."""
    lines = []
    if exported.tasks:
        lines += [f"wrote {len(exported.tasks)} inspect-ai task(s) to {exported.folder / TASKS_FILE} and "
                  f"{len(exported.hub)} to {exported.folder / EVAL_FILE}",
                  f"run one with: inspect eval {exported.folder / TASKS_FILE}@{next(iter(exported.tasks.values()))} "
                  "--model MODEL"]
    for config, reason in exported.hub_skipped.items():
        lines.append(f"not in {EVAL_FILE}: {config}: {reason}")
    for config, reason in exported.skipped.items():
        lines.append(f"skipped {config}: {reason}")
    if not exported.tasks:
        lines.append("no config fits an inspect-ai task: nothing written")
    return lines
