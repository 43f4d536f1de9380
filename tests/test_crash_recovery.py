"""What an interrupted build leaves is recovered only when it is complete, and said: a staged release
(``.<out>.tmp-*``) is put in place only when every file its card names is there with the sha256 it records
(and its harness tasks, and the permissions the writer's last step sets); anything less is ours, removed with a
line saying so, and the build goes on. SIGTERM during the write phase is an interrupt: the staging folder is
removed, one line, a non-zero exit. A full ``--out`` is refused before the expensive step. A damaged converted
model in the cache is reported, removed and converted again; a full disk while converting it is one line.
Each table runs over every registered family (``tests/conftest.py``), through the CLI."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import FAMILIES, TESTS
from split_builders.api import registry
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.release.places import mark_staging


def _data_files(release: Path) -> list:
    return sorted(p for p in release.rglob("*.parquet"))


def _rewrite(path: Path, data: bytes) -> None:
    """A new file in place of ``path`` (a hard link to a shared release's file: that one stays as it is)."""
    path.unlink()
    path.write_bytes(data)


def _truncate(release):
    path = _data_files(release)[0]
    _rewrite(path, path.read_bytes()[: path.stat().st_size // 2])


def _flip(release):
    path = _data_files(release)[0]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, and Parquet's footer is untouched
    _rewrite(path, bytes(data))


def _drop_figure(release):
    figures = sorted((release / "figures").glob("*.png"))
    if not figures:
        return False
    figures[0].unlink()


def _drop_lm_eval(release):
    if not (release / "lm_eval").is_dir():
        return False
    shutil.rmtree(release / "lm_eval")


# A staged release as a build killed before its end leaves it (each fails to be complete in one way); a case
# returns False where the family's release has nothing of that kind.
DAMAGED_STAGING = {
    "still private (0700)": lambda release: release.chmod(0o700),
    "a truncated data file": _truncate,
    "a data file with a flipped byte": _flip,
    "a figure missing": _drop_figure,
    "no lm_eval/": _drop_lm_eval,
}


class StopHere(InvalidParameterError):
    """Ends a build right after it took the lock (and recovered what was there), so the test stays quick."""


@pytest.mark.parametrize("family", FAMILIES)
def test_an_incomplete_staged_release_is_never_promoted_and_is_removed_with_a_line(family, family_releases,
                                                                                 family_args, tmp_path,
                                                                                 monkeypatch, capsys):
    """Today such a staging folder (it has README.md) became --out: the next build then failed with "output
    folder exists" and verify said OK. Each case: nothing appears at --out, the staging folder is gone and a
    line names it and what was wrong."""
    release = family_releases[family]  # built (or read) before the build is stopped below
    method = type(registry()[family])

    def stop(self, options):
        raise StopHere("the test stops the build here, after the lock")

    monkeypatch.setattr(method, "load", stop)
    applied = 0
    for case, damage in DAMAGED_STAGING.items():
        root = tmp_path / case.replace(" ", "-").replace("/", "")
        root.mkdir()
        staged = root / ".out.tmp-killed"
        shutil.copytree(release, staged, copy_function=os.link)  # hard links: cheap (a CheckList release is ~100 MB)
        mark_staging(staged)  # what the writer writes first into every staging folder
        staged.chmod(0o777 & ~_umask())
        if damage(staged) is False:
            shutil.rmtree(staged)
            continue
        applied += 1
        out = root / "out"
        code = main([family, *family_args[family], "--out", str(out), "--no-progress"])
        captured = capsys.readouterr()
        assert code == 2 and "the test stops the build here" in captured.err, (case, captured.err)
        assert not out.exists(), f"{case}: an incomplete staged release was put at --out"
        assert not staged.exists(), case
        notes = [line for line in captured.out.splitlines() if ".out.tmp-killed" in line]
        assert len(notes) == 1 and "unfinished release" in notes[0], (case, captured.out)
    assert applied >= 3, f"{family}: only {applied} cases applied"


def test_a_complete_staged_release_is_promoted_and_verifies(toy_method, tmp_path, capsys):
    """The other side: a staged release whose files all match its card (a build killed after its last write,
    before the rename) is put in place, said on the terminal, and verify finds it intact."""
    from split_builders.publishing.verify import verify

    source = tmp_path / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    built = tmp_path / "built"
    assert main(["toy-shortest", "--source", str(source), "--out", str(built), "--no-progress"]) == 0
    out = tmp_path / "out"
    os.replace(built, tmp_path / ".out.tmp-killed")
    mark_staging(tmp_path / ".out.tmp-killed")  # what the writer writes first into every staging folder
    assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert "the release it was writing was put back" in captured.out and "exists" in captured.err
    assert verify(str(out), load=False).ok and not list(tmp_path.glob(".out.tmp-*"))


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


# -- SIGTERM while the release is written ---------------------------------------------------------------

# Run in a child process: `resplit` (tests/resplit_cli.py, which registers the tests' methods) whose writer
# says when it has written its first config into the staging folder, then waits there to be signalled.
CHILD = """
import runpy, sys, time
from pathlib import Path
import split_builders.release.writer as writer

marker, cli = Path(sys.argv[1]), sys.argv[2]
write_config = writer._write_config

def write_then_wait(*args, **kwargs):
    written = write_config(*args, **kwargs)
    marker.write_text("writing")
    time.sleep(300)
    return written

writer._write_config = write_then_wait
sys.argv = [cli, *sys.argv[3:]]
runpy.run_path(cli, run_name="__main__")
"""


def test_sigterm_while_writing_removes_the_staging_folder(family_args, tmp_path):
    """`kill PID` (SIGTERM) from outside during the write phase, once a data file is in the staging folder: the
    build exits non-zero with one line, and nothing is left beside --out but the lock file (today the process
    vanished and left a hidden staging folder of data files). The write phase is the same code in every family
    (the next test stops every family's build with SIGTERM, in process)."""
    family = "likelihood"
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]), "OMP_NUM_THREADS": "1"}
    marker, out = tmp_path / "marker", tmp_path / "out"
    command = [sys.executable, str(child), str(marker), str(TESTS / "resplit_cli.py"), family, *family_args[family],
               "--out", str(out), "--no-progress"]
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"never reached the write phase: {run.poll()}"
        staged = [p for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")]
        assert staged and list(staged[0].rglob("*.parquet"))  # what SIGTERM used to leave behind
        run.send_signal(signal.SIGTERM)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    lines = stderr.strip().splitlines()
    assert run.returncode != 0 and "Traceback" not in stderr and lines[-1] == f"resplit {family}: interrupted", stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["child.py", "marker"]  # the lock it made removed too


@pytest.mark.parametrize("family", FAMILIES)
def test_sigterm_stops_every_familys_build_as_ctrl_c_does(family, family_args, tmp_path, monkeypatch, capsys):
    """SIGTERM arriving in a build of each family (here while it reads its source) is an interrupt: exit 130, one
    line, nothing at --out, and the previous SIGTERM handler back afterwards. Today the signal went past the
    build (here to the test's own handler, which fails the test; in a real run it killed the process)."""
    method = type(registry()[family])

    def load_then_terminated(self, options):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler interrupts this at once
        raise AssertionError("SIGTERM did not stop the build")

    def went_past_the_build(signum, frame):
        raise AssertionError("SIGTERM went past the build")

    monkeypatch.setattr(method, "load", load_then_terminated)
    previous = signal.signal(signal.SIGTERM, went_past_the_build)
    try:
        out = tmp_path / "out"
        code = main([family, *family_args[family], "--out", str(out), "--no-progress"])
        assert signal.getsignal(signal.SIGTERM) is went_past_the_build
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert code == 130 and err.strip().splitlines() == [f"resplit {family}: interrupted"], err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the lock it made removed too


# -- a full --out, before the expensive step -----------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_a_full_out_is_refused_before_the_signal_is_computed(family, family_args, tmp_path, monkeypatch, capsys):
    """A disk with no room for the release (shutil.disk_usage says 0 bytes free where --out would be made):
    refused in one line before the signal (today it failed only when the release was written, after all the
    work); the free space is looked up where the release is staged, beside --out."""
    method = type(registry()[family])
    asked = []

    def full(path):
        asked.append(Path(path))
        return shutil._ntuple_diskusage(10 * 2**30, 10 * 2**30, 0)

    def never(*args, **kwargs):
        raise AssertionError("the signal was computed on a full disk")

    monkeypatch.setattr(shutil, "disk_usage", full)
    monkeypatch.setattr(method, "signal", never)
    out = tmp_path / "not" / "yet" / "out"
    code = main([family, *family_args[family], "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert "not enough free space" in lines[0] and "0.0 MB free" in lines[0] and "nothing was written" in lines[0]
    assert asked and asked[0] == out.parent  # made for the lock beside --out, before the check
    assert not out.exists() and [p.name for p in out.parent.iterdir()] == []  # the lock it made removed too


# -- the converted default model in the cache ------------------------------------------------------------

def _damage_config(folder):
    (folder / "config.json").write_text("")  # a copy cut short: json's "Expecting value: line 1 column 1"


def _damage_weights(folder):
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.unlink()
    weights.write_bytes(data[: len(data) // 3])


DAMAGED_MODEL = {
    "an empty config.json": (_damage_config, "config.json does not parse"),
    "weights cut short": (_damage_weights, "model.safetensors is incomplete"),
    "no tokenizer config": (lambda folder: (folder / "tokenizer_config.json").unlink(), "tokenizer_config.json is "
                                                                                       "missing"),
    "no weights": (lambda folder: (folder / "model.safetensors").unlink(), "its weights"),
}


@pytest.fixture()
def small_model(tiny_llama, tmp_path, monkeypatch):
    """A converted model as the cache holds one (a transformers folder in ``$RESPLIT_CACHE/models``): the tests'
    tiny Llama stands for the dequantised default model, and "converting" copies it (the real conversion takes
    ~25 s); returns (the resolved default model pointing there, the conversions made)."""
    import dataclasses

    from split_builders.signals.lm import models

    cache = tmp_path / "cache"
    monkeypatch.setenv("RESPLIT_CACHE", str(cache))
    ref = models.resolve_model(None)
    ref = dataclasses.replace(ref, path=cache / "models" / ref.path.name)
    conversions = []

    def convert(gguf, target):
        conversions.append(target)
        shutil.copytree(tiny_llama, target)

    monkeypatch.setattr(models, "_convert_gguf", convert)
    return ref, conversions


def test_a_damaged_converted_model_is_reported_removed_and_converted_again(small_model, capsys):
    from transformers import AutoConfig

    from split_builders.signals.lm.models import converted_problem, ensure_local

    ref, conversions = small_model
    assert ensure_local(ref) == ref.path and len(conversions) == 1  # the first use converts
    for case, (damage, why) in DAMAGED_MODEL.items():
        damage(ref.path)
        (ref.path / "notes").write_text("in the cache entry")  # the whole entry goes, not only the bad file
        capsys.readouterr()
        assert ensure_local(ref) == ref.path
        err = capsys.readouterr().err
        assert f"cache entry {ref.path} is damaged ({why}" in err and "converting the default model again" in err, \
            (case, err)
        assert not (ref.path / "notes").exists() and converted_problem(ref.path) is None, case
        AutoConfig.from_pretrained(ref.path)  # what failed with "Expecting value: line 1 column 1"
    assert len(conversions) == 1 + len(DAMAGED_MODEL)
    ensure_local(ref)
    assert len(conversions) == 1 + len(DAMAGED_MODEL) and not capsys.readouterr().err  # a complete entry: used


def test_a_full_disk_while_converting_the_default_model_is_one_line(tiny_llama, tmp_path, monkeypatch):
    """safetensors reports a full disk as its own SafetensorError ("os error 28"), which escaped as a traceback:
    now one DiskFullError line naming the cache folder, and no half-written model is left there."""
    import transformers.modeling_utils
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from split_builders.errors import DiskFullError
    from split_builders.signals.lm import models

    load_model, load_tokenizer = AutoModelForCausalLM.from_pretrained, AutoTokenizer.from_pretrained

    def full(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    # the GGUF is read as the tiny model (dequantising the real one takes ~25 s); writing its weights fills the disk
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: load_model(tiny_llama))
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda *a, **k: load_tokenizer(tiny_llama))
    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full)  # what save_pretrained calls
    target = tmp_path / "cache" / "models" / "converted"
    with pytest.raises(DiskFullError) as refused:
        models._convert_gguf(Path("SmolLM2.gguf"), target)
    message = str(refused.value)
    assert "\n" not in message and "no space left on the device" in message and "default model" in message
    assert not target.exists() and not list(target.parent.iterdir())
