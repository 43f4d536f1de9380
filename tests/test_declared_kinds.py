"""What methods declare, read by shared code: grouped sizes that whole groups move are said on the terminal
and in the card; ``diff`` compares a categorical signal as categories; ``--group-field`` is offered only by a
method that keeps groups whole; ``SourceInfo.of`` reads a source in one call."""

import numpy as np
import pytest

from split_builders.cli import build_parser, main


def test_a_grouped_build_says_where_whole_groups_moved_the_sizes(tmp_path, capsys):
    # 12 groups of 30 rows: 20 validation and 20 test rows can only come as whole groups of 30
    source = tmp_path / "groups.csv"
    source.write_text("text,g\n" + "".join(f"row {i},{i // 30}\n" for i in range(360)))
    np.save(tmp_path / "scores.npy", np.random.default_rng(0).normal(size=360))
    assert main(["likelihood", "--source", str(source), "--query-field", "text", "--scores",
                 str(tmp_path / "scores.npy"), "--validation-size", "20", "--test-size", "20", "--group-field", "g",
                 "--out", str(tmp_path / "out"), "--no-progress", "--null-splits", "0"]) == 0
    printed = capsys.readouterr().out
    assert "ll_split: validation 30 rows for 20 requested, test 30 rows for 20 requested" in printed
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "**Sizes with whole `g` groups:** ll_split: validation 30 rows for 20 requested" in card


def test_sizes_within_a_few_percent_are_not_reported():
    from split_builders.api import ConfigSplit
    from split_builders.splitters.groups import size_gaps

    near = ConfigSplit("a", {"train": np.arange(80), "test": np.arange(80, 101)}, "m", requested={"test": 20})
    far = ConfigSplit("b", {"train": np.arange(70), "test": np.arange(70, 100)}, "m", requested={"test": 20})
    assert size_gaps([near, far, ConfigSplit("c", {"train": [0], "test": [1]}, "m")]) == [
        "b: test 30 rows for 20 requested"]


def test_diff_compares_a_categorical_signal_as_categories():
    from split_builders.publishing.diff import categorical_statistics, signal_kinds

    stats = categorical_statistics("functionality_id", np.array([0, 0, 1, 2]), np.array([2, 3, 3]))
    assert stats == {"tv_functionality_id_train_test": 0.75, "held_out_functionality_id": 1}
    recorded = {"method": "likelihood", "fields": {"task": "text", "signals": {"cluster": "categorical"}}}
    assert signal_kinds(recorded) == {"cluster": "categorical"}  # the release's record first
    assert signal_kinds({"method": "behavioural"}) == {"functionality_id": "categorical"}  # else the method's
    assert signal_kinds({"method": "no-such-method"}) == {}


def _flags(command):
    (parser,) = [a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and command in a.choices]
    return parser.choices[command].format_help()


@pytest.mark.parametrize("command, offered", [("behavioural", False), ("likelihood", True), ("tmcd", True)])
def test_group_field_is_offered_only_by_a_method_that_keeps_groups_whole(command, offered):
    assert ("--group-field" in _flags(command)) == offered


def test_source_info_of_reads_a_source_in_one_call():
    from split_builders.api import SourceInfo

    class Source:
        name, revision, filtered, source_id_note = "org/data", "abc", {"no label": 2}, "row number"
        license, citation, language, hub_id = "mit", "@misc{x}", "en", "org/data"

        def __len__(self):
            return 7

        def content_hash(self):
            return "f" * 64

    info = SourceInfo.of(Source(), filters={})
    assert info == SourceInfo(name="org/data", rows=7, content_sha256="f" * 64, revision="abc", filters={},
                              source_id="row number", license="mit", citation="@misc{x}", language=("en",),
                              hub_id="org/data")
    plain = SourceInfo.of(None, name="rows.csv", rows=3, content_sha256="0" * 64)
    assert plain.source_id == SourceInfo.source_id and plain.license is None and plain.filters == {}
