"""The baseline probe (``split_builders.evidence.probe``, ``resplit probe``): a quick baseline per config and
evaluation split, with bootstrap intervals and the relative error increase over the ``random`` config.

A planted-difficulty source built here (the labels of the held-out rows depend on cue words that never
occur in ``ll_split``'s train split), a TMCD release of GeoQuery from ``../shared/data`` (nearest-neighbour
retrieval, exact match), and tiny hand-made cases whose numbers are known without the probe."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import yaml

from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.evidence.inputs import EvidenceInput
from split_builders.evidence.probe import accuracy_interval, probe, relative_error_increase
from split_builders.evidence.probe_card import VIEW, card_lines, yaml_record
from split_builders.release.folder import Released


def probe_release(released, **settings):
    return VIEW.compute(EvidenceInput.from_release(released), **settings)


def probe_build(rows, configs, *, record, **settings):
    return VIEW.compute(EvidenceInput.from_build(rows, configs, record=record), **settings)


def probe_target(target, *, work, **settings):
    return VIEW.compute(EvidenceInput.from_target(target, work=work), **settings)

ROWS = 1200
HELD = 150  # validation and test rows of each config
LABELS = ("entailment", "contradiction")


def _yaml(folder) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _planted_source(folder):
    """A CSV of premise / hypothesis / label and one given score per row. Every hypothesis holds one cue
    word that decides its label; the 300 least likely rows (the lowest scores, 150 per label: what
    ``ll_split`` holds out) use cues ``b0`` .. ``b9`` that no other row has, the rest ``a0`` .. ``a9``.
    Premises and the other words are random filler, unrelated to the label; a tenth of the other rows
    carry the wrong label (noise, so that no split is solved perfectly)."""
    rng = np.random.default_rng(7)
    filler = [f"w{i}" for i in range(60)]
    hard = np.zeros(ROWS, dtype=bool)
    labels = np.arange(ROWS) % 2
    for label in (0, 1):
        hard[np.flatnonzero(labels == label)[:HELD]] = True
    noisy = ~hard & (rng.random(ROWS) < 0.1)
    rows = []
    for i in range(ROWS):
        cue = f"{'b' if hard[i] else 'a'}{(labels[i] ^ noisy[i]) * 5 + rng.integers(5)}"
        words = list(rng.choice(filler, size=6))
        words.insert(int(rng.integers(len(words) + 1)), cue)
        rows.append({"premise": " ".join(rng.choice(filler, size=8)), "hypothesis": " ".join(words),
                     "label": LABELS[labels[i]]})
    scores = np.where(hard, -100.0, 0.0) + rng.normal(size=ROWS)
    pd.DataFrame(rows).to_csv(folder / "planted.csv", index=False)
    np.save(folder / "scores.npy", scores)
    return folder / "planted.csv", folder / "scores.npy"


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted source built into a likelihood release through ``build()``: the folder, and the rows and
    configs the build handed to its writer (what a card's probe would read)."""
    from split_builders.api import registry
    from split_builders.builder import build

    root = tmp_path_factory.mktemp("probe-planted")
    source, scores = _planted_source(root)
    method = registry()["likelihood"]
    options = method.options(source=str(source), prompt_field="premise", query_field="hypothesis",
                             label_field="label", scores=str(scores), validation_size=HELD, test_size=HELD,
                             out=str(root / "release"))
    result = build(method, options, progress=False)
    rows = method.rows(result.loaded, result.signal, result.configs)
    return result.out, rows, result.configs


@pytest.fixture(scope="module")
def planted_report(planted):
    return probe_release(Released(planted[0]), seed=3)


def test_the_planted_split_is_harder_than_random_with_intervals_apart(planted, planted_report):
    folder = planted[0]
    test = pd.read_parquet(next((folder / "ll_split").glob("test-*.parquet")))
    assert test.hypothesis.str.contains(r"\bb\d").all()  # the planting reached the split as intended
    report = planted_report
    assert report["task"] == "classification" and report["reference"] == "random"
    assert report["fields"]["text"] == ["premise", "hypothesis"] and report["fields"]["query"] == "hypothesis"
    hard, easy = report["configs"]["ll_split"]["test"], report["configs"]["random"]["test"]
    assert hard["rows"] == easy["rows"] == HELD
    assert hard["ci_high"] < easy["ci_low"]  # intervals that do not overlap
    for entry in (hard, easy):
        assert entry["ci_low"] <= entry["accuracy"] <= entry["ci_high"]
    assert abs(hard["accuracy"] - 0.5) < 0.15  # unseen cues: about chance with two labels
    assert easy["query_only_accuracy"] > 0.75  # the cue is in the hypothesis
    assert easy["relative_error_increase"] is None
    expected = ((1 - hard["accuracy"]) - (1 - easy["accuracy"])) / (1 - easy["accuracy"])
    assert hard["relative_error_increase"] == pytest.approx(expected, abs=2e-4) and expected > 1


def test_the_same_seed_gives_the_same_numbers_and_the_build_agrees_with_the_folder(planted, planted_report):
    folder, rows, configs = planted
    assert probe_release(Released(folder), seed=3) == planted_report
    record = _yaml(folder)["resplit"]
    assert probe_build(rows, configs, record=record, seed=3) == planted_report  # a card's numbers = resplit probe's
    other = probe_release(Released(folder), seed=4, configs=["random"])
    assert list(other["configs"]) == ["random"]
    # another seed shuffles saga's epochs and draws other resamples: close, not the same, numbers
    mine, theirs = other["configs"]["random"]["test"], planted_report["configs"]["random"]["test"]
    assert mine["accuracy"] == pytest.approx(theirs["accuracy"], abs=0.03) and mine != theirs


def test_cli_json_round_trip_and_table(planted, planted_report, capsys):
    folder = planted[0]
    capsys.readouterr()
    assert main(["probe", str(folder), "--json", "--seed", "3", "--no-progress"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed.pop("target") == str(folder)
    assert printed == json.loads(json.dumps(planted_report))
    for splits in printed["configs"].values():  # the contract's names
        for entry in splits.values():
            assert {"accuracy", "ci_low", "ci_high", "query_only_accuracy"} <= set(entry)
    assert main(["probe", str(folder), "--configs", "ll_split,random", "--seed", "3", "--no-progress"]) == 0
    table = capsys.readouterr().out.splitlines()
    entry = planted_report["configs"]["ll_split"]["test"]
    line = next(line for line in table if line.startswith("ll_split ") and " test " in line)
    assert f"{100 * entry['accuracy']:.1f}%" in line and f"{100 * entry['relative_error_increase']:+.1f}%" in line
    assert not any(line.startswith("length ") for line in table)


def test_bad_input_is_one_line(planted, tmp_path, capsys):
    folder = planted[0]
    assert main(["probe", str(folder), "--configs", "nope", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no config 'nope'" in err and "random" in err
    assert main(["probe", str(tmp_path / "missing"), "--no-progress"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["probe", str(folder), "--seed", "-1", "--no-progress"]) == 2
    assert "--seed" in capsys.readouterr().err


def test_card_and_yaml_say_what_the_report_says(planted_report):
    lines = card_lines(planted_report)
    text = "\n".join(lines)
    assert lines[0] == "## Baseline probe" and "sanity check" in text and "Stronger models" in text
    entry = planted_report["configs"]["ll_split"]["test"]
    row = next(line for line in lines if line.startswith("| `ll_split` | test |"))
    assert (f"{100 * entry['accuracy']:.1f}% [{100 * entry['ci_low']:.1f}%, {100 * entry['ci_high']:.1f}%]" in row
            and f"{100 * entry['relative_error_increase']:+.1f}%" in row)
    assert "| `random` | test |" in text and "(reference)" in text
    settings, per_config = yaml_record(planted_report)
    assert settings["seed"] == 3 and settings["reference"] == "random"
    assert per_config["ll_split"]["test"]["accuracy"] == entry["accuracy"]
    yaml.safe_dump({"probe": settings, "configs": per_config})  # plain types only


# ---------------------------------------------------------------------------------------------
# Semantic parsing: nearest-neighbour retrieval on a TMCD release of GeoQuery
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def geoquery_release(shared, tmp_path_factory):
    out = tmp_path_factory.mktemp("probe-geo") / "release"
    assert main(["tmcd", "--source", str(shared / "data/geoquery/geoquery_nqg.tsv"), "--train-size", "440",
                 "--iterations", "200", "--configs", "tmcd,standard", "--seed", "1", "--out", str(out),
                 "--no-progress"]) == 0
    return out


def test_semantic_parsing_gets_exact_match_of_the_nearest_train_program(geoquery_release):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    report = probe_target(str(geoquery_release), work=geoquery_release.parent, seed=0)
    assert report["task"] == "semantic_parsing" and report["reference"] == "standard"
    assert report["fields"]["target"] == "target"
    released = Released(geoquery_release)
    for config in ("tmcd", "standard"):
        train = released.table(config, "train").to_pandas().sort_values("source_id")
        test = released.table(config, "test").to_pandas().sort_values("source_id")
        # independently: dense cosine similarities, the first best train row, programs compared word by word
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"(?u)\b\w+\b", sublinear_tf=True)
        similar = cosine_similarity(vectorizer.fit_transform(train.input).toarray(),
                                    vectorizer.transform(test.input).toarray()).T
        found = train.target.to_numpy()[similar.argmax(axis=1)]
        expected = np.mean([a.split() == b.split() for a, b in zip(found, test.target)])
        entry = report["configs"][config]["test"]
        assert entry["rows"] == len(test) and entry["accuracy"] == pytest.approx(expected, abs=1e-4)
        assert "query_only_accuracy" not in entry
    tmcd, standard = report["configs"]["tmcd"]["test"], report["configs"]["standard"]["test"]
    assert tmcd["accuracy"] < standard["accuracy"]  # new compositions: retrieval finds fewer exact programs
    assert standard["relative_error_increase"] is None and tmcd["relative_error_increase"] > 0


# ---------------------------------------------------------------------------------------------
# Hand-made cases: accuracy, interval, relative error increase, a plain dataset folder
# ---------------------------------------------------------------------------------------------


def test_the_interval_is_the_exact_bootstrap_distributions_percentiles():
    # 14 of 20 right. Resampling 20 rows with replacement, the number right is Binomial(20, 0.7), so the
    # percentile interval is that distribution's 2.5th and 97.5th percentiles divided by 20: 10 and 18
    # (P(X <= 9) = 0.017, P(X <= 10) = 0.048; P(X <= 17) = 0.964, P(X <= 18) = 0.992).
    outcomes = np.array([1] * 14 + [0] * 6)
    result = accuracy_interval(outcomes, rng=np.random.default_rng(0), resamples=20_000)
    assert result == {"accuracy": 0.7, "ci_low": 0.5, "ci_high": 0.9}
    all_right = accuracy_interval(np.ones(5), rng=np.random.default_rng(0))
    assert all_right == {"accuracy": 1.0, "ci_low": 1.0, "ci_high": 1.0}
    assert accuracy_interval([], rng=np.random.default_rng(0))["accuracy"] is None
    assert relative_error_increase(0.5, 0.8) == pytest.approx(1.5)  # errors 0.5 against 0.2
    assert relative_error_increase(0.8, 0.8) == 0 and relative_error_increase(0.5, 1.0) is None


def _tables(train, test):
    frame = lambda rows: pa.Table.from_pylist([{"source_id": i, "premise": p, "hypothesis": h, "label": y}  # noqa: E731
                                               for i, (p, h, y) in enumerate(rows)])
    return {"train": frame(train), "test": frame(test)}


def test_a_tiny_classification_case_counts_right_answers():
    train = [("a cat sits", "it is good", "pos"), ("a dog runs", "it is bad", "neg")] * 6
    test = [("a cat sits", "good", "pos"), ("a dog runs", "bad", "neg"), ("a cow", "very good", "pos"),
            ("a cow", "very bad", "pos")]  # the last is labelled against its cue: wrong by construction
    record = {"fields": {"task": "classification", "text": ["premise", "hypothesis"], "query": "hypothesis",
                         "label": "label"}}
    report = probe({"random": _tables(train, test)}, record=record, seed=0)
    entry = report["configs"]["random"]["test"]
    assert entry["rows"] == 4 and entry["query_only_accuracy"] == 0.75
    # the premises "a cat sits" / "a dog runs" repeat with their labels in train and decide the first two;
    # the last two have an unseen premise and the hypothesis's cue decides
    assert entry["accuracy"] == 0.75 and entry["relative_error_increase"] is None


def test_a_plain_dataset_folder_is_probed_with_guessed_fields(tmp_path, hf_cache):
    rng = np.random.default_rng(0)
    for split, n in (("train", 60), ("test", 20)):
        labels = rng.integers(2, size=n)
        frame = pd.DataFrame({"question": [f"is it {'yes' if y else 'no'} {rng.integers(9)}" for y in labels],
                              "passage": [f"text {rng.integers(50)}" for _ in labels], "label": labels})
        frame.to_json(tmp_path / f"{split}.jsonl", orient="records", lines=True)
    report = probe_target(str(tmp_path), work=hf_cache, seed=0)
    assert report["task"] == "classification" and report["fields"]["label"] == "label"
    assert report["fields"]["query"] == "question" and report["reference"] is None
    entry = report["configs"]["default"]["test"]
    assert entry["rows"] == 20 and entry["query_only_accuracy"] == 1.0 and entry["relative_error_increase"] is None


def test_rows_without_anything_to_predict_are_skipped_with_a_reason():
    table = pa.table({"source_id": [0, 1, 2], "sentence": ["one two", "three four", "five six"]})
    report = probe({"c": {"train": table, "test": table}}, seed=0)
    assert report["task"] is None and report["configs"] == {} and "no label" in report["skipped"]
    assert card_lines(report)[2].startswith("No baseline was run: ")
    behavioural = probe({"c": {"train": table, "test": table}}, seed=0,
                        record={"fields": {"task": "behavioural", "text": ["sentence"]}})
    assert "passed" in behavioural["skipped"]
    with pytest.raises(InvalidParameterError, match="no config with a train split"):
        probe({"c": {"test": table}}, seed=0)


def test_a_curriculum_release_is_probed_config_by_config_with_its_own_fields(shared, tmp_path, capsys):
    """CURRICULUM's hypothesis-only configs have no premise: ``--probe`` in the build and ``resplit probe`` on the
    release read each config with the fields it has (they failed with ``KeyError: premise``)."""
    out = tmp_path / "curriculum"
    assert main(["curriculum", "--source", str(shared / "data" / "curriculum"), "--phenomena", "verbnet", "--limit",
                 "150", "--no-inoculation", "--probe", "--out", str(out), "--no-progress"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    recorded = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])["resplit"]["configs"]
    assert recorded["verbnet_hypothesis_only"]["probe"]["validation"]["rows"] == 150
    assert main(["probe", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["configs"]) == {"verbnet", "verbnet_hypothesis_only"} and not report.get("skipped_configs")
    only = report["configs"]["verbnet_hypothesis_only"]["validation"]
    assert only["accuracy"] == only["query_only_accuracy"]  # the hypothesis is its whole input
    for config in ("verbnet", "verbnet_hypothesis_only"):  # the card's numbers are the command's
        assert recorded[config]["probe"]["validation"]["accuracy"] == report["configs"][config]["validation"]["accuracy"]
