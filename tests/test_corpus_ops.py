"""How ``resplit audit TARGET --against-corpus SOURCE`` runs (:mod:`split_builders.evidence.corpus_ops`): Ray
attached to a running cluster (a real ``ray start --head`` on this machine), Slurm job control (fake ``sbatch``,
``squeue`` and ``sacct`` on PATH that record what they are asked), the lock on ``--work``, child processes ended by
SIGTERM, and the progress of a scan.

The corpus: 4 Parquet shards of 30 documents, 6 of them copies of the release's test rows.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from conftest import refused_in_one_line
from split_builders.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHARDS = 4


@pytest.fixture(scope="module")
def corpus(small_release, tmp_path_factory) -> Path:
    (path,) = (small_release / "random").glob("test-*.parquet")
    test = pd.read_parquet(path)
    texts = [f"{r.premise}\n{r.hypothesis}" for r in test.head(6).itertuples()]
    texts += [f"Filler document {k} about gardens, trains and the weather in spring number {k}." for k in range(114)]
    folder = tmp_path_factory.mktemp("ops-corpus") / "corpus"
    folder.mkdir()
    for s in range(SHARDS):
        part = pd.DataFrame({"text": texts[s::SHARDS], "id": [f"d{k}" for k in range(len(texts))][s::SHARDS]})
        part.to_parquet(folder / f"shard-{s}.parquet", index=False)
    return folder


def _argv(release, corpus, work, *extra) -> list:
    return ["audit", str(release), "--against-corpus", str(corpus), "--work", str(work), "--configs", "random",
            *extra]


def _run(capsys, argv) -> tuple:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    return out, err


@pytest.fixture(scope="module")
def local_records(small_release, corpus, tmp_path_factory) -> bytes:
    """The records of a local run: what every executor must give."""
    work = tmp_path_factory.mktemp("ops-local") / "work"
    assert main(_argv(small_release, corpus, work, "--tasks", "2", "--no-progress", "--json")) == 0
    records = pq.read_table(work / "records.parquet")
    assert records.num_rows >= 6 and sum(records.column("exact").to_pylist()) == 6
    return (work / "records.parquet").read_bytes()


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _processes_naming(text: str) -> list[int]:
    """The processes whose command line names ``text`` (the Ray cluster's own temporary folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.slow
def test_ray_attaches_to_a_cluster_started_with_ray_start(small_release, corpus, local_records, capsys, tmp_path,
                                                          monkeypatch):
    """``ray start --head`` (1 CPU, an 80 MB object store), then the command with no address: it attaches to that
    cluster (no num_cpus given: Ray refuses them when attaching), runs there, leaves it running and gives the
    local executor's records. The cluster is stopped by its own processes' ids afterwards."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="rs-ray-", dir="/tmp"))  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_TMPDIR": str(ray_tmp), "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    port = _free_port()
    head = subprocess.Popen([str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
                             f"--port={port}", "--num-cpus=1", "--object-store-memory=80000000",
                             "--include-dashboard=false", "--disable-usage-stats"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        recorded = ray_tmp / "ray" / "ray_current_cluster"
        deadline = time.monotonic() + 90
        while not recorded.is_file() and head.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert recorded.is_file(), "ray start --head did not come up"
        monkeypatch.setenv("RAY_TMPDIR", str(ray_tmp))
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        handler = signal.getsignal(signal.SIGTERM)
        out, _ = _run(capsys, _argv(small_release, corpus, tmp_path / "work", "--executor", "ray", "--tasks", "2",
                                    "--workers", "2", "--json", "--no-progress"))
        report = json.loads(out)
        cluster = report["corpus"]["this_run"]["ray"]
        assert cluster["attached"] is True and cluster["address"].endswith(f":{port}")
        assert (tmp_path / "work" / "records.parquet").read_bytes() == local_records
        assert head.poll() is None  # attached, not stopped: the cluster is the user's
        import ray

        assert not ray.is_initialized()  # this run's connection closed
        assert signal.getsignal(signal.SIGTERM) is handler  # and ray.init's SIGTERM handler with it
    finally:
        # the cluster is this test's alone, in its own session: killed at once (ray start --block took over 30 s to
        # stop on SIGTERM: 30 s of this file's 46 went to waiting for it), then any process of it left, by its id
        os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=30)
        for pid in _processes_naming(str(ray_tmp)):  # any of this cluster's processes left: by their ids
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_ray_address_env_and_none_running(monkeypatch, tmp_path):
    """Without a cluster call: ``--ray-address`` and ``RAY_ADDRESS`` attach with no resource arguments; with
    neither and no cluster recorded on this machine a local Ray of ``workers`` CPUs is started."""
    import ray

    from split_builders.evidence import corpus_ops

    calls = []

    class Context:
        address_info = {"gcs_address": "10.0.0.1:6379"}

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    def init(**kw):  # as ray.init does: a SIGTERM handler of its own, which ray.shutdown leaves behind
        signal.signal(signal.SIGTERM, lambda *args: None)
        calls.append(kw)
        return Context()

    handler = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # no cluster recorded here
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with corpus_ops.ray_session("10.0.0.1:6379", workers=3) as cluster:
        assert cluster["attached"]
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.2:6379")
    with corpus_ops.ray_session(None, workers=3) as cluster:
        assert cluster["attached"]
    monkeypatch.delenv("RAY_ADDRESS")
    with corpus_ops.ray_session(None, workers=3) as cluster:
        assert not cluster["attached"]
    attach_flag, attach_env, local = (c for c in calls if c != "shutdown")
    assert attach_flag["address"] == "10.0.0.1:6379" and attach_env["address"] is None
    assert not {"num_cpus", "num_gpus", "object_store_memory", "resources"} & (set(attach_flag) | set(attach_env))
    assert local["num_cpus"] == 3 and calls.count("shutdown") == 3
    assert signal.getsignal(signal.SIGTERM) is handler  # the process's own handler back after each session


# ---------------------------------------------------------------------------------------------
# Slurm (fake sbatch / squeue / sacct)
# ---------------------------------------------------------------------------------------------

FAKE_SBATCH = """#!/bin/sh
n=$(($(cat "$FAKE/count" 2>/dev/null || echo 1000) + 1)); echo $n > "$FAKE/count"
for last; do :; done
cp "$last" "$FAKE/script-$n.sh"; echo "$@" >> "$FAKE/sbatch.log"
echo "Submitted batch job $n"
"""
FAKE_QUERY = """#!/bin/sh
echo "$@" >> "$FAKE/{name}.log"; cat "$FAKE/{name}.out" 2>/dev/null; exit 0
"""


def _fake_slurm(folder: Path, monkeypatch, tools=("sbatch", "squeue", "sacct")) -> Path:
    folder.mkdir()
    for tool in tools:
        script = folder / tool
        script.write_text(FAKE_SBATCH if tool == "sbatch" else FAKE_QUERY.format(name=tool))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FAKE", str(folder))
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin")
    return folder


def _array_scripts(fake: Path) -> dict:
    """``{job id: script}`` of the job arrays submitted (datatrove also submits a stats job after each)."""
    return {int(p.stem.split("-")[1]): p.read_text() for p in fake.glob("script-*.sh")
            if "#SBATCH --array" in p.read_text() and "merge_stats" not in p.read_text()}


def test_slurm_without_sbatch_is_one_line_and_writes_nothing(small_release, corpus, capsys, tmp_path, monkeypatch):
    _fake_slurm(tmp_path / "bin", monkeypatch, tools=("squeue",))
    line = refused_in_one_line(_argv(small_release, corpus, tmp_path / "runs" / "work", "--executor", "slurm",
                                     "--slurm-partition", "cpu", "--no-progress"), capsys, corpus)
    assert "needs Slurm's sbatch" in line
    assert not (tmp_path / "runs").exists()


def _finished_without_matches(work: Path, rank: int, *, tasks: int) -> None:
    """Task ``rank`` as a finished task leaves it (its completion file and the record a resume checks: its
    shards as read, the index's fingerprint, no match), as if its Slurm array task had run."""
    from split_builders.evidence import corpus
    from split_builders.evidence.corpus_resume import task_shards

    shards = (work / "shards.txt").read_text(encoding="utf-8").splitlines()
    stats = json.loads((work / "shards.json").read_text(encoding="utf-8"))
    fingerprint = corpus.EvaluationIndex.load(work / "index").fingerprint()
    (work / "tasks").mkdir(exist_ok=True)
    (work / "tasks" / f"{rank:05d}.json").write_text(json.dumps(
        {"task": rank, "records": 0, "index": fingerprint,
         "shards": {s: stats.get(s) for s in task_shards(shards, rank, tasks)}}))
    (work / "logs" / "completions").mkdir(parents=True, exist_ok=True)
    (work / "logs" / "completions" / f"{rank:05d}").touch()


def test_slurm_job_control(small_release, corpus, capsys, tmp_path, monkeypatch):
    """The job id printed and recorded, the array's own task count, account / QoS / partition / time passed to
    sbatch; a rerun while the array is queued shows squeue's states and submits nothing; a rerun after it ended
    resubmits only the unfinished tasks (sacct's states named) and no QoS where none is asked for."""
    fake = _fake_slurm(tmp_path / "bin", monkeypatch)
    work = tmp_path / "work"
    slurm = ["--executor", "slurm", "--slurm-partition", "cpu", "--slurm-time", "01:30:00", "--no-progress"]
    argv = _argv(small_release, corpus, work, "--tasks", "16", *slurm)  # 16 asked for, 4 shards: 4 tasks
    out, _ = _run(capsys, [*argv, "--slurm-account", "proj42", "--slurm-qos", "high"])
    (first, script), = _array_scripts(fake).items()
    assert f"submitted Slurm job {first}: an array of 4 task(s)" in out
    assert json.loads((work / "slurm.json").read_text())["job_id"] == str(first)
    for line in ("--array=0-3", "--account=proj42", "--qos=high", "--partition=cpu", "--time=01:30:00"):
        assert f"#SBATCH {line}\n" in script, line
    # queued: squeue's lines shown, nothing submitted
    (fake / "squeue.out").write_text(f"{first}_[2-3] PENDING\n{first}_0 RUNNING\n{first}_1 RUNNING\n")
    submitted = (fake / "sbatch.log").read_text()
    out, _ = _run(capsys, argv)
    assert f"Slurm job {first} of this run is still in the queue ({first}_[2-3] PENDING, {first}_0 RUNNING" in out
    assert "nothing was submitted" in out and (fake / "sbatch.log").read_text() == submitted
    assert f"--jobs {first}" in (fake / "squeue.log").read_text()
    # ended: tasks 0 and 2 finished, 1 failed, 3 timed out: only 1 and 3 resubmitted
    (fake / "squeue.out").write_text("")
    (fake / "sacct.out").write_text(f"{first}_0|COMPLETED\n{first}_1|FAILED\n{first}_2|COMPLETED\n"
                                    f"{first}_3|TIMEOUT\n")
    for rank in (0, 2):
        _finished_without_matches(work, rank, tasks=4)
    out, _ = _run(capsys, argv)
    second = max(_array_scripts(fake))
    assert second != first
    assert (f"submitted Slurm job {second}: an array of 2 task(s); 2 of 4 tasks of job {first} finished and are "
            "kept, the others are resubmitted (1 FAILED, 3 TIMEOUT)") in out
    assert json.loads((work / "logs" / "ranks_to_run.json").read_text()) == [1, 3]
    assert "#SBATCH --array=0-1\n" in _array_scripts(fake)[second] and "--qos" not in _array_scripts(fake)[second]
    assert json.loads((work / "slurm.json").read_text())["ranks"] == [1, 3]


# ---------------------------------------------------------------------------------------------
# The lock on --work, signals, progress
# ---------------------------------------------------------------------------------------------


def test_a_second_run_on_one_work_folder_is_refused_and_a_stale_lock_taken_over(small_release, corpus, capsys,
                                                                              tmp_path):
    work = tmp_path / "work"
    lock = tmp_path / ".work.lock"
    handle = os.open(lock, os.O_RDWR | os.O_CREAT)
    os.write(handle, f"{os.getpid()} {socket.gethostname()}".encode())
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run in progress holds it
    try:
        line = refused_in_one_line(_argv(small_release, corpus, work, "--no-progress"), capsys)
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)
    assert "another corpus run" in line and f"pid {os.getpid()}" in line and "--work" in line
    assert not work.exists()
    # the same file left by a run killed with SIGKILL (no one holds it): taken over, said, removed at the end
    _, err = _run(capsys, _argv(small_release, corpus, work, "--no-progress", "--json"))
    assert "took over the lock" in err and not lock.exists() and (work / "records.parquet").is_file()


def _descendants(pid: int) -> set:
    children = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children.add(int(entry.name))
    return children | {d for c in children for d in _descendants(c)}


def _alive(pids) -> list:
    """Those of ``pids`` still running (not zombies)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


@pytest.mark.slow
def test_no_worker_process_outlives_a_sigkill(small_release, corpus, tmp_path):
    """SIGKILL (no handler runs) while 2 workers scan: no process the command started outlives it (datatrove's
    manager process was left orphaned). SIGTERM ends them through the pool's own cleanup (sigterm_as_interrupt)."""
    signum = signal.SIGKILL
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    work = tmp_path / "work"
    command = subprocess.Popen([sys.executable, "-m", "split_builders.cli",
                                *_argv(small_release, corpus, work, "--tasks", "4", "--workers", "2", "--no-progress")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children: set = set()
    deadline = time.monotonic() + 120
    while command.poll() is None and time.monotonic() < deadline:  # until both workers are scanning
        children |= _descendants(command.pid)
        if len(list((work / "logs" / "logs").glob("task_*.log"))) >= 2:
            children |= _descendants(command.pid)
            break
        time.sleep(0.05)
    assert command.poll() is None, "the run ended before it could be stopped"
    assert len(children) >= 3  # the manager and the pool's two workers (and the fork server)
    command.send_signal(signum)
    command.communicate(timeout=60)
    assert command.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while _alive(children) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _alive(children)
    for pid in left:  # this test's own leftovers, by their ids
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes left running after {signal.Signals(signum).name}: {left}"


def test_progress_on_the_terminal_and_in_json(small_release, corpus, capsys, tmp_path, monkeypatch):
    from split_builders.evidence import corpus_ops

    monkeypatch.setattr(corpus_ops, "PROGRESS_EVERY", 0.01)
    out, err = _run(capsys, _argv(small_release, corpus, tmp_path / "work", "--tasks", "4", "--json"))
    ran = json.loads(out)["corpus"]["this_run"]
    assert ran["documents"] == 120 and ran["documents_per_second"] > 0 and ran["seconds"] > 0
    assert "corpus shards" in err and f"{SHARDS}/{SHARDS}" in err and "120 documents" in err
    assert "docs/s" in err and "ETA 00:00" in err
    total = sum(p.stat().st_size for p in corpus.glob("*.parquet"))  # the shards' bytes, read from disk here
    assert (ran["shards_done"], ran["shards"], ran["bytes_done"], ran["bytes"]) == (SHARDS, SHARDS, total, total)
    assert (ran["fraction_done"], ran["eta_seconds"]) == (1.0, 0.0)
    # a finished work folder: nothing scanned, no progress figures
    out, _ = _run(capsys, _argv(small_release, corpus, tmp_path / "work", "--tasks", "4", "--json"))
    assert "this_run" not in json.loads(out)["corpus"]


def test_the_eta_follows_the_bytes_of_the_shards_read(tmp_path):
    """Shards of 100, 300 and 600 bytes in 2 tasks (task 0: the first and third, task 1: the second): task 1
    finished and task 0 past its first shard is 400 of 1,000 bytes, so 10 seconds for them leave 15 (by shards,
    2 of 3 done: 5); a resumed run measures its pace from where it started; nothing finished yet: no ETA."""
    from split_builders.evidence.corpus_ops import eta_seconds, progress_of

    shards, sizes = ["a", "b", "c"], {"a": 100, "b": 300, "c": 600}
    for folder, state in (("tasks", {"documents": 5}), ("progress", {"documents": 2, "shards_done": 1})):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{1 if folder == 'tasks' else 0:05d}.json").write_text(json.dumps(state))
    now = progress_of(tmp_path, shards, 2, sizes)
    assert (now["documents"], now["shards_done"], now["bytes_done"], now["bytes"]) == (7, 2, 100 + 300, 1000)
    nothing = {"documents": 0, "shards_done": 0, "shards": 3, "bytes_done": 0, "bytes": 1000}
    assert eta_seconds(nothing, now, 10.0) == pytest.approx(10.0 * (1 - 0.4) / 0.4)
    assert eta_seconds({**nothing, "bytes_done": 100}, now, 10.0) == pytest.approx(10.0 * (1 - 0.4) / 0.3)
    by_shards = progress_of(tmp_path, shards, 2)
    assert "bytes" not in by_shards and eta_seconds({**nothing, "bytes": None}, by_shards, 10.0) == \
        pytest.approx(10.0 * (1 / 3) / (2 / 3))
    assert eta_seconds(nothing, nothing, 10.0) is None


def test_each_task_records_its_cpu_seconds(small_release, corpus, capsys, tmp_path):
    """``tasks/RANK.json`` holds the task's CPU-seconds (what ``benchmarks/corpus_throughput.py`` fits its cost
    model on): positive, and no more than the run's wall time on every core."""
    began = time.monotonic()
    _run(capsys, _argv(small_release, corpus, tmp_path / "work", "--tasks", "2"))
    wall = time.monotonic() - began
    summaries = [json.loads(p.read_text()) for p in sorted((tmp_path / "work" / "tasks").glob("*.json"))]
    assert len(summaries) == 2 and sum(s["documents"] for s in summaries) == 120
    assert all(0 < s["cpu_seconds"] <= wall * (os.cpu_count() or 1) for s in summaries), summaries


def _throughput_benchmark():
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus_throughput", ROOT / "benchmarks" / "corpus_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_throughput_model_recovers_its_costs_and_agrees_with_scipy():
    """The benchmark's cost model (``CPU-seconds = a x documents + b x bytes``, least squares on the relative
    error): costs planted in exact timings come back, and on noisy timings the fit is scipy's own minimiser's."""
    import numpy as np
    from scipy.optimize import least_squares

    bench = _throughput_benchmark()
    rng = np.random.default_rng(0)
    documents = np.array([100_000, 24_000, 6_000, 100_000, 24_000, 6_000])
    text_bytes = documents * np.array([102, 1_062, 5_328, 102, 1_062, 5_328])
    a, b = 14e-6, 0.11e-6
    exact = a * documents + b * text_bytes
    assert np.allclose(bench.fit_cost(documents, text_bytes, exact), (a, b), rtol=1e-9, atol=0)
    noisy = exact * (1 + rng.normal(0, 0.1, size=exact.size))
    fitted = bench.fit_cost(documents, text_bytes, noisy)
    reference = least_squares(lambda p: (p[0] * 1e-6 * documents + p[1] * 1e-6 * text_bytes) / noisy - 1,
                              x0=[1.0, 1.0], xtol=1e-15, ftol=1e-15, gtol=1e-15).x * 1e-6
    assert np.allclose(fitted, reference, rtol=1e-6, atol=0)
    assert not np.allclose(fitted, (a, b), rtol=1e-3, atol=0)  # the noise moved it: the comparison above is not trivial
    assert bench.core_seconds(*fitted, 4.367e9, 11.519e12) == pytest.approx(
        fitted[0] * 4.367e9 + fitted[1] * 11.519e12)
