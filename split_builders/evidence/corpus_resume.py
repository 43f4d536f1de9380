"""What a resumed corpus run (``resplit audit TARGET --against-corpus SOURCE --work DIR``) checks before it
trusts a task it finds finished: each task records, in ``tasks/RANK.json``, the size and modification time of
every shard it read and the fingerprint of the evaluation index it matched with; a task whose shards changed
since, whose index is not this run's, or whose record file is missing or cut short is redone (its completion
file, summary and records removed), never trusted."""

from __future__ import annotations

import json
from pathlib import Path


def task_shards(shards: list, rank: int, tasks: int) -> list:
    """The shards datatrove's reader gives task ``rank`` of ``tasks`` (``paths_file``: every ``tasks``-th line
    from ``rank``)."""
    return shards[rank::tasks]


def _records_intact(work: Path, rank: int, records: int) -> bool:
    import pyarrow.parquet as pq

    files = sorted((work / "matches").glob(f"*{rank:05d}.parquet"))
    if not records:
        return not files
    try:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files) == records
    except Exception:  # cut short, not Parquet: redone
        return False


def why_redo(work: Path, rank: int, *, tasks: int, shards: list, stats: dict, fingerprint: str) -> str | None:
    """Why finished task ``rank`` cannot be trusted (None: it can)."""
    try:
        summary = json.loads((work / "tasks" / f"{rank:05d}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "no summary"
    if summary.get("index") != fingerprint:
        return "another index"
    mine = task_shards(shards, rank, tasks)
    if summary.get("shards") != {s: stats.get(s) for s in mine}:
        return "its shards changed"
    if not _records_intact(work, rank, int(summary.get("records", -1))):
        return "its records are missing or cut short"
    return None


def check_finished(work: Path, *, tasks: int, shards: list, stats: dict, fingerprint: str) -> int:
    """Every finished task checked (:func:`why_redo`); those that cannot be trusted are made unfinished, so the
    run redoes them. Returns how many."""
    done = work / "logs" / "completions"
    redone = 0
    for rank in range(tasks):
        if not (done / f"{rank:05d}").is_file():
            continue
        if why_redo(work, rank, tasks=tasks, shards=shards, stats=stats, fingerprint=fingerprint) is None:
            continue
        (done / f"{rank:05d}").unlink()
        (work / "tasks" / f"{rank:05d}.json").unlink(missing_ok=True)
        for stale in (work / "matches").glob(f"*{rank:05d}.parquet"):
            stale.unlink()
        redone += 1
    return redone
