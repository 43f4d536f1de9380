"""Several releases checked in one pass over a corpus (``resplit audit TARGET --against-corpus SOURCE --also
RELEASE ...``): a pretraining team checks every benchmark it evaluates on while reading its corpus once.

**One index** (:func:`combine`): the distinct inputs of every release, each evaluation row tagged with its
release (``release``: its position, TARGET first), so every document is normalised, shingled and looked up once
whatever the number of releases. Each input keeps its own release's number of fields, so it is compared on the
passages a run of its release alone compares (:meth:`.corpus_index.EvaluationIndex._near`).

**One report per release** (:func:`.corpus.run_releases`): the records of each release
(:func:`release_records`: its n-gram hashes written as a run of that release alone writes them,
:func:`gram_translation`, since they are numbered by the index's vocabulary) go through the one-release merge
(:func:`.corpus.merge`), so each release's report, ``--rows`` and records are those of its own run.
``records.parquet`` holds every release's, with the release named first (:func:`named`).
"""

from __future__ import annotations

import numpy as np

from split_builders.evidence.corpus_index import EvaluationIndex, _window_hashes


def combine(indexes: list, names: list) -> EvaluationIndex:
    """The index of several releases' evaluation rows (``indexes``, built each as for a run of its own, with the
    same threshold and n-gram settings): their distinct inputs once each, every row tagged with its release."""
    import pyarrow as pa

    first = indexes[0]
    texts = list(dict.fromkeys(text for index in indexes for text in index.texts))
    at = {text: k for k, text in enumerate(texts)}
    signatures = np.zeros((len(texts), first.signatures.shape[1]), dtype=first.signatures.dtype)
    filled = np.zeros(len(texts), dtype=bool)
    widths = np.zeros(len(texts), dtype=np.int64)
    tables, counts = [], {}
    for position, index in enumerate(indexes):
        where = np.array([at[text] for text in index.texts], dtype=np.int64)
        signatures[where] = index.signatures
        filled[where] = index.filled
        widths[where] = np.maximum(widths[where], int(index.settings["fields_per_input"]))
        counts.update({f"{names[position]}: {part}": n for part, n in index.settings["rows"].items()})
        if index.rows is None:
            continue
        rows = index.rows.set_column(index.rows.column_names.index("text"), "text",
                                     pa.array(where[np.asarray(index.rows.column("text").to_numpy())], pa.int64()))
        tables.append(rows.append_column("release", pa.array([position] * rows.num_rows, pa.int32())))
    vocabulary, text_words = EvaluationIndex._vocabulary(texts)
    settings = first.settings
    grams, gram_texts, lengths = EvaluationIndex._grams(text_words, settings["word_ngram"], settings["word_ngram_min"])
    settings = {**settings, "rows": counts, "releases": list(names), "text_widths": widths.tolist(),
                **{key: max(int(index.settings[key]) for index in indexes)
                   for key in ("fields_per_input", "longest", "shingles")}}
    return EvaluationIndex(texts, pa.concat_tables(tables) if tables else None, signatures, filled, vocabulary,
                           text_words, grams, gram_texts, lengths, settings)


def gram_translation(combined: EvaluationIndex, index: EvaluationIndex) -> dict:
    """``{n-gram hash in the combined index: its hash in the index of ``index``'s release alone}`` (the hash is
    of word numbers, and the combined vocabulary numbers words otherwise): every n-gram of every input of that
    release, hashed in both."""
    at = {text: k for k, text in enumerate(combined.texts)}
    sizes = np.array([len(words) for words in index.text_words], dtype=np.int64)
    if not sizes.sum():
        return {}
    owner = np.repeat(np.arange(len(sizes)), sizes)
    alone = np.concatenate(index.text_words)
    together = np.concatenate([combined.text_words[at[text]] for text in index.texts])
    mapping: dict = {}
    for length in index.gram_lengths:
        _, there = _window_hashes(together, owner, length)
        _, here = _window_hashes(alone, owner, length)  # the same windows: the same words, all of them known
        mapping.update(zip(there.tolist(), here.tolist()))
    return mapping


def release_records(records, position: int, mapping: dict):
    """The records of the release at ``position``, as a run of that release alone writes them: without the
    ``release`` column, their n-grams in its own hashes (sorted, as the matcher sorts them)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from split_builders.evidence.corpus_index import record_schema

    mine = records.filter(pc.equal(records.column("release"), position)).drop_columns(["release"])
    grams = [sorted(mapping[g] for g in found) if found else found for found in mine.column("ngrams").to_pylist()]
    at = mine.column_names.index("ngrams")
    return mine.set_column(at, record_schema().field("ngrams"), pa.array(grams, record_schema().field("ngrams").type))


def named(tables: list, names: list):
    """Per-release tables (``--rows``, ``--corpus-matches``) as one, each row's release named first."""
    import pyarrow as pa

    return pa.concat_tables([table.add_column(0, "release", pa.array([name] * table.num_rows, pa.string()))
                             for name, table in zip(names, tables) if table is not None])
