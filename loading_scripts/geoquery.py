"""GeoQuery in NQG format (Shaw et al. 2021): ``question TAB FunQL`` per line, entities as m0, m1.

The copy in ``../shared/data/geoquery`` came with a GPL-2 repository: it is read from a path,
never bundled. Published splits (``splits_nqg/*.json``, ``{"train": [...], "test": [...]}``) index
the file's lines.
"""

from __future__ import annotations

from pathlib import Path

from loading_scripts.compositional import CompositionalSource, attach_nqg_splits, rows_dataset
from loading_scripts.nqg import SOURCE_ID_NOTE, read_pairs

PUBLISHED = ("standard", "length_1", "template_1", "tmcd_1")
DATASET = "GeoQuery"  # the dataset's name: read here, "GeoQuery (<file>)" (cards, harness task names)


def load(path) -> CompositionalSource:
    """Read ``geoquery_nqg.tsv`` (or a folder holding it and ``splits_nqg/``)."""
    path = Path(path)
    folder, file = (path, path / "geoquery_nqg.tsv") if path.is_dir() else (path.parent, path)
    pairs = read_pairs(file)
    source = CompositionalSource(rows_dataset([p[0] for p in pairs], [p[1] for p in pairs]),
                                 name=f"{DATASET} ({file.name})",
                                 target_language="funql", source_id_note=SOURCE_ID_NOTE, license=None,
                                 language=("en",))
    return attach_nqg_splits(source, folder, PUBLISHED)
