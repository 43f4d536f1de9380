"""Diagnostics against random splits as an evidence view: its card section (a table per config, a sentence of
what stands out, a figure per statistic), its YAML record and its terminal table (``resplit diagnose``)."""

from __future__ import annotations

from split_builders.evidence import diagnostics as computed
from split_builders.evidence.diagnostics import _PERCENT, DISPLAY, EVALUATION_SPLITS, HELD_OUT_COLUMNS
from split_builders.evidence.view import Setting, View, aligned
from split_builders.options import DEFAULT_NULL_SPLITS


# Statistics of an evaluation split measured against train: train's own value (0) is no information.
AGAINST_TRAIN = frozenset({"unseen_word_rate", "atom_divergence", "compound_divergence", "unseen_compound_share",
                           "unseen_template_share"})


def _display(name: str) -> tuple:
    """``(phrase, format, axis label)`` of a statistic: its own, a categorical signal's unseen share, a mean."""
    if name in DISPLAY:
        return DISPLAY[name]
    if name.startswith("unseen_"):
        column = name[len("unseen_"):]
        return (f"rows whose `{column}` is unseen in train", _PERCENT, f"rows with a {column} unseen in train")
    return (f"mean `{name}`", lambda v: f"{v:.4g}", name)


def _against_train(name: str) -> bool:
    return name in AGAINST_TRAIN or name.startswith("unseen_")


def _shown(name: str, value) -> str:
    return "n/a" if value is None else _display(name)[1](value)


def _phrase(name: str) -> str:
    return _display(name)[0]


def _main_split(splits: dict) -> str:
    return "test" if "test" in splits else next(iter(splits))


def summary_sentence(config: str, splits: dict, null_splits: int, *, limit: int = 3) -> str:
    """One plain sentence of what a config's numbers say: its main evaluation split's statistics
    outside the 5th-95th percentiles of the random splits (the most extreme first, up to ``limit``)."""
    split = _main_split(splits)
    entries = [(name, e) for name, e in splits[split].items() if e["percentile"] is not None]
    outside = sorted((abs(e["percentile"] - 50), name, e) for name, e in entries
                     if e["percentile"] >= 95 or e["percentile"] <= 5)
    if not outside:
        return (f"`{config}` {split}: every statistic lies within the 5th-95th percentiles of {null_splits} random "
                "splits of the same sizes, as a random split's would.")
    parts = []
    for _, name, e in sorted(outside, key=lambda t: (-t[0], t[1]))[:limit]:
        value, low, high = (_shown(name, e[k]) for k in ("value", "null_p05", "null_p95"))
        if e["percentile"] >= 100:
            text = f"higher than in any of {null_splits} random splits, whose 95th percentile is {high}"
        elif e["percentile"] <= 0:
            text = f"lower than in any of {null_splits} random splits, whose 5th percentile is {low}"
        elif e["percentile"] >= 95:
            text = f"above {e['percentile']:.0f}% of {null_splits} random splits (95th percentile {high})"
        else:
            text = f"below {100 - e['percentile']:.0f}% of {null_splits} random splits (5th percentile {low})"
        parts.append(f"{value} {_phrase(name)}, {text}" if _display(name)[1] is _PERCENT
                     else f"{_phrase(name)} {value}, {text}")
    more = len(outside) - min(len(outside), limit)
    return (f"`{config}` {split}: " + "; ".join(parts)
            + (f"; and {more} more statistic(s) outside the 5th-95th percentiles" if more else "") + ".")


def card_lines(report: dict) -> list[str]:
    """The card's "Diagnostics against random splits" section (Markdown lines, heading included; the
    figures, :func:`figures`, are drawn and linked by the card's renderer after these lines)."""
    n = report["null_splits"]
    fields = report["fields"]
    lines = ["## Diagnostics against random splits", "",
             f"For every config and evaluation split, each statistic's value is set against {n} random splits of "
             f"the config's own rows with the same split sizes (seed {report['seed']}), drawn as the config's "
             "baseline draws them (label-balanced where the config is, whole groups where it is grouped); "
             "*percentile* is the value's percentile among them (ties count half), and the last column the "
             "5th-95th percentile range of the random splits. "
             + (f"Text statistics are of `{fields['query']}`: words are runs of letters and digits, rare words have "
                "a Zipf frequency below 3 in `wordfreq`'s English list (under one per million words), the "
                "Flesch-Kincaid grade counts syllables with `pyphen`. " if fields.get("query") else "")
             + ("Program statistics compare with the train split's programs (`signals.programs` atoms and "
                "compounds; divergences as Keysers et al.)"
                + ("; hardness is Spider's (its evaluation script's rules). " if fields.get("target_language") == "sql"
                   else ". ") if fields.get("target") else "")
             + "The YAML header records these numbers under `resplit.configs.<config>.diagnostics`; "
               f"`resplit diagnose FOLDER --null-splits {n} --seed {report['seed']} --json` recomputes them.", ""]
    for config, splits in report["configs"].items():
        lines += [f"### `{config}`", "", summary_sentence(config, splits, n), ""]
        header = ["statistic", "train"]
        for split in splits:
            header += [split, "percentile", f"random {split} (5th-95th)"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for name in report["statistics"]:
            first = next(iter(splits.values()))[name]
            cells = [_phrase(name), "-" if _against_train(name) else _shown(name, first["train"])]
            for split, entries in splits.items():
                e = entries[name]
                cells += [_shown(name, e["value"]), "n/a" if e["percentile"] is None else f"{e['percentile']:.1f}",
                          f"{_shown(name, e['null_p05'])} - {_shown(name, e['null_p95'])}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        held = (report.get("held_out") or {}).get(config)
        if held:
            parts = [f"{split}: " + ", ".join(f"{c['held_out']} of its {c['of']} {dict(HELD_OUT_COLUMNS)[k]}"
                                               for k, c in counts.items())
                     for split, counts in held.items()]
            lines += ["Held out from train (never in its train split): " + "; ".join(parts) + ".", ""]
    return lines


def figures(report: dict, *, folder: str = "figures") -> list:
    """One :class:`~split_builders.cardspec.Figure` per statistic: per evaluation split, the
    random splits' values (a histogram per distinct null distribution) with each config's value marked."""
    from split_builders.cardspec import Figure, Panel

    out = []
    for name in report["statistics"]:
        panels = []
        for split in EVALUATION_SPLITS:
            series, markers = {}, {}
            for owner, null in report["null_distributions"].items():
                values = [v for v in null["splits"].get(split, {}).get(name, []) if v is not None]
                if values:
                    label = ("random splits" if len(report["null_distributions"]) == 1
                             else f"random, like `{owner}`")
                    series[label] = values
            for config, splits in report["configs"].items():
                if split in splits and splits[split][name]["value"] is not None:
                    markers[config] = splits[split][name]["value"]
            if series:
                panels.append(Panel(xlabel=f"{_display(name)[2]}, {split}", series=series,
                                    ylabel="random splits (density)", markers=markers))
        if panels:
            out.append(Figure(path=f"{folder}/diagnostics_{name}.png", title=f"{_phrase(name)} vs random splits",
                              panels=panels, alt=f"{_phrase(name)} of each config against {report['null_splits']} "
                                                 "random splits"))
    return out


def yaml_record(report: dict) -> tuple[dict, dict]:
    """What the README's YAML records: the settings (``resplit.diagnostics``) and per config
    ``{split: {statistic: {value, train, percentile, null_p05, null_p95}}}``
    (``resplit.configs.<config>.diagnostics``; ``held_out`` beside the splits for behavioural releases)."""
    settings = {"null_splits": report["null_splits"], "seed": report["seed"], "statistics": list(report["statistics"]),
                "fields": dict(report["fields"])}
    per_config = {config: {split: {k: dict(e) for k, e in entries.items()} for split, entries in splits.items()}
                  for config, splits in report["configs"].items()}
    for config, held in (report.get("held_out") or {}).items():
        per_config.setdefault(config, {})["held_out"] = held
    return settings, per_config


def format_report(report: dict) -> list[str]:
    """The terminal table of ``resplit diagnose``."""
    fields = report["fields"]
    out = [f"{report['null_splits']} random splits (seed {report['seed']}); query: {fields.get('query') or '-'}"
           + (f"; program: {fields['target']}" if fields.get("target") else "")
           + (f"; signal: {', '.join(fields['signals'])}" if fields.get("signals") else "")]
    header = ["config", "split", "statistic", "train", "value", "pct", "random 5-95"]
    table = []
    for config, splits in report["configs"].items():
        for split, entries in splits.items():
            for name, e in entries.items():
                table.append([config, split, name, _shown(name, e["train"]), _shown(name, e["value"]),
                              "n/a" if e["percentile"] is None else f"{e['percentile']:.1f}",
                              f"{_shown(name, e['null_p05'])} - {_shown(name, e['null_p95'])}"])
    out += aligned(header, table, left=3)
    for config, splits in report["configs"].items():
        out.append(summary_sentence(config, splits, report["null_splits"]).replace("`", ""))
    return out


class DiagnosticsView(View):
    """Diagnostics against random splits (:mod:`split_builders.evidence.diagnostics`): in a build unless
    ``--null-splits 0``."""

    name = "diagnostics"
    command = "diagnose"
    title = "Diagnostics against random splits"
    summary = ("diagnostics against random splits: rare words, length, unseen words, reading grade, signal, program "
               "divergence and SQL hardness, each with its percentile")
    description = ("Per config and evaluation split (validation, test) of TARGET, statistics of the evaluation rows "
                   "(query length, rare-word fraction, unseen-word rate, Flesch-Kincaid grade, the method's signal; "
                   "atom / compound divergence, unseen compounds and templates, Spider hardness for programs) with "
                   "their train value and their percentile among --null-splits random splits of the config's rows "
                   "with the same sizes (label-balanced or grouped as the config is). TARGET: a release folder of "
                   "any family, a dataset folder with train / validation / test data files, or a Hub dataset id.")
    json_help = ("configs.<config>.<split>.<statistic>: value, train, percentile, null_p05, null_p95; "
                 "null_distributions; held_out for behavioural releases")
    settings = (
        Setting("null_splits", "--null-splits", DEFAULT_NULL_SPLITS,
                f"random splits per config (default {DEFAULT_NULL_SPLITS})", int, computed.check_null_splits),
        Setting("seed", "--seed", computed.DEFAULT_SEED,
                f"seed of the random splits (default {computed.DEFAULT_SEED}; a card states the one it used)", int,
                computed.check_seed),
    )

    def enabled(self, options) -> dict | None:
        return {"null_splits": options.null_splits} if options.null_splits else None

    # the protocol's methods are this module's functions
    compute = staticmethod(computed.compute)
    record = staticmethod(yaml_record)
    card_lines = staticmethod(card_lines)
    figures = staticmethod(figures)
    format_report = staticmethod(format_report)


VIEW = DiagnosticsView()
