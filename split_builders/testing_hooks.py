"""The checks of :func:`split_builders.testing.check_method` that call a method's hooks in-process, before any
release is built: what ``configs`` and ``rows`` return against what the method declares (config names, signal
columns, sizes asked for), determinism (two runs with the same seed), the row order rule (the same rows in another
order) and the hooks every release needs (``fields``, ``rederive``). Each failure names the hook, what was expected
and what came back. A run of the hooks (:class:`HookRun`) is made once per variant and shared by every check
(``Case.hooks``)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from split_builders.contracts import SplitMethod, config_pattern
from split_builders.splitters.groups import SIZE_TOLERANCE

SHOWN = 5  # row numbers shown in a message


@dataclass
class HookRun:
    """What ``load``, ``signal``, ``configs``, ``rows`` and ``fields`` returned for one set of options."""

    options: object
    loaded: object
    signal: object
    configs: list
    rows: object
    fields: object


def options_of(method: SplitMethod, arguments: list, out: Path, seed: int):
    """The method's options from command-line ``arguments`` (as ``resplit NAME ARGUMENTS`` reads them)."""
    import argparse

    from split_builders.cli import add_options

    parser = argparse.ArgumentParser(prog=method.name)
    names = add_options(parser, method)
    args = parser.parse_args([*map(str, arguments), "--out", str(out), "--seed", str(seed)])
    return method.options(**{name: getattr(args, name) for name in names if hasattr(args, name)})


def run_hooks(method: SplitMethod, options) -> HookRun:
    """The hooks a build calls, in its order, quietly (no groups, no dedupe: the example's own arguments)."""
    import warnings

    from split_builders.contracts import Context

    context = Context(progress=False, verbose=False, log=lambda *args, **kwargs: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = method.load(options)
        method.check_loaded(loaded, options)
        signal = method.signal(loaded, options, context)
        configs = method.configs(loaded, signal, options)
        rows = method.rows(loaded, signal, configs)
        fields = method.fields(loaded, signal, options)
    return HookRun(options, loaded, signal, configs, rows, fields)


def _rows_of(run: HookRun, config):
    rows = config.rows if config.rows is not None else run.rows
    assert rows is not None, (f"rows(): returned None, and config {config.name!r} brings no rows of its own "
                              "(ConfigSplit.rows); return the released rows")
    return rows


def _shown(rows) -> str:
    rows = [int(r) for r in rows]
    return ", ".join(map(str, rows[:SHOWN])) + (" ..." if len(rows) > SHOWN else "")


# -- the checks -----------------------------------------------------------------------------------------------


def check_hooks(case) -> None:
    """``fields`` returns the released rows' :class:`~split_builders.contracts.Fields` and ``rederive`` is
    implemented: every release records its fields, and ``verify`` level 2 re-derives its configs with it."""
    method, run = case.method, case.hooks()
    assert type(method).rederive is not SplitMethod.rederive, (
        "rederive(): not implemented (SplitMethod's default returns no config), so `resplit verify` checks no "
        "config of a release; expected the configs re-derived from the released rows through the same config "
        "builder configs() calls")
    assert run.fields is not None, (
        "fields(): returned None; expected a Fields naming the released rows' text, query and label columns "
        "(what the audit, diagnostics, probe, harness tasks and Hub metadata read)")


def check_configs(case) -> None:
    """Every config ``configs`` builds is declared in ``config_names`` (a name or a ``<...>`` pattern) and built
    once, and puts each row in one split only (overlapping rows are named by split and row number)."""
    from split_builders.splits import SPLITS

    method, run = case.method, case.hooks()
    declared = method.info.config_names
    names = [config.name for config in run.configs]
    assert names, "configs(): returned no config; expected the configs of config_names"
    repeated = sorted({name for name in names if names.count(name) > 1})
    assert not repeated, f"configs(): built config(s) {repeated} more than once; expected each config once"
    undeclared = [name for name in names if not any(config_pattern(p).fullmatch(name) or fnmatch.fnmatchcase(name, p)
                                                    for p in declared)]
    assert not undeclared, (f"configs(): built config(s) {undeclared}, which config_names does not declare "
                            f"(declared: {list(declared)}); declare every config the method builds")
    for config in run.configs:
        unknown = sorted(set(config.indices) - set(SPLITS))
        assert not unknown, f"configs(): config {config.name!r} has split(s) {unknown}; expected {list(SPLITS)}"
        n_rows = len(_rows_of(run, config))
        present = [s for s in SPLITS if s in config.indices]
        for i, first in enumerate(present):
            a = np.asarray(config.indices[first], dtype=np.int64)
            outside = a[(a < 0) | (a >= n_rows)]
            assert not outside.size, (f"configs(): config {config.name!r} {first} has row number(s) "
                                      f"{_shown(outside)} outside 0..{n_rows - 1} (the rows rows() returns)")
            for second in present[i + 1:]:
                both = np.intersect1d(a, np.asarray(config.indices[second], dtype=np.int64))
                assert not both.size, (f"configs(): config {config.name!r} puts {both.size} row(s) in both {first} "
                                       f"and {second} (row numbers {_shown(both)}); expected each row in one split")


def requested_sizes(config) -> dict:
    """``{split: rows}`` a config was asked for: its own ``requested`` where it says, else the counts its recorded
    ``parameters`` give as ``train_size``, ``validation_size`` and ``test_size`` (a splitter's ``get_params``). A
    fraction is not compared: what it is a fraction of is the splitter's to say (PVI's validation share of a part)."""
    if config.requested:
        return {split: int(rows) for split, rows in config.requested.items()}
    asked = {}
    for split in ("train", "validation", "test"):
        value = config.parameters.get(f"{split}_size")
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            asked[split] = int(value)
    return asked


def check_sizes(case) -> None:
    """Each config's splits hold the rows asked of them (:func:`requested_sizes`) within
    :data:`~split_builders.splitters.groups.SIZE_TOLERANCE` of each (label balance rounds a size down); a split
    asked for rows is never empty."""
    run = case.hooks()
    for config in run.configs:
        gaps = []
        for split, wanted in requested_sizes(config).items():
            got = len(config.indices.get(split, ()))
            if (wanted and not got) or abs(got - wanted) > SIZE_TOLERANCE * wanted:
                gaps.append(f"{split} {got} rows for {wanted} requested")
        assert not gaps, (f"configs(): config {config.name!r} has " + ", ".join(gaps)
                          + f" (tolerance {SIZE_TOLERANCE:.0%} of each); expected the sizes its options ask for")


def _columns(rows) -> list:
    return list(rows.column_names)


def _ranks(values) -> np.ndarray | None:
    """Dense ranks of a numeric per-row column (None for any other)."""
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if values.ndim != 1 or np.isnan(values).any():
        return None
    return np.unique(values, return_inverse=True)[1].reshape(-1)


def check_signal_columns(case) -> None:
    """The signal the rows carry is declared: where the rows hold any column of ``signal_columns`` (or
    the signal's own values), no column beyond them holds the same values or their order (a copy of the signal under
    a name the card, diagnostics and ``diff`` do not read as the signal)."""
    method, run = case.method, case.hooks()
    declared = dict(method.info.signal_columns)
    for config in run.configs:
        rows = _rows_of(run, config)
        columns = _columns(rows)
        signals = {c: _ranks(rows[c]) for c in declared if c in columns}
        values = getattr(run.signal, "values", None)
        if isinstance(values, np.ndarray) and values.ndim == 1 and len(values) == len(rows):
            signals["the signal's values"] = _ranks(values)
        signals = {name: ranks for name, ranks in signals.items() if ranks is not None and np.unique(ranks).size > 2}
        for column in (c for c in columns if c not in declared and c != "source_id"):
            ranks = _ranks(rows[column])
            if ranks is None:
                continue
            for name, signal in signals.items():
                same = np.array_equal(ranks, signal) or np.array_equal(ranks.max() - ranks, signal)
                assert not same, (f"rows(): column {column!r} of {config.name!r} holds {name} (or its order) and is "
                                  f"not declared (signal_columns: {list(declared)}); declare it in signal_columns "
                                  "with its kind")
        if config.rows is None:
            break  # the one table every config indexes: checked once


def _differs(a, b, tolerance: float = 0.0) -> int:
    """How many positions of two per-row value lists differ (NaN equals NaN; numbers within ``tolerance``)."""
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape != b.shape:
        return max(a.size, b.size)

    def near(x, y) -> bool:
        numbers = all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in (x, y))
        return bool(tolerance) and numbers and abs(float(x) - float(y)) <= tolerance

    same = [(x == y) or (x != x and y != y) or near(x, y) for x, y in zip(a.tolist(), b.tolist())]
    return int(len(same) - sum(bool(s) for s in same))


def check_determinism(case) -> None:
    """Two runs with the same seed give the same signal (every declared signal column, row for row) and the same
    configs (names, and the rows of every split). Where the example release is already there (a given one), the
    run is compared with it, by ``source_id``; else a second run is made (cheaper than a build)."""
    first = case.hooks()
    if case.release is not None:
        return _same_as_release(case, first)
    again, seed = case.hooks("again"), first.options.seed
    tolerance, moved = case.method.info.signal_tolerance, False
    for config, other in zip(first.configs, again.configs):
        rows, rows_again = _rows_of(first, config), _rows_of(again, other)
        for column in (c for c in case.method.info.signal_columns if c in _columns(rows) and c in _columns(rows_again)):
            changed = _differs(rows[column], rows_again[column], tolerance)
            within = f" by more than its declared signal_tolerance {tolerance:g}" if tolerance else ""
            assert not changed, (f"signal(): two runs with seed {seed} gave different `{column}` values{within} in "
                                 f"{changed} row(s); expected the same signal (seed every random choice with "
                                 "options.seed, or declare a stochastic signal's bound: MethodInfo(signal_tolerance=))")
            moved = moved or bool(_differs(rows[column], rows_again[column]))
        if config.rows is None:
            break
    if moved:  # a declared stochastic signal moved (within its bound): its configs may move with it
        return
    _same_configs(seed, {c.name: {s: np.asarray(v, dtype=np.int64) for s, v in c.indices.items()}
                         for c in first.configs},
                  {c.name: {s: np.asarray(v, dtype=np.int64) for s, v in c.indices.items()} for c in again.configs})


def _same_configs(seed, first: dict, again: dict) -> None:
    """``{config: {split: ids}}`` of two runs are the same, or the message names the config, split and rows."""
    assert list(first) == list(again), (f"configs(): two runs with seed {seed} built configs {list(first)} and then "
                                        f"{list(again)}; expected the same configs")
    for name, splits in first.items():
        for split in sorted(set(splits) | set(again[name])):
            moved = np.setxor1d(splits.get(split, np.array([], dtype=np.int64)),
                                again[name].get(split, np.array([], dtype=np.int64)))
            assert not moved.size, (f"configs(): two runs with seed {seed} put different rows in {name!r} {split} "
                                    f"({moved.size} row(s) differ: {_shown(moved)}); expected the same configs "
                                    "(seed every draw with options.seed)")


def _same_as_release(case, run: HookRun) -> None:
    """The run's configs and signal columns against the example release's (built with the same seed)."""
    import pyarrow.parquet as pq

    folder, seed = case.built(), run.options.seed
    released, built = {}, {}
    for config in run.configs:
        rows = _rows_of(run, config)
        ids = np.asarray(rows["source_id"], dtype=np.int64)
        built[config.name] = {s: ids[np.asarray(v, dtype=np.int64)] for s, v in config.indices.items() if len(v)}
        released[config.name] = {}
        signals = [c for c in case.method.info.signal_columns if c in _columns(rows)]
        for path in sorted((folder / config.name).glob("*-00000-of-*.parquet")):
            split = path.name.split("-", 1)[0]
            table = pq.read_table(path, columns=["source_id", *signals])
            released[config.name][split] = np.asarray(table.column("source_id").to_numpy(), dtype=np.int64)
            at = {int(i): n for n, i in enumerate(ids)}
            for column in signals:
                mine = [rows[column][at[int(i)]] for i in released[config.name][split] if int(i) in at]
                changed = _differs(mine, table.column(column).to_pylist()[:len(mine)],
                                   case.method.info.signal_tolerance)
                assert not changed, (f"signal(): a run with seed {seed} gave `{column}` values that differ from the "
                                     f"example release's (built with the same seed) in {changed} row(s) of "
                                     f"{config.name!r} {split}; expected the same signal")
    _same_configs(seed, built, released)


ROW_ORDER_SUFFIXES = (".jsonl", ".csv", ".parquet")


def reordered_source(source: Path, folder: Path) -> Path | None:
    """The rows of a one-file table source in reverse order, as a file of the same format in ``folder``; None for
    any other source."""
    if not source.is_file() or source.suffix not in ROW_ORDER_SUFFIXES:
        return None
    target = folder / f"reordered{source.suffix}"
    if source.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(source)
        pq.write_table(table.take(np.arange(table.num_rows)[::-1]), target)
        return target
    lines = source.read_bytes().splitlines(keepends=True)
    lines[-1:] = [lines[-1].rstrip(b"\r\n") + b"\n"] if lines else []
    header, body = (lines[:1], lines[1:]) if source.suffix == ".csv" else ([], lines)
    target.write_bytes(b"".join([*header, *body[::-1]]))
    return target


def _contents(rows, indices, skip: set) -> list:
    """The rows at ``indices`` as sorted texts of their values (``source_id`` and ``skip`` left out)."""
    import json

    names = [c for c in rows.column_names if c != "source_id" and c not in skip]
    picked = rows.select_columns(names).select(np.asarray(indices, dtype=np.int64))
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in picked)


def check_row_order(case) -> None:
    """Under the row order rule ``content`` (the default), the same rows in another order give the same configs:
    each split holds the same rows, compared by content. Applies where the example reads one table file (JSONL,
    CSV, Parquet) and no other file and no ``--limit`` (a given per-row file follows the source's order)."""
    run = case.hooks()
    if getattr(run.options, "row_order", None) != "content":
        return
    arguments = case.without_source()
    others = [a for a in arguments if a not in ("",) and Path(a).exists()]
    if others or "--limit" in arguments:
        return
    reordered = reordered_source(case.source(), case.scratch("row-order"))
    if reordered is None:
        return
    other = case.hooks("reordered", source=reordered)
    skip = set(case.method.info.signal_columns)
    for config, again in zip(run.configs, other.configs):
        for split in config.splits:
            same = (_contents(_rows_of(run, config), config.indices[split], skip)
                    == _contents(_rows_of(other, again), again.indices.get(split, ()), skip))
            assert same, (f"configs(): the row order rule `content` was not honoured: the same rows in reverse order "
                          f"gave other rows in {config.name!r} {split}; expected the same configs (take every draw "
                          "and tie-break in the rows' content order: split_builders.api.in_row_order)")


HOOK_CHECKS = {"hooks": check_hooks, "configs": check_configs, "sizes": check_sizes,
               "signal_columns": check_signal_columns, "determinism": check_determinism, "row_order": check_row_order}
"""The checks that call the hooks in-process, by name, in the order :func:`~split_builders.testing.check_method`
runs them (before any check that reads the example release)."""
