"""Every dataset recipe in ``releases/`` whose source is here builds through ``resplit release`` and
passes ``verify`` levels 1 and 2 with every config checked; a row moved in any of them is caught.

Trial builds keep the tests short: ``--limit`` and ``--set`` shrink the big recipes (the card records
both), and the likelihood recipes take the reference fixtures' scores (``--scores``) in the source's own
format, since this machine has neither GPT-2 medium nor a GPU."""

import csv
import gzip
import json
import shutil

import pytest
import yaml

from split_builders.cli import main
from split_builders.release.recipe import list_recipes

LIKELIHOOD_FIXTURES = "reference/likelihood/inputs"
RECIPES = ("geoquery-compositional", "spider-compositional", "scan-compositional", "cogs-compositional",
           "curriculum", "checklist-sentiment", "checklist-qqp", "checklist-squad", "snli-likelihood",
           "boolq-likelihood", "spider-likelihood")
# Two files share the recipes, so that two test processes (make test) run them side by side: the compositional
# recipes (the longest builds and checks) in test_release_recipes_compositional.py, the others here.
COMPOSITIONAL = ("geoquery-compositional", "spider-compositional", "scan-compositional", "cogs-compositional")
RECIPES_HERE = tuple(name for name in RECIPES if name not in COMPOSITIONAL)


def _snli_jsonl(shared, path):
    """The SNLI fixture in SNLI's own jsonl fields (sentence1, sentence2, gold_label)."""
    with open(shared / LIKELIHOOD_FIXTURES / "snli" / "all_examples.csv", newline="") as handle:
        rows = [{"sentence1": r["premise"], "sentence2": r["hypothesis"], "gold_label": r["gold_label"]}
                for r in csv.DictReader(handle)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _boolq_jsonl(shared, path):
    """The BoolQ fixture in BoolQ's own jsonl fields (question, passage, answer as a boolean)."""
    with open(shared / LIKELIHOOD_FIXTURES / "boolq" / "all_examples.csv", newline="") as handle:
        rows = [{"question": r["question"], "passage": r["passage"], "answer": r["label"] == "True"}
                for r in csv.DictReader(handle)]
    with gzip.open(path, "wt") as handle:
        handle.write("".join(json.dumps(row) + "\n" for row in rows))
    return path


CHECKLIST_TRIAL = ("--set", "functionalities=[0,1,2]", "--set", "capabilities=[NER,Negation]")


def _trial_arguments(shared, work):
    """Per recipe, the ``resplit release`` arguments of a quick build from what ``../shared`` holds."""
    fixtures = shared / LIKELIHOOD_FIXTURES
    return {
        # the recipe as written, from its local copy (every row, every config), with a short search: one restart of
        # 2,000 swaps instead of four of 50,000 (built, verified and re-derived after a moved row, the recipe's search
        # took 65 s of the file's 100; tests/test_search_restarts.py tests the restarts, and the published recipe's
        # own bytes are benchmarks/release_hashes.py's)
        "geoquery-compositional": ["--set", "restarts=1", "--set", "iterations=2000"],
        # 1,000 rows: their SQL parsed twice (built, re-derived by verify), 2,000 took 3 s more a build
        "spider-compositional": ["--limit", "1000", "--set", "train_size=500", "--set", "iterations=100"],
        "scan-compositional": ["--limit", "2000", "--set", "iterations=100"],
        "cogs-compositional": ["--limit", "2000", "--set", "train_size=1000", "--set", "iterations=100"],
        "curriculum": ["--limit", "200", "--set", "phenomena=[verbnet,boolean]", "--set", "folds=2"],
        # 3 of the func_<i> and 2 of the class_<capability> configs (all of them: 50-70 configs, whose cards and
        # task files took 9-13 s a build), every kind of config still built, verified and moved in
        "checklist-sentiment": ["--limit", "10", *CHECKLIST_TRIAL],
        "checklist-qqp": ["--limit", "10", *CHECKLIST_TRIAL],
        "checklist-squad": ["--limit", "10", *CHECKLIST_TRIAL],
        "snli-likelihood": ["--source", str(_snli_jsonl(shared, work / "snli.jsonl")), "--scores",
                            str(fixtures / "snli" / "all_examples__False_loglikelihoods.npy"),
                            "--set", "validation_size=200", "--set", "test_size=200"],
        "boolq-likelihood": ["--source", str(_boolq_jsonl(shared, work / "boolq.jsonl.gz")), "--scores",
                             str(fixtures / "boolq" / "all_examples__False_loglikelihoods.npy"),
                             "--set", "validation_size=150", "--set", "test_size=150"],
        "spider-likelihood": ["--source", str(fixtures / "spider" / "all_examples.tsv"), "--scores",
                              str(fixtures / "spider" / "all_examples_loglikelihoods.npy"),
                              "--set", "train_size=400"],
    }


class RecipeBuilds:
    """Per recipe, the trial release that ``resplit release`` built and verified, and its arguments, built when a
    test first asks for it (a file runs only its own recipes' builds)."""

    def __init__(self, shared, tmp_path_factory):
        self.work = tmp_path_factory.mktemp("recipe-inputs")
        self.root = tmp_path_factory.mktemp("recipe-releases")
        self.arguments = _trial_arguments(shared, self.work)
        assert set(self.arguments) == set(RECIPES)
        self.built, self.reports = {}, {}

    def __getitem__(self, name):
        if name not in self.built:
            import split_builders.publishing.verify as verifying

            out, reports, real = self.root / name, [], verifying.verify

            def verify(*args, **kwargs):  # the command's own verify, run as it is: its report kept for the checks
                reports.append(real(*args, **kwargs))
                return reports[-1]

            # the load check is covered method by method in test_registered_methods; here it would triple the time
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(verifying, "verify", verify)
                code = main(["release", name, *self.arguments[name], "--out", str(out), "--no-progress",
                             "--no-load-check"])
            # a failed build is not retried
            self.built[name] = (out, self.arguments[name]) if code == 0 else None
            self.reports[name] = reports
        assert self.built[name] is not None, f"the trial build of {name} failed"
        return self.built[name]

    def report(self, name):
        """What ``verify`` found when ``resplit release`` verified its build (level 1 and 2, without loading)."""
        self[name]
        (report,) = self.reports[name]
        return report


@pytest.fixture(scope="module")
def recipe_builds(shared, tmp_path_factory):
    """Per recipe, the trial release that ``resplit release`` built and verified, and its arguments (built on
    first use: :class:`RecipeBuilds`)."""
    return RecipeBuilds(shared, tmp_path_factory)


def _front_matter(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def test_every_dataset_recipe_has_its_source_here_and_a_trial_build():
    recipes = [r for r in list_recipes() if r.kind != "metric"]
    assert {r.name for r in recipes if r.local_source() is not None} == {r.name for r in recipes} == set(RECIPES)


def check_the_build_verifies_with_every_config_checked(name, recipe_builds):
    folder, _ = recipe_builds[name]
    meta = _front_matter(folder)["resplit"]
    report = recipe_builds.report(name)  # resplit release verified what it built: its report, not a second run
    assert report.target == str(folder) and report.ok, [f.line() for f in report.findings if f.status != "identical"]
    assert not [f for f in report.findings if f.status == "not checked"]
    assert {f.config for f in report.findings if f.level == 2 and f.status == "identical"} == set(meta["configs"])
    level_one = {(f.config, f.split) for f in report.findings if f.level == 1 and f.split}
    assert level_one >= {(c, s) for c, entry in meta["configs"].items() for s in entry["rows"]}


def check_the_card_records_the_recipe_and_the_trial_changes(name, recipe_builds):
    folder, arguments = recipe_builds[name]
    meta = _front_matter(folder)["resplit"]
    recipe = {r.name: r for r in list_recipes()}[name]
    assert meta["method"] == recipe.method and meta["seed"] == recipe.seed
    settings = dict(a.split("=", 1) for flag, a in zip(arguments, arguments[1:]) if flag == "--set")
    for key, value in {**recipe.options, **{k: yaml.safe_load(v) for k, v in settings.items()}}.items():
        if key not in ("scores", "finetune"):  # given scores replace the recipe's fine-tuning
            assert meta["parameters"][key] == value, key


def check_a_row_moved_in_the_first_config_is_named(name, recipe_builds, tmp_path, capsys):
    from test_verify_diff import _move_a_row

    copy = tmp_path / name
    shutil.copytree(recipe_builds[name][0], copy)
    meta = _front_matter(copy)["resplit"]
    config, entry = next(iter(meta["configs"].items()))
    source, target = [s for s in ("test", "validation", "train") if entry["rows"].get(s)][:2]
    moved = _move_a_row(copy, config, source, target)
    assert main(["verify", str(copy), "--no-load-check"]) == 1
    differs = [line for line in capsys.readouterr().out.splitlines() if line.startswith("level ") and "differs" in line]
    assert differs and all(line.startswith(f"level 2  {config}/") for line in differs), differs
    assert any(f"source_id {moved}" in line for line in differs), differs


# -- the recipes of this file (the compositional ones, the longest builds: test_release_recipes_compositional.py) ---

@pytest.mark.parametrize("name", RECIPES_HERE)
def test_the_build_verifies_with_every_config_checked(name, recipe_builds):
    check_the_build_verifies_with_every_config_checked(name, recipe_builds)


@pytest.mark.parametrize("name", RECIPES_HERE)
def test_the_card_records_the_recipe_and_the_trial_changes(name, recipe_builds):
    check_the_card_records_the_recipe_and_the_trial_changes(name, recipe_builds)


@pytest.mark.parametrize("name", RECIPES_HERE)
def test_a_row_moved_in_the_first_config_is_named(name, recipe_builds, tmp_path, capsys):
    check_a_row_moved_in_the_first_config_is_named(name, recipe_builds, tmp_path, capsys)
