"""``resplit behavioural`` from the command line."""

from __future__ import annotations

import json

import datasets
import pytest

from split_builders.cli import main

SUITE = {"suite": "toy", "tests": [
    {"name": "positive words", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all",
     "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 2, "meta": None,
     "data": ["good", "great", "nice", "fine", "lovely", "superb"]},
    {"name": "typos", "type": "INV", "capability": "Robustness", "agg_fn": "all_except_first",
     "expectation": {"fn": "inv", "tolerance": 0.1}, "nested": True, "labels": None, "meta": None,
     "data": [["good film", "godo film"], ["bad film", "bda film"], ["ok film", "ko film"], ["fun", "fnu"]]},
    {"name": "more positive", "type": "DIR", "capability": "Vocabulary", "agg_fn": "all_except_first",
     "expectation": {"fn": "diff_up", "tolerance": 0.1}, "nested": True, "labels": None, "meta": None,
     "data": [["a film", "a great film"], ["a day", "a great day"], ["a meal", "a great meal"]]},
]}


@pytest.fixture()
def suite_file(tmp_path):
    path = tmp_path / "toy_suite.json"
    path.write_text(json.dumps(SUITE))
    return path


def test_behavioural_command_writes_every_config(suite_file, tmp_path, hf_cache, capsys):
    out = tmp_path / "checklist-toy"
    assert main(["behavioural", "--suite", str(suite_file), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "type_DIR" in printed and f"wrote {out}" in printed
    expected = ["seen", "func_0", "func_1", "func_2", "class_Vocabulary", "class_Robustness",
                "type_MFT", "type_INV", "type_DIR"]
    for name in expected:
        test_rows = datasets.load_dataset(str(out), name, split="test", cache_dir=hf_cache)
        assert {"functionality", "capability", "test_type", "testcase_id"} <= set(test_rows.column_names)
    func1 = datasets.load_dataset(str(out), "func_1", cache_dir=hf_cache)
    assert set(func1["test"]["functionality"]) == {"typos"}
    assert "typos" not in func1["train"]["functionality"]


@pytest.mark.parametrize("extra, message", [
    (["--functionality", "colour words"], "unknown functionality 'colour words'; valid functionality names: "
                                          "'positive words', 'typos', 'more positive'"),
    (["--capability", "Logic"], "unknown capability 'Logic'; valid capability names: 'Vocabulary', 'Robustness'"),
])
def test_unknown_names_are_reported(suite_file, tmp_path, capsys, extra, message):
    assert main(["behavioural", "--suite", str(suite_file), "--out", str(tmp_path / "x"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_mft_without_labels_is_reported(tmp_path, capsys):
    bad = json.loads(json.dumps(SUITE))
    bad["tests"][0]["labels"] = None
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["behavioural", "--suite", str(path), "--out", str(tmp_path / "x")]) == 2
    assert "MFT with expectation 'eq' needs labels" in capsys.readouterr().err


def test_selected_configs_only(suite_file, tmp_path, capsys):
    out = tmp_path / "sel"
    assert main(["behavioural", "--suite", str(suite_file), "--out", str(out), "--functionality", "1",
                 "--capability", "Robustness"]) == 0
    readme = (out / "README.md").read_text()
    assert "config_name: func_1" in readme and "config_name: func_0" not in readme
    assert "config_name: class_Robustness" in readme and "config_name: class_Vocabulary" not in readme


# ---------------------------------------------------------------------------------------
# resplit evaluate-suite, with a tiny random classifier saved locally (plumbing only)
# ---------------------------------------------------------------------------------------


def _tiny_classifier(folder, words, num_labels=3):
    import torch
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {token: i for i, token in enumerate(specials + sorted(words))}
    backend = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=num_labels)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    words = {w for test in SUITE["tests"] for case in test["data"]
             for example in (case if test["nested"] else [case]) for w in example.split()}
    return _tiny_classifier(tmp_path_factory.mktemp("model"), words)


def test_evaluate_suite_prints_pass_rates_and_g(suite_file, tiny_model, capsys, local_metric):
    args = ["evaluate-suite", "--model", tiny_model, "--suite", str(suite_file), "--config", "func_1",
            "--iid-score", "0.9", "--no-progress"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["functionalities"]) == ["typos"]
    g = local_metric("g_score").harmonic_mean(0.9, result["suite_score"])
    assert result["g_score"] == pytest.approx(float(g))
    assert result["suite_score"] == pytest.approx((result["pass_rate"] or 0) / 100)
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "typos" in table and "G-score (func_1, test)" in table


def test_evaluate_suite_bad_input(suite_file, tiny_model, capsys):
    base = ["evaluate-suite", "--model", tiny_model, "--suite", str(suite_file), "--no-progress"]
    assert main([*base, "--config", "func_9", "--iid-score", "0.9"]) == 2
    assert "unknown config 'func_9'; valid configs: seen, func_0, func_1, func_2" in capsys.readouterr().err
    assert main([*base, "--iid-score", "91"]) == 2
    assert "--iid-score is a fraction in [0, 1]" in capsys.readouterr().err
    assert main([*base, "--suite", "squad", "--iid-score", "0.5"]) == 2
    assert "pass --suite-dir" in capsys.readouterr().err


def test_predictions_of_the_wrong_shape(suite_file):
    from loading_scripts.checklist import read_checklist_suite
    from split_builders.cli.evaluate import select_config, testcase_columns
    from split_builders.errors import InvalidParameterError

    rows = select_config(read_checklist_suite(suite_file), "seen", "test")
    examples = sum(len(e) for e in rows["examples"])
    columns = testcase_columns(rows, [0] * examples, [[0.2, 0.3, 0.5]] * examples)
    assert len(columns["predictions"]) == rows.num_rows
    with pytest.raises(InvalidParameterError, match=f"expected one prediction per example: {examples} examples in "
                                                    f"{rows.num_rows} test cases, got {examples + 1} predictions"):
        testcase_columns(rows, [0] * (examples + 1), None)
    with pytest.raises(InvalidParameterError, match=f"got {examples} predictions and 1 probability vectors"):
        testcase_columns(rows, [0] * examples, [[1.0, 0.0, 0.0]])


def test_method_is_registered_with_its_protocol():
    from split_builders.api import get_method

    method = get_method("behavioural")
    assert "Luz de Araujo & Roth" in method.paper and method.source_aliases == ("--suite",)
    assert method.default_source is None and "seen" in method.config_names


def test_seed_defaults_to_42_and_123_is_belugas_draw(suite_file, tmp_path, capsys):
    import yaml

    assert main(["behavioural", "--source", str(suite_file), "--out", str(tmp_path / "a")]) == 0
    assert "seed 42 (BELUGA's own draw is --seed 123 --row-order position)" in capsys.readouterr().out
    assert main(["behavioural", "--suite", str(suite_file), "--out", str(tmp_path / "b"), "--seed", "123",
                 "--functionality", "typos,2", "--limit", "3", "--no-beluga-labels", "--row-order", "position"]) == 0
    assert "seed 123 (BELUGA's draw)" in capsys.readouterr().out
    meta = yaml.safe_load((tmp_path / "b" / "README.md").read_text().split("---\n")[1])["resplit"]
    assert meta["seed"] == 123 and meta["parameters"]["limit"] == 3 and meta["parameters"]["beluga_labels"] is False
    assert set(meta["configs"]) == {"seen", "func_1", "func_2", "class_Vocabulary", "class_Robustness",
                                    "type_MFT", "type_INV", "type_DIR"}
    assert meta["source"]["rows"] == 9 and meta["source"]["filters"]


def test_bad_limit_and_missing_suite(suite_file, tmp_path, capsys):
    assert main(["behavioural", "--suite", str(suite_file), "--out", str(tmp_path / "x"), "--limit", "1"]) == 2
    assert "limit must be an integer >= 3, got 1" in capsys.readouterr().err
    assert main(["behavioural", "--out", str(tmp_path / "x")]) == 2
    assert "--suite" in capsys.readouterr().err
    assert main(["behavioural", "--suite", str(tmp_path / "nope.json"), "--out", str(tmp_path / "x")]) == 2
    assert "cannot read CheckList suite" in capsys.readouterr().err


def test_evaluate_suite_selects_the_rows_of_a_release_built_with_the_same_seed(suite_file, tmp_path, hf_cache):
    from loading_scripts.checklist import read_checklist_suite
    from split_builders.cli.evaluate import select_config

    out = tmp_path / "release"
    assert main(["behavioural", "--source", str(suite_file), "--out", str(out), "--seed", "7"]) == 0
    released = datasets.load_dataset(str(out), "seen", split="test", cache_dir=hf_cache)
    suite = read_checklist_suite(suite_file)
    assert select_config(suite, "seen", "test", seed=7)["testcase_id"] == released["testcase_id"]
    other = [select_config(suite, "seen", "test", seed=s)["testcase_id"] for s in range(8, 14)]
    assert any(ids != released["testcase_id"] for ids in other)  # the seed matters
    # and so does the rule: a release drawn over the suite's order (BELUGA's) is selected with it
    assert main(["behavioural", "--source", str(suite_file), "--out", str(tmp_path / "by-position"), "--seed", "7",
                 "--row-order", "position"]) == 0
    by_position = datasets.load_dataset(str(tmp_path / "by-position"), "seen", split="test", cache_dir=hf_cache)
    assert (select_config(suite, "seen", "test", seed=7, row_order="position")["testcase_id"]
            == by_position["testcase_id"])


def _tiny_causal_lm(folder, tokenizer_folder):
    """A 1-layer random GPT-2 (a causal LM: no sequence-classification head) with a word-level tokenizer."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_layer=1, n_head=2, n_embd=16, n_positions=64,
                        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
                        eos_token_id=tokenizer.sep_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("kind, weights", [("causal-lm", "score.weight"), ("base-encoder", "classifier.weight")])
def test_evaluate_suite_refuses_a_model_whose_head_is_not_in_its_weights(suite_file, tiny_model, tmp_path, capsys,
                                                                          kind, weights):
    from transformers import AutoModel

    if kind == "causal-lm":
        model = _tiny_causal_lm(tmp_path / kind, tiny_model)
    else:  # the encoder of the tiny classifier without its head
        model = str(tmp_path / kind)
        AutoModel.from_pretrained(tiny_model).save_pretrained(model)
        __import__("transformers").AutoTokenizer.from_pretrained(tiny_model).save_pretrained(model)
    capsys.readouterr()  # what saving the model printed
    code = main(["evaluate-suite", "--model", model, "--suite", str(suite_file), "--iid-score", "0.9",
                 "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"{model!r} is not a trained sequence classifier" in err and weights in err


def test_writing_a_suites_configs_shows_progress_unless_asked_not_to(suite_file, tmp_path, capsys):
    assert main(["behavioural", "--source", str(suite_file), "--out", str(tmp_path / "a")]) == 0
    assert "writing configs" in capsys.readouterr().err
    assert main(["behavioural", "--source", str(suite_file), "--out", str(tmp_path / "b"), "--no-progress"]) == 0
    assert "writing configs" not in capsys.readouterr().err
