"""Likelihood Splits: nothing silent, nothing lost, and the whole-column paths.

Duplicates and ``--dedupe``, ``--device cuda`` without a GPU, ``torchrun`` on a CPU without
``--device cpu``, short errors, filter counts of the rows used with ``--limit``, and the Arrow /
batched paths (readers, word counts, card statistics) against the row-by-row ones on real data.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from split_builders.cli import main
from split_builders.signals.lengths import quantile_buckets, word_lengths

REPO = Path(__file__).resolve().parents[1]
TOKENIZER = None


def _nltk_count(text: str) -> int:
    global TOKENIZER
    if TOKENIZER is None:
        from nltk.tokenize import NLTKWordTokenizer

        TOKENIZER = NLTKWordTokenizer()
    return len(TOKENIZER.tokenize(text))


def _card(out: Path):
    text = (out / "README.md").read_text()
    return yaml.safe_load(text.split("---")[1]), text


def _parquet(out: Path, config: str, split: str) -> pd.DataFrame:
    (path,) = (out / config).glob(f"{split}-*.parquet")
    return pd.read_parquet(path)


# ---------------------------------------------------------------------------------------------
# Duplicates
# ---------------------------------------------------------------------------------------------


@pytest.fixture()
def duplicated_table(tmp_path) -> tuple[Path, Path]:
    """60 distinct NLI rows, then 20 exact copies of rows 0..19 (source_id 60..79) and one row that
    differs from row 0 only in its label; scores make the copies the least likely."""
    rng = np.random.default_rng(0)
    rows = [{"premise": f"premise number {i} .", "hypothesis": f"a hypothesis {i} here .",
             "gold_label": ["entailment", "neutral", "contradiction"][i % 3]} for i in range(60)]
    rows += [dict(rows[i]) for i in range(20)]
    rows.append({**rows[0], "gold_label": "neutral"})
    path = tmp_path / "dup.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    scores = rng.normal(size=len(rows))
    scores[60:80] -= 100  # the copies are the least likely: ll_split holds them out
    np.save(tmp_path / "dup.npy", scores)
    return path, tmp_path / "dup.npy"


def _build(source, scores, out, *extra):
    args = ["likelihood", "--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis",
            "--label-field", "gold_label", "--scores", str(scores), "--dev-size", "9", "--test-size", "9",
            "--out", str(out), "--no-progress", *extra]
    assert main(args) == 0


def test_the_card_counts_evaluation_rows_with_a_duplicate_in_train(duplicated_table, tmp_path):
    source, scores = duplicated_table
    out = tmp_path / "out"
    _build(source, scores, out)
    _, text = _card(out)
    assert "Exact duplicates: 20 row(s) repeat an earlier row" in text
    # Count by hand from the released rows: evaluation rows whose (premise, hypothesis, label) is in train
    # (the gold_label is released as the ClassLabel `label`: its class ids are one per label).
    key = lambda frame: set(zip(frame.premise, frame.hypothesis, frame.label))  # noqa: E731
    train = _parquet(out, "ll_split", "train")
    evaluation = pd.concat([_parquet(out, "ll_split", s) for s in ("validation", "test")])
    expected = sum(k in key(train) for k in zip(evaluation.premise, evaluation.hypothesis, evaluation.label))
    assert expected > 0
    row = next(line for line in text.splitlines() if line.startswith("| `ll_split` |"))
    assert row.split("|")[5].strip() == str(expected)


def test_dedupe_keeps_the_first_source_id_of_each_duplicate(duplicated_table, tmp_path):
    source, scores = duplicated_table
    out = tmp_path / "out"
    _build(source, scores, out, "--dedupe")
    metadata, text = _card(out)
    ids = np.sort(np.concatenate([_parquet(out, "ll_split", s).source_id.to_numpy()
                                  for s in ("train", "validation", "test")]))
    # The copies (60..79) are gone, the originals and the row with another label stay.
    np.testing.assert_array_equal(ids, np.r_[np.arange(60), 80])
    assert metadata["resplit"]["source"]["filters"]["exact duplicate (--dedupe)"] == 20
    assert "Exact duplicates: 0 row(s)" in text
    # The kept rows keep their own scores (given by source_id, not by position).
    released = pd.concat([_parquet(out, "ll_split", s) for s in ("train", "validation", "test")])
    np.testing.assert_array_equal(released.sort_values("source_id").score.to_numpy(),
                                  np.load(scores)[np.r_[np.arange(60), 80]])


# ---------------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------------


def test_device_cuda_without_a_gpu_is_refused_before_anything_is_read(tmp_path, capsys, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    import loading_scripts

    def no_reading(*args, **kwargs):
        raise AssertionError("the source was read")

    monkeypatch.setattr(loading_scripts, "load_source", no_reading)
    code = main(["likelihood", "--device", "cuda", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "out").exists()
    assert len(err.splitlines()) == 1 and "no CUDA GPU" in err and "--device cpu" in err


def test_too_many_length_buckets_is_one_short_line(tmp_path, capsys):
    code = main(["likelihood", "--length-buckets", "1000", "--out", str(tmp_path / "out"), "--no-progress",
                 "--source", "snli-sample", "--scores", str(_sample_scores(tmp_path))])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not (tmp_path / "out").exists()
    assert len(err.splitlines()) == 1 and len(err) < 300, err
    assert "1000" in err and "at most" in err


def test_max_buckets_is_the_largest_count_that_works():
    lengths = np.random.default_rng(3).integers(1, 12, size=500)
    message = ""
    try:
        quantile_buckets(lengths, 200)
    except Exception as error:  # noqa: BLE001 - the message is what is tested
        message = str(error)
    most = int(message.split("at most ")[1].split()[0])
    quantile_buckets(lengths, most)  # works
    for more in range(most + 1, 200):
        with pytest.raises(Exception, match="repeat"):
            quantile_buckets(lengths, more)


def _sample_scores(tmp_path) -> Path:
    from loading_scripts import load_source

    src = load_source("snli-sample")
    path = tmp_path / "sample.npy"
    np.save(path, np.random.default_rng(0).normal(size=len(src) + sum(src.filtered.values())))
    return path


# ---------------------------------------------------------------------------------------------
# What the card claims about the rows used
# ---------------------------------------------------------------------------------------------


def test_limit_reports_the_filter_counts_of_the_rows_used(tmp_path):
    from loading_scripts import load_source

    full = load_source("snli-sample")
    ids = full.source_ids
    limit = 100  # the case: one row was dropped before the 100th kept row, 36 in the whole file
    # Dropped rows among the input lines up to the last kept row.
    expected = int(ids[limit - 1] + 1 - limit)
    assert expected == 1 and full.filtered["no gold label"] == 36
    out = tmp_path / "out"
    assert main(["likelihood", "--limit", str(limit), "--scores", str(_sample_scores(tmp_path)), "--dev-size", "9",
                 "--test-size", "9", "--out", str(out), "--no-progress"]) == 0
    metadata, text = _card(out)
    assert metadata["resplit"]["source"]["filters"]["no gold label"] == expected
    assert f"no gold label: {expected}" in text


def _snli_line(premise, hypothesis, label, pair):
    return json.dumps({"sentence1": premise, "sentence2": hypothesis, "gold_label": label, "pairID": pair})


def test_snli_filter_reasons_and_limit_counts(tmp_path):
    """Every reason of the paper's filter, in its order, and the counts of ``head``."""
    from loading_scripts import snli

    lines = [_snli_line("A man.", "He sleeps.", "neutral", "a"),
             _snli_line("A man.", "He sleeps.", "-", "b"),
             _snli_line("  Cannot see picture to describe. ", "Any.", "entailment", "c"),
             _snli_line("A dog.", " \u3000 ", "contradiction", "d"),  # whitespace only, not ASCII
             _snli_line("Cannot see picture to describe. Really.", "Fine.", "entailment", "e"),  # kept
             _snli_line("A cat.", "", "-", "f"),  # no gold label comes first
             _snli_line("A cat.", "It purrs.", "entailment", "g")]
    path = tmp_path / "snli.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    src = snli.from_jsonl(path)
    assert src.source_ids.tolist() == [0, 4, 6]
    assert src.filtered == {"no gold label": 2, "placeholder premise": 1, "empty hypothesis": 1}
    assert src.texts("pair_id") == ["a", "e", "g"]
    src.head(2)
    assert src.source_ids.tolist() == [0, 4]
    assert src.filtered == {"no gold label": 1, "placeholder premise": 1, "empty hypothesis": 1}


def _old_module(name: str):
    """``loading_scripts/<name>.py`` as it was before the whole-column readers (row by row)."""
    old = subprocess.run(["git", "-C", str(REPO), "show", f"b4b9350:loading_scripts/{name}.py"],
                         capture_output=True, text=True)
    if old.returncode:
        pytest.skip("the repository's history is not available")
    module = types.ModuleType(f"old_{name}")
    exec(compile(old.stdout, f"old_{name}.py", "exec"), module.__dict__)  # noqa: S102 - our own code
    return module


@pytest.mark.parametrize("file", ["snli/snli_1.0_dev.jsonl.gz", "snli/snli_1.0_test.jsonl.gz",
                                  "boolq/dev.jsonl.gz"])
def test_whole_column_readers_give_the_rows_of_the_row_by_row_ones(shared, file):
    from loading_scripts import boolq, snli
    from loading_scripts.source import content_sha256

    name = "snli" if file.startswith("snli") else "boolq"
    new, old = (snli, boolq)[name == "boolq"], _old_module(name)
    a, b = old.from_jsonl(shared / "data" / file), new.from_jsonl(shared / "data" / file)
    assert a.dataset.features == b.dataset.features
    assert content_sha256(a.dataset) == content_sha256(b.dataset)
    assert a.filtered == b.filtered
    assert a.labels() == b.labels() and list(a.dataset["source_id"]) == b.source_ids.tolist()


def test_fast_build_gives_the_same_files_as_the_row_by_row_card(shared, tmp_path, monkeypatch):
    """The whole-column card statistics and rows give the release the per-row code gave: data files
    byte-identical and the same statistics (the old ``_per_split`` indexed a list per row)."""
    from split_builders.methods import likelihood

    source = shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz"
    n_rows = 10000
    np.save(tmp_path / "s.npy", np.random.default_rng(1).normal(size=n_rows))
    args = ["likelihood", "--source", str(source), "--scores", str(tmp_path / "s.npy"), "--length-buckets", "4",
            "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "fast")]) == 0

    def per_row(config, values, data):
        from split_builders.api import SPLITS

        parts = {}
        for split in SPLITS:
            rows = np.asarray(config.indices.get(split, ()), dtype=np.int64)
            parts[split] = {"signal": values[rows], "length": data.lengths[rows],
                            "labels": None if data.labels is None else [data.labels[i] for i in rows]}
        return parts

    from split_builders.methods import likelihood_card

    for module in (likelihood, likelihood_card):  # the build's figures and the card's summaries
        monkeypatch.setattr(module, "per_split", per_row)
    from split_builders.signals import lengths

    monkeypatch.setattr(lengths, "word_lengths", lambda texts: np.array([_nltk_count(t) for t in texts]))
    assert main([*args, "--out", str(tmp_path / "slow")]) == 0
    fast = {p.relative_to(tmp_path / "fast"): p.read_bytes() for p in (tmp_path / "fast").rglob("*.parquet")}
    slow = {p.relative_to(tmp_path / "slow"): p.read_bytes() for p in (tmp_path / "slow").rglob("*.parquet")}
    assert fast == slow and len(fast) == 15
    assert (tmp_path / "fast" / "README.md").read_text() == (tmp_path / "slow" / "README.md").read_text()


# ---------------------------------------------------------------------------------------------
# Word lengths
# ---------------------------------------------------------------------------------------------


def _real_texts(shared) -> dict:
    from loading_scripts import load_source
    from loading_scripts.curriculum import read_curriculum

    texts = {}
    for file in ("snli/snli_1.0_dev.jsonl.gz", "snli/snli_1.0_test.jsonl.gz"):
        src = load_source(str(shared / "data" / file))
        texts[f"{file} premise"], texts[f"{file} hypothesis"] = src.texts("premise"), src.texts("hypothesis")
    src = load_source(str(shared / "data" / "boolq" / "dev.jsonl.gz"))
    texts["boolq question"], texts["boolq passage"] = src.texts("question"), src.texts("passage")
    premises, hypotheses = [], []
    # every phenomenon, its first rows (reading all 645,000 takes longer than the test; the benchmark reads all)
    for phenomenon in read_curriculum(shared / "data" / "curriculum", limit=CURRICULUM_ROWS):
        premises += phenomenon.rows["premise"]
        hypotheses += phenomenon.rows["hypothesis"]
    texts["curriculum premise"], texts["curriculum hypothesis"] = premises, hypotheses
    return texts


SAMPLE = 60  # every 60th distinct text here; `python benchmarks/word_lengths.py` compares all of them
CURRICULUM_ROWS = 1500  # of each phenomenon's train and validation splits, every 10th distinct text compared


def test_word_lengths_equal_nltk_on_real_texts_of_snli_boolq_and_curriculum(shared):
    """A deterministic sample of every source's distinct texts (NLTK takes minutes for all of them; the
    benchmark checks all, and the tricky, generated and Unicode strings below cover the edge cases)."""
    for name, texts in _real_texts(shared).items():
        distinct = list(dict.fromkeys(texts))[::10 if name.startswith("curriculum") else SAMPLE]
        expected = np.array([_nltk_count(t) for t in distinct])
        got = word_lengths(distinct)
        bad = np.flatnonzero(got != expected)
        assert bad.size == 0, f"{name}: {bad.size} texts differ, e.g. {distinct[bad[0]]!r}"


TRICKY = ["\"Hello,\" he said.", "'Quoted' words 'here'", "isn't can't won't y'all o'clock", "Ellipsis... and..",
          "(brackets) [square] {curly} <angle>", "http://example.com/a?b=c&d=e#f.", "e-mail: me@x.org;",
          "cannot gonna gimme lemme wanna gotta 'tis 'twas more'n d'ye", "“curly” ‘single’ «guillemets»",
          "naïve café — dash – en ‒ fig", "trailing period.\n", "tab\tand\nnewline\r", "'", "''", "\"", "``x``",
          "a--b", "1,000.50 and 3:30", "$5 & 10% #tag", "end,", "end:", "...", ".", "", " ", "Mr. Smith's dog.",
          "x\x1cy", "a\x00b", "ſtraße İstanbul ǅemal K", "They'll we're I've He'd she's", "NOT'S 'S 'LL N'T"]


def test_word_lengths_equal_nltk_on_tricky_strings():
    assert word_lengths(TRICKY).tolist() == [_nltk_count(t) for t in TRICKY]


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

PIECES = st.sampled_from(["a", "Z", "dog", "can", "not", "cannot", "gon", "na", "'", "''", '"', "`", ".", "..", ",",
                          ":", ";", "!", "?", "(", ")", "[", "]", "{", "}", "<", ">", "-", "--", "s", "t", "ll",
                          "n't", "'s", "'re", "is", "was", "1", "3.5", "&", "@", "#", "$", "%", "*", " ", "  ",
                          "\t", "\n", "é", "“", "”", "‘", "’", "«", "»", "—", "http://a.b/c", "...", "\x1c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=14).map("".join), min_size=1, max_size=12))
def test_word_lengths_equal_nltk_on_generated_strings(texts):
    assert word_lengths(texts).tolist() == [_nltk_count(t) for t in texts]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=1, max_size=10))
def test_word_lengths_equal_nltk_on_any_unicode(texts):
    assert word_lengths(texts).tolist() == [_nltk_count(t) for t in texts]


# torchrun on a CPU machine without --device cpu: test_order_invariance.py's two-process test (shuffled rows,
# rank 0 alone writes, the lock removed, the same scores and files as one process).
