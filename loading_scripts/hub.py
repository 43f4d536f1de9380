"""Read a dataset from the Hugging Face Hub with errors that say what went wrong: its splits
(:func:`load_hub_splits`), or a compositional dataset's rows (:func:`compositional_from_hub`)."""

from __future__ import annotations

import os

import datasets

from loading_scripts.compositional import CompositionalSource, guess_target_language, rows_dataset
from loading_scripts.spider import nqg_examples
from loading_scripts.errors import SourceLoadError

# Column pairs (input, target) of the usual Hub copies of the compositional datasets, tried in order.
COMPOSITIONAL_COLUMNS = (("input", "target"), ("commands", "actions"), ("source", "target"), ("input", "output"))


def hub_is_offline() -> bool:
    """True when the environment asks huggingface_hub / datasets not to use the network."""
    truthy = {"1", "true", "yes", "on"}
    return any(os.environ.get(v, "").lower() in truthy for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def load_hub_splits(repo_id: str, splits: list[str] | None = None, *, revision: str | None = None):
    """Load ``splits`` (all when None) of a Hub dataset as ``[(split_name, Dataset), ...]``."""
    try:
        loaded = datasets.load_dataset(repo_id, revision=revision)
    except Exception as error:  # datasets raises many kinds; all mean "could not read it"
        if hub_is_offline():
            hint = (f"HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set and {repo_id!r} is not in the local "
                    "cache; unset them, or pass a local file with --source PATH")
        else:
            hint = "check the id, your network and your login (`hf auth login`)"
        raise SourceLoadError(f"could not load the Hub dataset {repo_id!r}: {hint} "
                              f"({type(error).__name__}: {str(error)[:200]})") from None
    names = list(loaded.keys()) if splits is None else splits
    missing = [s for s in names if s not in loaded]
    if missing:
        raise SourceLoadError(f"{repo_id!r} has no split(s) {missing}; it has {list(loaded.keys())}")
    return [(name, loaded[name]) for name in names]


def compositional_from_hub(repo_id: str, *, revision: str | None = None) -> CompositionalSource:
    """A compositional dataset from the Hub: every split concatenated in the Hub's order.

    Spider-shaped data (``db_id``, ``question``, ``query``) is turned into Shaw et al.'s NQG rows
    (as :func:`loading_scripts.spider.nqg_examples`: its ``train`` split decides the SSP databases);
    otherwise the first matching pair of :data:`COMPOSITIONAL_COLUMNS` gives ``input`` and ``target``.
    """
    parts = load_hub_splits(repo_id, revision=revision)
    columns = parts[0][1].column_names
    order = ", ".join(name for name, _ in parts)
    if {"db_id", "question", "query"} <= set(columns):
        train = [row for name, part in parts if name == "train" for row in part]
        other = [row for name, part in parts if name != "train" for row in part]
        pairs = nqg_examples(train, other)
        return CompositionalSource(
            rows_dataset([p[0] for p in pairs], [p[1] for p in pairs]), name=repo_id, target_language="sql",
            source_id_note=f"0-based row of the NQG-format Spider built from {repo_id} (splits {order})",
            license=None, hub_id=repo_id)
    pair = next(((i, t) for i, t in COMPOSITIONAL_COLUMNS if {i, t} <= set(columns)), None)
    if pair is None:
        raise SourceLoadError(
            f"{repo_id!r} has none of the column pairs " + ", ".join(f"{i}/{t}" for i, t in COMPOSITIONAL_COLUMNS)
            + f"; its columns: {', '.join(columns)}")
    for column in pair:  # programs and inputs are text (a list or a number is not a program)
        kind = parts[0][1].features[column]
        if not (isinstance(kind, datasets.Value) and kind.dtype in ("string", "large_string")):
            raise SourceLoadError(f"{repo_id!r}: column {column!r} holds {kind}, not text; a compositional dataset "
                                  "pairs an input text with a target program text")
    inputs = [text for _, part in parts for text in part[pair[0]]]
    targets = [text for _, part in parts for text in part[pair[1]]]
    return CompositionalSource(rows_dataset(inputs, targets), name=repo_id,
                               target_language=guess_target_language(targets),
                               source_id_note=f"0-based row of {repo_id}'s splits concatenated in order ({order})",
                               hub_id=repo_id)
