"""The files of the lm-evaluation-harness export (:mod:`split_builders.publishing.export`): the ``utils.py`` written
beside the tasks, the task files' YAML (lm-evaluation-harness's ``!function`` tag), what an earlier export wrote
(read back from its group file), the plan that refuses files in the way and the writes that replace only the
export's own files, and the card section written between its markers. The inspect-ai export writes with the same
pieces."""

from __future__ import annotations

from pathlib import Path

import yaml

from split_builders.errors import OutputExistsError
from split_builders.release.provenance import file_sha256 as _file_sha256
from split_builders.release.provenance import sealed_digest

UTILS = "utils.py"
HEADER = "# Written by resplit (resplit export lm-eval); exporting again replaces it. Your own tasks: other file names.\n"

# The ``utils.py`` written beside the tasks (``__TARGET__`` and ``__EXPECTATIONS__`` filled in).
UTILS_SOURCE = r'''"""lm-evaluation-harness helpers of this release (written by resplit: ``resplit export lm-eval``).

Self-contained: the harness imports this file by path; it needs only ``datasets``.
"""

import hashlib
import json
import re
from pathlib import Path

TARGET = __TARGET__  # the target column of this release's generation tasks
EXPECTATIONS = __EXPECTATIONS__  # CheckList expectations that judge each prediction on its own
CASE_FIELDS = ("functionality", "capability", "test_type")  # a test case's columns each of its documents keeps


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_release(resplit_folder="..", resplit_config=None, resplit_files=None, revision=None, **metadata):
    """The config ``resplit_config`` of the release at ``resplit_folder`` (a path relative to this file), read
    from the data files the tasks were written for: ``resplit_files`` is ``{split: {path, sha256}}``, and a
    file whose sha256 differs (the folder now holds another version of the release) is refused."""
    import datasets

    folder = (Path(__file__).resolve().parent / resplit_folder).resolve()
    files = {}
    for split, pinned in (resplit_files or {}).items():
        path = folder / pinned["path"]
        if not path.is_file():
            raise FileNotFoundError(f"{path}: the {split} file of config {resplit_config!r} these tasks were written "
                                    "for is missing; export the tasks again (resplit export lm-eval)")
        if _sha256(path) != pinned["sha256"]:
            raise ValueError(f"{path} is not the file these tasks were written for (its sha256 differs): the folder "
                             "holds another version of the release; export the tasks again (resplit export lm-eval)")
        files[split] = str(path)
    if not files:  # tasks written before files were pinned
        return datasets.load_dataset(str(folder), resplit_config)
    return datasets.load_dataset("parquet", data_files=files)


def _value(value):
    return json.loads(value) if isinstance(value, str) else value


def behavioural_docs(dataset):
    """One document per example of the test cases whose expectation judges each prediction on its own
    (``EXPECTATIONS``): ``text`` (the example's parts, one per line), ``answer`` (the prediction it expects, as
    text; '' where it names none), ``expectation`` (the comparison) and ``ruled_out`` (the prediction it rules
    out, as text; '' where none); and the test case it belongs to: ``source_id`` (the test case's, as released),
    ``example`` (the example's 0-based index in its test case), ``functionality``, ``capability`` and
    ``test_type`` (as released; '' where the release has no such column). CheckList scores a test case, not an
    example: it passes when every one of its scored examples passes (group the documents by ``source_id``)."""
    import datasets

    kept = [name for name in ("source_id", *CASE_FIELDS) if name in dataset.column_names]
    dataset = dataset.select_columns(["examples", "labels", "expectation", *kept])
    names = dataset.column_names
    text = datasets.Value("string")
    features = datasets.Features({
        "text": text, "answer": text, "expectation": text, "ruled_out": text,
        "source_id": dataset.features["source_id"] if "source_id" in kept else datasets.Value("int64"),
        "example": datasets.Value("int64"), **{name: text for name in CASE_FIELDS}})

    def explode(batch):
        out = {name: [] for name in features}
        cases = len(batch["examples"])
        case = {name: batch[name] if name in batch else [None] * cases for name in ("source_id", *CASE_FIELDS)}
        for i, (examples, labels, expectation) in enumerate(zip(batch["examples"], batch["labels"],
                                                                batch["expectation"])):
            labels, expectation = _value(labels), _value(expectation) or {}
            fn, value = expectation.get("fn"), expectation.get("value")
            if fn not in EXPECTATIONS:
                continue
            per_example = labels if isinstance(labels, list) else [labels] * len(examples)
            for example, (parts, label) in enumerate(zip(examples, per_example)):
                label = value if fn == "eq" and value is not None else label
                if (label is None) if fn != "pred_not_equal" else (value is None):
                    continue
                parts = parts if isinstance(parts, list) else [parts]
                out["text"].append("\n".join(str(part) for part in parts))
                out["answer"].append("" if label is None else str(label))
                out["expectation"].append(fn)
                out["ruled_out"].append("" if value is None or fn != "pred_not_equal" else str(value))
                out["source_id"].append(case["source_id"][i])
                out["example"].append(example)
                for name in CASE_FIELDS:
                    out[name].append("" if case[name][i] is None else str(case[name][i]))
        return out

    return dataset.map(explode, batched=True, remove_columns=names, features=features)


def passes(expectation, prediction, label, value=""):
    """Whether ``prediction`` passes a test case's expectation (CheckList's, data/checklist/SPEC.md), all as
    text (classes as their numbers): ``eq``, ``squad_clean_eq`` (both sides cleaned: :func:`squad_clean`),
    ``pred_not_equal`` (not ``value``), ``allow_for_neutral`` (a neutral label, 1, accepts all but 0)."""
    if expectation == "squad_clean_eq":
        return squad_clean(prediction) == squad_clean(label)
    if expectation == "pred_not_equal":
        return prediction != value
    if expectation == "allow_for_neutral" and label == "1":
        return prediction != "0"
    return prediction == label


def pass_choice(doc, results):
    """Accuracy of a behavioural multiple-choice document: 1 when the most likely class passes the test case's
    expectation (:func:`passes`)."""
    scores = [result[0] if isinstance(result, (list, tuple)) else result for result in results]
    prediction = str(max(range(len(scores)), key=scores.__getitem__))
    return {"acc": float(passes(doc["expectation"], prediction, doc["answer"], doc["ruled_out"]))}


def _answer(results):
    """The filtered answer (the first line of the generation, stripped) of one document."""
    answer = results[0] if results else ""
    while isinstance(answer, (list, tuple)):
        answer = answer[0] if answer else ""
    return str(answer).strip()


def _program(text):
    return " ".join(str(text).split())


def exact_match_program(doc, results):
    """1 when the generated program equals the target with whitespace normalised (runs of spaces as one)."""
    return {"exact_match": float(_program(_answer(results)) == _program(doc[TARGET]))}


def squad_clean(text):
    """CheckList's SQuAD cleaning (``squad_clean_eq``): every leading character of the set '[a,the,an,in,at] '
    (``str.lstrip`` takes a set of characters, as in CheckList) and trailing full stops removed."""
    return str(text).lstrip("[a,the,an,in,at] ").rstrip(".")


def exact_match_expectation(doc, results):
    """1 when the answer passes the test case's own comparison (:func:`passes`: ``squad_clean_eq`` compares both
    sides cleaned by :func:`squad_clean`, ``eq`` as they are)."""
    return {"exact_match": float(passes(doc["expectation"], _answer(results), doc["answer"], doc["ruled_out"]))}


def matthews_corrcoef(items):
    """The Matthews correlation of a task's (gold, prediction) pairs (scikit-learn's). An aggregation of this
    file, not the harness's own ``matthews_corrcoef``, so the harness does not bootstrap its standard error with
    100,000 resamples per task (minutes over a group); ``resplit report`` gives intervals from the samples."""
    from sklearn.metrics import matthews_corrcoef as mcc

    golds, preds = zip(*items)
    return float(mcc(golds, preds))
'''


class _Function(str):
    """A YAML scalar written with lm-evaluation-harness's ``!function`` tag."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
_Dumper.add_representer(str, lambda dumper, value: dumper.represent_scalar(
    "tag:yaml.org,2002:str", value, style="|" if "\n" in value.strip() else '"' if "\n" in value else None))


class _AnyTag(yaml.SafeLoader):
    """Reads a task file back, ``!function`` as its text."""


_AnyTag.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def _dump(mapping: dict) -> str:
    return HEADER + yaml.dump(mapping, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def written_before(out: Path, *, configs=()) -> dict:
    """``{file name: sha256}`` of what an earlier export wrote in ``out``: the files its group file lists (the
    group file itself by its own fingerprint, :func:`~split_builders.release.provenance.sealed_digest`). In a
    release's own ``lm_eval/`` exported before the list existed (``configs``: the release's configs), ``utils.py``,
    ``_*.yaml`` and ``<config>.yaml`` (None)."""
    listed = {}
    for group in sorted(out.glob("_*.yaml")):
        try:
            data = yaml.load(group.read_text(encoding="utf-8"), Loader=_AnyTag)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        files = ((data.get("metadata") or {}).get("resplit_files") if isinstance(data, dict)
                 and isinstance(data.get("metadata"), dict) else None)
        if isinstance(files, dict):
            listed.update({str(name): str(digest) for name, digest in files.items()})
            listed[group.name] = sealed_digest(group)  # None: written before lists were sealed (any content)
    if not listed and configs:
        legacy = [UTILS, *(p.name for p in out.glob("_*.yaml") if _legacy_group(p, configs)),
                  *(f"{c}.yaml" for c in configs)]
        listed = {name: None for name in legacy if (out / name).is_file()}
    return listed


def _legacy_group(path: Path, configs) -> bool:
    """Whether ``path`` is the group file of an export that listed no files: a group whose tasks are all
    ``<group>_<config>`` of this release's configs."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_AnyTag)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("group"), str) or not isinstance(data.get("task"), list):
        return False
    return bool(data["task"]) and all(isinstance(t, str) and any(t == f"{data['group']}_{c}" for c in configs)
                                      for t in data["task"])


def _plan(out: Path, writes: dict, previous: dict, *, what: str = "the tasks") -> tuple[list, list]:
    """``(stale, kept)``: files of an earlier export that this one does not write again (removed), and files
    that are not the export's (left as they are). Refuses, naming them, files in the way that resplit did not
    write or that were changed since."""
    in_the_way, stale, kept = [], [], []
    for path in sorted(out.iterdir()) if out.is_dir() else []:
        name = path.name
        ours = name in previous and path.is_file() and not path.is_symlink() and (
            previous[name] is None or _file_sha256(path) == previous[name])
        if name in writes and not ours:
            in_the_way.append(name + (" (not written by resplit)" if name not in previous
                                      else " (changed since resplit wrote it)"))
        elif name not in writes and ours:
            stale.append(path)
        elif name not in writes and not name.startswith(".") and name != "__pycache__":
            kept.append(name)
    if in_the_way:
        shown = ", ".join(in_the_way[:5]) + (f" and {len(in_the_way) - 5} more" if len(in_the_way) > 5 else "")
        raise OutputExistsError(f"{str(out)!r} holds {len(in_the_way)} file(s) that resplit did not write where "
                                f"{what} go ({shown}); move them elsewhere (keep your own tasks under another name) or "
                                "choose another --out (nothing was changed)")
    return stale, kept


def _write_files(out: Path, writes: dict, stale: list, *, what: str = "the harness tasks",
                 instead: str = "another --out") -> list:
    """Write every file beside its place first, then move each into place, through the one output policy
    (:func:`~split_builders.release.places.write_files`: a link in the way refused, never followed); then remove the
    stale ones. A full disk while writing them is one line (no file in ``out`` replaced)."""
    from split_builders.release.places import write_files

    def text_of(text):
        return lambda staging: Path(staging).write_text(text, encoding="utf-8")

    paths = write_files({out / name: text_of(text) for name, text in writes.items()}, overwrite=True,
                        flag="--out", what=what, instead=instead)
    for path in stale:
        path.unlink(missing_ok=True)
    return paths


def replace_card_section(folder: Path, start: str, end: str, lines: list, *, after: str | None = None) -> None:
    """Write a section of the release's README.md between its markers ``start`` and ``end``: replaced where it is,
    else placed right after the marker ``after`` where the card has it, else before "Source and citation" (or at
    the end)."""
    readme = folder / "README.md"
    text = readme.read_text(encoding="utf-8")
    section = "\n".join([start, *lines, end]) + "\n\n"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        following = rest.split(end, 1)[1].lstrip("\n")
        text = before + section + following
    elif after is not None and after in text:
        before, following = text.split(after, 1)
        text = before + after + "\n\n" + section + following.lstrip("\n")
    elif "\n## Source and citation" in text:
        before, following = text.split("\n## Source and citation", 1)
        text = before.rstrip("\n") + "\n\n" + section + "## Source and citation" + following
    else:
        text = text.rstrip("\n") + "\n\n" + section
    from split_builders.release.places import write_file

    write_file(readme, lambda staging: Path(staging).write_text(text, encoding="utf-8"), overwrite=True,
               flag="the card")
