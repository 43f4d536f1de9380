"""Worker for the multi-process fine-tuning test: every process runs the k-fold fine-tuning.

Run with ``torchrun --nproc_per_node 2 tests/finetune_worker.py MODEL_DIR WORK_DIR OUT_DIR N_ROWS``.
Each process writes what it saw (rank, number of processes, backend) and the gathered scores
and fold reports (with each fold model's parameter checksum) to ``OUT_DIR/rank<r>.json``.
"""

import json
import sys
from pathlib import Path

from accelerate import PartialState

from split_builders.signals.lm.finetune import FinetuneOptions, finetune_scores
from split_builders.signals.lm.models import resolve_model


def pairs(n_rows: int):
    """The synthetic (prompt, query) pairs the test compares against (also used by the test)."""
    prompts = [f"Premise: person {i} walks{' a big dog' * (i % 3)} in the park. Hypothesis:" for i in range(n_rows)]
    queries = [f" Someone is {'outside' if i % 3 else 'asleep'}{' again' * (i % 4)} with {i % 7} dogs."
               for i in range(n_rows)]
    return prompts, queries


FINETUNE_OPTIONS = dict(folds=2, seed=3, max_steps=4, batch_size=4, eval_steps=2, score_batch_size=4)


def main(model_dir: str, work_dir: str, out_dir: str, n_rows: int) -> None:
    state = PartialState(cpu=True)
    prompts, queries = pairs(n_rows)
    run = finetune_scores(prompts, queries, model_ref=resolve_model(model_dir), device="cpu", progress=False,
                          options=FinetuneOptions(**FINETUNE_OPTIONS, work_dir=Path(work_dir)))
    report = {"rank": state.process_index, "num_processes": state.num_processes, "backend": str(state.backend),
              "run_num_processes": run.num_processes, "scores": run.scores.tolist(),
              "folds": run.folds.tolist(), "fold_reports": run.fold_reports}
    Path(out_dir, f"rank{state.process_index}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
