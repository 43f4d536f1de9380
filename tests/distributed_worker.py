"""Worker for the multi-process test: every process scores its share of the SNLI sample.

Run with ``torchrun --nproc_per_node 2 tests/distributed_worker.py CACHE_DIR OUT_DIR N_ROWS``.
Each process writes what it saw (rank, number of processes) and the gathered scores.
"""

import json
import sys
from pathlib import Path

from accelerate import PartialState

from loading_scripts import load_source
from split_builders.signals.lm.models import resolve_model
from split_builders.signals.lm.prompts import render_all, resolve_template
from split_builders.signals.lm.scoring import compute_scores


def main(cache_dir: str, out_dir: str, n_rows: int) -> None:
    state = PartialState(cpu=True)
    source = load_source("snli-sample")
    source.dataset = source.dataset.select(range(n_rows))
    prompts, queries = render_all(resolve_template(None, task="snli", prompt_field=None, query_field=None), source)
    run = compute_scores(prompts, queries, model_ref=resolve_model(None), cache_dir=Path(cache_dir), device="cpu",
                         batch_size=4, progress=False)
    report = {"rank": state.process_index, "num_processes": state.num_processes, "backend": str(state.backend),
              "run_num_processes": run.num_processes, "scores": run.scores.tolist()}
    Path(out_dir, f"rank{state.process_index}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
