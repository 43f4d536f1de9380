"""The near-duplicate engine: character n-gram shingles, MinHash signatures and LSH bands over whole columns
of texts, candidate pairs confirmed with the exact Jaccard similarity.

The signatures are ``datasketch``'s MinHash (``NUM_PERM`` permutations, seed ``MINHASH_SEED``, scheme
``affine32``), computed a chunk of texts at a time in numpy (:func:`minhash_signatures`, bit for bit
datasketch's own). The LSH bands are chosen so that a pair exactly at the threshold becomes a candidate with
probability >= ``COLLISION_AT_THRESHOLD`` (:func:`lsh_parameters`); each band's texts are grouped by a 64-bit
key of their band (:func:`band_keys`), sorted in numpy (:func:`_band_buckets`), which gives the buckets
datasketch's ``MinHashLSH`` gives of the same signatures without inserting one text at a time from Python
(``engine="datasketch"`` keeps that path for the benchmark). A candidate whose MinHash estimate is not four
standard errors below the threshold is confirmed with the exact Jaccard of the n-gram sets
(:func:`near_duplicate_pairs`). :class:`BandIndex` indexes fixed texts (a target's evaluation rows) for other
texts streamed through it (:mod:`.contamination`). Deterministic throughout.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from split_builders.evidence.pools import as_text, distinct

NGRAM = 5
NUM_PERM = 64
MINHASH_SEED = 1
MINHASH_SCHEME = "affine32"
COLLISION_AT_THRESHOLD = 0.97
_CHUNK = 20_000  # distinct texts shingled and MinHashed per batch (bounds memory)
_MEDIUM_BUCKET = 32  # an LSH bucket with more keys is compared block by block, not pair by pair
_BLOCK_BYTES = 1 << 25  # a large bucket's comparisons per block: rows x columns <= _BLOCK_BYTES / 8
_NORMALISE_SLICE = 250_000  # rows of a text column normalised per thread
_KEY_ROWS = 8192  # texts whose LSH band keys are computed at once
_HASHES_PER_BLOCK = 4096  # shingle hashes permuted at once while MinHashing (x NUM_PERM: about 1 MiB, in cache)


def lsh_parameters(threshold: float, num_perm: int = NUM_PERM, *, collision: float = COLLISION_AT_THRESHOLD):
    """``(bands, rows)`` of the LSH index: the longest bands (fewest candidates below the threshold)
    for which a pair at exactly ``threshold`` collides in some band with probability >= ``collision``
    (``1 - (1 - t**r)**b``); with as few bands as that needs. Falls back to one-row bands, as many as
    ``num_perm`` allows, where no choice reaches ``collision``."""
    for rows in range(num_perm // 2, 0, -1):
        hit = threshold ** rows
        if hit >= 1.0:
            return 2, rows
        if hit <= 0.0 or 1.0 - hit == 1.0:  # too small to collide in any number of bands (a low --threshold)
            continue
        bands = max(2, math.ceil(math.log(1.0 - collision) / math.log(1.0 - hit)))
        if bands * rows <= num_perm:
            return bands, rows
    return num_perm, 1


def collision_probability(jaccard: float, bands: int, rows: int) -> float:
    return 1.0 - (1.0 - jaccard ** rows) ** bands


def normalise(column):
    """Unicode NFKC, lower case, every run of whitespace one space, trimmed (Arrow kernels; a long column in
    slices, in threads)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from split_builders.overlap import in_threads

    def one(part):
        part = pc.utf8_lower(pc.utf8_normalize(part, form="NFKC"))
        return pc.utf8_trim_whitespace(pc.replace_substring_regex(part, r"[\s\p{Z}]+", " "))

    if len(column) <= _NORMALISE_SLICE:
        return one(column)
    parts = in_threads(one, [column.slice(start, _NORMALISE_SLICE)
                             for start in range(0, len(column), _NORMALISE_SLICE)])
    chunks = [chunk for part in parts for chunk in (part.chunks if isinstance(part, pa.ChunkedArray) else [part])]
    return pa.chunked_array(chunks, type=parts[0].type) if isinstance(column, pa.ChunkedArray) \
        else pa.concat_arrays(chunks)


def examples_text(table, names):
    """The normalised whole example of every row: the fields joined by newlines (nulls left out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = [normalise(as_text(table.column(n))) for n in names if n in table.column_names]
    if not columns:
        return pa.nulls(table.num_rows, pa.large_string())
    if len(columns) == 1:
        return columns[0]
    # pyarrow (26) leaves out of the result the rows where every input is null, so the joined column would be
    # shorter than the table: those rows join an empty first field instead, and are null again after the join.
    none = columns[0].is_null()
    for column in columns[1:]:
        none = pc.and_(none, column.is_null())
    first = pc.if_else(none, pa.scalar("", pa.large_string()), columns[0])
    joined = pc.binary_join_element_wise(first, *columns[1:], pa.scalar("\n", pa.large_string()), null_handling="skip")
    return pc.if_else(none, pa.scalar(None, pa.large_string()), joined)


_PRIME = np.uint64(0x100000001B3)


def shingle_hashes(texts: list, n: int = NGRAM):
    """The 32-bit hashes of the character ``n``-grams of each text (a text shorter than ``n`` is one
    shingle; an empty text has none), as one array and the offsets of each text's hashes.

    Whole columns: the code points of all texts at once, a polynomial hash of every ``n`` consecutive
    ones (array slices, in place), then the windows inside a text kept (a mask: the last ``n - 1`` starts of
    each text dropped, and every start but the first of a short text), the splitmix64 finaliser."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    points = np.frombuffer("".join(texts).encode("utf-32-le"), dtype="<u4").astype(np.uint64) + np.uint64(1)
    points = np.concatenate([points, np.zeros(n, dtype=np.uint64)])  # short texts are padded with zeros
    ends = np.cumsum(lengths)
    starts = ends - lengths
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    windows = points.size - n + 1
    value = points[:windows].copy()
    with np.errstate(over="ignore"):
        for j in range(1, n):
            value *= _PRIME
            value += points[j:j + windows]
    keep = np.zeros(windows, dtype=bool)
    keep[: int(ends[-1]) if ends.size else 0] = True
    keep[(ends[lengths >= n, None] - np.arange(1, n)[None, :]).reshape(-1)] = False  # windows running past a text
    shortish = (lengths > 0) & (lengths < n)
    if shortish.any():  # a short text's one window starts at its start
        inside = starts[shortish, None] + np.arange(1, n)[None, :]
        keep[inside[inside < ends[shortish, None]]] = False
    value = value[keep]
    short = np.flatnonzero(shortish)
    if short.size:  # the one shingle of a short text: its own code points, zeros after them
        code = np.zeros(short.size, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(n):
                code = code * _PRIME + np.where(j < lengths[short], points[starts[short] + j], np.uint64(0))
        value[offsets[short]] = code
    with np.errstate(over="ignore"):
        value ^= value >> np.uint64(30)
        value *= np.uint64(0xBF58476D1CE4E5B9)
        value ^= value >> np.uint64(27)
        value *= np.uint64(0x94D049BB133111EB)
        value ^= value >> np.uint64(31)
    return (value >> np.uint64(32)).astype(np.uint32), offsets


def _fmix32(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser (``fmix32``) of each value: the bijection datasketch's
    ``affine32`` scheme applies to every input hash before its permutations."""
    with np.errstate(over="ignore"):
        values = values ^ (values >> np.uint32(16))
        values *= np.uint32(0x85EBCA6B)
        values ^= values >> np.uint32(13)
        values *= np.uint32(0xC2B2AE35)
        values ^= values >> np.uint32(16)
    return values


def minhash_signatures(values: np.ndarray, offsets: np.ndarray, permutations) -> np.ndarray:
    """The MinHash signature of each text whose shingle hashes are ``values[offsets[k]:offsets[k + 1]]``
    (as :func:`shingle_hashes` returns them): one uint32 row per text, equal to what datasketch's
    ``MinHash(scheme="affine32")`` with these ``permutations`` (its ``(a, b)``) holds after
    ``update_batch`` of the text's hashes (``hashfunc=operator.index``). An empty text's row is zeros.

    Whole columns: each hash is finalised once (:func:`_fmix32`), then for a block of consecutive texts at a
    time (about ``_HASHES_PER_BLOCK`` hashes: the block's ``permutations x hashes`` values stay in the CPU's
    cache) ``a * h + b`` modulo 2**32 of every hash and permutation and the minimum over each text's hashes
    (``np.minimum.reduceat`` over the block's non-empty texts' starts)."""
    a, b = (np.asarray(p, dtype=np.uint32) for p in permutations)
    offsets = np.asarray(offsets, dtype=np.int64)
    signatures = np.zeros((len(offsets) - 1, a.size), dtype=np.uint32)
    filled = np.flatnonzero(np.diff(offsets) > 0)
    if not filled.size:
        return signatures
    hashed = _fmix32(np.asarray(values, dtype=np.uint32))
    starts = offsets[filled]
    ends = offsets[filled + 1]
    cuts = np.unique(np.append(np.searchsorted(starts, np.arange(0, hashed.size, _HASHES_PER_BLOCK)), filled.size))
    work = np.empty((a.size, 2 * _HASHES_PER_BLOCK), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for first, last in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            low, high = int(starts[first]), int(ends[last - 1])
            part = work[:, :high - low] if high - low <= work.shape[1] else np.empty((a.size, high - low), np.uint32)
            np.multiply(a[:, None], hashed[None, low:high], out=part)
            np.add(part, b[:, None], out=part)
            signatures[filled[first:last]] = np.minimum.reduceat(part, starts[first:last] - low, axis=1).T
    return signatures


def minhash_lsh(texts: list, *, threshold: float, num_perm: int = NUM_PERM, progress: bool = False):
    """The MinHash signature of every text (rows of a uint32 matrix) and the MinHashLSH index over
    the non-empty ones (keys: positions in ``texts``).

    The signatures are datasketch's ``MinHash`` (``NUM_PERM`` permutations, ``MINHASH_SEED``, scheme
    ``affine32``) of each text's shingle hashes, taken as they are (the shingles are hashed already by
    :func:`shingle_hashes`), computed a chunk of ``_CHUNK`` texts at a time on whole columns
    (:func:`minhash_signatures`, with the permutations of that ``MinHash``). Each is inserted into
    datasketch's ``MinHashLSH`` through one ``MinHash`` that carries the row: the index keeps each
    text's band hashes, not the object."""
    from datasketch import MinHash, MinHashLSH

    from split_builders.progress import progress_bar

    bands, rows = lsh_parameters(threshold, num_perm)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, params=(bands, rows))
    carrier = MinHash(num_perm=num_perm, seed=MINHASH_SEED, hashfunc=operator.index, scheme=MINHASH_SCHEME)
    signatures = np.zeros((len(texts), num_perm), dtype=np.uint32)
    bar = progress_bar(total=len(texts), description="audit: MinHash", unit="text",
                       enabled=progress and len(texts) > 5 * _CHUNK)
    with bar, lsh.insertion_session(buffer_size=_CHUNK) as session:
        for start in range(0, len(texts), _CHUNK):
            values, offsets = shingle_hashes(texts[start:start + _CHUNK])
            chunk = minhash_signatures(values, offsets, carrier.permutations)
            signatures[start:start + len(chunk)] = chunk
            for k in (start + np.flatnonzero(np.diff(offsets) > 0)).tolist():
                carrier.hashvalues = signatures[k]
                session.insert(k, carrier, check_duplication=False)
            bar.update(len(offsets) - 1)
    return signatures, lsh


_PERMUTATIONS = {}


def permutations(num_perm: int = NUM_PERM):
    """The ``(a, b)`` permutations of datasketch's ``MinHash`` (``MINHASH_SEED``, scheme ``affine32``):
    what :func:`minhash_signatures` applies, so its signatures equal datasketch's."""
    if num_perm not in _PERMUTATIONS:
        from datasketch import MinHash

        _PERMUTATIONS[num_perm] = MinHash(num_perm=num_perm, seed=MINHASH_SEED, hashfunc=operator.index,
                                          scheme=MINHASH_SCHEME).permutations
    return _PERMUTATIONS[num_perm]


def signatures_of(texts: list, num_perm: int = NUM_PERM) -> tuple[np.ndarray, np.ndarray]:
    """The MinHash signature of each text (:func:`shingle_hashes`, :func:`minhash_signatures`), a chunk
    of ``_CHUNK`` texts at a time (chunks in threads: numpy releases the GIL), and whether it has any shingle
    (an empty text has none and matches nothing)."""
    from split_builders.overlap import in_threads

    signatures = np.zeros((len(texts), num_perm), dtype=np.uint32)
    filled = np.zeros(len(texts), dtype=bool)

    def chunk(start):
        values, offsets = shingle_hashes(texts[start:start + _CHUNK])
        signatures[start:start + len(offsets) - 1] = minhash_signatures(values, offsets, permutations(num_perm))
        filled[start:start + len(offsets) - 1] = np.diff(offsets) > 0

    permutations(num_perm)  # made once, before the threads
    in_threads(chunk, range(0, len(texts), _CHUNK))
    return signatures, filled


def band_keys(signatures: np.ndarray, bands: int, rows: int, members: np.ndarray | None = None) -> np.ndarray:
    """One 64-bit key per text (``members``: the texts at these positions only) and LSH band (``(texts, bands)``):
    the band's ``rows`` signature values hashed together (a polynomial hash and the splitmix64 finaliser). Two
    texts share a key exactly when their band is equal, save for 64-bit collisions, which only add candidates
    the exact Jaccard drops. Computed ``_KEY_ROWS`` texts at a time (the temporaries stay in the CPU's cache)."""
    n = len(signatures) if members is None else len(members)
    out = np.empty((n, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, n, _KEY_ROWS):
            at = slice(start, start + _KEY_ROWS)
            chunk = signatures[at] if members is None else signatures[members[at]]
            values = chunk[:, :bands * rows].astype(np.uint64).reshape(-1, bands, rows)
            key = np.full((len(values), bands), 0x9E3779B97F4A7C15, dtype=np.uint64)
            for j in range(rows):
                key *= _PRIME
                key += values[:, :, j]
            key ^= key >> np.uint64(30)
            key *= np.uint64(0xBF58476D1CE4E5B9)
            key ^= key >> np.uint64(27)
            key *= np.uint64(0x94D049BB133111EB)
            key ^= key >> np.uint64(31)
            out[start:start + len(values)] = key
    return out


class BandIndex:
    """An LSH index over fixed texts (a target's evaluation rows) that other texts are streamed through.

    Each band's keys (:func:`band_keys`) are sorted once; a batch of query signatures finds, per band, the
    indexed texts with the same key by binary search (numpy, no per-text Python), and its candidates are
    kept where the MinHash estimate is at least ``floor``. Memory: the index's signatures and keys, plus
    one bounded block of candidate pairs at a time."""

    _PAIRS = 1 << 20  # candidate pairs whose estimates are compared at once

    def __init__(self, signatures: np.ndarray, filled: np.ndarray, *, threshold: float, num_perm: int = NUM_PERM):
        self.bands, self.rows = lsh_parameters(threshold, num_perm)
        self.floor = threshold - _estimate_margin(threshold, num_perm)
        self.members = np.flatnonzero(filled)
        self.signatures = signatures
        keys = band_keys(signatures, self.bands, self.rows, self.members)
        self.order = np.argsort(keys, axis=0)
        self.sorted = np.take_along_axis(keys, self.order, axis=0)

    def candidates(self, signatures: np.ndarray, filled: np.ndarray) -> np.ndarray:
        """Pairs ``(indexed, query)`` (positions in the index's texts and in ``signatures``), each once, of
        texts that share a band and whose MinHash estimate is at least the floor; sorted."""
        queries = np.flatnonzero(filled)
        if not queries.size or not self.members.size:
            return np.empty((0, 2), dtype=np.int64)
        keys = band_keys(signatures, self.bands, self.rows, queries)
        m = np.int64(len(signatures))
        found = []
        for band in range(self.bands):
            lo = np.searchsorted(self.sorted[:, band], keys[:, band], "left")
            hi = np.searchsorted(self.sorted[:, band], keys[:, band], "right")
            hit = np.flatnonzero(hi > lo)
            if not hit.size:
                continue
            counts = (hi - lo)[hit]
            ends = np.cumsum(counts)
            first = 0
            while first < hit.size:  # blocks of at most _PAIRS pairs (a templated text can match many)
                last = max(first + 1, int(np.searchsorted(ends, (ends[first - 1] if first else 0) + self._PAIRS)))
                block, n = hit[first:last], counts[first:last]
                query = np.repeat(block, n)
                shift = np.repeat(np.cumsum(n) - n, n)
                at = np.repeat(lo[block], n) + np.arange(int(n.sum()), dtype=np.int64) - shift
                indexed = self.members[self.order[at, band]]
                mine = queries[query]
                keep = (self.signatures[indexed] == signatures[mine]).mean(axis=1) >= self.floor
                found.append(indexed[keep] * m + mine[keep])
                first = last
        keys = distinct(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)
        return np.stack([keys // m, keys % m], axis=1)


def cross_jaccard(left: list, right: list, pairs: np.ndarray) -> np.ndarray:
    """The exact Jaccard (:func:`exact_jaccard`) of each pair ``(i, j)`` of ``left[i]`` and ``right[j]``."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return np.empty(0, dtype=np.float64)
    lefts, rights = distinct(pairs[:, 0]), distinct(pairs[:, 1])
    texts = [left[k] for k in lefts.tolist()] + [right[k] for k in rights.tolist()]
    local = np.stack([np.searchsorted(lefts, pairs[:, 0]), lefts.size + np.searchsorted(rights, pairs[:, 1])], axis=1)
    return exact_jaccard(texts, local)


def _estimate_margin(threshold: float, num_perm: int) -> float:
    """How far below the threshold a MinHash estimate may fall and the pair still be checked exactly:
    four standard errors at the threshold."""
    return max(4.0 * math.sqrt(threshold * (1.0 - threshold) / num_perm), 2.0 / num_perm)


def _datasketch_buckets(hashtables):
    """The buckets (arrays of keys) with at least two keys of datasketch's ``MinHashLSH`` hash tables (read
    through its storage interface: ``itemcounts`` and ``get`` of each band's table)."""
    for table in hashtables:
        counts = table.itemcounts()
        for bucket, size in counts.items():
            if size >= 2:
                yield np.fromiter(table.get(bucket), dtype=np.int64, count=size)


def _band_buckets(signatures, filled, bands: int, rows: int):
    """The buckets with at least two texts of each LSH band: the non-empty texts grouped by their band key
    (:func:`band_keys`, sorted in numpy), the same buckets datasketch's ``MinHashLSH`` makes of these
    signatures (its bands are the same slices; a 64-bit key collision only adds a candidate)."""
    members = np.flatnonzero(filled)
    if members.size < 2:
        return
    keys = band_keys(signatures, bands, rows, members)
    for band in range(bands):
        order = np.argsort(keys[:, band])  # any order within a bucket: pairs are sorted after
        ordered = keys[order, band]
        starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
        sizes = np.diff(np.append(starts, ordered.size))
        grouped = members[order]
        for at in np.flatnonzero(sizes > _MEDIUM_BUCKET).tolist():
            yield grouped[starts[at]:starts[at] + sizes[at]]
        shared = (sizes >= 2) & (sizes <= _MEDIUM_BUCKET)
        yield from _stacked(grouped, starts[shared], sizes[shared])


class _Stacked:
    """Buckets of one size as the rows of a matrix (what :func:`_candidate_pairs` pairs up at once)."""

    def __init__(self, matrix):
        self.matrix = matrix


def _stacked(grouped, starts, sizes):
    for size in np.unique(sizes).tolist():
        chosen = starts[sizes == size]
        yield _Stacked(grouped[chosen[:, None] + np.arange(size)])


def _candidate_pairs(buckets, signatures, *, floor: float, left=None, right=None) -> np.ndarray:
    """Pairs ``(u, v)``, ``u < v``, of keys that share a bucket in some band (``buckets``: arrays of keys, or
    :class:`_Stacked` matrices of buckets of one size; ``hashtables`` of datasketch are read as buckets) and
    whose MinHash estimate is at least ``floor``; with ``left`` / ``right`` (a boolean per key), only pairs
    with one side in ``left`` and the other in ``right`` (evaluation and train rows somewhere).

    Sorted, without repeats. A bucket is compared in blocks (bounded memory); a bucket of templated
    texts can hold thousands of keys whose pairs are mostly below the threshold, so its pairs are
    never all materialised."""
    if isinstance(buckets, list) and buckets and hasattr(buckets[0], "itemcounts"):
        buckets = _datasketch_buckets(buckets)
    small, medium, medium_sizes, large, stacked = [], [], [], [], []
    for bucket in buckets:
        if isinstance(bucket, _Stacked):
            stacked.append(bucket.matrix)
        elif bucket.size == 2:
            small.extend(bucket.tolist())
        elif bucket.size <= _MEDIUM_BUCKET:
            medium.extend(bucket.tolist())
            medium_sizes.append(bucket.size)
        else:
            large.append(np.sort(bucket))
    n = np.int64(len(signatures))
    pairs = [np.asarray(small, dtype=np.int64).reshape(-1, 2)]
    medium, medium_sizes = np.asarray(medium, dtype=np.int64), np.asarray(medium_sizes, dtype=np.int64)
    starts = np.cumsum(medium_sizes) - medium_sizes
    matrices = [medium[starts[medium_sizes == size, None] + np.arange(size)]  # the buckets of one size as rows
                for size in np.unique(medium_sizes).tolist()] + stacked
    for members in matrices:
        u, v = np.triu_indices(members.shape[1], 1)
        pairs.append(np.stack([members[:, u].reshape(-1), members[:, v].reshape(-1)], axis=1))
    pairs = np.concatenate(pairs)
    u, v = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    keys = distinct(u * n + v)  # a pair sharing buckets in several bands once
    u, v = keys // n, keys % n
    if left is not None:
        wanted = (left[u] & right[v]) | (left[v] & right[u])
        u, v = u[wanted], v[wanted]
    keep = np.zeros(len(u), dtype=bool)
    for start in range(0, len(u), 200_000):
        a, b = u[start:start + 200_000], v[start:start + 200_000]
        keep[start:start + len(a)] = (signatures[a] == signatures[b]).mean(axis=1) >= floor
    keys = [u[keep] * n + v[keep]]
    for members in large:
        keys.append(_bucket_pairs(members, signatures, floor=floor, left=left, right=right))
    keys = distinct(np.concatenate(keys))
    return np.stack([keys // n, keys % n], axis=1)


def _least_matches(floor: float, num_perm: int) -> int:
    """The fewest equal signature values whose MinHash estimate (``matches / num_perm``) is at least ``floor``:
    comparing counts with it keeps exactly the pairs whose estimate is ``>= floor``."""
    need = max(0, math.ceil(floor * num_perm))
    while need > 0 and (need - 1) / num_perm >= floor:
        need -= 1
    while need / num_perm < floor:
        need += 1
    return need


def _bucket_pairs(members, signatures, *, floor: float, left=None, right=None) -> np.ndarray:
    """The pairs of one large bucket with a MinHash estimate >= ``floor``, compared block by block
    (each of ``rows`` against every one of ``columns``: evaluation against train keys when masks are
    given), as keys ``u * n + v`` with ``u < v``. The equal values of a block are counted one permutation
    at a time (a ``rows x columns`` count matrix; no ``rows x columns x permutations`` array)."""
    rows = members if left is None else members[left[members]]
    columns = members if right is None else members[right[members]]
    n = np.int64(len(signatures))
    if not rows.size or not columns.size:
        return np.empty(0, dtype=np.int64)
    num_perm = signatures.shape[1]
    need = _least_matches(floor, num_perm)
    against = np.ascontiguousarray(signatures[columns].T)  # permutations x columns
    count_type = np.uint8 if num_perm <= np.iinfo(np.uint8).max else np.uint32
    block = max(1, _BLOCK_BYTES // (8 * columns.size))
    out = []
    for start in range(0, rows.size, block):
        mine = rows[start:start + block]
        values = np.ascontiguousarray(signatures[mine].T)
        matches = np.zeros((mine.size, columns.size), dtype=count_type)
        for p in range(num_perm):
            matches += values[p][:, None] == against[p][None, :]
        i, j = np.nonzero(matches >= need)
        u, v = mine[i], columns[j]
        different = u != v
        u, v = u[different], v[different]
        out.append(np.minimum(u, v) * n + np.maximum(u, v))
    return np.concatenate(out)


def exact_jaccard(texts: list, pairs) -> np.ndarray:
    """The exact Jaccard similarity of the character n-gram sets of each pair of ``texts``: the
    texts' shingle sets as rows of a binary sparse matrix (a column per 32-bit shingle hash: no renumbering),
    the pairs' intersections as the row sums of elementwise products (scipy), in chunks."""
    from scipy import sparse

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    involved = distinct(pairs.reshape(-1))
    values, offsets = shingle_hashes([texts[k] for k in involved])
    rows = np.repeat(np.arange(involved.size), np.diff(offsets))
    matrix = sparse.csr_matrix((np.ones(values.size, dtype=np.int32), (rows, values.astype(np.int64))),
                               shape=(involved.size, 1 << 32))
    matrix.sum_duplicates()  # sorted columns, each once per row
    matrix.data[:] = 1  # sets, not bags
    sizes = np.diff(matrix.indptr)
    u, v = np.searchsorted(involved, pairs[:, 0]), np.searchsorted(involved, pairs[:, 1])
    common = np.zeros(len(pairs), dtype=np.int64)
    for start in range(0, len(pairs), 200_000):
        a, b = u[start:start + 200_000], v[start:start + 200_000]
        common[start:start + len(a)] = np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).reshape(-1)
    return common / np.maximum(sizes[u] + sizes[v] - common, 1)


def near_duplicate_pairs(texts: list, *, threshold: float, num_perm: int = NUM_PERM, progress: bool = False,
                         left=None, right=None, groups=None, engine: str = "bands"):
    """Pairs of ``texts`` whose character n-gram sets have a Jaccard similarity >= ``threshold``:
    ``(u, v, jaccard, search)`` with ``u < v`` (positions in ``texts``), from the LSH candidates, each
    confirmed with the exact Jaccard. Candidates whose MinHash estimate is more than four standard
    errors below the threshold are dropped before the exact check. ``left`` / ``right`` (booleans per
    text) keep only pairs of a ``left`` text and a ``right`` one (evaluation and train rows).

    ``groups`` (an integer per text, :func:`text_groups`) keeps only pairs within one group: each group
    is searched on its own, with its own LSH index (whose memory, a few KiB per text, is then bounded by
    the largest group), and a group without both a ``left`` and a ``right`` text is not searched.

    ``engine``: ``bands`` (each band's keys sorted in numpy, :func:`_band_buckets`) or ``datasketch`` (its
    ``MinHashLSH``, the former engine, kept for the benchmark); both give the same buckets of the same
    signatures, so the same pairs."""
    if groups is not None:
        return _grouped_pairs(texts, np.asarray(groups), threshold=threshold, num_perm=num_perm,
                              progress=progress, left=left, right=right, engine=engine)
    bands, rows = lsh_parameters(threshold, num_perm)
    floor = threshold - _estimate_margin(threshold, num_perm)
    if engine == "datasketch":  # the former engine: datasketch's MinHashLSH, one insertion per text
        signatures, lsh = minhash_lsh(texts, threshold=threshold, num_perm=num_perm, progress=progress)
        pairs = _candidate_pairs(lsh.hashtables, signatures, floor=floor, left=left, right=right)
        del lsh
    else:
        signatures, filled = signatures_of(texts, num_perm)
        pairs = _candidate_pairs(_band_buckets(signatures, filled, bands, rows), signatures, floor=floor,
                                 left=left, right=right)
    jaccard = exact_jaccard(texts, pairs)
    found = jaccard >= threshold
    return pairs[found, 0], pairs[found, 1], jaccard[found], {"candidates": int(len(pairs)), "bands": bands,
                                                               "rows_per_band": rows}


def _grouped_pairs(texts: list, groups: np.ndarray, *, threshold: float, num_perm: int, progress: bool,
                   left=None, right=None, engine: str = "bands"):
    """:func:`near_duplicate_pairs` group by group (in the order of the group numbers), the pairs put
    back into positions of ``texts``; ``search["candidates"]`` sums the groups'."""
    bands, rows = lsh_parameters(threshold, num_perm)
    found, candidates = [], 0
    order = np.argsort(groups, kind="stable")  # each group's texts in their order in ``texts``
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    for members in np.split(order, bounds):
        if members.size < 2 or (left is not None and not left[members].any()) \
                or (right is not None and not right[members].any()):
            continue
        u, v, jaccard, search = near_duplicate_pairs(
            [texts[k] for k in members.tolist()], threshold=threshold, num_perm=num_perm, progress=progress,
            left=None if left is None else left[members], right=None if right is None else right[members],
            engine=engine)
        found.append((members[u], members[v], jaccard))
        candidates += search["candidates"]
    u, v, jaccard = (np.concatenate(parts) for parts in zip(*found)) if found else \
        (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
    return u, v, jaccard, {"candidates": candidates, "bands": bands, "rows_per_band": rows}


def text_groups(pool, columns) -> np.ndarray:
    """A group number per distinct text (``columns.texts``; ``columns.text`` numbers each pool row's): the connected
    components of the graph that links each text to the configs that hold it. A near-duplicate counts
    only between an evaluation row and a train row of one config, so two texts of different groups are
    never compared (CURRICULUM's phenomena share no rows: each is its own group)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    text, n = columns.text, len(columns.texts)
    configs = {config: k for k, config in enumerate(dict.fromkeys(config for config, _ in pool.rows))}
    links = []
    for (config, _), rows in pool.rows.items():
        held = distinct(text[rows])
        held = held[held >= 0]
        links.append(np.stack([held, np.full(held.size, n + configs[config], dtype=np.int64)]))
    links = np.concatenate(links, axis=1) if links else np.zeros((2, 0), dtype=np.int64)
    size = n + len(configs)
    graph = coo_matrix((np.ones(links.shape[1], dtype=np.int8), (links[0], links[1])), shape=(size, size))
    return connected_components(graph, directed=False)[1][:n].astype(np.int64)

