"""inspect-ai logs of ``inspect eval hf/ORG/NAME@REV`` runs (the release's ``eval.yaml``, run through inspect's Hub
loader) matched to a release, for :mod:`split_builders.evaluation.inspect_runs`.

Such a log carries no resplit metadata: inspect names its task ``hf/ORG/NAME[@REV]/ID`` (the ``eval.yaml`` task's
``id``, resplit's config; ``hf/ORG/NAME/ID@REV`` when one task was asked for, and no ``/ID`` where the file lists
one task), records the dataset's Hub id as its ``dataset.name``/``location`` and a revision given with
``-T revision=REV`` in its task arguments; each sample keeps the row's ``source_id`` (``eval.yaml``'s
``field_spec.metadata``). The release is the one whose card records that Hub id; the config and split are its
``eval.yaml`` task's. The revision is checked against the one the release records, as a local task's data-file
sha256 is; a run of the Hub's ``main`` (no ``@REV``) or of a commit id cannot be, and a note says so.
"""

from __future__ import annotations

import re
from pathlib import Path

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def parse_task(task: str) -> tuple[str, str | None, str | None] | None:
    """``(ORG/NAME, task id or None, revision or None)`` of an inspect task name ``hf/...``; None for another."""
    if not task.startswith("hf/"):
        return None
    spec, revision = task[3:], None
    if "@" in spec:
        spec, _, tail = spec.rpartition("@")
        revision, _, after = tail.partition("/")  # hf/ORG/NAME@REV/ID: the id inspect adds after the revision
        spec = f"{spec}/{after}" if after else spec
    parts = spec.split("/")
    if len(parts) < 2:
        return None
    return f"{parts[0]}/{parts[1]}", (parts[-1] if len(parts) > 2 else None), revision or None


def hub_tasks(folder: Path) -> list[dict]:
    """The tasks of the release's ``eval.yaml`` (``[{id, config, split}, ...]``); none where it has no such file."""
    import yaml

    from split_builders.publishing.inspect_export import EVAL_FILE

    path = Path(folder) / EVAL_FILE
    if not path.is_file():
        return []
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    tasks = document.get("tasks") if isinstance(document, dict) else None
    return [t for t in tasks or [] if isinstance(t, dict) and t.get("config")]


def hub_log(log, releases: list):
    """``(release, metadata, notes)`` of a log of ``inspect eval hf/ORG/NAME@REV`` on one of ``releases`` (the
    metadata as a release's own inspect task records it: ``task``, ``config``, ``split``, ``revision``); None
    where the log is not of such a run or of none of the releases."""
    task = str(log.eval.task or "")
    parsed = parse_task(task)
    if parsed is None:
        return None
    repo_id, task_id, revision = parsed
    args = log.eval.task_args if isinstance(log.eval.task_args, dict) else {}
    revision = revision or (str(args["revision"]) if args.get("revision") else None)
    recorded = log.eval.dataset.name or log.eval.dataset.location or repo_id
    notes = []
    matching = [r for r in releases if r.repo_id and r.repo_id == repo_id == recorded]
    if not matching and len(releases) == 1 and not releases[0].repo_id and repo_id == recorded:
        matching = releases
        notes.append(f"{task}: the release records no Hub id, so that {repo_id} is it is not checked")
    for release in matching:
        entries = hub_tasks(release.folder)
        if task_id is None and len(entries) == 1:
            entry = entries[0]
        else:
            entry = next((e for e in entries if str(e.get("id") or e["config"]) == task_id), None)
        if entry is None:
            continue
        if revision is None:
            notes.append(f"{task}: run on the Hub's main branch as it was then (no @REVISION), so whether it read "
                         "these rows is not checked; run `inspect eval hf/ORG/NAME@REVISION` to pin it")
        elif _COMMIT.match(revision):
            notes.append(f"{task}: run on commit {revision[:12]}; the release records its tag "
                         f"({release.revision or 'none'}), not its commit, so whether it read these rows is not checked")
            revision = None
        meta = {"task": task, "config": str(entry["config"]), "split": str(entry.get("split") or "test"),
                "revision": revision}
        return release, meta, notes
    return None
