"""I_V of every CURRICULUM phenomenon with resplit's CPU family, against the paper's Table 2.

    python benchmarks/pvi_curriculum.py --data ../shared/data/curriculum [--max-rows N] [--out FILE]

For each phenomenon: cross-fitted PVI (5 folds, rows sharing a premise share a fold, label-prior
null model, hashed n-gram linear family) over train + validation pooled; I_V is reported on the
released validation rows (``iv_val``, the paper's protocol evaluates held-out rows) and on all rows
(``iv_all``), with held-out accuracy and wall time. Then Spearman's rho and Kendall's tau between
``iv_val`` and the paper's values (``paper_table2_iv.json``). Per-fold scores are checkpointed
under ``--cache-dir``, so an interrupted run resumes. ``--max-rows`` caps each phenomenon to a
seeded, label-stratified sample of its pooled rows (say so when reporting figures).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loading_scripts.curriculum import find_zips, read_phenomenon, read_tasks_json  # noqa: E402
from split_builders.signals.pvi.crossfit import CrossFitPVI  # noqa: E402
from split_builders.signals.pvi.families import HashedNgramFamily  # noqa: E402


def cap(n_rows: int, labels: np.ndarray, max_rows: int | None, seed: int) -> np.ndarray:
    """Row positions kept: all, or a seeded label-stratified sample of ``max_rows``."""
    if max_rows is None or n_rows <= max_rows:
        return np.arange(n_rows)
    rng = np.random.RandomState(seed)
    keep = []
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        take = int(round(max_rows * rows.size / n_rows))
        keep.append(np.sort(rng.choice(rows, size=min(take, rows.size), replace=False)))
    return np.sort(np.concatenate(keep))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "curriculum"))
    parser.add_argument("--phenomena", help="comma-separated subset")
    parser.add_argument("--max-rows", type=int, help="cap pooled rows per phenomenon")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--cache-dir", default=str(REPO / ".cache" / "resplit" / "pvi"))
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "pvi_curriculum.json"))
    args = parser.parse_args(argv)

    from scipy.stats import kendalltau, spearmanr

    zips = find_zips(args.data)
    tasks = read_tasks_json(args.data)
    paper_file = Path(args.data) / "paper_table2_iv.json"
    if not paper_file.is_file():
        paper_file = Path(args.data).parent / "paper_table2_iv.json"
    paper = {k: v["iv"] for k, v in json.loads(paper_file.read_text())["values"].items()}
    names = args.phenomena.split(",") if args.phenomena else list(zips)
    family = HashedNgramFamily(random_state=args.seed)
    scorer = CrossFitPVI(family, folds=args.folds, random_state=args.seed, cache_dir=args.cache_dir)
    results, start = {}, time.perf_counter()
    print(f"{'phenomenon':<22}{'rows':>8}{'I_V val':>9}{'I_V all':>9}{'acc':>7}{'paper':>7}{'sec':>7}", flush=True)
    for name in names:
        t0 = time.perf_counter()
        p = read_phenomenon(zips[name], info=tasks.get(name))
        labels = np.asarray(p.rows["label"])
        keep = cap(len(labels), labels, args.max_rows, args.seed)
        premises = [p.rows["premise"][i] for i in keep] if len(keep) < len(labels) else p.rows["premise"]
        hypotheses = [p.rows["hypothesis"][i] for i in keep] if len(keep) < len(labels) else p.rows["hypothesis"]
        result = scorer.compute(list(zip(premises, hypotheses)), labels[keep], len(p.label_set), groups=premises)
        is_val = keep >= p.split_sizes["train"]
        seconds = time.perf_counter() - t0
        results[name] = {"rows": int(len(keep)), "validation_rows": int(is_val.sum()),
                         "iv_val": float(result.pvi[is_val].mean()), "iv_all": float(result.pvi.mean()),
                         "accuracy_val": float(result.correct[is_val].mean()), "paper_iv": paper.get(name),
                         "seconds": round(seconds, 1), "category": p.category, "abbrev": p.abbrev}
        r = results[name]
        print(f"{name:<22}{r['rows']:>8}{r['iv_val']:>9.3f}{r['iv_all']:>9.3f}{r['accuracy_val']:>7.3f}"
              f"{r['paper_iv'] if r['paper_iv'] is not None else float('nan'):>7.2f}{seconds:>7.1f}", flush=True)
    total = time.perf_counter() - start
    common = [n for n in results if results[n]["paper_iv"] is not None]
    ours = [results[n]["iv_val"] for n in common]
    theirs = [results[n]["paper_iv"] for n in common]
    rho, tau = spearmanr(ours, theirs), kendalltau(ours, theirs)
    summary = {"phenomena": len(results), "rows": sum(r["rows"] for r in results.values()),
               "seconds_total": round(total, 1), "spearman_rho": float(rho.statistic), "spearman_p": float(rho.pvalue),
               "kendall_tau": float(tau.statistic), "kendall_p": float(tau.pvalue),
               "max_rows": args.max_rows, "folds": args.folds, "family": family.fingerprint(),
               "machine": {"python": platform.python_version(), "processor": platform.processor(),
                           "cpus_visible": __import__("os").cpu_count()}}
    print(f"\n{summary['rows']} rows over {summary['phenomena']} phenomena in {total / 60:.1f} min; "
          f"Spearman rho {summary['spearman_rho']:.3f} (p={summary['spearman_p']:.3g}), "
          f"Kendall tau {summary['kendall_tau']:.3f} (p={summary['kendall_p']:.3g}) vs the paper's Table 2")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "phenomena": results}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
