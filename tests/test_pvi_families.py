"""The predictive families: the CPU default learns and is deterministic; the transformers family's plumbing.

No pretrained sequence classifier is available offline, so the transformers family is exercised with a
tiny randomly initialised BERT and a word-level tokenizer built here (plumbing only, not quality).
"""

import numpy as np
import pytest

from split_builders.errors import InvalidParameterError, ModelLoadError
from split_builders.signals.pvi.crossfit import CrossFitPVI
from split_builders.signals.pvi.families import HashedNgramFamily, TransformersFamily, hashed_features, make_family


@pytest.fixture(scope="module")
def snli():
    from loading_scripts.snli import sample

    rows = sample().dataset
    return list(zip(rows["premise"], rows["hypothesis"])), np.asarray(rows["label"])


def test_features_are_field_tagged_and_stable_across_processes():
    a = hashed_features(("A dog runs.", "A dog sleeps."), 2 ** 18)
    b = hashed_features(("A dog sleeps.", "A dog runs."), 2 ** 18)
    assert a != b  # which field a word is in matters
    assert sorted(a) != sorted(b)
    # crc32, not the salted hash(): fixed values
    import zlib

    assert zlib.crc32(b"0:a") % 2 ** 18 == a[0]


def test_hashed_family_learns_snli_above_chance_and_is_deterministic(snli):
    records, labels = snli
    groups = [r[0] for r in records]
    scorer = CrossFitPVI(HashedNgramFamily(), folds=3)
    first = scorer.compute(records, labels, 3, groups=groups)
    second = CrossFitPVI(HashedNgramFamily(), folds=3).compute(records, labels, 3, groups=groups)
    assert np.array_equal(first.pvi, second.pvi)
    assert first.correct.mean() > 0.45  # chance is about 1/3 on three balanced labels
    assert first.v_information > 0
    # a model that cannot tell which label is right earns PVI <= 0 on average for its wrong answers
    assert first.pvi[~first.correct].mean() < 0 < first.pvi[first.correct].mean()


def test_log_probabilities_are_normalised(snli):
    records, labels = snli
    model = HashedNgramFamily(epochs=1).fit(records[:300], labels[:300], 3)
    log_proba = model.predict_log_proba(records[300:400])
    assert log_proba.shape == (100, 3)
    np.testing.assert_allclose(np.exp(log_proba).sum(axis=1), 1.0, rtol=1e-9)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_buckets": 0}, "n_buckets must be a positive integer"),
    ({"learning_rate": -1}, "learning_rate must be a positive number"),
    ({"calibration_size": 1.0}, r"calibration_size must be a fraction in \[0, 1\)"),
])
def test_hashed_family_validates_eagerly(kwargs, message):
    with pytest.raises(InvalidParameterError, match=message):
        HashedNgramFamily(**kwargs)


def test_make_family_names():
    assert isinstance(make_family("hashed"), HashedNgramFamily)
    with pytest.raises(InvalidParameterError, match="needs a model"):
        make_family("transformers")
    with pytest.raises(InvalidParameterError, match="known: hashed, transformers"):
        make_family("svm")


@pytest.fixture(scope="module")
def tiny_classifier(tmp_path_factory, snli):
    """A 1-layer random BERT with a word-level tokenizer over the SNLI sample's words."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    records, _ = snli
    words = sorted({w for r in records[:400] for text in r for w in text.lower().split()})
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {w: i for i, w in enumerate(specials + words)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]")
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=2)
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_transformers_family_plumbing_with_a_tiny_random_model(tiny_classifier, snli, tmp_path):
    records, labels = snli
    family = TransformersFamily(tiny_classifier, epochs=1, batch_size=16, max_length=32, learning_rate=1e-3)
    result = CrossFitPVI(family, folds=2, null="trained", cache_dir=tmp_path).compute(
        records[:48], labels[:48], 3, groups=[r[0] for r in records[:48]])
    assert result.pvi.shape == (48,) and np.isfinite(result.pvi).all()
    assert np.array_equal(result.pvi, result.h_yb - result.h_yx)
    # a fresh 3-way head replaced the saved 2-way one; the null model gives one value per label
    for label in range(3):
        assert np.ptp(result.h_yb[(labels[:48] == label) & (result.fold == 0)]) < 1e-9
    assert len(list(tmp_path.rglob("fold*.entry"))) == 2


def test_transformers_family_reports_a_missing_model(tmp_path):
    family = TransformersFamily(str(tmp_path / "nothing-here"))
    with pytest.raises(ModelLoadError, match="cannot load sequence classifier"):
        family.fit([("a", "b")], [0], 2)


# ---- hashed bags: hashing once and selecting rows as arrays gives what hashing per call gave ----


def test_bags_select_rows_as_hashing_them_again_would(snli):
    from split_builders.signals.pvi.families import HashedBags

    records, _ = snli
    records = records[:200] + [("", ""), ("Only one field has words.", "")]
    bags = HashedBags.of(records, 2 ** 18)
    for rows in ([5, 3, 201, 200, 3], list(range(0, 202, 7)), []):
        taken, direct = bags.take(rows), HashedBags.of([records[i] for i in rows], 2 ** 18)
        assert np.array_equal(taken.ids, direct.ids) and np.array_equal(taken.offsets, direct.offsets)
    assert bags.take([3]).ids.tolist() == hashed_features(records[3], 2 ** 18)


class _RecordsOnly:
    """The hashed family without ``encode``: cross-fitting hands it plain records per fold."""

    def __init__(self, family):
        self.family = family

    def fit(self, records, labels, n_classes):
        assert isinstance(records, list)
        return self.family.fit(records, labels, n_classes)

    def fingerprint(self):
        return self.family.fingerprint()


def test_cross_fitting_on_encoded_records_equals_fitting_on_records(snli):
    records, labels = snli
    records, labels = records[:300], labels[:300]
    groups = [r[0] for r in records]
    encoded = CrossFitPVI(HashedNgramFamily(epochs=2), folds=3).compute(records, labels, 3, groups=groups)
    plain = CrossFitPVI(_RecordsOnly(HashedNgramFamily(epochs=2)), folds=3).compute(records, labels, 3,
                                                                                      groups=groups)
    for name in ("pvi", "h_yx", "h_yb", "fold", "correct"):
        assert np.array_equal(getattr(encoded, name), getattr(plain, name)), name
