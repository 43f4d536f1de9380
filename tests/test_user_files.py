"""``--overwrite`` replaces only what resplit wrote: a release folder into which the user put files of their own
(notes, an analysis folder, a file in a config's folder, a task of their own beside the harness tasks, a ``.git``
folder, an empty folder) is refused in one line naming those files, and nothing in it changes. Run over every
registered family (its shared release, ``tests/conftest.py``), through the CLI; plus the files a user adds while a
build runs, which the final move into place refuses too."""

import os
import shutil

import pytest

from conftest import FAMILIES
from split_builders.cli import main

# What a user puts into a release folder: relative path -> bytes (a path ending in "/" is an empty folder).
USER_FILES = {
    "notes at the top": {"my_notes.txt": b"what I found\n"},
    "an analysis folder": {"analysis/res.csv": b"config,acc\nrandom,0.9\n"},
    "a file in a config's folder": {"{config}/predictions.jsonl": b'{"id": 1}\n'},
    "their own harness task": {"lm_eval/my_task.yaml": b"task: mine\n"},
    "a git folder": {".git/HEAD": b"ref: refs/heads/main\n"},
    "an empty folder": {"drafts/": b""},
}


def linked_copy(release, to):
    """A copy of a shared release whose files are hard links (a CheckList release is ~100 MB): cheap, and the
    session's check of the shared releases fails if anything wrote into them through a link."""
    shutil.copytree(release, to, copy_function=os.link)
    return to


def state(folder, users: list):
    """What must not change: every entry under ``folder`` (its kind, size, modification time and inode), the bytes
    of the user's files, and the folder's mode."""
    entries = {str(p.relative_to(folder)): (p.is_dir(), p.lstat().st_size if p.is_file() else 0,
                                           p.lstat().st_mtime_ns, p.lstat().st_ino) for p in sorted(folder.rglob("*"))}
    return entries, {name: (folder / name).read_bytes() for name in users if (folder / name).is_file()}, \
        folder.stat().st_mode


def put(folder, files: dict, config: str) -> list:
    """The user's files of one case, written into ``folder``; their relative paths."""
    names = []
    for name, data in files.items():
        path = folder / name.format(config=config)
        names.append(name.format(config=config))
        if name.endswith("/"):
            path.mkdir(parents=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return names


def take_back(folder, names: list) -> None:
    """Remove a case's files again (and the folders made for them), so the next case starts from the release."""
    for name in names:
        path = folder / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        parent = path.parent
        while parent != folder and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_overwrite_refuses_a_release_holding_the_users_files_in_every_family(family, family_releases, family_args,
                                                                            tmp_path, capsys):
    """Each case fails on a release resplit wrote plus one kind of file it did not: exit 2, one line naming the
    user's files, every file (resplit's and the user's) unchanged, and nothing staged beside --out."""
    out = linked_copy(family_releases[family], tmp_path / "out")
    config = sorted(p.name for p in out.iterdir() if p.is_dir() and any(p.glob("*.parquet")))[0]
    for case, files in USER_FILES.items():
        users = put(out, files, config)
        before = state(out, users)
        code = main([family, *family_args[family], "--out", str(out), "--overwrite", "--no-progress"])
        line = one_line_error(capsys)
        assert code == 2 and "resplit did not write" in line and users[0] in line, (case, line)
        assert state(out, users) == before, case
        assert [p.name for p in tmp_path.iterdir() if p.name != ".out.lock"] == ["out"], case  # nothing staged
        take_back(out, users)


def test_overwrite_still_replaces_what_resplit_wrote(toy_method, tmp_path, capsys):
    """The other side: a release holding only resplit's files (and the byte code Python caches beside the harness
    tasks' utils.py when the harness runs them) is replaced."""
    source = tmp_path / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    out = tmp_path / "out"
    build = lambda *extra: main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress", *extra])
    assert build("--seed", "1") == 0
    (out / "lm_eval" / "__pycache__").mkdir(parents=True)
    (out / "lm_eval" / "__pycache__" / "utils.cpython-311.pyc").write_bytes(b"\x00")
    assert build("--seed", "2", "--overwrite") == 0
    assert "seed: 2" in (out / "README.md").read_text() and not (out / "lm_eval" / "__pycache__").exists()


def test_files_put_into_the_release_while_the_build_runs_are_kept(toy_method, tmp_path, monkeypatch, capsys):
    """The move into place checks again: a file that appeared in --out after the first check (while the build
    ran) is not thrown away with the old release; the build is refused and its staging folder removed."""
    import split_builders.release.writer as writer

    source = tmp_path / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(60)))
    out = tmp_path / "out"
    assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    write_config = writer._write_config

    def user_saves_a_file_meanwhile(*args, **kwargs):
        (out / "my_notes.txt").write_text("written while the build ran")
        return write_config(*args, **kwargs)

    monkeypatch.setattr(writer, "_write_config", user_saves_a_file_meanwhile)
    code = main(["toy-shortest", "--source", str(source), "--out", str(out), "--no-progress", "--overwrite",
                 "--seed", "3"])
    line = one_line_error(capsys)
    assert code == 2 and "my_notes.txt" in line
    assert (out / "my_notes.txt").read_text() == "written while the build ran" and "seed: 3" not in (
        out / "README.md").read_text()
    assert sorted(os.listdir(tmp_path)) == sorted(["out", "toy.csv"])  # nor the lock it made
