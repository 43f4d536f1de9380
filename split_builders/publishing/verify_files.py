"""What ``verify`` checks of the files a release carries besides its data: the files its card names (figures, each
against the sha256 the card records where it records one: ``resplit.figures``), the readers' files (``lm_eval/``,
``inspect_tasks.py``, ``eval.yaml``, ``croissant.json``) and where their tasks read.

Each generated file is checked by the fingerprint its export stored where there is one
(:func:`split_builders.publishing.readers.written_files`: the lm-eval tasks in their group file, ``inspect_tasks.py``
in ``eval.yaml``; :func:`split_builders.publishing.verify.check_task_files` compares them), else against what resplit
writes from the release's own card and files (``eval.yaml``, ``croissant.json``: the same release gives the same
bytes, :func:`regenerated_problem`). A file the card's sections declare (the harness and inspect-ai sections, which
the same export writes with ``croissant.json``) and the folder lacks differs, as does every task that reads another
release than this one (its folder, its data files and their sha256s, its Hub repository).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import yaml

_IMAGE_SIGNATURES = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF", ".jpg": b"\xff\xd8\xff", ".jpeg": b"\xff\xd8\xff",
                     ".gif": b"GIF8"}


def check_named_files(released, report) -> None:
    """Every file the card names (its figures and links; the data files are level 1's) and every figure it records
    (``resplit.figures``) is a regular file in the folder, a figure starts as its format does (a PNG the card shows
    that is not a PNG differs) and has the sha256 the card records (an edited figure that is still an image
    differs). A release built before figures were recorded has the first checks only, and its finding says so."""
    from split_builders.release.folder import UNNAMED_FILES, named_files

    recorded = released.record.get("figures")
    if recorded is not None and not (isinstance(recorded, dict)
                                     and all(isinstance(v, str) for v in recorded.values())):
        report.add(1, "(figures)", None, False, "the card's resplit.figures is not a mapping of file to sha256 "
                                                "(changed after the build); restore the card or rebuild the release")
        recorded = {}
    data = {path for splits in released.files.values() for path in splits.values()}
    names = sorted((named_files(released.metadata, released.body) | set(map(str, recorded or {})))
                   - data - {"README.md", *UNNAMED_FILES})
    problems = 0
    for name in names:
        path = released.folder / name
        if not path.is_file() or path.is_symlink():
            what = "is missing" if not os.path.lexists(path) else "is not a regular file"
            report.add(1, name, None, False, f"the card names it and it {what}; restore it or rebuild the release")
        elif not _starts_as_its_format(path):
            report.add(1, name, None, False, f"the card shows it as a {path.suffix} figure and it is not one (changed "
                                             "after the build); restore it or rebuild the release")
        elif recorded and name in recorded and _sha256(path) != recorded[name]:
            report.add(1, name, None, False, "its bytes are not the sha256 the card records for it (changed after "
                                             "the build); restore it or rebuild the release")
        else:
            continue
        problems += 1
    if names and not problems:
        contents = (f"; {len(recorded)} figure(s) have the sha256 the card records" if recorded is not None else
                    "; figure contents are not recorded (built before resplit recorded its figures' sha256), so "
                    "only that each is there and an image is checked; a rebuild records them")
        report.add(1, "(named)", None, True, f"{len(names)} file(s) the card names are there{contents}")


def _sha256(path: Path) -> str | None:
    from split_builders.release.provenance import file_sha256

    try:
        return file_sha256(path)
    except OSError:
        return None


def _starts_as_its_format(path: Path) -> bool:
    signature = _IMAGE_SIGNATURES.get(path.suffix.lower())
    if signature is None:
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(len(signature)) == signature
    except OSError:
        return False


def _section(body: str, start: str, end: str) -> str | None:
    """The card's section between the markers ``start`` and ``end``, or None where it has none."""
    if start not in body or end not in body:
        return None
    return body.split(start, 1)[1].split(end, 1)[0]


def declared_files(released) -> dict:
    """``{relative path: the command that writes it}`` of the readers' files the card's sections say the release
    holds: ``lm_eval/_<group>.yaml`` where its harness section names tasks, ``inspect_tasks.py`` and ``eval.yaml``
    where its inspect-ai section does, and ``croissant.json`` beside the inspect-ai section (one export writes
    both; a release older than that section has neither)."""
    from split_builders.publishing import croissant, export, inspect_export

    folder, body, declared = released.folder, released.body, {}
    harness = _section(body, export.CARD_START, export.CARD_END)
    if harness is not None and f"`{export.FOLDER}/` holds" in harness:
        declared[f"{export.FOLDER}/_{export.group_name(released.metadata)}.yaml"] = f"resplit export lm-eval {folder}"
    inspect = _section(body, inspect_export.CARD_START, inspect_export.CARD_END)
    if inspect is not None:
        if f"`{inspect_export.TASKS_FILE}`" in inspect:
            for name in (inspect_export.TASKS_FILE, inspect_export.EVAL_FILE):
                declared[name] = f"resplit export inspect {folder}"
        declared[croissant.FILE] = f"resplit export croissant {folder}"
    return declared


def check_declared(released, report) -> None:
    """Each reader's file the card declares (:func:`declared_files`) is there."""
    for name, command in declared_files(released).items():
        path = released.folder / name
        if not path.is_file() or path.is_symlink():
            report.add(1, name, None, False, f"the card says the release holds it and it is "
                                             f"{'missing' if not os.path.lexists(path) else 'not a regular file'}; "
                                             f"`{command}` writes it again")


def pinned_files(released, config: str) -> dict:
    """``{split: {path, sha256}}`` of a config's data files as its card records them: what a task reading this
    folder pins."""
    recorded = ((released.record.get("configs") or {}).get(config) or {}).get("sha256") or {}
    return {split: {"path": path, "sha256": recorded.get(split)} for split, path in released.files[config].items()}


def _reads_other(released, *, folder: Path | None, config, files, hub: str | None) -> str | None:
    """Why a task reads another release than ``released`` (None where it reads this one): ``folder`` (the folder it
    reads, or None for a Hub repository ``hub``), its ``config`` and the data ``files`` it pins."""
    from split_builders.publishing.export import recorded_repo_id

    if config not in released.files:
        return f"it reads config {config!r}, which this release does not have"
    if folder is not None:
        if folder.resolve() != released.folder.resolve():
            return f"it reads the release at {str(folder.resolve())!r}, not this folder"
        if files is not None and files != pinned_files(released, config):
            return "it pins data files that are not this release's (their paths or sha256s differ from the card's)"
        return None
    repo = recorded_repo_id(released.metadata)
    if repo is not None and hub != repo:
        return f"it reads the Hub repository {hub!r}, not {repo!r}, which the card records"
    return None


def check_lm_eval_targets(released, report) -> int:
    """Every task file of ``lm_eval/`` reads this release (:func:`_reads_other`); the tasks checked."""
    from split_builders.publishing.export import FOLDER
    from split_builders.publishing.harness_files import _AnyTag

    harness = released.folder / FOLDER
    checked = 0
    for path in sorted(harness.glob("*.yaml")) if harness.is_dir() else []:
        if path.name.startswith("_") or not path.is_file():
            continue
        try:
            task = yaml.load(path.read_text(encoding="utf-8"), Loader=_AnyTag)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # not a task resplit wrote: the fingerprint check names a changed one
        if not isinstance(task, dict) or "task" not in task or "dataset_name" not in task:
            continue
        kwargs = task.get("dataset_kwargs") if isinstance(task.get("dataset_kwargs"), dict) else {}
        if str(task.get("custom_dataset") or "") == "utils.load_release":
            why = _reads_other(released, folder=harness / str(kwargs.get("resplit_folder", "..")),
                               config=kwargs.get("resplit_config", task["dataset_name"]),
                               files=kwargs.get("resplit_files") or None, hub=None)
        else:
            why = _reads_other(released, folder=None, config=task["dataset_name"], files=None,
                               hub=task.get("dataset_path"))
        checked += 1
        if why:
            report.add(1, f"{FOLDER}/{path.name}", None, False,
                       f"task {task['task']} reads another release: {why}; `resplit export lm-eval "
                       f"{released.folder}` writes this release's tasks again")
    return checked


def _inspect_tasks(path: Path) -> tuple[dict, dict] | None:
    """``(RELEASE, TASKS)`` of an ``inspect_tasks.py`` resplit wrote, read from its source without running it; None
    where it has not that form."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            try:
                if name == "RELEASE":
                    found[name] = ast.literal_eval(value)
                elif (name == "TASKS" and isinstance(value, ast.Call) and len(value.args) == 1
                      and isinstance(value.args[0], ast.Constant) and isinstance(value.args[0].value, str)):
                    found[name] = json.loads(value.args[0].value)
            except (ValueError, TypeError, SyntaxError):
                return None
    if not isinstance(found.get("RELEASE"), dict) or not isinstance(found.get("TASKS"), dict):
        return None
    return found["RELEASE"], found["TASKS"]


def check_inspect_targets(released, report) -> int:
    """Every task of ``inspect_tasks.py`` reads this release (:func:`_reads_other`); the tasks checked."""
    from split_builders.publishing.inspect_export import TASKS_FILE

    path = released.folder / TASKS_FILE
    read = _inspect_tasks(path) if path.is_file() else None
    if read is None:
        return 0
    where, tasks = read
    for config, spec in sorted(tasks.items()):
        spec = spec if isinstance(spec, dict) else {}
        hub = where.get("path")
        why = _reads_other(released, folder=None if hub else released.folder, config=spec.get("config", config),
                           files=spec.get("files"), hub=hub)
        if why:
            report.add(1, TASKS_FILE, config, False, f"its task reads another release: {why}; `resplit export inspect "
                                                     f"{released.folder}` writes this release's tasks again")
    return len(tasks)


def regenerated_problem(released, name: str) -> str | None:
    """Why the generated file ``name`` (``eval.yaml`` or ``croissant.json``) is not the bytes resplit writes for this
    release from its card and files, or None where it is, where a fingerprint of it is stored
    (:func:`split_builders.publishing.readers.written_files`: then its sha256 is what is checked), where the folder
    has none (said where the card declares it) or where the release is too damaged to write it (level 1's other
    findings say how)."""
    from split_builders.errors import ResplitError
    from split_builders.publishing import croissant, inspect_export
    from split_builders.publishing.readers import written_files

    folder = released.folder
    path = folder / name
    if not path.is_file() or path.is_symlink() or written_files(folder).get(name) is not None:
        return None
    make = {croissant.FILE: croissant.text, inspect_export.EVAL_FILE: inspect_export.expected_eval_yaml}[name]
    try:
        text = make(folder)
    except (ResplitError, OSError, ValueError, KeyError, TypeError):
        return None
    try:
        if text is None or path.read_text(encoding="utf-8") == text:
            return None
    except (OSError, UnicodeDecodeError):
        pass
    command = "croissant" if name == croissant.FILE else "inspect"
    return (f"not what resplit writes from this release's card and files (it, or the card, changed since it was "
            f"written); `resplit export {command} {folder}` writes it again")


def check_eval_yaml(released, report) -> None:
    """``eval.yaml`` against the bytes resplit writes for this release (:func:`regenerated_problem`)."""
    from split_builders.publishing.inspect_export import EVAL_FILE

    path = released.folder / EVAL_FILE
    if not path.is_file() or path.is_symlink():
        return
    problem = regenerated_problem(released, EVAL_FILE)
    report.add(1, EVAL_FILE, None, problem is None, problem or "")
