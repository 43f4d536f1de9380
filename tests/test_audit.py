"""The leakage audit (``split_builders.evidence.audit``, ``resplit audit``): what every card records and
what the command recomputes, checked against counts made by hand from the released rows.

Real data from ``../shared``: SNLI's dev and test files built per example with given scores (three
hypotheses per premise, so a per-example split shares premises between train and test), GeoQuery
(questions with the same program in train and test), and plain dataset folders (not built by resplit)
with planted exact and near-duplicates."""

from __future__ import annotations

import json
import re
import unicodedata

import numpy as np
import pandas as pd
import pytest
import yaml

from split_builders.cli import main
from split_builders.api import Fields
from split_builders.evidence.audit import audit, check_threshold
from split_builders.evidence.near_duplicates import collision_probability, lsh_parameters
from split_builders.evidence.pools import Part


def AuditFields(text):  # noqa: N802 - the fields a test audits: text columns only
    return Fields("text", text=tuple(text))

SNLI_ROWS = 4500  # --limit: the first rows of SNLI's dev file (premises come in runs of three)


def _yaml(folder):
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _parquet(folder, config, split) -> pd.DataFrame:
    (path,) = (folder / config).glob(f"{split}-*.parquet")
    return pd.read_parquet(path)


def _normalised(text: str) -> str:
    """The audit's normalisation, written independently: NFKC, lower case, whitespace runs -> one space."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _shingles(text: str, n: int = 5) -> set:
    return {text[i:i + n] for i in range(len(text) - n + 1)} if len(text) >= n else ({text} if text else set())


def _jaccard(a: str, b: str) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y)


def _audit_json(target, capsys, *extra) -> dict:
    capsys.readouterr()  # what came before
    assert main(["audit", str(target), "--json", "--no-progress", *extra]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------------------------
# A per-example build of SNLI: the card's audit, and `resplit audit` on the folder
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snli_release(shared, tmp_path_factory):
    """Likelihood Splits of SNLI's dev + test files (one gzip of both), per example, given scores."""
    root = tmp_path_factory.mktemp("snli-audit")
    source = root / "snli_dev_test.jsonl.gz"
    source.write_bytes(b"".join((shared / "data" / "snli" / f"snli_1.0_{name}.jsonl.gz").read_bytes()
                                for name in ("dev", "test")))  # two gzip members read as one file
    np.save(root / "scores.npy", np.random.default_rng(0).normal(size=20000))  # one per file row
    out = root / "release"
    assert main(["likelihood", "--source", str(source), "--scores", str(root / "scores.npy"), "--limit",
                 str(SNLI_ROWS), "--dev-size", "300", "--test-size", "300", "--out", str(out), "--no-progress"]) == 0
    return out


def test_a_per_example_snli_build_reports_the_premises_it_shares(snli_release):
    record = _yaml(snli_release)["resplit"]
    assert record["audit"]["fields"] == ["premise", "hypothesis"] and record["audit"]["threshold"] == 0.8
    for config in record["configs"]:
        train = _parquet(snli_release, config, "train")
        for split in ("validation", "test"):
            rows = _parquet(snli_release, config, split)
            counts = record["configs"][config]["audit"][split]
            # counted by hand from the released rows
            assert counts["rows"] == len(rows)
            assert counts["shared"]["premise"] == rows.premise.isin(set(train.premise)).sum()
            assert counts["shared"]["hypothesis"] == rows.hypothesis.isin(set(train.hypothesis)).sum()
            keys = set(map(_normalised, train.premise + "\n" + train.hypothesis))
            assert counts["exact"] == sum(_normalised(p + "\n" + h) in keys for p, h in zip(rows.premise, rows.hypothesis))
            assert counts["exact"] <= counts["near_duplicate"]
    shared = record["configs"]["random"]["audit"]["test"]["shared"]["premise"]
    assert shared > 0.5 * 300  # SNLI has three hypotheses per premise: most test premises are in train
    card = (snli_release / "README.md").read_text(encoding="utf-8")
    assert "## Leakage audit" in card and "evaluation rows duplicated in train" not in card
    line = next(line for line in card.splitlines() if "share a `premise` with train" in line)
    assert line.endswith("`--group-field premise` prevents this.") and re.match(r"\d+% of `\w+` test rows", line)
    assert "| `random` | test | 300 |" in card and f"{shared} ({100 * shared / 300:.1f}%)" in card


def test_resplit_audit_json_agrees_with_the_card(snli_release, capsys):
    report = _audit_json(snli_release, capsys)
    record = _yaml(snli_release)["resplit"]
    assert report["fields"] == record["audit"]["fields"] and report["threshold"] == record["audit"]["threshold"]
    assert set(report["configs"]) == set(record["configs"])
    for config, splits in report["configs"].items():
        assert set(splits) == {"validation", "test"}
        for split, entry in splits.items():
            assert {"exact", "near_duplicate", "shared"} <= set(entry)  # the contract's names
            assert {k: entry[k] for k in ("rows", "exact", "near_duplicate", "shared", "tiers")} == \
                record["configs"][config]["audit"][split]
            assert sum(entry["tiers"].values()) == entry["rows"]
            assert entry["rows"] - entry["tiers"]["clean"] == entry["near_duplicate"]  # no program: input = example
            assert entry["rates"]["shared"]["premise"] == round(entry["shared"]["premise"] / entry["rows"], 4)
            for example in entry["examples"]["shared.premise"]:
                test = _parquet(snli_release, config, split).set_index("source_id")
                train = _parquet(snli_release, config, "train").set_index("source_id")
                assert test.premise[example["source_id"]] == train.premise[example["train_source_id"]]
    assert len(report["configs"]["random"]["test"]["examples"]["shared.premise"]) == 3
    # the terminal table says the same
    assert main(["audit", str(snli_release), "--no-progress"]) == 0
    table = capsys.readouterr().out
    shared = report["configs"]["random"]["test"]["shared"]["premise"]
    assert re.search(rf"^random\s+test\s+300\s.*\s{shared} \(", table, flags=re.MULTILINE)


def test_a_build_grouped_by_premise_shares_none(snli_release, tmp_path, capsys):
    source = next(snli_release.parent.glob("*.jsonl.gz"))
    out = tmp_path / "grouped"
    assert main(["likelihood", "--source", str(source), "--scores", str(snli_release.parent / "scores.npy"),
                 "--limit", "1500", "--dev-size", "100", "--test-size", "100", "--group-field", "premise",
                 "--out", str(out), "--no-progress"]) == 0
    record = _yaml(out)["resplit"]
    assert record["audit"]["group_field"] == "premise"
    for config, entry in record["configs"].items():
        for split in ("validation", "test"):
            assert entry["audit"][split]["shared"]["premise"] == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "prevents this" not in card and "`premise` is the group field" in card
    assert _audit_json(out, capsys)["group_field"] == "premise"


# ---------------------------------------------------------------------------------------------
# Semantic parsing: the same program in train and test
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def geo_release(shared, tmp_path_factory):
    """TMCD's `length` config of GeoQuery (no search: the cheapest semantic-parsing release)."""
    root = tmp_path_factory.mktemp("geo-audit")
    source = root / "geoquery.tsv"  # without the published splits beside it: only the `length` config
    source.write_text((shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text())
    assert main(["tmcd", "--source", str(source), "--train-size", "440", "--configs", "length", "--out",
                 str(root / "geo"), "--no-progress", "--license", "gpl-2.0"]) == 0
    return root / "geo"


def test_the_same_geoquery_program_in_train_and_test_is_found(geo_release, capsys):
    out = geo_release
    record = _yaml(out)["resplit"]
    assert record["audit"]["program_field"] == "target" and record["audit"]["fields"] == ["input"]
    train, test = _parquet(out, "length", "train"), _parquet(out, "length", "test")
    expected = test.target.isin(set(train.target)).sum()
    assert expected > 0
    counts = record["configs"]["length"]["audit"]["test"]
    assert counts["program"] == expected
    report = _audit_json(out, capsys)
    entry = report["configs"]["length"]["test"]
    assert entry["program"] == expected and len(entry["examples"]["program"]) == 3
    example = entry["examples"]["program"][0]
    assert example["value"] == " ".join(test.set_index("source_id").target[example["source_id"]].split())
    assert train.set_index("source_id").target[example["train_source_id"]] == \
        test.set_index("source_id").target[example["source_id"]]


def test_a_release_on_the_hub_is_audited_at_a_revision(geo_release, hub, tmp_path, capsys):
    """Through a local server speaking the Hub's API (tests/hub_server.py), in fresh processes."""
    import subprocess
    import sys

    from conftest import REPO, hub_env

    env = {**hub_env(hub, tmp_path), "PYTHONPATH": str(REPO)}
    run = lambda *args: subprocess.run([sys.executable, "-m", "split_builders.cli", *map(str, args)], env=env,  # noqa: E731
                                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    pushed = run("push", geo_release, "org/geo-audit", "--version", "1.0.0")
    assert pushed.returncode == 0, pushed.stderr[-2000:]
    audited = run("audit", "org/geo-audit", "--revision", "v1.0.0", "--json", "--no-progress")
    assert audited.returncode == 0, audited.stderr[-2000:]
    remote = json.loads(audited.stdout)
    assert remote["revision"] == "v1.0.0" and remote["configs"] == _audit_json(geo_release, capsys)["configs"]


# ---------------------------------------------------------------------------------------------
# A plain dataset folder with planted duplicates
# ---------------------------------------------------------------------------------------------


def _planted_splits(shared):
    """SNLI dev rows as train (600), validation (100) and test (100) of distinct premises, with test row
    0 an exact duplicate of a train row (case and whitespace changed) and test row 1 a train row with
    one word changed (Jaccard >= 0.85 by :func:`_jaccard`)."""
    frame = pd.read_json(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", lines=True)
    frame = frame.drop_duplicates("sentence1").rename(columns={"sentence1": "premise", "sentence2": "hypothesis",
                                                               "gold_label": "label"})[["premise", "hypothesis", "label"]]
    train, validation, test = (frame.iloc[a:b].reset_index(drop=True) for a, b in ((0, 600), (600, 700), (700, 800)))
    test.loc[0] = [train.premise[10].upper().replace(" ", "   "), " " + train.hypothesis[10].upper(), "neutral"]
    for k in range(20, 600):  # the first long train row whose copy with one word changed stays above 0.85
        words = train.premise[k].split()
        changed = " ".join(words[:2] + ["purple"] + words[3:])
        before, after = train.premise[k] + "\n" + train.hypothesis[k], changed + "\n" + train.hypothesis[k]
        if changed != train.premise[k] and _jaccard(_normalised(before), _normalised(after)) >= 0.85:
            test.loc[1] = [changed, train.hypothesis[k], train.label[k]]
            return train, validation, test, (10, k)
    raise AssertionError("no train row to copy")


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_a_plain_dataset_folder_with_planted_duplicates(shared, tmp_path, capsys, kind):
    train, validation, test, (exact_row, near_row) = _planted_splits(shared)
    folder = tmp_path / "plain"
    folder.mkdir()
    for name, frame in (("train", train), ("validation", validation), ("test", test)):
        if kind == "jsonl":
            frame.to_json(folder / f"{name}.jsonl", orient="records", lines=True)
        else:
            frame.to_parquet(folder / f"{name}.parquet", index=False)
    report = _audit_json(folder, capsys)
    assert report["fields"] == ["premise", "hypothesis"]  # the label column is not text
    entry = report["configs"]["default"]["test"]
    assert entry["examples"]["exact"][0] == {**entry["examples"]["exact"][0], "source_id": 0,
                                             "train_source_id": exact_row}
    near = entry["examples"]["near_duplicate"][0]
    assert (near["source_id"], near["train_source_id"]) == (1, near_row)
    text = lambda f, i: _normalised(f.premise[i] + "\n" + f.hypothesis[i])  # noqa: E731
    assert near["jaccard"] == pytest.approx(_jaccard(text(test, 1), text(train, near_row)), abs=1e-4)
    # every count against a brute-force comparison of all pairs
    keys = {text(train, j) for j in range(len(train))}
    assert entry["exact"] == sum(text(test, i) in keys for i in range(len(test))) >= 1
    assert entry["near_duplicate"] == _near_rows([text(test, i) for i in range(len(test))], keys, 0.8) >= 2
    assert entry["shared"]["premise"] == test.premise.isin(set(train.premise)).sum()
    # the same search at another threshold, and on named fields only
    strict = _audit_json(folder, capsys, "--threshold", "0.95", "--fields", "premise")
    assert strict["fields"] == ["premise"] and strict["threshold"] == 0.95
    assert strict["configs"]["default"]["test"]["near_duplicate"] == _near_rows(
        list(map(_normalised, test.premise)), set(map(_normalised, train.premise)), 0.95)


def _near_rows(evaluation: list, train: set, threshold: float) -> int:
    """Brute force: the evaluation texts with a train text at Jaccard >= ``threshold``."""
    train = [_shingles(t) for t in train]
    count = 0
    for text in evaluation:
        mine = _shingles(text)
        count += any(len(mine & other) >= threshold * len(mine | other) for other in train)
    return count


def test_the_audit_is_deterministic_and_counts_exact_within_near():
    import pyarrow as pa

    texts = ["A man is sleeping on a bench in the park.", "a  man is SLEEPING on a bench in the park.",
             "A man is sleeping on a bench in the parks.", "Two dogs run.", "Nothing alike at all here."]
    table = pa.table({"text": texts, "source_id": np.arange(5)})
    parts = {"c": {"train": Part(table, np.array([0, 3])), "test": Part(table, np.array([1, 2, 4]))}}
    first = audit(parts, AuditFields(["text"]))
    assert first == audit(parts, AuditFields(["text"]))
    entry = first["configs"]["c"]["test"]
    assert (entry["rows"], entry["exact"], entry["near_duplicate"], entry["shared"]["text"]) == (3, 1, 2, 0)


def _varied_texts(shared) -> list:
    """A few hundred texts of every kind the audit meets: empty, shorter than a shingle, exactly one
    shingle, Unicode (accents, CJK, emoji, combining marks), repeated characters, long (whole SNLI
    premises joined), and real SNLI sentences."""
    import gzip

    with gzip.open(shared / "data" / "snli" / "snli_1.0_dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        sentences = [json.loads(line)["sentence1"] for _, line in zip(range(300), handle)]
    odd = ["", "a", "ab", "abcd", "abcde", "abcdef", "     ", "ééééé", "naïve café", "漢字かなカナ", "🙂🙃🙂🙃🙂🙃",
           "e\u0301e\u0301e\u0301", "x" * 5, "x" * 4000, "\n".join(sentences[:40]), " ".join(sentences) * 2]
    return odd + sentences[:250] + [s.upper() for s in sentences[250:]]


def test_chunk_signatures_equal_datasketch_minhash_of_each_text(shared):
    """The whole-column signatures (numpy, a chunk at a time) are exactly what datasketch's own
    ``MinHash.update_batch`` gives for each text's shingle hashes: the independent reference."""
    import operator

    from datasketch import MinHash

    from split_builders.evidence.near_duplicates import (MINHASH_SCHEME, MINHASH_SEED, NUM_PERM, minhash_signatures,
                                                         shingle_hashes)

    texts = _varied_texts(shared)
    values, offsets = shingle_hashes(texts)
    permutations = MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED, scheme=MINHASH_SCHEME).permutations
    signatures = minhash_signatures(values, offsets, permutations)
    assert signatures.shape == (len(texts), NUM_PERM) and signatures.dtype == np.uint32
    for k, text in enumerate(texts):
        reference = MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED, hashfunc=operator.index, scheme=MINHASH_SCHEME)
        reference.update_batch(values[offsets[k]:offsets[k + 1]].tolist())
        if text:
            assert np.array_equal(signatures[k], reference.hashvalues), f"text {k} ({text[:30]!r})"
        else:  # no shingles: datasketch's empty MinHash, and a row of zeros here (never indexed)
            assert reference.is_empty() and not signatures[k].any()
    # blocks of one text each, and of texts longer than a block, give the same rows
    import split_builders.evidence.near_duplicates as audit_module

    for block in (1, 7):
        saved, audit_module._HASHES_PER_BLOCK = audit_module._HASHES_PER_BLOCK, block
        try:
            assert np.array_equal(minhash_signatures(values, offsets, permutations), signatures)
        finally:
            audit_module._HASHES_PER_BLOCK = saved


def test_the_lsh_index_holds_what_datasketch_inserts_per_text(shared):
    """``minhash_lsh`` (chunks of texts, one carrier MinHash) builds the same MinHashLSH as
    inserting each text's own datasketch MinHash: the same buckets, and the same answer to every
    query; empty texts are not indexed."""
    import operator

    from datasketch import MinHash, MinHashLSH

    import split_builders.evidence.near_duplicates as audit_module
    from split_builders.evidence.near_duplicates import MINHASH_SCHEME, MINHASH_SEED, NUM_PERM, minhash_lsh, shingle_hashes

    texts = _varied_texts(shared)
    texts += [t.replace("a", "o", 1) for t in texts[20:120]]  # near-duplicates, so that buckets are shared
    saved, audit_module._CHUNK = audit_module._CHUNK, 37  # several chunks, one ending inside the texts
    try:
        signatures, lsh = minhash_lsh(texts, threshold=0.8)
    finally:
        audit_module._CHUNK = saved
    reference = MinHashLSH(threshold=0.8, num_perm=NUM_PERM, params=lsh_parameters(0.8))
    minhashes = {}
    for k, text in enumerate(texts):
        values, _ = shingle_hashes([text])
        if values.size:
            minhashes[k] = MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED, hashfunc=operator.index,
                                   scheme=MINHASH_SCHEME)
            minhashes[k].update_batch(values.tolist())
            reference.insert(k, minhashes[k])
    assert lsh.get_counts() == reference.get_counts()
    assert max(max(counts.values()) for counts in lsh.get_counts()) >= 2
    for k, minhash in minhashes.items():
        assert np.array_equal(signatures[k], minhash.hashvalues)
        assert set(lsh.query(minhash)) == set(reference.query(minhash))
    assert all((k in lsh) == bool(texts[k]) for k in range(len(texts)))


def test_configs_that_share_no_rows_are_searched_apart_with_the_same_counts():
    """Two configs over different rows (CURRICULUM's phenomena) are two groups, each searched with its own
    LSH index: each config's counts equal those of auditing it alone, and a near-duplicate of one
    config's test row in the other config's train split counts for neither (as before)."""
    import pyarrow as pa

    from split_builders.evidence.audit import Audited, _columns
    from split_builders.evidence.near_duplicates import text_groups as _text_groups
    from split_builders.evidence.pools import Pool

    sleeping = "A man is sleeping on a bench in the park."
    a = pa.table({"text": [sleeping, "Two dogs run on the beach.", "a man is sleeping on a bench in the parks.",
                           "Nothing alike at all here."], "source_id": np.arange(4)})
    b = pa.table({"text": ["Two dogs run on the beaches.", "A woman reads a book at home.", "A man is sleeping on a "
                           "bench in the park!", "a woman reads a book at home"], "source_id": np.arange(10, 14)})
    parts = {"a": {"train": Part(a, np.array([0, 1])), "test": Part(a, np.array([2, 3]))},
             "b": {"train": Part(b, np.array([0, 1])), "test": Part(b, np.array([2, 3]))}}
    fields = Audited(["text"])
    together = audit(parts, fields)
    pool = Pool(parts, fields.columns)
    groups = _text_groups(pool, _columns(pool.table, fields))
    assert len(set(groups.tolist())) == 2 and groups[:4].tolist() == [groups[0]] * 4
    for name in ("a", "b"):
        alone = audit({name: parts[name]}, fields)
        assert together["configs"][name] == alone["configs"][name]
    # by hand: a/test "...parks." is a near-duplicate of a/train's first row; b/test's "...park!" only of a's
    assert together["configs"]["a"]["test"]["near_duplicate"] == 1
    assert together["configs"]["b"]["test"]["near_duplicate"] == 1  # "a woman reads a book at home", not "park!"
    assert _jaccard(_normalised(b["text"][2].as_py()), _normalised(sleeping)) >= 0.8


def test_lsh_bands_reach_the_recall_they_promise():
    for threshold in (0.5, 0.7, 0.8, 0.9, 0.95, 1.0):
        bands, rows = lsh_parameters(threshold)
        assert bands * rows <= 64 and bands >= 2
        assert collision_probability(threshold, bands, rows) >= 0.97
    assert lsh_parameters(0.8) == (9, 5)
    assert check_threshold(1) == 1.0


# ---------------------------------------------------------------------------------------------
# Bad input: one line, no traceback
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_targets(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-targets")
    (root / "a_file.txt").write_text("not a folder\n")
    (root / "empty").mkdir()
    (root / "notes").mkdir()
    (root / "notes" / "README.md").write_text("# just notes\n")
    only_test = root / "only_test"
    only_test.mkdir()
    (only_test / "test.jsonl").write_text('{"text": "a"}\n')
    return root


@pytest.mark.parametrize("arguments, message", [
    (["{root}/missing"], "missing"),
    (["org/not-here@v1.0.0"], "as a Hub id"),
    (["{root}/a_file.txt"], "is a file"),
    (["{root}/empty"], "is neither a resplit release"),
    (["{root}/notes"], "is neither a resplit release"),
    (["{root}/only_test"], "no train split"),
    (["{snli}", "--fields", "premise,hypotesis"], "text field 'hypotesis' not found"),
    (["{snli}", "--fields", "score"], "text field 'score' not found"),
    (["{snli}", "--threshold", "0"], "--threshold must be a fraction in (0, 1], got 0.0"),
    (["{snli}", "--threshold", "1.5"], "--threshold must be a fraction in (0, 1]"),
])
def test_bad_input_gets_one_line(arguments, message, bad_targets, snli_release, capsys):
    arguments = [a.format(root=bad_targets, snli=snli_release) for a in arguments]
    assert main(["audit", *arguments, "--no-progress"]) != 0
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1 and message in captured.err, captured.err
