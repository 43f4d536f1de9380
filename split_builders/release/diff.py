"""``resplit diff A B``: what changed between two releases (folders or ``HUB_ID@REVISION``).

Per config and split: rows added, removed, and moved between splits (by ``source_id``); the
parameters and provenance that changed (model, source revision, seed, resplit version, ...); and how
the split statistics changed (Kolmogorov-Smirnov statistic of the score between train and test,
compound and atom divergence, I_V). :func:`count_moves` is the one comparison of index sets:
``push`` writes its CHANGELOG section from it too.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

IGNORED = ("configs", "release_version")  # per-config entries are compared row by row instead


def count_moves(previous: dict, current: dict) -> dict:
    """Per config, rows whose split changed between two versions.

    ``previous`` and ``current`` map config -> split -> source ids. Returns config ->
    ``{"moved": n, "pairs": {"train->test": n, ...}, "added": n, "removed": n}``; configs missing
    from ``previous`` are new (``None``).
    """
    report = {}
    for config, splits in current.items():
        if config not in previous:
            report[config] = None
            continue
        ids_before, where_before, names_before = _located(previous[config])
        ids_after, where_after, names_after = _located(splits)
        _, in_before, in_after = np.intersect1d(ids_before, ids_after, assume_unique=True, return_indices=True)
        was, now = where_before[in_before], where_after[in_after]
        pairs: dict = {}
        for (a, b), n in zip(*np.unique(np.stack([was, now], axis=1), axis=0, return_counts=True)):
            if names_before[a] != names_after[b]:
                pairs[f"{names_before[a]}->{names_after[b]}"] = int(n)
        report[config] = {"moved": sum(pairs.values()), "pairs": dict(sorted(pairs.items())),
                          "added": int(ids_after.size - in_after.size), "removed": int(ids_before.size - in_before.size)}
    return report


def _located(splits: dict) -> tuple:
    """Every id of one config (int64), the number of the split holding it, and the split names."""
    names = list(splits)
    ids = [np.asarray(splits[name], dtype=np.int64).reshape(-1) for name in names]
    where = [np.full(part.size, k, dtype=np.int64) for k, part in enumerate(ids)]
    return (np.concatenate(ids) if ids else np.empty(0, np.int64),
            np.concatenate(where) if where else np.empty(0, np.int64), names)


def _flatten(value, prefix="") -> dict:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _row_order_said(record: dict) -> dict:
    """``record`` with the row order rule it was built under said: a release from before the rule was recorded
    (no ``parameters.row_order``) was built under ``position``."""
    parameters = record.get("parameters")
    if not isinstance(parameters, dict) or "row_order" in parameters:
        return record
    return {**record, "parameters": {**parameters, "row_order": "position"}}


def provenance_changes(a: dict, b: dict) -> dict:
    """``{key: [before, after]}`` for every provenance value that differs (dotted keys); the row order rule
    of a release that does not record it is ``position`` (:func:`_row_order_said`)."""
    a, b = _row_order_said(a), _row_order_said(b)
    flat_a = _flatten({k: v for k, v in a.items() if k not in IGNORED})
    flat_b = _flatten({k: v for k, v in b.items() if k not in IGNORED})
    return {key: [flat_a.get(key), flat_b.get(key)] for key in sorted(flat_a.keys() | flat_b.keys())
            if flat_a.get(key) != flat_b.get(key)}


def signal_kinds(record: dict) -> dict:
    """``{column: kind}`` of a release's signal columns: as its provenance (``resplit:``, ``record``) records
    them in ``fields``, else as its method declares them (``signal_columns``; none for a method not
    registered here)."""
    from split_builders.api import Fields, registry

    fields = Fields.from_record(record)
    if fields is not None and fields.signals:
        return dict(fields.signals)
    method = registry().get(record.get("method"))
    return dict(method.signal_columns) if method is not None else {}


def categorical_statistics(column: str, train, test) -> dict:
    """A categorical signal (ids) of train against test: the total-variation distance of the two splits'
    shares of each value, and the values held out of train (in test, never in train)."""
    train_values, train_counts = np.unique(np.asarray(train), return_counts=True)
    test_values, test_counts = np.unique(np.asarray(test), return_counts=True)
    values = np.union1d(train_values, test_values)
    def share(found, counts):  # each value's share of one split's rows
        return np.bincount(np.searchsorted(values, found), counts, values.size) / max(counts.sum(), 1)

    distance = 0.5 * float(np.abs(share(train_values, train_counts) - share(test_values, test_counts)).sum())
    return {f"tv_{column}_train_test": round(distance, 6),
            f"held_out_{column}": int(np.setdiff1d(test_values, train_values).size)}


def _statistics(released, config: str) -> dict:
    """Statistics of one config that a reader compares across versions: per signal column, as its kind
    says (:func:`signal_kinds`), train against test: a continuous one's Kolmogorov-Smirnov statistic, a
    categorical one's :func:`categorical_statistics`; and the numbers its recorded parameters hold
    (:meth:`~split_builders.api.SplitMethod.config_statistics`)."""
    from split_builders.api import get_method
    from split_builders.summaries import ks_statistic

    method = get_method(released.record.get("method"))
    stats = {}
    files = released.files[config]
    if "train" in files and "test" in files:
        train, test = released.table(config, "train"), released.table(config, "test")
        for column, kind in signal_kinds(released.record).items():
            if column not in train.column_names or column not in test.column_names:
                continue
            before, after = train.column(column).to_numpy(), test.column(column).to_numpy()
            if kind == "categorical":
                stats.update(categorical_statistics(column, before, after))
            else:
                stats[f"ks_{column}_train_test"] = round(ks_statistic(before, after), 6)
    parameters = ((released.record.get("configs") or {}).get(config) or {}).get("parameters") or {}
    stats.update(method.config_statistics(parameters))
    return stats


def diff(a: str, b: str, *, configs=None) -> dict:
    """Compare two releases. Returns ``{"configs": {config: {...}}, "provenance": {key: [a, b]}}``;
    each config has ``moved``, ``added``, ``removed``, ``pairs``, ``status`` (changed, unchanged,
    added, removed) and ``statistics`` (``{name: [a, b]}`` for those that changed). Both are read through
    :class:`~split_builders.release.folder.Released` (a damaged data file is refused in one line naming it);
    ``configs``: only these configs are read and compared (each must be in one of the two)."""
    from split_builders.errors import InvalidParameterError
    from split_builders.release.folder import Released, resolve_target

    with tempfile.TemporaryDirectory(prefix="resplit-diff-") as work:
        left = Released(resolve_target(a, Path(work) / "a"))
        right = Released(resolve_target(b, Path(work) / "b"))
        if configs:
            unknown = [c for c in configs if c not in left.files and c not in right.files]
            if unknown:
                raise InvalidParameterError(f"no config {', '.join(map(repr, unknown))} in either release; their "
                                            f"configs: {', '.join(dict.fromkeys([*left.files, *right.files]))}")
            for side in (left, right):
                side.files = {c: side.files[c] for c in configs if c in side.files}
        ids = [{c: {s: r.source_ids(c, s) for s in r.files[c]} for c in r.configs} for r in (left, right)]
        moves = count_moves(*ids)
        configs = {}
        for config in right.configs:
            move = moves[config]
            if move is None:
                rows = sum(len(v) for v in ids[1][config].values())
                configs[config] = {"moved": 0, "added": rows, "removed": 0, "pairs": {}, "status": "added"}
                continue
            stats_a, stats_b = _statistics(left, config), _statistics(right, config)
            changed = {k: [stats_a.get(k), stats_b.get(k)] for k in sorted(stats_a.keys() | stats_b.keys())
                       if stats_a.get(k) != stats_b.get(k)}
            status = "changed" if move["moved"] or move["added"] or move["removed"] else "unchanged"
            configs[config] = {**move, "status": status, "statistics": changed}
        for config in left.configs:
            if config not in configs:
                rows = sum(len(v) for v in ids[0][config].values())
                configs[config] = {"moved": 0, "added": 0, "removed": rows, "pairs": {}, "status": "removed"}
        return {"configs": configs, "provenance": provenance_changes(left.record, right.record)}


def format_diff(result: dict) -> list[str]:
    """The human report: provenance changes, then one line per config."""
    lines = []
    for key, (before, after) in result["provenance"].items():
        shorten = lambda v: (json.dumps(v) if not isinstance(v, str) else v)[:60]
        lines.append(f"  {key}: {shorten(before)} -> {shorten(after)}")
    lines = (["provenance that changed:"] + lines) if lines else ["provenance: unchanged"]
    lines.append(f"{'config':<32}{'status':>10}{'moved':>8}{'added':>8}{'removed':>9}")
    for config, entry in result["configs"].items():
        lines.append(f"{config:<32}{entry['status']:>10}{entry['moved']:>8}{entry['added']:>8}{entry['removed']:>9}"
                     + (f"  ({', '.join(f'{k} {v}' for k, v in entry['pairs'].items())})" if entry["pairs"] else ""))
        for name, (before, after) in (entry.get("statistics") or {}).items():
            lines.append(f"{'':<4}{name}: {before} -> {after}")
    return lines


def json_line(result: dict) -> str:
    """One JSON object: per config its moved / added / removed counts (and the rest of its entry)."""
    return json.dumps({c: {k: v for k, v in e.items()} for c, e in result["configs"].items()},
                      sort_keys=True, default=lambda v: np.asarray(v).tolist())
