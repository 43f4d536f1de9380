"""The corpus audit's matching and verdicts (``resplit audit TARGET --against-corpus SOURCE``, issue 55): words in
any language, the n-gram convention (fraction, floor for short inputs, cut-off for common n-grams, the policy that
makes an n-gram-only row contaminated), long passages of repeated text, the one-line copy at threshold 1.0, input
checks and a resume that checks what it resumes.

Records are compared with an independent computation written here in plain Python (the ``regex`` package's
``\\w`` for words, sets of word n-grams and of character 5-grams), never with the code's own output.
"""

from __future__ import annotations

import gzip
import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import regex

from conftest import refused_in_one_line
from test_contamination import _jaccard, _normalised
from split_builders.cli import main

THRESHOLD = 0.8
N, FLOOR = 13, 8

# evaluation rows (premise, hypothesis) in several languages and lengths
ROWS = {
    "ru": ("Кошка сидит на тёплом подоконнике и смотрит на птиц во дворе весь день до самого вечера",
           "Кошка смотрит в окно"),
    "el": ("Ο γέρος ψαράς κάθεται στην αποβάθρα και επισκευάζει τα δίχτυα του κάτω από τον καυτό ήλιο του μεσημεριού",
           "Ένας ψαράς δουλεύει"),
    "fr": ("Le café du coin sert un très bon café noir chaque matin avant sept heures à tous les ouvriers pressés",
           "Le café est ouvert tôt"),
    "zh": ("我们今天下午在城市公园里慢慢散步看到了很多美丽的花朵和快乐的小鸟", "公园很美"),
    "short": ("The dog runs", "fast"),
    "ten": ("Two children are building a big sandcastle", "at the beach"),
    "long": ("A woman in a bright red coat is walking her three small dogs along the snowy path through the quiet "
             "park", "A woman walks dogs"),
}
WORD = regex.compile(r"\w+")
ONE = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\p{Han}\p{Hiragana}\p{Katakana}]+")


def _words(text: str) -> list:
    """Words as the docs say: ``\\w`` runs, each Han / kana character a word of its own."""
    return [piece for run in WORD.findall(text) for piece in ONE.findall(run)]


def _text(premise: str, hypothesis: str) -> str:
    return _normalised(premise) + "\n" + _normalised(hypothesis)


def _grams(words: list, *, n: int = N, floor: int = FLOOR, whole: bool = True) -> set:
    """An input's n-grams (``whole``: an input of ``floor`` to ``n - 1`` words is one n-gram, fewer: none), or a
    document's windows of length ``n``."""
    if whole and len(words) < n:
        return {tuple(words)} if len(words) >= floor else set()
    return {tuple(words[k:k + n]) for k in range(len(words) - n + 1)}


def _longest(a: list, b: list) -> int:
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def _index(threshold: float = THRESHOLD, **options):
    from split_builders.evidence.corpus_index import EvaluationIndex
    from split_builders.evidence.inputs import EvidenceInput

    table = pa.table({"premise": [p for p, _ in ROWS.values()], "hypothesis": [h for _, h in ROWS.values()],
                      "label": ["entailment"] * len(ROWS), "source_id": list(range(len(ROWS)))})
    data = EvidenceInput.from_splits({"default": {"test": table}}, where="rows")
    return EvaluationIndex.build(data.parts, data.fields, threshold=threshold, **options)


def _documents(lines: list) -> list:
    from datatrove.data import Document

    return [Document(text=line, id=f"d{k}", metadata={"shard": "s", "row": k}) for k, line in enumerate(lines)]


def _passages(document: str, fields: int = 2) -> set:
    """A document's passages as docs/corpus.md defines them: its normalised non-empty lines, every run of up to
    as many consecutive lines as an input has fields, and the whole document."""
    lines = [line for line in (_normalised(part) for part in document.split("\n")) if line]
    runs = {"\n".join(lines[k:k + w]) for w in range(1, fields + 1) for k in range(len(lines) - w + 1)}
    return runs | {"\n".join(lines)} if lines else set()


def _reference(documents: list, *, threshold: float = THRESHOLD) -> dict:
    """``{(source_id, row): (jaccard or None, longest run, n-gram fraction or None)}`` of documents (lines apart
    by line breaks), by the definitions of docs/corpus.md: the best exact Jaccard of character 5-gram sets over
    the document's passages (1.0 where a passage is the input, or its fields on one line), word n-grams across
    the document's lines."""
    return {key: value[:3] for key, value in _reference_records(documents, threshold=threshold).items()}


def _reference_records(documents: list, *, threshold: float = THRESHOLD) -> dict:
    """:func:`_reference` with each record's exact flag and kind of evidence (exact, near_duplicate, ngram)."""
    out = {}
    for sid, (premise, hypothesis) in enumerate(ROWS.values()):
        text = _text(premise, hypothesis)
        words = _words(text)
        mine = _grams(words)
        for row, document in enumerate(documents):
            passages = _passages(document)
            doc = [w for line in document.split("\n") for w in _words(_normalised(line))]
            shared = mine & _grams(doc, n=N if len(words) >= N else len(words), whole=False) if mine else set()
            exact = text in passages or text.replace("\n", " ") in passages
            jaccard = 1.0 if exact else round(max((_jaccard(text, p) for p in passages), default=0.0), 6)
            if shared or jaccard >= threshold:
                kind = "exact" if exact else "near_duplicate" if jaccard >= threshold else "ngram"
                out[(sid, row)] = (jaccard if jaccard >= threshold else None, _longest(words, doc),
                                   round(len(shared) / len(mine), 6) if shared else None, exact, kind)
    return out


def _matched(index, lines: list) -> dict:
    return {(r["source_id"], r["row"]): (r["jaccard"], r["longest_ngram"], r["ngram_fraction"])
            for r in index.match(_documents(lines))}


def test_words_in_any_language_and_the_n_gram_convention_equal_an_independent_count():
    """Russian, Greek, accented French and Chinese rows: the index's words are ``regex``'s ``\\w`` words (each
    ideograph one); 13-word spans inside other text, an input of fewer than 8 words inside a sentence (no n-gram),
    one of 8-12 words (one n-gram of its own length), 15 words of a 24-word row (3 of its 12 n-grams): every
    record, its longest run and its n-gram fraction equal the plain-Python count."""
    index = _index()
    vocabulary = index.vocabulary
    for sid, (premise, hypothesis) in enumerate(ROWS.values()):
        assert [vocabulary[k] for k in index.text_words[sid].tolist()] == _words(_text(premise, hypothesis))
    assert "café" in vocabulary and "тёплом" in vocabulary and "我" in vocabulary
    span = lambda key, start, count: " ".join(_words(_normalised(ROWS[key][0]))[start:start + count])  # noqa: E731
    zh = _normalised(ROWS["zh"][0])
    lines = [f"Новости дня: {span('ru', 1, 13)}. Конец.",
             f"Σήμερα: {span('el', 2, 13)}! Τέλος.",
             f"Chronique — {span('fr', 0, 13)}, dit-on.",
             f"新闻：{zh[2:17]}。结束",
             "yesterday i saw that the dog runs fast near the old river bank",
             "they say two children are building a big sandcastle at the beach every summer",
             f"Story: {span('long', 0, 15)} and more words here"]
    expected = _reference(lines)
    assert {k[1] for k in expected} == {0, 1, 2, 3, 5, 6}  # the short input (row 4) has no n-gram of its own
    assert _matched(index, lines) == expected


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


def test_every_planted_form_and_evidence_kind_equals_an_independent_checker():
    """The issue's planted forms of evaluation rows (exact, inside a longer document, case, full width,
    punctuation, one word changed, one line, inline in a paragraph, premise only, far apart, repeated), in
    English, Russian, French and Chinese, among unrelated documents: every record (its Jaccard, exactness,
    longest run, n-gram fraction) and its kind of evidence equal the plain-Python checker's, record by record."""
    from split_builders.evidence.corpus_index import record_schema
    from split_builders.evidence.corpus_verdicts import evidence_of

    index = _index()
    filler = ["The weather in the valley stayed mild through the spring and the farmers planted early.",
              "Trains to the coast leave every hour from the central station, except on public holidays."]
    documents = list(filler)
    for key in ("long", "ru", "fr", "zh"):
        premise, hypothesis = ROWS[key]
        words = premise.split()
        changed = " ".join(words[:3] + ["zebra"] + words[4:])
        documents += [
            f"{premise}\n{hypothesis}",  # exact
            f"{filler[0]}\n{premise}\n{hypothesis}\n{filler[1]}",  # inside a longer document
            f"{premise.upper()}\n{hypothesis.upper()}",  # case
            f"{_full_width(premise)}\n{_full_width(hypothesis)}",  # width
            f"{premise.replace(' ', ', ', 2)}!\n{hypothesis}?",  # punctuation
            f"{changed}\n{hypothesis}",  # one word changed
            f"{premise} {hypothesis}",  # one line
            f"{filler[0]} As we read, {premise} {hypothesis}, or so it goes. {filler[1]}",  # inline in a paragraph
            premise,  # premise only
            f"{premise}\n" + "\n".join(filler * 3) + f"\n{hypothesis}",  # far apart
            " ".join([f"{premise} {hypothesis}"] * 4)]  # repeated
    expected = _reference_records(documents)
    records = index.match(_documents(documents))
    got = {(r["source_id"], r["row"]): (r["jaccard"], r["longest_ngram"], r["ngram_fraction"], r["exact"])
           for r in records}
    assert got == {key: value[:4] for key, value in expected.items()}
    kinds, _, _ = evidence_of(pa.Table.from_pylist(records, schema=record_schema()), max_matches=None)
    assert {(r["source_id"], r["row"]): kind for r, kind in zip(records, kinds)} == {
        key: value[4] for key, value in expected.items()}
    assert {value[4] for value in expected.values()} == {"exact", "near_duplicate", "ngram"}  # every kind planted
    assert not any(row < len(filler) for _, row in expected)


def test_a_long_line_of_repeated_text_reaches_the_threshold_and_is_found():
    """A row repeated four times on one line is far longer than the longest input over the threshold, and its
    Jaccard (of 5-gram sets) is still above it: found, with the independent Jaccard (issue 55: skipped before)."""
    index = _index()
    premise, hypothesis = ROWS["long"]
    line = " ".join([f"{premise} {hypothesis}"] * 4)
    assert len(line) > index.settings["longest"] / THRESHOLD + 6
    expected = _reference([line])
    sid = list(ROWS).index("long")
    assert expected[(sid, 0)][0] >= THRESHOLD  # the premise of the test
    assert _matched(index, [line]) == expected


def test_a_one_line_copy_is_exact_at_threshold_one():
    """Premise and hypothesis copied on one line: the same normalised input (a line break is whitespace), so
    Jaccard 1.0 and exact, found at ``--threshold 1.0``; a line with one word changed is not."""
    index = _index(threshold=1.0)
    premise, hypothesis = ROWS["ten"]
    records = index.match(_documents([f"{premise} {hypothesis}", f"{premise} {hypothesis} today"]))
    sid = list(ROWS).index("ten")
    assert [(r["source_id"], r["row"], r["jaccard"], r["exact"]) for r in records if r["jaccard"] is not None] == [
        (sid, 0, 1.0, True)]


# ---------------------------------------------------------------------------------------------
# Through the command: verdicts, inputs, resume
# ---------------------------------------------------------------------------------------------


def _test_rows(release):
    import datasets

    (path,) = (release / "random").glob("test-*.parquet")
    names = datasets.Dataset.from_parquet(str(path)).features["label"].names
    return pd.read_parquet(path), names


def _jsonl(path, rows) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in rows)


def _run(capsys, release, corpus, work, *extra) -> dict:
    capsys.readouterr()
    code = main(["audit", str(release), "--against-corpus", str(corpus), "--work", str(work), "--configs", "random",
                 "--json", "--no-progress", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    return json.loads(out)


def test_n_gram_only_rows_are_contaminated_by_default_reported_or_cut_off(small_release, capsys, tmp_path):
    """A test row's first 13 words inside a sentence (its only evidence) in two documents: contaminated by default,
    with its evidence and fraction in --rows and left out by --write-clean; clean but reported with
    ``--ngram-policy report``; no evidence with ``--ngram-max-matches 1`` (an n-gram in more documents)."""
    test, _ = _test_rows(small_release)
    row = max(test.itertuples(), key=lambda r: len(_words(_text(r.premise, r.hypothesis))))
    words = _words(_text(row.premise, row.hypothesis))
    corpus = tmp_path / "web"
    corpus.mkdir()
    _jsonl(corpus / "a.jsonl.gz", [{"text": f"As they say, {' '.join(words[:13])} and so on.", "id": "x"},
                                   {"text": f"Quote: {' '.join(words[:13])}!", "id": "y"}])
    work, rows = tmp_path / "work", tmp_path / "rows.parquet"
    fraction = round(1 / len(_grams(words)), 6)
    link = tmp_path / "link.parquet"
    link.symlink_to(tmp_path / "elsewhere.parquet")
    line = refused_in_one_line(["audit", str(small_release), "--configs", "random", "--no-progress",
                                "--against-corpus", str(corpus), "--work", str(work), "--corpus-matches", str(link)],
                               capsys, corpus)
    assert "--corpus-matches" in line and "link" in line and not work.exists()
    matches = tmp_path / "matches.parquet"
    report = _run(capsys, small_release, corpus, work, "--rows", str(rows), "--write-clean", str(tmp_path / "clean"),
                  "--corpus-matches", str(matches))
    got = pd.read_parquet(rows).set_index("source_id").loc[row.source_id]
    assert (got.tier, got.evidence, got.ngram_fraction, got.match_id) == ("input_contaminated", "ngram", fraction,
                                                                          "x")
    found = pd.read_parquet(matches)  # the corpus side: both documents, for a pretraining team to filter
    assert [(r.shard, r.row, r.document, r.source_id, r.evidence, r.ngram_fraction) for r in found.itertuples()] == [
        ("a.jsonl.gz", 0, "x", row.source_id, "ngram", fraction), ("a.jsonl.gz", 1, "y", row.source_id, "ngram",
                                                                   fraction)]
    assert report["against"]["random"]["test"]["ngram_only"] == 1
    clean = pd.read_parquet(next((tmp_path / "clean" / "random").glob("test-*.parquet")))
    assert row.source_id not in set(clean.source_id) and len(clean) == len(test) - 1
    _run(capsys, small_release, corpus, work, "--rows", str(rows), "--ngram-policy", "report", "--overwrite")
    got = pd.read_parquet(rows).set_index("source_id").loc[row.source_id]
    assert (got.tier, got.evidence, got.ngram_fraction) == ("clean", "ngram", fraction)
    report = _run(capsys, small_release, corpus, work, "--rows", str(rows), "--ngram-max-matches", "1",
                  "--overwrite")
    got = pd.read_parquet(rows).set_index("source_id").loc[row.source_id]
    assert got.tier == "clean" and pd.isna(got.evidence) and report["corpus"]["common_ngrams"] == 1


def test_inputs_are_checked_never_coerced(small_release, capsys, tmp_path):
    """A text field of numbers (Parquet) or lists (a JSONL row) is refused in one line naming shard, field and
    type; rows without the field or null are counted in the report; empty shards (0 bytes, an empty gzip) are left
    out and counted; ``string`` and ``large_string`` shards are one schema."""
    base = ["audit", str(small_release), "--configs", "random", "--no-progress", "--against-corpus"]
    numbers = tmp_path / "numbers"
    numbers.mkdir()
    pd.DataFrame({"text": [1, 2], "id": ["a", "b"]}).to_parquet(numbers / "a.parquet")
    line = refused_in_one_line([*base, str(numbers), "--work", str(tmp_path / "w1")], capsys, numbers)
    assert "a.parquet" in line and "'text'" in line and "int64" in line
    lists = tmp_path / "lists"
    lists.mkdir()
    _jsonl(lists / "a.jsonl.gz", [{"text": "a plain row", "id": "1"}, {"text": ["a", "b"], "id": "2"}])
    line = refused_in_one_line([*base, str(lists), "--work", str(tmp_path / "w2")], capsys, lists)
    assert "a.jsonl.gz" in line and "'text'" in line and "list" in line
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _jsonl(mixed / "a.jsonl.gz", [{"text": "first row", "id": "1"}, {"id": "2"}, {"text": None, "id": "3"},
                                  {"text": "", "id": "4"}])
    (mixed / "b.jsonl").write_bytes(b"")
    with gzip.open(mixed / "c.jsonl.gz", "wb"):
        pass
    report = _run(capsys, small_release, mixed, tmp_path / "w3")
    assert report["corpus"]["without_text"] == {"missing": 1, "null": 1, "empty": 1}
    assert report["corpus"]["empty_shards"] == ["b.jsonl", "c.jsonl.gz"] and report["corpus"]["documents"] == 2
    wide = tmp_path / "wide"
    wide.mkdir()
    pq.write_table(pa.table({"text": pa.array(["one"], pa.string())}), wide / "a.parquet")
    pq.write_table(pa.table({"text": pa.array(["two"], pa.large_string())}), wide / "b.parquet")
    assert _run(capsys, small_release, wide, tmp_path / "w4")["corpus"]["documents"] == 2


def test_a_resume_redoes_what_changed_and_reads_class_numbers_by_name(small_release, capsys, tmp_path):
    """Shards rewritten after a run, or a task's records deleted: those tasks are redone and the result is a fresh
    run's, never the old one's; a corpus whose labels are class numbers (no names) is compared by class name."""
    test, names = _test_rows(small_release)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    filler = [{"text": f"background document number {k}", "id": f"f{k}", "label": 0} for k in range(4)]
    copy = lambda r: {"text": f"{r.premise}\n{r.hypothesis}", "id": f"c{r.source_id}", "label": int(r.label)}  # noqa
    pq.write_table(pa.Table.from_pylist(filler[:2] + [copy(test.iloc[0])]), corpus / "a.parquet")
    pq.write_table(pa.Table.from_pylist(filler[2:]), corpus / "b.parquet")
    work = tmp_path / "work"
    first = _run(capsys, small_release, corpus, work, "--tasks", "2")
    assert first["against"]["random"]["test"]["input_label_contaminated"] == 1  # class numbers by name
    assert first["corpus"]["labels_read_as"] == list(names)
    # b.parquet rewritten with a copy of another row (same name, another size and time)
    pq.write_table(pa.Table.from_pylist(filler[2:] + [copy(test.iloc[1])]), corpus / "b.parquet")
    os.utime(corpus / "b.parquet", ns=(1, 1))
    resumed = _run(capsys, small_release, corpus, work, "--tasks", "2")
    fresh = _run(capsys, small_release, corpus, tmp_path / "fresh", "--tasks", "2")
    assert resumed["against"] == fresh["against"] and resumed["corpus"]["redone"] == 1
    assert resumed["against"]["random"]["test"]["input_label_contaminated"] == 2
    assert (work / "records.parquet").read_bytes() == (tmp_path / "fresh" / "records.parquet").read_bytes()
    # a task's records deleted: redone, the same records
    (record,) = (work / "matches").glob("*00000.parquet")
    record.unlink()
    again = _run(capsys, small_release, corpus, work, "--tasks", "2")
    assert again["against"] == fresh["against"] and again["corpus"]["redone"] == 1


def test_settings_that_match_everything_are_refused_with_their_cost(small_release, capsys, tmp_path):
    base = ["audit", str(small_release), "--configs", "random", "--no-progress", "--against-corpus", str(tmp_path),
            "--work", str(tmp_path / "w")]
    line = refused_in_one_line([*base, "--ngram", "2"], capsys)
    assert "--ngram 2" in line and "781k records" in line
    line = refused_in_one_line([*base, "--threshold", "0.1"], capsys)
    assert "--threshold 0.1" in line and "1.4 GB" in line
    assert not (tmp_path / "w").exists()


def test_several_releases_in_one_pass_equal_their_own_runs(small_release, capsys, tmp_path):
    """``--also``: TARGET (two input fields) and a second release (one field: a TARGET row on one line, a long
    two-sentence row, a Russian row) checked in one pass give, per release, the report, ``--rows``,
    ``--corpus-matches`` and records of that release's own run (its n-grams hashed as its own run hashes them; the
    two-line run that only TARGET's inputs compare is no near-duplicate of the one-field row); the work folder
    records both releases and a resume with another set is refused."""
    test, _ = _test_rows(small_release)
    row, other = test.iloc[0], test.iloc[1]
    long_row = " ".join(ROWS["long"]) + " " + ROWS["ten"][0] + " while their parents read books"
    second = tmp_path / "release"
    second.mkdir()
    pd.DataFrame({"text": [f"{row.premise} {row.hypothesis}", long_row, ROWS["ru"][0]],
                  "label": ["a", "b", "a"]}).to_parquet(second / "test.parquet")
    half = len(long_row.split()) // 2
    corpus = tmp_path / "web"
    corpus.mkdir()
    _jsonl(corpus / "a.jsonl.gz", [{"text": t, "id": f"d{k}"} for k, t in enumerate([
        f"{row.premise}\n{row.hypothesis}", f"{row.premise} {row.hypothesis}",
        "An unrelated first line about the weather, long enough not to be part of any copy at all here.\n"
        + " ".join(long_row.split()[:half]) + "\n" + " ".join(long_row.split()[half:]),
        f"Новости: {ROWS['ru'][0]}, говорят.", f"Quote: {other.premise} {other.hypothesis} and more",
        "filler text"])])
    outputs = {}
    for name, release, extra in (("first", small_release, ["--configs", "random"]), ("second", second, []),
                                 ("both", small_release, ["--configs", "random", "--also", str(second)])):
        capsys.readouterr()
        code = main(["audit", str(release), "--against-corpus", str(corpus), "--work", str(tmp_path / f"{name}-work"),
                     "--json", "--no-progress", "--rows", str(tmp_path / f"{name}-rows.parquet"),
                     "--corpus-matches", str(tmp_path / f"{name}-matches.parquet"), *extra])
        out, err = capsys.readouterr()
        assert code == 0, err[-2000:]
        outputs[name] = json.loads(out)
    both = outputs["both"]["releases"]
    assert [r["target"] for r in both] == [str(small_release), str(second)]
    for k, name in enumerate(("first", "second")):
        mine, alone = both[k], outputs[name]
        assert mine["against"] == alone["against"] and mine["corpus"]["records"] == alone["corpus"]["records"]
        for kind in ("records", "rows", "matches"):
            together = pq.read_table(tmp_path / "both-work" / "records.parquet" if kind == "records"
                                     else tmp_path / f"both-{kind}.parquet")
            assert together.column_names[0] == "release"
            together = together.filter(pa.compute.equal(together.column("release"), mine["target"]))
            own = pq.read_table(tmp_path / f"{name}-work" / "records.parquet" if kind == "records"
                                else tmp_path / f"{name}-{kind}.parquet")
            assert together.drop_columns(["release"]).equals(own), (name, kind)
    records = pq.read_table(tmp_path / "second-work" / "records.parquet").to_pylist()
    assert {(r["document"], r["exact"], r["jaccard"] is None, r["ngram_overlap"]) for r in records} == {
        ("d0", False, False, True), ("d1", True, False, True), ("d2", False, True, True), ("d3", False, False, True)}
    assert outputs["both"]["releases"][0]["against"]["random"]["test"]["exact"] == 1
    line = refused_in_one_line(["audit", str(small_release), "--configs", "random", "--no-progress",
                                "--against-corpus", str(corpus), "--work", str(tmp_path / "both-work")], capsys, corpus)
    assert "--also none" in line and f"--also {second}" in line
    base = ["audit", str(small_release), "--no-progress", "--against-corpus", str(corpus), "--work",
            str(tmp_path / "refused")]
    line = refused_in_one_line([*base, "--also", str(second), "--also", str(second)], capsys, corpus)
    assert "given twice" in line
    line = refused_in_one_line([*base, "--also", str(second), "--write-clean", str(tmp_path / "clean")], capsys,
                               corpus)
    assert "--write-clean" in line and "--rows" in line and not (tmp_path / "refused").exists()
