"""The prepared GPU check (benchmarks/gpu/check.py, issue 32) runs end to end on the CPU with tiny models.

Everything but the CUDA calls is exercised here, so the GPU machine's few minutes go to measuring: every
step (scoring and its peers, precision, fine-tuning, PVI with the transformers family, the accelerate
build) must leave figures and none may fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECK = REPO / "benchmarks" / "gpu" / "check.py"
STEPS = ("env", "peak", "models", "scoring", "precision", "finetune", "pvi", "build")


@pytest.mark.slow
def test_gpu_check_runs_tiny_on_cpu(tmp_path):
    out = tmp_path / "check.json"
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_EVALUATE_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", HF_HOME=str(tmp_path / "hf"))
    # --deny-imports: the packages the GPU machine lacks (and the wheels do not bring) cannot be imported here
    # either, in the check or its subprocesses, so an import the wheels miss fails in this test.
    # --minutes: the check's own budget (5 minutes in --tiny) is for the GPU machine; here the suite's other processes
    # share the cores, and a step skipped for time would fail this test for the machine's load, not the check
    done = subprocess.run([sys.executable, str(CHECK), "--device", "cpu", "--tiny", "--deny-imports", "--out", str(out),
                           "--work", str(tmp_path / "work"), "--minutes", "30"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert out.is_file(), done.stderr[-3000:]
    results = json.loads(out.read_text())
    failed = {name: record for name, record in results["steps"].items() if record["status"] != "ok"}
    assert not failed, json.dumps(failed, indent=1)[:4000]
    assert set(results["steps"]) == set(STEPS)
    assert all(results["steps"][name].get("figures") for name in STEPS)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = {name: results["steps"][name]["figures"] for name in STEPS}
    for model in ("gpt2-medium", "gpt2-large", "llama-1b"):
        scored = figures["scoring"]["models"][model]
        for method in ("resplit_bf16", "resplit_bf16_padded", "resplit_fp32", "resplit_fp32_padded", "evaluate_method",
                       "reference_loop"):
            assert scored[method]["ex_per_s"] > 0 and 0 < scored[method]["mfu"]
        # the peers compute the same s(x) as resplit in float32, packed or padded
        assert scored["evaluate_method"]["max_abs_diff_vs_resplit_fp32"] < 1e-3
        assert scored["packed_vs_padded_fp32_max_abs_diff"] < 1e-4
    assert figures["precision"]["bf16_vs_fp32_spearman"] > 0.5  # random tiny weights: length dominates
    assert figures["precision"]["device_fp32_vs_cpu_fp32_max_abs_diff"] < 1e-3  # CPU against CPU here
    assert figures["precision"]["batch_size_1_vs_planned_fp32_max_abs_diff"] < 1e-3
    assert figures["finetune"]["train_tokens_per_s"] > 0 and figures["finetune"]["scores_finite"]
    # packed fine-tuning (token budgets) and its padded peer in the same run, each with the paper's-setting estimate
    assert figures["finetune"]["packing"] and figures["finetune"]["batch_unit"] == "tokens"
    assert not figures["finetune"]["padded"]["packing"] and figures["finetune"]["padded"]["train_tokens_per_s"] > 0
    assert figures["finetune"]["padded"]["scores_finite"]
    for run in (figures["finetune"], figures["finetune"]["padded"]):
        assert run["full_snli_estimate_hours_one_device"]["total_minutes"] > 0
    assert figures["precision"]["packed_vs_padded_fp32_max_abs_diff"] < 1e-4
    assert figures["precision"]["packed_vs_padded_bf16_spearman"] > 0.5
    assert figures["pvi"]["pvi_finite"] and figures["pvi"]["tiny_device_vs_cpu_max_abs_pvi_diff_bits"] < 1e-3
    assert figures["build"]["index_sets_equal"] and figures["build"]["cpu_build_read_cached_scores"]
    # the last lines are the table
    assert "build" in done.stdout.strip().splitlines()[-2]
