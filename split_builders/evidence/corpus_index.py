"""The evaluation side of ``resplit audit TARGET --against-corpus SOURCE`` (:mod:`.corpus`): the index of every
evaluation row (:class:`EvaluationIndex`: MinHash signatures and LSH bands of :mod:`.near_duplicates`, the word
n-gram set of the GPT-3 / lm-evaluation-harness convention, the word vocabulary) and its matching of a batch of
corpus documents, as one record per match (:data:`RECORD_COLUMNS`). No datatrove here: :mod:`.corpus_steps`
wraps it in a datatrove step.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.evidence.contamination import evaluation_pool, label_strings
from split_builders.evidence.near_duplicates import (NGRAM, NUM_PERM, BandIndex, cross_jaccard, examples_text,
                                                     normalise, shingle_hashes, signatures_of)
from split_builders.evidence.pools import distinct, value_codes

WORD_NGRAM = 13  # GPT-3 / lm-evaluation-harness decontamination
BATCH_DOCS = 2000  # documents matched at once by one task
READ_BATCH = 1000  # Parquet rows read at once by datatrove's reader
INDEX_FORMAT = 2  # 2: Unicode words, the n-gram floor and fractions, exact one-line copies
_P = 0x100000001B3  # the word n-gram hash: sum of (word id + 1) * P**-k, modulo 2**64
_Q = pow(_P, -1, 1 << 64)
_MIX = 0x9E3779B97F4A7C15
WORD_NGRAM_MIN = 8  # GPT-3's floor: an input of fewer words has no n-gram of its own (exact / near only)
# Words, in any language: runs of Unicode letters, marks, digits and underscores (Python's and the ``regex``
# package's ``\w``; punctuation dropped, as the harness's janitor drops it); in the scripts written without spaces
# between words (Han ideographs, Hiragana, Katakana) each character is a word of its own. Both sides (the index of
# evaluation rows and the corpus's lines) go through :func:`_words`.
_NOT_WORD = r"[^\p{L}\p{M}\p{N}_]+"
_ONE_CHARACTER = r"([\p{Han}\p{Hiragana}\p{Katakana}])"


def record_schema(releases: bool = False):
    """The match records' columns; ``releases``: an index of several releases (:mod:`.corpus_releases`) tags each
    record with its release's position (``release``, last)."""
    import pyarrow as pa

    return pa.schema([("config", pa.string()), ("split", pa.string()), ("source_id", pa.int64()),
                      ("shard", pa.string()), ("row", pa.int64()), ("document", pa.string()),
                      ("jaccard", pa.float64()), ("longest_ngram", pa.int32()), ("ngram_overlap", pa.bool_()),
                      ("exact", pa.bool_()), ("label", pa.string()), ("ngram_fraction", pa.float64()),
                      ("ngrams", pa.list_(pa.uint64())), *([("release", pa.int32())] if releases else [])])


# ---------------------------------------------------------------------------------------------
# Words and their n-grams (both sides, one function each)
# ---------------------------------------------------------------------------------------------


def _words(lines):
    """The words of normalised lines: a list array, one list per line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = pc.replace_substring_regex(lines.cast(pa.large_string()), _NOT_WORD, " ")
    lines = pc.replace_substring_regex(lines, _ONE_CHARACTER, r" \1 ")
    split = pc.utf8_split_whitespace(pc.utf8_trim_whitespace(lines))
    flat = split.flatten()
    kept = np.asarray(pc.greater(pc.utf8_length(flat), 0).to_numpy(zero_copy_only=False), dtype=bool)
    if kept.all():
        return split
    counts = np.add.reduceat(kept.astype(np.int64), np.asarray(split.offsets)[:-1]) if kept.size else kept
    counts = np.where(np.diff(np.asarray(split.offsets)) > 0, counts, 0)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), flat.filter(pa.array(kept)))


def _splitmix(values: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        values = values ^ (values >> np.uint64(30))
        values = values * np.uint64(0xBF58476D1CE4E5B9)
        values = values ^ (values >> np.uint64(27))
        values = values * np.uint64(0x94D049BB133111EB)
        return values ^ (values >> np.uint64(31))


def _prefix(ids: np.ndarray):
    """What every window length of :func:`_window_hashes` shares: the prefix sums of ``(id + 1) * Q**k``, the
    powers ``P**k`` and the running count of unknown words."""
    n = ids.size
    with np.errstate(over="ignore"):
        inverse = np.full(n, _Q, dtype=np.uint64)
        power = np.full(n, _P, dtype=np.uint64)
        if n:
            inverse[0] = power[0] = 1
        inverse = np.cumprod(inverse, dtype=np.uint64)  # Q**k
        power = np.cumprod(power, dtype=np.uint64)  # P**k
        values = (ids.astype(np.int64) + 1).astype(np.uint64) * inverse
    prefix = np.concatenate([np.zeros(1, np.uint64), np.cumsum(values, dtype=np.uint64)])
    unknown = np.concatenate([[0], np.cumsum(ids < 0)])
    return prefix, power, unknown


def _window_hashes(ids: np.ndarray, owner: np.ndarray, length: int, shared=None):
    """``(starts, hashes)`` of every window of ``length`` consecutive word ids with one owner and no unknown word
    (id -1): ``sum(ids[s + k] + 1) * P**-k`` modulo 2**64, mixed with the length."""
    n = ids.size
    if n < length:
        return np.empty(0, np.int64), np.empty(0, np.uint64)
    prefix, power, unknown = shared if shared is not None else _prefix(ids)
    starts = np.arange(n - length + 1)
    ok = (unknown[starts + length] == unknown[starts]) & (owner[starts] == owner[starts + length - 1])
    starts = starts[ok]
    with np.errstate(over="ignore"):
        hashes = (prefix[starts + length] - prefix[starts]) * power[starts]
        hashes = _splitmix(hashes + np.uint64(length) * np.uint64(_MIX))
    return starts, hashes


def _shingle_rows(points: np.ndarray) -> np.ndarray:
    """The 32-bit character-``NGRAM`` shingle hashes of :func:`~.near_duplicates.shingle_hashes` (the same
    polynomial and finaliser, so the same values), of texts of one length given as a ``(texts, characters)``
    array of code points: one row of hashes per text."""
    points = points.astype(np.uint64) + np.uint64(1)
    windows = points.shape[1] - NGRAM + 1
    value = points[:, :windows].copy()
    with np.errstate(over="ignore"):
        for j in range(1, NGRAM):
            value *= np.uint64(0x100000001B3)
            value += points[:, j:j + windows]
    return (_splitmix(value) >> np.uint64(32)).astype(np.uint32)


def _distinct_per_row(values: np.ndarray) -> np.ndarray:
    """How many distinct values each row of a 2-D array holds."""
    if not values.shape[1]:
        return np.zeros(len(values), dtype=np.int64)
    ordered = np.sort(values, axis=1)
    return 1 + np.count_nonzero(ordered[:, 1:] != ordered[:, :-1], axis=1)


def _longest_run(a: np.ndarray, b: np.ndarray) -> int:
    """The longest run of consecutive words shared by word-id sequences ``a`` and ``b`` (unknown words, -1,
    never match)."""
    if not a.size or not b.size:
        return 0
    previous = np.zeros(b.size + 1, dtype=np.int32)
    best = 0
    for word in a.tolist():
        current = np.zeros(b.size + 1, dtype=np.int32)
        if word >= 0:
            current[1:] = np.where(b == word, previous[:-1] + 1, 0)
            best = max(best, int(current.max()))
        previous = current
    return best


# ---------------------------------------------------------------------------------------------
# The evaluation index
# ---------------------------------------------------------------------------------------------


@dataclass
class EvaluationIndex:
    """The target's evaluation rows, indexed: ``texts`` (distinct normalised inputs), ``rows`` (a table: config,
    split, source_id, text, label per evaluation row), their MinHash ``signatures`` and ``filled`` (has a
    shingle), the word ``vocabulary``, each text's word ids, and the word n-grams (``grams``: sorted hashes,
    ``gram_texts``: their text, ``gram_lengths``: the n-gram lengths in use)."""

    texts: list
    rows: object
    signatures: np.ndarray
    filled: np.ndarray
    vocabulary: list
    text_words: list
    grams: np.ndarray
    gram_texts: np.ndarray
    gram_lengths: list
    settings: dict
    _band: object = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)

    # -- building --------------------------------------------------------------------------

    @classmethod
    def build(cls, parts: dict, fields, *, threshold: float, ngram: int = WORD_NGRAM,
              ngram_min: int = WORD_NGRAM_MIN, where: str = "the target", label_names=None) -> "EvaluationIndex":
        import pyarrow as pa

        pool, inputs, label, names_of = evaluation_pool(parts, fields, where=where, against="a corpus",
                                                        label_names=label_names)
        text_codes, texts = value_codes(examples_text(pool.table, inputs), values=True)
        texts = [t or "" for t in texts]
        labels = (label_strings(pool.table.column(label), names_of.get(label)).to_pylist()
                  if label and label in pool.table.column_names else [None] * pool.table.num_rows)
        tables = []
        for (config, split), at in pool.rows.items():
            codes = text_codes[at]
            keep = codes >= 0
            tables.append(pa.table({
                "config": pa.array([config] * int(keep.sum()), pa.string()),
                "split": pa.array([split] * int(keep.sum()), pa.string()),
                "source_id": pa.array(pool.ids[(config, split)][keep], pa.int64()),
                "text": pa.array(codes[keep], pa.int64()),
                "label": pa.array([labels[k] for k in at[keep].tolist()], pa.string())}))
        every = pa.concat_tables(tables) if tables else None
        counts = {f"{config}/{split}": int(len(at)) for (config, split), at in pool.rows.items()}
        signatures, filled = signatures_of(texts)
        filled &= np.array([bool(t) for t in texts], dtype=bool)
        vocabulary, text_words = cls._vocabulary(texts)
        ngram_min = min(ngram_min, ngram)
        grams, gram_texts, lengths = cls._grams(text_words, ngram, ngram_min)
        values, offsets = shingle_hashes(texts)
        owner = np.repeat(np.arange(len(texts)), np.diff(offsets))
        shingles = int(np.bincount(distinct((owner << 32) | values.astype(np.int64)) >> 32).max()) \
            if values.size else 0  # the most distinct shingles of an input: the bound on passages
        settings = {"format": INDEX_FORMAT, "threshold": threshold, "ngram": NGRAM, "num_perm": NUM_PERM,
                    "word_ngram": ngram, "word_ngram_min": ngram_min, "input_fields": inputs, "label_field": label,
                    "label_names": list(names_of.get(label) or ()) if label else [],
                    "fields_per_input": max(1, len(inputs)), "rows": counts,
                    "longest": max((len(t) for t in texts), default=0), "shingles": shingles}
        return cls(texts, every, signatures, filled, vocabulary, text_words, grams, gram_texts, lengths, settings)

    @staticmethod
    def _vocabulary(texts: list):
        import pyarrow as pa

        words = _words(pa.array(texts, pa.large_string()))
        codes, vocabulary = value_codes(words.flatten(), values=True)
        offsets = np.asarray(words.offsets)
        return vocabulary, [codes[offsets[k]:offsets[k + 1]] for k in range(len(texts))]

    @staticmethod
    def _grams(text_words: list, ngram: int, ngram_min: int):
        """The sorted distinct ``(hash, text)`` of every text's word n-grams: ``ngram`` words, or the whole text
        where it has from ``ngram_min`` to ``ngram - 1`` words; a text of fewer than ``ngram_min`` words has none."""
        sizes = np.array([len(w) for w in text_words], dtype=np.int64)
        owner = np.repeat(np.arange(len(text_words)), sizes)
        ids = np.concatenate(text_words) if text_words else np.empty(0, np.int64)
        hashes, texts, lengths = [], [], []
        for length in sorted({ngram, *[int(s) for s in sizes if ngram_min <= s < ngram]}):
            starts, values = _window_hashes(ids, owner, length)
            mine = sizes[owner[starts]] >= ngram if length == ngram else sizes[owner[starts]] == length
            if mine.any():
                hashes.append(values[mine])
                texts.append(owner[starts][mine])
                lengths.append(length)
        hashes = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
        texts = np.concatenate(texts) if texts else np.empty(0, np.int64)
        order = np.lexsort((texts, hashes))
        keys = np.stack([hashes[order], texts[order].astype(np.uint64)], axis=1)
        keep = np.concatenate([[True], np.any(keys[1:] != keys[:-1], axis=1)]) if len(keys) else np.zeros(0, bool)
        return hashes[order][keep], texts[order][keep], lengths

    # -- the work folder -------------------------------------------------------------------

    def fingerprint(self) -> str:
        """sha256 of what the index holds (the evaluation rows and inputs, the settings that change matches);
        computed once (a run asks for it at every step: the work folder, the resume check, each task)."""
        if self._fingerprint is not None:
            return self._fingerprint
        digest = hashlib.sha256()
        several = ("releases", "text_widths") if "releases" in self.settings else ()  # :mod:`.corpus_releases`
        digest.update(json.dumps({k: self.settings.get(k) for k in ("format", "threshold", "word_ngram",
                                                                     "word_ngram_min", "input_fields", "label_field",
                                                                     "label_names", *several)},
                                 sort_keys=True).encode())
        for text in self.texts:
            digest.update(text.encode("utf-8") + b"\0")
        for name in ("config", "split", "source_id", "text", "label", *(["release"] if several else [])):
            digest.update(json.dumps(self.rows.column(name).to_pylist()).encode())
        self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def save(self, folder: Path) -> None:
        """Written beside ``folder`` and moved into place (Parquet, ``.npy`` and JSON; no pickles)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        folder = Path(folder)
        staging = Path(tempfile.mkdtemp(prefix=".index.", dir=folder.parent))
        try:
            pq.write_table(pa.table({"text": pa.array(self.texts, pa.large_string())}), staging / "texts.parquet")
            pq.write_table(self.rows, staging / "rows.parquet")
            pq.write_table(pa.table({"word": pa.array(self.vocabulary, pa.large_string())}),
                           staging / "vocabulary.parquet")
            np.save(staging / "signatures.npy", self.signatures, allow_pickle=False)
            np.save(staging / "filled.npy", self.filled, allow_pickle=False)
            np.save(staging / "grams.npy", self.grams, allow_pickle=False)
            np.save(staging / "gram_texts.npy", self.gram_texts, allow_pickle=False)
            (staging / "index.json").write_text(json.dumps({**self.settings, "gram_lengths": self.gram_lengths,
                                                            "fingerprint": self.fingerprint()}, sort_keys=True),
                                                encoding="utf-8")
            os.replace(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @classmethod
    def load(cls, folder) -> "EvaluationIndex":
        import pyarrow.parquet as pq

        folder = Path(folder)
        settings = json.loads((folder / "index.json").read_text(encoding="utf-8"))
        texts = pq.read_table(folder / "texts.parquet").column("text").to_pylist()
        vocabulary = pq.read_table(folder / "vocabulary.parquet").column("word").to_pylist()
        _, text_words = cls._vocabulary(texts)
        load = lambda name: np.load(folder / name, allow_pickle=False)  # noqa: E731
        return cls(texts, pq.read_table(folder / "rows.parquet"), load("signatures.npy"), load("filled.npy"),
                   vocabulary, text_words, load("grams.npy"), load("gram_texts.npy"), settings.pop("gram_lengths"),
                   settings)

    # -- matching --------------------------------------------------------------------------

    @property
    def band(self) -> BandIndex:
        if self._band is None:
            self._band = BandIndex(self.signatures, self.filled, threshold=self.settings["threshold"])
            import pyarrow as pa

            self._texts_array = pa.array(self.texts, pa.large_string())
            # an input of several fields copied on one line (the fields joined by a space, as the normalisation
            # makes every other run of whitespace): the same normalised input
            self._joined = np.array([k for k, t in enumerate(self.texts) if "\n" in t], dtype=np.int64)
            self._joined_array = pa.array([self.texts[k].replace("\n", " ") for k in self._joined.tolist()],
                                          pa.large_string())
            self._gram_counts = np.bincount(self.gram_texts.astype(np.int64), minlength=len(self.texts))
            self._vocabulary_array = pa.array(self.vocabulary, pa.large_string())
            self._row_order = np.argsort(np.asarray(self.rows.column("text").to_numpy()), kind="stable")
            self._row_texts = np.asarray(self.rows.column("text").to_numpy())[self._row_order]
            self._row_values = {name: self.rows.column(name).to_pylist() for name in ("config", "split", "source_id",
                                                                                     "label", "release")
                                if name in self.rows.column_names}
            # several releases (:mod:`.corpus_releases`): each input's own number of fields, so that a release is
            # matched on the passages its own run would compare (runs of up to as many lines as its inputs have
            # fields, and the whole document), never on longer runs another release's inputs need
            widths = self.settings.get("text_widths")
            self._widths = np.asarray(widths, dtype=np.int64) if widths else None
        return self._band

    def match(self, documents: list) -> list[dict]:
        """The records of a batch of datatrove documents (``metadata``: ``shard``, ``row``, ``label``): one per
        evaluation row and document that match, by Jaccard (a passage at or above the threshold) or by a shared
        word n-gram."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not documents:
            return []
        band = self.band
        threshold = self.settings["threshold"]
        n = len(documents)
        split_lines = pc.split_pattern(pa.array([d.text for d in documents], pa.large_string()), "\n")
        line_doc = np.repeat(np.arange(n), np.diff(np.asarray(split_lines.offsets)))
        lines = normalise(split_lines.flatten())
        nonempty = np.asarray(pc.greater(pc.utf8_length(lines), 0).fill_null(False).to_numpy(zero_copy_only=False),
                              dtype=bool)
        lines = lines.filter(pa.array(nonempty))
        line_doc = line_doc[nonempty]
        per_doc = np.bincount(line_doc, minlength=n)
        pairs = self._near(lines, line_doc, per_doc, band, threshold)  # {(text, doc): (jaccard, exact)}
        words = _words(lines)
        word_ids = np.asarray(pc.index_in(words.flatten(), value_set=self._vocabulary_array).fill_null(-1)
                              .to_numpy(zero_copy_only=False), dtype=np.int64)
        word_doc = np.repeat(line_doc, np.diff(np.asarray(words.offsets)))
        shared = self._shared_grams(word_ids, word_doc)  # {(text, doc): the text's n-grams found}
        found = sorted(set(pairs) | set(shared))
        if not found:
            return []
        doc_start = np.searchsorted(word_doc, np.arange(n), "left")
        doc_end = np.searchsorted(word_doc, np.arange(n), "right")
        records = []
        for text, doc in found:
            jaccard, exact = pairs.get((text, doc), (None, False))
            longest = _longest_run(self.text_words[text], word_ids[doc_start[doc]:doc_end[doc]])
            grams = sorted(shared.get((text, doc), ()))
            fraction = round(len(grams) / int(self._gram_counts[text]), 6) if grams else None
            document = documents[doc]
            lo = np.searchsorted(self._row_texts, text, "left")
            hi = np.searchsorted(self._row_texts, text, "right")
            for at in self._row_order[lo:hi].tolist():
                records.append({"config": self._row_values["config"][at], "split": self._row_values["split"][at],
                                "source_id": int(self._row_values["source_id"][at]),
                                "shard": str(document.metadata.get("shard")), "row": int(document.metadata["row"]),
                                "document": str(document.id), "jaccard": jaccard, "longest_ngram": int(longest),
                                "ngram_overlap": bool(grams), "exact": bool(exact),
                                "label": document.metadata.get("label"), "ngram_fraction": fraction,
                                "ngrams": grams, **({"release": self._row_values["release"][at]}
                                                    if "release" in self._row_values else {})})
        return records

    def _near(self, lines, line_doc, per_doc, band, threshold) -> dict:
        """``{(text, document): (best Jaccard, exact)}`` of the documents' passages at or above the threshold."""
        import pyarrow as pa
        import pyarrow.compute as pc

        cap = int(self.settings["longest"] / threshold) + NGRAM + 1  # a passage this short is always compared
        # a lower bound of each line's distinct shingles (its first characters'; 0 for a short line): a run of
        # lines, or the whole document, holds every shingle of each of its lines (:meth:`_can_reach`)
        long_line = np.asarray(pc.greater(pc.utf8_length(lines), cap).to_numpy(zero_copy_only=False), dtype=bool)
        line_low = np.zeros(len(lines), dtype=np.int64)
        if long_line.any():
            line_low[long_line] = self._prefix_shingles(lines.filter(pa.array(long_line)), threshold)
        passages, owners, lows, spans = [], [], [], []
        width = int(self.settings["fields_per_input"])
        first_line = np.concatenate([[0], np.cumsum(per_doc)])[:-1]
        for w in range(1, width + 1):
            start = np.arange(max(len(lines) - w + 1, 0))
            start = start[line_doc[start] == line_doc[start + w - 1]] if start.size else start
            if not start.size:
                continue
            parts = [lines.take(pa.array(start + k)) for k in range(w)]
            joined = parts[0] if w == 1 else pc.binary_join_element_wise(*parts, pa.scalar("\n", pa.large_string()))
            passages.append(joined)
            owners.append(line_doc[start])
            lows.append(np.max([line_low[start + k] for k in range(w)], axis=0))
            whole = (start == first_line[line_doc[start]]) & (per_doc[line_doc[start]] == w)
            spans.append(np.where(whole, 0, w))  # 0: the whole document (compared for every input)
        longer = np.flatnonzero(per_doc > width)  # the whole document, where it is more than one run of lines
        if longer.size:
            offsets = np.concatenate([[0], np.cumsum(per_doc)])
            listed = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), lines)
            whole = pc.binary_join(listed, pa.scalar("\n", pa.large_string()))
            passages.append(whole.take(pa.array(longer)))
            owners.append(longer)
            has_lines = per_doc > 0
            doc_low = np.zeros(len(per_doc), dtype=np.int64)
            doc_low[has_lines] = np.maximum.reduceat(line_low, offsets[:-1][has_lines])
            lows.append(doc_low[longer])
            spans.append(np.zeros(longer.size, dtype=np.int64))
        if not passages:
            return {}
        single = sum(len(p) for p in passages[:1])  # the first block: the lines themselves (already bounded)
        passages = pa.concat_arrays([p.cast(pa.large_string()) for p in passages])
        owners = np.concatenate(owners)
        lows = np.concatenate(lows)
        spans = np.concatenate(spans)
        short = np.asarray(pc.less_equal(pc.utf8_length(passages), cap).to_numpy(zero_copy_only=False), dtype=bool)
        bounded = np.arange(len(passages)) < single
        short[~short] = self._can_reach(passages.filter(pa.array(~short)), threshold, lows[~short], bounded[~short])
        passages, owners, spans = passages.filter(pa.array(short)), owners[short], spans[short]
        if not len(passages):
            return {}
        codes, values = value_codes(passages, values=True)
        values = [v or "" for v in values]
        same = np.asarray(pc.index_in(pa.array(values, pa.large_string()), value_set=self._texts_array)
                          .fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        exact_values = np.flatnonzero((same >= 0) & self.filled[np.maximum(same, 0)])
        same = same[exact_values]
        if self._joined.size:  # several fields on one line (also where another release has that line as an input)
            joined = np.asarray(pc.index_in(pa.array(values, pa.large_string()), value_set=self._joined_array)
                                .fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            joined_values = np.flatnonzero(joined >= 0)
            joined = self._joined[joined[joined_values]]
            keep = self.filled[joined]
            exact_values = np.concatenate([exact_values, joined_values[keep]])
            same = np.concatenate([same, joined[keep]])
        signatures, filled = signatures_of(values)
        filled &= np.array([bool(v) for v in values], dtype=bool)
        candidates = band.candidates(signatures, filled)
        jaccard = cross_jaccard(self.texts, values, candidates)
        kept = jaccard >= threshold
        text = np.concatenate([same, candidates[kept, 0]])
        value = np.concatenate([exact_values, candidates[kept, 1]])
        score = np.concatenate([np.ones(exact_values.size), jaccard[kept]])
        is_exact = np.concatenate([np.ones(exact_values.size, bool), np.zeros(int(kept.sum()), bool)])
        out: dict = {}
        if not text.size:
            return out
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        for t, v, j, e in zip(text.tolist(), value.tolist(), score.tolist(), is_exact.tolist()):
            lo, hi = np.searchsorted(sorted_codes, v, "left"), np.searchsorted(sorted_codes, v, "right")
            at = order[lo:hi]
            if self._widths is not None:  # several releases: the passages this input's own run compares
                at = at[spans[at] <= self._widths[t]]
            for doc in np.unique(owners[at]).tolist():
                best, was_exact = out.get((t, doc), (0.0, False))
                out[(t, doc)] = (max(best, round(j, 6)), was_exact or e)
        return out

    def _bound(self, threshold: float) -> float:
        return self.settings["shingles"] / threshold * (1 + 1e-12)

    def _prefix_shingles(self, passages, threshold: float) -> np.ndarray:
        """The distinct shingles of each passage's first ``2 * bound + NGRAM`` characters: a lower bound of the
        whole passage's (a subset of its shingles), enough to rule out ordinary text (a repeat or two still leaves
        more than the bound); the windows past a shorter passage's end are left out."""
        import pyarrow.compute as pc

        width = 2 * int(self._bound(threshold)) + NGRAM
        lengths = np.minimum(np.asarray(pc.utf8_length(passages).to_numpy(zero_copy_only=False)), width)
        prefix = pc.utf8_rpad(pc.utf8_slice_codeunits(passages, 0, width), width=width, padding=" ").to_pylist()
        points = np.frombuffer("".join(prefix).encode("utf-32-le"), dtype="<u4").reshape(len(prefix), width)
        hashes = _shingle_rows(points)
        past = np.arange(hashes.shape[1])[None, :] > (lengths - NGRAM)[:, None]
        hashes[past] = np.broadcast_to(hashes[:, :1], hashes.shape)[past]  # the first shingle again: no new one
        return _distinct_per_row(hashes)

    def _can_reach(self, passages, threshold: float, low: np.ndarray, bounded: np.ndarray) -> np.ndarray:
        """Whether each long passage (longer than ``longest / threshold``) can reach the threshold: the Jaccard of
        two shingle sets is at most the smaller set's size over the larger's, so a passage of more than
        ``bound = shingles / threshold`` distinct shingles (``shingles``: the most of any input) cannot. Exact
        (no passage that could reach it is skipped) and cheap: ``low`` is a lower bound of each passage's distinct
        shingles (those of its lines, ``bounded`` where it is the passage's own :meth:`_prefix_shingles`); where
        it says nothing yet, the passage's own prefix is counted; only the passages left (repeated text: few
        distinct shingles) are counted whole."""
        import pyarrow as pa

        bound = self._bound(threshold)
        keep = low <= bound
        ask = keep & ~bounded
        if ask.any():
            keep[ask] = self._prefix_shingles(passages.filter(pa.array(ask)), threshold) <= bound
        if keep.any():
            whole = passages.filter(pa.array(keep)).to_pylist()
            values, offsets = shingle_hashes(whole)
            owner = np.repeat(np.arange(len(whole), dtype=np.int64), np.diff(offsets))
            counts = np.bincount(distinct((owner << 32) | values.astype(np.int64)) >> 32, minlength=len(whole))
            keep[keep] = counts <= bound
        return keep

    def _shared_grams(self, word_ids: np.ndarray, word_doc: np.ndarray) -> dict:
        """``{(text, document): the hashes of the text's n-grams the document holds}`` (an input of fewer than
        ``N`` words: the whole input, from the floor ``word_ngram_min`` up)."""
        out: dict = {}
        if not self.grams.size:
            return out
        shared = _prefix(word_ids)
        for length in self.gram_lengths:
            starts, hashes = _window_hashes(word_ids, word_doc, length, shared)
            at = np.searchsorted(self.grams, hashes, "left")
            hit = np.flatnonzero((at < self.grams.size) & (self.grams[np.minimum(at, self.grams.size - 1)] == hashes))
            for k in hit.tolist():
                lo, hi = np.searchsorted(self.grams, hashes[k], "left"), np.searchsorted(self.grams, hashes[k], "right")
                doc = int(word_doc[starts[k]])
                for text in self.gram_texts[lo:hi].tolist():
                    words = len(self.text_words[text])
                    if (length == self.settings["word_ngram"] and words >= length) or words == length:
                        out.setdefault((int(text), doc), set()).add(int(hashes[k]))
        return out
