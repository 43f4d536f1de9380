"""``resplit list`` (every split method, its paper and configs) and ``resplit show FOLDER [CONFIG]``
(a release of any family: its provenance, its configs and a few rows of one)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def run_list(args) -> int:
    from split_builders.api import registry

    for method in registry().values():
        print(f"{method.name}\n  {method.summary}\n  paper:   {method.paper}")
        print("  configs: " + ", ".join(method.config_names))
        source = method.default_source or "required"
        print(f"  source:  --source{''.join(' / ' + a for a in method.source_aliases)} ({source})\n")
    return 0


def run_show(args) -> int:
    import datasets

    from split_builders.errors import InvalidParameterError

    from split_builders.release.folder import read_card

    folder = Path(args.folder)
    metadata, _ = read_card(folder)
    resplit = metadata.get("resplit") or {}
    configs = resplit.get("configs") or {}
    source = resplit.get("source") or {}
    print(f"{folder}: {resplit.get('method', '?')} release (resplit {resplit.get('version', '?')}, schema "
          f"{resplit.get('schema', '?')}), seed {resplit.get('seed')}, source {source.get('name')} "
          f"({source.get('rows')} rows)")
    print(f"{'config':<28}{'train':>8}{'validation':>12}{'test':>8}")
    for name, entry in configs.items():
        rows = entry.get("rows", {})
        print(f"{name:<28}{rows.get('train', 0):>8}{rows.get('validation', 0):>12}{rows.get('test', 0):>8}")
    if args.config is None:
        return 0
    if args.config not in configs:
        raise InvalidParameterError(f"config {args.config!r} not in {folder}; available: {', '.join(configs)}")
    with tempfile.TemporaryDirectory() as cache:  # a fresh cache: never a stale copy of the folder
        datasets.disable_progress_bars()
        loaded = datasets.load_dataset(str(folder), args.config, cache_dir=cache)
        print(f"\nload_dataset({str(folder)!r}, {args.config!r}):")
        print(loaded)
        for split, part in loaded.items():
            print(f"\n{split}: first rows")
            for row in part.select(range(min(args.rows, len(part)))):
                print("  " + _short(row))
    return 0


def _short(row: dict, width: int = 160) -> str:
    cells = []
    for key, value in row.items():
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        cells.append(f"{key}={text[:40]}")
    line = "  ".join(cells)
    return line if len(line) <= width else line[: width - 3] + "..."


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser("list", help="every split method, its paper and its configs")
    parser.set_defaults(func=run_list)
    parser = subparsers.add_parser("show", help="a release folder of any family: provenance, configs, rows")
    parser.add_argument("folder", help="a release folder")
    parser.add_argument("config", nargs="?", help="a config to load and print a few rows of")
    parser.add_argument("--rows", type=int, default=3, help="rows to print per split (default 3)")
    parser.set_defaults(func=run_show)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["show", *sys.argv[1:]]))
