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


# -- a UTF-8 byte-order mark is read transparently by every source reader ------------------------

BOM = b"\xef\xbb\xbf"
TABLES = {
    "t.csv": "premise,label\nx,a\ny,b\n",
    "t.tsv": "premise\tlabel\nx\ta\ny\tb\n",
    "t.jsonl": '{"premise": "x", "label": "a"}\n{"premise": "y", "label": "b"}\n',
    "t.json": '[{"premise": "x", "label": "a"}, {"premise": "y", "label": "b"}]',
}


@pytest.mark.parametrize("name", sorted(TABLES))
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_byte_order_mark_is_not_part_of_the_first_column(tmp_path, name, gzipped):
    plain = read_table(write(tmp_path, name, TABLES[name]))
    data = BOM + TABLES[name].encode()
    path = write(tmp_path, f"bom-{name}" + (".gz" if gzipped else ""), gzip.compress(data) if gzipped else data)
    rows = read_table(path)
    assert rows.column_names == ["premise", "label"] == plain.column_names
    assert rows.to_list() == plain.to_list()


def test_the_other_source_readers_drop_a_byte_order_mark(tmp_path, shared):
    """NQG-format TSV (tmcd, likelihood), a published split's ids, a CheckList suite and a CURRICULUM
    tasks.json, each with a BOM, read as without one."""
    import json

    from loading_scripts import load_compositional, nqg
    from loading_scripts.checklist import read_checklist_suite
    from loading_scripts.compositional import read_id_split
    from loading_scripts.curriculum import read_tasks_json

    lines = (shared / "data" / "geoquery" / "geoquery_nqg.tsv").read_bytes().splitlines(keepends=True)[:20]
    geo = write(tmp_path, "geo.tsv", BOM + b"".join(lines))
    assert nqg.read_pairs(geo)[0] == tuple(lines[0].decode().rstrip("\n").split("\t"))
    assert nqg.looks_headerless(geo)
    assert load_compositional(str(geo)).inputs[0] == lines[0].decode().split("\t")[0]
    split = write(tmp_path, "split.json", BOM + json.dumps({"train": [0, 1], "test": [2]}).encode())
    assert read_id_split(split, 3, {"train": "train", "test": "test"})["test"].tolist() == [2]
    suite = json.loads(gzip.decompress((shared / "data" / "checklist" / "sentiment_suite.json.gz").read_bytes()))
    suite_path = write(tmp_path, "suite.json", BOM + json.dumps(suite).encode())
    assert read_checklist_suite(suite_path).name == read_checklist_suite(
        shared / "data" / "checklist" / "sentiment_suite.json.gz").name
    (tmp_path / "cur").mkdir()
    write(tmp_path, "cur/tasks.json", BOM + b'{"boolean": {"label_set": ["entailed", "not-entailed"]}}')
    assert read_tasks_json(tmp_path / "cur") == {"boolean": {"label_set": ["entailed", "not-entailed"]}}


# -- a file is a table of records, each column named once --------------------------------------

@pytest.mark.parametrize("name, data, expected", [
    ("dup.csv", "a,b,a\n1,2,3\n", "the header names the column 'a' twice (columns 1 and 3)"),
    ("dup.tsv", "a\tb\tb\n1\t2\t3\n", "the header names the column 'b' twice (columns 2 and 3)"),
    ("dup.jsonl", '{"a": 1, "b": 2}\n{"a": 1, "a": 2}\n', "the record on line 2 names the field 'a' twice"),
    ("lists.json", "[[1, 2], [3, 4]]", "is a list of lists, not a table of records: element 1 is a list"),
    ("mixed.json", '[{"a": 1}, 7]', "element 2 is a number"),
    ("number.json", "7", "is a number, not a table"),
    ("object.json", '{"data": [{"a": 1}]}', "is an object, not a table"),
    ("line.jsonl", '{"a": 1}\n[1, 2]\n', "line 2 is a list, not a JSON object"),
    ("scalar.jsonl", '{"a": 1}\n"text"\n', "line 2 is a string, not a JSON object"),
    ("shapes.jsonl", '{"a": [1]}\n{"a": "x"}\n', "field 'a' holds list and text values"),
])
def test_a_file_that_is_not_a_table_of_records_is_refused_naming_its_shape(tmp_path, name, data, expected):
    with pytest.raises(SourceLoadError) as error:
        read_table(write(tmp_path, name, data))
    assert expected in str(error.value) and name in str(error.value)


def test_a_parquet_file_repeating_a_column_name_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array(["x"])], names=["a", "a"]), tmp_path / "d.parquet")
    with pytest.raises(SourceLoadError, match="names the column 'a' twice"):
        read_table(tmp_path / "d.parquet")


def test_values_of_mixed_scalar_types_are_read_as_text_with_a_note(tmp_path):
    from loading_scripts.errors import SourceNote

    path = write(tmp_path, "m.jsonl", '{"label": 1, "n": 1}\n{"label": "1", "n": 2.5}\n{"label": true, "n": null}\n')
    with pytest.warns(SourceNote, match="field 'label' of m.jsonl mixes boolean and integer and text values"):
        rows = read_table(path)
    assert rows["label"] == ["1", "1", "true"]  # JSON's spelling of each value
    assert rows["n"] == [1.0, 2.5, None]  # integers and floats are one kind: numbers


def test_records_with_different_fields_keep_every_field(tmp_path):
    rows = read_table(write(tmp_path, "f.jsonl", '{"a": 1}\n{"a": 2, "b": "x"}\n'))
    assert rows.column_names == ["a", "b"] and rows["b"] == [None, "x"]


# -- one policy for row-level defects (loading_scripts.source) ----------------------------------

def _source(tmp_path, name, text, **fields):
    from loading_scripts import load_source

    return load_source(str(write(tmp_path, name, text)), **{"query_field": "q", **fields})


@pytest.mark.parametrize("name, text", [
    ("null.jsonl", '{"q": "a", "y": "x"}\n{"q": "b", "y": null}\n{"q": "c", "y": "z"}\n{"q": "d", "y": "  "}\n'),
    ("empty.csv", "q,y\na,x\nb,\nc,z\nd,  \n"),
    ("nan.jsonl", '{"q": "a", "y": 1.0}\n{"q": "b", "y": NaN}\n{"q": "c", "y": 2.0}\n{"q": "d", "y": null}\n'),
])
def test_rows_without_a_label_are_dropped_and_counted_never_a_class(tmp_path, name, text):
    from loading_scripts.source import MISSING_LABEL

    source = _source(tmp_path, name, text, label_field="y")
    assert source.texts("q") == ["a", "c"] and source.source_ids.tolist() == [0, 2]
    assert source.filtered == {MISSING_LABEL: 2} and source.dropped_ids[MISSING_LABEL].tolist() == [1, 3]
    assert None not in source.labels() and len(set(source.labels())) == 2
    assert source.head(1).filtered == {}  # --limit 1: no dropped row comes before the one kept


def test_a_class_label_minus_one_is_a_missing_label(tmp_path):
    import datasets

    from loading_scripts.source import Source

    data = datasets.Dataset.from_dict({"source_id": [0, 1, 2], "q": ["a", "b", "c"], "y": [0, -1, 1]},
                                      features=datasets.Features({"source_id": datasets.Value("int64"),
                                                                  "q": datasets.Value("string"),
                                                                  "y": datasets.ClassLabel(names=["n", "p"])}))
    source = Source(data, name="t", prompt_field=None, query_field="q", label_field="y")
    assert source.labels() == ["n", "p"] and source.filtered == {"no label": 1}


@pytest.mark.parametrize("text, fields, expected", [
    ('{"q": [1], "y": "a"}\n', {"label_field": "y"}, "query field 'q' of"),
    ('{"q": 3, "y": "a"}\n', {"label_field": "y"}, "query field 'q' of"),
    ('{"q": "a", "p": 2.5, "y": "a"}\n', {"prompt_field": "p", "label_field": "y"}, "prompt field 'p' of"),
    ('{"q": "a", "y": ["a"]}\n', {"label_field": "y"}, "label field 'y' of"),
    ('{"q": "a", "y": {"k": 1}}\n', {"label_field": "y"}, "label field 'y' of"),
])
def test_a_field_of_the_wrong_kind_is_refused_naming_it(tmp_path, text, fields, expected):
    from split_builders.errors import InvalidParameterError

    with pytest.raises(InvalidParameterError) as error:
        _source(tmp_path, "k.jsonl", text * 3, **fields)
    assert expected in str(error.value)
    assert ("not text" in str(error.value)) != ("one value per row" in str(error.value))


def test_rows_with_their_own_source_id_are_put_in_source_id_order(tmp_path):
    source = _source(tmp_path, "own.csv", "q,source_id\nc,30\na,10\nb,20\n")
    assert source.source_ids.tolist() == [10, 20, 30] and source.texts("q") == ["a", "b", "c"]


@pytest.mark.parametrize("text, is_path", [
    ("org/name", False), ("stanfordnlp/snli", False), ("org/name.v2", False), ("snli", False),
    ("data/nope.csv", True), ("./x", True), ("~/x", True), ("/abs/x", True), ("a/b/c", True), ("x.jsonl", True),
    ("x.json.gz", True), ("C:\\data\\x", True),
])
def test_what_looks_like_a_path(text, is_path):
    from loading_scripts.files import looks_like_path

    assert looks_like_path(text) is is_path


def test_a_target_language_that_does_not_match_the_programs_names_what_they_look_like(shared):
    import json

    from loading_scripts import load_compositional, nqg
    from loading_scripts.compositional import check_target_language
    from split_builders.errors import InvalidParameterError

    data = shared / "data"
    lines = lambda path: gzip.decompress(path.read_bytes()).decode().splitlines()[:60]  # noqa: E731
    programs = {  # the first programs of each real dataset, as its reader reads them
        "funql": [t for _, t in nqg.read_pairs(data / "geoquery" / "geoquery_nqg.tsv")[:60]],
        "sql": [e["query"] for e in json.loads(gzip.decompress((data / "spider" / "dev.json.gz").read_bytes()))[:60]],
        "scan": [line.split(" OUT: ")[1] for line in lines(data / "scan" / "tasks.txt.gz")],
        "cogs": [line.split("\t")[1] for line in lines(data / "cogs" / "train.tsv.gz")]}
    sources = {"funql": "geoquery", "sql": "spider", "scan": "scan", "cogs": "cogs"}
    looks = {"funql": "FunQL", "sql": "SQL", "scan": "SCAN", "cogs": "COGS"}
    assert load_compositional(str(data / "geoquery")).targets[:60] == programs["funql"]
    for language, folder in sources.items():
        targets = programs[language]
        check_target_language(language, targets, source=folder)  # its own language passes
        check_target_language(None, targets, source=folder)
        for other in set(sources) - {language}:
            with pytest.raises(InvalidParameterError) as error:
                check_target_language(other, targets, source=folder)
            assert f"--target-language {other} does not match the programs of {folder}" in str(error.value)
            assert f"they look like {looks[language]}" in str(error.value)
            assert f"give --target-language {language}" in str(error.value)
