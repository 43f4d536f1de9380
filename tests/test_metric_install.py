"""The built wheel, installed with ``pip install --user``, finds its own metric folders.

The wheel is built from a copy of the package's sources (setup.cfg's ``data_files`` put the metric folders
under ``share/resplit/metrics``), installed with the base interpreter's ``pip install --user --no-deps
--no-index`` into a temporary ``PYTHONUSERBASE`` and ``HOME``, and its ``resplit`` script runs from a folder
outside the checkout. The dependencies come from this environment's site-packages on ``PYTHONPATH``: a
folder on ``PYTHONPATH`` is not a site folder, so the editable install's path hook (a ``.pth`` file) is not
run and ``split_builders`` is imported from the user site alone, which the first test checks.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("setup.cfg", "pyproject.toml", "README.md", "split_builders", "loading_scripts", "metrics")
SUITE = {"suite": "toy", "tests": [
    {"name": "positive words", "type": "MFT", "capability": "Vocabulary", "agg_fn": "all",
     "expectation": {"fn": "eq", "value": None}, "nested": False, "labels": 2, "meta": None,
     "data": ["good", "nice", "fine", "great"]},
    {"name": "typos", "type": "INV", "capability": "Robustness", "agg_fn": "all_except_first",
     "expectation": {"fn": "inv", "tolerance": 0.1}, "nested": True, "labels": None, "meta": None,
     "data": [["great", "graet"], ["bad", "bda"], ["fine", "fnie"], ["nice", "ncie"]]}]}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel, the user base and ``(stdout, stderr, exit status)`` of each command run from the user install."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(work / "wheels"), str(source)], check=True, capture_output=True, timeout=300)
    wheel = next((work / "wheels").glob("resplit-*.whl"))
    home, userbase = work / "home", work / "user"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONUSERBASE": str(userbase),
           "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    base = getattr(sys, "_base_executable", sys.executable)  # user installs are off inside a virtual environment
    done = subprocess.run([base, "-m", "pip", "install", "--user", "--no-deps", "--no-index",
                           "--no-warn-script-location", "-q", str(wheel)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    env.update(PYTHONPATH=sysconfig.get_paths()["purelib"], HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", HF_HOME=str(home / "hf"), MPLBACKEND="Agg")
    script = next(userbase.glob("bin/resplit"))
    # The three runs at once (each spends most of its time importing): the import check, a small behavioural
    # build and pass-rate on the suite.
    suite = work / "toy_suite.json.gz"
    with gzip.open(suite, "wt") as handle:
        json.dump(SUITE, handle)
    predictions = work / "predictions.txt"
    predictions.write_text("\n".join(["2", "2", "0", "2"] + ["1"] * 8) + "\n")
    commands = {
        "import": [base, "-c", "import split_builders, split_builders.metric_folders as m; "
                               "print(split_builders.__file__); print(m.metrics_dir())"],
        "behavioural": [script, "behavioural", "--source", suite, "--out", work / "release", "--null-splits", "0",
                        "--no-progress"],
        "pass-rate": [script, "pass-rate", "--suite", suite, "--predictions", predictions, "--format", "pred_only",
                      "--json"],
    }
    running = {name: subprocess.Popen([str(a) for a in argv], env=env, cwd=home, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for name, argv in commands.items()}
    results = {name: process.communicate(timeout=300) + (process.returncode,) for name, process in running.items()}
    return {"wheel": wheel, "userbase": userbase, "release": work / "release", **results}


def test_the_wheel_ships_every_file_of_every_metric_folder(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for path in (REPO / "metrics").glob("*/*"):
        if path.is_file() and path.suffix in (".py", ".md", ".txt"):
            relative = path.relative_to(REPO / "metrics").as_posix()
            assert any(name.endswith(f".data/data/share/resplit/metrics/{relative}") for name in names), relative


def test_user_install_imports_resplit_from_the_user_site(installed):
    out, err, code = installed["import"]
    assert code == 0, err[-2000:]
    package, metrics = out.split()
    userbase = installed["userbase"].resolve()
    assert Path(package).resolve().is_relative_to(userbase)
    assert Path(metrics) == userbase / "share" / "resplit" / "metrics"


def test_user_install_runs_behavioural(installed):
    out, err, code = installed["behavioural"]
    assert code == 0, err[-2000:]
    release = installed["release"]
    assert (release / "README.md").is_file() and list((release / "seen").glob("*.parquet"))


def test_user_install_runs_pass_rate(installed):
    out, err, code = installed["pass-rate"]
    assert code == 0, err[-2000:]
    result = json.loads(out)
    assert result["functionalities"]["positive words"]["pass_rate"] == 75.0
    assert result["functionalities"]["typos"]["pass_rate"] == 100.0
