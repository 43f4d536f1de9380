"""Every ```python block of metrics/README.md and of the metric cards runs as written, outside a checkout.

All blocks run in one interpreter apart from pytest's (``python -I``: neither the checkout nor the
tests are on its path, so only what is installed is importable), each block on its own: a fresh
namespace, its own empty working folder outside the checkout, offline. A line ``expression  # value``
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
import ast, json, os, sys, tempfile, traceback


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
    try:
        results[block["name"]] = {"ok": True, "checked": run(block["name"], block["code"])}
    except BaseException:
        results[block["name"]] = {"ok": False, "error": traceback.format_exc()}
print(json.dumps(results))
'''


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
    done = subprocess.run([sys.executable, "-I", str(work / "runner.py"), str(work / "blocks.json")], cwd=work,
                          env=env, capture_output=True, text=True, timeout=300)
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
    done = subprocess.run([sys.executable, "-I", str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    results = json.loads(done.stdout)
    assert results["good"] == {"ok": True, "checked": 1}
    assert not results["wrong"]["ok"] and "the block shows 4" in results["wrong"]["error"]
    assert not results["undefined"]["ok"] and "NameError" in results["undefined"]["error"]


def test_requirement_marker():
    assert requirement("# requires: hub\nimport evaluate\n") == "hub"
    assert requirement("import evaluate  # requires: hub\n") is None
    assert ast.parse("# requires: hub\nx = 1\n")  # the marker is a comment: the block stays valid Python
