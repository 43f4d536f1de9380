"""The contract of every registered split method, on small real inputs from ``../shared``: it builds
through the CLI with the common options and fail-fast checks, records the provenance schema, writes a
card with figures, and verifies at levels 1 and 2 with every config re-derived. The methods come from
the registry and are built from their own ``example_arguments`` (the session's ``family_releases``): a
registered method without example arguments fails :func:`test_every_registered_method_has_example_arguments`."""

import hashlib
import subprocess

import datasets
import pytest
import yaml

from conftest import FAMILIES, FAMILY_NULL_SPLITS, cli_command, verify_rescore
from split_builders.api import CommonOptions, registry
from split_builders.cli import main



@pytest.fixture(scope="module")
def releases(family_releases):
    """One release folder per family (the session's shared, read-only ones: ``--seed 7 --null-splits 50``)."""
    return family_releases


def front_matter(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def test_every_registered_method_has_example_arguments(family_args):
    assert set(registry()) <= set(family_args)
    missing = [family for family in FAMILIES if not family_args[family]]
    assert not missing, f"no example arguments for {missing}"
    for family in FAMILIES:
        assert "--source" in family_args[family] and "--out" not in family_args[family], family


@pytest.mark.parametrize("family", FAMILIES)
def test_every_released_row_carries_its_source_id(family, releases):
    import pyarrow.parquet as pq

    for path in sorted(releases[family].rglob("*.parquet")):
        assert "source_id" in pq.read_schema(path).names, path


def test_the_registry_holds_every_family_with_its_paper_and_options():
    methods = registry()
    for family in FAMILIES:
        method = methods[family]
        assert method.paper and method.summary and method.config_names
        assert issubclass(method.Options, CommonOptions)


@pytest.mark.parametrize("family", FAMILIES)
def test_provenance_schema_and_hashes(family, releases):
    meta = front_matter(releases[family])["resplit"]
    for key in ("schema", "version", "method", "paper", "seed", "parameters", "source", "signal", "environment",
                "configs"):
        assert key in meta, key
    assert meta["method"] == family and meta["seed"] == 7 and meta["schema"] == 1
    assert meta["source"]["rows"] > 0
    assert meta["source"].get("content_sha256") or meta["source"].get("revision")
    assert set(meta["environment"]) >= {"python", "numpy", "torch", "datasets", "transformers"}
    for config, entry in meta["configs"].items():
        assert set(entry["rows"]) == set(entry["sha256"]) and "train" in entry["rows"]
        for split, digest in entry["sha256"].items():
            files = list((releases[family] / config).glob(f"{split}-00000-of-00001-*.parquet"))
            assert len(files) == 1, (config, split)
            assert hashlib.sha256(files[0].read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("family", FAMILIES)
def test_every_config_loads_with_the_recorded_rows(family, releases, hf_cache):
    meta = front_matter(releases[family])["resplit"]
    for config, entry in list(meta["configs"].items())[:3]:
        loaded = datasets.load_dataset(str(releases[family]), config, cache_dir=hf_cache)
        assert {s: len(loaded[s]) for s in loaded} == entry["rows"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_card_has_the_skeleton_and_figures(family, releases):
    card = (releases[family] / "README.md").read_text(encoding="utf-8")
    for heading in ("## How to load it", "## Configs", "## How the splits were built", "## How the splits differ",
                    "## Source and citation"):
        assert heading in card, heading
    figures = list((releases[family] / "figures").glob("*.png"))
    assert figures and all(f"]({f.relative_to(releases[family]).as_posix()})" in card for f in figures)


@pytest.mark.parametrize("family", FAMILIES)
def test_an_existing_out_fails_before_the_source_is_read(family, family_args, tmp_path, monkeypatch, capsys):
    method = registry()[family]

    def never(*args, **kwargs):
        raise AssertionError("the source was read before the output location was checked")

    monkeypatch.setattr(type(method), "load", never)
    out = tmp_path / "exists"
    out.mkdir()
    assert main([family, *family_args[family], "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main([family, *family_args[family], "--out", str(tmp_path / "file" / "out")]) == 2
    assert "is a file" in capsys.readouterr().err


@pytest.mark.parametrize("family", FAMILIES)
def test_the_command_refuses_an_existing_out_without_a_traceback(family, family_args, tmp_path):
    out = tmp_path / "exists"
    out.mkdir()
    done = subprocess.run([*cli_command(family), family, *family_args[family], "--seed", "1",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr and "exists" in done.stderr


def test_show_prints_any_familys_release(releases, capsys):
    for family in FAMILIES:
        assert main(["show", str(releases[family])]) == 0
        assert f"{family} release" in capsys.readouterr().out


@pytest.mark.parametrize("family", FAMILIES)
def test_verify_passes_on_every_untouched_release(family, releases):
    from split_builders.publishing.verify import verify

    report = verify(str(releases[family]), load=False)
    assert report.ok and any(f.level == 1 for f in report.findings)
    assert all(f.status == "identical" for f in report.findings if f.level == 1)
    # Level 2 checks every config: re-derived from the rows, or (a published split) its recorded rows.
    configs = set(front_matter(releases[family])["resplit"]["configs"])
    assert {f.config for f in report.findings if f.level == 2 and f.status == "identical"} == configs
    assert not [f for f in report.findings if f.status == "not checked"]


@pytest.mark.parametrize("family, config, moves", [
    ("likelihood", "ll_split", ("test", "train")), ("likelihood", "ll_split_len", ("validation", "test")),
    ("likelihood", "random", ("train", "validation")), ("likelihood", "length", ("test", "train")),
    ("tmcd", "tmcd", ("test", "train")), ("tmcd", "length", ("train", "test")),
    ("tmcd", "published_tmcd_1", ("test", "train")),
    ("pvi", "simple_to_hard", ("test", "train")),
    ("curriculum", "verbnet", ("validation", "train")), ("curriculum", "verbnet_hypothesis_only", ("train", "validation")),
    ("behavioural", "seen", ("test", "train"))])
def test_verify_names_the_config_when_a_row_was_moved(family, config, moves, releases, tmp_path, capsys):
    import shutil

    from test_verify_diff import _move_a_row

    copy = tmp_path / family
    shutil.copytree(releases[family], copy)
    _move_a_row(copy, config, *moves)
    assert main(["verify", str(copy), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert f"level 2  {config}/" in printed and "differs" in printed


def test_rescore_of_a_release_from_given_scores_says_there_is_nothing_to_recompute(releases):
    report = verify_rescore(releases["likelihood"], load=False)
    (finding,) = [f for f in report.findings if f.level == 3]
    assert finding.status == "not checked" and "all_examples__False_loglikelihoods.npy" in finding.detail
    assert report.ok  # levels 1 and 2 still checked everything


def _group_field(release) -> str:
    """A field of a family's example release whose groups it keeps whole: its target where it has one
    (programs), else its first text field (a premise, a passage)."""
    from split_builders.api import Fields

    fields = Fields.from_record(front_matter(release)["resplit"])
    return fields.target or fields.text[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_keeps_groups_whole_or_refuses_group_field_in_one_line(family, family_args, releases, tmp_path,
                                                                            capsys):
    """Through the CLI: a grouped build has no group in two splits of any config, and verify
    re-derives it; a family that does not declare ``supports_groups`` says why in one line; a missing field
    is named."""
    grouping = registry()[family].supports_groups
    field, out = _group_field(releases[family]) if grouping else None, tmp_path / "grouped"
    args = [*family_args[family], *(["--pvi", "--limit", "300"] if family == "curriculum" else [])]
    code = main([family, *args, "--group-field", field or "premise", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    if field is None:  # refused before any work: by the method in one line, or by argparse (not offered)
        assert code == 2 and "--group-field" in captured.err.strip().splitlines()[-1]
        assert "Traceback" not in captured.err and not out.exists()
        return
    assert code == 0, captured.err
    record = front_matter(out)["resplit"]
    grouped = [name for name, entry in record["configs"].items() if entry["parameters"].get("grouped_by") == field]
    assert grouped, "no config records grouped_by"
    for name in grouped:
        config = datasets.load_dataset(str(out), name)
        values = {split: set(config[split][field]) for split in config}
        for a in values:
            for b in values:
                assert a >= b or not values[a] & values[b], (name, a, b)
    assert main(["verify", str(out)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main([family, *args, "--group-field", "no_such_field", "--out", str(tmp_path / "x"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'no_such_field' not found" in err and f"'{field}'" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_every_release_declares_what_its_columns_are(family, releases):
    """``resplit.fields`` (the method's :class:`Fields`) names columns the released rows have: the query,
    label and target in every config, each text field in some config (CURRICULUM's hypothesis-only
    variants drop the premise), and the label's names in its ``ClassLabel`` order where it is one."""
    import pyarrow.parquet as pq

    from split_builders.api import Fields

    meta = front_matter(releases[family])["resplit"]
    fields = Fields.from_record(meta)
    assert fields is not None and fields.text and fields.query in fields.text
    seen = set()
    for config in meta["configs"]:
        path = sorted((releases[family] / config).glob("train-*.parquet"))[0]
        names = set(pq.read_schema(path).names)
        seen |= names
        assert {c for c in (fields.query, fields.label, fields.target) if c} <= names, (config, names)
        features = datasets.Features.from_arrow_schema(pq.read_schema(path))
        label = features.get(fields.label) if fields.label else None
        if isinstance(label, datasets.ClassLabel):
            assert list(fields.label_names) == label.names, config
    assert set(fields.text) <= seen


def test_show_ends_on_the_rows_at_both_ends_of_the_signal(releases, capsys):
    """``resplit show FOLDER CONFIG`` of a release with a per-row signal prints, per split, the rows of
    lowest and highest signal, and ends on the test split's highest."""
    import re

    assert main(["show", str(releases["likelihood"]), "ll_split", "--rows", "2"]) == 0
    out = capsys.readouterr().out
    blocks = re.findall(r"\n(\w+): 2 rows of (lowest|highest) score\n((?:  .*\n?)+)", out)
    assert [(b[0], b[1]) for b in blocks] == [(s, e) for s in ("train", "validation", "test")
                                               for e in ("lowest", "highest")]
    values = {(s, e): [float(v) for v in re.findall(r"score=(-?[\d.]+)", text)] for s, e, text in blocks}
    for split in ("train", "validation", "test"):
        low, high = values[(split, "lowest")], values[(split, "highest")]
        assert low == sorted(low) and high == sorted(high, reverse=True) and max(low) <= min(high)
    assert out.rstrip().splitlines()[-1].startswith("  score=") and blocks[-1][:2] == ("test", "highest")
    # Only the declared text, label and signal: no source_id or length columns in the shown rows.
    assert "length_bucket" not in blocks[-1][2]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_card_carries_diagnostics_against_random_splits(family, releases):
    """Every family's card has the diagnostics section and its YAML the numbers of every config with an
    evaluation split (behavioural: what each config holds out)."""
    card = (releases[family] / "README.md").read_text(encoding="utf-8")
    assert "## Diagnostics against random splits" in card
    meta = front_matter(releases[family])["resplit"]
    assert meta["diagnostics"]["null_splits"] == FAMILY_NULL_SPLITS
    for config, entry in meta["configs"].items():
        evaluated = [s for s in ("validation", "test") if entry["rows"].get(s)]
        if not evaluated:
            continue
        numbers = entry["diagnostics"]
        if family == "behavioural":
            assert "held_out" in numbers, config
            continue
        for split in evaluated:
            for statistic in numbers[split].values():
                assert 0 <= statistic["percentile"] <= 100 if statistic["percentile"] is not None else True
    if family != "behavioural":
        named = {name for e in meta["configs"].values() for split, stats in e.get("diagnostics", {}).items()
                 for name in stats}
        assert {"length", "rare_word_fraction", "unseen_word_rate", "fk_grade"} <= named, named


@pytest.mark.parametrize("family", ["likelihood", "tmcd"])
def test_diagnose_on_a_release_built_without_them_gives_the_cards_numbers(family, family_args, releases, tmp_path,
                                                                             capsys):
    import json

    out = tmp_path / "bare"
    assert main([family, *family_args[family], "--seed", "7", "--out", str(out), "--no-progress",
                 "--null-splits", "0"]) == 0
    bare = (out / "README.md").read_text(encoding="utf-8")
    assert "## Diagnostics against random splits" not in bare and "diagnostics" not in front_matter(out)["resplit"]
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json", "--no-progress", "--null-splits", str(FAMILY_NULL_SPLITS)]) == 0
    report = json.loads(capsys.readouterr().out)
    carded = front_matter(releases[family])["resplit"]["configs"]
    assert report["configs"] and set(report["configs"]) <= set(carded)
    for config, splits in report["configs"].items():
        assert splits == {s: v for s, v in carded[config]["diagnostics"].items() if s != "held_out"}, config


def test_null_splits_default_comes_from_the_environment_and_is_checked(monkeypatch, tmp_path, capsys):
    from split_builders.api import DEFAULT_NULL_SPLITS, NULL_SPLITS_ENV

    method = registry()["likelihood"]
    monkeypatch.delenv(NULL_SPLITS_ENV, raising=False)
    assert method.options(out=str(tmp_path / "a")).null_splits == DEFAULT_NULL_SPLITS
    monkeypatch.setenv(NULL_SPLITS_ENV, "17")
    assert method.options(out=str(tmp_path / "a")).null_splits == 17
    assert method.options(out=str(tmp_path / "a"), null_splits=3).null_splits == 3  # the option wins
    for bad in ("many", "-1", "1000001"):
        monkeypatch.setenv(NULL_SPLITS_ENV, bad)
        assert main(["likelihood", "--out", str(tmp_path / "b")]) == 2
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and NULL_SPLITS_ENV in error, error
    assert not (tmp_path / "b").exists()
