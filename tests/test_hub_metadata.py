"""The Hub metadata of every card, no local path in a release, the load snippet, and push's license check.

Every registered family's shared example release (``family_releases``, built through the CLI): no file of a
release may hold pytest's temporary folder, the source's folder, the home folder or the checkout's path. The cards' YAML must round-trip
through ``huggingface_hub``'s ``DatasetCardData`` and carry the keys the Hub's search and filters read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import datasets
import pytest
import yaml

from split_builders.api import SourceInfo
from split_builders.cli import main
from split_builders.release import card as cards
from split_builders.publishing import publish
from split_builders.release.provenance import locate_source

REPO = Path(__file__).resolve().parents[1]
# What each built-in family's example release is, in the Hub's vocabulary (huggingface.js tasks:
# text-classification with its subtasks; text-generation with its subtask text2text-generation). Every registered
# family, these and any other, is checked against its declared task by the metadata check of split_builders.testing.
EXPECTED_TASKS = {
    "likelihood": (["text-classification"], ["natural-language-inference", "multi-input-text-classification"]),
    "pvi": (["text-classification"], ["natural-language-inference", "multi-input-text-classification"]),
    "curriculum": (["text-classification"], ["natural-language-inference", "multi-input-text-classification"]),
    "tmcd": (["text-generation"], []),  # text2text-generation is a task category, not a task id
    "behavioural": (["text-classification"], ["sentiment-classification"]),
}
# License and language of the known sources (the papers' and datasets' own statements); None: not known.
EXPECTED_LICENSE = {"likelihood": "unknown", "pvi": "unknown", "tmcd": "unknown", "curriculum": "mit",
                    "behavioural": "mit"}
EXPECTED_LANGUAGE = {"likelihood": None, "pvi": None, "tmcd": ["en"], "curriculum": ["en"], "behavioural": ["en"]}


def _front(folder: Path) -> tuple[dict, str]:
    _, head, body = (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)
    return yaml.safe_load(head), body


@pytest.fixture(scope="module")
def releases(family_releases) -> dict:
    """One release per family: the session's shared ones, built through the CLI from each method's example
    arguments (sources under ``../shared``, scratch files under pytest's temporary folder)."""
    return family_releases


def _source_argument(family_args, family) -> Path:
    args = family_args[family]
    return Path(args[args.index("--source") + 1])


# Every registered method's card metadata round-trips through DatasetCardData, names its task's category, and no file
# holds a local path; the source is named by its file name and sha256: the ``metadata`` check of
# split_builders.testing (tests/test_registered_methods.py).


@pytest.mark.parametrize("family", sorted(EXPECTED_TASKS))
def test_the_built_in_families_cards_name_their_task_license_and_language(family, releases):
    metadata, _ = _front(releases[family])
    categories, ids = EXPECTED_TASKS[family]
    assert metadata["task_categories"] == categories and metadata["task_ids"] == ids
    assert metadata["license"] == EXPECTED_LICENSE[family]
    assert metadata.get("language") == EXPECTED_LANGUAGE[family]


def test_size_categories_are_the_hubs_buckets():
    assert [cards.size_category(n) for n in (0, 999, 1_000, 2_400, 99_999, 100_000, 10**6, 10**13)] == [
        "n<1K", "n<1K", "1K<n<10K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "n>1T"]


def test_a_source_name_keeps_no_local_path():
    assert SourceInfo(name="/home/someone/data/train.csv", rows=1, content_sha256="x").name == "train.csv"
    assert SourceInfo(name="~/x/y.tsv", rows=1, content_sha256="x").name == "y.tsv"
    assert SourceInfo(name="zips: /tmp/a/curriculum/", rows=1, content_sha256="x").name == "zips: curriculum"
    for kept in ("nyu-mll/glue", "https://example.org/a/b.csv", "snli-sample (first 2,000 lines of x.jsonl)"):
        assert SourceInfo(name=kept, rows=1, content_sha256="x").name == kept


@pytest.mark.parametrize("family", ["likelihood", "curriculum"])
def test_the_load_section_shows_the_label_names_in_class_order(family, releases, hf_cache):
    metadata, body = _front(releases[family])
    config = metadata["configs"][0]["config_name"]
    loaded = datasets.load_dataset(str(releases[family]), config, split="train", cache_dir=hf_cache)
    names = loaded.features["label"].names
    listed = ", ".join(f"{i} `{name}`" for i, name in enumerate(names))
    section = body.split("## How to load it", 1)[1].split("## Configs", 1)[0]
    assert f"`label` is a `ClassLabel`; its classes in order: {listed}" in section
    assert f'load_dataset("{cards.REPO_PLACEHOLDER}", "{config}")' in section  # built without --org: a placeholder


@pytest.fixture(scope="module")
def geoquery(family_args) -> Path:
    """The tmcd example's source (GeoQuery in NQG's format)."""
    return _source_argument(family_args, "tmcd")


def _tmcd(source, out, *extra) -> Path:
    assert main(["tmcd", "--source", str(source), "--configs", "length", "--train-size", "440", "--out", str(out),
                 "--no-progress", "--null-splits", "0", *extra]) == 0
    return out


def test_license_language_and_org_flags_change_only_the_card(geoquery, tmp_path):
    plain = _tmcd(geoquery, tmp_path / "plain")
    flagged = _tmcd(geoquery, tmp_path / "geo-splits", "--license", "gpl-2.0", "--language", "en,de", "--org", "myorg")
    metadata, body = _front(flagged)
    assert metadata["license"] == "gpl-2.0" and metadata["language"] == ["en", "de"]
    assert 'load_dataset("myorg/geo-splits", "length")' in body and cards.REPO_PLACEHOLDER not in body
    assert _front(plain)[0]["license"] == "unknown"
    data = lambda folder: {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.parquet")}  # noqa: E731
    assert data(plain) and data(plain) == data(flagged)  # the data files are byte-identical


def test_a_recipe_gives_the_title_language_license_and_repository(geoquery, tmp_path):
    from split_builders.builder import build
    from split_builders.release.recipe import load_recipe

    (tmp_path / "releases").mkdir()
    path = tmp_path / "releases" / "geo.yaml"
    path.write_text(yaml.safe_dump({
        "repo": "{org}/geo", "method": "tmcd", "seed": 1, "pretty_name": "GeoQuery, held-out lengths",
        "language": "en", "license": "gpl-2.0", "options": {"train_size": 440, "configs": ["length"]},
        "source": {"local": [str(geoquery)]}, "citation": {"method": "@misc{m}", "source": "@misc{s}"}}))
    recipe = load_recipe(path)
    assert recipe.card_overrides()["repo_id"] is None  # no organisation known: the card keeps the placeholder
    overrides = recipe.card_overrides("lab")
    assert overrides["repo_id"] == "lab/geo" and overrides["language"] == ("en",)
    options = recipe.method_options(source=geoquery, out=tmp_path / "out")
    out = build("tmcd", options, progress=False, **overrides).out
    metadata, body = _front(out)
    assert metadata["pretty_name"] == "GeoQuery, held-out lengths" and body.lstrip().startswith("# GeoQuery, held-out lengths\n")
    assert metadata["license"] == "gpl-2.0" and metadata["language"] == ["en"]
    assert 'load_dataset("lab/geo", "length")' in body


@pytest.mark.parametrize("key, value, message", [
    ("language", 3, "language must be"), ("language", [], "language must be"),
])
def test_a_recipe_with_a_bad_language_is_refused(tmp_path, key, value, message):
    from split_builders.errors import InvalidParameterError
    from split_builders.release.recipe import load_recipe

    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"repo": "o/r", "method": "tmcd", "source": {"local": ["x"]}, key: value,
                                    "citation": {"method": "m", "source": "s"}}))
    with pytest.raises(InvalidParameterError, match=message):
        load_recipe(path)


def test_a_recipe_option_that_is_top_level_is_refused(tmp_path):
    from split_builders.errors import InvalidParameterError
    from split_builders.release.recipe import load_recipe

    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"repo": "o/r", "method": "tmcd", "source": {"local": ["x"]},
                                    "options": {"license": "mit"}, "citation": {"method": "m", "source": "s"}}))
    with pytest.raises(InvalidParameterError, match="options.license is set by the recipe itself .top-level license"):
        load_recipe(path)


def test_push_refuses_an_unknown_license_until_one_is_given(releases, capsys):
    folder = releases["likelihood"]
    assert _front(folder)[0]["license"] == "unknown"
    with pytest.raises(publish.InvalidReleaseError, match="license is unknown; give it with --license"):
        publish.push_release(folder, "org/name", "1.0.0", dry_run=True, log=lambda line: None)
    assert main(["push", str(folder), "org/name", "--version", "1.0.0", "--dry-run"]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "--license" in error
    assert main(["push", str(folder), "org/name", "--version", "1.0.0", "--dry-run", "--license", "cc-by-4.0"]) == 0
    with pytest.raises(publish.InvalidReleaseError, match="not a license"):
        publish.push_release(folder, "org/name", "1.0.0", dry_run=True, license="unknown", log=lambda line: None)


def test_the_pushed_card_names_the_repository_and_the_given_license(releases, tmp_path):
    folder = releases["likelihood"]
    staged = publish.stage_release(folder, tmp_path / "staged", "1.0.0", "## v1.0.0\n", "", repo_id="lab/snli-ll",
                                   license="cc-by-sa-4.0")
    metadata, body = _front(staged)
    assert metadata["license"] == "cc-by-sa-4.0" and metadata["resplit"]["release_version"] == "1.0.0"
    assert 'load_dataset("lab/snli-ll", "ll_split")' in body and cards.REPO_PLACEHOLDER not in body
    for path in folder.rglob("*.parquet"):  # only the card changes
        assert (staged / path.relative_to(folder)).read_bytes() == path.read_bytes()
    assert _front(folder)[0]["license"] == "unknown"  # the local folder is not changed
    # The harness tasks of the pushed copy load the repository; the local folder's load the folder itself.
    task = yaml.safe_load((staged / "lm_eval" / "ll_split.yaml").read_text(encoding="utf-8"))
    assert task["dataset_path"] == "lab/snli-ll" and task["dataset_name"] == "ll_split"
    assert metadata["resplit"]["repo_id"] == "lab/snli-ll"
    assert "dataset_path" not in (folder / "lm_eval" / "ll_split.yaml").read_text(encoding="utf-8")


def test_verify_finds_the_source_where_the_build_read_it_beside_the_release_or_as_given(releases, geoquery, tmp_path,
                                                                                         monkeypatch):
    record = _front(releases["tmcd"])[0]["resplit"]["source"]
    # where this machine's build read it
    assert locate_source(record, releases["tmcd"]) == str(geoquery.resolve())
    assert locate_source(record, releases["tmcd"], "elsewhere.tsv") == "elsewhere.tsv"  # --source wins
    # another machine (an empty cache): a file of the recorded name beside the release
    monkeypatch.setenv("RESPLIT_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "published" / "geoquery_nqg.tsv"
    copy.parent.mkdir()
    shutil.copyfile(geoquery, copy)
    assert locate_source(record, tmp_path / "published" / "tmcd") == str(copy)
    assert locate_source(record, tmp_path / "nowhere") == "geoquery_nqg.tsv"  # else the name, for --source's hint
    assert locate_source({"location": "/old/card/path.tsv"}, tmp_path) == "/old/card/path.tsv"  # older releases
    assert locate_source({"location": "org/name"}, tmp_path) == "org/name"  # a Hub id as recorded


def test_verify_rescore_rebuilds_a_release_from_its_recorded_source(releases, capsys):
    capsys.readouterr()
    assert main(["verify", str(releases["tmcd"]), "--rescore", "--no-load-check", "--all"]) == 0
    printed = capsys.readouterr().out
    assert "level 3  source " in printed and "not checked" not in printed
