"""Tables are read strictly: no silent merging of lines, padding of short records or decoding
guesses; every refusal is one line that names the file, the line and what is wrong."""

import gzip

import pytest

from loading_scripts.files import read_table
from split_builders.errors import SourceLoadError


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def test_a_stray_quote_in_a_tsv_is_text_and_merges_nothing(tmp_path):
    lines = ["premise\thypothesis\tlabel"] + [f'p{i} "open quote\th{i}\t{i % 3}' for i in range(50)]
    rows = read_table(write(tmp_path, "a.tsv", "\n".join(lines) + "\n"))
    assert len(rows) == 50  # one record per data line
    assert rows[7]["premise"] == 'p7 "open quote' and rows[7]["hypothesis"] == "h7"


@pytest.mark.parametrize("name, data, expected", [
    ("missing_tab.tsv", "p\th\tl\na\tb\tc\nd\te\n", "line 3 has 2 tab-separated field(s), the header has 3"),
    ("extra_tab.tsv", "p\th\na\tb\tc\n", "line 2 has 3 tab-separated field(s), the header has 2"),
    ("short.csv", "a,b\n1,2\n3\n", "record ending on line 3 has 1 field(s), the header has 2"),
    ("ragged.csv", "a,b\n1,2,3\n", "record ending on line 2 has 3 field(s), the header has 2"),
    ("empty.csv", "", "is empty"),
    ("header_only.csv", "a,b\n", "holds a header but no rows"),
    ("latin1.csv", b"a,b\n1,2\n3,caf\xe9\n", "line 3 is not UTF-8 (byte 0xe9"),
    ("latin1.jsonl", b'{"a": "ok"}\n{"a": "caf\xe9"}\n', "line 2 is not UTF-8"),
    ("latin1.tsv", b"a\tb\nx\t\xff\n", "line 2 is not UTF-8 (byte 0xff"),
    ("broken.parquet", b"PAR1 not really", "not a readable Parquet file"),
])
def test_bad_tables_are_refused_naming_the_line(tmp_path, name, data, expected):
    with pytest.raises(SourceLoadError, match=None) as error:
        read_table(write(tmp_path, name, data))
    assert expected in str(error.value) and name in str(error.value)


def test_gzipped_and_bom_prefixed_text_reads(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress("\ufeffa,b\nx,y\n".encode("utf-8")))
    rows = read_table(path)
    assert rows.column_names == ["a", "b"] and rows[0] == {"a": "x", "b": "y"}


def test_a_quoted_csv_keeps_commas_and_newlines_inside_quotes(tmp_path):
    rows = read_table(write(tmp_path, "q.csv", 'a,b\n"x, y","line one\nline two"\nz,w\n'))
    assert len(rows) == 2 and rows[0]["a"] == "x, y" and rows[0]["b"] == "line one\nline two"
