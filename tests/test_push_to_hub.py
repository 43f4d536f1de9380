"""Publishing (push_to_hub.py, split_builders.publishing.publish) against the local Hub server.

The round trip runs the real commands in subprocesses with ``HF_ENDPOINT`` pointing at the server:
huggingface_hub, datasets and evaluate read their endpoint and offline switches once at import, and
conftest sets this process offline. The failure tests call the library in this process with those
constants patched for the test only.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from split_builders.publishing import publish
from split_builders.builder import build
from split_builders.api import ConfigSplit
from split_builders.release.writer import write_release

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "push_to_hub.py"
sys.path.insert(0, str(REPO / "tests"))
from conftest import HUB_TOKEN, hub_env  # noqa: E402

TOKEN = HUB_TOKEN


def _build(reference, out, seed):
    inputs = reference / "inputs" / "snli"
    return build("likelihood", source=str(inputs / "all_examples.csv"), out=out,
                 scores=str(inputs / "all_examples__False_loglikelihoods.npy"), prompt_field="premise",
                 query_field="hypothesis", label_field="gold_label", validation_size=200, test_size=200,
                 length_buckets=4, seed=seed, progress=False, license="cc-by-sa-4.0")


@pytest.fixture(scope="module")
def releases(likelihood_reference, tmp_path_factory):
    """Two versions of one release: the seed moves rows of the seeded configs."""
    root = tmp_path_factory.mktemp("releases")
    _build(likelihood_reference, root / "v1" / "snli-likelihood", seed=42)
    _build(likelihood_reference, root / "v2" / "snli-likelihood", seed=7)
    return root / "v1" / "snli-likelihood", root / "v2" / "snli-likelihood"


_env = hub_env


def _push(env, *args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], env=env, capture_output=True,
                          text=True, cwd=REPO, timeout=120)


def _local_ids(folder) -> dict:
    return {config: {split: sorted(ids) for split, ids in splits.items()}
            for config, splits in publish.validate_release(folder).items()}


# Runs in a fresh process pointed at the server: every way a user reads a published version.
CLIENT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import datasets, evaluate
    from huggingface_hub import HfApi, snapshot_download
    repo, configs, out, metric, task_name = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4], sys.argv[5]
    datasets.disable_progress_bars()
    def ids(path, config, cache, **kw):
        loaded = datasets.load_dataset(path, config, cache_dir=cache, **kw)
        return {s: sorted(loaded[s]["source_id"]) for s in loaded}
    refs = HfApi().list_repo_refs(repo, repo_type="dataset")
    tags = {t.name: t.target_commit for t in refs.tags}
    result = {"tags": tags, "by_tag": {}, "by_commit": {}, "snapshot": {}}
    for tag, commit in tags.items():
        result["by_tag"][tag] = {c: ids(repo, c, f"{out}/c-{tag}", revision=tag) for c in configs}
        result["by_commit"][tag] = ids(repo, configs[0], f"{out}/k-{tag}", revision=commit)
        folder = snapshot_download(repo, repo_type="dataset", revision=tag, local_dir=f"{out}/snap-{tag}")
        result["snapshot"][tag] = ids(folder, configs[0], f"{out}/s-{tag}")
        result["snapshot_files"] = sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*")
                                          if ".cache" not in p.parts)
    # each version's own harness tasks (lm_eval/ of its snapshot), run after every version was pushed
    from lm_eval.tasks import TaskManager
    result["harness"] = {}
    for tag in tags:
        manager = TaskManager(include_path=[f"{out}/snap-{tag}/lm_eval"], include_defaults=False)
        task = manager.load([task_name])["tasks"][task_name]
        result["harness"][tag] = {"source_ids": sorted(d["source_id"] for d in task.eval_docs),
                                  "revision": task.config.dataset_kwargs["revision"]}
    pass_rate = evaluate.load(metric, revision="v1.0.0")
    eq = {"fn": "eq"}
    result["metric"] = pass_rate.compute(
        predictions=[[2], [0]], confidences=[[], []], labels=[[2], [2]], meta=[None, None],
        functionality=["f", "f"], test_type=["MFT", "MFT"], capability=["c", "c"],
        expectation=[eq, eq], agg_fn=["all", "all"])["pass_rate"]
    print("RESULT" + json.dumps(result))
""")


def test_two_versions_round_trip_through_the_real_clients(releases, online, tmp_path):
    v1, v2 = releases
    env = _env(online, tmp_path)
    first = _push(env, v1, "org/snli-likelihood", "--version", "1.0.0")
    assert first.returncode == 0, first.stderr
    assert 'load_dataset("org/snli-likelihood", "ll_split", revision="v1.0.0")' in first.stdout
    assert TOKEN not in first.stdout + first.stderr
    refused = _push(env, v2, "org/snli-likelihood", "--version", "1.0.0")  # the command: exit 2, one line
    assert refused.returncode == 2 and "already published" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr, refused.stderr
    with pytest.raises(publish.VersionError, match="not newer"):  # the server's tags, read in this process
        publish.push_release(v2, "org/snli-likelihood", "0.9.0", log=lambda line: None)
    second = _push(env, v2, "org/snli-likelihood", "--version", "1.1.0", "--message", "reseed")
    assert second.returncode == 0, second.stderr
    assert "tagged v1.1.0" in second.stdout and 'revision="v1.1.0")' in second.stdout
    metric = _push(env, "--metric", REPO / "metrics" / "pass_rate", "org/pass_rate", "--version", "1.0.0")
    assert metric.returncode == 0, metric.stderr
    assert 'evaluate.load("org/pass_rate", revision="v1.0.0")' in metric.stdout

    configs = ["ll_split", "ll_split_len", "ll_split_reverse", "random", "length"]
    from split_builders.publishing.export import group_name

    task_name = f"{group_name(publish.read_card(v1)[0])}_random"  # the name the local tasks have too
    client = subprocess.run([sys.executable, "-c", CLIENT, "org/snli-likelihood", ",".join(configs),
                             str(tmp_path / "client"), "org/pass_rate", task_name],
                            env=env, capture_output=True, text=True, timeout=240)
    assert client.returncode == 0, client.stderr[-3000:]
    result = json.loads(client.stdout.split("RESULT", 1)[1])
    expected = {"v1.0.0": _local_ids(v1), "v1.1.0": _local_ids(v2)}
    assert set(result["tags"]) == set(expected)
    for tag, by_config in expected.items():
        assert result["by_tag"][tag] == by_config, tag
        assert result["by_commit"][tag] == by_config["ll_split"] == result["snapshot"][tag]
    assert expected["v1.0.0"]["random"] != expected["v1.1.0"]["random"]  # the seed did move rows
    # v1.0.0's harness tasks read v1.0.0's rows, though v1.1.0 came after (pinned to the tag)
    for tag in expected:
        assert result["harness"][tag] == {"source_ids": expected[tag]["random"]["test"], "revision": tag}
    assert result["harness"]["v1.0.0"]["source_ids"] != result["harness"]["v1.1.0"]["source_ids"]
    assert {"README.md", "CHANGELOG.md", "ll_split"} <= set(result["snapshot_files"])
    # v1.1.0 holds its own data files only: v1.0.0's were deleted in the same commit.
    assert {f for f in result["snapshot_files"] if f.endswith(".parquet")} == {
        p.relative_to(v2).as_posix() for p in v2.rglob("*.parquet")}
    assert result["metric"] == 50.0

    snapshot = tmp_path / "client" / "snap-v1.1.0"
    card, _ = publish.read_card(snapshot)
    assert card["resplit"]["release_version"] == "1.1.0"
    changelog = (snapshot / "CHANGELOG.md").read_text()
    assert changelog.index("## v1.1.0") < changelog.index("## v1.0.0")  # newest first, history kept
    moves = publish.count_moves(expected["v1.0.0"], expected["v1.1.0"])
    for config in configs:
        assert f"- `{config}`: {moves[config]['moved']} rows moved" in changelog
    assert moves["random"]["moved"] > 0
    assert list((v1).glob("CHANGELOG.md")) == []  # the local folder is never modified


def test_dry_run_checks_the_folder(tmp_path, capsys):
    from split_builders.cli.publish import build_parser, run

    def main(*argv):
        return run(build_parser("push_to_hub.py", "").parse_args([str(a) for a in argv]))

    assert main(tmp_path, "org/name", "--version", "1.0.0", "--dry-run") == 2
    assert "has no README.md" in capsys.readouterr().err
    rows = datasets.Dataset.from_dict({"source_id": [0, 1, 2], "text": list("abc")})
    out = write_release(tmp_path / "rel", rows, [ConfigSplit("c", {"train": [0], "validation": [1], "test": [2]},
                                                             method="m")], provenance={}, render_card=lambda s, w: "",
                        license="mit")
    assert main(out, "org/name", "--version", "1.0", "--dry-run") == 2
    assert "version must look like 1.2.3" in capsys.readouterr().err
    assert main(out, "org/name", "--version", "1.0.0", "--dry-run") == 0
    assert "is valid: 1 configs; would push it to org/name and tag v1.0.0" in capsys.readouterr().out
    next(out.glob("c/test-*.parquet")).unlink()
    assert main(out, "org/name", "--version", "1.0.0", "--dry-run") == 2
    assert "do not exist" in capsys.readouterr().err


def test_resplit_push_is_the_same_command(tmp_path, capsys):
    from split_builders.cli import main

    folder = _tiny_release(tmp_path / "rel")
    assert main(["push", str(folder), "org/name", "--version", "2.0.0", "--dry-run"]) == 0
    assert "would push it to org/name and tag v2.0.0" in capsys.readouterr().out
    assert main(["push", str(tmp_path / "metric"), "org/m", "--version", "1.0.0", "--metric", "--dry-run"]) == 2
    assert "resplit push: error: metric folder" in capsys.readouterr().err


def _tiny_release(folder, ids=(0, 1, 2)):
    rows = datasets.Dataset.from_dict({"source_id": list(ids), "text": list("abc")})
    return write_release(folder, rows, [ConfigSplit("c", {"train": [0], "validation": [1], "test": [2]},
                                                    method="m")], provenance={}, render_card=lambda s, w: "",
                         license="mit")


def _edit_card(folder, edit):
    text = (folder / "README.md").read_text()
    _, head, body = text.split("---\n", 2)
    metadata = yaml.safe_load(head)
    edit(metadata["resplit"]["configs"]["c"])
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(metadata, sort_keys=False)}---\n{body}")


def _replace_test_file(folder, data: bytes):
    """Overwrite c/test's parquet and record its new hash, so only the intended check can fail."""
    path = next(folder.glob("c/test-*.parquet"))
    path.write_bytes(data)
    _edit_card(folder, lambda c: c["sha256"].__setitem__("test", hashlib.sha256(data).hexdigest()))


@pytest.mark.parametrize("damage, message", [
    ("sha", "the card says"),
    ("rows", "the card says 5"),
    ("overlap", "source_id 0 is in both 'train' and 'test'"),
    ("unreadable", "does not load"),
])
def test_invalid_folders_are_refused_before_any_network(tmp_path, damage, message):
    folder = _tiny_release(tmp_path / "rel")
    if damage == "sha":
        _edit_card(folder, lambda c: c["sha256"].__setitem__("train", "0" * 64))
    elif damage == "rows":
        _edit_card(folder, lambda c: c["rows"].__setitem__("train", 5))
    elif damage == "overlap":
        table = pa.table({"source_id": [0], "text": ["a"]})
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        _replace_test_file(folder, sink.getvalue().to_pybytes())
    else:
        _replace_test_file(folder, b"not parquet")
    with pytest.raises(publish.InvalidReleaseError, match=message):
        publish.push_release(folder, "org/name", "1.0.0", log=lambda line: None)  # no token, no server needed


def test_versions_must_be_new_and_newer():
    assert publish.check_new_version("1.0.0", {}) is None
    tags = {"v1.2.0": "a", "v1.10.0": "b", "latest": "c"}
    assert publish.check_new_version("1.10.1", tags) == "v1.10.0"  # numeric, not string, order
    for version, message in (("1.10.0", "already published"), ("1.9.9", "not newer"), ("1.2", "1.2.3")):
        with pytest.raises(publish.VersionError, match=message):
            publish.check_new_version(version, tags)


def test_count_moves_between_versions():
    before = {"a": {"train": [1, 2, 3], "validation": [4], "test": [5]}}
    after = {"a": {"train": [1, 2, 5], "validation": [4], "test": [3, 6]}, "b": {"train": [1]}}
    assert publish.count_moves(before, after) == {
        "a": {"moved": 2, "pairs": {"test->train": 1, "train->test": 1}, "added": 1, "removed": 0}, "b": None}


@pytest.fixture()
def online(hub, tmp_path, monkeypatch):
    """This process's huggingface_hub pointed at the server, online, with TOKEN and no stored login."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", hub.endpoint)
    # Derived from ENDPOINT at import; hf_hub_url swaps the endpoint only where the two agree.
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-stored-tokens"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return hub


def _remote(hub_server, repo_id="org/snli-likelihood"):
    from huggingface_hub import HfApi

    return publish.remote_state(HfApi(endpoint=hub_server.endpoint, token=TOKEN), repo_id, "dataset")


def test_token_and_network_failures_are_clear_and_change_nothing(releases, online, monkeypatch, capsys):
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError

    v1, _ = releases
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(publish.HubAuthError, match="no Hub token: set HF_TOKEN"):
        publish.push_release(v1, "org/snli-likelihood", "1.0.0")
    monkeypatch.setenv("HF_TOKEN", "hf_rejected_secret")
    with pytest.raises(publish.HubAuthError, match="rejected the token") as rejected:
        publish.push_release(v1, "org/snli-likelihood", "1.0.0")
    assert "hf_rejected_secret" not in str(rejected.value) + str(capsys.readouterr())
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(publish.HubNetworkError, match="cannot reach the Hub"):
        publish.push_release(v1, "org/snli-likelihood", "1.0.0")
    with pytest.raises(RepositoryNotFoundError):  # the repository was never created
        _remote(online)


def test_failed_commit_changes_nothing_and_failed_tag_resumes(releases, online):
    v1, _ = releases
    online.fail_commits = 1
    with pytest.raises(publish.PublishError, match="answered 500"):
        publish.push_release(v1, "org/snli-likelihood", "1.0.0", log=lambda line: None)
    assert _remote(online) == ({}, None)  # created, but no commit and no tag
    online.fail_tags = 1
    with pytest.raises(publish.PublishError, match="running the same command again resumes"):
        publish.push_release(v1, "org/snli-likelihood", "1.0.0", log=lambda line: None)
    tags, head = _remote(online)
    assert tags == {} and head is not None  # committed, not tagged
    result = publish.push_release(v1, "org/snli-likelihood", "1.0.0", log=lambda line: None)
    assert result.commit == head and _remote(online) == ({"v1.0.0": head}, head)  # tagged, no second commit


def test_concurrent_push_gives_a_conflict_error(releases, online, monkeypatch):
    from huggingface_hub import CommitOperationAdd, HfApi

    v1, v2 = releases
    publish.push_release(v1, "org/snli-likelihood", "1.0.0", log=lambda line: None)
    staged = publish.stage_release

    def someone_else_pushes_meanwhile(*args, **kwargs):
        HfApi(endpoint=online.endpoint, token=TOKEN).create_commit(
            "org/snli-likelihood", [CommitOperationAdd(path_in_repo="other.txt", path_or_fileobj=b"x")],
            repo_type="dataset", commit_message="meanwhile")
        return staged(*args, **kwargs)

    monkeypatch.setattr(publish, "stage_release", someone_else_pushes_meanwhile)
    with pytest.raises(publish.HubConflictError, match="conflict \\(412\\)"):
        publish.push_release(v2, "org/snli-likelihood", "1.1.0", log=lambda line: None)
    tags, _ = _remote(online)
    assert list(tags) == ["v1.0.0"]  # the other push's commit stands; ours was refused whole


def test_private_repo_and_metric_space_named_otherwise(releases, online):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    v1, _ = releases
    publish.push_release(v1, "org/hidden", "0.1.0", private=True, log=lambda line: None)
    with pytest.raises(RepositoryNotFoundError):  # invisible without a token
        HfApi(endpoint=online.endpoint, token=False).list_repo_refs("org/hidden", repo_type="dataset")
    result = publish.push_metric(REPO / "metrics" / "pass_rate", "org/checklist_pass_rate", "1.0.0",
                                 log=lambda line: None)
    api = HfApi(endpoint=online.endpoint, token=TOKEN)
    files = {f.path for f in api.list_repo_tree("org/checklist_pass_rate", repo_type="space", revision="v1.0.0")}
    # evaluate.load("org/checklist_pass_rate") downloads checklist_pass_rate.py: the module is renamed.
    assert files == {"checklist_pass_rate.py", "predictions.py", "suite_adapters.py", "README.md", "app.py", "requirements.txt"}
    assert result.load_line == 'evaluate.load("org/checklist_pass_rate", revision="v1.0.0")'
    with pytest.raises(publish.VersionError, match="already published"):
        publish.push_metric(REPO / "metrics" / "pass_rate", "org/checklist_pass_rate", "1.0.0")
