"""Where the metric modules are, and loading them: ``evaluate.load`` of a metric folder for the numbers,
or one of its plain helper modules (pass_rate's ``suite_adapters``, which ``resplit behavioural`` shares
with the metric: the metric never imports resplit, resplit may import the metric's modules).

The folder holding ``pass_rate/``, ``g_score/`` and ``concurrence/``: ``--metrics-dir``, else
``$RESPLIT_METRICS_DIR``, else ``metrics/`` beside the package in a checkout (where ``pip install -e .``
leaves it), else ``<prefix>/share/resplit/metrics`` (where a wheel installs them, see setup.cfg).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from split_builders.errors import InvalidParameterError

METRICS_DIR_ENV = "RESPLIT_METRICS_DIR"


def metrics_dir(option: str | None = None) -> Path:
    """The folder holding ``pass_rate/``, ``g_score/`` and ``concurrence/``."""
    given = option or os.environ.get(METRICS_DIR_ENV)
    if given:
        folder = Path(given)
        if not folder.is_dir():
            where = "--metrics-dir" if option else f"${METRICS_DIR_ENV}"
            raise InvalidParameterError(f"{where} {given!r} is not a folder")
        return folder
    checkout = Path(__file__).resolve().parents[1] / "metrics"
    installed = Path(sys.prefix) / "share" / "resplit" / "metrics"  # where a wheel puts them (setup.cfg)
    for folder in (checkout, installed):
        if folder.is_dir():
            return folder
    raise InvalidParameterError(
        f"no metrics/ folder next to the split_builders package ({checkout}) nor in {installed}: pass "
        f"--metrics-dir or set {METRICS_DIR_ENV} to a checkout's metrics/ folder")


def load_metric(name: str, option: str | None = None):
    """``evaluate.load`` of one metric folder (imported lazily: evaluate is slow to import)."""
    folder = metrics_dir(option) / name
    if not (folder / f"{name}.py").is_file():
        raise InvalidParameterError(f"{folder} has no {name}.py")
    import evaluate

    return evaluate.load(str(folder))


def metric_module(name: str, module: str, option: str | None = None):
    """One plain module of a metric folder (``<name>/<module>.py``, e.g. pass_rate's ``suite_adapters``)
    imported from its path, without ``evaluate``: code a builder shares with the metric."""
    path = metrics_dir(option) / name / f"{module}.py"
    if not path.is_file():
        raise InvalidParameterError(f"{path} is missing: the {name} metric folder is incomplete")
    return _import_file(path.resolve())


@functools.cache
def _import_file(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"resplit_metrics.{path.parent.name}.{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
