"""Bad input, round five, the rest (issue 46, "Silent wrong answers", "Tracebacks" and "Unclear"): a recipe's bad
``against:`` entry refused before the build; ``push``'s destination, ``--license`` and a build's ``--org`` checked by
the Hub's rules (:func:`split_builders.options.check_repo_id`, :func:`~split_builders.options.check_license`), a
local path as push's destination one line; ``--no-inoculation --inoculation-sizes`` refused as a contradiction
(:func:`~split_builders.options.check_conflicts`); a floating-point tie in the diagnostics counted as a tie; a card
with CRLF line endings read; a PVI ``--model`` folder that holds no model said in one line.

``CASES``: each misbehaved on the code before this change (a build that ran and exited 0 or 2 after writing, a
traceback, an answer that was wrong); every refusal is one line, exit 2, nothing written and the user's files as
they were. ``CONTROLS``: what is good input still works. Small: the session's ``small_release`` (400 SNLI rows),
the reference's SNLI rows with ``--limit``, CURRICULUM's ``verbnet``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from conftest import refused_in_one_line, tree_state
from split_builders.cli import main


@pytest.fixture()
def env(small_release, shared, tmp_path, monkeypatch):
    """The release, the reference's SNLI rows and scores, a working folder of the test's own, and a likelihood
    recipe in ``tmp_path/releases/`` (``recipe(against=...)`` writes one with an ``against:`` block)."""
    snli = shared / "reference" / "likelihood" / "inputs" / "snli"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (tmp_path / "releases").mkdir()
    (tmp_path / "notes.txt").write_text("not a table\n")
    (tmp_path / "dev.csv").write_text("premise,hypothesis,gold_label\na,b,neutral\n")

    def recipe(against: str = "", name: str = "snli-tiny") -> Path:
        path = tmp_path / "releases" / f"{name}.yaml"
        path.write_text('repo: "{org}/snli-tiny"\nmethod: likelihood\nseed: 42\nlicense: cc-by-sa-4.0\n'
                        "source: {local: [snli.csv]}\ncitation: {method: '@misc{m}', source: '@misc{s}'}\n"
                        "options: {prompt_field: premise, query_field: hypothesis, label_field: gold_label, "
                        "validation_size: 40, test_size: 40, length_buckets: 4}\n" + against, encoding="utf-8")
        return path

    def release_args(path: Path, *extra) -> list:
        return ["release", str(path), "--source", str(snli / "all_examples.csv"), "--scores",
                str(snli / "all_examples__False_loglikelihoods.npy"), "--limit", "400", "--out",
                str(tmp_path / "built"), "--no-progress", "--no-load-check", *extra]

    return SimpleNamespace(release=small_release, snli=snli, tmp=tmp_path, work=work, recipe=recipe,
                           release_args=release_args, out=tmp_path / "built", shared=shared)


# -- a recipe's `against:` entry, checked before the build (was: exit 2 after it, a release without the section) --

AGAINST = {  # entry -> what the one line says
    "missing.jsonl": "does not exist",
    "../nowhere/dev.jsonl": "does not exist",
    "bad repo id": "is not a Hub id ORG/NAME",
    "notes.txt": "is not a CSV, TSV, JSONL, JSON or Parquet file",
    "{dataset: dev.csv, revision: main}": "which has no revisions",
}


@pytest.mark.parametrize("entry", list(AGAINST))
def test_a_bad_against_entry_is_refused_before_the_build(entry, env, capsys):
    line = refused_in_one_line(env.release_args(env.recipe(f"against:\n  - {entry}\n")), capsys, env.tmp,
                               out=env.out)
    assert "against entry 1" in line and AGAINST[entry] in line


# -- the cases: each misbehaved before; each is one line now, or the right answer --------------------------------

def push_to_a_repo_id_with_spaces(env, capsys):
    line = refused_in_one_line(["push", str(env.release), "bad repo id", "--version", "1.0.0", "--dry-run",
                                "--license", "mit"], capsys, env.release)
    assert "'bad repo id' is not a Hub id ORG/NAME" in line


def push_with_a_license_that_is_not_one(env, capsys):
    line = refused_in_one_line(["push", str(env.release), "org/name", "--version", "1.0.0", "--dry-run",
                                "--license", "not-a-license"], capsys, env.release)
    assert "--license 'not-a-license' is not a Hub license id" in line


def push_dry_run_to_a_relative_local_path(env, capsys):
    line = refused_in_one_line(["push", str(env.release), "./published", "--version", "1.0.0", "--dry-run",
                                "--license", "mit"], capsys, env.release, out=env.work / "published")
    assert "push needs a Hub id ORG/NAME" in line and "is a local path" in line


def push_to_an_absolute_local_path(env, capsys, monkeypatch):
    """With a token, the code before sent the path to the Hub client: a traceback (HFValidationError)."""
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    line = refused_in_one_line(["push", str(env.release), str(env.tmp / "published"), "--version", "1.0.0",
                                "--license", "mit"], capsys, env.release, out=env.tmp / "published")
    assert "push needs a Hub id ORG/NAME" in line and "is a local path" in line


def push_to_a_folder_here_named_like_a_repo(env, capsys):
    (env.work / "mine").mkdir()
    line = refused_in_one_line(["push", str(env.release), "mine", "--version", "1.0.0", "--dry-run", "--license",
                                "mit"], capsys, env.release, env.work)
    assert "'mine' is a local path" in line


def push_a_metric_to_a_local_path(env, capsys):
    metric = Path(__file__).resolve().parents[1] / "metrics" / "pass_rate"
    line = refused_in_one_line(["push", str(metric), "./space", "--version", "1.0.0", "--metric", "--dry-run"],
                               capsys, out=env.work / "space")
    assert "as the Space to publish to" in line


def build_with_an_org_that_is_not_one(env, capsys):
    line = refused_in_one_line(["likelihood", "--source", "snli-sample", "--limit", "300", "--org", "bad org/x",
                                "--out", str(env.out), "--no-progress"], capsys, out=env.out)
    assert "--org 'bad org/x' is not a Hub organisation" in line


def build_with_an_org_and_an_out_name_the_hub_refuses(env, capsys):
    out = env.tmp / "my release"
    line = refused_in_one_line(["likelihood", "--source", "snli-sample", "--limit", "300", "--org", "acme",
                                "--out", str(out), "--no-progress"], capsys, out=out)
    assert "'acme/my release' is not a Hub id" in line


def release_a_recipe_with_an_org_that_is_not_one(env, capsys):
    line = refused_in_one_line(env.release_args(env.recipe(), "--org", "bad org"), capsys, env.tmp, out=env.out)
    assert "--org 'bad org' is not a Hub organisation" in line


def no_inoculation_with_inoculation_sizes(env, capsys):
    out = env.tmp / "curriculum"
    line = refused_in_one_line(["curriculum", "--source", str(env.shared / "data" / "curriculum"), "--phenomena",
                                "verbnet", "--no-inoculation", "--inoculation-sizes", "10", "--out", str(out),
                                "--no-progress"], capsys, out=out)
    assert "--no-inoculation and --inoculation-sizes contradict each other" in line
    assert "their sizes would be ignored" in line


def diagnostics_of_rows_all_alike_are_ties(env, capsys):
    """600 identical rows, one score: every statistic of every config equals every random split's. A split's mean
    summed alone and a block of random splits' summed together differ in their last bits: the card said
    "higher than in any of 10 random splits, whose 95th percentile is 2.31" of a value of 2.31."""
    rows = pd.DataFrame({"premise": ["A man is playing a guitar on stage."] * 600,
                         "hypothesis": ["A person plays some music at night."] * 600,
                         "gold_label": ["entailment", "neutral", "contradiction"] * 200})
    rows.to_csv(env.tmp / "alike.csv", index=False)
    np.save(env.tmp / "alike.npy", np.full(600, -0.1))
    out = env.tmp / "alike"
    assert main(["likelihood", "--source", str(env.tmp / "alike.csv"), "--prompt-field", "premise", "--query-field",
                 "hypothesis", "--label-field", "gold_label", "--scores", str(env.tmp / "alike.npy"),
                 "--validation-size", "60", "--test-size", "90", "--null-splits", "10", "--out", str(out),
                 "--no-progress"]) == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "than in any of" not in card
    assert card.count("every statistic lies within the 5th-95th percentiles of 10 random splits") == 4
    capsys.readouterr()
    assert main(["diagnose", str(out), "--null-splits", "10", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    percentiles = {e["percentile"] for splits in report["configs"].values() for stats in splits.values()
                   for e in stats.values()}
    assert percentiles == {50.0}  # every value ties with every random split's: ties count half


def a_tie_within_floating_point_error_is_a_tie(env, capsys):
    from split_builders.evidence.diagnostics import _entry
    from split_builders.evidence.diagnostics_card import summary_sentence

    value = sum([0.1] * 10) / 10  # 0.09999999999999999: the same mean, summed in another order
    entry = _entry(value, value, np.full(10, 0.1))
    assert entry["percentile"] == 50.0
    assert "every statistic lies within" in summary_sentence("c", {"test": {"score": entry}}, 10)
    below = _entry(0.1, 0.1, np.full(10, 0.1 + 1e-6))  # a real difference stays one
    assert below["percentile"] == 0.0


def a_card_with_crlf_line_endings(env, capsys):
    copy = env.tmp / "crlf"
    shutil.copytree(env.release, copy)
    readme = copy / "README.md"
    readme.write_bytes(readme.read_bytes().replace(b"\n", b"\r\n"))
    before = tree_state(copy)
    said = {}
    for argv in (["verify", str(copy)], ["show", str(copy)],
                 ["push", str(copy), "org/name", "--version", "1.0.0", "--dry-run", "--license", "mit"]):
        capsys.readouterr()
        assert main(argv) == 0, capsys.readouterr().err
        said[argv[0]] = capsys.readouterr().out
    assert said["verify"].rstrip().endswith("-> OK") and "ll_split" in said["show"]
    assert "is valid: 5 configs" in said["push"]
    assert tree_state(copy) == before and readme.read_bytes().startswith(b"---\r\n")  # the user's file, unchanged


def pvi_model_folder_without_a_model(env, capsys):
    """A folder that holds no model: transformers' message, five lines about tokenizer backends."""
    empty = env.tmp / "empty-model"
    empty.mkdir()
    line = refused_in_one_line(["pvi", "--source", "snli-sample", "--limit", "300", "--family", "transformers",
                                "--model", str(empty), "--out", str(env.out), "--no-progress"], capsys, out=env.out)
    assert "not a folder with a transformers model (a folder without config.json)" in line


CASES = {
    "push to 'bad repo id'": push_to_a_repo_id_with_spaces,
    "push --license not-a-license": push_with_a_license_that_is_not_one,
    "push --dry-run to ./path": push_dry_run_to_a_relative_local_path,
    "push to /abs/path (a traceback)": push_to_an_absolute_local_path,
    "push to a folder here": push_to_a_folder_here_named_like_a_repo,
    "push --metric to ./path": push_a_metric_to_a_local_path,
    "--org 'bad org/x'": build_with_an_org_that_is_not_one,
    "--org with an --out name the Hub refuses": build_with_an_org_and_an_out_name_the_hub_refuses,
    "release --org 'bad org'": release_a_recipe_with_an_org_that_is_not_one,
    "--no-inoculation --inoculation-sizes 10": no_inoculation_with_inoculation_sizes,
    "diagnostics of identical rows": diagnostics_of_rows_all_alike_are_ties,
    "a floating-point tie": a_tie_within_floating_point_error_is_a_tie,
    "a README with CRLF line endings": a_card_with_crlf_line_endings,
    "pvi --model a folder without a model": pvi_model_folder_without_a_model,
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_or_the_right_answer(case, env, capsys, request):
    kwargs = {"monkeypatch": request.getfixturevalue("monkeypatch")} if case.startswith("push to /abs") else {}
    CASES[case](env, capsys, **kwargs)


# -- positive controls ----------------------------------------------------------------------------------------------

def test_good_input_still_passes(env, capsys):
    from split_builders.api import get_method
    from split_builders.options import check_repo_id
    from split_builders.publishing.publish import check_destination
    from split_builders.release.recipe import load_recipe

    recipe = load_recipe(env.recipe(f"against:\n  - dev.csv\n  - {env.tmp / 'dev.csv'}\n  - org/other-dataset@v1.0\n"
                                    "  - {dataset: org/other, revision: main, splits: [test]}\n"))
    paths = [entry["path"] for entry in recipe.against_datasets()]
    assert paths == [str(env.tmp / "dev.csv"), str(env.tmp / "dev.csv"), "org/other-dataset@v1.0", "org/other"]
    assert recipe.repo_id("acme") == "acme/snli-tiny" and recipe.known_repo_id(None) is None
    for good in ("org/name", "Org_1/snli-likelihood.v2", "a/b"):
        assert check_destination(good) == good == check_repo_id(good)
    options = get_method("curriculum").Options(source="x", out=str(env.tmp / "c"), inoculation=False)
    assert options.inoculation_sizes == (10, 50, 100, 500, 1000)  # the default, not given: no contradiction
    assert get_method("likelihood").Options(source="x", out=str(env.tmp / "acme-rel"), org="acme").org == "acme"
    assert main(["push", str(env.release), "org/name", "--version", "1.0.0", "--dry-run", "--license", "MIT"]) == 0
