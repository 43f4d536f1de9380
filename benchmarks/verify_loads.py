"""How long ``resplit verify``'s load check (level 1: every config loads with ``datasets``) takes on a release.

    python benchmarks/verify_loads.py FOLDER                 # before and after, every config
    python benchmarks/verify_loads.py FOLDER --before 20     # before on the first 20 configs only (it is slow)
    python benchmarks/verify_loads.py FOLDER --no-before

*Before*: every config loaded through the README, ``datasets.load_dataset(FOLDER, config)``, which
re-reads the whole README (its YAML, pure-Python PyYAML, and a hash of every config) on each call: time
quadratic in the configs. *After*: the README's configs and dataset_info read once, the first config
loaded through the README, every other one from its data files with its recorded features and split sizes
(:func:`split_builders.publishing.verify._check_loads`). Both into a fresh ``datasets`` cache, wall and CPU
seconds, side by side with the seconds per config; both must report the same findings (none on a good
release).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run(folder: Path, configs: list, plan) -> tuple[float, float, list]:
    from split_builders.publishing.verify import Report, _check_loads

    report = Report(str(folder))
    with tempfile.TemporaryDirectory(prefix="verify-loads-") as cache:
        start, cpu = time.perf_counter(), time.process_time()
        for config in configs:
            _check_loads(folder, config, cache, report, plan)
        return time.perf_counter() - start, time.process_time() - cpu, [f.line() for f in report.findings]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--before", type=int, help="configs loaded the former way (default: all)")
    parser.add_argument("--no-before", action="store_true")
    args = parser.parse_args(argv)
    import datasets

    from split_builders.release.folder import Released
    from split_builders.publishing.verify import _load_plan

    datasets.disable_progress_bars()
    released = Released(args.folder)
    configs = list(released.files)
    size = (args.folder / "README.md").stat().st_size
    print(f"{args.folder}: {len(configs)} configs, README.md {size / 1024:.0f} KiB; datasets {datasets.__version__}")
    start = time.perf_counter()
    plan = _load_plan(released)  # read once per verify (its time is in the after column)
    parse = time.perf_counter() - start
    wall, cpu, found = run(args.folder, configs, plan)
    wall += parse
    rows = [("after", len(configs), wall, cpu, found)]
    if not args.no_before:
        some = configs[: args.before or len(configs)]
        rows.insert(0, ("before", len(some), *run(args.folder, some, None)))
    print(f"{'':<8}{'configs':>8}{'seconds':>10}{'CPU s':>9}{'s/config':>10}  findings")
    for name, n, seconds, cpu_seconds, findings in rows:
        print(f"{name:<8}{n:>8}{seconds:>10.1f}{cpu_seconds:>9.1f}{seconds / max(n, 1):>10.3f}  {len(findings)}")
        for line in findings[:5]:
            print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
