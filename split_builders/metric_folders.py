"""Where the metric modules are, and loading them: ``evaluate.load`` of a metric folder for the numbers,
or one of its plain helper modules (pass_rate's ``suite_adapters``, which ``resplit behavioural`` shares
with the metric: the metric never imports resplit, resplit may import the metric's modules).

The folder holding ``pass_rate/``, ``g_score/`` and ``concurrence/``: ``--metrics-dir``, else
``$RESPLIT_METRICS_DIR``, else ``metrics/`` beside the package in a checkout (where ``pip install -e .``
leaves it), else where the installed distribution put them: the wheel's data files
(``share/resplit/metrics``, see setup.cfg) found through ``importlib.metadata``'s record of the
distribution's files, so that any installation scheme works (a virtual environment, ``pip install
--user``, ``--prefix``, ``--target``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from split_builders.errors import InvalidParameterError

METRICS_DIR_ENV = "RESPLIT_METRICS_DIR"
DISTRIBUTION = "resplit"
# Where setup.cfg's data_files put the metric folders, relative to the installation scheme's data folder.
INSTALLED = ("share", "resplit", "metrics")
# The file whose presence marks a metrics folder.
MARKER = ("pass_rate", "pass_rate.py")


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
    if checkout.joinpath(*MARKER).is_file():
        return checkout
    installed = installed_metrics_dir()
    if installed is not None:
        return installed
    raise InvalidParameterError(
        f"no metrics/ folder next to the split_builders package ({checkout}) nor among the installed {DISTRIBUTION} "
        f"distribution's files ({'/'.join(INSTALLED)}): pass --metrics-dir or set {METRICS_DIR_ENV} to a "
        "checkout's metrics/ folder")


def installed_metrics_dir() -> Path | None:
    """The metrics folder an installed ``resplit`` distribution brought (its data files), located through
    the files its installation recorded; None when no installed distribution has one."""
    from importlib import metadata

    wanted = (*INSTALLED, *MARKER)
    for distribution in metadata.distributions(name=DISTRIBUTION):  # an editable install lists none
        for file in distribution.files or ():
            if tuple(file.parts[-len(wanted):]) == wanted:
                marker = Path(distribution.locate_file(file)).resolve()
                if marker.is_file():
                    return marker.parents[1]
    return None


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
