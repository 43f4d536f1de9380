"""``resplit verify``'s load check (level 1: every config loads with ``datasets``): each config is read by
``datasets.load_dataset`` while the README is parsed by ``datasets`` once, not once per config, and a
broken config is still reported in one line with the error ``load_dataset(folder, config)`` raises.

A CURRICULUM release of one phenomenon with its inoculation configs (seven configs) from the real zips in
``../shared``."""

from __future__ import annotations

import shutil
import tempfile

import datasets
import pytest
import yaml

from split_builders.cli import main
from split_builders.publishing.verify import verify

DAMAGED = "verbnet_inoc_100"  # not the first config: read from its data files, not through the README


@pytest.fixture(scope="module")
def release(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("verify-loads") / "verbnet"
    assert main(["curriculum", "--data", str(shared / "data" / "curriculum" / "tasks"), "--phenomena", "verbnet",
                 "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture()
def copy(release, tmp_path):
    folder = tmp_path / "release"
    shutil.copytree(release, folder)
    return folder


def _metadata(folder) -> tuple[dict, str]:
    _, head, body = (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(head), body


def _real_error(folder, config) -> str:
    """The first line of what ``datasets.load_dataset(folder, config)`` raises (what a user meets)."""
    with tempfile.TemporaryDirectory() as cache:
        try:
            datasets.load_dataset(str(folder), config, cache_dir=cache)
        except Exception as error:  # noqa: BLE001
            return str(error).splitlines()[0]
    raise AssertionError(f"{config} loads")


def test_every_config_is_loaded_and_the_readme_is_read_once(release, monkeypatch):
    metadata, _ = _metadata(release)
    configs = {c["config_name"]: {str(release / f["path"]) for f in c["data_files"]} for c in metadata["configs"]}
    assert len(configs) == 7
    calls = []
    real = datasets.load_dataset

    def spy(path, name=None, **kwargs):
        calls.append((path, name, kwargs.get("data_files")))
        return real(path, name, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", spy)
    report = verify(str(release))
    assert report.ok and not [f for f in report.findings if f.split == "load"]
    through_readme = [name for path, name, _ in calls if path == str(release)]
    assert through_readme == [metadata["configs"][0]["config_name"]]  # the README path, once
    read = [{str(f) for paths in files.values() for f in paths} for path, _, files in calls if path == "parquet"]
    assert len(calls) == len(configs)  # one load per config, no more
    assert sorted(map(sorted, read)) == sorted(sorted(files) for name, files in configs.items()
                                               if name not in through_readme)


@pytest.mark.parametrize("damage", ["corrupt", "missing", "sizes", "corrupt-first"])
def test_a_broken_config_is_reported_in_one_line(copy, damage):
    metadata, body = _metadata(copy)
    config = metadata["configs"][0]["config_name"] if damage == "corrupt-first" else DAMAGED
    (train,) = (copy / config).glob("train-*.parquet")
    if damage.startswith("corrupt"):
        train.write_bytes(b"not a parquet file" * 8)
    elif damage == "missing":
        train.unlink()
    else:  # the card's dataset_info says one row more than the file holds (the hashes still match)
        for info in metadata["dataset_info"]:
            for split in info["splits"] if info["config_name"] == config else []:
                split["num_examples"] += split["name"] == "train"
        (copy / "README.md").write_text("---\n" + yaml.safe_dump(metadata, sort_keys=False) + "---\n" + body,
                                        encoding="utf-8")
    report = verify(str(copy))
    (finding,) = [f for f in report.findings if f.split == "load"]
    assert not report.ok and finding.config == config and finding.status == "differs"
    prefix = f"config {config!r} does not load: "
    assert finding.detail.startswith(prefix) and "\n" not in finding.detail
    ours, real = finding.detail[len(prefix):], _real_error(copy, config)
    if damage == "missing":  # datasets adds its list of every extension it knows when it globs the README's path
        assert ours.startswith("Unable to find") and real.startswith(ours) and train.name in ours
    elif damage == "sizes":  # the same check (verify_splits) of the same numbers; only the builder's name differs
        rows = sum(s["num_examples"] for i in metadata["dataset_info"] if i["config_name"] == config
                   for s in i["splits"] if s["name"] == "train")
        for text in (ours, real):
            assert f"num_examples={rows}" in text and f"num_examples={rows - 1}" in text
    else:
        assert ours == real
