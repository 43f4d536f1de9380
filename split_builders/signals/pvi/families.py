"""Predictive families for PVI: what ``V`` is in V-information.

A family is an object with

* ``fit(records, labels, n_classes)`` -> a fitted model with ``predict_log_proba(records)``
  (natural-log probabilities, shape ``(n, n_classes)``), leaving the family itself unchanged;
* ``fingerprint()`` -> a JSON-able dict that identifies it (the cache key of cross-fitted scores);
* optionally ``encode(records)`` -> the records prepared once (an object with ``take(rows)`` that
  ``fit`` and ``predict_log_proba`` accept in place of records): cross-fitting then prepares each
  record once instead of once per fold.

``records`` are tuples of text fields (``(premise, hypothesis)`` for NLI); a null input is a tuple
of empty strings. Two built-ins:

* :class:`HashedNgramFamily` (default): a linear model over hashed, field-tagged word unigrams and
  bigrams plus premise/hypothesis overlap features, trained with torch on the CPU in seconds.
  It is much weaker than a fine-tuned transformer, so its I_V values are lower (see the README).
* :class:`TransformersFamily`: any ``transformers`` sequence classifier fine-tuned with ``Trainer``,
  the family of the PVI and CURRICULUM papers (use a GPU).
"""

from __future__ import annotations

import re
import tempfile
import zlib

import numpy as np

from split_builders.splits import check_number, check_random_state
from split_builders.errors import InvalidParameterError, ModelLoadError

TOKEN = re.compile(r"\w+|[^\w\s]")


def hashed_features(record, n_buckets: int) -> list[int]:
    """Bucket ids of one record's features.

    Every field contributes its lowercased word unigrams and bigrams, tagged with the field's
    position (so "dog" in the premise and in the hypothesis are different features). With two or
    more fields, the last field's words are also tagged by whether the first field contains them:
    a bag of words cannot otherwise see the overlap that most NLI heuristics rest on.
    crc32 rather than ``hash()``: Python salts string hashes per process, which would break
    determinism across runs.
    """
    return list(map(_Buckets(n_buckets).__getitem__, _feature_strings(record)))


def _feature_strings(record) -> list[str]:
    """The feature strings of one record (see :func:`hashed_features`), in a fixed order."""
    features = []
    tokens = [TOKEN.findall(field.lower()) for field in record]
    for position, words in enumerate(tokens):
        tag = f"{position}:"
        features += [tag + w for w in words]
        features += [f"{tag}{a} {b}" for a, b in zip(words, words[1:])]
    if len(tokens) >= 2:
        first = set(tokens[0])
        last = tokens[-1]
        inside = [w in first for w in last]
        features += [("in:" if i else "out:") + w for i, w in zip(inside, last)]
        if last:
            features.append(f"overlap:{int(sum(inside) / len(last) * 4)}")  # quartile of the hypothesis covered
    return features


class _Buckets(dict):
    """feature string -> bucket id, each distinct string hashed once (words repeat across rows)."""

    def __init__(self, n_buckets: int):
        super().__init__()
        self.n_buckets = n_buckets

    def __missing__(self, feature: str) -> int:
        bucket = self[feature] = zlib.crc32(feature.encode("utf-8")) % self.n_buckets
        return bucket


class HashedBags:
    """Records as hashed feature bags: flat bucket ids (``ids``) and where each record's bag starts
    (``offsets``), the ``EmbeddingBag`` input format. ``take(rows)`` selects records as whole
    arrays, so cross-fitting hashes every record once, not once per fold."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, n_buckets: int):
        self.ids, self.offsets, self.n_buckets = ids, offsets, n_buckets
        self.lengths = np.diff(np.append(offsets, ids.size))

    @classmethod
    def of(cls, records, n_buckets: int) -> "HashedBags":
        buckets, ids, lengths = _Buckets(n_buckets), [], []
        for record in records:
            features = _feature_strings(record)
            ids += map(buckets.__getitem__, features)
            lengths.append(len(features))
        lengths = np.asarray(lengths, dtype=np.int64)
        return cls(np.asarray(ids, dtype=np.int64), _starts(lengths), n_buckets)

    def __len__(self) -> int:
        return self.offsets.size

    def take(self, rows) -> "HashedBags":
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        return HashedBags(self.ids[_positions(self.offsets[rows], lengths)], _starts(lengths), self.n_buckets)


def _starts(lengths: np.ndarray) -> np.ndarray:
    """Where each of consecutive runs of ``lengths`` starts."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def _positions(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[i] .. starts[i] + lengths[i] - 1`` of every run, concatenated."""
    total = int(lengths.sum())
    return np.repeat(starts - _starts(lengths), lengths) + np.arange(total, dtype=np.int64)


def _bags(records, n_buckets) -> HashedBags:
    """Records as :class:`HashedBags` (records already hashed with ``n_buckets`` pass through)."""
    if isinstance(records, HashedBags):
        if records.n_buckets != n_buckets:
            raise InvalidParameterError(f"bags hashed into {records.n_buckets} buckets, the model has {n_buckets}")
        return records
    return HashedBags.of(records, n_buckets)


class HashedNgramFamily:
    """Linear model over hashed n-gram features, trained with torch (the fast CPU family).

    Parameters
    ----------
    n_buckets : int, default 2**18
        Hash buckets of the feature space.
    epochs : int, default 3
    batch_size : int, default 64
    learning_rate : float, default 0.02
        Adam's step size.
    weight_decay : float, default 1e-6
        L2 penalty.
    calibration_size : float, default 0.1
        Share of the training rows held out to choose the best epoch and a softmax temperature
        (both by held-out log-loss); 0 trains on every row for ``epochs`` epochs.
    random_state : int, default 42
        Seeds the initialisation and the batch order.
    """

    def __init__(self, *, n_buckets: int = 2 ** 18, epochs: int = 3, batch_size: int = 64,
                 learning_rate: float = 0.02, weight_decay: float = 1e-6, calibration_size: float = 0.1,
                 random_state: int = 42):
        self.n_buckets = check_number(n_buckets, "n_buckets", integer=True, minimum=1)
        self.epochs = check_number(epochs, "epochs", integer=True, minimum=1)
        self.batch_size = check_number(batch_size, "batch_size", integer=True, minimum=1)
        self.learning_rate = check_number(learning_rate, "learning_rate", minimum=0, exclusive=("minimum",))
        self.weight_decay = check_number(weight_decay, "weight_decay", minimum=0)
        self.calibration_size = check_number(calibration_size, "calibration_size", minimum=0, maximum=1,
                                             exclusive=("maximum",))
        self.random_state = check_random_state(random_state)

    def fingerprint(self) -> dict:
        return {"family": "hashed-ngram-linear", "n_buckets": self.n_buckets, "epochs": self.epochs,
                "batch_size": self.batch_size, "learning_rate": self.learning_rate,
                "weight_decay": self.weight_decay, "calibration_size": self.calibration_size,
                "seed": self.random_state}

    def encode(self, records) -> HashedBags:
        """Records hashed once into feature bags; ``fit`` and ``predict_log_proba`` take them as they
        take records, and ``take(rows)`` selects rows (cross-fitting hashes each record once)."""
        return HashedBags.of(records, self.n_buckets)

    def fit(self, records, labels, n_classes: int) -> "_FittedHashed":
        import torch

        threads = torch.get_num_threads()
        # One thread: tiny sparse batches gain nothing from more, they lose a lot on shared cores,
        # and the result cannot then depend on the machine's core count.
        torch.set_num_threads(1)
        try:
            return self._fit(records, labels, n_classes)
        finally:
            torch.set_num_threads(threads)

    def _fit(self, records, labels, n_classes):
        import torch

        labels = np.asarray(labels, dtype=np.int64)
        bags = _bags(records, self.n_buckets)
        ids, offsets, lengths = bags.ids, bags.offsets, bags.lengths
        rng = np.random.RandomState(self.random_state)
        # A held-out slice of the training rows picks the epoch and a softmax temperature. PVI is a
        # log-probability: an over-confident linear model turns every error into many negative bits,
        # so calibration matters more here than accuracy does.
        shuffled = rng.permutation(labels.size)
        n_calib = int(round(self.calibration_size * labels.size)) if labels.size >= 20 else 0
        calib, train = shuffled[:n_calib], shuffled[n_calib:]
        torch.manual_seed(self.random_state or 0)
        bag = torch.nn.EmbeddingBag(self.n_buckets, n_classes, mode="sum")
        torch.nn.init.zeros_(bag.weight)  # zero weights start at the uniform prediction
        bias = torch.nn.Parameter(torch.zeros(n_classes))
        optimizer = torch.optim.Adam([bag.weight, bias], lr=self.learning_rate, weight_decay=self.weight_decay)
        ids_t = torch.from_numpy(ids)
        best = (np.inf, bag.weight.detach().clone(), bias.detach().clone())
        for _ in range(self.epochs):
            order = train[rng.permutation(train.size)]
            for start in range(0, order.size, self.batch_size):
                rows = order[start:start + self.batch_size]
                batch_ids, batch_offsets = _gather(ids_t, offsets, lengths, rows)
                logits = bag(batch_ids, batch_offsets) + bias
                loss = torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels[rows]))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            if n_calib:
                nll = _nll(self._logits(bag.weight, bias, ids_t, offsets, lengths, calib), labels[calib], 1.0)
                if nll < best[0]:
                    best = (nll, bag.weight.detach().clone(), bias.detach().clone())
        if not n_calib:
            return _FittedHashed(self.n_buckets, bag.weight.detach().clone(), bias.detach().clone(), 1.0)
        _, weight, bias = best
        logits = self._logits(weight, bias, ids_t, offsets, lengths, calib)
        temperature = min(TEMPERATURES, key=lambda t: _nll(logits, labels[calib], t))
        return _FittedHashed(self.n_buckets, weight, bias, float(temperature))

    @staticmethod
    def _logits(weight, bias, ids_t, offsets, lengths, rows):
        import torch

        batch_ids, batch_offsets = _gather(ids_t, offsets, lengths, rows)
        with torch.no_grad():
            return (torch.nn.functional.embedding_bag(batch_ids, weight, batch_offsets, mode="sum") + bias).double()


TEMPERATURES = tuple(float(t) for t in np.exp(np.linspace(np.log(0.25), np.log(20.0), 89)))


def _nll(logits, labels, temperature: float) -> float:
    import torch

    return float(torch.nn.functional.cross_entropy(logits / temperature, torch.from_numpy(labels)))


def _gather(ids_t, offsets, lengths, rows):
    """The bags of ``rows`` as EmbeddingBag input (ids, offsets), gathered as whole arrays."""
    import torch

    batch_lengths = lengths[rows]
    positions = _positions(offsets[rows], batch_lengths)
    return ids_t[torch.from_numpy(positions)], torch.from_numpy(_starts(batch_lengths))


class _FittedHashed:
    def __init__(self, n_buckets, weight, bias, temperature):
        self.n_buckets, self.weight, self.bias, self.temperature = n_buckets, weight, bias, temperature

    def predict_log_proba(self, records) -> np.ndarray:
        import torch

        bags = _bags(records, self.n_buckets)
        with torch.no_grad():
            logits = torch.nn.functional.embedding_bag(torch.from_numpy(bags.ids), self.weight,
                                                       torch.from_numpy(bags.offsets), mode="sum") + self.bias
            return torch.log_softmax(logits.double() / self.temperature, dim=1).numpy()


class TransformersFamily:
    """A ``transformers`` sequence classifier fine-tuned with ``Trainer`` (the papers' family).

    Each ``fit`` starts from ``model`` with a fresh classification head of ``n_classes`` outputs.
    Records with two fields are encoded as a text pair (premise, hypothesis), one field as a text.
    ``trust_remote_code`` is never enabled.

    Parameters
    ----------
    model : str
        Hub id or local folder of a model and its tokenizer (CURRICULUM used
        ``ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli``).
    revision : str, optional
    epochs : int, default 3
    batch_size : int, default 8
    learning_rate : float, default 1e-5
    max_length : int, default 128
    random_state : int, default 42
    """

    def __init__(self, model: str, *, revision: str | None = None, epochs: int = 3, batch_size: int = 8,
                 learning_rate: float = 1e-5, max_length: int = 128, random_state: int = 42):
        if not isinstance(model, str) or not model:
            raise InvalidParameterError(f"model must be a Hub id or a folder, got {model!r}")
        self.model = model
        self.revision = revision
        self.epochs = check_number(epochs, "epochs", integer=True, minimum=1)
        self.batch_size = check_number(batch_size, "batch_size", integer=True, minimum=1)
        self.learning_rate = check_number(learning_rate, "learning_rate", minimum=0, exclusive=("minimum",))
        self.max_length = check_number(max_length, "max_length", integer=True, minimum=1)
        self.random_state = check_random_state(random_state)

    def fingerprint(self) -> dict:
        return {"family": "transformers", "model": self.model, "revision": self.revision, "epochs": self.epochs,
                "batch_size": self.batch_size, "learning_rate": self.learning_rate,
                "max_length": self.max_length, "seed": self.random_state}

    def _load(self, n_classes):
        from pathlib import Path

        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        path = Path(self.model).expanduser()
        if (path.is_dir() and not (path / "config.json").is_file()) or (
                not path.is_dir() and (path.exists() or self.model.startswith((".", "/", "~")))):
            # a path (as the language models' --lm reads one), not a Hub id: said as such, not by the Hub's id rule
            what = ("a folder without config.json" if path.is_dir() else "a file" if path.exists()
                    else "nothing is there")
            raise ModelLoadError(f"cannot load sequence classifier {self.model!r} (--model): not a folder with a "
                                 f"transformers model ({what}); give a model folder or a Hub id (org/name)")
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model, revision=self.revision, trust_remote_code=False)
            model = AutoModelForSequenceClassification.from_pretrained(
                self.model, revision=self.revision, num_labels=n_classes, ignore_mismatched_sizes=True,
                trust_remote_code=False)
        except (OSError, ValueError) as error:
            detail = " ".join(str(error).split())  # transformers' message runs over several lines: one line
            raise ModelLoadError(f"cannot load sequence classifier {self.model!r}: {detail}") from None
        return tokenizer, model

    def _encode(self, tokenizer, records, labels=None):
        import datasets

        columns = {f"f{i}": [r[i] for r in records] for i in range(len(records[0]))}
        if labels is not None:
            columns["labels"] = [int(v) for v in labels]
        data = datasets.Dataset.from_dict(columns)
        fields = [c for c in columns if c != "labels"]

        def tokenize(batch):
            texts = [batch[f] for f in fields[:2]]
            return tokenizer(*texts, truncation=True, max_length=self.max_length)

        return data.map(tokenize, batched=True, remove_columns=fields)

    def fit(self, records, labels, n_classes: int) -> "_FittedTransformer":
        import torch
        from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

        tokenizer, model = self._load(n_classes)
        output = tempfile.mkdtemp(prefix="resplit-pvi-")
        args = TrainingArguments(output_dir=output, num_train_epochs=self.epochs,
                                 per_device_train_batch_size=self.batch_size,
                                 per_device_eval_batch_size=max(self.batch_size, 32),
                                 learning_rate=self.learning_rate, seed=self.random_state or 0,
                                 save_strategy="no", logging_strategy="no", report_to=[],
                                 disable_tqdm=True, dataloader_pin_memory=torch.cuda.is_available())
        trainer = Trainer(model=model, args=args, train_dataset=self._encode(tokenizer, records, labels),
                          data_collator=DataCollatorWithPadding(tokenizer))
        trainer.train()
        return _FittedTransformer(self, tokenizer, trainer)


class _FittedTransformer:
    def __init__(self, family, tokenizer, trainer):
        self.family, self.tokenizer, self.trainer = family, tokenizer, trainer

    def predict_log_proba(self, records) -> np.ndarray:
        import torch

        logits = self.trainer.predict(self.family._encode(self.tokenizer, records)).predictions
        return torch.log_softmax(torch.as_tensor(np.asarray(logits), dtype=torch.float64), dim=1).numpy()


def make_family(name: str = "hashed", *, model: str | None = None, random_state: int = 42, **options):
    """A built-in family by name: ``hashed`` (default, CPU) or ``transformers`` (needs ``model``)."""
    if name == "hashed":
        return HashedNgramFamily(random_state=random_state, **options)
    if name == "transformers":
        if model is None:
            raise InvalidParameterError("the transformers family needs a model (--model HUB_ID_OR_FOLDER)")
        return TransformersFamily(model, random_state=random_state, **options)
    raise InvalidParameterError(f"unknown family {name!r}; known: hashed, transformers")
