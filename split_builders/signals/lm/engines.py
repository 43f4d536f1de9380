"""Which engine computes s(x) for a precision: PyTorch for float32 / bfloat16 / float16, CTranslate2 for int8.

The int8 path is for CPUs: CTranslate2 (the optional extra ``resplit[ct2]``) converts the model once into
int8 weights (kept in resplit's cache) and runs int8 matrix products with int8 activations quantised per
token (VNNI on CPUs that have it). Llama-shaped models are smoothed first (SmoothQuant,
:mod:`~split_builders.signals.lm.smoothing`), which halves the int8 error of s(x). It scores the very same
token sequences as the PyTorch scorer (``BOS prompt | query EOS`` from
:func:`~split_builders.signals.lm.scoring.encode`, in the same batch plan) and sums the same log-probabilities (query tokens and EOS). Measured against PyTorch's own int8 (``torchao``'s
dynamic int8 linear layers and the deprecated ``torch.ao.quantization.quantize_dynamic``), CTranslate2 was
2.4x faster at the same agreement with float32, and ``quantize_dynamic`` lost the ranking (Spearman 0.77):
see ``benchmarks/scoring.py --int8``. Scores of the int8 path differ from float32 by more than rounding, so
the engine and its version are part of the score cache key and of a release's provenance.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from split_builders.errors import InvalidParameterError

DTYPES = ("float32", "bfloat16", "float16", "int8")
INT8_ENGINE = "ctranslate2"
CT2_INSTALL = "pip install 'resplit[ct2]'"


def engine_of(dtype: str) -> str:
    """The engine that scores in ``dtype`` ("torch" or "ctranslate2"); an unknown precision, or int8
    without CTranslate2 installed, is one line."""
    if dtype not in DTYPES:
        raise InvalidParameterError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "int8":
        return "torch"
    if importlib.util.find_spec("ctranslate2") is None:
        raise InvalidParameterError(f"--dtype int8 scores with CTranslate2, which is not installed: {CT2_INSTALL} "
                                    "(or use --dtype bfloat16, the fast mode without it)")
    return INT8_ENGINE


def engine_record(dtype: str) -> dict:
    """What a release's provenance records about the engine: nothing for PyTorch's float precisions (as
    before), the engine, its version and the quantisation for int8."""
    engine = engine_of(dtype)
    if engine == "torch":
        return {}
    from importlib.metadata import version

    from split_builders.signals.lm.smoothing import ALPHA, CALIBRATION, SMOOTHABLE

    return {"engine": engine, "engine_version": version("ctranslate2"),
            "quantization": "CTranslate2 compute_type int8: int8 weights, activations quantised to int8 "
                            "dynamically",
            "smoothing": f"SmoothQuant alpha {ALPHA} folded in before conversion for {'/'.join(SMOOTHABLE)} models, "
                         f"channel maxima from {CALIBRATION['sequences']} x {CALIBRATION['length']} tokens the model "
                         f"sampled (seed {CALIBRATION['seed']})"}


def ct2_folder(model_ref) -> Path:
    """The model converted to CTranslate2 int8 in resplit's cache (converted once, written atomically)."""
    import ctranslate2
    from filelock import FileLock

    from split_builders.cache import cache_root
    from split_builders.signals.lm.models import ensure_local, weight_bars

    smoothing = engine_record("int8")["smoothing"]
    tag = hashlib.sha256(f"{model_ref.identity}|int8|{ctranslate2.__version__}|{smoothing}".encode()).hexdigest()[:16]
    target = cache_root() / "models" / f"ct2-int8-{tag}"
    if (target / "model.bin").is_file():
        return target
    source = ensure_local(model_ref)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.convert.lock")):
        if (target / "model.bin").is_file():  # another process converted it meanwhile
            return target
        staging = Path(tempfile.mkdtemp(prefix=".ct2-", dir=target.parent))
        try:
            with weight_bars(False):  # transformers' loading and saving bars, for the smoothed copy and the converter
                ctranslate2.converters.TransformersConverter(str(_smoothed(model_ref, source, staging))).convert(
                    str(staging / "model"), quantization="int8")
            if target.exists():  # an incomplete earlier conversion of ours
                shutil.rmtree(target)
            os.replace(staging / "model", target)
        except (ValueError, NotImplementedError) as error:  # an architecture CTranslate2 does not convert
            raise InvalidParameterError(f"CTranslate2 cannot convert {model_ref.name!r} for --dtype int8: "
                                        f"{str(error).splitlines()[0][:200]}; use --dtype bfloat16") from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _smoothed(model_ref, source: Path, staging: Path) -> Path:
    """The model folder CTranslate2 converts: ``source`` itself, or, for an architecture SmoothQuant's folding knows
    (:mod:`~split_builders.signals.lm.smoothing`), a smoothed float32 copy saved in ``staging`` (the model is loaded
    only then)."""
    import torch
    from transformers import AutoConfig

    from split_builders.signals.lm.models import load_model
    from split_builders.signals.lm.smoothing import smooth_for_int8, smoothable

    if not smoothable(AutoConfig.from_pretrained(source, trust_remote_code=False)):
        return source
    loaded = load_model(model_ref, dtype=torch.float32)
    smooth_for_int8(loaded.model, loaded.tokenizer)
    loaded.model.save_pretrained(staging / "smoothed")
    loaded.tokenizer.save_pretrained(staging / "smoothed")
    return staging / "smoothed"


class CT2Scorer:
    """s(x) from a CTranslate2 int8 generator (the model converted once by :func:`ct2_folder`): ``score_batch`` gives log p of every token after the first,
    of which the query's and EOS's are summed (the definition of
    :class:`~split_builders.signals.lm.scoring.LikelihoodScorer`)."""

    def __init__(self, model_ref, *, device=None, context_length, plan=None):
        import ctranslate2
        import torch
        from transformers import AutoConfig, AutoTokenizer

        if device is not None and torch.device(device).type != "cpu":
            raise InvalidParameterError("--dtype int8 is the CPU path; on a GPU use --dtype bfloat16 (or auto)")
        folder = ct2_folder(model_ref)
        self.tokenizer = AutoTokenizer.from_pretrained(model_ref.path, trust_remote_code=False)
        config = AutoConfig.from_pretrained(model_ref.path, trust_remote_code=False)
        # the context as the PyTorch scorer reads it (scoring.model_context_length, given: no import circle)
        self.max_length = context_length(SimpleNamespace(config=config))
        self.generator = ctranslate2.Generator(str(folder), device="cpu", compute_type="int8",
                                               intra_threads=torch.get_num_threads())
        self._plan = plan  # encoded -> the batches (scoring's padded plan: CTranslate2 pads its batches itself)

    def plan(self, encoded) -> list:
        """The batches of ``encoded``, fixed before any sharding (as :meth:`LikelihoodScorer.plan`)."""
        return self._plan(encoded)

    def score_batch(self, batch) -> np.ndarray:
        """s(x) of each example of one batch, as float64."""
        tokens = [self.tokenizer.convert_ids_to_tokens(e.ids) for e in batch]
        results = self.generator.score_batch(tokens, max_batch_size=0, max_input_length=0)
        scores = np.empty(len(batch))
        for row, (example, result) in enumerate(zip(batch, results)):
            if len(result.log_probs) != len(example.ids) - 1:  # one log-prob per token after the first
                raise RuntimeError(f"CTranslate2 scored {len(result.log_probs)} of {len(example.ids) - 1} tokens")
            scores[row] = float(np.sum(np.asarray(result.log_probs[example.query_start - 1:], dtype=np.float64)))
        return scores
