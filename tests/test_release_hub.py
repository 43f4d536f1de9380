"""``resplit verify`` and ``resplit diff`` on published versions (``HUB_ID@vX.Y.Z``) through the local
Hub server, the published CHANGELOG against ``diff``, and ``verify --rescore`` (level 3).

Two small real BELUGA releases of the CheckList sentiment suite (seeds 1 and 2, a few
functionalities and capabilities, 10 test cases each) are pushed with ``resplit push`` as v1.0.0 and
v1.1.0 of one dataset repository. Their rows have no ``source_id``: a test case is identified by
``functionality_id * 2**32 + testcase_id``, which the independent comparisons here compute from the
parquet files themselves. Every command that talks to the server runs in a subprocess whose
huggingface_hub reads ``HF_ENDPOINT`` at import (this process is offline).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from split_builders.cli import main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from conftest import HUB_TOKEN, hub_env  # noqa: E402

REPO_ID = "org/sentiment-behavioural"
FUNCTIONALITIES = "0,1,24"
CAPABILITIES = "Negation,NER"


def _resplit(env, *args, cwd):
    """``resplit ARGS`` in a fresh process (so huggingface_hub reads the server's endpoint)."""
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "split_builders.cli", *map(str, args)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=180)


def _behavioural(shared, out, seed):
    suite = (shared / "data" / "checklist" / "sentiment_suite.json.gz").resolve()
    assert main(["behavioural", "--source", str(suite), "--limit", "10", "--seed", str(seed),
                 "--functionalities", FUNCTIONALITIES, "--capabilities", CAPABILITIES, "--out", str(out),
                 "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def versions(shared, tmp_path_factory):
    root = tmp_path_factory.mktemp("behavioural")
    return _behavioural(shared, root / "v1", 1), _behavioural(shared, root / "v2", 2)


@pytest.fixture(scope="module")
def published(versions, tmp_path_factory):
    """A Hub server holding v1.0.0 (seed 1) and v1.1.0 (seed 2) of REPO_ID, pushed by ``resplit push``."""
    from hub_server import HubServer

    root = tmp_path_factory.mktemp("hub")
    server = HubServer(root / "store", tokens=[HUB_TOKEN]).start()
    env = hub_env(server, root)
    for folder, version in zip(versions, ("1.0.0", "1.1.0")):
        pushed = _resplit(env, "push", folder, REPO_ID, "--version", version, cwd=root)
        assert pushed.returncode == 0, pushed.stderr[-3000:]
        assert f"tagged v{version}" in pushed.stdout
    yield server
    server.shutdown()
    server.server_close()


def _splits(folder: Path) -> dict:
    """config -> split -> set of row identities, read straight from the parquet files."""
    out = {}
    for path in sorted(folder.glob("*/*.parquet")):
        table = pq.read_table(path, columns=["functionality_id", "testcase_id"])
        ids = {f * 2**32 + t for f, t in zip(table.column("functionality_id").to_pylist(),
                                            table.column("testcase_id").to_pylist())}
        split = path.name.split("-")[0]
        assert split not in out.setdefault(path.parent.name, {}), path  # one file per split here
        out[path.parent.name][split] = ids
    return out


def _expected_moves(a: Path, b: Path) -> dict:
    """Per config of ``b``: moved / added / removed rows and the moves per split pair."""
    before, after = _splits(a), _splits(b)
    assert before.keys() == after.keys()
    result = {}
    for config in after:
        wa = {i: s for s, ids in before[config].items() for i in ids}
        wb = {i: s for s, ids in after[config].items() for i in ids}
        pairs = {}
        for i in wa.keys() & wb.keys():
            if wa[i] != wb[i]:
                pairs[f"{wa[i]}->{wb[i]}"] = pairs.get(f"{wa[i]}->{wb[i]}", 0) + 1
        result[config] = {"moved": sum(pairs.values()), "added": len(wb.keys() - wa.keys()),
                          "removed": len(wa.keys() - wb.keys()), "pairs": pairs}
    return result


def test_verify_a_published_version_by_its_tag(published, versions, tmp_path):
    env = hub_env(published, tmp_path)
    done = _resplit(env, "verify", f"{REPO_ID}@v1.0.0", "--all", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    lines = done.stdout.strip().splitlines()
    expected = _splits(versions[0])
    checks = {(int(m[1]), m[2], m[3]): m[4] for m in
              (re.match(r"level (\d)\s+(\S+)/(\S+)\s+(identical|differs|not checked)", line) for line in lines) if m}
    for level in (1, 2):
        assert {(c, s) for lv, c, s in checks if lv == level} == {
            (c, s) for c, splits in expected.items() for s in splits}, level
    assert set(checks.values()) == {"identical"}
    # beside every config and split: croissant.json and the task files, as resplit wrote them into the pushed copy
    files = {m[1] for m in (re.match(r"level 1\s+(croissant\.json|eval\.yaml|\(\S+\))\s+identical", line)
                            for line in lines) if m}
    assert files == {"croissant.json", "eval.yaml", "(tasks)", "(targets)", "(named)"}
    count = 2 * sum(len(splits) for splits in expected.values()) + len(files)
    assert lines[-1] == f"{REPO_ID}@v1.0.0: {count} identical (levels 1, 2) -> OK"


def test_diff_between_two_published_versions_equals_the_parquet_files(published, versions, tmp_path):
    env = hub_env(published, tmp_path)
    done = _resplit(env, "diff", f"{REPO_ID}@v1.0.0", f"{REPO_ID}@v1.1.0", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    expected = _expected_moves(*versions)
    assert set(result) == set(expected)
    for config, counts in expected.items():
        assert {k: result[config][k] for k in ("moved", "added", "removed", "pairs")} == counts, config
        assert result[config]["status"] == ("changed" if counts["moved"] or counts["added"] or counts["removed"]
                                            else "unchanged")
    # The seeds differ, so rows did move, and in the per-functionality configs different test cases
    # were drawn into the held-out split (rows added and removed, not only moved).
    assert expected["seen"]["moved"] > 0
    assert any(c["added"] and c["removed"] for c in expected.values())
    assert "  seed: 1 -> 2" in lines  # the two tags resolve to the two builds
    assert not any("release_version" in line for line in lines)  # pushed metadata is not a change


CHANGELOG = textwrap.dedent("""
    from huggingface_hub import hf_hub_download
    import sys
    print(open(hf_hub_download(sys.argv[1], "CHANGELOG.md", repo_type="dataset", revision=sys.argv[2])).read())
""")


def _changelog_section(text: str, tag: str) -> list[str]:
    sections = re.split(r"^## ", text, flags=re.M)
    (section,) = [s for s in sections if s.startswith(tag + " ")]
    return section.splitlines()


def test_published_changelog_equals_diff(published, versions, tmp_path):
    env = hub_env(published, tmp_path)
    download = subprocess.run([sys.executable, "-c", CHANGELOG, REPO_ID, "v1.1.0"], env=env, capture_output=True,
                              text=True, timeout=120, cwd=tmp_path)
    assert download.returncode == 0, download.stderr[-3000:]
    text = download.stdout
    assert text.startswith("# Changelog\n")
    assert text.index("## v1.1.0") < text.index("## v1.0.0")
    assert "First published version." in _changelog_section(text, "v1.0.0")

    done = _resplit(env, "diff", f"{REPO_ID}@v1.0.0", f"{REPO_ID}@v1.1.0", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    section = _changelog_section(text, "v1.1.0")
    assert "Rows that moved between splits since v1.0.0, per config:" in section
    pattern = re.compile(r"- `([^`]+)`: (\d+) rows moved \(([^)]*)\); (\d+) added, (\d+) removed; "
                         r"now (\d+)/(\d+)/(\d+) rows")
    entries = {m[1]: m for m in map(pattern.match, section) if m}
    assert set(entries) == set(result)
    after = _splits(versions[1])
    for config, m in entries.items():
        assert (int(m[2]), int(m[4]), int(m[5])) == (
            result[config]["moved"], result[config]["added"], result[config]["removed"]), config
        pairs = ", ".join(f"{k} {v}" for k, v in sorted(result[config]["pairs"].items())) or "none"
        assert m[3] == pairs, config
        assert tuple(int(m[i]) for i in (6, 7, 8)) == tuple(
            len(after[config].get(s, ())) for s in ("train", "validation", "test")), config


def test_verify_a_missing_hub_dataset_is_a_clear_error(hub, tmp_path):
    env = hub_env(hub, tmp_path)
    done = _resplit(env, "verify", "org/missing@v9", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("resplit verify: error: org/missing@v9: no such dataset or revision on the Hub")
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_diff_with_a_missing_revision_is_a_clear_error(published, tmp_path):
    env = hub_env(published, tmp_path)
    done = _resplit(env, "diff", f"{REPO_ID}@v1.0.0", f"{REPO_ID}@v9.9.9", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"resplit diff: error: {REPO_ID}@v9.9.9: no such dataset or revision")


# -- level 3: rebuild from the recorded options --------------------------------------------------------
def _tmcd(source: Path, out: Path, seed=1):
    """A short search (one restart of 2,000 swaps): level 3 re-runs it, and these tests are about the rebuild, not
    the search (four restarts, the default, made each build and each rescore four times as long)."""
    assert main(["tmcd", "--source", str(source), "--seed", str(seed), "--configs", "tmcd,length",
                 "--iterations", "2000", "--restarts", "1", "--no-published", "--out", str(out), "--no-progress"]) == 0
    return out


def _levels(printed: str) -> dict:
    """(level, config, split) -> status of every finding ``verify --all`` printed."""
    found = {}
    for line in printed.splitlines():
        m = re.match(r"level (\d)\s+(\S+?)(?:/(\S+))?\s+(identical|differs|not checked)", line)
        if m:
            found[(int(m[1]), m[2], m[3])] = m[4]
    return found


@pytest.fixture(scope="module")
def geoquery_copy(shared, tmp_path_factory):
    """An absolute path to a private copy of GeoQuery's NQG file (the card records the path given)."""
    root = tmp_path_factory.mktemp("geoquery")
    source = root / "geoquery_nqg.tsv"
    shutil.copyfile(shared / "data" / "geoquery" / "geoquery_nqg.tsv", source)
    return source


@pytest.fixture(scope="module")
def geoquery_release(geoquery_copy, tmp_path_factory) -> Path:
    """``_tmcd`` of the private copy, built once for the tests that rebuild it from that copy (each test works on
    its own copy of the folder)."""
    return _tmcd(geoquery_copy, tmp_path_factory.mktemp("geoquery-release") / "rel")


def test_rescore_rebuilds_an_untouched_tmcd_release(geoquery_release, tmp_path, capsys):
    out = Path(shutil.copytree(geoquery_release, tmp_path / "rel"))  # what _tmcd(geoquery_copy, ...) wrote
    capsys.readouterr()
    assert main(["verify", str(out), "--rescore", "--all"]) == 0
    printed = capsys.readouterr().out
    found = _levels(printed)
    splits = {(c, s) for c in ("tmcd", "length") for s in ("train", "test")}
    files = ("source", "croissant.json", "eval.yaml", "(tasks)", "(targets)", "(named)")  # not a split's
    for level in (1, 2, 3):
        assert {(c, s) for lv, c, s in found if lv == level and c not in files} == splits, (level, printed)
    assert found[(3, "source", None)] == "identical"  # the source's content hash equals the card's
    assert all(found[(1, name, None)] == "identical" for name in files[1:])
    assert set(found.values()) == {"identical"}, printed
    assert printed.strip().splitlines()[-1].endswith(f"{len(found)} identical (levels 1, 2, 3) -> OK")


def test_rescore_catches_a_changed_seed_in_the_card(geoquery_release, tmp_path, capsys):
    out = Path(shutil.copytree(geoquery_release, tmp_path / "rel"))  # what _tmcd(geoquery_copy, ...) wrote
    text = (out / "README.md").read_text()
    _, head, body = text.split("---\n", 2)
    metadata = yaml.safe_load(head)
    assert metadata["resplit"]["seed"] == 1
    metadata["resplit"]["seed"] = 2
    (out / "README.md").write_text(f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n{body}")
    capsys.readouterr()
    assert main(["verify", str(out), "--rescore", "--all", "--no-load-check"]) == 1
    found = _levels(capsys.readouterr().out)
    # length depends on the seed too: inputs of one length at its cut are ordered by a seeded draw from their
    # content keys (the content row order rule; by file order, under the position rule, they were not)
    # (croissant.json, which records the seed of the card it was written from, is as resplit wrote it: its own
    # fingerprint holds; the card's edit is what levels 2 and 3 find)
    assert {k for k, v in found.items() if v == "differs"} == {
        (level, c, s) for level in (2, 3) for c in ("tmcd", "length") for s in ("train", "test")}


def test_rescore_alone_catches_a_source_that_changed_since_the_build(geoquery_copy, tmp_path, capsys):
    source = tmp_path / "geoquery_nqg.tsv"
    shutil.copyfile(geoquery_copy, source)
    out = _tmcd(source, tmp_path / "rel")
    lines = source.read_text().splitlines(keepends=True)
    source.write_text("".join(lines[:800]))  # the source lost its last 80 rows after the build
    capsys.readouterr()
    assert main(["verify", str(out), "--no-load-check"]) == 0  # the release agrees with itself
    assert main(["verify", str(out), "--rescore", "--all", "--no-load-check"]) == 1
    found = _levels(capsys.readouterr().out)
    assert {k for k, v in found.items() if v == "differs"} == {
        (3, "source", None), *((3, c, s) for c in ("tmcd", "length") for s in ("train", "test"))}
    assert all(v == "identical" for (level, _, _), v in found.items() if level in (1, 2))


def test_rescore_rebuilds_an_untouched_behavioural_release(versions, capsys):
    """The BELUGA release was built from an absolute path to the suite: level 3 must rebuild it."""
    capsys.readouterr()
    code = main(["verify", str(versions[0]), "--rescore", "--all", "--no-load-check"])
    printed = capsys.readouterr().out
    found = _levels(printed)
    assert not [k for k, v in found.items() if v == "not checked"], printed
    assert {(c, s) for lv, c, s in found if lv == 3} == {("source", None), *(
        (c, s) for c, splits in _splits(versions[0]).items() for s in splits)}
    assert set(found.values()) == {"identical"} and code == 0


def test_rescore_reads_a_moved_source_from_the_source_option(geoquery_copy, tmp_path, capsys):
    """The card records where the source was; when it has moved, level 3 says so and --source points
    to the new place."""
    source = tmp_path / "before" / "geoquery_nqg.tsv"
    source.parent.mkdir()
    shutil.copyfile(geoquery_copy, source)
    out = _tmcd(source, tmp_path / "rel")
    moved = source.rename(tmp_path / "geoquery_moved.tsv")
    capsys.readouterr()
    assert main(["verify", str(out), "--rescore", "--no-load-check"]) == 0  # nothing differs; level 3 did not run
    printed = capsys.readouterr().out
    assert "level 3  (all)" in printed and "not checked" in printed and "--source" in printed
    assert main(["verify", str(out), "--rescore", "--all", "--no-load-check", "--source", str(moved)]) == 0
    found = _levels(capsys.readouterr().out)
    assert found[(3, "source", None)] == "identical" and found[(3, "tmcd", "test")] == "identical"
