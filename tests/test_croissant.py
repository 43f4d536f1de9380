"""``croissant.json`` in every release (issue 43, :mod:`split_builders.publishing.croissant`): mlcroissant validates
every registered family's file and reads the same rows, split by split and in the same order, as ``datasets``;
``verify`` checks it against the files, ``diff`` reports its changes, ``push`` stages it with the published
version, and the file is deterministic and names no local path."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import yaml

from conftest import FAMILIES, LazyModule
from split_builders.cli import main
from split_builders.publishing.croissant import FILE, HUB, SPLIT_TYPES, croissant_changes, text
from split_builders.publishing.diff import diff, format_diff
from split_builders.release.folder import Released
from split_builders.publishing.verify import verify

pytestmark = LazyModule.skip_without("mlcroissant", reason="mlcroissant is a test extra (pip install resplit[test])")
mlc = LazyModule("mlcroissant")  # imported when a test runs (it brings its own torch and beam modules)

ROWS = 5_000  # rows mlcroissant reads at once: a config up to this size is read whole, every split compared
LARGE_READS = 3  # in a family whose configs are larger (a CheckList suite: 86,420 rows each), this many splits of
# at most ROWS rows are read alone (mlcroissant's split filter), one train, one validation and one test where found
WHOLE = 3  # configs read whole per family (the first ones, the baseline among them where small): each read is
# seconds in mlcroissant, and every config's record set is checked against the files above it
RECOMMENDED = "is recommended, but does not exist"  # datePublished, version and citeAs where a card has none


def _copy(release, tmp_path):
    folder = tmp_path / "release"
    shutil.copytree(release, folder)
    return folder


def _dataset(path):
    """mlcroissant's Dataset of ``path`` (a validation error is raised); its warnings are only recommendations."""
    dataset = mlc.Dataset(jsonld=str(path))
    warnings = dataset.metadata.ctx.issues.warnings
    assert all(RECOMMENDED in w for w in warnings), warnings
    return dataset


def _plan(released: Released) -> tuple[list, list]:
    """The configs read whole, and the ``(config, split)`` read alone (see ROWS and LARGE_READS)."""
    rows = {c: (released.record["configs"][c]["rows"]) for c in released.configs}
    small = [c for c in released.configs if sum(rows[c].values()) <= ROWS]
    whole = small[:WHOLE]
    alone = {}
    for config in released.configs:
        for split, n in rows[config].items():
            if config not in small and n <= ROWS:
                alone.setdefault(split, (config, split))
    return whole, list(alone.values())[:LARGE_READS]


@pytest.fixture(scope="module")
def datasets_cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("croissant-datasets-cache"))


@pytest.mark.parametrize("family", FAMILIES)
def test_mlcroissant_validates_and_reads_what_datasets_reads(family, family_releases, datasets_cache):
    import datasets

    release = family_releases[family]
    released = Released(release)
    document = json.loads((release / FILE).read_text(encoding="utf-8"))
    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert document["prov:wasGeneratedBy"]["prov:wasAssociatedWith"]["name"] == "resplit"
    assert document["rai:dataLimitations"] and document["rai:dataManipulationProtocol"]
    listed = {d["contentUrl"]: d["sha256"] for d in document["distribution"] if d["@type"] == "cr:FileObject"}
    assert listed == {released.files[c][s]: released.recorded_sha256(c, s) for c in released.configs
                      for s in released.files[c]}
    sets = {r["@id"]: r for r in document["recordSet"]}
    splits = next(r for r in sets.values() if r.get("dataType") == "cr:Split")
    assert {tuple(d.values()) for d in splits["data"]} <= {(s, t) for s, t in SPLIT_TYPES.items()}
    assert set(released.configs) <= set(sets)

    def expected(config, split):
        with _quiet():
            return datasets.load_dataset(str(release), config, split=split, cache_dir=datasets_cache)["source_id"]

    whole, alone = _plan(released)
    assert whole or alone, f"{family}: nothing small enough to read"
    dataset = _dataset(release / FILE)
    for config in whole:
        records = list(dataset.records(record_set=config))
        for split in released.files[config]:
            ids = [int(r[f"{config}/source_id"]) for r in records if r[f"{config}/split"] == split.encode()]
            assert ids == expected(config, split), (family, config, split)
        assert len(records) == sum(len(expected(config, s)) for s in released.files[config])
    for config, split in alone:  # a fresh Dataset each: mlcroissant's filter narrows its file set in place
        records = _dataset(release / FILE).records(record_set=config, filters={f"{config}/split": split})
        assert [int(r[f"{config}/source_id"]) for r in records] == expected(config, split), (family, config, split)


class _quiet:
    """datasets' logs and progress bars off for a load (the test reads what it returns)."""

    def __enter__(self):
        import datasets

        self.bars = datasets.utils.are_progress_bars_disabled()
        datasets.utils.disable_progress_bars()
        logging.getLogger("datasets").setLevel(logging.ERROR)

    def __exit__(self, *exc):
        import datasets

        if not self.bars:
            datasets.utils.enable_progress_bars()


@pytest.mark.parametrize("family", FAMILIES)
def test_croissant_is_deterministic_and_names_no_local_path(family, family_releases, tmp_path):
    release = family_releases[family]
    built = (release / FILE).read_bytes()
    assert text(release).encode("utf-8") == built  # the build's staged folder and the release give the same bytes
    folder = _copy(release, tmp_path)
    assert main(["export", "croissant", str(folder)]) == 0
    first = (folder / FILE).read_bytes()
    assert main(["export", "croissant", str(folder)]) == 0
    assert (folder / FILE).read_bytes() == first == built
    content = built.decode("utf-8")
    for place in {str(release), str(release.resolve()), str(tmp_path), str(release.parent)}:
        assert place not in content

    def strings(value):
        if isinstance(value, dict):
            yield from (s for v in value.values() for s in strings(v))
        elif isinstance(value, list):
            yield from (s for v in value for s in strings(v))
        elif isinstance(value, str):
            yield value

    assert not [s for s in strings(json.loads(content)) if s.startswith(("/", "~"))]


def test_an_absolute_location_an_older_card_records_is_named_by_its_file(family_releases, tmp_path):
    folder = _copy(family_releases["likelihood"], tmp_path)
    readme = folder / "README.md"
    card = readme.read_text(encoding="utf-8")
    assert "\n    location: all_examples.csv\n" in card
    readme.write_text(card.replace("\n    location: all_examples.csv\n",
                                   "\n    location: /home/someone/data/all_examples.csv\n"), encoding="utf-8")
    content = text(folder)
    assert "/home/someone" not in content and '"prov:atLocation": "all_examples.csv"' in content


def test_verify_checks_croissant_against_the_files(family_releases, tmp_path):
    folder = _copy(family_releases["likelihood"], tmp_path)
    report = verify(str(folder), load=False)
    assert report.ok and any(f.config == FILE and f.status == "identical" for f in report.findings)

    document = json.loads((folder / FILE).read_text(encoding="utf-8"))
    tampered = next(d for d in document["distribution"] if d["@type"] == "cr:FileObject")
    tampered["sha256"] = "0" * 64
    document["recordSet"] = [r for r in document["recordSet"] if r["@id"] != "random"]
    (folder / FILE).write_text(json.dumps(document), encoding="utf-8")
    report = verify(str(folder), load=False)
    differs = [f for f in report.findings if f.status == "differs"]
    assert not report.ok and len(differs) == 3, [f.line() for f in differs]
    assert any(f.config == FILE and "changed since resplit wrote it" in f.detail and "export croissant" in f.detail
               for f in differs)  # its fingerprint no longer holds
    assert any(tampered["contentUrl"] in f.detail and "sha256 000000000000" in f.detail for f in differs)
    assert any(f.config == "random" and "no record set" in f.detail for f in differs)

    (folder / FILE).unlink()  # the card's sections say the export wrote one: missing is a failure
    report = verify(str(folder), load=False)
    assert not report.ok and [f.detail for f in report.findings if f.status == "differs"] == [
        f"the card says the release holds it and it is missing; `resplit export croissant {folder}` writes it again"]
    readme = folder / "README.md"  # a release built before resplit wrote croissant.json (and the inspect-ai section)
    text = readme.read_text(encoding="utf-8")
    readme.write_text(text.split("<!-- resplit:inspect -->")[0] + text.split("<!-- /resplit:inspect -->")[1],
                      encoding="utf-8")
    report = verify(str(folder), load=False)  # a note, not a failure
    note = [f for f in report.findings if f.config == FILE]
    assert report.ok and [f.status for f in note] == ["not checked"] and "export croissant" in note[0].detail
    assert main(["export", "croissant", str(folder)]) == 0
    assert (folder / FILE).read_bytes() == (family_releases["likelihood"] / FILE).read_bytes()


def test_overwrite_replaces_resplits_croissant_and_refuses_a_users(family_releases, tmp_path, capsys):
    from split_builders.errors import OutputExistsError
    from split_builders.publishing.readers import written_files
    from split_builders.release.places import check_replaceable

    folder = _copy(family_releases["likelihood"], tmp_path)
    path = folder / FILE
    check_replaceable(folder, harness_files=written_files)  # resplit's, as it wrote it
    path.write_text(path.read_text(encoding="utf-8").replace("Likelihood", "Edited"), encoding="utf-8")
    with pytest.raises(OutputExistsError, match="changed since resplit wrote it"):  # edited: the user's now
        check_replaceable(folder, harness_files=written_files)
    path.write_text(json.dumps({"@type": "sc:Dataset", "name": "mine"}), encoding="utf-8")
    with pytest.raises(OutputExistsError, match=FILE):
        check_replaceable(folder, harness_files=written_files)
    assert main(["export", "croissant", str(folder)]) != 0
    assert "not a croissant.json resplit wrote" in capsys.readouterr().err
    assert json.loads(path.read_text(encoding="utf-8"))["name"] == "mine"  # nothing was changed


def test_diff_reports_croissant_changes(family_releases, tmp_path):
    release = family_releases["likelihood"]
    before = json.loads((release / FILE).read_text(encoding="utf-8"))
    after = json.loads(json.dumps(before))
    after["recordSet"] = [r for r in after["recordSet"] if r["@id"] != "length"]
    ll_split = next(r for r in after["recordSet"] if r["@id"] == "ll_split")
    ll_split["field"] = [f for f in ll_split["field"] if f["name"] != "score"]
    ll_split["prov:wasGeneratedBy"]["additionalProperty"][0]["value"] = 99
    after["prov:wasDerivedFrom"]["name"] = "other.csv"
    lines = croissant_changes(before, after)
    assert lines[0] == "record sets removed: length"
    assert any(line.startswith("record set ll_split: fields removed score; generated by:") for line in lines)
    assert any(line.startswith('derived from: name "all_examples.csv" -> "other.csv"') for line in lines)
    assert croissant_changes(before, before) == []

    other = _copy(release, tmp_path)
    (other / FILE).unlink()
    result = diff(str(release), str(other))
    assert result["croissant"] == [f"{FILE} removed"]
    assert f"  {FILE} removed" in format_diff(result)


def test_push_stages_croissant_with_the_published_url_and_version(family_releases, tmp_path):
    from split_builders.publishing.publish import stage_release

    staged = stage_release(family_releases["likelihood"], tmp_path / "staged", "1.2.0", "## v1.2.0\n", "",
                           repo_id="org/snli-likelihood", license="mit")
    document = json.loads((staged / FILE).read_text(encoding="utf-8"))
    assert document["url"] == HUB + "org/snli-likelihood" and document["version"] == "1.2.0"
    assert document["license"] == "mit"
    metadata = yaml.safe_load((staged / "README.md").read_text(encoding="utf-8").split("---\n", 2)[1])
    assert metadata["resplit"]["release_version"] == "1.2.0"
    warnings = mlc.Dataset(jsonld=str(staged / FILE)).metadata.ctx.issues.warnings
    assert not [w for w in warnings if "version" in w]
    assert verify(str(staged), load=False).ok
