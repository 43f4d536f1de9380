"""Hugging Face Space: the interactive widget of the pass_rate metric."""

from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

# The metric's module beside this file, whatever it is named (publishing renames pass_rate.py after the
# Space), and not one of the adapters it imports: so that the Space works under any name and namespace.
NOT_THE_METRIC = {"app.py", "predictions.py", "suite_adapters.py"}
metric_file = next(path for path in sorted(Path(__file__).parent.glob("*.py")) if path.name not in NOT_THE_METRIC)
module = evaluate.load(str(metric_file))
launch_gradio_widget(module)
