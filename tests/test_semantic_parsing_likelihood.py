"""Semantic-parsing Likelihood Splits: NQG TSV sources, SQL / FunQL atoms, the atom constraint.

The Spider fixtures of ``../shared/reference/likelihood`` are the reference generator's output
(``spider/ll_split`` and ``spider/rare_ll_split``, train size 450 of 600, seed 42).
"""

import json
import random

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loading_scripts import load_source, nqg
from split_builders.splitters.atom_constraint import balance_atoms, missing_atoms
from split_builders.signals.programs.atoms import atoms_by_row, funql_atoms, parse_funql, sql_atoms, sql_tokens
from split_builders.cli import main
from split_builders.errors import AtomConstraintError, SourceLoadError, UnparseableProgramError
from split_builders.splitters.likelihood import LikelihoodSplitter


def _fixture(reference, variant):
    return {split: set(json.loads((reference / "spider" / variant / f"{split}_idx.json").read_text()))
            for split in ("train", "dev", "test")}


def _naive_balance(train, evaluation, atoms, max_iterations=10_000):
    """Shaw et al.'s loop written the slow, obvious way: recount everything each iteration."""
    train, evaluation = list(train), list(evaluation)
    for swaps in range(max_iterations):
        train_atoms = set().union(*(atoms[r] for r in train))
        missing = set().union(*(atoms[r] for r in evaluation)) - train_atoms
        if not missing:
            return train, evaluation, swaps
        counts = {}
        for r in train:
            for a in atoms[r]:
                counts[a] = counts.get(a, 0) + 1
        single = {a for a, c in counts.items() if c <= 1}
        out = [i for i, r in enumerate(train) if not (atoms[r] & single)]
        into = [i for i, r in enumerate(evaluation) if atoms[r] & missing]
        if not out:
            raise AtomConstraintError("no candidate")
        moved_out, moved_in = train[out[0]], evaluation[into[0]]
        del train[out[0]]
        del evaluation[into[0]]
        train.append(moved_in)
        evaluation.append(moved_out)
    raise AtomConstraintError("too many iterations")


@pytest.mark.parametrize("inputs, variant", [("spider", "ll_split"), ("spider_rare", "rare_ll_split")])
def test_splitter_reproduces_the_spider_fixtures(likelihood_reference, inputs, variant):
    folder = likelihood_reference / "inputs" / inputs
    pairs = nqg.read_pairs(folder / "all_examples.tsv")
    scores = np.load(folder / "all_examples_loglikelihoods.npy")
    atoms = atoms_by_row([target for _, target in pairs], "sql")
    assert not atoms.unparseable
    splitter = LikelihoodSplitter(train_size=450, random_state=42)
    train, dev, test = splitter.split(scores, atoms=atoms.atoms)
    expected = _fixture(likelihood_reference, variant)
    assert (set(train), set(dev), set(test)) == (expected["train"], expected["dev"], expected["test"])
    assert not missing_atoms(train, np.concatenate([dev, test]), atoms.atoms)
    if variant == "rare_ll_split":
        assert splitter.atom_swaps_ == 81  # the inputs were built so the constraint must work hard
    # Without the constraint the split differs: the fixture really tests the swaps.
    plain_train, _, _ = LikelihoodSplitter(train_size=450, random_state=42).split(scores)
    assert set(plain_train) != expected["train"]


def test_contract_command_reproduces_the_rare_fixture(likelihood_reference, tmp_path, hf_cache, capsys):
    folder = likelihood_reference / "inputs" / "spider_rare"
    out = tmp_path / "release"
    args = ["likelihood", "--source", str(folder / "all_examples.tsv"), "--query-field", "input",
            "--target-field", "target", "--atoms", "sql", "--train-size", "450",
            "--scores", str(folder / "all_examples_loglikelihoods.npy"), "--seed", "42", "--out", str(out),
            "--length-buckets", "4", "--no-progress",
            "--row-order", "position"]  # the reference's ties follow the file's order (pandas' stable sort)
    assert main(args) == 0
    assert "ll_split_len" in capsys.readouterr().out
    expected = _fixture(likelihood_reference, "rare_ll_split")
    loaded = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    for split, name in (("train", "train"), ("validation", "dev"), ("test", "test")):
        assert set(loaded[split]["source_id"]) == expected[name]
    first_line = (folder / "all_examples.tsv").read_text().split("\n")[0].split("\t")
    rows = [r for split in loaded.values() for r in split if r["source_id"] == 0]
    assert [[r["input"], r["target"]] for r in rows] == [first_line]
    card = (out / "README.md").read_text()
    assert "Atom constraint (sql atoms of `target`)" in card and "`ll_split` 81" in card
    for config in ("ll_split_len", "ll_split_reverse"):
        split = datasets.load_dataset(str(out), config, cache_dir=hf_cache)
        evaluation = list(split["validation"]["target"]) + list(split["test"]["target"])
        train_atoms = set().union(*(sql_atoms(t) for t in split["train"]["target"]))
        assert set().union(*(sql_atoms(t) for t in evaluation)) <= train_atoms


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.integers(0, 12), min_size=1, max_size=4), min_size=6, max_size=40),
       st.integers(0, 2**32 - 1))
def test_balance_atoms_makes_the_same_choices_as_the_naive_loop(row_atoms, seed):
    rows = list(range(len(row_atoms)))
    random.Random(seed).shuffle(rows)
    cut = max(1, len(rows) // 2)
    atoms = [frozenset(a) for a in row_atoms]
    try:
        expected = _naive_balance(rows[:cut], rows[cut:], atoms, max_iterations=200)
    except AtomConstraintError:
        with pytest.raises(AtomConstraintError):
            balance_atoms(rows[:cut], rows[cut:], atoms, max_iterations=200)
        return
    assert balance_atoms(rows[:cut], rows[cut:], atoms, max_iterations=200) == expected


def test_an_atom_constraint_that_cannot_be_met_names_the_atoms():
    atoms = [frozenset({"a"}), frozenset({"b"}), frozenset({"c"}), frozenset({"zeta"})]
    with pytest.raises(AtomConstraintError, match="'zeta'"):
        balance_atoms([0, 1, 2], [3], atoms)


def test_geoquery_funql_split_meets_the_atom_constraint(shared, tmp_path, hf_cache):
    """Real GeoQuery with seeded scores: every validation/test FunQL atom occurs in train."""
    source = shared / "data" / "geoquery" / "geoquery_nqg.tsv"
    scores = np.random.default_rng(0).normal(size=880)
    np.save(tmp_path / "scores.npy", scores)
    out = tmp_path / "release"
    assert main(["likelihood", "--source", str(source), "--atoms", "funql", "--train-size", "440",
                 "--scores", str(tmp_path / "scores.npy"), "--out", str(out), "--no-progress"]) == 0
    split = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    assert (len(split["train"]), len(split["validation"]), len(split["test"])) == (440, 220, 220)
    train_atoms = set().union(*(funql_atoms(t) for t in split["train"]["target"]))
    evaluation = list(split["validation"]["target"]) + list(split["test"]["target"])
    assert set().union(*(funql_atoms(t) for t in evaluation)) <= train_atoms
    # The unconstrained split of the same scores leaves atoms unseen: the constraint did work.
    train, dev, test = LikelihoodSplitter(train_size=440, random_state=42).split(scores)
    targets = [t for _, t in nqg.read_pairs(source)]
    atoms = [funql_atoms(t) for t in targets]
    assert missing_atoms(train, np.concatenate([dev, test]), atoms)


def test_unparseable_programs_are_excluded_and_listed_by_id(tmp_path, hf_cache, capsys):
    lines = [f"what is river {i}\tanswer ( river ( m{i % 3} ) )" for i in range(30)]
    lines[4] = "a broken one\tanswer ( river ( m0 )"
    lines[17] = "another\tanswer ( , )"
    (tmp_path / "geo.tsv").write_text("\n".join(lines) + "\n")
    np.save(tmp_path / "scores.npy", np.linspace(-1, -30, 30))
    out = tmp_path / "release"
    assert main(["likelihood", "--source", str(tmp_path / "geo.tsv"), "--atoms", "funql", "--train-size", "20",
                 "--scores", str(tmp_path / "scores.npy"), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "excluded 2 row(s)" in printed and "source_id 4, 17" in printed
    card = (out / "README.md").read_text()
    assert "Excluded: 2 row(s)" in card and "source_id 4:" in card and "source_id 17:" in card
    split = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    ids = set(split["train"]["source_id"]) | set(split["validation"]["source_id"]) | set(split["test"]["source_id"])
    assert ids == set(range(30)) - {4, 17}
    assert len(split["train"]) == 20


@pytest.mark.parametrize("args, message", [
    (["--atoms", "funql"], "give --train-size too"),
    (["--atoms", "funql", "--train-size", "30"], "train_size (30) must leave at least 2"),
    (["--atoms", "sql", "--train-size", "10", "--target-field", "nope"], "target field 'nope' not found"),
])
def test_bad_semantic_parsing_input_exits_2(tmp_path, capsys, args, message):
    (tmp_path / "geo.tsv").write_text("".join(f"q {i}\tanswer ( m{i} )\n" for i in range(30)))
    np.save(tmp_path / "scores.npy", np.arange(30.0))
    code = main(["likelihood", "--source", str(tmp_path / "geo.tsv"), "--scores", str(tmp_path / "scores.npy"),
                 "--out", str(tmp_path / "out"), "--no-progress", *args])
    assert code == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_sql_atoms_follow_the_nqg_tokenisation():
    sql = 'SELECT count(*) FROM singer WHERE name = "Joe Sharp";'
    assert sql_tokens(sql) == ["select", "count", "(", "*", ")", "from", "singer", "where", "name", "=",
                               '"joe sharp"']
    assert sql_atoms(sql) == frozenset(sql_tokens(sql))
    for bad in ("", "select count ( * from t", 'select a from t where b = "open'):
        with pytest.raises(UnparseableProgramError):
            sql_atoms(bad)


def test_funql_parser_and_atoms():
    program = "answer ( intersection ( state , next_to_2 ( most ( state , loc_1 , city ) ) ) )"
    tree = parse_funql(program)
    assert tree.name == "answer" and tree.arguments[0].name == "intersection"
    assert [a.name for a in tree.arguments[0].arguments[1].arguments[0].arguments] == ["state", "loc_1", "city"]
    assert funql_atoms(program) == {"answer", "intersection", "state", "next_to_2", "most", "loc_1", "city"}
    for bad, where in (("answer ( m0", "the end"), ("answer ( m0 ) )", "token 4"), ("( m0 )", "token 0")):
        with pytest.raises(UnparseableProgramError, match=where):
            parse_funql(bad)


def test_nqg_files_are_read_headerless_with_quotes_kept(tmp_path):
    path = tmp_path / "spider.tsv"
    path.write_text('db_a: how many "big" rooms ?\tselect count ( * ) from room where size = "big"\n'
                    'db_b: list names | schema stuff\tselect name from person\n')
    source = load_source(str(path), query_field="input", target_field="target")
    assert source.dataset.column_names == ["source_id", "input", "target"]
    assert source.dataset["target"][0] == 'select count ( * ) from room where size = "big"'
    assert source.dataset["source_id"] == [0, 1]
    assert nqg.questions(source.dataset["input"]) == ['how many "big" rooms ?', "list names"]
    assert nqg.questions(["plain question", "db: other"]) == ["plain question", "db: other"]
    (tmp_path / "bad.tsv").write_text("a\tb\nc\td\te\n")
    with pytest.raises(SourceLoadError, match="line 2 has 3 tab-separated field"):
        nqg.read_pairs(tmp_path / "bad.tsv")
    # A TSV whose first line names the requested fields is a table with a header, not NQG.
    (tmp_path / "header.tsv").write_text("question\tprogram\nwhere is m0\tanswer ( m0 )\n")
    table = load_source(str(tmp_path / "header.tsv"), query_field="question", target_field="program")
    assert table.dataset["question"] == ["where is m0"] and table.target_field == "program"


def test_a_spider_folder_is_a_likelihood_source_read_as_tmcd_reads_it(shared, tmp_path):
    """``resplit likelihood --source ../shared/data/spider`` (refused before: "not a CSV/TSV/... file") reads the
    folder with the reader ``resplit tmcd`` uses: the same rows, the same ``source_id``s, questions and queries."""
    import numpy as np
    import pyarrow.parquet as pq

    from loading_scripts import load_compositional
    from split_builders.cli import main

    folder = shared / "data" / "spider"
    rows = load_compositional(str(folder)).rows
    scores = tmp_path / "scores.npy"
    np.save(scores, -np.random.default_rng(0).random(len(rows)) * 50)  # one per row of the folder
    out = tmp_path / "out"
    assert main(["likelihood", "--source", str(folder), "--atoms", "sql", "--limit", "500", "--train-size", "300",
                 "--scores", str(scores), "--out", str(out), "--no-progress"]) == 0
    released = pq.read_table(next((out / "ll_split").glob("test-*.parquet")), columns=["source_id", "input", "target"])
    for source_id, text, target in zip(*(released.column(c).to_pylist() for c in ("source_id", "input", "target"))):
        assert (rows[source_id]["input"], rows[source_id]["target"]) == (text, target)
