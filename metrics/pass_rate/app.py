"""Hugging Face Space of the pass_rate metric: a gradio app of its own (gradio 5/6 API).

Two ways in, each an API endpoint as well:

- ``/compute``: one row per test case with the columns of ``compute`` (predictions and probability
  vectors as JSON lists; labels a JSON list, one per example, or one value for every example; meta a JSON
  list with one list of strings per example, or blank; the expectation a JSON object);
- ``/compute_suite``: a suite in resplit's CheckList JSON format (``.json`` or ``.json.gz``) and a
  prediction file with one line per example in suite order, as ``resplit pass-rate`` takes them.

Both return the metric's whole result (NaN as null) with every test case's result
(``testcase_results``, the suite hits ``g_score`` takes) and a table per functionality. The numbers
come from the metric module beside this file, loaded with ``evaluate.load``::

    from gradio_client import Client, handle_file
    client = Client("<namespace>/pass_rate")
    result, table = client.predict(handle_file("suite.json.gz"), handle_file("predictions.txt"), "binary_conf",
                                   True, "auto", False, api_name="/compute_suite")
"""

import gzip
import json
import math
from pathlib import Path

import evaluate
import gradio as gr
import pandas as pd

# The per-test-case columns of compute(), in its argument order.
COLUMNS = ("predictions", "confidences", "labels", "meta", "functionality", "test_type", "capability",
           "expectation", "agg_fn")
FILE_FORMATS = ("pred_only", "binary_conf", "softmax")
TESTCASES = ("auto", "all", "n500", "train", "validation", "test")
SUMMARY_HEADERS = ["functionality", "pass %", "passed", "failed", "filtered"]
# The card's example: two test cases of a minimum functionality test, one passed and one failed.
EXAMPLE = [
    ["[2]", "[]", "[2]", "", "positive words", "MFT", "Vocabulary", '{"fn": "eq"}', "all"],
    ["[0]", "[]", "[2]", "", "positive words", "MFT", "Vocabulary", '{"fn": "eq"}', "all"],
]
# The metric's module beside this file, whatever it is named (publishing renames pass_rate.py after the
# Space), and not one of the adapters it imports: so that the Space works under any name and namespace.
NOT_THE_METRIC = {"app.py", "predictions.py", "suite_adapters.py"}


def metric_file():
    return next(path for path in sorted(Path(__file__).resolve().parent.glob("*.py"))
                if path.name not in NOT_THE_METRIC)


# In memory: no cache files or file locks between requests (a compute that raised would otherwise hold
# its lock, and the next request would wait for it).
metric = evaluate.load(str(metric_file()), keep_in_memory=True)


def json_ready(value):
    """NaN (a pass rate of a functionality whose test cases are all filtered) as null: strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_ready(item) for item in value]
    return value


def _run(step):
    """Run the metric; its ValueError (bad input, naming the test case) is shown to the user."""
    try:
        return step()
    except ValueError as error:
        raise gr.Error(str(error)) from None


def _summary(result):
    rows = [[name, None if math.isnan(c["pass_rate"]) else round(c["pass_rate"], 2), c["passed"], c["failed"],
             c["filtered"]] for name, c in result["functionalities"].items()]
    return pd.DataFrame(rows, columns=SUMMARY_HEADERS)


def _outputs(columns):
    result = _run(lambda: metric.compute(**columns, return_testcase_results=True))
    return json_ready(result), _summary(result)


# ---------------------------------------------------------------------------------------
# One row per test case
# ---------------------------------------------------------------------------------------


def _cell(value):
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()


def _json_cell(text, row, column):
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise gr.Error(f"row {row}, {column}: not JSON ({error.msg}): {text!r}") from None


def table_columns(table):
    """The table as compute()'s columns; blank rows skipped, an empty confidences cell as no vectors."""
    columns = {column: [] for column in COLUMNS}
    for number, row in enumerate(table[list(COLUMNS)].itertuples(index=False), start=1):
        cells = dict(zip(COLUMNS, map(_cell, row)))
        if not any(cells.values()):
            continue
        predictions = _json_cell(cells["predictions"], number, "predictions")
        confidences = _json_cell(cells["confidences"] or "[]", number, "confidences")
        if not isinstance(predictions, list) or not isinstance(confidences, list):
            raise gr.Error(f"row {number}: predictions and confidences are JSON lists, one entry per example")
        columns["predictions"].append(predictions)
        columns["confidences"].append(confidences)
        count = len(predictions)
        # A cell is JSON: labels one per example (one value: every example's; blank: none), meta one list of
        # strings per example (blank: none), the expectation an object.
        labels = _json_cell(cells["labels"], number, "labels") if cells["labels"] else None
        columns["labels"].append(labels if isinstance(labels, list) else [labels] * count)
        meta = _json_cell(cells["meta"], number, "meta") if cells["meta"] else None
        columns["meta"].append(meta if isinstance(meta, list) else [[]] * count)
        columns["expectation"].append(_json_cell(cells["expectation"], number, "expectation"))
        for column in ("functionality", "test_type", "capability", "agg_fn"):
            columns[column].append(cells[column])
    if not columns["predictions"]:
        raise gr.Error("the table has no test cases")
    return columns


def compute(table):
    """Pass rates of test-case rows."""
    return _outputs(table_columns(table))


# ---------------------------------------------------------------------------------------
# A suite file and a prediction file
# ---------------------------------------------------------------------------------------


def read_text(path, what):
    """A text file (gunzipped when gzip), UTF-8 with or without a byte-order mark."""
    if not path:
        raise gr.Error(f"upload the {what}")
    raw = Path(path).read_bytes()
    try:
        raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        return raw.decode("utf-8-sig")
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise gr.Error(f"the {what} is not readable UTF-8 text (or gzip of it): {error}") from None


def read_suite(path):
    try:
        suite = json.loads(read_text(path, "suite file"))
    except json.JSONDecodeError as error:
        raise gr.Error(f"the suite file is not JSON: {error}") from None
    if not isinstance(suite, dict) or not isinstance(suite.get("tests"), list):
        raise gr.Error("the suite file must hold resplit's CheckList JSON: an object with a 'tests' list")
    return suite


def prediction_lines(text):
    """One line per example; a final newline does not make an extra (empty) example."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def suite_columns(suite, predictions, confidences, testcases, beluga_labels):
    """compute()'s columns; ``auto``: the predictions cover all test cases or CheckList's n500 sample."""
    problems = []
    for choice in ("all", "n500") if testcases == "auto" else (testcases,):
        try:
            return metric.testcases_from_suite(suite, predictions, confidences, testcases=choice,
                                               beluga_labels=beluga_labels)
        except (ValueError, KeyError) as error:
            problems.append(str(error))
    raise gr.Error("; ".join(problems))


def compute_suite(suite_file, predictions_file, file_format, sentiment_binary, testcases, beluga_labels):
    """Pass rates of a whole suite from a prediction file (CheckList's run_from_file layout)."""
    suite = read_suite(suite_file)
    lines = prediction_lines(read_text(predictions_file, "prediction file"))
    answers = _run(lambda: metric.suite_uses_answers(suite))
    predictions, confidences = _run(lambda: metric.read_predictions(
        lines, file_format, answers=answers, sentiment_binary=bool(sentiment_binary)))
    return _outputs(suite_columns(suite, predictions, confidences, testcases, bool(beluga_labels)))


with gr.Blocks(title="Pass Rate") as demo:
    gr.Markdown(
        "# Pass Rate\n"
        "CheckList pass rates of a model on a behavioural test suite (Ribeiro et al., 2020): per "
        "functionality, capability and test type, and the suite score (mean over functionalities), with "
        "the expectations of resplit's JSON suites. Every test case's result (1 passed, 0 failed, null "
        "filtered) is in `testcase_results`: the suite hits of the G-score.")
    with gr.Tab("Suite and prediction file"):
        with gr.Row():
            suite_file = gr.File(label="suite (resplit's CheckList JSON, .json or .json.gz)",
                                 file_types=[".json", ".gz"], type="filepath")
            predictions_file = gr.File(label="predictions: one line per example, in suite order",
                                       type="filepath")
        with gr.Row():
            file_format = gr.Dropdown(list(FILE_FORMATS), value="pred_only", label="prediction format",
                                      info="pred_only: label or answer; binary_conf: p(class 1); "
                                           "softmax: space-separated probabilities")
            sentiment_binary = gr.Checkbox(False, label="binary sentiment model: map p(positive) to 3 classes")
            testcases = gr.Dropdown(list(TESTCASES), value="auto", label="test cases the file covers",
                                    info="auto: all, or CheckList's n500 sample")
            beluga_labels = gr.Checkbox(False, label="BELUGA's relabelled tests")
        suite_button = gr.Button("Compute", variant="primary")
    with gr.Tab("Test cases"):
        table = gr.Dataframe(value=pd.DataFrame(EXAMPLE, columns=COLUMNS), headers=list(COLUMNS),
                             datatype=["str"] * len(COLUMNS), column_count=(len(COLUMNS), "fixed"),
                             label="one row per test case (predictions, confidences: JSON lists per example)",
                             interactive=True, wrap=True)
        table_button = gr.Button("Compute", variant="primary")
    summary = gr.Dataframe(headers=SUMMARY_HEADERS, label="per functionality", interactive=False)
    output = gr.JSON(label="result")
    # One evaluate metric object computes one request at a time: both endpoints share one queue slot.
    suite_button.click(compute_suite, [suite_file, predictions_file, file_format, sentiment_binary, testcases,
                                       beluga_labels], [output, summary], api_name="compute_suite",
                       concurrency_id="metric")
    table_button.click(compute, table, [output, summary], api_name="compute", concurrency_id="metric")


if __name__ == "__main__":
    demo.launch()
