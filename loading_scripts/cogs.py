"""COGS (Kim & Linzen 2020): ``sentence TAB logical form TAB distribution`` in train/dev/test/gen.

Rows are train, dev, test then gen, in file order; ``origin`` keeps the file and
``distribution`` the third column (``in_distribution`` or the generalisation case).
"""

from __future__ import annotations

from pathlib import Path

from loading_scripts.compositional import CompositionalSource, rows_dataset
from loading_scripts.files import open_text
from loading_scripts.errors import SourceLoadError

FILES = ("train", "dev", "test", "gen")


def read_file(path: Path) -> list[tuple[str, str, str]]:
    rows = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 3:
                raise SourceLoadError(f"{path}: line {number} has {len(fields)} tab-separated fields, COGS has 3")
            rows.append(tuple(fields))
    return rows


def load(folder) -> CompositionalSource:
    folder = Path(folder)
    parts = {}
    for name in FILES:
        path = next((p for p in (folder / f"{name}.tsv", folder / f"{name}.tsv.gz") if p.is_file()), None)
        if path is None:
            raise SourceLoadError(f"{folder} holds no {name}.tsv(.gz) (COGS needs {', '.join(FILES)})")
        parts[name] = read_file(path)
    rows = [(r, name) for name in FILES for r in parts[name]]
    source = CompositionalSource(
        rows_dataset([r[0] for r, _ in rows], [r[1] for r, _ in rows], distribution=[r[2] for r, _ in rows],
                     origin=[name for _, name in rows]),
        name=str(folder), target_language="cogs", license="mit", language=("en",),
        source_id_note="0-based row of COGS train, dev, test and gen concatenated in that order")
    start, positions = 0, {}
    for name in FILES:
        positions[name] = list(range(start, start + len(parts[name])))
        start += len(parts[name])
    source.published["gen"] = {"train": positions["train"], "validation": positions["dev"], "test": positions["gen"]}
    source.published_from["gen"] = "Kim & Linzen (2020) train.tsv / dev.tsv / gen.tsv"
    source.published["iid"] = {"train": positions["train"], "validation": positions["dev"], "test": positions["test"]}
    source.published_from["iid"] = "Kim & Linzen (2020) train.tsv / dev.tsv / test.tsv"
    return source
