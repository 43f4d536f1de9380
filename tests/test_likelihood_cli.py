"""``resplit likelihood`` as users call it: the acceptance contract and the error messages."""

import json
import subprocess
import sys

import datasets
import numpy as np
import pytest

from split_builders.cli import main


from conftest import reference_contract_args as _contract_args


def test_contract_command_reproduces_the_fixtures(likelihood_reference, reference_release, hf_cache):
    # The reference breaks ties in likelihood by file order (pandas' stable sort), and these scores tie:
    # the position row order rule reproduces it (the default content rule breaks ties by content key).
    # The command (_contract_args with --length-buckets 4 --row-order position) runs once for the session:
    out, printed = reference_release
    assert "ll_split_len" in printed and "load_dataset" in printed
    for config, fixture in (("ll_split", "ll_split"), ("ll_split_len", "ll_split_len4")):
        loaded = datasets.load_dataset(str(out), config, cache_dir=hf_cache)
        for split, name in (("train", "train"), ("validation", "dev"), ("test", "test")):
            expected = json.loads((likelihood_reference / "snli" / fixture / f"{name}_idx.json").read_text())
            assert set(loaded[split]["source_id"]) == set(expected)
            assert loaded[split].features["source_id"].dtype == "int64"


def test_without_length_buckets_there_is_no_len_config_and_no_label_field_means_no_balance(
        likelihood_reference, tmp_path, hf_cache):
    out = tmp_path / "release"
    args = _contract_args(likelihood_reference, out)
    drop = args.index("--label-field")
    del args[drop:drop + 2]
    assert main(args) == 0
    card = (out / "README.md").read_text()
    assert "config_name: ll_split_len" not in card and "config_name: ll_split\n" in card
    test = datasets.load_dataset(str(out), "ll_split", split="test", cache_dir=hf_cache)
    scores = np.load(likelihood_reference / "inputs" / "snli" / "all_examples__False_loglikelihoods.npy")
    held_out = np.sort(scores)[:400]  # no balancing: simply the 400 least likely rows
    assert set(np.asarray(scores)[test["source_id"]]) <= set(held_out)


def test_train_size_gives_the_semantic_parsing_mode(likelihood_reference, tmp_path, hf_cache):
    out = tmp_path / "release"
    args = _contract_args(likelihood_reference, out)
    drop = args.index("--label-field")
    del args[drop:drop + 2]
    for flag in ("--dev-size", "--test-size"):  # --train-size sizes the evaluation splits itself
        drop = args.index(flag)
        del args[drop:drop + 2]
    args += ["--train-size", "1800"]
    assert main(args) == 0
    loaded = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    assert (len(loaded["train"]), len(loaded["validation"]), len(loaded["test"])) == (1800, 300, 300)


@pytest.mark.parametrize("change,message", [
    (("--query-field", "hypotesis"), "query field 'hypotesis' not found"),
    (("--dev-size", "2300"), "must be smaller than the number of rows"),
    (("--dev-size", "1.5"), r"validation_size as a fraction must be in \(0, 1\)"),
    (("--dev-size", "2000"), "class 'neutral' has 712 rows"),
])
def test_bad_input_exits_2_with_a_message_and_no_traceback(likelihood_reference, tmp_path, capsys, change, message):
    args = _contract_args(likelihood_reference, tmp_path / "out")
    flag, value = change
    args[args.index(flag) + 1] = value
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert __import__("re").search(message, err), err
    if flag == "--query-field":
        assert "available fields: 'premise', 'hypothesis', 'gold_label'" in err
    assert not (tmp_path / "out").exists()


def test_existing_output_folder_is_refused(likelihood_reference, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    assert main(_contract_args(likelihood_reference, out)) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main(_contract_args(likelihood_reference, out, "--overwrite")) == 0


def test_scores_of_the_wrong_length_are_refused(likelihood_reference, tmp_path, capsys):
    scores = tmp_path / "short.npy"
    np.save(scores, np.zeros(10))
    args = _contract_args(likelihood_reference, tmp_path / "out")
    args[args.index("--scores") + 1] = str(scores)
    assert main(args) == 2
    assert "has 10 values but the source has 2400 rows" in capsys.readouterr().err


def test_unknown_model_offline_says_so(tmp_path, capsys):
    # 200 rows: enough for the default 4 length buckets per class (checked before the model is resolved)
    args = ["likelihood", "--source", "snli-sample", "--limit", "200", "--lm", "someone/no-such-model",
            "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(args) == 2
    assert "HF_HUB_OFFLINE is set and 'someone/no-such-model' is not in the local" in capsys.readouterr().err


def test_console_script_runs(likelihood_reference, tmp_path):
    # The installed entry point, as a user types it.
    resplit = [sys.executable, "-m", "split_builders.cli"]
    done = subprocess.run(resplit + ["--help"], capture_output=True, text=True, check=True)
    assert "likelihood" in done.stdout
    done = subprocess.run(resplit + _contract_args(likelihood_reference, tmp_path / "out"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "README.md").is_file()
