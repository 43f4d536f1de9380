"""Contamination against a pretraining corpus on datatrove (``resplit audit TARGET --against-corpus SOURCE``,
:mod:`split_builders.evidence.corpus`), and the label-field fix of ``--against``.

Real rows: a small likelihood release (``small_release``) is TARGET; the corpus is 1,600 real SNLI dev pairs as
two-line documents, plus copies of the release's ``random`` test rows planted in it: exact (same label), with
another label, with one typo, reworded below the threshold, and (a second corpus) inside longer web-like
documents. The same rows, as a table, are the ``--against`` file the corpus path is compared with.
"""

from __future__ import annotations

import gzip
import json
import shutil
import signal
from pathlib import Path

import datasets
import pandas as pd
import pyarrow.parquet as pq

import pytest

from conftest import refused_in_one_line
from test_contamination import LABELS, _reworded, _snli, _typo  # the planted copies of the --against tests
from split_builders.cli import main

SHARDS = 8
BACKGROUND = 1600


def _test_rows(release: Path) -> pd.DataFrame:
    (path,) = (release / "random").glob("test-*.parquet")
    names = datasets.Dataset.from_parquet(str(path)).features["label"].names
    rows = pd.read_parquet(path)
    rows["label"] = [names[k] for k in rows["label"]]
    return rows.reset_index(drop=True)


def _json(capsys, argv) -> dict:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    return json.loads(out)


@pytest.fixture(scope="module")
def planted(shared, small_release, tmp_path_factory):
    """The corpus as 8 Parquet shards (text, id, label), the same rows as one ``--against`` table (premise,
    hypothesis, label, source_id = the document's number) and the planted copies' source ids."""
    root = tmp_path_factory.mktemp("corpus")
    test = _test_rows(small_release)
    rows = _snli(shared, "dev", BACKGROUND)
    planted = {}
    for k, r in test.iloc[0:10].iterrows():  # exact copies, same label
        rows.append({"premise": r.premise, "hypothesis": r.hypothesis, "label": r.label})
        planted[int(r.source_id)] = "input_label_contaminated"
    for k, r in test.iloc[10:15].iterrows():  # another label
        other = LABELS[(LABELS.index(r.label) + 1) % 3]
        rows.append({"premise": r.premise, "hypothesis": r.hypothesis, "label": other})
        planted[int(r.source_id)] = "input_contaminated"
    for k, r in test.iloc[15:20].iterrows():  # one typo, same label
        rows.append({"premise": r.premise, "hypothesis": _typo(r.hypothesis), "label": r.label})
    for k, r in test.iloc[20:25].iterrows():  # reworded: below the threshold
        rows.append({"premise": _reworded(r.premise), "hypothesis": r.hypothesis, "label": r.label})
    table = pd.DataFrame(rows)
    table["source_id"] = range(len(table))
    # spread the planted rows over the shards: every shard gets some
    order = list(range(BACKGROUND)) + list(range(BACKGROUND, len(table)))
    corpus = root / "corpus"
    corpus.mkdir()
    docs = pd.DataFrame({"text": table.premise + "\n" + table.hypothesis, "id": table.source_id.astype(str),
                         "label": table.label})
    per = -(-len(order) // SHARDS)
    shuffled = docs.iloc[order].sample(frac=1.0, random_state=0)
    for s in range(SHARDS):  # shard s holds documents in document order (ties of the best match: first read)
        part = shuffled.iloc[s * per:(s + 1) * per].copy()
        part["n"] = part.id.astype(int)
        part.sort_values("n").drop(columns="n").to_parquet(corpus / f"shard-{s:03d}.parquet", index=False)
    # the --against file: the same rows in the corpus's read order (shard, then row), source_id the document id
    read = pd.concat([pd.read_parquet(p) for p in sorted(corpus.glob("*.parquet"))])
    against = table.set_index(table.source_id.astype(str)).loc[read.id].reset_index(drop=True)
    against.to_parquet(root / "against.parquet", index=False)
    return {"root": root, "corpus": corpus, "against": root / "against.parquet", "test": test, "planted": planted}


def _corpus_run(capsys, release, corpus, work, *extra) -> dict:
    return _json(capsys, ["audit", str(release), "--against-corpus", str(corpus), "--work", str(work), "--configs",
                          "random", "--json", "--no-progress", *extra])


def _records(work: Path) -> pd.DataFrame:
    return pq.read_table(work / "records.parquet").to_pandas()


@pytest.fixture(scope="module")
def one_task(planted, small_release, tmp_path_factory):
    work = tmp_path_factory.mktemp("one-task") / "work"
    rows = work.parent / "rows.parquet"
    assert main(["audit", str(small_release), "--against-corpus", str(planted["corpus"]), "--work", str(work),
                 "--configs", "random", "--no-progress", "--rows", str(rows)]) == 0
    return {"work": work, "rows": pd.read_parquet(rows)}


def test_planted_rows_are_found_and_equal_the_single_process_against_path(planted, one_task, small_release, capsys,
                                                                           tmp_path):
    rows = one_task["rows"]
    test = rows[rows.split == "test"].set_index("source_id")
    for source_id, tier in planted["planted"].items():
        assert test.loc[source_id, "tier"] == tier, source_id
    typo = planted["test"].iloc[15:20].source_id
    found = test.loc[typo][test.loc[typo, "tier"] == "input_label_contaminated"]  # a typo in a short row can
    assert len(found) >= 3 and found.jaccard.between(0.8, 0.999999).all()  # fall below 0.8: --against decides
    reworded = planted["test"].iloc[20:25].source_id
    assert (test.loc[reworded, "tier"] == "clean").all()
    # the single-process --against path over the same rows: the same tier, Jaccard and matching document per row
    against_rows = tmp_path / "against-rows.parquet"
    report = _json(capsys, ["audit", str(small_release), "--against", str(planted["against"]), "--configs", "random",
                            "--json", "--no-progress", "--rows", str(against_rows)])
    single = pd.read_parquet(against_rows).sort_values(["config", "split", "source_id"]).reset_index(drop=True)
    mine = rows.sort_values(["config", "split", "source_id"]).reset_index(drop=True)
    assert list(mine.tier) == list(single.tier)
    assert list(mine.jaccard.fillna(-1).round(6)) == list(single.jaccard.fillna(-1).round(6))
    assert list(mine.match_id.fillna("")) == [("" if pd.isna(v) else str(int(v))) for v in single.match_id]
    corpus_report = json.loads((one_task["work"] / "run.json").read_text())  # the run recorded what it checked
    assert corpus_report["source"] == str(planted["corpus"])
    assert report["against"]["random"]["test"]["input_label_contaminated"] == 10 + len(found)


def test_the_same_records_whatever_the_executor_and_task_count(planted, one_task, small_release, capsys,
                                                              tmp_path):
    import ray

    four = _corpus_run(capsys, small_release, planted["corpus"], tmp_path / "four", "--tasks", "4", "--workers", "2")
    assert four["corpus"]["tasks"] == 4 and four["corpus"]["documents"] == BACKGROUND + 25
    assert len(list((tmp_path / "four" / "logs" / "completions").iterdir())) == 4
    reference = _records(one_task["work"])
    assert len(reference) >= 15 + 3 and reference.exact.sum() == 15
    pd.testing.assert_frame_equal(_records(tmp_path / "four"), reference)
    assert (tmp_path / "four" / "records.parquet").read_bytes() == (one_task["work"] / "records.parquet").read_bytes()
    handler = signal.getsignal(signal.SIGTERM)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # the user's own session: the run uses it
    try:  # 2 tasks (datatrove starts a Ray actor, a Python process, per task): a third task count, half the starts
        on_ray = _corpus_run(capsys, small_release, planted["corpus"], tmp_path / "ray", "--executor", "ray",
                             "--tasks", "2", "--workers", "2")
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, handler)  # ray.init's SIGTERM handler outlives shutdown: the next tests' back
    assert on_ray["against"] == four["against"]
    assert on_ray["corpus"]["executor"] == "ray" and on_ray["corpus"]["tasks"] == 2
    pd.testing.assert_frame_equal(_records(tmp_path / "ray"), reference)


def test_passages_inside_long_documents_and_the_13_gram_convention(planted, small_release, capsys, tmp_path):
    test = planted["test"]
    filler = ("Welcome to our site. Read more articles below and subscribe to the newsletter for weekly updates "
              "about travel, food and the outdoors.")
    docs = [{"text": f"{filler}\n{r.premise}\n{r.hypothesis}\nComments are closed.", "id": f"web{k}"}
            for k, r in test.iloc[:3].iterrows()]
    # the first 13 words of a long test row inside a sentence: the 13-gram convention only
    long_row = max(test.iloc[3:].itertuples(), key=lambda r: len((r.premise + " " + r.hypothesis).split()))
    words = (long_row.premise + " " + long_row.hypothesis).split()
    assert len(words) >= 14
    docs.append({"text": f"{filler} As they say, {' '.join(words[:13])} and so on. " * 2, "id": "gram"})
    corpus = tmp_path / "web"
    corpus.mkdir()
    with gzip.open(corpus / "part-0.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(d) + "\n" for d in docs)
    report = _corpus_run(capsys, small_release, corpus, tmp_path / "work")
    records = _records(tmp_path / "work")
    embedded = records[records.document.str.startswith("web")]
    assert set(embedded.source_id) == set(test.source_id.iloc[:3]) and (embedded.jaccard == 1.0).all()
    assert embedded.exact.all() and embedded.ngram_overlap.all() and (embedded.longest_ngram >= 10).all()
    gram = records[records.document == "gram"]
    assert list(gram.source_id) == [long_row.source_id] and gram.jaccard.isna().all()
    assert gram.ngram_overlap.all() and (gram.longest_ngram == 13).all()
    entry = report["against"]["random"]["test"]
    # the 13-gram-only row counts as contaminated (the convention's default, --ngram-policy contaminated)
    assert entry["input_contaminated"] == 4 and entry["ngram_overlap"] == 4 and entry["ngram_only"] == 1
    # no label field: said, never counted as 0
    assert entry["input_label_contaminated"] is None and report["labels_compared"] is False
    assert "--against-label-field" in report["labels_note"]


def test_a_failed_task_names_its_shard_and_a_resume_finishes_it(planted, one_task, small_release, capsys,
                                                               tmp_path):
    corpus = tmp_path / "jsonl"
    corpus.mkdir()
    for k, path in enumerate(sorted(planted["corpus"].glob("*.parquet"))[:4]):
        frame = pd.read_parquet(path)
        with gzip.open(corpus / f"part-{k}.jsonl.gz", "wt", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for r in frame.to_dict("records"))
    broken = corpus / "part-2.jsonl.gz"
    whole = broken.read_bytes()
    broken.write_bytes(whole[: len(whole) // 2])  # cut short: its first rows read, then the gzip stream ends
    work = tmp_path / "work"
    argv = ["audit", str(small_release), "--against-corpus", str(corpus), "--work", str(work), "--configs", "random",
            "--tasks", "4", "--workers", "2", "--json", "--no-progress"]
    capsys.readouterr()
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "task 2 failed on shard part-2.jsonl.gz" in line and "run the same command again" in line
    done = sorted(p.name for p in (work / "logs" / "completions").iterdir())
    assert "00002" not in done and f"{len(done)} of 4 tasks finished" in line  # the pool stops at a failure
    logs = {p.name: p.stat().st_mtime_ns for p in (work / "logs" / "logs").iterdir()}
    broken.write_bytes(whole)
    resumed = _json(capsys, argv)
    after = {p.name: p.stat().st_mtime_ns for p in (work / "logs" / "logs").iterdir()}
    finished = [f"task_{name}.log" for name in done]
    assert finished and {k: after[k] for k in finished} == {k: logs[k] for k in finished}  # finished: skipped
    assert after["task_00002.log"] != logs["task_00002.log"]
    assert sorted(p.name for p in (work / "logs" / "completions").iterdir()) == ["00000", "00001", "00002", "00003"]
    # the uninterrupted run in this process (one worker: datatrove runs the tasks in turn, no pool of processes to
    # start; the records do not depend on the workers, test_the_same_records_whatever_the_executor_and_task_count)
    uninterrupted = _corpus_run(capsys, small_release, corpus, tmp_path / "clean-run", "--tasks", "4", "--workers",
                                "1")
    assert resumed["against"] == uninterrupted["against"]
    assert (work / "records.parquet").read_bytes() == (tmp_path / "clean-run" / "records.parquet").read_bytes()


def test_write_clean_from_corpus_records(planted, one_task, small_release, capsys, tmp_path):
    out = tmp_path / "clean"
    report = _corpus_run(capsys, small_release, planted["corpus"], one_task["work"], "--write-clean", str(out))
    assert main(["verify", str(out)]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert str(planted["root"]) not in readme  # no absolute local path in the card
    loaded = datasets.load_dataset(str(out), "random", cache_dir=str(tmp_path / "cache"))
    entry = report["against"]["random"]["test"]
    assert len(loaded["test"]) == entry["clean"] == 40 - entry["input_contaminated"] - entry["input_label_contaminated"]
    assert entry["clean"] < 40 - 15


def test_bad_input_is_one_line_and_loses_nothing(planted, one_task, small_release, capsys, tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never the network, whatever the environment
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    base = ["audit", str(small_release), "--configs", "random", "--no-progress"]
    # no text field: the fields it has
    notext = tmp_path / "notext"
    notext.mkdir()
    pd.DataFrame({"body": ["a b c"], "id": ["1"]}).to_parquet(notext / "a.parquet")
    line = refused_in_one_line([*base, "--against-corpus", str(notext), "--work", str(tmp_path / "w1")], capsys,
                               notext)
    assert "no text field 'text'" in line and "fields: body, id" in line and "--text-field" in line
    # a glob matching nothing
    line = refused_in_one_line([*base, "--against-corpus", str(tmp_path / "nothing" / "*.parquet"), "--work",
                                str(tmp_path / "w2")], capsys)
    assert "matches no file" in line
    # shards of mixed schema
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pd.DataFrame({"text": ["a b c"], "id": ["1"]}).to_parquet(mixed / "a.parquet")
    pd.DataFrame({"content": ["a b c"], "id": ["2"]}).to_parquet(mixed / "b.parquet")
    line = refused_in_one_line([*base, "--against-corpus", str(mixed), "--work", str(tmp_path / "w3")], capsys,
                               mixed)
    assert "mixed schema" in line and "a.parquet" in line and "b.parquet" in line
    # an hf:// path offline
    line = refused_in_one_line([*base, "--against-corpus", "hf://datasets/HuggingFaceFW/fineweb-edu/sample/10BT",
                                "--work", str(tmp_path / "w4")], capsys)
    assert "cannot reach it" in line and "HF_HUB_OFFLINE" in line
    # a work folder of another run: refused, naming both; its files untouched
    other_target = tmp_path / "other-target"
    shutil.copytree(small_release, other_target)
    line = refused_in_one_line(["audit", str(other_target), "--configs", "length", "--no-progress",
                                "--against-corpus", str(planted["corpus"]), "--work", str(one_task["work"])],
                               capsys, one_task["work"])
    assert str(small_release) in line and str(other_target) in line and "another --work" in line
    # a folder resplit did not make
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    line = refused_in_one_line([*base, "--against-corpus", str(planted["corpus"]), "--work", str(theirs)], capsys,
                               theirs)
    assert "not an empty folder" in line
    # flags of one mode with the other
    line = refused_in_one_line([*base, "--against", str(planted["against"]), "--tasks", "4"], capsys)
    assert "--tasks needs --against-corpus" in line
    line = refused_in_one_line([*base, "--tasks", "4"], capsys)
    assert "--tasks needs --against OTHER or --against-corpus" in line


def test_ray_missing_is_one_line(planted, small_release, capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    line = refused_in_one_line(["audit", str(small_release), "--configs", "random", "--no-progress",
                                "--against-corpus", str(planted["corpus"]), "--work", str(tmp_path / "w"),
                                "--executor", "ray"], capsys)
    assert "pip install 'resplit[ray]'" in line


def test_against_resolves_the_other_label_field_and_says_when_it_cannot(planted, small_release, capsys, tmp_path):
    """An SNLI-like file whose labels are in ``gold_label`` (a release's are in ``label``): compared, not silently
    counted as input-only; a file without labels: said in the JSON, on the terminal and in the clean card."""
    table = pd.read_parquet(planted["against"])
    gold = tmp_path / "gold.parquet"
    table.rename(columns={"label": "gold_label"}).to_parquet(gold)
    base = ["audit", str(small_release), "--configs", "random", "--no-progress"]
    labelled = _json(capsys, [*base, "--json", "--against", str(planted["against"])])
    resolved = _json(capsys, [*base, "--json", "--against", str(gold)])
    assert resolved["against"] == labelled["against"]
    assert resolved["against"]["random"]["test"]["input_label_contaminated"] >= 10
    assert resolved["checked"][0]["label"] == "gold_label" and "labels_compared" not in resolved
    named = tmp_path / "named.parquet"
    table.rename(columns={"label": "verdict"}).to_parquet(named)
    assert _json(capsys, [*base, "--json", "--against", str(named), "--against-label-field", "verdict"])[
        "against"] == labelled["against"]
    unlabelled = tmp_path / "unlabelled.parquet"
    table.drop(columns="label").to_parquet(unlabelled)
    report = _json(capsys, [*base, "--json", "--against", str(unlabelled)])
    entry = report["against"]["random"]["test"]
    both = labelled["against"]["random"]["test"]
    assert entry["input_label_contaminated"] is None
    assert entry["input_contaminated"] == both["input_contaminated"] + both["input_label_contaminated"]
    assert report["labels_compared"] is False and "not 0" in report["labels_note"]
    capsys.readouterr()
    out = tmp_path / "clean"
    assert main([*base, "--against", str(unlabelled), "--write-clean", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "not compared" in printed and "labels not compared" in printed
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "labels not compared: unlabelled.parquet" in card and str(tmp_path) not in card
    line = refused_in_one_line([*base, "--against", str(unlabelled), "--against-label-field", "nope"], capsys)
    assert "--against-label-field nope" in line and "no such column" in line


@pytest.mark.parametrize("code", ["ENOSPC", "EACCES"])
def test_a_work_folder_the_system_refuses_to_write_is_one_line(small_release, planted, tmp_path, capsys, monkeypatch,
                                                               code):
    """A full disk (or no permission) under ``--work`` during a corpus audit: one line naming the place and why,
    as every other writer's (issue 56), never a traceback from datatrove's writers."""
    import errno

    from test_faults_round5 import REFUSALS, refuse_writes

    work = tmp_path / "work"
    # the run's own files are written (run.json, the index); the disk fills while the pipeline's tasks write
    refuse_writes(monkeypatch, work, getattr(errno, code), only=lambda path: {"matches", "tasks"} & set(path.parts))
    line = refused_in_one_line(["audit", str(small_release), "--against-corpus", str(planted["corpus"]), "--work",
                                str(work), "--configs", "random", "--tasks", "1", "--workers", "1", "--no-progress"],
                               capsys, small_release)  # --work keeps what was done (a rerun resumes)
    assert REFUSALS[code] in line and str(work) in line, line
