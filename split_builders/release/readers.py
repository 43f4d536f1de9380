"""The files a release carries for the tools that read it, written together: lm-evaluation-harness tasks
(``lm_eval/``, :mod:`~split_builders.release.export`), inspect-ai tasks (``inspect_tasks.py`` and ``eval.yaml``,
:mod:`~split_builders.release.inspect_export`) and Croissant metadata (``croissant.json``,
:mod:`~split_builders.release.croissant`).

:func:`write_readers` is what a build, ``--write-clean`` and ``push`` call on a staged release;
:func:`written_files` is what the writer asks to tell resplit's files from a user's (``harness_files``).
"""

from __future__ import annotations

from pathlib import Path


def write_readers(folder: Path, *, repo_id: str | None = None, revision: str | None = None) -> list[Path]:
    """Write every reader's files of the release ``folder`` (complete or staged); the paths written. ``repo_id``
    and ``revision``: where the tasks read the release once published (see :func:`export.write_lm_eval`)."""
    from split_builders.release.croissant import write_croissant
    from split_builders.release.export import write_lm_eval
    from split_builders.release.inspect_export import write_inspect

    folder = Path(folder)
    paths = write_lm_eval(folder, repo_id=repo_id, revision=revision)
    paths += write_inspect(folder, repo_id=repo_id, revision=revision)
    paths += write_croissant(folder)
    return paths


def written_files(folder: Path, *, configs=()) -> dict:
    """``{path relative to the release folder: sha256 or None}`` of the files the readers' exports wrote in
    ``folder`` (None: resplit's whatever its content, as a file that lists the others)."""
    from split_builders.release import croissant, export, inspect_export

    folder = Path(folder)
    harness = folder / export.FOLDER
    files = {}
    if harness.is_dir():
        files.update({f"{export.FOLDER}/{name}": digest
                      for name, digest in export.written_before(harness, configs=configs).items()})
    files.update(inspect_export.written_before(folder))
    files.update(croissant.written_before(folder))
    return files
