"""The metric Spaces start and compute: each ``metrics/<name>/app.py`` is launched headless on
127.0.0.1 (no sharing, analytics off, offline) and every example of its card is computed through the
app's HTTP API with ``gradio_client``, and compared with the metric computed directly.

The card's examples are not copied here: the card's ```python blocks are run with ``evaluate.load``
wrapped so that every call they make on the metric (``compute``, ``read_predictions``, ...) is
recorded with its arguments and result; the same inputs then go through the app.
"""

import importlib.util
import json
import math
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import LazyModule

pytestmark = LazyModule.skip_without("gradio", "gradio_client",
                                     reason="gradio is not installed (it is in the test extra: pip install -e .[test])")
gradio, gradio_client = LazyModule("gradio"), LazyModule("gradio_client")  # imported when a test runs (seconds)

REPO = Path(__file__).resolve().parent.parent
METRICS = ("pass_rate", "g_score", "concurrence")
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def json_ready(value):
    """What a JSON answer holds for a result: NaN as null, tuples as lists."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    return value


# ---------------------------------------------------------------------------------------
# Fixtures: the apps, launched once; the cards' examples, recorded once
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def space_environment(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
        patch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("HF_EVALUATE_OFFLINE", "1")
        patch.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio")))
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("MPLBACKEND", "Agg")
        yield


def _import_app(name):
    spec = importlib.util.spec_from_file_location(f"resplit_space_{name}", REPO / "metrics" / name / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def spaces(space_environment):
    """{name: (app module, Client)} for every metric, each app serving on its own local port."""
    launched = {}
    try:
        for name in METRICS:
            app = _import_app(name)
            app.demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", share=False, quiet=True)
            launched[name] = (app, None)
            assert app.demo.local_url.startswith("http://127.0.0.1:")
            client = gradio_client.Client(app.demo.local_url, verbose=False, analytics_enabled=False)
            launched[name] = (app, client)
        yield launched
    finally:
        for app, client in launched.values():
            if client is not None:
                client.close()
            app.demo.close()


class _Recorder:
    """A loaded metric that records every call made on it: (method, args, kwargs, result)."""

    def __init__(self, metric, calls):
        self._metric, self._calls = metric, calls

    def __getattr__(self, name):
        attribute = getattr(self._metric, name)
        if not callable(attribute):
            return attribute

        def record(*args, **kwargs):
            result = attribute(*args, **kwargs)
            self._calls.append((name, args, kwargs, result))
            return result

        return record


@pytest.fixture(scope="module")
def card_examples(space_environment, tmp_path_factory):
    """{metric: [(method, args, kwargs, result), ...]} of the card's python blocks, run as written."""
    import evaluate

    load = evaluate.load
    examples = {}
    with pytest.MonkeyPatch.context() as patch:
        cards = tmp_path_factory.mktemp("cards")
        patch.chdir(cards)  # the blocks write files (a heatmap)
        for name in METRICS:  # the blocks load each metric by its folder, as a clone of its Space
            shutil.copytree(REPO / "metrics" / name, cards / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in METRICS:
            calls = examples[name] = []
            patch.setattr(evaluate, "load", lambda *args, _calls=calls, **kwargs: _Recorder(load(*args, **kwargs), _calls))
            card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
            for code in PYTHON_BLOCK.findall(card):
                exec(compile(code, f"metrics/{name}/README.md", "exec"), {"__name__": "__main__"})
    return examples


def computed(examples):
    return [(kwargs, result) for method, _, kwargs, result in examples if method == "compute"]


# ---------------------------------------------------------------------------------------
# The card's examples through each app's API
# ---------------------------------------------------------------------------------------


def test_concurrence_space_computes_the_card_examples(spaces, card_examples, tmp_path):
    app, client = spaces["concurrence"]
    examples = computed(card_examples["concurrence"])
    assert examples
    for kwargs, expected in examples:
        rows = [list(row) for row in zip(kwargs["model"], kwargs["benchmark"], kwargs["seed"], kwargs["score"])]
        table = {"headers": list(app.COLUMNS), "data": rows}
        options = (kwargs.get("method", "kendall"), kwargs.get("n_bootstrap", 0), kwargs.get("confidence_level", 0.95),
                   kwargs.get("random_state", 0))
        result, heatmap, pairs = client.predict(table, *options, api_name="/compute")
        assert result == json_ready(expected)
        assert Path(heatmap).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert [row[0] for row in pairs["data"]] == list(expected["concurrence"])
        # The same table as a CSV file that starts with a UTF-8 byte-order mark ("CSV UTF-8").
        csv_file = tmp_path / "results.csv"
        lines = ["model,benchmark,seed,score"] + [",".join(map(str, row)) for row in rows]
        csv_file.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")
        assert csv_file.read_bytes()[:3] == b"\xef\xbb\xbf"
        read = client.predict(gradio_client.handle_file(str(csv_file)), api_name="/read_results")
        assert read["headers"] == list(app.COLUMNS)
        again, _, _ = client.predict(read, *options, api_name="/compute")
        assert again == result


def test_g_score_space_computes_the_card_examples(spaces, card_examples):
    _, client = spaces["g_score"]
    examples = computed(card_examples["g_score"])
    assert len(examples) >= 2 and any("baseline_iid_hits" in kwargs for kwargs, _ in examples)
    for kwargs, expected in examples:
        baseline_iid = kwargs.get("baseline_iid_hits")
        baseline_suite = kwargs.get("baseline_suite_hits")
        result, table = client.predict(
            " ".join(map(str, kwargs["iid_hits"])), json.dumps(kwargs["suite_hits"]),
            "" if baseline_iid is None else json.dumps(baseline_iid),
            "" if baseline_suite is None else json.dumps(baseline_suite),
            kwargs.get("trials", 10000), kwargs.get("random_state", 42), api_name="/compute")
        # Same seed, same randomization test: the p-values are equal, not close.
        assert result == json_ready(expected)
        assert table["data"][-1][0] == "mean"
        assert [row[0] for row in table["data"][:-1]] == list(expected["g_score"])


def test_pass_rate_space_computes_the_card_examples(spaces, card_examples, tmp_path):
    app, client = spaces["pass_rate"]
    calls = card_examples["pass_rate"]
    examples = computed(calls)
    assert len(examples) >= 2
    for kwargs, expected in examples:  # every test-case table the card computes, row by row
        # A table cell is text: lists and records (labels, meta, expectation) as JSON.
        cell = lambda value: value if isinstance(value, str) else json.dumps(value)  # noqa: E731
        rows = [[json.dumps(kwargs["predictions"][i]), json.dumps(kwargs["confidences"][i]),
                 *[cell(kwargs[column][i]) for column in app.COLUMNS[2:]]] for i in range(len(kwargs["predictions"]))]
        result, summary = client.predict({"headers": list(app.COLUMNS), "data": rows}, api_name="/compute")
        hits = result.pop("testcase_results")
        assert result == json_ready(expected)
        assert {name: sum(h == 1 for h in cases) for name, cases in hits.items()} == \
            {name: counts["passed"] for name, counts in expected["functionalities"].items()}
        assert [row[0] for row in summary["data"]] == list(expected["functionalities"])

    # The card's suite example as files, both starting with a UTF-8 byte-order mark.
    (_, (lines, file_format), options, _), = [c for c in calls if c[0] == "read_predictions"]
    (_, (suite, *_), cut, _), = [c for c in calls if c[0] == "testcases_from_suite"]
    expected = examples[-1][1]
    suite_file, predictions_file = tmp_path / "suite.json", tmp_path / "predictions.txt"
    suite_file.write_text(json.dumps(suite), encoding="utf-8-sig")
    predictions_file.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")
    result, _ = client.predict(gradio_client.handle_file(str(suite_file)), gradio_client.handle_file(str(predictions_file)),
                               file_format, options.get("sentiment_binary", False), cut.get("testcases", "all"),
                               cut.get("beluga_labels", False), api_name="/compute_suite")
    result.pop("testcase_results")
    assert result == json_ready(expected)


def test_bad_input_is_one_message_from_the_api(spaces):
    """The metric's ValueError reaches the caller as the app's error, naming the problem."""
    app, client = spaces["concurrence"]
    one_benchmark = {"headers": list(app.COLUMNS), "data": [["a", "cogs", "", 0.1], ["b", "cogs", "", 0.2]]}
    with pytest.raises(gradio_client.exceptions.AppError, match="got only \\['cogs'\\]"):
        client.predict(one_benchmark, "kendall", 0, 0.95, 0, api_name="/compute")
    _, client = spaces["g_score"]
    with pytest.raises(gradio_client.exceptions.AppError, match="unknown scenario 'unseen'"):
        client.predict("1 0", '{"unseen": {"f": [1]}}', "", "", 100, 0, api_name="/compute")
    app, client = spaces["pass_rate"]
    row = ["[2]", "[]", "2", "null", "f", "MFT", "Vocabulary", '{"fn": "equals"}', "all"]
    with pytest.raises(gradio_client.exceptions.AppError, match="equals"):
        client.predict({"headers": list(app.COLUMNS), "data": [row]}, api_name="/compute")


# ---------------------------------------------------------------------------------------
# Versions that work together
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", METRICS)
def test_space_pins_the_gradio_it_is_tested_with(name):
    folder = REPO / "metrics" / name
    card = (folder / "README.md").read_text(encoding="utf-8")
    space = yaml.safe_load(card.split("---\n")[1])
    pins = dict(line.split("==") for line in (folder / "requirements.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    assert all(re.fullmatch(r"\d+(\.\d+)*", version) for version in pins.values()), pins
    # gradio and the web stack it runs on (an unpinned fastapi / starlette broke the old Spaces), the metric's own.
    assert {"gradio", "fastapi", "starlette", "uvicorn", "evaluate", "datasets", "numpy"} <= set(pins)
    assert space["sdk"] == "gradio" and space["app_file"] == "app.py"
    assert str(space["sdk_version"]) == pins["gradio"]
    # The pinned gradio has the installed major version (the one these tests ran the apps with).
    assert pins["gradio"].split(".")[0] == gradio.__version__.split(".")[0]
    assert not re.search(r"launch_gradio_widget|gr\.inputs|gr\.outputs", (folder / "app.py").read_text())
