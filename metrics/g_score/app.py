"""Hugging Face Space of the g_score metric: a gradio app of its own (gradio 5/6 API).

Inputs are the metric's own: the i.i.d. hits (0/1 per item) and the suite hits per scenario and
functionality (``{scenario: {functionality: [1, 0 or null per test case]}}``, what pass_rate returns
as ``testcase_results``), optionally a baseline's for the randomization and binomial tests. The
metric module beside this file (loaded with ``evaluate.load``) computes G; ``/compute`` is an API
endpoint too::

    from gradio_client import Client
    client = Client("<namespace>/g_score")
    result, table = client.predict("1 1 1 0", '{"seen": {"negation": [1, 0, null]}}', "", "", 10000, 42,
                                   api_name="/compute")
"""

import json
import math
import re
from pathlib import Path

import evaluate
import gradio as gr
import pandas as pd

TABLE_HEADERS = ["scenario", "suite score", "G", "baseline G", "p-value"]
# The card's example.
EXAMPLE_IID = "1 1 1 0"
EXAMPLE_SUITE = json.dumps({"seen": {"negation": [1, 0, None], "typos": [1, 1]},
                            "func": {"negation": [0, 0], "typos": [1, 0]}}, indent=1)


def metric_file():
    """The metric's module beside this file, whatever it is named (publishing renames it after the Space)."""
    return next(path for path in sorted(Path(__file__).resolve().parent.glob("*.py")) if path.name != "app.py")


# In memory: no cache files or file locks between requests (a compute that raised would otherwise hold
# its lock, and the next request would wait for it).
metric = evaluate.load(str(metric_file()), keep_in_memory=True)


def parse_hits(text, what):
    """0/1 hits from a JSON list or from numbers separated by spaces, commas or new lines; None if blank."""
    text = (text or "").strip()
    if not text:
        return None
    if text.startswith("["):
        try:
            hits = json.loads(text)
        except json.JSONDecodeError as error:
            raise gr.Error(f"{what}: not a JSON list ({error.msg})") from None
        if not isinstance(hits, list):
            raise gr.Error(f"{what}: give a list of 0/1 hits")
        return hits
    hits = []
    for token in re.split(r"[\s,;]+", text):
        try:
            hits.append(int(token) if token.lstrip("-").isdigit() else float(token))
        except ValueError:
            raise gr.Error(f"{what}: {token!r} is not a number (give 0/1 hits)") from None
    return hits


def parse_suite_hits(text, what):
    """``{scenario: {functionality: [hits]}}`` from JSON (null: a filtered test case); None if blank."""
    text = (text or "").strip()
    if not text:
        return None
    try:
        hits = json.loads(text)
    except json.JSONDecodeError as error:
        raise gr.Error(f"{what}: not JSON ({error.msg} at line {error.lineno})") from None
    if not isinstance(hits, dict):
        raise gr.Error(f"{what}: give a JSON object {{scenario: {{functionality: [1, 0 or null, ...]}}}}")
    return hits


def _number(value):
    return None if value is None or math.isnan(value) else round(value, 4)


def _table(result):
    baseline, p_values = result.get("baseline_g_score", {}), result.get("p_value", {})
    rows = [[scenario, _number(result["suite_score"][scenario]), _number(g), _number(baseline.get(scenario)),
             _number(p_values.get(scenario))] for scenario, g in result["g_score"].items()]
    rows.append(["mean", None, _number(result["g_score_mean"]), _number(result.get("baseline_g_score_mean")),
                 _number(p_values.get("mean"))])
    return pd.DataFrame(rows, columns=TABLE_HEADERS)


def compute(iid_hits, suite_hits, baseline_iid_hits, baseline_suite_hits, trials, random_state):
    """G per scenario and their mean; with a baseline, the randomization and binomial tests."""
    iid = parse_hits(iid_hits, "i.i.d. hits")
    if iid is None:
        raise gr.Error("give the i.i.d. hits: 1 where the model is right on an i.i.d. test item, else 0")
    suite = parse_suite_hits(suite_hits, "suite hits")
    if suite is None:
        raise gr.Error("give the suite hits: {scenario: {functionality: [1, 0 or null per test case]}}")
    baseline_iid = parse_hits(baseline_iid_hits, "baseline i.i.d. hits")
    baseline_suite = parse_suite_hits(baseline_suite_hits, "baseline suite hits")
    if trials is None or trials != int(trials):
        raise gr.Error(f"trials must be a whole number, got {trials!r}")
    try:
        result = metric.compute(iid_hits=iid, suite_hits=suite, baseline_iid_hits=baseline_iid,
                                baseline_suite_hits=baseline_suite, trials=int(trials),
                                random_state=int(random_state or 0))
    except ValueError as error:
        raise gr.Error(str(error)) from None
    return result, _table(result)


with gr.Blocks(title="G-Score") as demo:
    gr.Markdown(
        "# G-Score\n"
        "BELUGA's G (Luz de Araujo & Roth, 2023): the harmonic mean of the i.i.d. score (fraction of "
        "i.i.d. test items right) and the suite score (mean over functionalities of the fraction of passed "
        "test cases, filtered ones left out), per scenario (`standard`, `seen`, `func`, `class`, `type`). "
        "With a baseline: the approximate randomization test on G and the binomial test on the i.i.d. "
        "hits. Suite hits are what the Pass Rate metric returns as `testcase_results`.")
    with gr.Row():
        with gr.Column():
            iid_hits = gr.Textbox(EXAMPLE_IID, label="i.i.d. hits (0/1 per item)", lines=2)
            suite_hits = gr.Code(EXAMPLE_SUITE, language="json",
                                 label="suite hits {scenario: {functionality: [1, 0 or null per test case]}}")
        with gr.Column():
            baseline_iid_hits = gr.Textbox("", label="baseline i.i.d. hits (optional)", lines=2)
            baseline_suite_hits = gr.Code("", language="json", label="baseline suite hits (optional)")
    with gr.Row():
        trials = gr.Number(10000, precision=0, minimum=1, label="randomization trials")
        random_state = gr.Number(42, precision=0, label="seed of the randomization test")
        button = gr.Button("Compute", variant="primary")
    table = gr.Dataframe(headers=TABLE_HEADERS, label="per scenario", interactive=False)
    output = gr.JSON(label="result")
    button.click(compute, [iid_hits, suite_hits, baseline_iid_hits, baseline_suite_hits, trials, random_state],
                 [output, table], api_name="compute")


if __name__ == "__main__":
    demo.launch()
