"""Spider in Shaw et al.'s NQG format (their Spider-SSP setting), built from the official json.

Rows are the official train examples then the dev examples, kept only for the databases with at
least 50 *train* examples (Shaw et al.'s list of SSP databases: 4,376 rows, none from dev, whose
databases are disjoint from train's); input ``"<db_id>: <question>"`` lowercased, target the
query with whitespace collapsed, lowercased. Row i is id i of the published ``splits_nqg`` files.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from loading_scripts.compositional import CompositionalSource, attach_nqg_splits, rows_dataset
from loading_scripts.files import open_text
from loading_scripts.errors import SourceLoadError

MIN_TRAIN_EXAMPLES = 50
TRAIN_FILES = ("train_spider_question_query_dbid.json.gz", "train_spider.json", "train_spider.json.gz")
DEV_FILES = ("dev.json.gz", "dev.json")
PUBLISHED = ("random_1", "length_1", "template_1", "tmcd_1")
DATASET = "Spider"  # the dataset's name: read here, "Spider (<folder>)" (cards, harness task names)


def _first(folder: Path, names) -> Path:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    raise SourceLoadError(f"{folder} holds none of {', '.join(names)} (the official Spider json)")


def _read_json(path: Path) -> list:
    try:
        with open_text(path) as handle:
            return json.load(handle)
    except ValueError as error:
        raise SourceLoadError(f"{path} is not valid JSON: {error}") from None


def nqg_examples(train: list, dev: list, min_train_examples: int = MIN_TRAIN_EXAMPLES) -> list[tuple[str, str]]:
    """``(input, target)`` pairs in NQG format from official Spider example dicts."""
    per_database = Counter(example["db_id"] for example in train)
    keep = {db for db, count in per_database.items() if count >= min_train_examples}
    return [(f"{e['db_id']}: {e['question']}".lower(), " ".join(e["query"].split()).lower())
            for e in [*train, *dev] if e["db_id"] in keep]


def load(folder) -> CompositionalSource:
    """Read the official Spider train and dev json from ``folder`` (and ``splits_nqg/`` if present)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SourceLoadError(f"Spider folder {str(folder)!r} does not exist")
    pairs = nqg_examples(_read_json(_first(folder, TRAIN_FILES)), _read_json(_first(folder, DEV_FILES)))
    rows = rows_dataset([p[0] for p in pairs], [p[1] for p in pairs])
    # The database of each question (the input's "db_id:" prefix): Spider's own split is by database,
    # and --group-field db_id keeps a database's questions in one split.
    rows = rows.add_column("db_id", [p[0].split(":", 1)[0] for p in pairs])
    source = CompositionalSource(
        rows, name=f"{DATASET} ({folder.name})", target_language="sql",
        source_id_note="0-based row of Shaw et al.'s NQG-format Spider (train then dev, SSP databases)",
        license="cc-by-sa-4.0", language=("en",))
    return attach_nqg_splits(source, folder, PUBLISHED)
