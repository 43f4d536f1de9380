"""One policy for ``--group-field`` in every family that keeps groups whole (``supports_groups`` in the registry):

* a field with no value in any row (all null, NaN or empty) is refused in one line, nothing written;
* a row with no value is a group of its own: the terminal and the card say how many, the configs record it
  (``missing_group_values``), and the card's audit never counts a missing value as shared, so the card's "no
  group straddles train, validation and test" is what its own audit shows;
* the group column keeps its type in the released rows (a number stays a number, not ``'12.0'``);
* a field too coarse for the requested sizes (three values) is said on the terminal and in the card: sizes far
  from the requested ones, and configs that hold the same evaluation rows.

Every case runs for every grouping family of the registry; :data:`SOURCES` says how each family's source gets
a group column, and a test fails when a grouping family has none (a new one must be added here).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from split_builders.api import ConfigSplit, registry
from split_builders.cli import main
from split_builders.errors import InvalidParameterError
from split_builders.release.folder import front_matter

_READ_COMPOSITIONAL = __import__("loading_scripts").load_compositional  # as it is before a test wraps it
GROUPING = sorted(name for name, method in registry().items() if method.supports_groups)
ROWS = 300  # rows of every family's toy source (tmcd: 200)


def _nli_rows(shared: Path, n: int) -> list[dict]:
    import pandas as pd

    frame = pd.read_csv(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples.csv").head(n)
    return frame.to_dict("records")


def _likelihood(shared, tmp, values) -> list:
    rows = _nli_rows(shared, len(values))
    source = tmp / "nli.jsonl"
    source.write_text("".join(json.dumps({**row, "grp": value}) + "\n" for row, value in zip(rows, values)))
    scores = np.load(shared / "reference" / "likelihood" / "inputs" / "snli" / "all_examples__False_loglikelihoods.npy")
    np.save(tmp / "scores.npy", scores[:len(values)])
    return ["likelihood", "--source", str(source), "--prompt-field", "premise", "--query-field", "hypothesis",
            "--label-field", "gold_label", "--scores", str(tmp / "scores.npy"), "--dev-size", "30", "--test-size",
            "30", "--group-field", "grp"]


def _pvi(shared, tmp, values) -> list:
    rows = _nli_rows(shared, len(values))
    source = tmp / "nli.jsonl"
    source.write_text("".join(json.dumps({**row, "grp": value}) + "\n" for row, value in zip(rows, values)))
    return ["pvi", "--source", str(source), "--text-fields", "premise,hypothesis", "--label-field", "gold_label",
            "--folds", "2", "--cache-dir", str(tmp / "pvi-cache"), "--group-field", "grp"]


def _curriculum(shared, tmp, values) -> list:
    """One phenomenon (verbnet's rows) whose premise is the group value (empty where there is none)."""
    with zipfile.ZipFile(shared / "data" / "curriculum" / "tasks" / "verbnet.zip") as archive:
        rows = [json.loads(line) for part in ("train", "val")
                for line in archive.read(f"verbnet/{part}.jsonl").decode().splitlines()[:len(values) // 2]]
    folder = tmp / "curriculum"
    folder.mkdir()
    premises = ["" if v is None or v != v else f"premise {v}" for v in values]  # None, NaN: no premise
    with zipfile.ZipFile(folder / "toy.zip", "w") as archive:
        half = len(values) // 2
        for part, chunk in (("train", slice(0, half)), ("val", slice(half, 2 * half))):
            archive.writestr(f"toy/{part}.jsonl", "".join(
                json.dumps({**row, "premise": premise}) + "\n" for row, premise in zip(rows[chunk], premises[chunk])))
    return ["curriculum", "--source", str(folder), "--phenomena", "toy", "--pvi", "--folds", "2",
            "--no-hypothesis-only", "--no-inoculation", "--cache-dir", str(tmp / "pvi-cache"), "--group-field",
            "premise"]


def _tmcd(shared, tmp, values, monkeypatch) -> list:
    """GeoQuery's first rows in NQG format, with a ``grp`` column added as the source is read (an NQG file has
    no room for one; Spider's ``db_id`` is such a column)."""
    import loading_scripts

    source = tmp / "geo.tsv"
    lines = (shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_text().splitlines()[:len(values)]
    source.write_text("\n".join(lines) + "\n")
    def with_groups(path):
        found = _READ_COMPOSITIONAL(path)
        return dataclasses.replace(found, rows=found.rows.add_column("grp", list(values)[:len(found)]))

    monkeypatch.setattr(loading_scripts, "load_compositional", with_groups)
    # the TMCD search itself under three groups refuses in one line (the atom constraint cannot be met)
    return ["tmcd", "--source", str(source), "--train-size", "100", "--configs", "length,standard", "--group-field",
            "grp"]


SOURCES = {"likelihood": _likelihood, "pvi": _pvi, "curriculum": _curriculum, "tmcd": _tmcd}
GROUP = {"curriculum": "premise"}  # the group field of each family's toy source (default: grp)


def _arguments(family, shared, tmp, values, monkeypatch) -> list:
    tmp.mkdir(parents=True, exist_ok=True)
    maker = SOURCES[family]
    n = 200 if family == "tmcd" else len(values)
    values = list(values)[:n]
    return maker(shared, tmp, values, monkeypatch) if family == "tmcd" else maker(shared, tmp, values)


def _run(args, out, capsys):
    code = main([*args, "--out", str(out), "--no-progress", "--null-splits", "0"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_grouping_family_has_a_source_with_a_group_column():
    assert GROUPING, "no registered method keeps groups whole"
    assert set(GROUPING) == set(SOURCES), f"give {sorted(set(GROUPING) - set(SOURCES))} a source here"


@pytest.mark.parametrize("family", GROUPING)
@pytest.mark.parametrize("missing", [None, float("nan")], ids=["null", "nan"])
def test_a_group_field_without_any_value_is_refused(family, missing, shared, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    code, _, err = _run(_arguments(family, shared, tmp_path, [missing] * ROWS, monkeypatch), out, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "has no value in any of the" in err and GROUP.get(family, "grp") in err, err
    assert not out.exists()


def _released_column(out: Path, field: str):
    files = sorted(out.glob("*/train-*.parquet"))
    assert files, f"no data files in {out}"
    return pq.read_table(files[0]).column(field)


@pytest.mark.parametrize("family", GROUPING)
def test_rows_without_a_group_value_are_singletons_said_everywhere_and_never_shared(family, shared, tmp_path, capsys,
                                                                                    monkeypatch):
    values = [None if i % 7 == 0 else i // 3 for i in range(ROWS)]
    n = 200 if family == "tmcd" else ROWS
    n_missing = sum(v is None for v in values[:n])
    field = GROUP.get(family, "grp")
    out = tmp_path / "out"
    code, printed, err = _run(_arguments(family, shared, tmp_path, values, monkeypatch), out, capsys)
    assert code == 0, err
    assert f"{n_missing} row(s) have no `{field}` value" in printed, printed
    metadata, body = front_matter(out / "README.md")
    grouped = {c: e for c, e in metadata["resplit"]["configs"].items()
               if (e.get("parameters") or {}).get("grouped_by") == field}
    assert grouped and all(e["parameters"]["missing_group_values"] == n_missing for e in grouped.values())
    assert f"{n_missing} row(s) have no value (null or empty): each is a group of its own" in body
    # the card's own audit agrees with "no group straddles": no evaluation row shares a group with train
    for config in grouped:
        for split, entry in metadata["resplit"]["configs"][config]["audit"].items():
            assert entry["shared"][field] == 0, (config, split, entry["shared"])
    column = _released_column(out, field)
    if family == "curriculum":  # the premise is text
        assert str(column.type) == "string"
    else:  # numbers stay numbers (no '12.0')
        assert str(column.type) == "int64", column.type
        assert column.null_count > 0


@pytest.mark.parametrize("family", GROUPING)
def test_a_field_too_coarse_for_the_sizes_is_said_on_the_terminal_and_in_the_card(family, shared, tmp_path, capsys,
                                                                                   monkeypatch):
    field = GROUP.get(family, "grp")
    built = False
    for n_values in (3, 6):  # three groups: a part of one group is refused; six: sizes far from the requested
        out = tmp_path / f"out{n_values}"
        values = [i % n_values for i in range(ROWS)]
        code, printed, err = _run(_arguments(family, shared, tmp_path / str(n_values), values, monkeypatch), out,
                                  capsys)
        if code != 0:  # refused: in one line, nothing written
            lines = [line for line in err.splitlines() if line.strip()]
            assert code == 2 and len(lines) == 1 and "Traceback" not in err and not out.exists(), err
            continue
        notes = [line for line in printed.splitlines() if line.startswith(f"note: whole `{field}` groups:")]
        assert any("requested" in line for line in notes), printed
        body = front_matter(out / "README.md")[1]
        for line in notes:
            assert line.split("groups: ", 1)[1] in body, line
        for info in front_matter(out / "README.md")[0]["dataset_info"]:  # no config without train rows
            train = [s["num_examples"] for s in info["splits"] if s["name"] == "train"]
            assert train and train[0] > 0, info["config_name"]
        for names in _same_evaluation_rows(out):  # configs that test the same thing are said to
            assert any(all(f"`{n}`" in line for n in names) and "hold the same" in line for line in notes), (names,
                                                                                                          notes)
        built = True
        break
    assert built, "neither coarse field built a release to say its sizes in"


def _same_evaluation_rows(out: Path) -> list:
    """Names of the configs (two or more) of a release whose validation and test splits hold the same
    ``source_id``s, read from the data files."""
    held = {}
    for config in sorted(p for p in out.iterdir() if p.is_dir() and any(p.glob("train-*.parquet"))):
        parts = tuple(tuple(sorted(pq.read_table(f, columns=["source_id"]).column(0).to_pylist()))
                      for split in ("validation", "test") for f in sorted(config.glob(f"{split}-*.parquet")))
        held.setdefault(parts, []).append(config.name)
    return [names for names in held.values() if len(names) > 1]


def _config(name, validation, test, rows=None):
    return ConfigSplit(name, {"train": np.arange(10, 20), "validation": np.asarray(validation),
                              "test": np.asarray(test)}, method="x", parameters={"grouped_by": "g"}, rows=rows)


def test_configs_holding_the_same_evaluation_rows_are_said():
    from split_builders.splitters.groups import identical_configs, size_gaps

    configs = [_config("a", [1, 2], [3, 4]), _config("b", [2, 1], [4, 3]), _config("c", [1, 2], [3, 5]),
               _config("d", [1, 2], [3, 4], rows=object())]
    assert identical_configs(configs) == [["a", "b"]]
    assert "`a` and `b` hold the same validation and test rows: they test the same thing" in size_gaps(configs)


def test_the_policy_itself():
    from split_builders.splitters.groups import column_groups, fold_groups, group_codes, group_parameters

    import datasets

    codes = group_codes(["x", None, "", float("nan"), "x", " "])
    assert codes[0] == codes[4] and len(set(codes.tolist())) == 5  # each missing value its own group
    folds = fold_groups(["x", None, "", "x"])
    assert folds[0] == folds[3] and len({folds[1], folds[2], folds[0]}) == 3
    assert fold_groups(["a", "b"]) == ["a", "b"]  # nothing missing: the values themselves (folds unchanged)
    table = datasets.Dataset.from_dict({"g": [1, None, 2], "label": ["a", "b", "a"]})
    found = column_groups(table, "g")
    assert group_parameters(found, "g") == {"grouped_by": "g", "missing_group_values": 1}
    assert group_parameters(found[:2], "g") == {"grouped_by": "g"}  # a slice is plain numbers
    with pytest.raises(InvalidParameterError, match="is the label field"):
        column_groups(table, "label", label_field="label")
