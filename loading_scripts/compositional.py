"""The canonical form of a compositional-generalisation dataset (GeoQuery, Spider, SCAN, COGS).

Rows are ``source_id``, ``input``, ``target`` (plus reader-specific columns); ``published`` holds
the splits released with the dataset (train/validation/test row positions) and ``published_from``
the file each came from, so a release can carry them beside the splits resplit builds.

This module holds what the readers share and imports none of them: the readers (``geoquery``,
``spider``, ``scan``, ``cogs``, ``nqg``, ``hub``) build a :class:`CompositionalSource`, and
:func:`loading_scripts.load_compositional` picks the reader for a folder, a file or a Hub id.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np

from loading_scripts.tables import quiet_datasets
from loading_scripts.errors import InvalidParameterError, SourceLoadError


@dataclass
class CompositionalSource:
    """Rows of one dataset, its target language and its published splits."""

    rows: datasets.Dataset
    name: str
    target_language: str
    source_id_note: str
    published: dict = field(default_factory=dict)
    published_from: dict = field(default_factory=dict)
    license: str | None = None
    language: tuple | None = None  # ISO 639-1 codes of the inputs, where the dataset is known
    hub_id: str | None = None  # the original dataset's Hub id, where known
    dropped_published: list = field(default_factory=list)  # published splits left out, with the reason

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def source_ids(self) -> list:
        return self.rows["source_id"]

    @property
    def inputs(self) -> list[str]:
        return self.rows["input"]

    @property
    def targets(self) -> list[str]:
        return self.rows["target"]

    def head(self, n_rows: int) -> "CompositionalSource":
        """The first ``n_rows`` rows (:meth:`select`)."""
        if n_rows >= len(self):
            return self
        return self.select(np.arange(n_rows), "--limit")

    def select(self, keep, why: str) -> "CompositionalSource":
        """The rows at the sorted positions ``keep``; each published split keeps its rows among
        them, renumbered (a split left without train or without any evaluation rows is dropped,
        and ``dropped_published`` says so with ``why``)."""
        keep = np.asarray(keep, dtype=np.int64)
        new_position = np.full(len(self), -1, dtype=np.int64)
        new_position[keep] = np.arange(keep.size)
        published, published_from, dropped = {}, {}, list(self.dropped_published)
        for name, split in self.published.items():
            kept = {part: new_position[np.asarray(ids, dtype=np.int64)] for part, ids in split.items()}
            kept = {part: ids[ids >= 0] for part, ids in kept.items()}
            kept = {part: ids for part, ids in kept.items() if ids.size}
            if "train" in kept and len(kept) > 1:
                published[name] = kept
                published_from[name] = self.published_from[name]
            else:
                dropped.append(f"{name} (no train or no evaluation rows left after {why})")
        with quiet_datasets():  # one flat table now, rather than a progress bar when a column is added
            rows = self.rows.select(keep).flatten_indices()
        return dataclasses.replace(self, rows=rows, published=published, published_from=published_from,
                                   dropped_published=dropped)


def rows_dataset(inputs, targets, **extra) -> datasets.Dataset:
    """``source_id`` = 0-based position, then ``input``, ``target`` and any extra columns."""
    return datasets.Dataset.from_dict({"source_id": list(range(len(inputs))), "input": list(inputs),
                                       "target": list(targets), **{k: list(v) for k, v in extra.items()}})


def read_id_split(path: Path, n_rows: int, keys: dict) -> dict:
    """A published JSON split of row ids, ``keys`` mapping our split names to the file's keys;
    ids outside the dataset are an error (a split file for another version of the data)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as error:
        raise SourceLoadError(f"cannot read published split {str(path)!r}: {error}") from None
    if not isinstance(data, dict):
        raise SourceLoadError(f"published split {str(path)!r} is not a JSON object of id lists")
    missing = [theirs for ours, theirs in keys.items() if ours in ("train", "test") and theirs not in data]
    if missing:
        raise SourceLoadError(f"published split {str(path)!r} has no {' and no '.join(repr(m) for m in missing)} list "
                              f"(it has {', '.join(repr(k) for k in data) or 'no keys'}): not a published split file; "
                              "fix it, or move it out of the folder")
    split = {}
    for ours, theirs in keys.items():
        if theirs not in data:
            continue
        ids = np.asarray(data[theirs], dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= n_rows):
            raise SourceLoadError(f"{path}: {theirs!r} holds ids outside 0..{n_rows - 1}; the split does not "
                                  "belong to this copy of the dataset")
        split[ours] = ids
    return split


def attach_nqg_splits(source: CompositionalSource, folder: Path, names) -> CompositionalSource:
    """Add Shaw et al.'s published ``splits_nqg/<name>.json`` files found in ``folder`` as
    ``published_<name>`` configs (train/test ids of the source's rows)."""
    for name in names:
        split_file = Path(folder) / "splits_nqg" / f"{name}.json"
        if split_file.is_file():
            source.published[f"published_{name}"] = read_id_split(split_file, len(source), {"train": "train", "test": "test"})
            source.published_from[f"published_{name}"] = f"Shaw et al. (2021) splits_nqg/{name}.json"
    return source


# What each target language's programs look like: a test every (or almost every) program passes, and
# words for a message. ``--target-language`` is refused when most programs fail its test.
LANGUAGE_SHAPES = {
    "sql": (re.compile(r"\bselect\b", re.IGNORECASE), "SQL queries (select ... from ...)"),
    "scan": (re.compile(r"^\s*(I_\w+(\s+I_\w+)*|((jump|walk|run|look|turn|left|right|twice|thrice|and|after|"
                        r"around|opposite)\s*)+)\s*$"), "SCAN commands or action sequences (jump twice, I_JUMP ...)"),
    "cogs": (re.compile(r"\bx _ \d|\bLAMBDA\b| \. (agent|theme|recipient) \("), "COGS logical forms "
             "(noun ( x _ 1 ) AND verb . agent ( ... ))"),
    "funql": (re.compile(r"\(.*\)"), "FunQL programs (answer ( ... ))"),
}


def check_target_language(language: str | None, targets, *, source: str, flag: str = "--target-language") -> None:
    """Refuse a ``--target-language`` that the programs (the target column) do not look like, naming
    what they look like instead (:func:`guess_target_language`) and one of them; None passes (the
    language is then read from the programs). Checked on the first 50 non-empty programs: more than
    half must pass the language's test (:data:`LANGUAGE_SHAPES`), and they must not look like SQL,
    SCAN or COGS when another language is given."""
    if language is None or language not in LANGUAGE_SHAPES:
        return
    sample = [t for t in (str(t).strip() for t in list(targets)[:200] if t is not None) if t][:50]
    if not sample:
        return
    passes = [name for name, (pattern, _) in LANGUAGE_SHAPES.items()
              if 2 * sum(bool(pattern.search(t)) for t in sample) > len(sample)]
    guessed = guess_target_language(sample)  # funql is its fallback: only the others identify a language
    if language in passes and guessed in (language, "funql"):
        return
    looks = guessed if guessed != "funql" else next((name for name in passes if name != language), None)
    shape = LANGUAGE_SHAPES[looks][1] if looks else "none of sql, scan, cogs, funql"
    example = sample[0] if len(sample[0]) <= 70 else sample[0][:67] + "..."
    raise InvalidParameterError(
        f"{flag} {language} does not match the programs of {source}: they look like {shape}, e.g. "
        f"{example!r}, not {LANGUAGE_SHAPES[language][1]}; "
        + (f"give {flag} {looks}" + (", or leave it out to read it from the programs" if flag == "--target-language"
                                      else "") if looks
           else "check the target field"))


def guess_target_language(targets) -> str:
    """The atom/compound definition a target column most likely needs (``--target-language``
    overrides): SQL starts with ``select``, SCAN actions are ``I_*`` tokens, COGS logical forms use
    ``x _ <n>`` variables, anything else is taken as FunQL."""
    first = [t.strip() for t in list(targets)[:50] if t and t.strip()]
    if first and all(t.lower().startswith("select") for t in first):
        return "sql"
    if first and all(token.startswith("I_") for t in first for token in t.split()):
        return "scan"
    if any(" x _ " in f" {t} " for t in first):
        return "cogs"
    return "funql"
