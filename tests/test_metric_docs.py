"""Every ```python block of metrics/README.md and of the metric cards runs as written with `evaluate` alone.

All blocks run in one interpreter apart from pytest's, without resplit: ``python -I -S`` (no site
folder is processed, so the editable install's path hook never runs) with this environment's
site-packages appended to its path, so the installed libraries (evaluate, datasets, ...) import and
``split_builders`` does not (the runner checks). Each block runs on its own: a fresh namespace, its own
working folder outside the checkout holding a copy of the three metric folders (a researcher's clone
of the Spaces), offline. A line ``expression  # value``
whose comment is a Python literal is checked against that value, so the cards' shown results are
tested too. A block whose first line is ``# requires: <what>`` (e.g. ``# requires: hub``) needs
something the tests do not have and is skipped with that reason.
"""

import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "metrics" / "README.md", *sorted((REPO / "metrics").glob("*/README.md"))]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
REQUIRES = re.compile(r"#\s*requires:\s*(.+)")


def requirement(code: str) -> str | None:
    """What a block declares it needs on its first line (``# requires: hub``), or None."""
    first = code.lstrip("\n").split("\n", 1)[0].strip()
    match = REQUIRES.fullmatch(first)
    return match.group(1).strip() if match else None


def code_blocks():
    blocks = []
    for path in DOCS:
        for number, match in enumerate(PYTHON_BLOCK.finditer(path.read_text(encoding="utf-8")), start=1):
            name = f"{path.relative_to(REPO).as_posix()}#{number}"
            blocks.append(pytest.param(name, match.group(1), id=name))
    return blocks


BLOCKS = code_blocks()

# Runs in the other interpreter: argv[1] is a JSON list of {"name", "code"}; prints a JSON list of results.
RUNNER = r'''
import ast, importlib.util, json, os, shutil, sys, tempfile, traceback

SITE, METRICS = json.loads(sys.argv[2]), sys.argv[3]
sys.path.extend(SITE)  # the installed libraries, without processing their .pth files (resplit's editable hook)
assert importlib.util.find_spec("split_builders") is None, "resplit is importable: the blocks would not show it is not needed"


def shown_value(lines, statement):
    """The literal in a trailing comment of an expression statement, or None."""
    if not isinstance(statement, ast.Expr):
        return None
    rest = lines[statement.end_lineno - 1][statement.end_col_offset:].strip()
    if not rest.startswith("#"):
        return None
    try:
        return ("value", ast.literal_eval(rest[1:].strip()))
    except (ValueError, SyntaxError):
        return None  # a comment in words


def run(name, code):
    namespace, lines, checked = {"__name__": "__main__"}, code.splitlines(), 0
    for statement in ast.parse(code, name).body:
        shown = shown_value(lines, statement)
        if shown is None:
            exec(compile(ast.Module([statement], []), name, "exec"), namespace)
            continue
        got = eval(compile(ast.Expression(statement.value), name, "eval"), namespace)
        if got != shown[1]:
            raise AssertionError(f"line {statement.lineno}: {ast.get_source_segment(code, statement)} is "
                                 f"{got!r}; the block shows {shown[1]!r}")
        checked += 1
    return checked


results = {}
home = os.getcwd()
for block in json.loads(open(sys.argv[1], encoding="utf-8").read()):
    os.chdir(tempfile.mkdtemp(prefix="block-", dir=home))
    for name in ("pass_rate", "g_score", "concurrence"):
        shutil.copytree(os.path.join(METRICS, name), name, ignore=shutil.ignore_patterns("__pycache__"))
    try:
        results[block["name"]] = {"ok": True, "checked": run(block["name"], block["code"])}
    except BaseException:
        results[block["name"]] = {"ok": False, "error": traceback.format_exc()}
print(json.dumps(results))
'''


def runner_command(work: Path) -> list:
    """The runner in an interpreter whose path has the installed libraries but not resplit."""
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    return [sys.executable, "-I", "-S", str(work / "runner.py"), str(work / "blocks.json"), json.dumps(site),
            str(REPO / "metrics")]


@pytest.fixture(scope="module")
def block_results(tmp_path_factory):
    """Run every block that needs nothing special, once, in an interpreter outside the checkout."""
    work = tmp_path_factory.mktemp("metric-docs")
    assert REPO not in work.parents
    runnable = [{"name": name, "code": code} for name, code in (p.values for p in BLOCKS) if not requirement(code)]
    (work / "blocks.json").write_text(json.dumps(runnable), encoding="utf-8")
    (work / "runner.py").write_text(RUNNER, encoding="utf-8")
    # The metrics as installed (no $RESPLIT_METRICS_DIR pointing into the checkout), offline.
    env = {key: value for key, value in os.environ.items() if key != "RESPLIT_METRICS_DIR"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_EVALUATE_OFFLINE="1", MPLBACKEND="Agg")
    done = subprocess.run(runner_command(work), cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name, code", BLOCKS)
def test_code_block_runs_as_written(name, code, block_results):
    needs = requirement(code)
    if needs:
        pytest.skip(f"{name} needs {needs} (its first line says '# requires: {needs}')")
    result = block_results[name]
    assert result["ok"], f"{name} fails as written:\n{result['error']}"


def test_every_card_has_runnable_blocks_that_show_results():
    names = [p.values[0] for p in BLOCKS]
    for path in DOCS:
        prefix = path.relative_to(REPO).as_posix() + "#"
        assert any(name.startswith(prefix) for name in names), f"no ```python block in {path}"
    # Only a few blocks may need the network; none does today.
    assert not [name for name, code in (p.values for p in BLOCKS) if requirement(code)]


def test_shown_values_are_checked(block_results):
    """The cards show results as `expression  # value`; the runner compares them, so a wrong one fails."""
    checked = {name: result.get("checked", 0) for name, result in block_results.items()}
    for card in ("pass_rate", "g_score", "concurrence"):
        assert sum(n for name, n in checked.items() if name.startswith(f"metrics/{card}/")) >= 1, checked


def test_a_wrong_shown_value_fails(tmp_path):
    """The runner itself: a block whose comment shows a wrong value, and one with a NameError, fail."""
    blocks = [{"name": "good", "code": "x = [1, 2]\nsum(x)  # 3\nx  # the list\n"},
              {"name": "wrong", "code": "sum([1, 2])  # 4\n"},
              {"name": "undefined", "code": "json.dumps(1)\n"}]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run(runner_command(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=60)
    results = json.loads(done.stdout)
    assert results["good"] == {"ok": True, "checked": 1}
    assert not results["wrong"]["ok"] and "the block shows 4" in results["wrong"]["error"]
    assert not results["undefined"]["ok"] and "NameError" in results["undefined"]["error"]


def test_requirement_marker():
    assert requirement("# requires: hub\nimport evaluate\n") == "hub"
    assert requirement("import evaluate  # requires: hub\n") is None
    assert ast.parse("# requires: hub\nx = 1\n")  # the marker is a comment: the block stays valid Python


def test_blocks_run_without_resplit(tmp_path):
    """The runner's interpreter cannot import resplit: a block that imports it fails there."""
    blocks = [{"name": "resplit", "code": "import split_builders\n"},
              {"name": "numpy", "code": "import numpy\nnumpy.__name__  # 'numpy'\n"}]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "runner.py").write_text(RUNNER)
    done = subprocess.run(runner_command(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    results = json.loads(done.stdout)
    assert not results["resplit"]["ok"] and "ModuleNotFoundError" in results["resplit"]["error"]
    assert results["numpy"] == {"ok": True, "checked": 1}  # the installed libraries are importable
