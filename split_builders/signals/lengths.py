"""Length of a text in NLTK word tokens, and equal-frequency length buckets.

``nltk.word_tokenize`` needs the punkt data files to split sentences first, and those cannot be
downloaded everywhere. ``NLTKWordTokenizer`` is the word tokenizer ``word_tokenize`` applies to
each sentence, needs no data, and gives the same tokens on a one-sentence text (hypotheses and
questions are one sentence).

Counting many texts one ``tokenize`` call at a time costs 60-100 microseconds a text (a minute and
more for a million hypotheses), almost all of it the overhead of some 35 regular-expression calls
on a short string. :func:`word_lengths` gives the same counts batched:

* texts of plain ASCII (printable characters, tab, newline, carriage return: nearly every English
  text) are joined by a separator (NUL) that none of them contains, and the tokenizer's own
  substitutions, in its order, run once over the joined texts. Rewritten so that anchors (``^``,
  ``$``) also match beside the separator and negated classes exclude it, each substitution changes
  every text exactly as it would alone; one whose literal cannot occur in the chunk is skipped;
* the last substitutions (clitics such as ``'ll`` and ``n't``, and ``cannot``-style contractions)
  run text by text, only on the texts that contain an apostrophe or one of those words;
* any other text (accents, typographic quotes, control characters) takes one ``tokenize`` call.

On plain ASCII the ``re`` and ``regex`` engines agree on every class these patterns use, so each
substitution runs in whichever is faster. Tests compare the counts with ``tokenize`` on every text
of SNLI, BoolQ and CURRICULUM and on generated tricky strings.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from split_builders.splits import check_number
from split_builders.errors import InvalidParameterError


@lru_cache(maxsize=1)
def _tokenizer():
    """NLTK's ``NLTKWordTokenizer``, imported when a length is first counted (importing NLTK takes a second, which
    every ``resplit`` command paid, ``--help`` included)."""
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


SEPARATOR = "\x00"
# Texts joined per pass: large enough that the per-call overhead vanishes, small enough that a
# substitution whose literal is rare is often skipped.
CHUNK_TEXTS = 4096
# Characters outside printable ASCII, tab, newline and carriage return: such texts are tokenized
# one by one (the engines' \s differ on ASCII control characters, and Unicode case folding and
# word characters are not worth reasoning about for the few texts that have them).
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")
_NOT_PLAIN_JOINED = re.compile(r"[^\x00\t\n\r\x20-\x7e]")
# Literals of the contraction patterns (CONTRACTIONS2 and 3), lower case: a text without any of
# them and without an apostrophe is left alone by the tokenizer's last substitutions.
_TAIL_WORDS = ("'", "cannot", "gimme", "gonna", "gotta", "lemme", "wanna")


def word_length(text: str) -> int:
    """Number of NLTK word tokens of ``text`` (one ``NLTKWordTokenizer().tokenize`` call)."""
    return len(_tokenizer().tokenize(text))


def word_lengths(texts) -> np.ndarray:
    """Word-token lengths of many texts, as int64: exactly ``len(NLTKWordTokenizer().tokenize(t))``
    for each, computed in batches (see the module's note)."""
    texts = texts if isinstance(texts, list) else list(texts)
    # Each distinct text is counted once (CURRICULUM repeats half its premises).
    positions = {}
    inverse = np.fromiter((positions.setdefault(t, len(positions)) for t in texts), dtype=np.int64, count=len(texts))
    if len(positions) < len(texts):
        return _distinct_lengths(list(positions))[inverse]
    return _distinct_lengths(texts)


def _distinct_lengths(texts: list) -> np.ndarray:
    lengths = np.empty(len(texts), dtype=np.int64)
    plain = np.fromiter((t.isascii() for t in texts), dtype=bool, count=len(texts))
    rows = np.flatnonzero(plain)
    for start in range(0, rows.size, CHUNK_TEXTS):
        chunk = rows[start:start + CHUNK_TEXTS]
        chunk_texts = [texts[i] for i in chunk]
        joined = SEPARATOR.join(chunk_texts)
        if _NOT_PLAIN_JOINED.search(joined) or joined.count(SEPARATOR) != chunk.size - 1:
            # A control character (or the separator) somewhere: find the texts.
            keep = np.array([_NOT_PLAIN.search(t) is None for t in chunk_texts])
            plain[chunk[~keep]] = False
            chunk, chunk_texts = chunk[keep], [t for t, k in zip(chunk_texts, keep) if k]
            joined = SEPARATOR.join(chunk_texts)
        if chunk.size:
            lengths[chunk] = _count_joined(joined)
    for i in np.flatnonzero(~plain):
        lengths[i] = word_length(texts[i])
    return lengths


# ---------------------------------------------------------------------------------------------
# The tokenizer's substitutions, rewritten for joined texts
# ---------------------------------------------------------------------------------------------

_START_ANCHOR = "(?:^|(?<=\\x00))"
# ``$`` without MULTILINE matches at the end and before a final newline: the same beside the separator.
_END_ANCHOR = "(?=\\n?(?:\\x00|\\Z))"
# Substitutions that run faster in ``re`` than in ``regex`` (measured on SNLI; same result on plain ASCII).
_FASTER_IN_RE = {r"([ \(\[{<])(\"|\'{2})", r"[;@#$%&]", r"[\]\[\(\)\{\}\<\>]", r"([»”’])", r"\s+"}
# Characters one of which must occur for a substitution to change anything (None: always run).
_NEEDS = {r"([«“‘„]|[`]+)": "`", r"^\"": '"', r"(``)": "`", r"([ \(\[{<])(\"|\'{2})": "\"'",
          r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)": "'", r"([:,])([^\d])": ":,", r"([:,])$": ":,",
          r"\.{2,}": ".", r"[;@#$%&]": ";@#$%&", r"[\u2012-\u2015]": "", r"[?!]": "?!", r"([^'])' ": "'",
          r"[*]": "*", r"[\]\[\(\)\{\}\<\>]": "[](){}<>", r"--": "-", r"([»”’])": "", r"''": "'", r'"': '"'}


def _rewrite(pattern: str) -> str | None:
    """``pattern`` made to treat the separator as the ends of a text; None if it has a construct
    this rewrite does not handle (then texts are counted one at a time)."""
    if pattern.startswith("^"):
        pattern = _START_ANCHOR + pattern[1:]
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + _END_ANCHOR
    pattern = re.sub(r"(?<!\\)\[\^", r"[^\\x00", pattern)  # negated classes never match the separator
    # Any other anchor, or a dot (which would match the separator), is not handled.
    bare = re.sub(r"\\.", "", pattern.replace(_START_ANCHOR, "").replace(_END_ANCHOR, ""))
    bare = re.sub(r"\[\^?\]?[^\]]*\]", "", bare)  # character classes
    for group in ("(?:", "(?i)", "(?#X)", "(?=", "(?!", "(?<!"):
        bare = bare.replace(group, "(")
    if any(symbol in bare for symbol in "^$.") or "(?" in bare:
        return None
    return pattern


def _compiled(step):
    """One substitution as ``(compiled pattern, replacement, characters it needs)`` for joined texts."""
    rx, replacement = step
    inner = getattr(rx, "_rx", rx)  # NLTK wraps its ``regex`` patterns in a timed wrapper
    pattern = _rewrite(inner.pattern)
    if pattern is None:
        raise NotImplementedError(inner.pattern)
    if inner.pattern == r"\s+":
        # Runs that are already one space need no replacement: only the others are matched.
        pattern = r"(?: \s+|[^\S ]\s*)"
    if inner.pattern in _FASTER_IN_RE or type(inner).__module__.lstrip("_") != "regex":
        return re.compile(pattern), replacement, _NEEDS.get(inner.pattern)
    import regex

    return regex.compile(pattern, inner.flags), replacement, _NEEDS.get(inner.pattern)


_STEPS = None


def _steps():
    """``(joined, tail)``: the substitutions run on joined texts (``"pad"`` where the tokenizer adds
    a space at both ends), and those run text by text after them (the tokenizer's own patterns)."""
    global _STEPS
    if _STEPS is None:
        tok = type(_tokenizer())
        split_at = [rx.pattern for rx, _ in tok.ENDING_QUOTES].index(r"\s+") + 1
        joined = [*tok.STARTING_QUOTES, *tok.PUNCTUATION, tok.PARENS_BRACKETS, tok.DOUBLE_DASHES, "pad",
                  *tok.ENDING_QUOTES[:split_at]]
        tail = [*tok.ENDING_QUOTES[split_at:], *((rx, r" \1 \2 ") for rx in (*tok.CONTRACTIONS2, *tok.CONTRACTIONS3))]
        _STEPS = ([step if step == "pad" else _compiled(step) for step in joined],
                  [(rx, replacement, _literal(rx)) for rx, replacement in tail])
    return _STEPS


def _literal(rx) -> str:
    """A lower-case string every match of a last-step pattern contains (on plain ASCII): the
    contraction's letters (``(?i)\\b(can)(?#X)(not)\\b``: ``cannot``; `` ('t)(?#X)(is)\\b``: ``'tis``), else
    the apostrophe every clitic pattern has."""
    inner = getattr(rx, "_rx", rx)
    groups = re.findall(r"\(([a-z']+)\)", inner.pattern)
    return "".join(groups) if inner.pattern.startswith("(?i)") and groups else "'"


def _count_joined(joined: str) -> list:
    """Token counts of the plain-ASCII texts joined (by the separator) in ``joined``."""
    steps, tail = _steps()
    for step in steps:
        if step == "pad":  # tokenize: text = " " + text + " "
            joined = " " + joined.replace(SEPARATOR, " " + SEPARATOR + " ") + " "
            continue
        compiled, replacement, needs = step
        if needs is None or any(char in joined for char in needs):
            joined = compiled.sub(replacement, joined)
    parts = joined.split(SEPARATOR)
    lowered = joined.lower()
    if any(word in lowered for word in _TAIL_WORDS):
        for i, part in enumerate(parts):
            lowered_part = part.lower()
            if any(word in lowered_part for word in _TAIL_WORDS):
                for rx, replacement, literal in tail:
                    # Substitutions only add spaces: a literal absent now stays absent.
                    if literal in lowered_part:
                        part = rx.sub(replacement, part)
                        lowered_part = part.lower()
                parts[i] = part
    return [len(part.split()) for part in parts]


# ---------------------------------------------------------------------------------------------
# Buckets
# ---------------------------------------------------------------------------------------------


def quantile_buckets(lengths, n_buckets: int) -> np.ndarray:
    """Equal-frequency bucket (0 .. n_buckets-1) of each length.

    The same bins as ``pandas.qcut(lengths, [0, 1/B, ..., 1], labels=False)``: edges are the
    linear-interpolation quantiles, bins are closed on the right, and the lowest value belongs to
    bucket 0. Like ``qcut`` it refuses repeated edges, which happen when one length covers more
    than a whole bucket's share of the rows.
    """
    n_buckets = check_number(n_buckets, "length_buckets", integer=True, minimum=1)
    lengths = np.asarray(lengths)
    if lengths.size == 0:
        raise InvalidParameterError("cannot bucket an empty set of lengths")
    edges = _edges(lengths, n_buckets)
    if np.unique(edges).size != edges.size:
        if lengths.size < n_buckets:  # too few rows, whatever their lengths (a class of one row, say)
            most = max_buckets(lengths, min(n_buckets - 1, lengths.size))
            raise InvalidParameterError(
                f"{n_buckets} equal-frequency length buckets need at least {n_buckets} rows; the rows bucketed "
                f"together (one class, when buckets are formed per class) number only {lengths.size}, so at most "
                f"{most} are possible here; use fewer buckets, or a label field whose classes have more rows")
        most = max_buckets(lengths, n_buckets - 1)
        possible = (f"at most {most} are possible here" if most else "every row has the same length")
        raise InvalidParameterError(
            f"{n_buckets} equal-frequency length buckets are impossible: the bucket edges repeat (too many "
            f"rows share one length); {possible}; use fewer buckets")
    buckets = np.searchsorted(edges, lengths, side="left") - 1
    return np.clip(buckets, 0, n_buckets - 1).astype(np.int64)


def _edges(lengths, n_buckets: int) -> np.ndarray:
    return np.quantile(lengths, [q / n_buckets for q in range(n_buckets + 1)])


def max_buckets(lengths, at_most: int) -> int:
    """The largest number of equal-frequency buckets, up to ``at_most``, whose edges do not repeat
    (0 when there is none: every length is the same)."""
    ordered = np.sort(np.asarray(lengths, dtype=np.float64))
    for n_buckets in range(min(at_most, ordered.size), 0, -1):
        # The edges interpolate between neighbouring sorted values: computed here in O(buckets),
        # and confirmed with the exact quantiles only for a candidate.
        positions = np.arange(n_buckets + 1) * (ordered.size - 1) / n_buckets
        below = np.floor(positions).astype(np.int64)
        above = np.minimum(below + 1, ordered.size - 1)
        edges = ordered[below] + (ordered[above] - ordered[below]) * (positions - below)
        if np.all(np.diff(edges) > 0) and np.unique(_edges(ordered, n_buckets)).size == n_buckets + 1:
            return n_buckets
    return 0
