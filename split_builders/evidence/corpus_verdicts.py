"""The verdicts of a corpus audit (``resplit audit TARGET --against-corpus SOURCE``, :mod:`.corpus`) by the
field's conventions: which kind of evidence each match record is (an exact copy, a near-duplicate, a shared word
n-gram: GPT-3 / lm-evaluation-harness), which kinds count as contamination (``--ngram-policy``), the n-grams that
occur everywhere and are no evidence (``--ngram-max-matches``, NeMo Curator's ``max_matches``), the corpus side of
the verdicts (``--corpus-matches``) and the settings refused before any work."""

from __future__ import annotations

from split_builders.errors import InvalidParameterError

NGRAM_POLICIES = ("contaminated", "report")  # a row whose only evidence is a shared n-gram: counted, or reported
EVIDENCE = ("exact", "near_duplicate", "ngram")  # strongest first
NGRAM_FLOOR = 5  # --ngram below: most documents share an n-gram with some input
THRESHOLD_FLOOR = 0.3  # --threshold below: most passages are candidates


def counted_kinds(ngram_policy: str) -> set:
    """The kinds of evidence that make a row contaminated under ``ngram_policy``."""
    return {"exact", "near_duplicate", *(["ngram"] if ngram_policy == "contaminated" else [])}


def evidence_of(records, *, max_matches: int | None):
    """Per record: its kind of evidence (:data:`EVIDENCE`, None where it has none left) and the fraction of the
    input's n-grams it holds, less the n-grams found in more than ``max_matches`` documents (NeMo Curator's
    ``max_matches``: an n-gram that occurs everywhere is no evidence of a copy); and how many n-grams were left
    out so."""
    cols = {name: records.column(name).to_pylist() for name in ("shard", "row", "jaccard", "exact", "ngrams",
                                                                "ngram_fraction")}
    common: set = set()
    if max_matches is not None:
        documents: dict = {}
        for shard, row, grams in zip(cols["shard"], cols["row"], cols["ngrams"]):
            for gram in grams or ():
                documents.setdefault(gram, set()).add((shard, row))
        common = {gram for gram, where in documents.items() if len(where) > max_matches}
    kinds, fractions = [], []
    for jaccard, exact, grams, fraction in zip(cols["jaccard"], cols["exact"], cols["ngrams"], cols["ngram_fraction"]):
        grams = grams or []
        kept = [g for g in grams if g not in common] if common else grams
        fractions.append(round(fraction * len(kept) / len(grams), 6) if kept else None)
        kinds.append("exact" if exact else "near_duplicate" if jaccard is not None else "ngram" if kept else None)
    return kinds, fractions, len(common)


def corpus_matches(records, *, ngram_policy: str = "contaminated", ngram_max_matches: int | None = None):
    """The corpus side of the verdicts (``--corpus-matches``): one row per corpus document and evaluation row whose
    evidence counts (the merge's rules: :func:`evidence_of` and ``ngram_policy``), sorted by shard and row, so a
    pretraining team can drop or mark those documents: shard, row, document, config, split, source_id, evidence,
    jaccard, ngram_fraction."""
    import pyarrow as pa

    kinds, fractions, _ = evidence_of(records, max_matches=ngram_max_matches)
    counted = counted_kinds(ngram_policy)
    keep = [k for k in range(records.num_rows) if kinds[k] in counted]
    table = records.select(["shard", "row", "document", "config", "split", "source_id", "jaccard"]).take(
        pa.array(keep, pa.int64()))
    table = table.append_column("evidence", pa.array([kinds[k] for k in keep], pa.string()))
    table = table.append_column("ngram_fraction", pa.array([fractions[k] for k in keep], pa.float64()))
    return table.sort_by([("shard", "ascending"), ("row", "ascending"), ("config", "ascending"),
                          ("split", "ascending"), ("source_id", "ascending")])


def check_matching(*, threshold: float, ngram: int, ngram_min: int, ngram_policy: str,
                   ngram_max_matches: int | None) -> None:
    """The matching settings of a corpus run, checked before any work: those that would make nearly every
    document a match are refused with their cost."""
    if ngram_policy not in NGRAM_POLICIES:
        raise InvalidParameterError(f"--ngram-policy {ngram_policy}: one of {', '.join(NGRAM_POLICIES)}")
    if ngram < NGRAM_FLOOR or ngram_min < NGRAM_FLOOR:
        flag, value = ("--ngram", ngram) if ngram < NGRAM_FLOOR else ("--ngram-min", ngram_min)
        raise InvalidParameterError(f"{flag} {value}: below {NGRAM_FLOOR} words most documents share an n-gram with "
                                    "some input (--ngram 1 on 1.1M documents: 781k records, 85 s); give "
                                    f"{NGRAM_FLOOR} or more (the convention: 13, and 8 for short inputs)")
    if threshold < THRESHOLD_FLOOR:
        raise InvalidParameterError(f"--threshold {threshold:g}: below {THRESHOLD_FLOOR:g} most passages are "
                                    "near-duplicate candidates (0.01 on 1.1M documents: 109 s, 1.4 GB of records); "
                                    f"give {THRESHOLD_FLOOR:g} or more (default 0.8)")
    if ngram_max_matches is not None and ngram_max_matches < 1:
        raise InvalidParameterError(f"--ngram-max-matches {ngram_max_matches}: give 1 or more (documents)")
