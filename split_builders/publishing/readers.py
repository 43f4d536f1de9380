"""The files a release carries for the tools that read it, written together: lm-evaluation-harness tasks
(``lm_eval/``, :mod:`~split_builders.publishing.export`), inspect-ai tasks (``inspect_tasks.py`` and ``eval.yaml``,
:mod:`~split_builders.publishing.inspect_export`) and Croissant metadata (``croissant.json``,
:mod:`~split_builders.publishing.croissant`).

:func:`write_readers` is what a build, ``--write-clean`` and ``push`` call on a staged release;
:func:`written_files` is what the writer asks to tell resplit's files from a user's (``harness_files``).
"""

from __future__ import annotations

from pathlib import Path


def write_readers(folder: Path, *, repo_id: str | None = None, revision: str | None = None) -> list[Path]:
    """Write every reader's files of the release ``folder`` (complete or staged); the paths written. ``repo_id``
    and ``revision``: where the tasks read the release once published (:func:`export.tasks_repo`: a Hub id without a
    version, a build with ``--org`` not yet published, reads the folder itself)."""
    from split_builders.publishing.croissant import write_croissant
    from split_builders.publishing.export import export_lm_eval, tasks_repo
    from split_builders.publishing.inspect_export import export_inspect

    folder = Path(folder)
    repo_id = tasks_repo(folder, repo_id, revision)
    paths = export_lm_eval(folder, repo_id=repo_id, revision=revision).paths
    paths += export_inspect(folder, repo_id=repo_id, revision=revision).paths
    paths += write_croissant(folder)
    return paths


def written_files(folder: Path, *, configs=()) -> dict:
    """``{path relative to the release folder: sha256 or None}`` of the files the readers' exports wrote in
    ``folder`` (None: resplit's whatever its content, as a file that lists the others)."""
    from split_builders.publishing import croissant, export, inspect_export

    folder = Path(folder)
    harness = folder / export.FOLDER
    files = {}
    if harness.is_dir():
        files.update({f"{export.FOLDER}/{name}": digest
                      for name, digest in export.written_before(harness, configs=configs).items()})
    files.update(inspect_export.written_before(folder))
    files.update(croissant.written_before(folder))
    return files
