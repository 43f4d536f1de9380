"""CURRICULUM (Chen & Gao, 2022): 36 linguistic phenomena recast as NLI, one config each.

The release ships one zip per phenomenon, ``<name>.zip`` holding ``<name>/train.jsonl`` and
``<name>/val.jsonl`` (fields ``premise``, ``hypothesis``, ``gold_label``, ``idx``; a few add
``verb_frame``, ``index`` or ``uid``). Zips are read in place with :mod:`zipfile`; macOS ``__MACOSX``
entries are ignored. Users online can pass the original release's URL (:data:`BASE_URL`) instead of
a folder: the zips are downloaded once into the resplit cache (:func:`download_zips`).

Canonical rows per phenomenon: ``source_id`` (0-based position in train then validation), ``idx``
(the release's own id within its file), ``premise``, ``hypothesis``, ``label`` (``ClassLabel``).
Extra per-phenomenon fields are not carried: ``idx`` and the split join rows back to the release.

Label sets come from ``tasks.json`` (found beside the zips or one folder up) when present, and are
inferred from the labels otherwise: ``entailed``/``not-entailed`` (2-way) or
``entailment``/``neutral``/``contradiction`` (3-way). ``monotonicity_infer`` labels train rows
``entailment``/``neutral`` but validation rows ``entailed``/``not-entailed``; a phenomenon that mixes
the vocabularies is 2-way, and 3-way names are folded into it (``entailment`` -> ``entailed``, the
others -> ``not-entailed``), see :func:`loading_scripts.recast.normalise_label`.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa

from loading_scripts.recast import THREE_WAY, TWO_WAY, normalise_label
from loading_scripts.tables import row_keys
from loading_scripts.files import cache_root
from loading_scripts.errors import InvalidParameterError, SourceLoadError, SourceNote

BASE_URL = "https://github.com/eric11eca/curriculum-ling/raw/main/tasks"  # <name>.zip below it
LICENSE = "mit"
SPLIT_FILES = {"train": "train.jsonl", "validation": "val.jsonl"}
CITATION = (
    "@inproceedings{chen-gao-2022-curriculum,\n"
    "  title = {Curriculum: A Broad-Coverage Benchmark for Linguistic Phenomena in Natural Language Understanding},\n"
    "  author = {Chen, Zeming and Gao, Qiyue},\n  booktitle = {Proceedings of NAACL},\n  year = {2022}\n}"
)
# Category and the paper's abbreviation of each released phenomenon (the paper's "atomic" is released
# as "defeasible"); used when tasks.json is absent.
CATALOGUE = {
    "lexical": ("lexical", "lex-ent"), "hypernymy": ("lexical", "hyper"), "hyponymy": ("lexical", "hypo"),
    "ner": ("lexical", "ner"), "transitive": ("lexical", "transit"),
    "syntactic_alternation": ("syntactic", "syn-alt"), "verbnet": ("syntactic", "vbn"),
    "syntactic_variation": ("syntactic", "syn-var"), "verbcorner": ("syntactic", "vbc"),
    "sentiment": ("semantic", "senti"), "kg_relations": ("semantic", "kg-rel"), "puns": ("semantic", "puns"),
    "sprl": ("semantic", "sprl"), "context_align": ("semantic", "ctx-align"),
    "coreference": ("semantic", "coref"), "boolean": ("logical", "bool"), "counting": ("logical", "count"),
    "conditional": ("logical", "cond"), "comparative": ("logical", "comp"), "negation": ("logical", "negat"),
    "monotonicity_infer": ("logical", "monot"), "quantifier": ("logical", "quant"),
    "entailment_tree": ("analytic", "ent-tree"), "analytic": ("analytic", "analytic"),
    "physicalqa": ("commonsense", "physic"), "socialqa": ("commonsense", "social"),
    "hellaswag": ("commonsense", "swag"), "cosmoqa": ("commonsense", "cosmo"),
    "ester": ("comprehension", "ester"), "drop": ("comprehension", "drop"), "logiqa": ("comprehension", "logi"),
    "control": ("comprehension", "control"), "spatial": ("special", "spat"), "temporal": ("special", "temp"),
    "defeasible": ("special", "defeas"), "counterfactual": ("special", "counter"),
}


@dataclass
class Phenomenon:
    """One phenomenon's rows, label set and data-quality report."""

    name: str
    category: str | None
    abbrev: str | None
    label_set: tuple
    rows: datasets.Dataset                  # train rows first, then validation rows
    split_sizes: dict                       # {"train": n, "validation": m}
    report: dict = field(default_factory=dict)

    def indices(self) -> dict:
        n_train = self.split_sizes["train"]
        return {"train": list(range(n_train)), "validation": list(range(n_train, len(self.rows)))}


def find_zips(data_dir) -> dict:
    """``{name: path}`` of the phenomenon zips in ``data_dir`` or its ``tasks/`` subfolder."""
    data_dir = Path(data_dir)
    if data_dir.exists() and not data_dir.is_dir():
        raise SourceLoadError(f"CURRICULUM source {str(data_dir)!r} is a file; give the folder holding the "
                              "<phenomenon>.zip files (or its parent with tasks/)")
    if not data_dir.is_dir():
        raise SourceLoadError(f"file not found: the CURRICULUM folder {str(data_dir)!r} does not exist")
    for folder in (data_dir, data_dir / "tasks"):
        zips = {p.stem: p for p in sorted(folder.glob("*.zip"))}
        if zips:
            return zips
    raise SourceLoadError(f"no <phenomenon>.zip files in {str(data_dir)!r} or its tasks/ folder")


def read_tasks_json(data_dir) -> dict:
    """The release's ``tasks.json`` from ``data_dir`` or its parent, or {} when there is none."""
    data_dir = Path(data_dir)
    for candidate in (data_dir / "tasks.json", data_dir.parent / "tasks.json"):
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text(encoding="utf-8-sig"))
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise SourceLoadError(f"cannot parse {candidate}: {error}") from None
    return {}


def _read_jsonl(archive: zipfile.ZipFile, name: str, split_file: str, limit: int | None = None) -> list[dict]:
    """The rows of ``split_file`` in ``archive`` (its first ``limit`` rows: the rest is not read), each checked."""
    members = [m for m in archive.namelist()
               if not m.startswith("__MACOSX") and m.rsplit("/", 1)[-1] == split_file]
    if not members:
        raise SourceLoadError(f"{archive.filename}: no {split_file} inside (expected {name}/{split_file})")
    rows = []
    with archive.open(sorted(members, key=len)[0]) as handle:
        for number, line in enumerate(handle, 1):
            if limit is not None and len(rows) >= limit:
                break
            if line.strip():
                try:
                    rows.append(json.loads(line.decode("utf-8-sig")))
                except UnicodeDecodeError as error:
                    raise SourceLoadError(f"{archive.filename}:{split_file} line {number} is not UTF-8 (byte "
                                          f"0x{line[error.start]:02x} at offset {error.start} of the line)") from None
                except json.JSONDecodeError as error:
                    raise SourceLoadError(f"{archive.filename}:{split_file} line {number}: {error}") from None
    if not rows:
        raise SourceLoadError(f"{archive.filename}:{split_file} holds no rows")
    required = {"premise", "hypothesis", "gold_label"}
    where = f"{archive.filename}:{split_file}"
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise SourceLoadError(f"{where} row {number} is a JSON {type(row).__name__}, not an object; each line "
                                  "holds one object with premise, hypothesis and gold_label")
        if not required <= row.keys():
            missing = ", ".join(repr(c) for c in sorted(required - set(row)))
            raise SourceLoadError(f"{where} row {number} has no {missing} field; fields: {', '.join(sorted(row))}")
        for name in ("premise", "hypothesis"):  # text, or nothing (an empty text)
            if row[name] is not None and not isinstance(row[name], str):
                raise SourceLoadError(f"{where} row {number}: field {name!r} holds {type(row[name]).__name__} "
                                      f"{row[name]!r}, not text")
        if isinstance(row["gold_label"], (list, dict)):
            raise SourceLoadError(f"{where} row {number}: field 'gold_label' holds a {type(row['gold_label']).__name__}; "
                                  "a label is one value per row")
    return rows


def _without_missing_labels(path: Path, raw: dict) -> dict:
    """``{split: [(position, row), ...]}`` of the rows that have a label. Rows without one (null or
    blank) are dropped, as every reader drops them, and said in a :class:`SourceNote` (the card shows
    it; ``--strict`` refuses it); labels of other scalar types than text are read as text, with a note."""
    kept, dropped, converted = {}, {}, set()
    for split, rows in raw.items():
        kept[split] = []
        for position, row in enumerate(rows):
            label = row["gold_label"]
            if label is None or (isinstance(label, str) and not label.strip()):
                dropped[split] = dropped.get(split, 0) + 1
                continue
            if not isinstance(label, str):
                converted.add(type(label).__name__)
                row = {**row, "gold_label": json.dumps(label)}
            kept[split].append((position, row))
    if dropped:
        counts = ", ".join(f"{SPLIT_FILES[split]} {n}" for split, n in dropped.items())
        warnings.warn(SourceNote(f"{path.name}: rows without a gold_label dropped ({counts})"), stacklevel=3)
    if converted:
        warnings.warn(SourceNote(f"{path.name}: gold_label mixes text and {', '.join(sorted(converted))} values: "
                                 "read as text"), stacklevel=3)
    return kept


def infer_label_set(labels) -> tuple:
    """2-way when any 2-way name occurs (3-way names are then folded in), else 3-way."""
    present = set(labels)
    if present & set(TWO_WAY):
        return TWO_WAY
    if present <= set(THREE_WAY):
        return THREE_WAY
    raise InvalidParameterError(f"labels {sorted(present)} are neither {TWO_WAY} nor {THREE_WAY}")


def _pair(row) -> tuple:
    return (row["premise"] or "").strip(), (row["hypothesis"] or "").strip()


def _pair_keys(pairs: dict) -> dict:
    """``{split: one int64 key per pair}``, equal exactly when the pairs are (across splits too)."""
    every = [pair for split_pairs in pairs.values() for pair in split_pairs]
    keys = row_keys(pa.table({"premise": pa.array([p for p, _ in every], pa.string()),
                              "hypothesis": pa.array([h for _, h in every], pa.string())}), ["premise", "hypothesis"])
    return dict(zip(pairs, np.split(keys, np.cumsum([len(v) for v in pairs.values()])[:-1])))


def leakage_report(raw: dict) -> dict:
    """Duplicate pairs within and across splits, and empty fields, per split (pairs compared after
    ``str.strip``)."""
    pairs = {split: [_pair(r) for r in rows] for split, rows in raw.items()}
    keys = _pair_keys(pairs)
    report = {"train_validation_duplicate_pairs": int(np.intersect1d(keys["train"], keys["validation"]).size),
              "validation_rows_seen_in_train": int(np.isin(keys["validation"], keys["train"]).sum())}
    for split, split_pairs in pairs.items():
        report[f"{split}_duplicate_pairs"] = len(split_pairs) - int(np.unique(keys[split]).size)
        report[f"{split}_empty_premise"] = sum(not p for p, _ in split_pairs)
        report[f"{split}_empty_hypothesis"] = sum(not h for _, h in split_pairs)
    return report


def _dataset(columns: dict, features) -> datasets.Dataset:
    """The rows as a Dataset of ``features``, made from whole Arrow columns (class ids already numbered): what
    ``Dataset.from_list`` gives, without encoding each row's label on its own (a third of reading CURRICULUM)."""
    import pyarrow as pa

    n = len(columns["idx"])
    table = pa.Table.from_pydict({"source_id": list(range(n)), **columns}, schema=features.arrow_schema)
    return datasets.Dataset(table, info=datasets.DatasetInfo(features=features))


def read_phenomenon(path, *, info: dict | None = None, limit: int | None = None) -> Phenomenon:
    """Read one ``<name>.zip`` into canonical rows (``info``: its tasks.json entry, if any).

    ``limit`` keeps the first ``limit`` rows of each released split (train, validation) before
    anything else is computed (quick runs); the label set still comes from ``info`` when given.
    """
    path = Path(path)
    name = path.stem
    try:
        with zipfile.ZipFile(path) as archive:
            raw = {split: _read_jsonl(archive, name, f, limit) for split, f in SPLIT_FILES.items()}
    except zipfile.BadZipFile as error:
        raise SourceLoadError(f"{path}: not a zip file ({error})") from None
    info = info or {}
    labelled = _without_missing_labels(path, raw)
    all_labels = [r["gold_label"] for rows in labelled.values() for _, r in rows]
    label_set = tuple(info.get("label_set") or infer_label_set(all_labels))
    original = {split: dict(sorted(Counter(r["gold_label"] for _, r in rows).items()))
                for split, rows in labelled.items()}
    columns = {"idx": [], "premise": [], "hypothesis": [], "label": []}
    class_ids, normalised = {name: k for k, name in enumerate(label_set)}, 0
    for split, rows in labelled.items():
        for position, row in rows:
            label = normalise_label(row["gold_label"], label_set)
            normalised += label != row["gold_label"]
            idx = row.get("idx", row.get("index", position))
            if isinstance(idx, bool) or not isinstance(idx, (int, str)) or not str(idx).strip().lstrip("-").isdigit():
                raise SourceLoadError(f"{path}:{SPLIT_FILES[split]} row {position + 1}: idx {idx!r} is not an integer")
            columns["idx"].append(int(idx))
            columns["premise"].append(row["premise"] or "")
            columns["hypothesis"].append(row["hypothesis"] or "")
            columns["label"].append(class_ids[label])
    raw = {split: [row for _, row in rows] for split, rows in labelled.items()}
    features = datasets.Features({
        "source_id": datasets.Value("int64"), "idx": datasets.Value("int64"),
        "premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=list(label_set)),
    })
    report = leakage_report(raw)
    report["labels_normalised"] = normalised
    report["original_labels"] = original
    category, abbrev = CATALOGUE.get(name, (None, None))
    return Phenomenon(name=name, category=info.get("category", category), abbrev=info.get("abbrev", abbrev),
                      label_set=label_set, rows=_dataset(columns, features),
                      split_sizes={split: len(rows) for split, rows in raw.items()}, report=report)


def download_zips(base_url: str, names, *, cache_dir=None) -> Path:
    """Fetch ``<base_url>/<name>.zip`` for every name into a cache folder (once) and return it.

    Each zip is written to a temporary file, checked to be a readable zip, then moved into place,
    so an interrupted download never leaves a truncated file that a later run would trust.
    """
    base_url = base_url.rstrip("/")
    folder = Path(cache_dir) if cache_dir else cache_root() / "curriculum" / hashlib.sha256(base_url.encode()).hexdigest()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        target = folder / f"{name}.zip"
        if target.is_file():
            continue
        url = f"{base_url}/{name}.zip"
        handle, temporary = tempfile.mkstemp(prefix=f"{name}.", suffix=".part", dir=folder)
        try:
            with os.fdopen(handle, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
            if not zipfile.is_zipfile(temporary):
                raise SourceLoadError(f"{url} is not a zip file")
            os.replace(temporary, target)
        except (urllib.error.URLError, OSError) as error:
            raise SourceLoadError(f"cannot download {url}: {getattr(error, 'reason', error)}; download the zips "
                                  "yourself and pass their folder with --data") from None
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return folder


def read_curriculum(data_dir, *, phenomena=None, limit: int | None = None) -> list[Phenomenon]:
    """Every phenomenon of ``data_dir`` (or the named ``phenomena``), in the order of the zips' names.

    ``data_dir`` may also be a URL prefix holding ``<name>.zip`` files (such as :data:`BASE_URL`): the
    named phenomena (default: all 36 of the release) are downloaded once into the resplit cache.
    ``limit``: the first N rows of each phenomenon's train and of its validation split.
    """
    if str(data_dir).startswith(("http://", "https://")):
        data_dir = download_zips(str(data_dir), phenomena or list(CATALOGUE))
    zips = find_zips(data_dir)
    tasks = read_tasks_json(data_dir)
    if phenomena is not None:
        unknown = [p for p in phenomena if p not in zips]
        if unknown:
            raise InvalidParameterError(f"unknown phenomena {unknown}; available: {', '.join(zips)}")
        zips = {p: zips[p] for p in phenomena}
    return [read_phenomenon(path, info=tasks.get(name), limit=limit) for name, path in zips.items()]
