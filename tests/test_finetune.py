"""k-fold cross-fitted fine-tuned scoring (the paper's ``ll_split`` signal).

Plumbing tests use a tiny random Llama (hidden size 32, 2 layers) with the real SmolLM2
tokenizer, saved to a folder as users pass one; one test fine-tunes the real SmolLM2 on SNLI.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from split_builders.signals.lm import finetune
from split_builders.errors import EmptyTextError, InvalidParameterError, ModelLoadError
from split_builders.signals.lm.finetune import FinetuneOptions, finetune_scores, work_key
from split_builders.signals.lm.kfold import assign_folds, holdout, training_schedule
from split_builders.signals.lm.models import resolve_model
from split_builders.signals.lm.training_batches import PaddedCollator
from split_builders.signals.lm.scoring import LikelihoodScorer, encode

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from finetune_worker import FINETUNE_OPTIONS, pairs  # noqa: E402
from conftest import run_two_processes  # noqa: E402

FAST = dict(folds=2, seed=5, max_steps=4, batch_size=4, eval_steps=2, score_batch_size=8)


def fast(work_dir, **changes) -> dict:
    """``finetune_scores``' keyword arguments of a quick CPU run: the FAST options (with ``changes``)
    working in ``work_dir``."""
    return dict(options=FinetuneOptions(**{**FAST, **changes}, work_dir=work_dir), device="cpu", progress=False)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: the tiny model's steps are too small to split, and on a shared, busy CPU
    two threads wait on each other (a tenfold slowdown measured here)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_model_dir(tiny_llama) -> Path:
    return tiny_llama


@pytest.fixture(scope="module")
def tiny_ref(tiny_model_dir):
    return resolve_model(str(tiny_model_dir))


def _copy_model(source: Path, target: Path, **tokenizer_changes) -> Path:
    """A copy of a model folder whose tokenizer has some special tokens changed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source)
    for name, value in tokenizer_changes.items():
        setattr(tokenizer, name, value)
    AutoModelForCausalLM.from_pretrained(source).save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target


# -- folds, hold-out, schedule (pure) ---------------------------------------------------------

def test_folds_partition_the_rows_seeded_with_balanced_sizes():
    folds = assign_folds(10, k=3, seed=1)
    assert folds.shape == (10,) and set(folds.tolist()) == {0, 1, 2}
    assert sorted(np.bincount(folds).tolist()) == [3, 3, 4]  # sizes differ by at most one
    assert np.array_equal(folds, assign_folds(10, k=3, seed=1))
    assert not np.array_equal(folds, assign_folds(10, k=3, seed=2))
    expected = np.empty(10, dtype=np.int64)  # the documented construction
    for fold, chunk in enumerate(np.array_split(np.random.default_rng(1).permutation(10), 3)):
        expected[chunk] = fold
    assert np.array_equal(folds, expected)
    assert np.bincount(assign_folds(7, k=7, seed=0)).tolist() == [1] * 7


@pytest.mark.parametrize("k", [1, 0, 11, 2.5, True])
def test_bad_k_is_an_error_naming_value_and_range(k):
    with pytest.raises(InvalidParameterError, match=rf"2 <= k <= 10.*{k!r}"):
        assign_folds(10, k=k)


def test_holdout_and_schedule():
    rows = np.arange(100, 140)
    fit, held = holdout(rows, fraction=0.1, seed=0, fold=1)
    assert len(held) == 4 and len(fit) == 36 and not set(fit) & set(held) and set(fit) | set(held) == set(rows)
    assert np.array_equal(held, holdout(rows, fraction=0.1, seed=0, fold=1)[1])
    assert not np.array_equal(held, holdout(rows, fraction=0.1, seed=0, fold=2)[1])
    schedule = training_schedule(fit, steps=7, batch_size=8, seed=0, fold=1)
    assert len(schedule) == 56  # exactly steps * batch: never a partial batch
    assert sorted(schedule[:36].tolist()) == fit.tolist()  # an epoch is a permutation of the rows
    assert set(schedule[36:].tolist()) <= set(fit.tolist())


# -- the loss masks exactly what scoring scores -------------------------------------------------

def test_loss_covers_exactly_the_query_and_eos_positions(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts, queries = pairs(6)
    encoded = encode(tokenizer, prompts, queries, max_length=128)
    batch = PaddedCollator(pad_id=tokenizer.pad_token_id)(
        [{"row": i, "input_ids": e.ids, "query_start": e.query_start} for i, e in enumerate(encoded)])
    for row, example in enumerate(encoded):
        labelled = torch.nonzero(batch["labels"][row] != -100)[:, 0].tolist()
        assert labelled == list(range(example.query_start, len(example.ids)))  # query + EOS, nothing else
        assert batch["labels"][row, labelled].tolist() == example.ids[example.query_start:]
        assert example.ids[-1] == tokenizer.eos_token_id
        assert batch["position_ids"][row, :len(example.ids)].tolist() == list(range(len(example.ids)))
    assert len({len(e.ids) for e in encoded}) > 1  # some rows are padded

    # The training loss is the mean negative log-likelihood of the very tokens scoring sums.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    with torch.no_grad():
        loss = model(**batch).loss.item()
    scores = LikelihoodScorer(model, tokenizer, batch_size=3).score(prompts, queries)
    n_tokens = sum(len(e.ids) - e.query_start for e in encoded)
    assert loss == pytest.approx(-scores.sum() / n_tokens, rel=1e-5)


# -- cross-fitting ------------------------------------------------------------------------------

def test_no_row_is_scored_by_a_model_that_trained_on_it(tiny_ref, tmp_path, monkeypatch):
    seen, scored = {}, {}
    real_fit, real_score, real_rows = finetune._fit, finetune._score_rows, PaddedCollator.rows

    def fit(*args, fold, **kwargs):
        seen[fold] = set()
        seen["current"] = fold
        return real_fit(*args, fold=fold, **kwargs)

    def rows_of(features):  # every collator (padded and packed) reads its rows through this
        rows = real_rows(features)
        seen[seen["current"]].update(f["row"] for f in rows)  # training and held-out evaluation rows
        return rows

    def score(model, tokenizer, encoded, rows, **kwargs):
        scored[seen["current"]] = set(rows.tolist())
        return real_score(model, tokenizer, encoded, rows, **kwargs)

    monkeypatch.setattr(finetune, "_fit", fit)
    monkeypatch.setattr(finetune, "_score_rows", score)
    monkeypatch.setattr(PaddedCollator, "rows", staticmethod(rows_of))
    prompts, queries = pairs(15)
    run = finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path, folds=3))

    assert set(scored) == {0, 1, 2}
    for fold in range(3):
        in_fold = set(np.flatnonzero(run.folds == fold).tolist())
        assert scored[fold] == in_fold
        assert seen[fold] and not seen[fold] & in_fold  # trained (and evaluated) only on other folds
        assert seen[fold] == set(range(15)) - in_fold  # ... and on all of them
    assert np.isfinite(run.scores).all() and (run.scores < 0).all()
    assert [r["rows"] for r in run.fold_reports] == np.bincount(run.folds).tolist()
    report = run.fold_reports[0]
    assert report["train_rows"] + report["eval_rows"] == 15 - report["rows"]
    assert report["steps"] == 4 and report["best_step"] in (2, 4)
    assert [step for step, _ in report["eval_losses"]] == [2, 4]
    assert report["best_eval_loss"] == min(loss for _, loss in report["eval_losses"])
    # Only the scores and reports stay: the Trainer's checkpoints (weights) are gone.
    assert sorted(p.name for p in run.work_dir.iterdir()) == sorted(
        [f"fold{f}.entry" for f in range(3)] + ["run.json"])


def test_resumed_run_equals_uninterrupted_run_bit_for_bit(tiny_ref, tmp_path):
    prompts, queries = pairs(16)
    clean = finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path / "a"))
    assert clean.resumed_folds == 0 and clean.num_processes == 1

    with pytest.raises(KeyboardInterrupt):
        finetune_scores(prompts, queries, model_ref=tiny_ref, stop_after_folds=1, **fast(tmp_path / "b"))
    (folder,) = (tmp_path / "b").iterdir()
    assert (folder / "fold0.entry").is_file() and not (folder / "fold1.entry").exists()
    resumed = finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path / "b"))
    assert resumed.resumed_folds == 1
    # Separate work folders, separate processes of training: identical arrays (CPU determinism).
    assert np.array_equal(resumed.scores, clean.scores)
    assert np.array_equal(resumed.folds, clean.folds)
    assert [r["param_checksum"] for r in resumed.fold_reports] == [r["param_checksum"] for r in clean.fold_reports]

    again = finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path / "a"))
    assert again.resumed_folds == 2 and np.array_equal(again.scores, clean.scores)  # nothing retrained


def test_work_folder_changes_with_whatever_determines_the_result():
    prompts, queries = pairs(4)
    base = dict(model_identity="m@1", k=3, seed=0, dtype="float32", hyperparameters={"max_steps": 10, "lr": 2e-5})
    key = work_key(prompts, queries, **base)
    assert key == work_key(prompts, queries, **base)
    changed = [work_key(prompts[:3] + ["x"], queries, **base), work_key(prompts, queries, **{**base, "model_identity": "m@2"}),
               work_key(prompts, queries, **{**base, "k": 2}), work_key(prompts, queries, **{**base, "seed": 1}),
               work_key(prompts, queries, **{**base, "dtype": "bfloat16"}),
               work_key(prompts, queries, **{**base, "hyperparameters": {"max_steps": 11, "lr": 2e-5}})]
    assert len({key, *changed}) == 7


def test_keep_models_keeps_each_folds_best_model(tiny_ref, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    prompts, queries = pairs(12)
    run = finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path, keep_models=True))
    assert not list(run.work_dir.glob("fold*-trainer"))
    for fold in range(2):
        model = AutoModelForCausalLM.from_pretrained(run.work_dir / f"fold{fold}-model").eval()
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # still tied
        rows = np.flatnonzero(run.folds == fold)
        tokenizer = AutoTokenizer.from_pretrained(tiny_ref.path)
        again = LikelihoodScorer(model, tokenizer, batch_size=8).score([prompts[i] for i in rows],
                                                                      [queries[i] for i in rows])
        np.testing.assert_allclose(again, run.scores[rows], atol=1e-5)


# -- bad input ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("option", "value", "message"), [
    ("folds", 1, r"folds must be an integer >= 2, got 1"), ("folds", 7, r"2 <= k <= 6 \(the number of rows\), got 7"),
    ("max_steps", 0, r"max_steps must be a positive integer, got 0"),
    ("eval_fraction", 0.0, r"eval_fraction must be a fraction in \(0, 1\), got 0.0"),
    ("eval_fraction", 1, r"eval_fraction must be a fraction in \(0, 1\), got 1"),
    ("learning_rate", 0, r"learning_rate must be a positive number, got 0"),
    ("dtype", "int8", r"dtype must be one of float32, bfloat16, float16, got 'int8'"),
])
def test_bad_parameters_fail_before_any_work(tiny_ref, tmp_path, option, value, message):
    prompts, queries = pairs(6)
    with pytest.raises(InvalidParameterError, match=message):
        arguments = {**fast(tmp_path), "dtype": value} if option == "dtype" else fast(tmp_path, **{option: value})
        finetune_scores(prompts, queries, model_ref=tiny_ref, **arguments)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_too_few_rows_to_train_and_evaluate_is_an_error(tiny_ref, tmp_path):
    prompts, queries = pairs(2)
    with pytest.raises(InvalidParameterError, match=r"with 2 rows and k=2, a fold trains on 1 row"):
        finetune_scores(prompts, queries, model_ref=tiny_ref, **fast(tmp_path))


def test_global_batch_must_divide_over_processes():
    options = dict(folds=2, max_steps=1, eval_steps=1, patience=1, score_batch_size=1, max_batch_tokens=1)
    finetune.check_parameters(4, FinetuneOptions(batch_size=4, **options), dtype="float32", num_processes=2)
    with pytest.raises(InvalidParameterError, match=r"batch_size \(5\).*divisible.*\(2\)"):
        finetune.check_parameters(4, FinetuneOptions(batch_size=5, **options), dtype="float32", num_processes=2)


def test_queries_without_tokens_reach_the_caller_unchanged(tiny_ref, tmp_path):
    prompts, queries = pairs(6)
    with pytest.raises(EmptyTextError, match=r"row 2: the query '' has no tokens"):
        finetune_scores(prompts, queries[:2] + [""] + queries[3:], model_ref=tiny_ref, **fast(tmp_path))
    too_long = " word" * 200  # the tiny model's context is 128 tokens
    with pytest.raises(InvalidParameterError, match=r"row 1: .*no query tokens would be left after truncation"):
        finetune_scores(prompts, queries[:1] + [too_long] + queries[2:], model_ref=tiny_ref, **fast(tmp_path))


def test_tokenizer_without_pad_uses_eos_and_without_both_is_an_error(tiny_model_dir, tmp_path):
    no_pad = resolve_model(str(_copy_model(tiny_model_dir, tmp_path / "no-pad", pad_token=None)))
    tokenizer = finetune._load_tokenizer(no_pad)
    assert tokenizer.pad_token_id == tokenizer.eos_token_id is not None

    neither = resolve_model(str(_copy_model(tiny_model_dir, tmp_path / "neither", pad_token=None, eos_token=None)))
    prompts, queries = pairs(6)
    with pytest.raises(ModelLoadError, match=r"tokenizer of '.*neither'.* neither a pad nor an EOS token"):
        finetune_scores(prompts, queries, model_ref=neither, **fast(tmp_path / "w"))


# -- several processes ------------------------------------------------------------------------------

@pytest.mark.slow
def test_two_processes_train_the_same_models_and_scores_as_one(tiny_ref, tmp_path):
    n_rows = 12  # two folds of 6: each process trains on half of each global batch of 4
    out = tmp_path / "reports"
    reports = run_two_processes("finetune_worker.py", tiny_ref.path, tmp_path / "work2", out, n_rows, out=out)
    assert [r["rank"] for r in reports] == [0, 1]
    assert all(r["num_processes"] == 2 == r["run_num_processes"] for r in reports)
    assert all("gloo" in r["backend"] for r in reports)
    assert reports[0]["scores"] == reports[1]["scores"]  # gathered to every process

    prompts, queries = pairs(n_rows)
    single = finetune_scores(prompts, queries, model_ref=tiny_ref, device="cpu", progress=False,
                             options=FinetuneOptions(**FINETUNE_OPTIONS, work_dir=tmp_path / "work1"))
    assert reports[0]["folds"] == single.folds.tolist()
    # Same global batches; the gradient all-reduce sums in another order: measured ~2e-6.
    np.testing.assert_allclose(reports[0]["scores"], single.scores, rtol=0, atol=1e-5)
    for two, one in zip(reports[0]["fold_reports"], single.fold_reports):
        assert two["num_processes"] == 2 and one["num_processes"] == 1
        assert two["param_checksum"] == pytest.approx(one["param_checksum"], abs=1e-5)
        assert two["best_step"] == one["best_step"] and two["steps"] == one["steps"]
        np.testing.assert_allclose([l for _, l in two["eval_losses"]], [l for _, l in one["eval_losses"]], atol=1e-5)


# -- the real model -------------------------------------------------------------------------------

@pytest.mark.slow
def test_fine_tuning_smollm2_on_snli_changes_scores_and_fits_the_training_rows(smollm2, tmp_path, monkeypatch):
    from loading_scripts import snli
    from split_builders.signals.lm.prompts import render_all, resolve_template

    source = snli.sample()
    n_rows = 16  # two folds of 8: each trains on 6 distinct rows (1 held out to pick the checkpoint)
    source.dataset = source.dataset.select(range(n_rows))
    prompts, queries = render_all(resolve_template("snli", task="snli", prompt_field=None, query_field=None), source)
    prompted = LikelihoodScorer(smollm2.model, smollm2.tokenizer, batch_size=16).score(prompts, queries)

    fitted = {}  # per fold: s(x) of the rows it trained on, under the fine-tuned model
    real_fit = finetune._fit
    steps, batch_size = 3, 2

    def fit(model_ref, encoded, *, fit_rows, fold, **kwargs):
        trainer, model = real_fit(model_ref, encoded, fit_rows=fit_rows, fold=fold, **kwargs)
        model.eval()
        trained = np.unique(training_schedule(fit_rows, steps=steps, batch_size=batch_size, seed=0, fold=fold))
        scorer = LikelihoodScorer(model, smollm2.tokenizer, batch_size=16)
        fitted[fold] = (trained, scorer.score([prompts[i] for i in trained], [queries[i] for i in trained]))
        return trainer, model

    monkeypatch.setattr(finetune, "_fit", fit)
    options = FinetuneOptions(folds=2, seed=0, max_steps=steps, batch_size=batch_size, eval_steps=steps,
                              score_batch_size=16, work_dir=tmp_path)
    run = finetune_scores(prompts, queries, model_ref=smollm2.ref, options=options, device="cpu", progress=False)

    assert run.scores.shape == (n_rows,) and np.isfinite(run.scores).all()
    # Held-out rows are scored by the fine-tuned models: they learn SNLI's form (and the EOS after the
    # hypothesis), so held-out pairs become more likely too (measured: +4.7 nats on average).
    assert (run.scores - prompted).mean() > 1.0
    for fold, (rows, scores) in fitted.items():
        # The loss on the rows trained on went down (measured: +13.8 and +14.8 nats of s(x) per row).
        assert scores.mean() > prompted[rows].mean() + 3.0
        assert len(rows) == steps * batch_size  # the 6 training rows visited are all distinct
        assert run.fold_reports[fold]["steps"] == steps == run.fold_reports[fold]["best_step"]


def test_cli_builds_prompted_and_finetuned_configs_side_by_side(tiny_model_dir, tmp_path, hf_cache, capsys):
    """``resplit likelihood --finetune``: ll_split* from the cross-fitted scores beside ll_split_pt*,
    the card comparing the two signals, and the column equal to a direct finetune_scores run."""
    import datasets

    from split_builders.cli import main
    from split_builders.splitters.likelihood import LikelihoodSplitter
    from split_builders.methods.likelihood import FINETUNE_TEMPLATE
    from split_builders.signals.lm.prompts import render_all, resolve_template

    out = tmp_path / "release"
    args = ["likelihood", "--source", "snli-sample", "--limit", "90", "--lm", str(tiny_model_dir), "--device", "cpu",
            "--dev-size", "9", "--test-size", "9", "--finetune", "--folds", "2", "--finetune-seed", "5",
            "--max-steps", "3", "--finetune-batch-size", "4", "--eval-steps", "2",
            "--finetune-dir", str(tmp_path / "folds"), "--cache-dir", str(tmp_path / "scores"),
            "--out", str(out), "--no-progress"]
    assert main(args) == 0
    assert "fine-tuned 2-fold" in capsys.readouterr().out
    card = (out / "README.md").read_text()
    for config in ("ll_split_pt", "ll_split_pt_len", "ll_split_pt_reverse", "ll_split", "ll_split_len",
                   "ll_split_reverse", "random", "length"):
        assert f"config_name: {config}\n" in card
    assert "Pearson correlation **" in card and "ll_split_pt vs ll_split" in card and "fold 1: 3 steps" in card

    loaded = datasets.load_dataset(str(out), "ll_split", cache_dir=hf_cache)
    rows = datasets.concatenate_datasets([loaded[s] for s in ("train", "validation", "test")])
    rows = rows.select(np.argsort(np.asarray(rows["source_id"])))
    # The column is what finetune_scores gives on its own (recomputed in a fresh work folder).
    from loading_scripts import load_source

    source = load_source("snli-sample")
    source.dataset = source.dataset.select(range(90))
    prompts, queries = render_all(resolve_template(FINETUNE_TEMPLATE["snli"], task="snli", prompt_field=None,
                                                   query_field=None), source)
    options = FinetuneOptions(folds=2, seed=5, max_steps=3, batch_size=4, eval_steps=2, work_dir=tmp_path / "again")
    # The rows go in in their content order (the default row order rule: folds and batches follow the rows'
    # content keys, never their position), the scores come back in the rows' own order.
    from split_builders.methods.likelihood import content_keys
    from split_builders.splitters.partition import back_in_place, content_order

    order = content_order(content_keys(source), 5)  # under the fine-tuning seed
    direct = finetune_scores([prompts[i] for i in order], [queries[i] for i in order],
                             model_ref=resolve_model(str(tiny_model_dir)), options=options, device="cpu",
                             progress=False)
    direct.scores, direct.folds = back_in_place(direct.scores, order), back_in_place(direct.folds, order)
    np.testing.assert_array_equal(np.asarray(rows["score_finetuned"]), direct.scores)
    np.testing.assert_array_equal(np.asarray(rows["fold"]), direct.folds)
    assert not np.array_equal(np.asarray(rows["score_finetuned"]), np.asarray(rows["score"]))
    # ll_split holds out what the splitter picks from the fine-tuned scores, not the prompted ones.
    _, dev, test = LikelihoodSplitter(validation_size=9, test_size=9, random_state=42).split(
        direct.scores, labels=source.labels())
    held_out = set(np.asarray(rows["source_id"])[np.concatenate([dev, test])].tolist())
    assert set(loaded["validation"]["source_id"]) | set(loaded["test"]["source_id"]) == held_out
    # verify's level 2 re-derives all eight configs from the rows' score and score_finetuned.
    from split_builders.publishing.verify import verify

    report = verify(str(out), load=False)
    assert report.ok and {f.config for f in report.findings if f.level == 2 and f.status == "identical"} == {
        "ll_split_pt", "ll_split_pt_len", "ll_split_pt_reverse", "ll_split", "ll_split_len", "ll_split_reverse",
        "random", "length"}


def test_finetune_and_given_scores_exclude_each_other(tmp_path, capsys):
    from split_builders.cli import main

    np.save(tmp_path / "s.npy", np.zeros(1964))
    code = main(["likelihood", "--scores", str(tmp_path / "s.npy"), "--finetune", "--out", str(tmp_path / "o")])
    assert code == 2 and "either --finetune or --scores" in capsys.readouterr().err


@pytest.mark.parametrize("verbose", [False, True])
def test_each_evaluation_is_one_line_and_raw_trainer_logs_need_verbose(tiny_ref, tmp_path, capsys, verbose):
    prompts, queries = pairs(24)
    finetune_scores(prompts, queries, model_ref=tiny_ref, verbose=verbose, **fast(tmp_path))
    captured = capsys.readouterr()
    output = captured.out + captured.err
    # max_steps 4, evaluation every 2 steps, 2 folds: four summary lines.
    lines = [line for line in output.splitlines() if line.startswith("fold ")]
    assert [line.split(":")[0] for line in lines] == ["fold 1/2, step 2/4", "fold 1/2, step 4/4",
                                                      "fold 2/2, step 2/4", "fold 2/2, step 4/4"]
    assert all("held-out loss" in line for line in lines)
    assert ("{'eval_loss'" in output) == verbose  # the Trainer's raw dicts
