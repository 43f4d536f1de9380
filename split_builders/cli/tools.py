"""``resplit list`` (every split method, its paper and configs) and ``resplit show FOLDER [CONFIG]``
(a release of any family: its provenance, its configs and, of one config, the rows at both ends of
its signal (the least and most likely, the hardest and easiest), or its first rows where it has none)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def run_list(args) -> int:
    from split_builders.registry import registry

    for method in registry().values():
        print(f"{method.name}\n  {method.summary}\n  paper:   {method.paper}")
        print("  configs: " + ", ".join(method.config_names))
        source = method.default_source or "required"
        print(f"  source:  --source{''.join(' / ' + a for a in method.source_aliases)} ({source})\n")
    return 0


def run_show(args) -> int:
    from split_builders.errors import InvalidParameterError
    from split_builders.release.folder import Released
    from split_builders.splits import check_number

    check_number(args.rows, "--rows", integer=True, minimum=1)  # before anything is read
    folder = Path(args.folder)
    # The release's one reader: its card only, and with CONFIG that config's data files, each checked against
    # the sha256 the card records (a damaged file is one line naming it; other configs are not read).
    released = Released(folder, configs=None, hint="; or show another config")
    resplit = released.record
    configs = resplit.get("configs") if isinstance(resplit.get("configs"), dict) else {}
    source = resplit.get("source") if isinstance(resplit.get("source"), dict) else {}
    print(f"{folder}: {resplit.get('method', '?')} release (resplit {resplit.get('version', '?')}, schema "
          f"{resplit.get('schema', '?')}), seed {resplit.get('seed')}, source {source.get('name')} "
          f"({source.get('rows')} rows)")
    print(f"{'config':<28}{'train':>8}{'validation':>12}{'test':>8}")
    for name, entry in configs.items():
        rows = (entry.get("rows") if isinstance(entry, dict) else None) or {}
        print(f"{name:<28}{rows.get('train', 0):>8}{rows.get('validation', 0):>12}{rows.get('test', 0):>8}")
    if args.config is None:
        return 0
    if args.config not in configs or args.config not in released.files:
        raise InvalidParameterError(f"config {args.config!r} not in {folder}; available: {', '.join(configs)}")
    loaded = _config_rows(released, args.config)
    print(f"\nload_dataset({str(folder)!r}, {args.config!r}):")
    print(loaded)
    signal = _signal_column(resplit, loaded)
    shown = _shown_columns(resplit, loaded, signal)
    if signal is None:
        for split, part in loaded.items():
            print(f"\n{split}: first rows")
            for row in part.select(range(min(args.rows, len(part)))).select_columns(shown):
                print("  " + _short(row))
        return 0
    # What makes the split: the rows at both ends of the signal, train first and the evaluation splits last.
    order = [s for s in ("train", "validation", "test") if s in loaded]
    for split in order:
        part = loaded[split]
        values = np.asarray(part.data.column(signal).to_numpy(zero_copy_only=False), dtype=float)
        ranked = np.argsort(values, kind="stable")
        k = min(args.rows, len(part))
        for title, picked in ((f"lowest {signal}", ranked[:k]), (f"highest {signal}", ranked[::-1][:k])):
            print(f"\n{split}: {k} rows of {title}")
            for row in part.select(picked.tolist()).select_columns(shown):
                print("  " + _ranked(row, signal, part.features))
    return 0


def _config_rows(released, config: str):
    """One config of a release as a ``datasets.DatasetDict`` (what ``load_dataset(folder, config)`` gives: the
    features its data files record), read through the release's reader."""
    import datasets

    from loading_scripts.tables import quiet_datasets

    with quiet_datasets():
        return datasets.DatasetDict({split: datasets.Dataset(released.table(config, split))
                                     for split in released.files[config]})


def _signal_column(resplit: dict, loaded) -> str | None:
    """The release's first continuous signal column (an LM score, PVI) that the rows carry, as its recorded
    ``resplit.fields`` declares the kinds (else its method's ``signal_columns``); None when there is none
    (a categorical signal, such as a functionality id, has no ends to show)."""
    from split_builders.publishing.diff import signal_kinds

    columns = set(next(iter(loaded.values())).column_names) if loaded else set()
    return next((column for column, kind in signal_kinds(resplit).items()
                 if kind == "continuous" and column in columns), None)


def _shown_columns(resplit: dict, loaded, signal: str | None) -> list:
    """The columns a row is shown by: its declared text, label and target (``resplit.fields``) and the
    signal, else every column."""
    from split_builders.contracts import Fields

    columns = next(iter(loaded.values())).column_names if loaded else []
    fields = Fields.from_record(resplit)
    if fields is None:
        return columns
    wanted = [c for c in (*fields.text, fields.target, fields.label, signal) if c and c in columns]
    return list(dict.fromkeys(wanted)) or columns


def _ranked(row: dict, signal: str, features, width: int = 200) -> str:
    """A row at one end of the signal: the signal, the label by name, then the texts in full (as far as
    ``width`` allows)."""
    import datasets

    cells = [f"{signal}={row.pop(signal):.3f}"]
    for key, value in list(row.items()):
        if isinstance(features.get(key), datasets.ClassLabel) and isinstance(value, int) and value >= 0:
            cells.append(f"{key}={features[key].int2str(value)}")
            row.pop(key)
    cells += [str(value) for value in row.values()]
    line = "  ".join(cells)
    return line if len(line) <= width else line[: width - 3] + "..."


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
    parser.add_argument("config", nargs="?", help="a config to load and print the rows at both ends of its "
                                                       "signal of (else its first rows)")
    parser.add_argument("--rows", type=int, default=3, help="rows to print at each end per split (default 3; at least 1)")
    parser.set_defaults(func=run_show)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["show", *sys.argv[1:]]))
