"""The datatrove side of ``resplit audit TARGET --against-corpus SOURCE``: the reader (datatrove's own Parquet or
JSONL reader, each document tagged with its shard and row), resplit's matcher step (:class:`CorpusMatcher`, the
evaluation index of :mod:`.corpus` against each batch of documents) and the record writer (datatrove's
``ParquetWriter``). Imported only when a corpus is checked: ``import split_builders`` never needs datatrove.

The steps are pickled by the executors (datatrove's engine); what they write is Parquet and JSON.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from datatrove.pipeline.base import PipelineStep
from datatrove.pipeline.readers import JsonlReader, ParquetReader
from datatrove.pipeline.writers import ParquetWriter

from split_builders.evidence import corpus_index as corpus


class ShardError(RuntimeError):
    """A shard that could not be read: its path (relative to SOURCE) and the reader's error."""

    def __init__(self, shard: str, detail: str):
        super().__init__(f"shard {shard}: {detail}")
        self.shard, self.detail = shard, detail

    def __reduce__(self):  # sent back from an executor's worker process: rebuilt from its two fields
        return ShardError, (self.shard, self.detail)


def _adapt(self, data: dict, path: str, id_in_file):
    """A row of a shard as a document: its text, its id (the id field, else its row in the shard) and, as
    metadata, its shard (relative to SOURCE), its row and its label (class names where it is a class number).
    A text that is not a string is refused (never turned into one); a row without the field, with null or with
    an empty text is passed on marked (``no_text``) for the matcher to count, not dropped with a warning."""
    ident = data.get(self.id_key)
    label = data.get(self.resplit_label) if self.resplit_label else None
    if label is not None and self.resplit_label_names and isinstance(label, int) and not isinstance(label, bool) \
            and 0 <= label < len(self.resplit_label_names):
        label = self.resplit_label_names[label]
    metadata = {"shard": path, "row": int(id_in_file), "label": None if label is None else str(label)}
    text = data.get(self.text_key)
    if not isinstance(text, str) and text is not None:
        raise ValueError(f"row {id_in_file}: its text field {self.text_key!r} is {type(text).__name__}, not a "
                         "string; give a text field with --text-field")
    if not text:
        metadata["no_text"] = "missing" if self.text_key not in data else "null" if text is None else "empty"
        text = " "  # datatrove drops a document without text: the matcher counts it instead
    return {"text": text, "id": str(id_in_file) if ident is None else str(ident), "metadata": metadata}


class _Tagged:
    """Errors while reading a shard carry the shard's name."""

    def read_file(self, filepath: str):
        try:
            yield from super().read_file(filepath)
        except ShardError:
            raise
        except Exception as error:  # the reader's own error, whatever the format: named with its shard
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ShardError(filepath, detail) from None


class CorpusParquetReader(_Tagged, ParquetReader):
    name = "📒 Parquet (resplit)"


class CorpusJsonlReader(_Tagged, JsonlReader):
    name = "🐿 Jsonl (resplit)"


def reader(settings: dict):
    """datatrove's reader of SOURCE's shards: the files listed in the work folder's ``shards.txt``."""
    common = dict(data_folder=settings["folder"], paths_file=str(Path(settings["work"]) / "shards.txt"),
                  text_key=settings["text_field"], id_key=settings["id_field"] or "id", adapter=_adapt)
    if settings["kind"] == "parquet":
        step = CorpusParquetReader(**common, batch_size=corpus.READ_BATCH, read_metadata=True)
    else:
        step = CorpusJsonlReader(**common)
    step.resplit_label = settings.get("label_field")
    step.resplit_label_names = tuple(settings.get("label_names") or ())
    return step


def _record_of(self, document) -> dict:
    return document.metadata


class CorpusMatcher(PipelineStep):
    """resplit's matcher: each task loads the evaluation index from the work folder, matches batches of
    documents (:meth:`.corpus.EvaluationIndex.match`) and passes one record per match on to the writer; at the
    end it writes its summary (documents, characters, bytes of text, CPU-seconds, peak memory) to
    ``tasks/RANK.json``. A shard that cannot be read is written to ``failed/RANK.json`` and the task fails
    naming it."""

    name = "🔎 resplit matcher"
    type = "🔎 - MATCHER"

    def __init__(self, work: str, batch_docs: int = corpus.BATCH_DOCS, fingerprint: str | None = None):
        super().__init__()
        self.work = str(work)
        self.batch_docs = batch_docs
        self.fingerprint = fingerprint

    def run(self, data, rank: int = 0, world_size: int = 1):
        from datatrove.data import Document

        started = time.process_time()  # this task's CPU-seconds: the cost per core that benchmarks/ fits
        work = Path(self.work)
        for stale in (work / "matches").glob(f"*{rank:05d}.parquet"):  # an earlier, killed attempt of this task
            stale.unlink()
        (work / "failed" / f"{rank:05d}.json").unlink(missing_ok=True)
        (work / "progress" / f"{rank:05d}.json").unlink(missing_ok=True)
        index = corpus.EvaluationIndex.load(work / "index")
        summary = {"documents": 0, "characters": 0, "bytes": 0, "records": 0, "missing_text": 0, "null_text": 0,
                   "empty_text": 0}
        batch = []

        def flush():
            for record in index.match(batch):
                summary["records"] += 1
                yield Document(text="", id=f"{record['config']}/{record['split']}/{record['source_id']}",
                               metadata=record)
            summary["documents"] += len(batch)
            self.stat_update("documents", value=len(batch))
            batch.clear()
            # read by the command's progress bar (corpus_ops.progress_of): the shard being read is not done yet
            _write_json(work / "progress" / f"{rank:05d}.json", {"documents": summary["documents"],
                                                                 "shards_done": max(0, len(seen) - 1)})

        _terminal_quiet()
        shard = None
        seen: set = set()
        try:
            for document in data:
                shard = document.metadata.get("shard")
                seen.add(shard)
                if "no_text" in document.metadata:  # counted, never matched
                    summary[f"{document.metadata['no_text']}_text"] += 1
                    summary["documents"] += document.metadata["no_text"] == "empty"
                    continue
                summary["characters"] += len(document.text)
                summary["bytes"] += len(document.text.encode("utf-8"))
                batch.append(document)
                if len(batch) >= self.batch_docs:
                    with self.track_time():
                        yield from flush()
            with self.track_time():
                yield from flush()
        except Exception as error:  # the shard being read, and the error, for the one line the run prints
            detail = error.detail if isinstance(error, ShardError) else \
                (str(error).splitlines()[0] if str(error) else type(error).__name__)
            _write_json(work / "failed" / f"{rank:05d}.json", {
                "task": rank, "shard": error.shard if isinstance(error, ShardError) else shard, "error": detail,
                "log": f"logs/logs/task_{rank:05d}.log"})
            raise
        self.stat_update("records", value=summary["records"])
        summary["cpu_seconds"] = round(time.process_time() - started, 3)
        summary["peak_rss_kb"] = _peak_rss_kb()
        # what a resume checks before it trusts this task (:mod:`.corpus_resume`): its shards as they were read
        # and the index it matched with
        from split_builders.evidence.corpus_resume import task_shards

        shards = (work / "shards.txt").read_text(encoding="utf-8").splitlines()
        stats = json.loads((work / "shards.json").read_text(encoding="utf-8"))
        summary["shards"] = {s: stats.get(s) for s in task_shards(shards, rank, world_size)}
        summary["index"] = self.fingerprint
        _write_json(work / "tasks" / f"{rank:05d}.json", {"task": rank, **summary})


def _peak_rss_kb() -> int:
    """The peak resident memory of this task's process (Linux's ``VmHWM``: unlike ``ru_maxrss``, not inherited
    from the process that started it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _terminal_quiet() -> None:
    """A task's log stays in its log file under the work folder (datatrove's ``logs/``); the terminal shows none
    of it (the run prints one line per failed task)."""
    import sys

    from datatrove.utils.logging import logger

    for number, handler in list(getattr(logger._core, "handlers", {}).items()):
        if getattr(handler, "_name", None) == "<stderr>":
            logger.remove(number)
    logger.add(sys.stderr, level="CRITICAL")


def writer(work, *, releases: bool = False) -> ParquetWriter:
    """datatrove's ``ParquetWriter`` of the match records: ``matches/RANK.parquet`` (a task without a match
    writes none; ``releases``: tagged with their release)."""
    return ParquetWriter(str(Path(work) / "matches"), output_filename="${rank}.parquet", adapter=_record_of,
                         schema=corpus.record_schema(releases), use_content_defined_chunking=False,
                         write_page_index=False)


def _write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    staging.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
    os.replace(staging, path)


def pipeline(settings: dict) -> list:
    """reader -> resplit's matcher -> writer."""
    return [reader(settings), CorpusMatcher(settings["work"], fingerprint=settings.get("fingerprint")),
            writer(settings["work"], releases=bool(settings.get("releases")))]
