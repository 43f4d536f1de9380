"""Diagnostics against random splits (``split_builders.evidence.diagnostics``, ``resplit diagnose``).

Real data from ``../shared``: SNLI's dev file built with given scores in which the least likely rows were
planted to carry rare words (so ``ll_split``'s test set holds them and ``random``'s does not), and the
first 600 queries of Spider's dev set split by hand (a random split and one whose test set is the extra-hard
queries). The statistics are checked against counts made independently from the released rows (a regular
expression, ``wordfreq`` and ``pyphen`` called word by word; atom and compound divergences from
``signals.programs.divergence``'s Counter-based functions), the random splits against their definition
(sizes per class, whole groups), and ``resplit diagnose`` against the build, a plain folder and the Hub."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from split_builders.api import Fields
from split_builders.cli import main
from split_builders.evidence.diagnostics import diagnose, null_assignments
from split_builders.evidence.diagnostics_card import VIEW, card_lines, figures, yaml_record
from split_builders.evidence.inputs import EvidenceInput
from split_builders.evidence.pools import Part
from split_builders.release.folder import Released


def diagnose_release(released, **settings):
    return VIEW.compute(EvidenceInput.from_release(released), **settings)


def diagnose_build(rows, configs, *, record, **settings):
    return VIEW.compute(EvidenceInput.from_build(rows, configs, record=record), **settings)

ROWS = 3000  # the first rows of SNLI's dev file
PLANTED = ("zyzzyva", "quokka", "axolotl")  # Zipf frequencies 0, 1.5, 2.0: rare words
NULLS = 200
SPIDER_ROWS = 600  # the first rows of Spider's dev set (every hardness category occurs)


def _parquet(folder, config, split) -> pd.DataFrame:
    (path,) = (Path(folder) / config).glob(f"{split}-*.parquet")
    return pd.read_parquet(path)


@pytest.fixture(scope="module")
def planted(shared, tmp_path_factory):
    """A likelihood build of SNLI's first 3,000 dev rows with given scores; the 12% least likely rows
    carry three rare words at the end of their hypothesis. Returns the release folder and the build."""
    from split_builders.builder import build

    root = tmp_path_factory.mktemp("diagnostics")
    with gzip.open(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        rows = [json.loads(next(handle)) for _ in range(ROWS)]
    scores = np.random.default_rng(0).normal(size=ROWS)
    for row in np.argsort(scores)[: int(0.12 * ROWS)]:
        rows[row]["sentence2"] = rows[row]["sentence2"].rstrip(".") + " near the " + " and ".join(PLANTED) + "."
    source = root / "snli_planted.jsonl.gz"
    with gzip.open(source, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows)
    np.save(root / "scores.npy", scores)
    result = build("likelihood", source=str(source), scores=str(root / "scores.npy"), validation_size=300,
                   test_size=300, out=str(root / "release"), progress=False, log=lambda *a: None)
    return root / "release", result


@pytest.fixture(scope="module")
def planted_report(planted):
    return diagnose_release(Released(planted[0]), null_splits=NULLS, seed=0)


def _words(text: str) -> list:
    return re.findall(r"[^\W_]+(?:['’]+[^\W_]+)*", text.lower())


def test_the_planted_rare_words_put_ll_split_test_above_the_random_splits(planted_report):
    from wordfreq import zipf_frequency

    assert all(zipf_frequency(word, "en") < 3 for word in PLANTED)
    assert planted_report["fields"]["query"] == "hypothesis" and planted_report["task"] == "classification"
    ll = planted_report["configs"]["ll_split"]["test"]["rare_word_fraction"]
    assert ll["value"] > ll["null_p95"] and ll["percentile"] > 95
    random = planted_report["configs"]["random"]["test"]["rare_word_fraction"]
    assert random["null_p05"] <= random["value"] <= random["null_p95"] and 5 <= random["percentile"] <= 95
    # the method's own signal: ll_split holds out the least likely rows, so its test score is below every random split
    assert planted_report["configs"]["ll_split"]["test"]["score"]["percentile"] == 0
    assert planted_report["configs"]["ll_split_reverse"]["test"]["score"]["percentile"] == 100


def test_text_statistics_equal_an_independent_count_of_the_released_rows(planted, planted_report):
    import pyphen
    from wordfreq import zipf_frequency

    train, test = (_parquet(planted[0], "ll_split", s)["hypothesis"].tolist() for s in ("train", "test"))
    words = [_words(t) for t in test]
    tokens = [w for ws in words for w in ws]
    seen = {w for t in train for w in _words(t)}
    dictionary = pyphen.Pyphen(lang="en_US")
    grades = []
    for text, ws in zip(test, words):
        if ws:
            sentences = max(1, len(re.findall(r"[.!?]+", text)))
            syllables = sum(len(dictionary.positions(w)) + 1 for w in ws)
            grades.append(0.39 * len(ws) / sentences + 11.8 * syllables / len(ws) - 15.59)
    entry = planted_report["configs"]["ll_split"]["test"]
    rare = sum(any(c.isalpha() for c in w) and zipf_frequency(w, "en") < 3 for w in tokens)
    assert entry["rare_word_fraction"]["value"] == pytest.approx(rare / len(tokens), abs=1e-6)
    assert entry["length"]["value"] == pytest.approx(len(tokens) / len(test), abs=1e-6)
    assert entry["unseen_word_rate"]["value"] == pytest.approx(sum(w not in seen for w in tokens) / len(tokens),
                                                               abs=1e-6)
    assert entry["fk_grade"]["value"] == pytest.approx(np.mean(grades), abs=1e-6)
    assert entry["unseen_word_rate"]["train"] == 0.0
    assert set(planted_report["statistics"]) == {"length", "rare_word_fraction", "unseen_word_rate", "fk_grade",
                                                 "score"}


def test_configs_of_the_same_rows_and_sizes_share_one_null_distribution(planted_report):
    (name, null), = planted_report["null_distributions"].items()  # every config: the same rows, balanced, 300/300
    assert sorted(null["configs"]) == sorted(planted_report["configs"])
    values = null["splits"]["test"]["rare_word_fraction"]
    assert len(values) == NULLS and len(set(values)) > 20
    entry = planted_report["configs"]["random"]["test"]["rare_word_fraction"]
    assert entry["null_p05"] == pytest.approx(np.percentile(values, 5), abs=1e-6)
    below = sum(v < entry["value"] for v in values) + 0.5 * sum(v == entry["value"] for v in values)
    assert entry["percentile"] == pytest.approx(100 * below / NULLS, abs=0.01)


def test_resplit_diagnose_json_gives_the_numbers_of_the_build(planted, capsys):
    from split_builders.builder import declared_fields
    from split_builders.release.provenance import provenance

    out, result = planted
    method = result.method
    rows = method.rows(result.loaded, result.signal, result.configs)
    record = provenance(method, result.options, result.loaded.info, result.signal)
    record["fields"] = declared_fields(method, result.loaded, result.signal, result.options).record()
    built = diagnose_build(rows, result.configs, record=record, null_splits=50, seed=3)

    def cli(*extra):
        capsys.readouterr()
        args = ["diagnose", str(out), "--null-splits", "50", "--seed", "3", "--json", "--no-progress", *extra]
        assert main(args) == 0
        return json.loads(capsys.readouterr().out)

    first, second = cli(), cli()
    assert first == second  # deterministic
    assert first["configs"] == built["configs"] and first["null_distributions"] == built["null_distributions"]
    assert first["null_splits"] == 50 and first["seed"] == 3 and first["target"] == str(out)
    other = diagnose_release(Released(out), null_splits=50, seed=4)
    assert other["null_distributions"] != first["null_distributions"]
    # the terminal view names every config and says what the numbers say
    capsys.readouterr()
    assert main(["diagnose", str(out), "--null-splits", "20", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "rare_word_fraction" in text and "ll_split test:" in text


def test_the_card_section_figures_and_yaml(planted_report, tmp_path):
    from split_builders.release.card import render_figure

    lines = card_lines(planted_report)
    assert lines[0] == "## Diagnostics against random splits"
    sentence = next(line for line in lines if line.startswith("`ll_split` test:"))
    assert "rare words" in sentence and f"of {NULLS} random splits" in sentence
    assert any(line.startswith("`random` test:") for line in lines)
    shown = figures(planted_report)
    assert [f.path for f in shown] == [f"figures/diagnostics_{s}.png" for s in planted_report["statistics"]]
    panel = shown[1].panels[-1]
    assert set(panel.markers) == set(planted_report["configs"]) and len(panel.series) == 1
    render_figure(tmp_path / "rare.png", shown[1])
    assert (tmp_path / "rare.png").stat().st_size > 1000
    settings, per_config = yaml_record(planted_report)
    assert settings["null_splits"] == NULLS and settings["seed"] == 0
    assert per_config["ll_split"]["test"]["rare_word_fraction"] == planted_report["configs"]["ll_split"]["test"][
        "rare_word_fraction"]


# ---------------------------------------------------------------------------------------------
# Random splits: drawn as the config's baseline draws them
# ---------------------------------------------------------------------------------------------


def test_stratified_random_splits_keep_each_class_count_per_split():
    strata = np.repeat([0, 1, 2], [50, 30, 20])
    counts = {1: np.array([5, 3, 2]), 2: np.array([10, 6, 4])}
    drawn = null_assignments(strata, counts, count=40, rng=np.random.default_rng(1))
    assert drawn.shape == (100, 40) and drawn.dtype == np.int8
    for j in range(40):
        for code in (1, 2):
            assert np.bincount(strata[drawn[:, j] == code], minlength=3).tolist() == counts[code].tolist()
    assert len({drawn[:, j].tobytes() for j in range(40)}) == 40
    again = null_assignments(strata, counts, count=40, rng=np.random.default_rng(1))
    assert np.array_equal(drawn, again)


def test_grouped_random_splits_keep_groups_whole():
    groups = np.repeat(np.arange(40), np.random.default_rng(0).integers(1, 6, 40))
    n = groups.size
    counts = {1: np.array([10]), 2: np.array([15])}
    drawn = null_assignments(np.zeros(n, dtype=np.int64), counts, groups=groups, count=30,
                             rng=np.random.default_rng(2))
    for j in range(30):
        for g in range(40):
            assert len(set(drawn[groups == g, j].tolist())) == 1  # no group straddles two splits
        assert 15 <= (drawn[:, j] == 2).sum() < 15 + 5 and 10 <= (drawn[:, j] == 1).sum() < 10 + 5


def test_stratified_random_splits_follow_their_definition_draw_by_draw():
    """Each random split is the documented draw: one permutation of the rows from ``rng``, stably sorted by
    stratum; a stratum's first ``counts[2]`` rows to test, its next ``counts[1]`` to validation (one
    stratum: the permutation alone). Written here one split at a time, row by row."""
    rng = np.random.default_rng(5)
    for strata in (rng.integers(0, 3, 257), np.zeros(120, dtype=np.int64)):
        classes = int(strata.max()) + 1
        counts = {1: np.array([int(0.2 * c) for c in np.bincount(strata)]),
                  2: np.array([int(0.3 * c) for c in np.bincount(strata)])}
        drawn = null_assignments(strata, counts, count=7, rng=np.random.default_rng(11))
        reference_rng = np.random.default_rng(11)
        for j in range(7):
            shuffled = reference_rng.permutation(strata.size).tolist()
            expected = np.zeros(strata.size, dtype=np.int8)
            for c in range(classes):
                mine = [row for row in shuffled if strata[row] == c]
                for position, row in enumerate(mine):
                    expected[row] = 2 if position < counts[2][c] else 1 if position < counts[2][c] + counts[1][c] else 0
            assert np.array_equal(drawn[:, j], expected), j


def test_statistics_of_many_splits_equal_a_split_by_split_count():
    """``evaluate`` over a block of assignments (mask products; unseen tokens from entry counts) equals each
    split's statistics counted on its own in plain Python, with masks reused from a block of another size."""
    from collections import Counter

    from scipy import sparse

    from split_builders.evidence.diagnostics import Masks, RowStatistics, evaluate, select

    rng = np.random.default_rng(3)
    n, vocabulary = 90, 12
    tokens = [Counter(rng.integers(0, vocabulary, rng.integers(0, 6)).tolist()) for _ in range(n)]
    ids = rng.integers(0, 15, n)
    matrix = sparse.csr_matrix([[row.get(v, 0) for v in range(vocabulary)] for row in tokens], dtype=np.float64)
    categories = sparse.csr_matrix((np.ones(n), (np.arange(n), ids)), shape=(n, 15))
    words = np.array([sum(row.values()) for row in tokens], dtype=np.float64)
    score = rng.normal(size=n)
    stats = RowStatistics(ratios={"length": (words, np.ones(n)), "score": (score, np.ones(n))},
                          unseen={"unseen_word_rate": (matrix, words, "tokens"),
                                  "unseen_id": (categories, np.ones(n), "rows")},
                          order=["length", "score", "unseen_word_rate", "unseen_id"])
    rows = rng.permutation(n)[:70]  # a config's rows among the distinct ones
    masks = Masks()
    for block in (5, 3):
        assignment = rng.integers(0, 3, (rows.size, block)).astype(np.int8)
        got = evaluate(select(stats, rows), assignment, ("validation", "test"), masks)
        for j in range(block):
            train = [r for r, code in zip(rows.tolist(), assignment[:, j]) if code == 0]
            seen_words = {w for r in train for w in tokens[r]}
            seen_ids = {ids[r] for r in train}
            for split, code in (("validation", 1), ("test", 2)):
                held = [r for r, c in zip(rows.tolist(), assignment[:, j]) if c == code]
                total = sum(words[r] for r in held)
                assert got[split]["length"][j] == pytest.approx(total / len(held) if held else np.nan, nan_ok=True)
                assert got[split]["score"][j] == pytest.approx(np.mean([score[r] for r in held]) if held else np.nan,
                                                               nan_ok=True)
                unseen = sum(k for r in held for w, k in tokens[r].items() if w not in seen_words)
                assert got[split]["unseen_word_rate"][j] == pytest.approx(unseen / total if total else np.nan,
                                                                          nan_ok=True)
                new_ids = sum(ids[r] not in seen_ids for r in held)
                assert got[split]["unseen_id"][j] == pytest.approx(new_ids / len(held) if held else np.nan,
                                                                   nan_ok=True)


# ---------------------------------------------------------------------------------------------
# Semantic parsing: Spider's dev set, programs and hardness
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spider(shared):
    with gzip.open(shared / "data" / "spider" / "dev.json.gz", "rt", encoding="utf-8") as handle:
        dev = json.load(handle)
    dev = dev[:SPIDER_ROWS]
    table = pa.table({"question": [e["question"] for e in dev], "query": [e["query"] for e in dev],
                      "source_id": np.arange(len(dev), dtype=np.int64)})
    return table


def test_spider_program_statistics(spider):
    from split_builders.evidence.sql_hardness import hardness_by_row
    from split_builders.signals.programs import divergence
    from split_builders.signals.programs.atoms import atoms_by_row
    from split_builders.signals.programs.compounds import compounds_by_row
    from split_builders.splitters.compositional import program_template

    programs = spider.column("query").to_pylist()
    categories = np.asarray(hardness_by_row(programs), dtype=object)
    n = spider.num_rows
    extra = np.flatnonzero(categories == "extra")
    order = np.random.default_rng(0).permutation(n)
    configs = {"random": {"train": np.sort(order[120:]), "test": np.sort(order[:120])},
               "extra_test": {"train": np.flatnonzero(categories != "extra"), "test": extra}}
    parts = {c: {s: Part(spider, rows) for s, rows in splits.items()} for c, splits in configs.items()}
    report = diagnose(parts, null_splits=50, seed=0)  # a plain dataset: no record, the SQL column is the target
    assert report["fields"]["query"] == "question" and report["fields"]["target"] == "query"
    assert report["fields"]["target_language"] == "sql" and report["task"] == "semantic_parsing"
    hard = report["configs"]["extra_test"]["test"]
    assert hard["hardness_extra"]["value"] == 1.0 and hard["hardness_extra"]["percentile"] == 100
    assert hard["hardness_easy"]["value"] == 0.0 and hard["hardness_easy"]["percentile"] == 0
    atoms = atoms_by_row(programs, "sql").atoms
    compounds = compounds_by_row(programs, "sql")
    for config, splits in configs.items():
        entry, train, test = report["configs"][config]["test"], splits["train"], splits["test"]
        assert entry["atom_divergence"]["value"] == pytest.approx(divergence.atom_divergence(train, test, atoms),
                                                                  abs=1e-6)
        assert entry["compound_divergence"]["value"] == pytest.approx(
            divergence.compound_divergence(train, test, compounds), abs=1e-6)
        assert entry["unseen_compound_share"]["value"] == pytest.approx(
            divergence.novel_compound_share(train, test, compounds), abs=1e-6)
        seen = {program_template(programs[r], "sql") for r in train}
        unseen = np.mean([program_template(programs[r], "sql") not in seen for r in test])
        assert entry["unseen_template_share"]["value"] == pytest.approx(unseen, abs=1e-6)
        share = np.mean(categories[test] == "hard")
        assert entry["hardness_hard"]["value"] == pytest.approx(share, abs=1e-6)
    # holding out every extra-hard query holds out compounds no other query has
    assert hard["unseen_compound_share"]["percentile"] == 100


def test_behavioural_configs_count_what_they_hold_out():
    functionality = np.repeat(["f0", "f1", "f2", "f3"], 10)
    table = pa.table({"examples": [[f"case {i} of {f}"] for i, f in enumerate(functionality)],
                      "functionality": functionality.tolist(),
                      "capability": np.repeat(["Vocabulary", "Vocabulary", "Negation", "Negation"], 10).tolist(),
                      "test_type": np.repeat(["MFT", "INV", "MFT", "DIR"], 10).tolist(),
                      "functionality_id": np.repeat(np.arange(4), 10), "source_id": np.arange(40, dtype=np.int64)})
    rows = np.arange(40)
    held = {"train": rows[functionality != "f3"][::2], "validation": rows[functionality != "f3"][1::2],
            "test": rows[functionality == "f3"]}
    record = {"method": "behavioural",
              "fields": Fields("behavioural", text=("examples",), query="examples", label="labels").record()}
    report = diagnose({"func_3": {s: Part(table, r) for s, r in held.items()}}, record=record, null_splits=20)
    assert report["held_out"]["func_3"]["test"] == {"functionality": {"held_out": 1, "of": 1},
                                                    "capability": {"held_out": 0, "of": 1},
                                                    "test_type": {"held_out": 1, "of": 1}}
    assert report["held_out"]["func_3"]["validation"]["functionality"] == {"held_out": 0, "of": 3}
    assert "functionality_id" not in report["statistics"]  # a behavioural signal is a category, not a number
    assert any("Held out from train" in line for line in card_lines(report))


def test_bad_input_is_one_line(tmp_path, capsys):
    for args, expected in (([str(tmp_path), "--null-splits", "0"], "--null-splits"),
                           ([str(tmp_path), "--seed", "-1"], "--seed"),
                           ([str(tmp_path / "missing")], "does not exist")):
        capsys.readouterr()
        assert main(["diagnose", *args, "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err


def test_grouped_configs_are_set_against_grouped_random_splits():
    """Each query is one made-up word shared by the three rows of its group: a random split that keeps
    groups whole never has a test word in train (unseen-word rate 1), one that does not almost always does."""
    words = [f"blorf{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(200)]
    groups = np.repeat(np.arange(200), 3)
    table = pa.table({"text": [words[g] for g in groups], "label": (groups % 2).tolist(),
                      "source_id": np.arange(600, dtype=np.int64)})
    order = np.random.default_rng(0).permutation(200)
    rows = lambda chosen: np.flatnonzero(np.isin(groups, chosen))  # noqa: E731
    splits = {"train": rows(order[60:]), "validation": rows(order[:30]), "test": rows(order[30:60])}
    parts = {name: {s: Part(table, r) for s, r in splits.items()} for name in ("grouped", "plain")}
    record = {"fields": Fields("classification", text=("text",), query="text", label="label").record()}
    report = diagnose(parts, record=record, parameters={"grouped": {"grouped_by": "text"}, "plain": {}},
                      null_splits=30, seed=0)
    grouped = report["null_distributions"]["grouped"]["splits"]["test"]["unseen_word_rate"]
    plain = report["null_distributions"]["plain"]["splits"]["test"]["unseen_word_rate"]
    assert report["null_distributions"]["grouped"]["configs"] == ["grouped"]
    assert grouped == [1.0] * 30 and max(plain) < 0.2
    assert report["configs"]["grouped"]["test"]["unseen_word_rate"]["value"] == 1.0


def test_a_plain_dataset_folder_and_a_hub_release_at_a_revision(planted, hub, tmp_path, capsys):
    """A folder of train / test jsonl files (Spider-like: the SQL column is found as the program), and the
    planted release pushed to a local server speaking the Hub's API, diagnosed at its tag in a fresh process."""
    import subprocess
    import sys

    from conftest import REPO, hub_env

    folder = tmp_path / "plain"
    folder.mkdir()
    for split, count in (("train", 40), ("test", 10)):
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as handle:
            for i in range(count):
                handle.write(json.dumps({"question": f"How many singers are older than {i}?",
                                         "query": f"SELECT count(*) FROM singer WHERE age > {i}"}) + "\n")
    capsys.readouterr()
    assert main(["diagnose", str(folder), "--null-splits", "10", "--json", "--no-progress"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["fields"]["target"] == "query" and plain["configs"]["default"]["test"]["hardness_easy"]["value"] == 1.0

    env = {**hub_env(hub, tmp_path), "PYTHONPATH": str(REPO)}
    def run(*args):
        return subprocess.run([sys.executable, "-m", "split_builders.cli", *map(str, args)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)

    pushed = run("push", planted[0], "org/snli-diagnose", "--version", "1.0.0")
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    remote = run("diagnose", "org/snli-diagnose", "--revision", "v1.0.0", "--null-splits", "20", "--json",
                 "--no-progress")
    assert remote.returncode == 0, remote.stderr[-2000:]
    remote = json.loads(remote.stdout)
    local = diagnose_release(Released(planted[0]), null_splits=20, seed=0)
    assert remote["revision"] == "v1.0.0" and remote["configs"] == local["configs"]
