"""How resplit scales: a Likelihood Splits build from given scores at growing sizes, and TMCD on
full SCAN and COGS.

    python benchmarks/scale.py                           # 10k, 100k, 1M rows, then TMCD on SCAN and COGS
    python benchmarks/scale.py --sizes 10000,100000 --no-tmcd
    python benchmarks/scale.py --sizes 10000000 --no-stages --no-tmcd  # 10M rows, end to end only
    python benchmarks/scale.py --json                    # last line: one JSON object

For every size a synthetic NLI table is written first (seeded; premises of about 13 and hypotheses
of about 7 words from a Zipf vocabulary, commas, possessives and final periods as in SNLI; three
labels) with one log-likelihood per row, then:

* **stages**, in a fresh process: read (the table into canonical rows), lengths (NLTK word tokens of
  the hypotheses), signal (the given scores), partition (the five configs), card (statistics,
  duplicates and the card's specification) and write (the release folder: Parquet files, figures,
  README), each with its time and the process's peak resident memory so far;
* **end to end**: ``resplit likelihood --source X.parquet --prompt-field premise --query-field
  hypothesis --label-field gold_label --scores S.npy --dev-size 0.1 --test-size 0.1
  --length-buckets 4 --out OUT`` as a subprocess: wall time and peak memory (``wait4``).

The growth exponent ``b`` of ``time ~ a * rows ** b`` is fitted by least squares on the log-log
points (1 is linear). TMCD runs ``resplit tmcd --source ../shared/data/scan --train-size 0.8
--seed 1`` and on COGS (all rows, ``--train-size 24155``) once each, timed, with the compound
divergence read from the release's YAML.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
LABELS = ("entailment", "neutral", "contradiction")
STAGES = ("read", "lengths", "signal", "partition", "card", "write")


# ---------------------------------------------------------------------------------------------
# Synthetic inputs
# ---------------------------------------------------------------------------------------------


def _sentences(rng, vocabulary, n: int, mean_words: float) -> list[str]:
    """``n`` sentences of Poisson(mean) words (at least 2): capitalised, some commas and
    possessives, a final period."""
    lengths = np.clip(rng.poisson(mean_words, n), 2, 60)
    words = vocabulary[(rng.zipf(1.3, int(lengths.sum())) - 1) % vocabulary.size].astype(object)
    marks = rng.random(words.size)
    words[marks < 0.03] += ","
    words[(marks >= 0.03) & (marks < 0.05)] += "'s"
    ends = np.cumsum(lengths)
    starts = ends - lengths
    return [" ".join(words[a:b]).capitalize() + "." for a, b in zip(starts.tolist(), ends.tolist())]


def make_vocabulary(rng) -> np.ndarray:
    """20,000 random lower-case words of 2 to 8 letters (the first draws of ``rng``)."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return np.array(["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(20000)])


def make_inputs(n_rows: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """``folder/nli-N.parquet`` (premise, hypothesis, gold_label) and ``folder/nli-N.npy``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table_path, scores_path = folder / f"nli-{n_rows}.parquet", folder / f"nli-{n_rows}.npy"
    if table_path.is_file() and scores_path.is_file():
        return table_path, scores_path
    rng = np.random.default_rng(seed)
    vocabulary = make_vocabulary(rng)
    table = pa.table({"premise": _sentences(rng, vocabulary, n_rows, 13), "hypothesis": _sentences(rng, vocabulary, n_rows, 7),
                      "gold_label": np.array(LABELS)[rng.integers(0, 3, n_rows)]})
    pq.write_table(table, table_path)
    np.save(scores_path, rng.normal(-30.0, 8.0, n_rows))
    return table_path, scores_path


def likelihood_args(table: Path, scores: Path, out: Path) -> list[str]:
    return ["likelihood", "--source", str(table), "--prompt-field", "premise", "--query-field", "hypothesis",
            "--label-field", "gold_label", "--scores", str(scores), "--dev-size", "0.1", "--test-size", "0.1",
            "--length-buckets", "4", "--out", str(out), "--no-progress"]


# ---------------------------------------------------------------------------------------------
# Stages (run in a fresh process: --stage-run)
# ---------------------------------------------------------------------------------------------


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def stage_run(table: Path, scores: Path, out: Path) -> dict:
    """The build's steps one by one, as :func:`split_builders.builder._build` runs them."""
    sys.path.insert(0, str(REPO))
    from loading_scripts import load_source
    from split_builders.api import Loaded, SourceInfo, get_method
    from split_builders.builder import BuildResult, duplicate_report
    from split_builders.methods.likelihood import LikelihoodSource
    from split_builders.release import card as cards
    from split_builders.release.provenance import provenance
    from split_builders.release.writer import write_release
    from split_builders.signals.lengths import word_lengths

    method = get_method("likelihood")
    options = method.options(**dict(zip(("source", "prompt_field", "query_field", "label_field", "scores", "out"),
                                        (str(table), "premise", "hypothesis", "gold_label", str(scores), str(out)))),
                             validation_size=0.1, test_size=0.1, length_buckets=4)
    figures, clock = {}, time.perf_counter()

    def done(stage):
        nonlocal clock
        now = time.perf_counter()
        figures[stage] = {"seconds": round(now - clock, 3), "peak_mb": round(_peak_mb(), 1)}
        clock = now

    src = load_source(options.source, prompt_field="premise", query_field="hypothesis", label_field="gold_label")
    src.check_queries()
    labels = src.labels()
    done("read")
    lengths = word_lengths(src.texts(src.query_field))
    done("lengths")
    data = LikelihoodSource(src, lengths, labels, input_rows=len(src))
    info = SourceInfo(name=src.name, rows=len(src), content_sha256=src.content_hash(), filters=dict(src.filtered))
    loaded = Loaded(data, info)
    method.check_loaded(loaded, options)
    signal = method.signal(loaded, options, None)
    done("signal")
    configs = method.configs(loaded, signal, options)
    done("partition")
    spec = method.card(loaded, signal, configs, options)
    spec.duplicates = duplicate_report(method.row_keys(loaded), configs)
    method.report(BuildResult(None, method, options, loaded, signal, configs))
    done("card")
    rows = method.rows(loaded, signal, configs)
    write_release(out, rows, configs, provenance=provenance(method, options, info, signal),
                  render_card=lambda staging, written: cards.render(spec, method=method, info=info, configs=configs,
                                                                    written=written, staging=staging),
                  license=None, pretty_name=method.pretty_name(loaded))
    done("write")
    return figures


def _run_measured(arguments: list[str], env=None) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run a command: its wall time (s), the peak resident memory of exactly that child (MB, from
    ``os.wait4``) and its output."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(arguments, stdout=out, stderr=err, text=True, env=env, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(arguments, process.returncode, out.read(), err.read())
    return seconds, usage.ru_maxrss / 1024, done


def growth_exponent(sizes, seconds) -> float | None:
    """``b`` of ``seconds ~ a * sizes ** b`` (least squares on logs); None with fewer than 2 sizes."""
    if len(sizes) < 2:
        return None
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float)), 1)[0])


# ---------------------------------------------------------------------------------------------
# TMCD
# ---------------------------------------------------------------------------------------------


def _find(tree, key: str):
    """The first value of ``key`` anywhere in a nested dict/list."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for value in tree:
            found = _find(value, key)
            if found is not None:
                return found
    return None


def tmcd_run(name: str, arguments: list[str], work: Path, env) -> dict:
    import yaml

    out = work / f"tmcd-{name}"
    seconds, peak, done = _run_measured([sys.executable, "-m", "split_builders.cli", "tmcd", *arguments, "--out",
                                         str(out), "--no-progress"], env=env)
    row = {"dataset": name, "command": "resplit tmcd " + " ".join(arguments), "seconds": round(seconds, 1),
           "peak_mb": round(peak, 1), "exit": done.returncode}
    if done.returncode == 0:
        metadata = yaml.safe_load((out / "README.md").read_text().split("---")[1])
        config = metadata["resplit"]["configs"].get("tmcd", {})
        row["compound_divergence"] = _find(config, "compound_divergence") or _find(metadata["resplit"],
                                                                                   "compound_divergence")
    else:
        row["error"] = (done.stderr.strip().splitlines() or [""])[-1][:300]
    return row


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated row counts")
    parser.add_argument("--work", default=None, help="folder for inputs and outputs (default: a temporary one)")
    parser.add_argument("--no-stages", action="store_true", help="end-to-end runs only")
    parser.add_argument("--no-tmcd", action="store_true", help="skip TMCD on SCAN and COGS")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--stage-run", nargs=3, metavar=("TABLE", "SCORES", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--make-inputs", nargs=2, metavar=("ROWS", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.stage_run:
        print(json.dumps(stage_run(*map(Path, args.stage_run))))
        return {}
    if args.make_inputs:
        make_inputs(int(args.make_inputs[0]), Path(args.make_inputs[1]))
        return {}

    sizes = [int(float(size)) for size in args.sizes.split(",")]
    work = Path(args.work or tempfile.mkdtemp(prefix="resplit-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = {"machine": f"{os.cpu_count()} CPU cores", "sizes": sizes, "likelihood": [], "tmcd": []}
    print(f"{'rows':>10} {'stage':<10} {'seconds':>9} {'peak MB':>9}")
    for n_rows in sizes:
        # In a child process: Linux keeps a process's peak memory across fork and exec, so the
        # processes measured below must not be started by one that built a million strings.
        subprocess.run([sys.executable, __file__, "--make-inputs", str(n_rows), str(work)], check=True, env=env)
        table, scores = work / f"nli-{n_rows}.parquet", work / f"nli-{n_rows}.npy"
        row = {"rows": n_rows}
        if not args.no_stages:
            _, _, done = _run_measured([sys.executable, __file__, "--stage-run", str(table), str(scores),
                                        str(work / f"stages-{n_rows}")], env=env)
            if done.returncode:
                raise SystemExit(done.stderr[-3000:])
            row["stages"] = json.loads(done.stdout.strip().splitlines()[-1])
            for stage in STAGES:
                print(f"{n_rows:>10} {stage:<10} {row['stages'][stage]['seconds']:>9.2f} "
                      f"{row['stages'][stage]['peak_mb']:>9.0f}")
        seconds, peak, done = _run_measured([sys.executable, "-m", "split_builders.cli",
                                             *likelihood_args(table, scores, work / f"cli-{n_rows}")], env=env)
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        row.update(end_to_end_seconds=round(seconds, 2), end_to_end_peak_mb=round(peak, 1))
        print(f"{n_rows:>10} {'END TO END':<10} {seconds:>9.2f} {peak:>9.0f}   (resplit likelihood, a subprocess)")
        result["likelihood"].append(row)
        for folder in (work / f"stages-{n_rows}", work / f"cli-{n_rows}"):
            subprocess.run(["rm", "-rf", str(folder)], check=False)

    done_sizes = [r["rows"] for r in result["likelihood"]]
    result["growth_exponent"] = {"end_to_end": growth_exponent(done_sizes, [r["end_to_end_seconds"]
                                                                            for r in result["likelihood"]])}
    if not args.no_stages:
        for stage in STAGES:
            result["growth_exponent"][stage] = growth_exponent(
                done_sizes, [max(r["stages"][stage]["seconds"], 1e-3) for r in result["likelihood"]])
    by_size = {r["rows"]: r["end_to_end_seconds"] for r in result["likelihood"]}
    if 100000 in by_size and 1000000 in by_size:
        result["ratio_1m_100k"] = round(by_size[1000000] / by_size[100000], 2)
    print("\ngrowth exponent b of time ~ rows^b: " + ", ".join(
        f"{k} {v:.2f}" for k, v in result["growth_exponent"].items() if v is not None))
    if "ratio_1m_100k" in result:
        print(f"1M / 100k end-to-end time ratio: {result['ratio_1m_100k']}")

    if not args.no_tmcd:
        runs = {"scan": ["--source", str(SHARED / "scan"), "--train-size", "0.8", "--seed", "1"],
                "cogs": ["--source", str(SHARED / "cogs"), "--train-size", "24155", "--seed", "1"]}
        print(f"\n{'dataset':<8} {'seconds':>9} {'peak MB':>9} {'compound divergence':>20}")
        for name, arguments in runs.items():
            row = tmcd_run(name, arguments, work, env)
            result["tmcd"].append(row)
            print(f"{name:<8} {row['seconds']:>9.1f} {row['peak_mb']:>9.0f} "
                  f"{row.get('compound_divergence', row.get('error', '')):>20}")
    if args.json:
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
