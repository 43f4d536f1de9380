"""Nothing lost, round five (issue 46, "Lost data"): every writer of resplit (a build's ``--out``, ``audit --against
... --write-clean`` and ``--rows``, ``export lm-eval --out``) goes through the build's one output policy
(:func:`split_builders.release.places.check_output_place`): refused places, files resplit did not write named and
kept, a lock, staging then rename, and a staging folder recognised only by the marker resplit writes into it first.

``CASES`` is the table of what lost data or went astray before (each fails on the code before this change); every
refusal is one line, exit 2, and leaves every file as it was. ``CONTROLS`` is the other side: what the policy lets
through still works. All through the CLI, on a small likelihood release of real SNLI rows (``small_release``) and
the first 50 of its rows as the OTHER dataset.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from conftest import TESTS, refused_in_one_line, tree_state
from split_builders.cli import main


@pytest.fixture()
def env(small_release, shared, tmp_path, monkeypatch):
    """The release, an OTHER dataset (CSV and Parquet) beside the test's folders, a working folder (the current
    one) and a home folder of the test's own (``HOME``)."""
    source = shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv"
    other = tmp_path / "other.csv"
    other.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:51]), encoding="utf-8")
    pd.read_csv(other).to_parquet(tmp_path / "other.parquet")
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (home / ".bashrc").write_text("# the user's\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    return SimpleNamespace(release=small_release, other=other, tmp=tmp_path, work=work, home=home)


def audit(env, *extra, target=None) -> list:
    return ["audit", str(target or env.release), "--against", str(env.other), "--no-progress", *extra]


def written_clean(env, name="clean") -> Path:
    """A clean release written by ``--write-clean`` (exit 0)."""
    out = env.tmp / name
    assert main(audit(env, "--write-clean", str(out))) == 0
    return out


@pytest.fixture()
def guarded_export(monkeypatch):
    """The harness export's file writer, made to fail the test instead of writing task files into the root, the
    home or the working folder (where the code before this change wrote them)."""
    import split_builders.publishing.export as export

    write_files = export._write_files

    def guarded(out, writes, stale):
        where = Path(out).absolute().resolve()
        if where in (Path("/"), Path.home().resolve(), Path.cwd().resolve()):
            raise AssertionError(f"the export wrote task files into {where}")
        return write_files(out, writes, stale)

    monkeypatch.setattr(export, "_write_files", guarded)


# -- the cases: each lost or misplaced data before, each is refused (or kept) now ---------------------------------

def write_clean_onto_the_other_file_itself(env, capsys):
    line = refused_in_one_line(audit(env, "--write-clean", str(env.other), "--overwrite"), capsys, env.tmp)
    assert "--write-clean" in line and "which this command reads" in line and env.other.is_file()


def write_clean_onto_a_users_file(env, capsys):
    notes = env.tmp / "notes.txt"
    notes.write_text("mine\n")
    line = refused_in_one_line(audit(env, "--write-clean", str(notes), "--overwrite"), capsys, env.tmp)
    assert "is a file, not a folder" in line and notes.read_text() == "mine\n"


def rows_over_an_existing_file_without_overwrite(env, capsys):
    rows = env.tmp / "rows.parquet"
    rows.write_bytes(b"the user's own file")
    line = refused_in_one_line(audit(env, "--rows", str(rows)), capsys, env.tmp)
    assert "--rows" in line and "pass --overwrite" in line


def rows_onto_the_other_file_itself(env, capsys):
    other = env.tmp / "other.parquet"
    line = refused_in_one_line(["audit", str(env.release), "--against", str(other), "--rows", str(other),
                                "--overwrite", "--no-progress"], capsys, env.tmp)
    assert "which this command reads" in line


def rows_file_gets_the_umasks_permissions(env, capsys):
    """Written beside its place and renamed, the --rows file kept the private mode (0600) of its temporary file."""
    rows = env.tmp / "rows.parquet"
    assert main(audit(env, "--rows", str(rows))) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert rows.stat().st_mode & 0o777 == 0o666 & ~umask


def write_clean_keeps_an_edited_task_file(env, capsys):
    out = written_clean(env)
    task = out / "lm_eval" / "random.yaml"
    task.write_text(task.read_text(encoding="utf-8") + "# my change\n", encoding="utf-8")
    line = refused_in_one_line(audit(env, "--write-clean", str(out), "--overwrite"), capsys, env.tmp)
    assert "lm_eval/random.yaml" in line and "changed since resplit wrote it" in line
    assert task.read_text(encoding="utf-8").endswith("# my change\n")


def a_build_leaves_the_users_tmp_and_old_folders_alone(env, capsys, toy_method):
    """Folders of the user's named like a staging folder (``.OUT.tmp-*``, ``.OUT.old-*``) but without resplit's
    marker: a plain build writes its release and leaves them, and says nothing about them."""
    source = env.tmp / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    mine = {env.tmp / ".out.tmp-mine" / "notes.txt": "drafts\n", env.tmp / ".out.old-2023" / "old" / "a.csv": "a\n1\n",
            env.tmp / ".out.tmp-empty" / "README.md": "# not a resplit card\n"}
    for path, text in mine.items():
        path.parent.mkdir(parents=True)
        path.write_text(text)
    folders = sorted({env.tmp / p.relative_to(env.tmp).parts[0] for p in mine})
    before = tree_state(*folders)
    capsys.readouterr()
    assert main(["toy-shortest", "--source", str(source), "--out", str(env.tmp / "out"), "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert (env.tmp / "out" / "README.md").is_file() and "removed" not in printed.out + printed.err
    assert tree_state(*folders) == before and all(folder.is_dir() for folder in folders)


def export_into_the_root_folder(env, capsys, guarded_export):
    line = refused_in_one_line(["export", "lm-eval", str(env.release), "--out", "/"], capsys, env.tmp)
    assert "--out '/' is the root folder" in line


def export_into_the_working_folder_given_as_empty(env, capsys, guarded_export):
    line = refused_in_one_line(["export", "lm-eval", str(env.release), "--out", ""], capsys, env.tmp)
    assert "--out is empty" in line and not any(env.work.iterdir())


def export_into_the_home_folder(env, capsys, guarded_export):
    for given in (str(env.home), "~"):
        line = refused_in_one_line(["export", "lm-eval", str(env.release), "--out", given], capsys, env.tmp)
        assert "your home folder" in line
    assert sorted(p.name for p in env.home.iterdir()) == [".bashrc"]


def write_clean_empty(env, capsys):
    line = refused_in_one_line(audit(env, "--write-clean", ""), capsys, env.tmp)
    assert "--write-clean is empty" in line


def write_clean_tilde(env, capsys):
    line = refused_in_one_line(audit(env, "--write-clean", "~"), capsys, env.tmp)
    assert "your home folder" in line and not (env.work / "~").exists()


def write_clean_onto_the_release_being_audited(env, capsys):
    target = env.tmp / "target"
    shutil.copytree(env.release, target)
    line = refused_in_one_line(audit(env, "--write-clean", str(target), "--overwrite", target=target), capsys,
                               env.tmp)
    assert "which this command reads" in line


def write_clean_into_a_place_another_run_is_writing(env, capsys):
    """A second --write-clean (or a build) into the same place while one runs is refused at once, naming the
    first (which holds the lock), instead of both exiting 0 and one result lost."""
    from split_builders.release.places import OutputLock

    out = env.tmp / "clean"
    with OutputLock(out):
        line = refused_in_one_line(audit(env, "--write-clean", str(out)), capsys, env.tmp, out=out)
    assert f"pid {os.getpid()}" in line


CHILD = """
import runpy, sys, time
from pathlib import Path
import split_builders.release.writer as writer

ready = Path(sys.argv[1])
write_config = writer._write_config

def write_then_wait(*args, **kwargs):
    written = write_config(*args, **kwargs)
    ready.write_text("writing")
    time.sleep(120)
    return written

writer._write_config = write_then_wait
sys.argv = ["resplit", *sys.argv[2:]]
runpy.run_module("split_builders.cli", run_name="__main__")
"""


def _stopped_while_writing(env, how) -> tuple:
    """``resplit audit ... --write-clean OUT`` in a child process, stopped by ``how`` once its first data file is in
    the staging folder: (exit code, stderr, OUT)."""
    child, ready, out = env.tmp / "child.py", env.tmp / "ready", env.tmp / "clean"
    child.write_text(CHILD)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
                   "OMP_NUM_THREADS": "1"}
    run = subprocess.Popen([sys.executable, str(child), str(ready), *audit(env, "--write-clean", str(out))],
                           env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), f"never reached the write phase: {run.poll()} {run.stderr.read()[-2000:]}"
        assert [p for p in env.tmp.iterdir() if p.name.startswith(".clean.tmp-")]  # the staging folder
        run.send_signal(how)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return run.returncode, stderr, out


def sigterm_during_write_clean(env, capsys):
    """SIGTERM is an interrupt: one line, a non-zero exit, no staging folder left (before: exit 143, no message,
    and a staging folder the next run did not remove)."""
    code, stderr, out = _stopped_while_writing(env, signal.SIGTERM)
    lines = stderr.strip().splitlines()
    assert code == 130 and lines == ["resplit audit: interrupted"], stderr
    assert not out.exists() and not [p for p in env.tmp.iterdir() if p.name.startswith(".clean.tmp-")]


def a_killed_write_clean_is_cleaned_up_by_the_next_run(env, capsys):
    """SIGKILL leaves the staging folder (resplit's marker in it, no README yet): the next --write-clean into the
    same place removes it, says so in a line, and writes its release."""
    code, _, out = _stopped_while_writing(env, signal.SIGKILL)
    assert code == -signal.SIGKILL and not out.exists()
    capsys.readouterr()
    assert main(audit(env, "--write-clean", str(out), "--json")) == 0
    captured = capsys.readouterr()
    assert "unfinished release" in captured.err and captured.out.startswith("{")
    assert (out / "README.md").is_file() and not [p for p in env.tmp.iterdir() if p.name.startswith(".clean.tmp-")]


CASES = {
    "--write-clean onto the --against file itself, --overwrite": write_clean_onto_the_other_file_itself,
    "--write-clean onto a file of the user's, --overwrite": write_clean_onto_a_users_file,
    "--rows over an existing file without --overwrite": rows_over_an_existing_file_without_overwrite,
    "--rows onto the --against file itself, --overwrite": rows_onto_the_other_file_itself,
    "--rows written private (0600)": rows_file_gets_the_umasks_permissions,
    "--write-clean --overwrite with a task file the user edited": write_clean_keeps_an_edited_task_file,
    "a build beside the user's .OUT.tmp-* and .OUT.old-* folders": a_build_leaves_the_users_tmp_and_old_folders_alone,
    "export lm-eval --out /": export_into_the_root_folder,
    "export lm-eval --out ''": export_into_the_working_folder_given_as_empty,
    "export lm-eval --out HOME": export_into_the_home_folder,
    "--write-clean ''": write_clean_empty,
    "--write-clean '~'": write_clean_tilde,
    "--write-clean TARGET --overwrite": write_clean_onto_the_release_being_audited,
    "--write-clean into a place another run holds": write_clean_into_a_place_another_run_is_writing,
    "SIGTERM during --write-clean": sigterm_during_write_clean,
    "SIGKILL during --write-clean, then the next run": a_killed_write_clean_is_cleaned_up_by_the_next_run,
}


def run_case(function, env, capsys, request) -> None:
    """``function(env, capsys, ...)`` with the further fixtures its parameters name."""
    code = function.__code__
    fixtures = [name for name in code.co_varnames[:code.co_argcount] if name not in ("env", "capsys")]
    function(env, capsys, *(request.getfixturevalue(name) for name in fixtures))


@pytest.mark.parametrize("case", list(CASES))
def test_no_writer_loses_data(case, env, capsys, request):
    run_case(CASES[case], env, capsys, request)


# -- positive controls: what the policy lets through ---------------------------------------------------------------

def write_clean_overwrite_replaces_its_own_release(env, capsys):
    out = written_clean(env)
    first = (out / "README.md").stat().st_ino
    assert main(audit(env, "--write-clean", str(out), "--overwrite", "--threshold", "0.9")) == 0
    assert (out / "README.md").stat().st_ino != first and "threshold: 0.9" in (out / "README.md").read_text()
    assert not (out / ".resplit-staging").exists()  # the staging marker does not travel into the release
    assert not [p for p in env.tmp.iterdir() if p.name.startswith((".clean.tmp-", ".clean.old-"))]
    assert main(["verify", str(out)]) == 0


def write_clean_into_an_empty_folder(env, capsys):
    out = env.tmp / "empty"
    out.mkdir()
    assert main(audit(env, "--write-clean", str(out), "--overwrite")) == 0 and (out / "README.md").is_file()


def rows_new_and_replaced_with_overwrite(env, capsys):
    rows = env.tmp / "deeper" / "rows.parquet"
    assert main(audit(env, "--rows", str(rows))) == 0
    assert list(pd.read_parquet(rows).columns)[:4] == ["config", "split", "source_id", "tier"]
    rows.write_bytes(b"stale")
    assert main(audit(env, "--rows", str(rows), "--overwrite")) == 0 and len(pd.read_parquet(rows)) > 0
    assert sorted(p.name for p in rows.parent.iterdir()) == ["rows.parquet"]  # no temporary file left


def export_into_a_folder_of_its_own_and_the_working_folder_by_name(env, capsys):
    assert main(["export", "lm-eval", str(env.release), "--out", "tasks"]) == 0
    assert (env.work / "tasks" / "utils.py").is_file()
    (env.work / "here").mkdir()
    os.chdir(env.work / "here")  # the env fixture's monkeypatch.chdir puts the test back where it was
    assert main(["export", "lm-eval", str(env.release), "--out", "."]) == 0 and Path("utils.py").is_file()


def a_build_replaces_its_release_and_leaves_no_marker(env, capsys, toy_method):
    source = env.tmp / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    out = env.tmp / "out"
    for extra in ((), ("--overwrite", "--seed", "3")):
        assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress", *extra]) == 0
        assert not (out / ".resplit-staging").exists()
    assert sorted(p.name for p in env.tmp.iterdir() if p.name.startswith(".out")) == []  # nor the lock it made


CONTROLS = {
    "--write-clean --overwrite replaces the clean release it wrote": write_clean_overwrite_replaces_its_own_release,
    "--write-clean into an empty folder": write_clean_into_an_empty_folder,
    "--rows into a new folder, then replaced with --overwrite": rows_new_and_replaced_with_overwrite,
    "export lm-eval --out a folder, and '.' named": export_into_a_folder_of_its_own_and_the_working_folder_by_name,
    "a build and its --overwrite leave no marker": a_build_replaces_its_release_and_leaves_no_marker,
}


@pytest.mark.parametrize("case", list(CONTROLS))
def test_what_the_policy_lets_through_still_works(case, env, capsys, request):
    run_case(CONTROLS[case], env, capsys, request)
