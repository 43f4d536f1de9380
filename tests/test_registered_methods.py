"""The contract of every registered split method, on small real inputs from ``../shared``: each check of the public
conformance check (:func:`split_builders.testing.check_method`, :data:`split_builders.testing.CHECKS`) runs on every
method of the registry, reading the session's shared release of it (built through the CLI from its own
``example_arguments``, ``family_releases``): its declarations, provenance schema and hashes, card, ``verify`` levels 1
and 2, fields and labels, Hub metadata, refused bad input, groups and evidence. No test lists methods: a registered
method without example arguments fails its ``example`` check."""


import pytest
import yaml

from conftest import FAMILIES, FAMILY_NULL_SPLITS, refused_in_one_line, verify_rescore
from split_builders.api import registry
from split_builders.cli import main
from split_builders.testing import CHECKS, Case



@pytest.fixture(scope="module")
def releases(family_releases):
    """One release folder per family (the session's shared, read-only ones: ``--seed 7 --null-splits 50``)."""
    return family_releases


def front_matter(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


@pytest.fixture(scope="module")
def hook_runs():
    """``{family: {variant: HookRun}}``: each family's hooks run once per variant, shared by its hook checks."""
    return {family: {} for family in FAMILIES}


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("family", FAMILIES)
def test_conformance(family, check, family_releases, family_args, shared, tmp_path, hook_runs):
    """One check of :func:`split_builders.testing.check_method` on one registered method and its shared release."""
    case = Case(registry()[family], shared, tmp_path, release=lambda: family_releases[family],
                arguments=family_args[family], runs=hook_runs[family])
    CHECKS[check](case)


def test_every_registered_method_has_example_arguments(family_args):
    assert set(registry()) <= set(family_args)
    missing = [family for family in FAMILIES if not family_args[family]]
    assert not missing, f"no example arguments for {missing}"


def test_show_prints_any_familys_release(releases, capsys):
    for family in FAMILIES:
        assert main(["show", str(releases[family])]) == 0
        assert f"{family} release" in capsys.readouterr().out


@pytest.mark.parametrize("family", FAMILIES)
def test_the_command_refuses_an_existing_out_without_a_traceback(family, family_args, tmp_path, capsys):
    """In this process (every family's refusal through the real command's process: ``test_bad_input.py``'s
    ``test_bad_input_through_the_real_command_prints_no_traceback``): exit 2, one line, nothing in the folder changed."""
    out = tmp_path / "exists"
    out.mkdir()
    (out / "mine.txt").write_text("the user's")
    line = refused_in_one_line([family, *family_args[family], "--seed", "1", "--out", str(out)], capsys, out)
    assert "exists" in line


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
