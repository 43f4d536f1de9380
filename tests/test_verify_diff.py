"""``resplit verify`` (integrity, re-derivation from the released rows), ``resplit diff`` and the
release recipes, on a toy method registered in the test and on the recipes in ``releases/``."""

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.release.recipe import list_recipes, load_recipe, recipes_folder
from split_builders.publishing.verify import verify


@pytest.fixture()
def toy_release(toy_method, tmp_path):
    source = tmp_path / "toy.csv"
    source.write_text("text,label\n" + "".join(f"{'x' * (i % 17 + 1)} {i},{i % 2}\n" for i in range(80)))

    def build(name, seed):
        out = tmp_path / name
        assert main(["toy-shortest", "--source", str(source), "--out", str(out), "--seed", str(seed),
                     "--license", "mit"]) == 0
        return out

    return build


def _card(folder):
    text = (folder / "README.md").read_text()
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def _write_card(folder, meta, body):
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n" + body)


def _move_a_row(folder, config="shortest", source="test", target="train"):
    """Move one row between two splits and update the card's hashes and counts to match."""
    meta, body = _card(folder)
    files = {f["split"]: folder / f["path"] for c in meta["configs"] if c["config_name"] == config
             for f in c["data_files"]}
    a, b = pq.read_table(files[source]), pq.read_table(files[target])
    moved = a.slice(0, 1)
    pq.write_table(a.slice(1), files[source])
    pq.write_table(pa.concat_tables([b, moved]), files[target])
    for split in (source, target):
        entry = meta["resplit"]["configs"][config]
        entry["sha256"][split] = hashlib.sha256(files[split].read_bytes()).hexdigest()
        entry["rows"][split] = pq.read_table(files[split]).num_rows
        for info in meta["dataset_info"]:  # what datasets checks when it loads the config
            for described in info["splits"] if info["config_name"] == config else []:
                if described["name"] == split:
                    described["num_examples"] = entry["rows"][split]
    _write_card(folder, meta, body)
    from split_builders.publishing.readers import write_readers
    from split_builders.release.folder import row_ids

    write_readers(folder)  # and its tasks, which pin every data file's sha256, and croissant.json, which lists them
    return int(row_ids(moved)[0])


def test_an_untouched_release_verifies(toy_release, capsys):
    out = toy_release("a", 3)
    report = verify(str(out))
    assert report.ok and {f.level for f in report.findings} == {1, 2}
    assert all(f.status == "identical" for f in report.findings)
    assert main(["verify", str(out)]) == 0
    assert "-> OK" in capsys.readouterr().out


def test_a_changed_byte_fails_level_one_naming_the_split(toy_release, capsys):
    out = toy_release("a", 3)
    (path,) = out.glob("shortest/test-*.parquet")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    assert main(["verify", str(out), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "level 1  shortest/test" in printed and "sha256" in printed


def test_a_row_moved_with_the_hashes_recomputed_fails_level_two(toy_release, capsys):
    out = toy_release("a", 3)
    moved = _move_a_row(out)
    report = verify(str(out))
    assert all(f.status == "identical" for f in report.findings if f.level == 1)  # the hashes match the card
    bad = [f for f in report.findings if f.status == "differs"]
    assert bad and all(f.level == 2 and f.config == "shortest" for f in bad)
    assert any(f"source_id {moved}" in f.detail for f in bad)
    assert main(["verify", str(out)]) == 1


def test_a_changed_seed_in_the_card_fails_level_two(toy_release):
    out = toy_release("a", 3)
    meta, body = _card(out)
    meta["resplit"]["configs"]["shortest"]["parameters"]["random_state"] = 4
    _write_card(out, meta, body)
    assert not verify(str(out), load=False).ok


def test_diff_equals_an_independent_comparison_of_source_ids(toy_release, capsys):
    a, b = toy_release("a", 3), toy_release("b", 5)
    assert main(["diff", str(a), str(b), "--json"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    result = json.loads(printed[-1])

    def splits(folder):
        return {p.name.split("-")[0]: set(pq.read_table(p).column("source_id").to_pylist())
                for p in (folder / "shortest").glob("*.parquet")}

    before, after = splits(a), splits(b)
    where = lambda parts: {i: s for s, ids in parts.items() for i in ids}
    wa, wb = where(before), where(after)
    moved = sum(wa[i] != wb[i] for i in wa.keys() & wb.keys())
    assert result["shortest"]["moved"] == moved > 0
    assert result["shortest"]["added"] == len(wb.keys() - wa.keys()) and result["shortest"]["removed"] == 0
    assert any("seed: 3 -> 5" in line for line in printed)


def test_every_recipe_validates_against_its_method():
    recipes = list_recipes()
    names = {r.name for r in recipes}
    assert {"snli-likelihood", "boolq-likelihood", "spider-likelihood", "geoquery-compositional",
            "spider-compositional", "scan-compositional", "cogs-compositional", "curriculum", "checklist-sentiment",
            "checklist-qqp", "checklist-squad", "metric-pass-rate", "metric-g-score", "metric-concurrence"} <= names
    by_name = {r.name: r for r in recipes}
    snli = by_name["snli-likelihood"]
    assert snli.options["validation_size"] == snli.options["test_size"] == 10000 and snli.options["folds"] == 3
    assert snli.model["hub"].endswith("gpt2-medium") and snli.pinned()
    assert by_name["boolq-likelihood"].options["validation_size"] == 2540
    assert by_name["geoquery-compositional"].options["train_size"] == 440
    assert by_name["spider-likelihood"].options["train_size"] == 5966
    assert not by_name["boolq-likelihood"].pinned()  # its Hub commit is not pinned yet: --push refuses it


@pytest.mark.parametrize("change, message", [
    ({"options": {"train_sise": 440}}, "unknown option 'train_sise' for method tmcd (did you mean 'train_size'?)"),
    ({"colour": "red"}, "unknown key(s) colour"),
    ({"options": {"train_size": -3}}, "train"),
    ({"citation": {"method": "x"}}, "citation needs BibTeX for source"),
])
def test_a_bad_recipe_names_the_key(change, message, tmp_path):
    data = yaml.safe_load((recipes_folder() / "geoquery-compositional.yaml").read_text())
    for key, value in change.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) and key in data and key != "citation" else value
    (tmp_path / "releases").mkdir()
    path = tmp_path / "releases" / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InvalidParameterError) as error:
        load_recipe(path)
    assert message in str(error.value)


def test_push_refuses_an_unpinned_recipe(capsys):
    assert main(["release", "boolq-likelihood", "--push", "--version", "1.0.0", "--org", "o"]) == 2
    assert "not pinned" in capsys.readouterr().err


def test_release_list_shows_every_recipe(capsys):
    assert main(["release", "--list"]) == 0
    printed = capsys.readouterr().out
    assert "geoquery-compositional" in printed and "metric-g-score" in printed


@pytest.mark.parametrize("arguments, message", [
    (["--set", "trainsize=400"], "unknown option 'trainsize' for method tmcd (did you mean 'train_size'?)"),
    (["--set", "train_size"], "--set takes KEY=VALUE"),
    (["--set", "train_size=-3"], "train_size"),
    (["--set", "configs=[tmcd, lenght]"], "lenght"),
    (["--set", "train_size=400", "--push", "--version", "1.0.0", "--org", "o"], "trial build"),
    (["--limit", "100", "--push", "--version", "1.0.0", "--org", "o"], "trial build"),
])
def test_a_bad_trial_setting_is_refused_before_any_work(arguments, message, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["release", "geoquery-compositional", *arguments, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_verify_of_a_card_with_broken_yaml_is_one_line(toy_release, capsys):
    out = toy_release("a", 3)
    text = (out / "README.md").read_text().splitlines()
    (out / "README.md").write_text("\n".join([text[0], "  broken: [unclosed", *text[1:]]) + "\n")
    assert main(["verify", str(out), "--no-load-check"]) == 2
    err = capsys.readouterr().err
    assert "not valid YAML" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_verify_of_a_release_missing_a_data_file_names_it_and_fails(toy_release, capsys):
    out = toy_release("a", 3)
    (missing,) = list((out / "shortest").glob("train-*.parquet"))
    missing.unlink()
    assert main(["verify", str(out), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "level 1  shortest/train" in printed and "do not exist" in printed
    assert "level 2  (all)" in printed and "not checked" in printed


# -- files the card does not name; sources with their own source_id (issue 25) -----------------

def test_verify_and_push_refuse_files_the_card_does_not_name_unless_allowed(toy_release, capsys):
    out = toy_release("a", 3)
    assert main(["verify", str(out), "--no-load-check"]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "figures").mkdir(exist_ok=True)
    (out / "figures" / "draft.png").write_bytes(b"\x89PNG")
    (out / ".hidden").write_text("ignored")  # hidden files (.gitattributes, .cache/) are not counted
    capsys.readouterr()
    assert main(["verify", str(out), "--no-load-check"]) == 1
    printed = capsys.readouterr().out
    assert "level 1  (folder)" in printed and "2 file(s) that the card does not name: figures/draft.png, notes.txt" \
        in printed and "--allow-extra" in printed and "-> DIFFERS" in printed
    assert main(["verify", str(out), "--no-load-check", "--allow-extra"]) == 0
    assert "-> OK" in capsys.readouterr().out
    assert main(["push", str(out), "org/toy", "--version", "1.0.0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "2 file(s) that the card does not name: figures/draft.png, notes.txt" in err and len(err.splitlines()) == 1
    assert main(["push", str(out), "org/toy", "--version", "1.0.0", "--dry-run", "--allow-extra"]) == 0
    assert "would push it to org/toy" in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_source_with_its_own_shuffled_source_ids_builds_and_verifies(suffix, tmp_path, capsys, hf_cache):
    """Rows are split in source_id order, the order verify re-derives them in from the released rows."""
    import numpy as np

    import datasets

    ids = np.random.default_rng(1).permutation(120) + 1000
    rows = [{"premise": f"premise {i}", "hypothesis": f"hypothesis {i} " + "word " * (i % 5),
             "gold_label": ("yes", "no")[i % 2], "source_id": int(ids[i])} for i in range(120)]
    source = tmp_path / f"own{suffix}"
    if suffix == ".csv":
        source.write_text("premise,hypothesis,gold_label,source_id\n" + "".join(
            f"{r['premise']},{r['hypothesis']},{r['gold_label']},{r['source_id']}\n" for r in rows))
    else:
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = np.random.default_rng(2).normal(size=120)
    np.save(tmp_path / "scores.npy", scores)
    out = tmp_path / "out"
    assert main(["likelihood", "--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis",
                 "--label-field", "gold_label", "--scores", str(tmp_path / "scores.npy"), "--validation-size", "20",
                 "--test-size", "20", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["verify", str(out), "--no-load-check"]) == 0
    printed = capsys.readouterr().out
    assert "differs" not in printed and "-> OK" in printed
    released = datasets.load_dataset(str(out), "random", cache_dir=hf_cache)
    by_id = {r["source_id"]: r for split in released.values() for r in split}
    assert sorted(by_id) == sorted(ids.tolist())  # every row keeps its own id, with its own text
    assert all(by_id[r["source_id"]]["premise"] == r["premise"] for r in rows)
    # the scores file is read in source_id order (rows with their own ids are split in that order)
    assert all(by_id[int(sid)]["score"] == scores[k] for k, sid in enumerate(np.sort(ids)))
    assert "rows are split in source_id order" in (out / "README.md").read_text()
