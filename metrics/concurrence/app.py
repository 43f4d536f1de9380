"""Hugging Face Space of the concurrence metric: a gradio app of its own (gradio 5/6 API).

The results table (one row per run: model, benchmark, seed, score) is typed or pasted into the
table, or read from a CSV/TSV file (a UTF-8 byte-order mark, as spreadsheets write it, is fine);
the metric module beside this file (loaded with ``evaluate.load``) computes the concurrence of
every pair of benchmarks, the self-concurrence and the heatmap. Both steps are API endpoints too::

    from gradio_client import Client, handle_file
    client = Client("<namespace>/concurrence")
    table = client.predict(handle_file("results.csv"), api_name="/read_results")
    result, heatmap, pairs = client.predict(table, "kendall", 0, 0.95, 0, api_name="/compute")
"""

import io
import math
from pathlib import Path

import evaluate
import gradio as gr
import pandas as pd
from PIL import Image

COLUMNS = ("model", "benchmark", "seed", "score")
METHODS = ("kendall", "pearson", "spearman")
# The card's example: three models, two benchmarks, one run each.
EXAMPLE = [
    ["lstm", "cogs", "", 0.1], ["t5", "cogs", "", 0.8], ["btg", "cogs", "", 0.6],
    ["lstm", "scan", "", 0.05], ["t5", "scan", "", 0.55], ["btg", "scan", "", 0.4],
]


def metric_file():
    """The metric's module beside this file, whatever it is named (publishing renames it after the Space)."""
    return next(path for path in sorted(Path(__file__).resolve().parent.glob("*.py")) if path.name != "app.py")


# In memory: no cache files or file locks between requests (a compute that raised would otherwise hold
# its lock, and the next request would wait for it).
metric = evaluate.load(str(metric_file()), keep_in_memory=True)


def json_ready(value):
    """NaN (a constant vector has no ranking) as null, so that the output is strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_ready(item) for item in value]
    return value


def read_results(path):
    """A results file (CSV, or TSV by its suffix) as the table; a UTF-8 byte-order mark is read transparently."""
    if not path:
        raise gr.Error("upload a CSV file with columns model,benchmark,seed,score")
    separator = "\t" if str(path).lower().endswith(".tsv") else ","
    try:
        table = pd.read_csv(path, sep=separator, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise gr.Error(f"{Path(path).name} is not a readable UTF-8 table: {error}") from None
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise gr.Error(f"{Path(path).name} lacks the column(s) {', '.join(missing)}; "
                       f"it has {', '.join(map(repr, table.columns))}")
    table = table[list(COLUMNS)].copy()
    table["score"] = [_number_or_text(score) for score in table["score"]]
    return table


def _number_or_text(cell):
    try:
        return float(cell)
    except ValueError:
        return cell  # reported with its row when computing


def table_columns(table):
    """The table as the metric's columns: blank rows skipped, scores as numbers, no seed as ""."""
    columns = {column: [] for column in COLUMNS}
    for number, row in enumerate(table[list(COLUMNS)].itertuples(index=False), start=1):
        cells = ["" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else str(cell).strip()
                 for cell in row]
        if not any(cells):
            continue
        model, benchmark, seed, score = cells
        try:
            columns["score"].append(float(score))
        except ValueError:
            raise gr.Error(f"row {number}: score {score!r} is not a number") from None
        columns["model"].append(model)
        columns["benchmark"].append(benchmark)
        columns["seed"].append(seed)
    if not columns["model"]:
        raise gr.Error("the results table is empty")
    return columns


def compute(table, method, n_bootstrap, confidence_level, random_state):
    """The concurrence of every pair of benchmarks: the metric's result, its heatmap, a table of pairs."""
    try:
        result = metric.compute(**table_columns(table), method=method, n_bootstrap=int(n_bootstrap or 0),
                                confidence_level=float(confidence_level), random_state=int(random_state or 0))
    except ValueError as error:
        raise gr.Error(str(error)) from None
    png = io.BytesIO()
    metric.plot_heatmap(result, png)
    heatmap = Image.open(png)
    intervals = result.get("confidence_interval", {})
    pairs = [[pair, None if math.isnan(value) else round(value, 4), *[round(v, 4) for v in intervals.get(pair, [])]]
             for pair, value in result["concurrence"].items()]
    headers = ["pair", "concurrence"] + (["low", "high"] if intervals else [])
    return json_ready(result), heatmap, pd.DataFrame(pairs, columns=headers)


with gr.Blocks(title="Concurrence") as demo:
    gr.Markdown(
        "# Concurrence\n"
        "Agreement of benchmarks on how models rank (Sun, Williams & Hupkes, 2023): for every pair of "
        "benchmarks, every seed's score on one is paired with every seed's score on the other, per model, "
        "and the concurrence is the correlation of the two vectors (Kendall's tau-b by default). One row "
        "per run; leave the seed empty when each model has one run.")
    with gr.Row():
        with gr.Column(scale=3):
            table = gr.Dataframe(value=pd.DataFrame(EXAMPLE, columns=COLUMNS), headers=list(COLUMNS),
                                 datatype=["str", "str", "str", "number"], column_count=(4, "fixed"),
                                 label="results (model, benchmark, seed, score)", interactive=True)
            upload = gr.File(label="or read a CSV / TSV file", file_types=[".csv", ".tsv"], type="filepath")
        with gr.Column(scale=2):
            method = gr.Dropdown(list(METHODS), value="kendall", label="method")
            n_bootstrap = gr.Number(0, precision=0, minimum=0, label="bootstrap resamples of the models (0: none)")
            confidence_level = gr.Slider(0.5, 0.99, value=0.95, step=0.01, label="confidence level")
            random_state = gr.Number(0, precision=0, label="seed of the bootstrap")
            button = gr.Button("Compute", variant="primary")
    pairs = gr.Dataframe(label="concurrence per pair", interactive=False)
    with gr.Row():
        heatmap = gr.Image(type="pil", label="pairwise matrix", format="png")
        output = gr.JSON(label="result")
    upload.upload(read_results, upload, table, api_name="read_results")
    button.click(compute, [table, method, n_bootstrap, confidence_level, random_state], [output, heatmap, pairs],
                 api_name="compute")


if __name__ == "__main__":
    demo.launch()
