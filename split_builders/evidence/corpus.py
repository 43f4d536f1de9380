"""Contamination at corpus scale (``resplit audit TARGET --against-corpus SOURCE``): every evaluation row of a
target against the documents of a pretraining corpus (Parquet / JSONL(.gz) shards in a folder or glob, or
``hf://datasets/ORG/NAME[@REV]/PATH``), on datatrove's engine (``LocalPipelineExecutor``,
``RayPipelineExecutor``, ``SlurmPipelineExecutor``).

**The evaluation side is indexed once** (:class:`EvaluationIndex`, written to the work folder as Parquet and
``.npy``): the distinct normalised inputs of every evaluation row, their MinHash signatures and LSH bands (the
in-release audit's and ``--against``'s, :mod:`.near_duplicates`: character 5-grams, 64 permutations), and the
word ``N``-gram set of the GPT-3 / lm-evaluation-harness decontamination convention (``--ngram``, default 13;
words by Unicode word boundaries, each Han / kana character one word; an input shorter than ``N`` words is one
n-gram of its own length down to ``--ngram-min`` words, a shorter one has none), so both conventions are
reported.

**The corpus is streamed by datatrove** (:mod:`.corpus_steps`): reader -> resplit's matcher -> writer. Each
document is normalised line by line (the audit's normalisation); its *passages* are its lines, every run of up
to as many consecutive lines as an evaluation input has fields, and the whole document, each compared with the
index unless it cannot reach the threshold (more distinct shingles than the most of any input over the
threshold: an exact bound); candidates are confirmed with the exact Jaccard. Its words are looked up in the
index's vocabulary (Arrow's ``index_in``) and every window of ``N`` known words hashed (prefix sums, numpy) and
looked up in the n-gram set. Each task writes one record per match (:data:`RECORD_COLUMNS`: the evaluation
config, split and ``source_id``; the shard and document; the best Jaccard of its passages; the longest run of
shared words; whether an ``N``-gram is shared; whether a passage is the same normalised input; the document's
label where ``--against-label-field`` names one).

**The merge** (:func:`merge`) reads every task's records, sorts them (the same bytes whatever the task count or
shard order) and gives each evaluation row the tiers of ``--against`` and its strongest evidence (exact,
near-duplicate, n-gram: an n-gram-only row is contaminated unless ``--ngram-policy report``; n-grams in more than
``--ngram-max-matches`` documents left out), so the report, ``--rows`` and ``--write-clean`` are those of
``--against`` (:mod:`.corpus_verdicts`; the corpus side: ``--corpus-matches``).

**The work folder is the resume point**: ``run.json`` (what this run checks: a work folder of another run is
refused), ``shards.txt`` (the shards, sorted) and ``shards.json`` (their sizes and times), ``index/``,
datatrove's ``logs/`` (its ``completions/`` files: a rerun skips the finished tasks it can trust,
:mod:`.corpus_resume`), ``matches/`` (records per task), ``tasks/`` and ``failed/`` (per task).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from split_builders.errors import InvalidParameterError, cannot_write, is_unwritable
from split_builders.evidence.contamination import (EVALUATION_SPLITS, TIERS, _class_names, labels_note,
                                                   other_label_field)
from split_builders.evidence.corpus_index import WORD_NGRAM, WORD_NGRAM_MIN, EvaluationIndex, record_schema
from split_builders.evidence.corpus_verdicts import EVIDENCE, check_matching, counted_kinds, evidence_of
from split_builders.evidence.near_duplicates import NGRAM, NUM_PERM

EXECUTORS = ("local", "slurm", "ray")
FORMATS = {".parquet": "parquet", ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".json.gz": "jsonl",
           ".jsonl.zst": "jsonl", ".ndjson": "jsonl"}
RECORD_COLUMNS = ("config", "split", "source_id", "shard", "row", "document", "jaccard", "longest_ngram",
                  "ngram_overlap", "exact", "label", "ngram_fraction", "ngrams")
_JSONL_ROWS_READ = 100  # rows of a JSONL shard read for its fields and their types
# ---------------------------------------------------------------------------------------------
# SOURCE: its shards, checked before any work
# ---------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    source: str  # as given
    folder: str  # datatrove's data folder (a local folder or an hf:// path)
    kind: str  # parquet | jsonl
    shards: list  # paths relative to folder, sorted
    columns: list  # the first shard's fields
    label_names: tuple = ()
    sizes: dict = field(default_factory=dict)
    types: dict = field(default_factory=dict)  # the first shard's {field: type}
    empty: list = field(default_factory=list)  # shards left out: 0 bytes, or no row at all
    stats: dict = field(default_factory=dict)  # {shard: [size, modification time]} (local shards)


def _format_of(name: str):
    lower = name.lower()
    for suffix in sorted(FORMATS, key=len, reverse=True):
        if lower.endswith(suffix):
            return FORMATS[suffix]
    return None


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def open_corpus(source: str, *, text_field: str, id_field: str | None, label_field: str | None) -> Corpus:
    """SOURCE's shards (a folder, a glob, one file, or an ``hf://`` path), each checked: one format, the text
    field (and the id and label fields asked for) in every shard with one type."""
    from datatrove.io import get_datafolder

    flag = f"--against-corpus {source}"
    if source.startswith("hf://"):
        parts = source.split("/")
        cut = next((k for k, p in enumerate(parts) if _has_glob(p)), len(parts))
        folder, pattern = "/".join(parts[:cut]), "/".join(parts[cut:]) or None
        try:
            data = get_datafolder(folder)
            listed = data.list_files(recursive=True, glob_pattern=pattern)
        except Exception as error:  # offline, no such repository, no access: the Hub's one line
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            offline = " (HF_HUB_OFFLINE is set: this machine reads no Hub file)" \
                if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes") else ""
            raise InvalidParameterError(f"{flag}: cannot reach it{offline}: {detail[:200]}; check the path and your "
                                        "network, or download the shards and give their folder") from None
        fs_open, fs = data.open, None
    else:
        path = Path(source).expanduser()
        if path.is_file():
            folder, listed = str(path.parent), [path.name]
        elif path.is_dir():
            folder = str(path)
            listed = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()
                            and not any(part.startswith(".") for part in p.relative_to(path).parts))
        elif _has_glob(source):
            parts = path.parts
            cut = next(k for k, p in enumerate(parts) if _has_glob(p))
            base = Path(*parts[:cut]) if cut else Path(".")
            pattern = str(Path(*parts[cut:]))
            folder = str(base)
            listed = sorted(str(p.relative_to(base)) for p in base.glob(pattern) if p.is_file()) \
                if base.is_dir() else []
            if not listed:
                raise InvalidParameterError(f"{flag}: the pattern matches no file; check it (quote it so that the "
                                            "shell does not expand it)")
        else:
            raise InvalidParameterError(f"{flag} does not exist; give a folder, a glob or a file of Parquet or "
                                        "JSONL(.gz) shards, or hf://datasets/ORG/NAME/PATH")
        local = get_datafolder(folder)
        fs_open, fs = local.open, local
    shards = sorted(p for p in listed if _format_of(p))
    if not shards:
        raise InvalidParameterError(f"{flag} holds no Parquet or JSONL(.gz) shard (files: "
                                    f"{', '.join(listed[:5]) or 'none'}{' ...' if len(listed) > 5 else ''})")
    kinds = {_format_of(p) for p in shards}
    if len(kinds) > 1:
        one = {k: next(p for p in shards if _format_of(p) == k) for k in sorted(kinds)}
        raise InvalidParameterError(f"{flag} mixes formats ({', '.join(f'{p}: {k}' for k, p in one.items())}); "
                                    "give the shards of one format (a glob such as '*.parquet')")
    kind = kinds.pop()
    wanted = [f for f in (text_field, id_field, label_field) if f]
    checked = shards if not source.startswith("hf://") else shards[:1]
    stats = {shard: _stat(fs, shard) for shard in shards} if fs is not None else {}
    first_fields = None
    label_names: tuple = ()
    empty = [shard for shard in checked if stats.get(shard, [1])[0] == 0]
    for shard in checked:
        if shard in empty:
            continue
        fields, names = _shard_fields(fs_open, shard, kind, flag)
        if fields is None:  # a JSONL shard without a row (an empty gzip): left out and counted
            empty.append(shard)
            continue
        if kind == "jsonl" and fields.get(text_field) == "NoneType":
            fields[text_field] = "str"  # only nulls in the rows read: counted while reading, not a type
        if fields.get(text_field) not in (None, "string", "str"):
            raise InvalidParameterError(f"{flag}: {shard}: its text field {text_field!r} is {fields[text_field]}, "
                                        "not text; name the text field with --text-field")
        if first_fields is None:
            first_fields, first_shard = fields, shard
            label_names = tuple(names.get(label_field) or ()) if label_field else ()
            missing = [f for f in wanted if f not in fields]
            if text_field in missing:
                raise InvalidParameterError(f"{flag}: {shard} has no text field {text_field!r} (fields: "
                                            f"{', '.join(fields) or 'none'}); name it with --text-field")
            if missing:
                flag_of = {id_field: "--id-field", label_field: "--against-label-field"}
                raise InvalidParameterError(f"{flag}: {shard} has no field {missing[0]!r} (fields: "
                                            f"{', '.join(fields)}); name another with {flag_of[missing[0]]}")
            continue
        differ = [f for f in wanted if fields.get(f) != first_fields.get(f)
                  and not (kind == "jsonl" and f == text_field)]  # a JSONL text: checked row by row
        if differ:
            f = differ[0]
            raise InvalidParameterError(
                f"{flag}: shards of mixed schema: {first_shard} has {f!r} as {first_fields.get(f) or 'no field'}, "
                f"{shard} as {fields.get(f) or 'no field'} (fields: {', '.join(fields) or 'none'}); give shards of "
                "one schema")
    if first_fields is None:
        raise InvalidParameterError(f"{flag}: every shard is empty ({', '.join(empty[:5])}"
                                    f"{' ...' if len(empty) > 5 else ''}); give shards with documents")
    kept = [shard for shard in shards if shard not in empty]
    return Corpus(source, folder, kind, kept, list(first_fields), label_names, types=first_fields, empty=empty,
                  stats={shard: stats[shard] for shard in kept if shard in stats})


def _stat(fs, shard: str) -> list:
    """``[size, modification time]`` of a local shard (what a resume checks before it trusts a finished task)."""
    info = fs.info(shard)
    return [int(info.get("size") or 0), info.get("mtime") or info.get("created")]


def _type_name(kind) -> str:
    """An Arrow type as the schema check compares it: ``large_string`` is ``string`` (and so on)."""
    return str(kind).replace("large_string", "string").replace("large_binary", "binary").replace("large_list", "list")


def _shard_fields(fs_open, shard: str, kind: str, flag: str):
    """``({field: type}, {field: class names})`` of one shard: a Parquet file's schema, a JSONL file's first row
    (``(None, {})``: a JSONL shard without a row)."""
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            with fs_open(shard, "rb") as handle:
                schema = pq.read_schema(handle)
            return {name: _type_name(schema.field(name).type) for name in schema.names}, _class_names(schema)
        fields: dict = {}
        seen = 0
        try:
            with fs_open(shard, "rt", compression="infer") as handle:
                for line in handle:
                    if line.strip():
                        row = json.loads(line)
                        if not isinstance(row, dict):
                            raise ValueError("a row is not a JSON object")
                        for k, v in row.items():  # a field's type: its first value that is not null
                            if fields.get(k, "NoneType") == "NoneType":
                                fields[k] = type(v).__name__
                        seen += 1
                        if seen >= _JSONL_ROWS_READ:
                            break
        except Exception:
            if not seen:
                raise
            # a shard readable at first and cut short later: its task fails naming it (the others are kept)
        return (fields if seen else None), {}
    except InvalidParameterError:
        raise
    except Exception as error:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidParameterError(f"{flag}: {shard} is not a readable {kind.upper()} shard ({detail[:200]}); "
                                    "restore it or leave it out with a glob") from None


# ---------------------------------------------------------------------------------------------
# The run: the work folder, the executor, the merge
# ---------------------------------------------------------------------------------------------


def prepare_work(work, *, target: str, corpus: Corpus, index: EvaluationIndex, settings: dict) -> dict:
    """The work folder of this run: made, or resumed when ``run.json`` there records this same run; a folder
    of another run (another target, SOURCE or setting), or one resplit did not make, is refused."""
    work = Path(work).expanduser()
    run = {"target": target, "target_fingerprint": index.fingerprint(), "source": corpus.source,
           "shards": corpus.shards, **settings}
    recorded_at = work / "run.json"
    if recorded_at.is_file():
        try:
            recorded = json.loads(recorded_at.read_text(encoding="utf-8"))
        except ValueError:
            recorded = {}
        if recorded != run:
            if recorded.get("target_fingerprint") != run["target_fingerprint"] or recorded.get("source") != \
                    corpus.source or recorded.get("shards") != corpus.shards:
                what = (f"TARGET {recorded.get('target')} against SOURCE {recorded.get('source')}; this is TARGET "
                        f"{target} against SOURCE {corpus.source}")
                if recorded.get("also") != run.get("also"):  # several releases in one pass: never mixed
                    also = lambda r: ", ".join(r.get("also") or []) or "none"  # noqa: E731
                    what = (f"TARGET {recorded.get('target')} with --also {also(recorded)} against SOURCE "
                            f"{recorded.get('source')}; this is TARGET {target} with --also {also(run)}")
                elif recorded.get("target") == target and recorded.get("source") == corpus.source:
                    what += " (its rows or shards have changed since)"
            else:
                changed = sorted(k for k in run if recorded.get(k) != run[k])
                what = (f"TARGET {target} against SOURCE {corpus.source} with other settings "
                        f"({', '.join(f'{k}: {recorded.get(k)} there, {run[k]} now' for k in changed)})")
            raise InvalidParameterError(f"--work {work} holds the run of {what}; give another --work folder (its "
                                        "records are kept)")
    elif work.exists() and (not work.is_dir() or any(work.iterdir())):
        raise InvalidParameterError(f"--work {work} is not an empty folder and no resplit corpus run made it; give "
                                    "another --work folder (nothing there is touched)")
    else:
        work.mkdir(parents=True, exist_ok=True)
        _write_text(work / "shards.txt", "".join(f"{s}\n" for s in corpus.shards))
        index.save(work / "index")
        _write_text(recorded_at, json.dumps(run, sort_keys=True, indent=1))
    at = work / "index" / "index.json"
    try:
        saved = json.loads(at.read_text(encoding="utf-8")).get("fingerprint") if at.is_file() else None
    except ValueError:
        saved = None
    if saved != index.fingerprint():  # made by a run killed before its index was in place, or not this run's
        shutil.rmtree(work / "index", ignore_errors=True)
        index.save(work / "index")
    return run


def _write_text(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, path)


def executor_for(kind: str, steps: list, *, work: Path, tasks: int, workers: int, slurm: dict | None = None):
    """datatrove's executor of ``kind`` (checked beforehand: :func:`.corpus_ops.check_executor`); Ray's is used
    inside :func:`.corpus_ops.ray_session`."""
    logs = str(work / "logs")
    if kind == "local":
        from datatrove.executor import LocalPipelineExecutor

        return LocalPipelineExecutor(steps, tasks=tasks, workers=workers, logging_dir=logs)
    if kind == "ray":
        from datatrove.executor.ray import RayPipelineExecutor

        return RayPipelineExecutor(steps, tasks=tasks, workers=workers, logging_dir=logs, cpus_per_task=1,
                                   mem_per_cpu_gb=1)
    from split_builders.evidence.corpus_ops import slurm_executor

    return slurm_executor(steps, work=work, tasks=tasks, workers=workers, slurm=slurm or {})


def completed_tasks(work: Path, tasks: int) -> list[int]:
    done = work / "logs" / "completions"
    return [k for k in range(tasks) if (done / f"{k:05d}").is_file()]


_OS_ERROR = re.compile(r"^\w*Error: \[Errno (\d+)\] ([^:]+)(?:: '(.*)')?$")


def refused_write(work: Path, tasks: int) -> OSError | None:
    """The write the operating system refused an unfinished task (a full disk, no permission, a read-only file
    system: :func:`~split_builders.errors.is_unwritable`), read from the last line of its datatrove log (the task
    may run in another process, and a full disk leaves it no room to record more); None where none did."""
    for k in range(tasks):
        if k in set(completed_tasks(work, tasks)):
            continue
        try:
            lines = (work / "logs" / "logs" / f"task_{k:05d}.log").read_text(encoding="utf-8",
                                                                            errors="replace").splitlines()
        except OSError:
            continue
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        match = _OS_ERROR.match(last)
        if match:
            error = OSError(int(match.group(1)), match.group(2), match.group(3))
            if is_unwritable(error):
                return error
    return None


def failure_line(work: Path, tasks: int, command_hint: str) -> str:
    """One line: which tasks are unfinished and, for those that failed reading a shard, which shard."""
    missing = [k for k in range(tasks) if k not in set(completed_tasks(work, tasks))]
    failed = []
    for k in missing:
        at = work / "failed" / f"{k:05d}.json"
        if at.is_file():
            record = json.loads(at.read_text(encoding="utf-8"))
            failed.append(f"task {k} failed on shard {record['shard']} ({record['error'][:160]}; its log: "
                          f"{work / record['log']})")
    others = [k for k in missing if not (work / "failed" / f"{k:05d}.json").is_file()]
    said = "; ".join(failed + ([f"task(s) {', '.join(map(str, others))} did not finish"] if others else []))
    return (f"{said}; {tasks - len(missing)} of {tasks} tasks finished and are kept: fix it and run the same command "
            f"again ({command_hint}) to finish the others")


def run_corpus(data, fields, source: str, *, target: str, **options):
    """Check every evaluation row of ``data`` against the corpus ``source`` on datatrove's ``executor``:
    ``(report, rows, records)`` (the report and rows of ``--against``, and the sorted match records), or
    ``(None, None, outcome)`` on Slurm when the result is not there yet: the job array submitted, or the one
    recorded in the work folder still in the queue (:func:`.corpus_ops.slurm_line` says which)."""
    results, outcome = run_releases([(target, data, fields)], source, **options)
    if results is None:
        return None, None, outcome
    ((_, report, rows, records),) = results
    return report, rows, records


def run_releases(releases: list, source: str, *, work, threshold: float, executor: str = "local",
                 tasks: int = 1, workers: int | None = None, ngram: int = WORD_NGRAM, text_field: str = "text",
                 id_field: str | None = None, label_field: str | None = None, slurm: dict | None = None,
                 label_names=None, progress: bool = False, ngram_min: int = WORD_NGRAM_MIN,
                 ngram_policy: str = "contaminated", ngram_max_matches: int | None = None,
                 ray_address: str | None = None):
    """:func:`run_corpus` of one or several releases (``[(name, data, fields), ...]``, the first the command's
    TARGET) in one pass over the corpus (:mod:`.corpus_releases`): ``([(name, report, rows, records), ...],
    None)``, or ``(None, outcome)`` on Slurm when the result is not there yet."""
    from split_builders.evidence import corpus_ops

    if executor not in EXECUTORS:
        raise InvalidParameterError(f"--executor {executor}: one of {', '.join(EXECUTORS)}")
    corpus_ops.check_executor(executor, slurm=slurm)  # before any work or file
    check_matching(threshold=threshold, ngram=ngram, ngram_min=ngram_min, ngram_policy=ngram_policy,
                   ngram_max_matches=ngram_max_matches)
    try:
        import datatrove  # noqa: F401
    except ImportError:
        raise InvalidParameterError("--against-corpus needs datatrove: pip install 'resplit[corpus]'") from None
    corpus = open_corpus(source, text_field=text_field, id_field=id_field, label_field=label_field)
    tasks = min(tasks, len(corpus.shards))  # datatrove gives each task whole shards: more tasks would idle
    names = [name for name, _, _ in releases]
    indexes = [EvaluationIndex.build(data.parts, fields, threshold=threshold, ngram=ngram, ngram_min=ngram_min,
                                     where=data.where, label_names=label_names) for _, data, fields in releases]
    index = indexes[0]  # TARGET's: the corpus's label field is resolved from its label
    if len(releases) > 1:
        from split_builders.evidence.corpus_releases import combine

        matched = combine(indexes, names)
    else:
        matched = index
    # the corpus's label, resolved as --against resolves another dataset's: asked for, else the target's label
    # name, else label / labels / gold_label; none: labels are not compared (and said so)
    label_field = other_label_field(index.settings["label_field"], corpus.columns, label_field)
    if label_field and not corpus.label_names:
        corpus = open_corpus(source, text_field=text_field, id_field=id_field, label_field=label_field)
    read_as_classes = bool(label_field and not corpus.label_names and index.settings["label_names"]
                           and str(corpus.types.get(label_field, "")).startswith(("int", "uint"))
                           and all(i.settings["label_names"] == index.settings["label_names"] for i in indexes))
    if read_as_classes:  # class numbers without names: read as the release's classes, as --against reads them
        corpus.label_names = tuple(index.settings["label_names"])
    work = Path(work).expanduser()
    settings = {"threshold": threshold, "word_ngram": ngram, "word_ngram_min": index.settings["word_ngram_min"],
                "text_field": text_field, "id_field": id_field, "label_field": label_field,
                "label_names": list(corpus.label_names), "tasks": tasks,
                **({"also": names[1:]} if len(names) > 1 else {})}  # every release of the run: never mixed
    prepare_work(work, target=names[0], corpus=corpus, index=matched, settings=settings)
    from split_builders.evidence.corpus_resume import check_finished

    redone = check_finished(work, tasks=tasks, shards=corpus.shards, stats=corpus.stats,
                            fingerprint=matched.fingerprint())
    _write_text(work / "shards.json", json.dumps(corpus.stats, sort_keys=True))  # what each task records
    hint = f"--work {work}"
    job = corpus_ops.recorded_job(work) if executor == "slurm" else None
    if job is not None and len(completed_tasks(work, tasks)) < tasks:
        queue = corpus_ops.queued(job)
        if queue:  # the job array of an earlier run is pending or running: never submitted twice
            return None, {"status": "queued", "job_id": job["job_id"], "queue": queue, "tasks": tasks}
    ran: dict = {}
    if len(completed_tasks(work, tasks)) < tasks:
        from split_builders.evidence import corpus_steps

        steps = corpus_steps.pipeline({"folder": corpus.folder, "work": str(work), "kind": corpus.kind,
                                       "fingerprint": matched.fingerprint(), "releases": len(names) > 1,
                                       "text_field": text_field, "id_field": id_field, "label_field": label_field,
                                       "label_names": corpus.label_names})
        if workers is None:  # Slurm: the whole job array at once; here: one task at a time
            workers = -1 if executor == "slurm" else 1
        runner = executor_for(executor, steps, work=work, tasks=tasks,
                              workers=-1 if workers == -1 else max(1, min(workers, tasks)), slurm=slurm)
        import io

        _quiet_logs()
        cluster = submitted = None
        session = corpus_ops.ray_session(ray_address, workers=max(1, workers)) if executor == "ray" \
            else contextlib.nullcontext()
        sizes = {shard: stat[0] for shard, stat in corpus.stats.items()}  # local shards: bytes, for the ETA
        watched = corpus_ops.watch_progress(work, corpus.shards, tasks, enabled=progress, sizes=sizes) \
            if executor != "slurm" else contextlib.nullcontext({})
        try:  # datatrove's own lines (per task: in its log under the work folder) stay off the terminal
            with session as cluster, watched as ran, corpus_ops.children_end_with_this_process(), \
                    contextlib.redirect_stderr(io.StringIO()):
                if executor == "slurm":
                    submitted = corpus_ops.submit(runner, work)
                else:
                    runner.run()
        except InvalidParameterError:
            raise
        except Exception:  # a task failed: said below from the work folder, whatever the executor
            pass
        finally:
            _quiet_logs()
        if executor == "slurm" and submitted and len(completed_tasks(work, tasks)) < tasks:  # merged by a rerun
            return None, {"status": "submitted", "tasks": tasks, **submitted}
        if executor == "ray":
            ran["ray"] = cluster
    if len(completed_tasks(work, tasks)) < tasks:
        refused = refused_write(work, tasks)
        if refused is not None:  # a full disk (or no permission) under --work: the one line every writer gives
            raise cannot_write(refused, "the corpus audit's work files", where=work, instead="another --work",
                               kept="the tasks finished so far are kept: run the same command again to resume")
        raise InvalidParameterError(failure_line(work, tasks, hint))
    options = dict(tasks=tasks, executor=executor, ngram_policy=ngram_policy, ngram_max_matches=ngram_max_matches)
    if len(names) > 1:  # each release's records, as its own run writes them, merged as its own run merges them
        from split_builders.evidence.corpus_releases import gram_translation, named, release_records

        records = read_records(work, releases=True)
        results = [(name, *merge(work, one, corpus, records=release_records(records, k, gram_translation(matched, one)),
                                 **options)) for k, (name, one) in enumerate(zip(names, indexes))]
        _write_records(work / "records.parquet", named([result[3] for result in results], names))
    else:
        results = [(names[0], *merge(work, index, corpus, **options))]
    for _, report, _, _ in results:
        report["corpus"].update(redone=redone, empty_shards=list(corpus.empty))
        if read_as_classes:
            report["corpus"]["labels_read_as"] = list(corpus.label_names)
        if ran:  # this run's scan: documents, seconds, rate (none where every task had finished before)
            report["corpus"]["this_run"] = ran
    return results, None


def _quiet_logs() -> None:
    """datatrove's log lines go to the task logs under the work folder; the terminal gets warnings only."""
    import sys

    from datatrove.utils.logging import logger

    os.environ.setdefault("LOGURU_LEVEL", "WARNING")  # the default handler of the executor's worker processes
    logger.remove()
    logger.add(sys.stderr, level="WARNING")


def read_records(work: Path, *, releases: bool = False):
    """Every task's match records (``releases``: an index of several releases, each record tagged)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = sorted((work / "matches").glob("*.parquet"))
    schema = record_schema(releases)
    return pa.concat_tables([pq.read_table(f, schema=schema) for f in files]) if files else schema.empty_table()


def merge(work: Path, index: EvaluationIndex, corpus: Corpus, *, tasks: int, executor: str,
          ngram_policy: str = "contaminated", ngram_max_matches: int | None = None, records=None):
    """Every task's records, sorted, and from them each evaluation row's tier, best match and strongest evidence
    (:data:`EVIDENCE`): ``(report, rows, records)`` as :func:`~.contamination.contamination` gives them for
    ``--against``, the rows with ``evidence`` and ``ngram_fraction``. A row whose only evidence is a shared word
    n-gram is contaminated (``ngram_policy="contaminated"``, the GPT-3 / lm-evaluation-harness convention) or
    stays clean with its evidence reported (``"report"``). ``records``: one release's of several
    (:mod:`.corpus_releases`; written by its caller), else every task's, written to ``records.parquet``."""
    import pyarrow as pa

    write = records is None
    records = read_records(work) if write else records
    records = records.sort_by([("config", "ascending"), ("split", "ascending"), ("source_id", "ascending"),
                               ("shard", "ascending"), ("row", "ascending")])
    summaries = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((work / "tasks").glob("*.json"))
                 if int(p.stem) < tasks]
    documents = sum(s["documents"] for s in summaries)
    text_bytes = sum(s["bytes"] for s in summaries)
    without_text = {kind: sum(s.get(f"{kind}_text", 0) for s in summaries) for kind in ("missing", "null", "empty")}
    label_field = index.settings["label_field"]
    run = json.loads((work / "run.json").read_text(encoding="utf-8"))
    corpus_label = run.get("label_field")
    compared = bool(label_field and corpus_label)
    # the best match of each evaluation row: highest Jaccard, then (an n-gram only) the highest fraction of its
    # n-grams, ties to the first shard and row
    kinds, fractions, common = evidence_of(records, max_matches=ngram_max_matches)
    counted = counted_kinds(ngram_policy)
    rec = {name: records.column(name).to_pylist() for name in ("config", "split", "source_id", "shard", "row",
                                                               "document", "jaccard", "label")}
    eval_rows = index.rows
    eval_label = {(c, s, i): lab for c, s, i, lab in zip(*(eval_rows.column(n).to_pylist()
                                                            for n in ("config", "split", "source_id", "label")))}
    best_input: dict = {}
    best_label: dict = {}
    strongest: dict = {}
    fraction_of: dict = {}
    order = sorted((k for k in range(records.num_rows) if kinds[k] in counted),
                   key=lambda k: (rec["jaccard"][k] is None, -(rec["jaccard"][k] or 0.0), -(fractions[k] or 0.0),
                                  rec["shard"][k], rec["row"][k]))
    for k in order:
        key = (rec["config"][k], rec["split"][k], rec["source_id"][k])
        best_input.setdefault(key, k)
        if compared and rec["label"][k] is not None and rec["label"][k] == eval_label.get(key):
            best_label.setdefault(key, k)
    for k in range(records.num_rows):
        key = (rec["config"][k], rec["split"][k], rec["source_id"][k])
        if kinds[k] is not None and (key not in strongest or EVIDENCE.index(kinds[k]) < EVIDENCE.index(strongest[key])):
            strongest[key] = kinds[k]
        if fractions[k] is not None and fractions[k] > fraction_of.get(key, -1.0):
            fraction_of[key] = fractions[k]
    exact = {key for key, kind in strongest.items() if kind == "exact"}
    grams = set(fraction_of)
    report_splits: dict = {}
    tables = []
    by_part: dict = {}
    for c, s, i in zip(*(eval_rows.column(n).to_pylist() for n in ("config", "split", "source_id"))):
        by_part.setdefault((c, s), []).append(i)
    for (config, split), ids in by_part.items():
        ids = sorted(ids)
        tiers, shard, doc, jac = [], [], [], []
        for i in ids:
            key = (config, split, i)
            k = best_label.get(key, best_input.get(key))
            tiers.append("input_label_contaminated" if key in best_label else "input_contaminated"
                         if key in best_input else "clean")
            shard.append(rec["shard"][k] if k is not None else None)
            doc.append(rec["document"][k] if k is not None else None)
            jac.append(rec["jaccard"][k] if k is not None else None)
        n = len(ids)
        counts = {t: tiers.count(t) for t in TIERS}
        entry = {"rows": n, **counts, "exact": sum((config, split, i) in exact for i in ids),
                 "ngram_overlap": sum((config, split, i) in grams for i in ids),
                 "ngram_only": sum(strongest.get((config, split, i)) == "ngram" for i in ids)}
        entry["rates"] = {t: round(counts[t] / n, 4) if n else 0.0 for t in TIERS}
        if not compared and label_field:
            entry["input_label_contaminated"] = None
            entry["rates"]["input_label_contaminated"] = None
        report_splits.setdefault(config, {})[split] = entry
        tables.append(pa.table({
            "config": pa.array([config] * n, pa.string()), "split": pa.array([split] * n, pa.string()),
            "source_id": pa.array(ids, pa.int64()), "tier": pa.array(tiers, pa.string()),
            "match_dataset": pa.array([corpus.source if t != "clean" else None for t in tiers], pa.string()),
            "match_split": pa.array(shard, pa.string()), "match_id": pa.array(doc, pa.string()),
            "jaccard": pa.array(jac, pa.float64()),
            "evidence": pa.array([strongest.get((config, split, i)) for i in ids], pa.string()),
            "ngram_fraction": pa.array([fraction_of.get((config, split, i)) for i in ids], pa.float64())}))
    # configs in the index's order, splits in theirs
    report_splits = {c: {s: report_splits[c][s] for s in EVALUATION_SPLITS if s in report_splits[c]}
                     for c in dict.fromkeys(eval_rows.column("config").to_pylist())}
    band = index.band
    report = {"threshold": index.settings["threshold"], "ngram": NGRAM, "num_perm": NUM_PERM, "bands": band.bands,
              "rows_per_band": band.rows, "input_fields": index.settings["input_fields"], "label_field": label_field,
              **({"labels_compared": False, "labels_note": labels_note([f"{corpus.source} (corpus)"], all_of_them=True)}
                 if label_field and not compared else {}),
              "checked": [{"dataset": corpus.source, "split": "corpus", "rows": documents,
                           "fields": [run.get("text_field")],
                           "label": corpus_label}],
              "corpus": {"shards": len(corpus.shards), "documents": documents, "text_bytes": text_bytes,
                         "tasks": tasks, "executor": executor, "records": records.num_rows,
                         "word_ngram": index.settings["word_ngram"],
                         "word_ngram_min": index.settings["word_ngram_min"], "ngram_policy": ngram_policy,
                         "ngram_max_matches": ngram_max_matches, "common_ngrams": common,
                         "without_text": without_text},
              "against": report_splits}
    rows = pa.concat_tables(tables) if tables else None
    if write:
        _write_records(work / "records.parquet", records)
    return report, rows, records


def _write_records(path: Path, records) -> None:
    import pyarrow.parquet as pq

    staging = path.with_name(f".{path.name}.tmp")
    pq.write_table(records, staging)
    os.replace(staging, path)


def default_work(target: str, source: str, also=()) -> Path:
    """The work folder when ``--work`` is not given: ``resplit-corpus-<hash of TARGET, SOURCE and the --also
    releases>`` here (the same command resumes in it)."""
    digest = hashlib.sha256("\0".join([target, source, *also]).encode()).hexdigest()[:12]
    return Path(f"resplit-corpus-{digest}")


def format_corpus(report: dict) -> list[str]:
    """The terminal lines a corpus run adds below ``--against``'s table."""
    c = report["corpus"]
    notes = []
    missing = {k: v for k, v in (c.get("without_text") or {}).items() if v}
    if missing:
        notes.append("rows without text (not matched): " + ", ".join(f"{v} {k}" for k, v in missing.items()))
    if c.get("empty_shards"):
        notes.append(f"empty shards left out: {len(c['empty_shards'])} ({', '.join(c['empty_shards'][:3])}"
                     f"{' ...' if len(c['empty_shards']) > 3 else ''})")
    if c.get("labels_read_as"):
        notes.append("the corpus's labels are class numbers without names: read as the release's classes in order ("
                     + ", ".join(f"{k} {name}" for k, name in enumerate(c["labels_read_as"])) + ")")
    if c.get("redone"):
        notes.append(f"finished tasks redone (their shards, index or records changed): {c['redone']}")
    return [f"corpus: {c['documents']} documents ({c['text_bytes'] / 1e9:.3f} GB of text) in {c['shards']} shards, "
            f"{c['tasks']} task(s) on the {c['executor']} executor; {c['records']} match records; "
            f"word {c['word_ngram']}-gram overlap (GPT-3 / lm-evaluation-harness; inputs of "
            f"{c.get('word_ngram_min')} to {c['word_ngram'] - 1} words: the whole input; a shared n-gram counts as "
            f"{'contamination' if c.get('ngram_policy') == 'contaminated' else 'evidence only'}): "
            + ", ".join(f"{config}/{split} {e['ngram_overlap']}" for config, splits in report["against"].items()
                        for split, e in splits.items())] + notes

