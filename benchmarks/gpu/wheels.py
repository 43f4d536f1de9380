"""Bring what the GPU machine lacks: the wheels of the GPU steps' imports, and the SNLI dev file.

The GPU machine (Python 3.12, manylinux x86-64) has torch, transformers, accelerate, tokenizers,
safetensors, pyarrow, pandas, scipy and scikit-learn, but no network. The GPU steps of
``benchmarks/gpu/check.py`` also import ``datasets`` (``loading_scripts``, the PVI transformers family, the
build), ``nltk`` (word lengths in the likelihood method), ``datasketch`` (the build's leakage audit) and
``matplotlib`` (the build's card figures), with their own dependencies. This script downloads exactly
those wheels (pinned to the versions installed here, the combination the tests run) with::

    pip download --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \\
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --no-deps -d benchmarks/gpu/wheels \\
        PACKAGE==VERSION ...

copies ``../shared/data/snli/snli_1.0_dev.jsonl.gz`` beside them, and checks that the folder stays under
``--max-mib`` (default 50: a device call carries at most 64 MiB, the working tree included). The
diagnostics' word lists (wordfreq, pyphen) and gguf are left out: the check runs with ``--null-splits 0``
and builds its models from configs.

    python benchmarks/gpu/wheels.py                  # here, with network: fills benchmarks/gpu/wheels/
    python benchmarks/gpu/wheels.py --list           # only print what it would download

``benchmarks/gpu/wheels/`` is ignored by git: pass it in the device call's ``carry``. On the GPU machine,
``python benchmarks/gpu/check.py --device cuda`` installs them itself, with
``pip install --no-index --no-deps --target <work>/site benchmarks/gpu/wheels/*.whl``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHEELS = HERE / "wheels"
SNLI = HERE.parents[2] / "shared" / "data" / "snli" / "snli_1.0_dev.jsonl.gz"

# The distributions the GPU steps import that the GPU machine lacks, with the dependencies that it lacks too.
NEEDED = (
    "datasets", "dill", "multiprocess", "xxhash", "fsspec",          # datasets (pyarrow, pandas, hub: there)
    "nltk", "click", "defusedxml",                                   # nltk (regex, joblib, tqdm: there)
    "datasketch",                                                    # the audit's MinHash LSH (numpy, scipy)
    "matplotlib", "contourpy", "cycler", "fonttools", "kiwisolver", "pillow", "pyparsing",  # card figures
)
OPTIONAL = ("rensa",)
# pip does not count an older manylinux tag as compatible with a newer one it is given: name each.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")  # brought when installed here (a faster near-duplicate search the audit may use)


def pinned(names=NEEDED, optional=OPTIONAL) -> list[str]:
    """``name==version`` of each distribution as installed here (optional ones only where installed)."""
    specs = []
    for name in (*names, *optional):
        try:
            specs.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            if name not in optional:
                raise SystemExit(f"{name} is not installed here: install the project's requirements first")
    return specs


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2 ** 20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=WHEELS)
    parser.add_argument("--python-version", default="3.12")
    parser.add_argument("--platform", action="append", default=None,
                        help="wheel platform tag, repeatable (default: manylinux_2_28, _2_17 and 2014, x86-64)")
    parser.add_argument("--max-mib", type=float, default=50.0)
    parser.add_argument("--also", action="append", default=[], help="another requirement (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the requirements and stop")
    args = parser.parse_args(argv)

    specs = pinned() + args.also
    if args.list:
        print("\n".join(specs))
        return 0
    args.dest.mkdir(parents=True, exist_ok=True)
    platforms = args.platform or list(PLATFORMS)
    command = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--python-version", args.python_version,
               "--implementation", "cp", *(f"--platform={p}" for p in platforms), "--no-deps", "-d", str(args.dest),
               *specs]
    print(" ".join(command[2:]), flush=True)
    subprocess.run(command, check=True)
    if SNLI.is_file():
        shutil.copy2(SNLI, args.dest / SNLI.name)
    else:
        print(f"warning: {SNLI} not found; check.py will fall back to the bundled 2,000-row sample", file=sys.stderr)
    wanted = {spec.split("==")[0].lower().replace("-", "_") for spec in specs}
    stale = [p for p in args.dest.glob("*.whl") if p.name.split("-")[0].lower() not in wanted]
    for path in stale:  # wheels of an earlier list
        path.unlink()
    size = folder_mib(args.dest)
    print(f"{len(list(args.dest.glob('*.whl')))} wheels + data in {args.dest}: {size:.1f} MiB")
    if size > args.max_mib:
        print(f"error: {size:.1f} MiB is over the {args.max_mib:.0f} MiB budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
