"""Compositional sources from the Hub: the real ``datasets`` loader against the local Hub server.

The upload and the ``resplit tmcd`` run happen in subprocesses with ``HF_ENDPOINT`` pointing at the
server (huggingface_hub and datasets read the endpoint and the offline switches at import).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from loading_scripts.compositional import guess_target_language
from loading_scripts.scan import read_tasks
from split_builders.cli import main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from conftest import hub_env  # noqa: E402

def test_scan_from_the_hub_is_split_like_the_local_copy(shared, hub, tmp_path, hf_cache):
    pairs = read_tasks(shared / "data" / "scan" / "tasks.txt.gz")[:300]
    folder = tmp_path / "upload" / "data"
    folder.mkdir(parents=True)
    # Hub-style copy: columns commands/actions, a train and a test file.
    for name, part in (("train", pairs[:200]), ("test", pairs[200:])):
        pq.write_table(pa.table({"commands": [p[0] for p in part], "actions": [p[1] for p in part]}),
                       folder / f"{name}-00000-of-00001.parquet")
    upload = textwrap.dedent(f"""
        from huggingface_hub import HfApi
        api = HfApi()
        api.create_repo("org/scan", repo_type="dataset")
        api.upload_folder(folder_path={str(folder.parent)!r}, repo_id="org/scan", repo_type="dataset")
    """)
    env = hub_env(hub, tmp_path)
    done = subprocess.run([sys.executable, "-c", upload], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "release"
    done = subprocess.run([sys.executable, "-m", "split_builders.cli", "tmcd", "--source", "org/scan",
                           "--train-size", "200", "--iterations", "300", "--configs", "tmcd,length",
                           "--no-published", "--out", str(out)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    tmcd = datasets.load_dataset(str(out), "tmcd", cache_dir=hf_cache)
    assert (len(tmcd["train"]), len(tmcd["test"])) == (200, 100)
    rows = sorted([*tmcd["train"], *tmcd["test"]], key=lambda r: r["source_id"])
    assert [(r["input"], r["target"]) for r in rows] == pairs  # train split then test split, in order
    card = (out / "README.md").read_text()
    assert "org/scan" in card and "scan" in card


def test_a_missing_hub_dataset_offline_says_so(tmp_path, capsys):
    code = main(["tmcd", "--source", "org/not-here", "--train-size", "10", "--out", str(tmp_path / "out")])
    assert code == 2
    error = capsys.readouterr().err
    assert "org/not-here" in error and "HF_HUB_OFFLINE" in error and "Traceback" not in error


def test_target_language_is_guessed_from_the_targets():
    assert guess_target_language(["SELECT name FROM t", "select 1"]) == "sql"
    assert guess_target_language(["I_TURN_LEFT I_WALK", "I_JUMP"]) == "scan"
    assert guess_target_language(["cat ( x _ 1 ) AND eat . agent ( x _ 2 , x _ 1 )"]) == "cogs"
    assert guess_target_language(["answer ( state ( m0 ) )"]) == "funql"
