"""How ``resplit audit TARGET --against-corpus SOURCE`` runs on datatrove's executors (:mod:`.corpus` decides
what is matched; this module only where and how): the checks of an executor before anything is written, Ray as
Ray users run it (attached to a running cluster, started locally only when none runs), Slurm job control (the
job id recorded in the work folder, a job still in the queue never submitted twice, only unfinished tasks
resubmitted) and the progress of a scan read from the tasks' progress files.

No datatrove or Ray at import: each is imported where an executor is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from split_builders.errors import InvalidParameterError

PROGRESS_EVERY = 1.0  # seconds between two reads of the tasks' progress files
_SLURM_TOOLS = ("sbatch", "squeue")


def check_executor(kind: str, *, slurm: dict | None = None) -> None:
    """What ``kind`` needs on this machine, checked before any work or file: Ray importable; Slurm's ``sbatch``
    and ``squeue`` (job control) on PATH and a partition."""
    if kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise InvalidParameterError("--executor ray needs Ray: pip install 'resplit[ray]'") from None
    if kind == "slurm":
        missing = [tool for tool in _SLURM_TOOLS if shutil.which(tool) is None]
        if missing:
            raise InvalidParameterError(f"--executor slurm needs Slurm's {' and '.join(missing)} on this machine (run "
                                        "it on the cluster's login node), or use --executor local or ray")
        if not (slurm or {}).get("partition"):
            raise InvalidParameterError("--executor slurm needs --slurm-partition (the partition its tasks run on)")


_END_WITH_PARENT = threading.Event()  # set while processes forked here should end with this one
_AT_FORK = []  # the fork hook, registered once (os.register_at_fork has no unregister)


def _end_with_parent() -> None:
    """In a child just forked: ask Linux to SIGKILL it when its parent ends (``PR_SET_PDEATHSIG``), and end
    now if the parent already has."""
    if not _END_WITH_PARENT.is_set():
        return
    import ctypes
    import signal

    parent = _END_WITH_PARENT.parent  # the pid of the process that forked (set with the event)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died between the fork and the prctl
        os._exit(1)
    _END_WITH_PARENT.parent = os.getpid()  # for the processes this child forks in turn


@contextlib.contextmanager
def children_end_with_this_process():
    """Inside, every process this one forks (a ``multiprocess`` manager or pool, say) is killed by the kernel when
    this process ends, however it ends: after a SIGKILL of the command, none of them is left orphaned. SIGTERM
    and Ctrl-C end them through :func:`~split_builders.distributed.sigterm_as_interrupt` (the CLI's) and their
    pools' own cleanup; this covers what no
    handler can (SIGKILL, the out-of-memory killer). Linux only; elsewhere nothing changes."""
    if not os.path.exists("/proc/self") or not hasattr(os, "register_at_fork"):
        yield
        return
    if not _AT_FORK:
        os.register_at_fork(after_in_child=_end_with_parent)
        _AT_FORK.append(True)
    _END_WITH_PARENT.parent = os.getpid()
    _END_WITH_PARENT.set()
    try:
        yield
    finally:
        _END_WITH_PARENT.clear()


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------


def _running_cluster():
    """The address ``ray.init()`` would connect to (``RAY_ADDRESS``, else the cluster ``ray start`` recorded on
    this machine), or None where it would start one (Ray's own lookup; None where this Ray lacks it)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:
        return os.environ.get("RAY_ADDRESS") or None
    try:
        return canonicalize_bootstrap_address(None)
    except Exception:  # an unreadable record: as if none
        return None


@contextlib.contextmanager
def ray_session(address: str | None, *, workers: int):
    """Ray for one run, as a Ray user runs a job: a session already open in this process is used as it is; else
    ``--ray-address`` (an address or ``auto``), ``RAY_ADDRESS`` or a cluster ``ray start`` runs on this machine
    is attached to, with no resource arguments (the cluster sets them); only where none runs is a local Ray of
    ``workers`` CPUs started. Yields ``{"address", "attached"}``; what this function opened it closes (a local
    Ray is stopped, an attached cluster is left running)."""
    import ray

    if ray.is_initialized():
        yield {"address": ray.get_runtime_context().gcs_address, "attached": True}
        return
    found = address or _running_cluster()
    kept = _signal_handlers()  # ray.init installs its own SIGTERM handler, which ray.shutdown leaves behind
    try:
        if found:
            context = ray.init(address=address, log_to_driver=False)  # None: Ray's lookup, as found above
        else:
            context = ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, ValueError, RuntimeError) as error:
        _restore_signal_handlers(kept)
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidParameterError(f"--executor ray: cannot attach to the Ray cluster at {found} ({detail[:200]}); "
                                    "start it (ray start --head), or give another --ray-address / RAY_ADDRESS") \
            from None
    try:
        yield {"address": context.address_info.get("gcs_address") or found, "attached": bool(found)}
    finally:
        ray.shutdown()
        _restore_signal_handlers(kept)


def _signal_handlers() -> dict:
    """This process's SIGTERM and SIGINT handlers (only the main thread can set them: none elsewhere)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}


def _restore_signal_handlers(kept: dict) -> None:
    import signal

    for number, handler in kept.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)


# ---------------------------------------------------------------------------------------------
# Slurm
# ---------------------------------------------------------------------------------------------


def slurm_executor(steps: list, *, work: Path, tasks: int, workers: int, slurm: dict):
    """datatrove's ``SlurmPipelineExecutor`` with the account, QoS, partition and time asked for (no QoS line
    where none is asked for: the cluster's default)."""
    from datatrove.executor.slurm import SlurmPipelineExecutor

    venv = os.environ.get("VIRTUAL_ENV")
    return SlurmPipelineExecutor(steps, tasks=tasks, workers=workers, logging_dir=str(work / "logs"),
                                 time=slurm.get("time"), partition=slurm["partition"], qos=slurm.get("qos"),
                                 sbatch_args={"account": slurm["account"]} if slurm.get("account") else None,
                                 job_name="resplit-corpus", cpus_per_task=1, mem_per_cpu_gb=4,
                                 venv_path=f"{venv}/bin/activate" if venv else None,
                                 slurm_logs_folder=str(work / "slurm"))


def _slurm(command: list) -> list[str]:
    """The output lines of a Slurm query; one line naming it where it fails."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise InvalidParameterError(f"--executor slurm: {command[0]} failed ({error}); check Slurm on this machine "
                                    "and run the same command again") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        raise InvalidParameterError(f"--executor slurm: {' '.join(command)} failed ({detail[:200]}); check Slurm "
                                    "on this machine and run the same command again")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def recorded_job(work: Path) -> dict | None:
    """The job array this work folder last submitted (``slurm.json``: its id and the resplit tasks of its array
    tasks, in order), or None."""
    try:
        return json.loads((work / "slurm.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def queued(job: dict) -> list[str]:
    """``squeue``'s lines (``ARRAY_TASK STATE``) of the recorded job's tasks still pending or running; empty
    where none is."""
    return _slurm(["squeue", "--noheader", "--jobs", str(job["job_id"]), "--format", "%i %T"])


def finished_states(job: dict) -> dict:
    """``{resplit task: state}`` of the recorded job's array tasks as ``sacct`` gives them (FAILED, TIMEOUT,
    PREEMPTED, ...); empty where ``sacct`` is not on this machine or fails (accounting off)."""
    if shutil.which("sacct") is None:
        return {}
    try:
        lines = _slurm(["sacct", "--noheader", "--parsable2", "--jobs", str(job["job_id"]), "--format",
                        "JobID,State"])
    except InvalidParameterError:
        return {}
    states = {}
    for line in lines:
        ident, _, state = line.partition("|")
        head, _, index = ident.partition("_")
        if head == str(job["job_id"]) and index.isdigit() and int(index) < len(job["ranks"]):
            states[job["ranks"][int(index)]] = state.split()[0] if state else "?"
    return states


def submit(runner, work: Path) -> dict:
    """Submit the job array of the unfinished tasks (datatrove skips the finished ones) and record it in
    ``slurm.json``: ``{"job_id", "ranks", "previous"}``."""
    previous = recorded_job(work)
    states = finished_states(previous) if previous else {}
    try:
        runner.run()
    except subprocess.CalledProcessError as error:  # sbatch refused the job (account, QoS, partition, limits)
        detail = (error.stderr or error.output or b"").decode(errors="replace").strip().splitlines()
        raise InvalidParameterError(f"--executor slurm: sbatch refused the job array ({(detail or [str(error)])[-1][:200]}"
                                    "); check --slurm-partition, --slurm-account, --slurm-qos and --slurm-time") \
            from None
    ranks = json.loads((work / "logs" / "ranks_to_run.json").read_text(encoding="utf-8"))
    job = {"job_id": str(runner.job_id), "ranks": ranks, "submitted": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    staging = work / ".slurm.json.tmp"
    staging.write_text(json.dumps(job, sort_keys=True), encoding="utf-8")
    os.replace(staging, work / "slurm.json")
    return {**job, "previous": previous and previous["job_id"], "states": {r: states[r] for r in ranks if r in states}}


def slurm_line(outcome: dict, *, hint: str) -> str:
    """The terminal line of a Slurm run that did not merge: submitted (the job id and its array's task count) or
    still queued (``squeue``'s states)."""
    if outcome["status"] == "queued":
        shown = ", ".join(outcome["queue"][:8]) + (" ..." if len(outcome["queue"]) > 8 else "")
        return (f"Slurm job {outcome['job_id']} of this run is still in the queue ({shown}); nothing was submitted: "
                f"run the same command again ({hint}) once it has finished, or scancel {outcome['job_id']} first")
    n, tasks = len(outcome["ranks"]), outcome["tasks"]
    again = ""
    if outcome.get("previous"):
        states = outcome.get("states") or {}
        said = ", ".join(f"{r} {states[r]}" for r in outcome["ranks"] if r in states)
        again = (f"; {tasks - n} of {tasks} tasks of job {outcome['previous']} finished and are kept, the others are "
                 f"resubmitted{f' ({said})' if said else ''}")
    return (f"submitted Slurm job {outcome['job_id']}: an array of {n} task(s){again}; once it finishes, run the same "
            f"command again ({hint}) for the result")


# ---------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------


def progress_of(work: Path, shards: list, tasks: int, sizes: dict | None = None) -> dict:
    """Documents and shards done so far: a finished task's summary (``tasks/``), an unfinished one's progress
    file (``progress/``: written by the matcher after each batch); with the shards' ``sizes`` (bytes, recorded
    for local shards), the bytes of the shards done too."""
    documents = done = read = 0
    for rank in range(tasks):
        mine = shards[rank::tasks]  # datatrove's split of the shards between tasks
        for folder in ("tasks", "progress"):
            try:
                state = json.loads((work / folder / f"{rank:05d}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            documents += state["documents"]
            finished = len(mine) if folder == "tasks" else min(state.get("shards_done", 0), len(mine))
            done += finished
            read += sum((sizes or {}).get(shard, 0) for shard in mine[:finished])  # a task reads its shards in order
            break
    known = bool(sizes) and all(shard in sizes for shard in shards)
    return {"documents": documents, "shards_done": done, "shards": len(shards),
            **({"bytes_done": read, "bytes": sum(sizes[shard] for shard in shards)} if known else {})}


def fraction_done(state: dict) -> float:
    """The part of the corpus read: by bytes where every shard's size is known (shards of very unequal sizes),
    else by shards."""
    if state.get("bytes"):
        return state["bytes_done"] / state["bytes"]
    return state["shards_done"] / state["shards"] if state["shards"] else 1.0


def eta_seconds(start: dict, now: dict, seconds: float) -> float | None:
    """The seconds left at this run's pace: the part read since ``start`` took ``seconds``; None until this run
    has finished a shard (nothing to measure a pace on)."""
    began, at = fraction_done(start), fraction_done(now)
    if at >= 1.0:
        return 0.0
    if at <= began or seconds <= 0:
        return None
    return seconds * (1.0 - at) / (at - began)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "ETA ?"
    minutes, second = divmod(int(round(seconds)), 60)
    hours, minute = divmod(minutes, 60)
    return f"ETA {hours}:{minute:02d}:{second:02d}" if hours else f"ETA {minute:02d}:{second:02d}"


@contextlib.contextmanager
def watch_progress(work: Path, shards: list, tasks: int, *, enabled: bool, sizes: dict | None = None):
    """While the tasks run: a bar of shards on stderr with the documents done, their rate and the time left
    (:func:`eta_seconds`: by the bytes of the shards read where their ``sizes`` are known, else by shards;
    resplit's :func:`~split_builders.progress.progress_bar`), read every :data:`PROGRESS_EVERY` seconds. Yields a
    dict that holds, on leaving, this run's ``documents``, ``seconds``, ``documents_per_second``, the shards
    (and bytes) done of all, ``fraction_done`` and ``eta_seconds``."""
    from split_builders.progress import progress_bar

    start = progress_of(work, shards, tasks, sizes)  # a resumed run: what earlier runs did
    began = time.perf_counter()
    stop = threading.Event()
    result: dict = {}
    bar = progress_bar(total=len(shards), description="corpus shards", unit="shard", enabled=enabled)

    def update():
        now = progress_of(work, shards, tasks, sizes)
        seconds = time.perf_counter() - began
        documents = now["documents"] - start["documents"]
        eta = eta_seconds(start, now, seconds)
        bar.n = now["shards_done"]
        read = f", {now['bytes_done'] / 1e6:,.1f} of {now['bytes'] / 1e6:,.1f} MB" if "bytes" in now else ""
        bar.set_postfix_str(f"{now['documents']:,} documents, {documents / max(seconds, 1e-9):,.0f} docs/s{read}, "
                            f"{_clock(eta)}", refresh=False)
        bar.refresh()
        result.update(documents=documents, seconds=round(seconds, 3),
                      documents_per_second=round(documents / seconds, 1) if seconds > 0 else None,
                      **{k: now[k] for k in ("shards_done", "shards", "bytes_done", "bytes") if k in now},
                      fraction_done=round(fraction_done(now), 6),
                      eta_seconds=None if eta is None else round(eta, 1))

    def loop():
        while not stop.wait(PROGRESS_EVERY):
            update()

    watcher = threading.Thread(target=loop, daemon=True)
    watcher.start()
    try:
        yield result
    finally:
        stop.set()
        watcher.join()
        update()
        bar.close()
