"""Evidence views are a registry with one protocol (``split_builders.evidence``): a fourth view defined here,
in the test file, appears in a build's card and YAML header and as a ``resplit`` subcommand with ``--json``,
with no other file edited; the registry refuses a second view of a name; the one resolver of fields answers
for declared and foreign rows alike."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import yaml

from split_builders.cli import main
from split_builders.evidence import View, get_view, register_view, unregister_view, views
from split_builders.evidence.fields import resolve_fields
from split_builders.evidence.view import Setting


class RowCounts(View):
    """A toy view: the rows of each evaluation split, times ``--scale``."""

    name = "row_counts"
    command = "count-rows"
    title = "Row counts"
    summary = "row counts per config and evaluation split (a toy view)"
    json_help = "configs.<config>.<split>: rows"
    settings = (Setting("scale", "--scale", 1, "multiply the counts by this (default 1)", int),)

    def compute(self, data, *, progress: bool = False, scale: int = 1) -> dict:
        configs = data.evaluated("count rows")
        return {"scale": scale, "text": list(data.fields.text),
                "configs": {c: {s: {"rows": scale * len(part)} for s, part in splits.items() if s != "train"}
                            for c, splits in configs.items()}}

    def record(self, report: dict) -> tuple[dict, dict]:
        return {"scale": report["scale"]}, report["configs"]

    def card_lines(self, report: dict) -> list[str]:
        return ["## Row counts", "", *(f"- `{c}` {s}: {e['rows']} rows" for c, splits in report["configs"].items()
                                        for s, e in splits.items()), ""]

    def table_columns(self, report: dict) -> dict:
        return {"toy rows": {c: sum(e["rows"] for e in splits.values()) for c, splits in report["configs"].items()}}

    def format_report(self, report: dict) -> list[str]:
        return [f"{c} {s} {e['rows']}" for c, splits in report["configs"].items() for s, e in splits.items()]


@pytest.fixture
def toy_view():
    view = register_view(RowCounts())
    try:
        yield view
    finally:
        unregister_view(view.name)


def _source(folder):
    rng = np.random.default_rng(0)
    rows = [{"premise": f"a person number {i} walks", "hypothesis": f"someone {'sleeps' if i % 3 else 'walks'} {i}",
             "label": ["entailment", "neutral", "contradiction"][i % 3]} for i in range(300)]
    pd.DataFrame(rows).to_json(folder / "nli.jsonl", orient="records", lines=True)
    np.save(folder / "scores.npy", rng.normal(size=len(rows)))
    return folder / "nli.jsonl", folder / "scores.npy"


def test_a_fourth_view_is_in_the_card_the_yaml_the_cli_and_json(toy_view, tmp_path, capsys):
    source, scores = _source(tmp_path)
    out = tmp_path / "release"
    assert main(["likelihood", "--source", str(source), "--scores", str(scores), "--prompt-field", "premise",
                 "--query-field", "hypothesis", "--label-field", "label", "--template", "fields", "--validation-size", "30",
                 "--test-size", "30", "--null-splits", "0", "--out", str(out), "--no-progress"]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(readme.split("---\n")[1])["resplit"]
    assert header["row_counts"] == {"scale": 1} and "diagnostics" not in header  # --null-splits 0: not run
    assert header["configs"]["random"]["row_counts"] == {"validation": {"rows": 30}, "test": {"rows": 30}}
    assert "## Row counts" in readme and "- `random` test: 30 rows" in readme and "| toy rows |" in readme
    assert readme.index("## Leakage audit") < readme.index("## Row counts")  # the registry's order
    capsys.readouterr()
    assert main(["count-rows", str(out), "--scale", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["target"] == str(out) and report["configs"]["random"]["test"] == {"rows": 60}
    assert report["text"] == ["premise", "hypothesis"]  # the declared fields, resolved once
    assert main(["count-rows", str(out)]) == 0
    assert "random test 30" in capsys.readouterr().out


def test_the_registry_refuses_a_second_view_of_a_name(toy_view):
    with pytest.raises(ValueError, match="registered already"):
        register_view(RowCounts())
    with pytest.raises(TypeError):
        register_view(object())
    assert list(views())[:3] == ["audit", "diagnostics", "probe"] and get_view("row_counts") is toy_view


def test_an_unregistered_view_is_gone(tmp_path, capsys):
    assert "row_counts" not in views()
    with pytest.raises(SystemExit):
        main(["count-rows", str(tmp_path)])


def test_one_resolver_for_declared_and_foreign_rows():
    table = pa.table({"source_id": [0, 1, 2, 3], "question": ["how many rivers", "what states", "how big", "which"],
                      "query": ["SELECT count(*) FROM river", "SELECT name FROM state", "SELECT area FROM state",
                                "SELECT 1"], "cluster": [3, 1, 3, 2]})
    foreign = resolve_fields(table)
    assert foreign.task == "semantic_parsing" and foreign.target == "query" and foreign.text == ("question",)
    assert foreign.query == "question" and foreign.program_language == "sql"
    record = {"fields": {"task": "classification", "text": ["question"], "query": "question", "label": "gold",
                         "signals": {"cluster": "categorical"}, "baseline": "shuffled"}}
    declared = resolve_fields(table, record)
    assert declared.signals == {"cluster": "categorical"} and declared.baseline == "shuffled"
    assert declared.label is None and declared.target is None  # what is declared but absent is not read
