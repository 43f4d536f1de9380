"""Contamination across datasets (``resplit audit TARGET --against OTHER``,
:mod:`split_builders.evidence.contamination`): each evaluation row's tier and match, checked against an independent all-pairs computation on real SNLI rows.

Planted: a dataset folder of SNLI test rows (TARGET) and an OTHER made of SNLI dev rows plus copies of TARGET's
evaluation rows (exact, with one typo, with another label, and rows only similar below the threshold), given as a
file, a dataset folder and a resplit release. Real: a release of SNLI dev + test rows against SNLI's dev file.
"""

from __future__ import annotations

import gzip
import json
import unicodedata
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pytest
import yaml

from split_builders.cli import main

LABELS = ("entailment", "neutral", "contradiction")
THRESHOLD = 0.8


def _normalised(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _input(premise: str, hypothesis: str) -> str:
    return _normalised(premise) + "\n" + _normalised(hypothesis)


def _shingles(text: str, n: int = 5) -> set:
    return {text[i:i + n] for i in range(len(text) - n + 1)} if len(text) >= n else ({text} if text else set())


def _jaccard(a: str, b: str) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y)


def _snli(shared, name: str, limit: int) -> list[dict]:
    rows = []
    with gzip.open(shared / "data" / "snli" / f"snli_1.0_{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["gold_label"] in LABELS:
                rows.append({"premise": row["sentence1"], "hypothesis": row["sentence2"], "label": row["gold_label"]})
            if len(rows) == limit:
                break
    return rows


def _write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _typo(text: str) -> str:
    """One letter changed in the middle of the text."""
    at = next(i for i in range(len(text) // 2, len(text)) if text[i].isalpha())
    return text[:at] + ("x" if text[at] != "x" else "y") + text[at + 1:]


def _reworded(premise: str) -> str:
    """The premise with its second half of words replaced: similar, below the threshold."""
    words = premise.split()
    keep = max(2, (len(words) * 2) // 3)
    return " ".join(words[:keep] + ["then", "someone", "waved", "back", "quietly"][: len(words) - keep + 2])


def _audit(capsys, target, *extra) -> dict:
    capsys.readouterr()
    assert main(["audit", str(target), "--json", "--no-progress", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def planted(shared, tmp_path_factory):
    """TARGET: a dataset folder of SNLI test rows (train 200, validation 100, test 100); OTHER: 300 SNLI dev rows
    and, for the test split, 10 exact copies, 10 with one typo, 10 with another label and 10 reworded ones."""
    root = tmp_path_factory.mktemp("contamination")
    rows = _snli(shared, "test", 400)
    target = root / "target"
    target.mkdir()
    _write_jsonl(target / "train.jsonl", rows[:200])
    _write_jsonl(target / "validation.jsonl", rows[200:300])
    test = rows[300:400]
    _write_jsonl(target / "test.jsonl", test)
    other = _snli(shared, "dev", 300)
    other += [dict(r) for r in test[:10]]
    other += [{**r, "hypothesis": _typo(r["hypothesis"])} for r in test[10:20]]
    other += [{**r, "label": LABELS[(LABELS.index(r["label"]) + 1) % 3]} for r in test[20:30]]
    other += [{**r, "premise": _reworded(r["premise"])} for r in test[30:40]]
    (root / "other").mkdir()
    _write_jsonl(root / "other" / "train.jsonl", other)
    _write_jsonl(root / "other.jsonl", other)
    pd.DataFrame(other).to_parquet(root / "other.parquet")
    np.save(root / "scores.npy", np.random.default_rng(0).normal(size=len(other)))
    assert main(["likelihood", "--source", str(root / "other.jsonl"), "--prompt-field", "premise", "--query-field",
                 "hypothesis", "--label-field", "label", "--scores", str(root / "scores.npy"), "--dev-size", "30",
                 "--test-size", "30", "--out", str(root / "other-release"),
                 "--no-progress"]) == 0
    return {"root": root, "target": target, "test": test, "validation": rows[200:300], "other": other}


def _oracle(eval_rows, other) -> list:
    """Per evaluation row: (tier, best Jaccard) by brute force over every OTHER row."""
    keys = [_input(o["premise"], o["hypothesis"]) for o in other]
    out = []
    for row in eval_rows:
        mine = _input(row["premise"], row["hypothesis"])
        similar = [(_jaccard(mine, k), o["label"] == row["label"]) for k, o in zip(keys, other)]
        hits = [(j, same) for j, same in similar if j >= THRESHOLD]
        tier = ("input_label_contaminated" if any(same for _, same in hits) else
                "input_contaminated" if hits else "clean")
        out.append((tier, max((j for j, _ in hits), default=None), max(j for j, _ in similar)))
    return out


@pytest.mark.parametrize("kind", ["file", "folder", "release"])
def test_planted_contamination_is_recovered_row_by_row(planted, capsys, tmp_path, kind):
    root = planted["root"]
    other = {"file": root / "other.jsonl", "parquet": root / "other.parquet", "folder": root / "other",
             "release": root / "other-release"}[kind]
    rows_file = tmp_path / "rows.parquet"
    report = _audit(capsys, planted["target"], "--against", str(other), "--rows", str(rows_file))
    test = report["against"]["default"]["test"]
    expected = _oracle(planted["test"], planted["other"])
    # the planted kinds land where they were planted, and the rows only similar stay below the threshold
    assert [t for t, _, _ in expected[:10]] == ["input_label_contaminated"] * 10
    assert [t for t, _, _ in expected[10:20]] == ["input_label_contaminated"] * 10
    assert all(0.8 <= j < 1.0 for _, j, _ in expected[10:20])
    assert [t for t, _, _ in expected[20:30]] == ["input_contaminated"] * 10
    assert all(0.4 < best < THRESHOLD for _, _, best in expected[30:40])
    counts = {t: sum(e[0] == t for e in expected) for t in ("clean", "input_contaminated", "input_label_contaminated")}
    assert {k: test[k] for k in counts} == counts and test["rows"] == 100
    rows = pd.read_parquet(rows_file)
    assert list(rows.columns) == ["config", "split", "source_id", "tier", "match_dataset", "match_split",
                                  "match_id", "jaccard"]
    mine = rows[rows.split == "test"].sort_values("source_id")
    assert list(mine.tier) == [t for t, _, _ in expected]
    contaminated = mine[mine.tier != "clean"]
    assert (contaminated.jaccard >= THRESHOLD).all() and mine[mine.tier == "clean"].match_id.isna().all()
    assert np.allclose(contaminated.jaccard.to_numpy(), [j for t, j, _ in expected if t != "clean"], atol=1e-6)
    assert set(contaminated.match_dataset) == {str(other)}
    if kind in ("file", "parquet", "folder"):  # the match is the planted row: its row number in OTHER
        planted_at = {k: 300 + k for k in range(30)}
        for source_id, match in zip(contaminated.source_id, contaminated.match_id):
            if source_id < 30:
                assert match == planted_at[source_id]
    else:  # a release's rows are named by source_id (the row number in the file it was built from)
        assert {s.rsplit("/", 1)[-1] for s in contaminated.match_split} <= {"train", "validation", "test"}
        assert set(contaminated[contaminated.source_id < 30].match_id) == set(range(300, 330))
    # validation had nothing planted: the same oracle holds there too
    assert report["against"]["default"]["validation"]["clean"] == sum(
        t == "clean" for t, _, _ in _oracle(planted["validation"], planted["other"]))


def test_against_fields_map_other_columns_and_bad_input_gets_one_line(planted, capsys, tmp_path):
    renamed = pd.DataFrame(planted["other"]).rename(columns={"premise": "sentence1", "hypothesis": "sentence2"})
    renamed.to_parquet(tmp_path / "renamed.parquet")
    capsys.readouterr()
    assert main(["audit", str(planted["target"]), "--against", str(tmp_path / "renamed.parquet"), "--json"]) == 2
    err = capsys.readouterr().err
    assert "has no column premise" in err and "--against-fields" in err and "Traceback" not in err
    report = _audit(capsys, planted["target"], "--against", str(tmp_path / "renamed.parquet"),
                    "--against-fields", "sentence1,sentence2")
    assert report["against"]["default"]["test"]["input_contaminated"] == 10
    assert main(["audit", str(planted["target"]), "--rows", str(tmp_path / "x.parquet")]) == 2
    assert "--rows needs --against" in capsys.readouterr().err
    assert main(["audit", str(planted["target"]), "--against", str(tmp_path / "missing.jsonl")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.fixture(scope="module")
def snli_release(shared, tmp_path_factory):
    """A likelihood release of SNLI dev's first 1,500 lines and test's first 1,500 (given scores)."""
    root = tmp_path_factory.mktemp("contamination-snli")
    lines = []
    for name in ("dev", "test"):
        with gzip.open(shared / "data" / "snli" / f"snli_1.0_{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
            lines += [next(handle) for _ in range(1500)]
    (root / "snli.jsonl").write_text("".join(lines), encoding="utf-8")
    np.save(root / "scores.npy", np.random.default_rng(1).normal(size=len(lines)))
    assert main(["likelihood", "--source", str(root / "snli.jsonl"), "--scores", str(root / "scores.npy"),
                 "--dev-size", "200", "--test-size", "400", "--out",
                 str(root / "release"), "--no-progress"]) == 0
    return root / "release"


def test_snli_test_split_against_snli_dev_matches_an_exact_computation(snli_release, shared, capsys, tmp_path):
    dev = _snli(shared, "dev", 10_000)
    pairs = {}
    for row in dev:
        pairs.setdefault(_input(row["premise"], row["hypothesis"]), set()).add(row["label"])
    report = _audit(capsys, snli_release, "--against", str(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz"),
                    "--threshold", "1.0")
    for config in ("random", "ll_split"):
        (path,) = (snli_release / config).glob("test-*.parquet")
        test = datasets.Dataset.from_parquet(str(path))
        label_names = test.features["label"].names
        exact = label = 0
        for row in test:
            key = _input(row["premise"], row["hypothesis"])
            if key in pairs:
                exact += 1
                label += label_names[row["label"]] in pairs[key]
        entry = report["against"][config]["test"]
        assert 0 < exact < entry["rows"]  # some test rows come from dev, the others from SNLI's test file
        assert entry["exact"] == exact
        assert entry["input_label_contaminated"] == label
        assert entry["input_contaminated"] == exact - label
        assert entry["clean"] == entry["rows"] - exact


def test_write_clean_verifies_loads_and_has_its_tasks(snli_release, shared, capsys, tmp_path):
    out = tmp_path / "clean"
    dev = shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz"
    report = _audit(capsys, snli_release, "--against", str(dev), "--write-clean", str(out))
    assert main(["verify", str(out)]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(readme.split("---\n")[1])
    record = meta["resplit"]["contamination"]
    assert record["checked"][0]["dataset"] == "snli_1.0_dev.jsonl.gz"  # no absolute local path
    assert str(shared) not in readme
    for config in ("random", "ll_split"):
        entry = report["against"][config]["test"]
        loaded = datasets.load_dataset(str(out), config, cache_dir=str(tmp_path / "cache"))
        assert len(loaded["test"]) == entry["clean"]
        assert record["removed"][config]["test"] == entry["rows"] - entry["clean"]
        (original,) = (snli_release / config).glob("train-*.parquet")
        assert len(loaded["train"]) == pd.read_parquet(original).shape[0]
        task = yaml.load((out / "lm_eval" / f"{config}.yaml").read_text(encoding="utf-8"), Loader=_AnyTag)
        assert task["dataset_name"] == config
    again = _audit(capsys, out, "--against", str(dev))
    assert all(e["clean"] == e["rows"] for splits in again["against"].values() for e in splits.values())


class _AnyTag(yaml.SafeLoader):
    """Reads a task YAML's ``!function`` as its text."""


_AnyTag.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def test_the_card_tiers_against_train_equal_the_streamed_tiers_against_that_train(snli_release, capsys):
    """Two engines, one answer: the card's tiers (the audit's self-join of every text) and ``--against`` the
    release's own train split (its evaluation rows indexed, train streamed through the index)."""
    meta = yaml.safe_load((snli_release / "README.md").read_text(encoding="utf-8").split("---\n")[1])
    assert "input-and-label" in (snli_release / "README.md").read_text(encoding="utf-8")
    for config in ("random", "ll_split"):
        carded = meta["resplit"]["configs"][config]["audit"]
        report = _audit(capsys, snli_release, "--against", str(snli_release), "--against-splits", f"{config}/train")
        assert [c["split"] for c in report["checked"]] == [f"{config}/train"]
        for split in ("validation", "test"):
            streamed = report["against"][config][split]
            assert carded[split]["tiers"] == {t: streamed[t] for t in
                                              ("clean", "input_contaminated", "input_label_contaminated")}
            assert carded[split]["near_duplicate"] == streamed["rows"] - streamed["clean"]
        assert sum(carded[s]["tiers"]["input_label_contaminated"] for s in ("validation", "test")) > 0


def test_a_recipe_against_key_states_the_result_in_the_card(shared, tmp_path, capsys):
    from split_builders.errors import InvalidParameterError
    from split_builders.release.recipe import load_recipe

    dev = shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz"
    (tmp_path / "releases").mkdir()
    text = (Path(__file__).resolve().parents[1] / "releases" / "snli-likelihood.yaml").read_text(encoding="utf-8")
    recipe = tmp_path / "releases" / "snli-against.yaml"
    recipe.write_text(text + f"against:\n  - {dev}\n  - {{dataset: {dev}, splits: [snli_1.0_dev]}}\n",
                      encoding="utf-8")
    assert [a["dataset"] for a in load_recipe(recipe).against] == [str(dev)] * 2
    rows = _snli(shared, "dev", 600) + _snli(shared, "test", 600)
    source = tmp_path / "snli.jsonl"
    source.write_text("".join(json.dumps({"sentence1": r["premise"], "sentence2": r["hypothesis"],
                                          "gold_label": r["label"]}) + "\n" for r in rows), encoding="utf-8")
    np.save(tmp_path / "scores.npy", np.random.default_rng(2).normal(size=len(rows)))
    out = tmp_path / "built"
    assert main(["release", str(recipe), "--source", str(source), "--scores", str(tmp_path / "scores.npy"), "--set",
                 "validation_size=100", "--set", "test_size=100", "--set", "finetune=false", "--out", str(out),
                 "--no-progress", "--no-load-check"]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(readme.split("---\n")[1])
    (first, second) = meta["resplit"]["against"]
    assert first["dataset"] == "snli_1.0_dev.jsonl.gz" and str(shared) not in readme
    assert first["splits"] == [{"split": "snli_1.0_dev", "rows": 9842}] and first["configs"] == second["configs"]
    test = first["configs"]["random"]["test"]
    assert test["rows"] == 100 and 0 < test["input_label_contaminated"] < 100
    assert "## Checked against other datasets" in readme
    recomputed = _audit(capsys, out, "--against", str(dev))["against"]["random"]["test"]
    assert {k: recomputed[k] for k in test} == test
    bad = tmp_path / "releases" / "bad.yaml"
    bad.write_text(text + "against:\n  - {dataset: x, split: [train]}\n", encoding="utf-8")
    with pytest.raises(InvalidParameterError, match="against entry 1 has unknown key.*split"):
        load_recipe(bad)
