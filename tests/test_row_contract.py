"""One row contract across families: a loop over one release of every registered family, with no family's name
in it, reads each config's label names, the evaluation split its card names and plain Python lists and dicts.

The releases are the session's shared ones (``family_releases``: each family's ``example_arguments``).
"""

import json
import re

import datasets
import pyarrow as pa
import pytest

from split_builders.api import SPLITS, registry
from split_builders.notebook import release_datasets
from split_builders.release.folder import Released

SNIPPET_SPLIT = re.compile(r'^evaluation = ds\["(\w+)"\]$', re.MULTILINE)


def _json_text(value) -> bool:
    """Whether a string holds a JSON list or object (a record stored as text)."""
    text = value.strip()
    if not text.startswith(("[", "{")):
        return False
    try:
        return isinstance(json.loads(text), (list, dict))
    except ValueError:
        return False


@pytest.fixture(scope="module")
def releases(family_releases):
    """``{family: (Released, {config: DatasetDict})}`` for every registered family."""
    return {family: (Released(family_releases[family]), release_datasets(family_releases[family]))
            for family in registry()}


@pytest.mark.parametrize("family", sorted(registry()))
def test_a_training_loop_reads_every_family_the_same_way(family, releases, family_releases):
    released, configs = releases[family]
    method = registry()[family]
    declared = (released.record.get("fields") or {}).get("label")
    body = released.body
    first = released.configs[0]
    # The card's snippet names the evaluation split of its first config, and load_dataset serves it.
    named = SNIPPET_SPLIT.findall(body)
    assert named, f"{family}: the card's 'How to load it' names no evaluation split"
    loaded = datasets.load_dataset(str(family_releases[family]), first)
    assert named[0] in loaded and loaded[named[0]].num_rows > 0
    for config, splits in configs.items():
        evaluation = method.evaluation_split(tuple(splits))
        assert evaluation is not None, f"{family}/{config} releases {list(splits)}: no split to evaluate on"
        assert set(splits) <= set(SPLITS) and "train" in splits
        if config == first:
            assert evaluation == named[0]
        if "test" not in splits:  # the card says which split such a config is evaluated on
            assert f"release no `test` split; evaluate them on `{evaluation}`" in body
        for split, rows in splits.items():
            features = rows.features
            # The label where the source has one: a ClassLabel named `label`, its names readable.
            if declared:
                assert isinstance(features.get("label"), datasets.ClassLabel), (family, config, features)
                names = features["label"].names
                assert names and all(isinstance(n, str) for n in names)
                codes = rows.data.column("label").to_numpy()
                assert codes.max() < len(names) and codes.min() >= -1
            first_row = rows[0]
            table = rows.data.table
            for name, field in zip(table.column_names, table.schema):
                value = first_row[name]
                # Lists and records come back as Python lists and dicts, never JSON text.
                if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
                    assert value is None or isinstance(value, list), (family, config, name)
                elif pa.types.is_struct(field.type):
                    assert value is None or isinstance(value, dict), (family, config, name)
                elif pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
                    sample = [v for v in table.column(name).slice(0, 50).to_pylist() if v is not None]
                    assert not any(_json_text(v) for v in sample), f"{family}/{config}: {name} holds JSON text"
    # No column twice: no two columns agree on every row of every config (``source_id``, the row identity every
    # release has, aside: a source's own row-number column, CURRICULUM's ``idx``, may equal it).
    same = None
    for splits in configs.values():
        rows = pa.concat_tables([part.data.table for part in splits.values()])
        names = [name for name in rows.column_names if name != "source_id"]
        equal = {(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                 if rows.column(a).type == rows.column(b).type and rows.column(a).equals(rows.column(b))}
        same = equal if same is None else same & equal
    assert not same, f"{family}: the same column twice: {sorted(same)}"


def test_a_config_without_a_test_split_is_declared(releases):
    """The families whose releases lack a test split in some config declare where to evaluate them."""
    lacking = {family for family, (_, configs) in releases.items()
               if any("test" not in splits for splits in configs.values())}
    for family in lacking:
        assert "validation" in registry()[family].evaluation_splits, family
