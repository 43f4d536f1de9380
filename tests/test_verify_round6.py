"""Bad input and silent answers, round six (issue 56), verify and the exports' part: ``verify`` checks every file a
release carries (the figures its card names, the readers' files its sections declare, ``eval.yaml`` and
``croissant.json`` against what resplit writes, every task reading this release); ``export lm-eval`` writes no tasks
into another release and no Hub revision for a local ``--dataset-path``; ``audit --against`` compares labels given
as class numbers by the release's class names (or says why it cannot) and checks the ids of OTHER as every reader
does; a recipe's ``against:`` is opened before the build.

Each case passed silently, or failed only after the build, on the code before this change. Small: copies of the
session's ``small_release`` (400 SNLI rows, five configs) and OTHER tables made from its own rows.
"""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from conftest import refused_in_one_line
from split_builders.cli import main
from split_builders.publishing.verify import verify
from test_bad_input_round5b import env  # noqa: F401  (the recipe fixture: a release's recipe in tmp_path)


def _copy(release, tmp_path, name="release"):
    out = tmp_path / name
    shutil.copytree(release, out)
    return out


def _differs(report) -> dict:
    """``{file or config: detail}`` of the findings that differ."""
    return {f.config: f.detail for f in report.findings if f.status == "differs"}


# -- verify: every generated file, and every task reading this release ------------------------------------------

def test_an_untouched_release_verifies_with_every_generated_file_checked(small_release):
    report = verify(str(small_release), load=False)
    assert report.ok
    checked = {f.config: f.detail for f in report.findings if f.level == 1 and f.status == "identical"}
    assert {"eval.yaml", "croissant.json", "(named)", "(targets)"} <= set(checked)
    figures = [p for p in (small_release / "figures").iterdir()]
    assert checked["(named)"].startswith(f"{len(figures)} file(s)")


def test_verify_names_each_generated_file_edited(small_release, tmp_path):
    folder = _copy(small_release, tmp_path)
    evaluated = folder / "eval.yaml"
    evaluated.write_text(evaluated.read_text(encoding="utf-8").replace("Answer with the number", "Answer only with "
                                                                       "the number"), encoding="utf-8")
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    document["license"] = "mit"  # still lists every file with its sha256: only the bytes tell
    (folder / "croissant.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    figure = sorted((folder / "figures").iterdir())[0]
    figure.write_text("not a figure\n", encoding="utf-8")
    report = verify(str(folder), load=False)
    differs = _differs(report)
    assert not report.ok
    # both files carry their own fingerprint (resplit-sha256): an edit is "changed since resplit wrote it"
    assert "changed since resplit wrote it" in differs["eval.yaml"] and "resplit export inspect" in differs["eval.yaml"]
    assert "changed since resplit wrote it" in differs["croissant.json"]
    assert "is not one" in differs[f"figures/{figure.name}"]
    assert set(differs) == {"eval.yaml", "croissant.json", f"figures/{figure.name}"}  # nothing else claimed


def test_verify_names_each_generated_file_deleted(small_release, tmp_path):
    folder = _copy(small_release, tmp_path)
    for name in ("eval.yaml", "inspect_tasks.py", "croissant.json"):
        (folder / name).unlink()
    shutil.rmtree(folder / "lm_eval")
    figure = sorted((folder / "figures").iterdir())[-1]
    figure.unlink()
    differs = _differs(verify(str(folder), load=False))
    group = [name for name in differs if name.startswith("lm_eval/_")]
    assert len(group) == 1 and "resplit export lm-eval" in differs[group[0]]
    for name in ("eval.yaml", "inspect_tasks.py", "croissant.json", f"figures/{figure.name}"):
        assert "missing" in differs[name], name


def _one_pixel_changed(figure) -> None:
    """Re-save the PNG ``figure`` with one pixel changed: still a valid PNG, other bytes."""
    from PIL import Image

    with Image.open(figure) as image:
        image = image.convert("RGBA")
    red, green, blue, alpha = image.getpixel((0, 0))
    image.putpixel((0, 0), (255 - red, green, blue, alpha))
    image.save(figure, format="PNG")


def _card_record(folder) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])["resplit"]


def test_an_untouched_release_records_and_checks_every_figures_sha256(small_release):
    import hashlib

    drawn = {f"figures/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
             for p in (small_release / "figures").iterdir()}
    assert drawn and _card_record(small_release)["figures"] == drawn  # every figure the build wrote, as written
    report = verify(str(small_release), load=False)
    named = {f.config: f.detail for f in report.findings if f.status == "identical"}["(named)"]
    assert report.ok and f"{len(drawn)} figure(s) have the sha256 the card records" in named


def test_a_figure_edited_after_the_build_that_is_still_a_png_fails_verify(small_release, tmp_path):
    folder = _copy(small_release, tmp_path)
    figure = sorted((folder / "figures").iterdir())[1]
    _one_pixel_changed(figure)
    assert figure.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    report = verify(str(folder), load=False)
    differs = _differs(report)
    assert not report.ok and set(differs) == {f"figures/{figure.name}"}
    assert "not the sha256 the card records" in differs[f"figures/{figure.name}"]


def _built_before_figures_were_recorded(release, tmp_path):
    """A copy of ``release`` whose card records no ``resplit.figures`` (as one built before they were)."""
    folder = _copy(release, tmp_path)
    readme = folder / "README.md"
    _, front, body = readme.read_text(encoding="utf-8").split("---\n", 2)
    metadata = yaml.safe_load(front)
    del metadata["resplit"]["figures"]
    readme.write_text(f"---\n{yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)}---\n{body}",
                      encoding="utf-8")
    return folder


def test_a_release_without_recorded_figures_keeps_the_image_check_and_says_so(small_release, tmp_path):
    """A release built before figures were recorded (no ``resplit.figures``): an edited PNG cannot be told, and the
    finding says so; a figure that is not an image still differs."""
    folder = _built_before_figures_were_recorded(small_release, tmp_path)
    figures = sorted((folder / "figures").iterdir())
    _one_pixel_changed(figures[1])
    report = verify(str(folder), load=False)
    named = {f.config: f.detail for f in report.findings if f.status == "identical"}["(named)"]
    assert report.ok and "figure contents are not recorded" in named
    figures[0].write_text("not a figure\n", encoding="utf-8")
    assert set(_differs(verify(str(folder), load=False))) == {f"figures/{figures[0].name}"}


def test_verify_fails_tasks_exported_from_another_release(small_release, tmp_path, monkeypatch):
    """Release A's tasks written into B's lm_eval/ (the export's own refusal bypassed: verify does not rely on it)
    and A's inspect tasks copied into B: every one reads A, and verify B names them."""
    from split_builders.publishing import export

    a, b = _copy(small_release, tmp_path, "a"), _copy(small_release, tmp_path, "b")
    monkeypatch.setattr(export, "check_tasks_place", lambda folder, out: None, raising=False)
    export.export_lm_eval(a, b / "lm_eval")
    (a / "inspect_tasks.py").write_text((a / "inspect_tasks.py").read_text(encoding="utf-8").replace(
        "RELEASE = {'path': None", "RELEASE = {'path': 'someone/else'"), encoding="utf-8")
    shutil.copy(a / "inspect_tasks.py", b / "inspect_tasks.py")
    differs = _differs(verify(str(b), load=False))
    tasks = [name for name, detail in differs.items() if name.startswith("lm_eval/") and "reads another release" in
             detail]
    assert len(tasks) == len(yaml.safe_load((b / "README.md").read_text(encoding="utf-8").split("---\n")[1])["configs"])
    assert str(a.resolve()) in differs[tasks[0]]
    assert "inspect_tasks.py" in differs and "changed since resplit wrote it" in differs["inspect_tasks.py"]
    # pinned to other data files: a task of this folder's own with another release's files
    c = _copy(small_release, tmp_path, "c")
    task = c / "lm_eval" / "random.yaml"
    text = task.read_text(encoding="utf-8")
    digest = yaml.safe_load(text.replace("!function", ""))["dataset_kwargs"]["resplit_files"]["test"]["sha256"]
    task.write_text(text.replace(digest, "0" * 64), encoding="utf-8")
    differs = _differs(verify(str(c), load=False))
    assert "pins data files that are not this release's" in differs["lm_eval/random.yaml"]


# -- exports: the target check, and --revision only with a Hub id ----------------------------------------------

def test_export_lm_eval_refuses_out_in_another_release(small_release, tmp_path, capsys):
    a, b = _copy(small_release, tmp_path, "a"), _copy(small_release, tmp_path, "b")
    for out in (b / "lm_eval", b, b / "lm_eval" / "more"):
        line = refused_in_one_line(["export", "lm-eval", str(a), "--out", str(out)], capsys, a, b)
        assert f"release {str(b.resolve())!r}" in line and "outside any other release" in line
    capsys.readouterr()
    assert main(["export", "lm-eval", str(b)]) == 0  # its own folder, and a place outside any release, still work
    assert main(["export", "lm-eval", str(a), "--out", str(tmp_path / "tasks")]) == 0
    assert verify(str(b), load=False).ok


def test_export_lm_eval_writes_no_revision_for_a_local_dataset_path(small_release, tmp_path, capsys):
    folder = _copy(small_release, tmp_path)
    out = tmp_path / "tasks"
    line = refused_in_one_line(["export", "lm-eval", str(folder), "--dataset-path", str(folder), "--revision",
                                "v1.0.0", "--out", str(out)], capsys, folder, out=out)
    assert "only a Hub repository has revisions" in line and "--revision v1.0.0" in line
    assert main(["export", "lm-eval", str(folder), "--dataset-path", str(folder), "--out", str(out)]) == 0
    task = yaml.safe_load((out / "random.yaml").read_text(encoding="utf-8").replace("!function", ""))
    assert task["dataset_path"] == str(folder) and "dataset_kwargs" not in task


# -- audit --against: labels as class numbers, and ids checked as every reader checks them -----------------------

@pytest.fixture()
def own_rows(small_release):
    """The release's ll_split test rows (its own labels, class numbers of its ClassLabel) and the class names."""
    import datasets

    path = next((small_release / "ll_split").glob("test-*.parquet"))
    table = pq.read_table(path)
    names = datasets.Features.from_arrow_schema(table.schema)["label"].names
    return table.select(["premise", "hypothesis", "label", "source_id"]).to_pandas(), names


def _audit(capsys, target, *extra) -> dict:
    capsys.readouterr()
    assert main(["audit", str(target), "--json", "--no-progress", "--configs", "ll_split", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_class_numbers_of_other_are_read_as_the_releases_classes(small_release, own_rows, tmp_path, capsys):
    """OTHER: the release's own test rows with their labels as class numbers in ``gold_label`` (a CSV: no names).
    Every test row is then an input-and-label copy (the reference: the rows are identical); with the labels
    shifted by one class, none is."""
    rows, names = own_rows
    other = tmp_path / "numbers.csv"
    rows.rename(columns={"label": "gold_label"}).to_csv(other, index=False)
    report = _audit(capsys, small_release, "--against", str(other))
    test = report["against"]["ll_split"]["test"]
    assert test["input_label_contaminated"] == test["rows"] == len(rows)
    assert "labels_compared" not in report and "read as the release's classes" in report["labels_note"]
    assert ", ".join(f"{i} {n}" for i, n in enumerate(names)) in report["labels_note"]
    shifted = rows.assign(label=(rows["label"] + 1) % len(names))
    shifted.to_csv(other, index=False)
    test = _audit(capsys, small_release, "--against", str(other))["against"]["ll_split"]["test"]
    assert test["input_label_contaminated"] == 0 and test["input_contaminated"] == len(rows)


def test_a_clean_release_records_its_own_figures_not_those_it_was_cut_from(small_release, own_rows, tmp_path,
                                                                          capsys):
    """``audit --write-clean`` copies the release's provenance; the figures it records are its own (its card draws
    none), so it verifies."""
    rows, _ = own_rows
    other, out = tmp_path / "own.csv", tmp_path / "clean"
    rows.rename(columns={"label": "gold_label"}).to_csv(other, index=False)
    _audit(capsys, small_release, "--against", str(other), "--write-clean", str(out))
    assert _card_record(small_release)["figures"] and _card_record(out)["figures"] == {}
    assert not (out / "figures").exists() and verify(str(out), load=False).ok


def test_numbers_that_are_not_the_releases_classes_are_not_compared(small_release, own_rows, tmp_path, capsys):
    rows, names = own_rows
    other = tmp_path / "scores.parquet"
    rows.assign(label=rows["label"] + 10).to_parquet(other)
    report = _audit(capsys, small_release, "--against", str(other))
    assert report["labels_compared"] is False
    assert report["against"]["ll_split"]["test"]["input_label_contaminated"] is None
    assert f"numbers from 10 to {10 + rows['label'].max()}" in report["labels_note"]
    assert f"{len(names)} classes" in report["labels_note"]


def test_ids_of_other_are_checked_as_every_reader_checks_them(small_release, own_rows, tmp_path, capsys):
    rows, _ = own_rows
    given = tmp_path / "text-ids.jsonl"  # ids given as text of whole numbers: read as those numbers
    rows.assign(source_id=[str(9000 + i) for i in range(len(rows))]).to_json(given, orient="records", lines=True)
    found = tmp_path / "rows.parquet"
    _audit(capsys, small_release, "--against", str(given), "--rows", str(found))
    matches = pq.read_table(found).to_pandas()
    matches = matches[matches["split"] == "test"].set_index("source_id")["match_id"]
    expected = {int(s): 9000 + i for i, s in enumerate(rows["source_id"])}
    assert {int(k): int(v) for k, v in matches.items()} == expected

    null = tmp_path / "null.parquet"
    ids = rows["source_id"].astype("Int64")
    ids.iloc[2] = None
    rows.assign(source_id=ids).to_parquet(null)
    line = refused_in_one_line(["audit", str(small_release), "--against", str(null), "--configs", "ll_split",
                                "--no-progress"], capsys, small_release)
    assert "column 'source_id'" in line and "has no value on row 3" in line
    repeated = tmp_path / "repeated.csv"
    ids = rows["source_id"].copy()
    ids.iloc[4] = ids.iloc[1]
    rows.assign(source_id=ids).to_csv(repeated, index=False)
    line = refused_in_one_line(["audit", str(small_release), "--against", str(repeated), "--configs", "ll_split",
                                "--no-progress"], capsys, small_release)
    assert f"repeats {ids.iloc[1]} (rows 2 and 5)" in line
    words = tmp_path / "words.csv"
    rows.assign(source_id=[f"r{i}" for i in range(len(rows))]).to_csv(words, index=False)
    line = refused_in_one_line(["audit", str(small_release), "--against", str(words), "--configs", "ll_split",
                                "--no-progress"], capsys, small_release)
    assert "holds 'r0' on row 1, which is not an integer" in line


# -- a recipe's against: opened before the build -----------------------------------------------------------------

def _fifo(env):
    path = env.tmp / "pipe.csv"
    os.mkfifo(path)
    return "pipe.csv"


RECIPE_AGAINST = {  # entry (relative to the recipe's repository root) -> what the one line says
    "{dataset: dev.csv, splits: [nosuch]}": "has no split named nosuch",
    "{dataset: dev.csv, fields: [question, passage]}": "are not all columns of any split",
    "someorg/no-such-dataset": "could not download it",
    "FIFO": "is not a regular file",
    # no fields: the release's input (the recipe's prompt and query fields) is compared, and OTHER has no hypothesis
    "{dataset: premises.csv}": "has no column hypothesis",
    "{dataset: premises.csv, fields: [premise]}": "its fields name 1 column(s); the release's input has 2",
}


@pytest.mark.parametrize("entry", list(RECIPE_AGAINST))
def test_a_recipe_against_that_cannot_be_read_is_refused_before_the_build(entry, env, capsys):  # noqa: F811
    expected = RECIPE_AGAINST[entry]
    if entry == "FIFO":  # reading it would wait for a writer for ever
        entry = _fifo(env)
    (env.tmp / "premises.csv").write_text("premise,gold_label\na,neutral\n")
    line = refused_in_one_line(env.release_args(env.recipe(f"against:\n  - {entry}\n")), capsys, env.release,
                               out=env.out)
    assert "against entry 1" in line and expected in line
    assert not [p for p in env.tmp.iterdir() if env.out.name in p.name]  # no release, nothing staged beside it


def test_diff_reports_no_provenance_change_for_recorded_figures(small_release, tmp_path):
    """The figures' sha256s are file fingerprints, like the data files' (compared row by row): a release built
    before they were recorded and the same release with them differ in no provenance."""
    from split_builders.publishing.diff import diff

    old = _built_before_figures_were_recorded(small_release, tmp_path)
    assert diff(str(old), str(small_release))["provenance"] == {}
