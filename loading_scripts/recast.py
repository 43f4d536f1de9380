"""Recasting other tasks as NLI, the way CURRICULUM built its comprehension and commonsense phenomena.

* :func:`qa_to_nli`: question-answer concatenation. The premise is the context followed by the
  question; the gold answer is the ``entailed`` hypothesis and one wrong option, picked with a
  seeded generator, the ``not-entailed`` one (CosmosQA, SocialIQA, PIQA-style multiple choice).
* :func:`entity_swap_to_nli`: for extractive answers without wrong options (DROP-style), the
  ``not-entailed`` hypothesis is the answer with one of its named entities replaced by another
  entity of the context.
* :func:`normalise_label`: NLI label names to one vocabulary; the CURRICULUM reader uses it to fix
  ``monotonicity_infer``, whose train file says ``entailment``/``neutral`` where its validation
  file says ``entailed``/``not-entailed``.

Named entities are found without a model (none is available offline): maximal runs of
capitalised words and numbers, skipping a capitalised word that only starts a sentence.
"""

from __future__ import annotations

import re

import numpy as np

from loading_scripts.errors import InvalidParameterError

TWO_WAY = ("entailed", "not-entailed")
THREE_WAY = ("entailment", "neutral", "contradiction")
# 3-way names folded to 2-way: only entailment is entailed, the rest is not.
TO_TWO_WAY = {"entailment": "entailed", "neutral": "not-entailed", "contradiction": "not-entailed",
              "entailed": "entailed", "not-entailed": "not-entailed", "not_entailment": "not-entailed",
              "non-entailment": "not-entailed"}

_ENTITY = re.compile(r"\b(?:[A-Z][\w'-]*|\d[\d,.]*)(?:\s+(?:[A-Z][\w'-]*|\d[\d,.]*|of|the|de))*(?<!\bof)(?<!\bthe)(?<!\bde)")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")


def normalise_label(label: str, label_set) -> str:
    """``label`` in the names of ``label_set`` (2-way labels fold 3-way names; unknown names raise)."""
    label_set = tuple(label_set)
    if label in label_set:
        return label
    if label_set == TWO_WAY and label in TO_TWO_WAY:
        return TO_TWO_WAY[label]
    raise InvalidParameterError(f"label {label!r} is not one of {', '.join(label_set)}")


def qa_to_nli(context: str, question: str, answer: str, options, *, random_state) -> list[dict]:
    """Two NLI rows from one multiple-choice QA example.

    Parameters
    ----------
    context, question : str
    answer : str
        The gold answer text.
    options : list of str
        All answer options (the gold one may be among them; it is never chosen as the wrong one).
    random_state : int or numpy.random.Generator
        Picks the wrong option.

    Returns
    -------
    list of dict
        ``{"premise", "hypothesis", "gold_label"}`` rows: the entailed one, then the not-entailed one.
    """
    if not str(answer).strip():
        raise InvalidParameterError("the gold answer is empty")
    wrong = [o for o in options if str(o).strip() and str(o).strip() != str(answer).strip()]
    if not wrong:
        raise InvalidParameterError(f"no wrong option to recast as not-entailed among {list(options)!r}")
    rng = np.random.default_rng(random_state)
    premise = _join(context, question)
    return [{"premise": premise, "hypothesis": str(answer), "gold_label": "entailed"},
            {"premise": premise, "hypothesis": str(wrong[rng.integers(len(wrong))]), "gold_label": "not-entailed"}]


def named_entities(text: str) -> list[str]:
    """Capitalised spans and numbers of ``text`` in order of first appearance (no duplicates)."""
    found = []
    for match in _ENTITY.finditer(text):
        span = match.group(0).rstrip(",.")
        first_word = span.split()[0]
        # A lone capitalised word at a sentence start is usually not a name ("The", "After").
        if (len(span.split()) == 1 and not first_word[0].isdigit()
                and _SENTENCE_START.search(text[:match.start()]) and first_word.lower() in _COMMON_STARTS):
            continue
        if span and span not in found:
            found.append(span)
    return found


_COMMON_STARTS = {"the", "a", "an", "after", "before", "in", "on", "at", "when", "while", "this", "that", "it",
                  "he", "she", "they", "we", "i", "you", "there", "his", "her", "their", "during", "as", "of",
                  "how", "what", "which", "who", "why", "where", "if", "but", "and", "so", "then", "later"}


def entity_swap_to_nli(context: str, question: str, answer: str, *, random_state) -> list[dict]:
    """Two NLI rows from one extractive QA example by entity swapping.

    The entailed hypothesis is the answer; the not-entailed one replaces one named entity of the
    answer (chosen with the seeded generator) by another entity of the context, chosen the same way.
    Numbers count as entities, so DROP's numeric answers swap for another number of the passage.
    """
    rng = np.random.default_rng(random_state)
    in_answer = named_entities(str(answer))
    if not in_answer:
        raise InvalidParameterError(f"the answer {answer!r} has no named entity or number to swap")
    target = in_answer[rng.integers(len(in_answer))]
    # Swap like for like: a number for a number, a name for a name.
    numeric = target[0].isdigit()
    candidates = [e for e in named_entities(str(context))
                  if e not in in_answer and e[0].isdigit() == numeric and e.lower() != target.lower()]
    if not candidates:
        raise InvalidParameterError(f"the context has no other entity to swap for {target!r}")
    replacement = candidates[rng.integers(len(candidates))]
    premise = _join(context, question)
    swapped = re.sub(re.escape(target), replacement, str(answer), count=1)
    return [{"premise": premise, "hypothesis": str(answer), "gold_label": "entailed"},
            {"premise": premise, "hypothesis": swapped, "gold_label": "not-entailed"}]


def _join(context: str, question: str) -> str:
    return f"{str(context).strip()} {str(question).strip()}".strip()
