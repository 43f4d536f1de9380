"""The leakage audit as an evidence view: its YAML record, its card section (with two columns of the configs
table and a note per widely shared field), and its terminal table (``resplit audit``)."""

from __future__ import annotations

from split_builders.evidence import audit as computed
from split_builders.evidence.contamination import TIERS
from split_builders.evidence.view import Setting, View, aligned, names

SHARING_NOTE = 0.10  # an ungrouped build names a field shared by at least this share of a test split


SETTINGS = ("method", "threshold", "ngram", "num_perm", "bands", "rows_per_band",
            "collision_probability_at_threshold", "fields", "program_field", "group_field")
COUNTS = ("rows", "exact", "near_duplicate", "shared", "program", "tiers")


def yaml_record(report: dict) -> tuple[dict, dict]:
    """What the README's YAML records: the settings (``resplit.audit``) and per config its counts
    (``resplit.configs.<config>.audit``: ``{split: {rows, exact, near_duplicate, shared, program, tiers}}``)."""
    settings = {key: report[key] for key in SETTINGS}
    per_config = {config: {split: {k: entry[k] for k in COUNTS if k in entry} for split, entry in splits.items()}
                  for config, splits in report["configs"].items()}
    return settings, per_config


def table_columns(report: dict) -> dict:
    """Two columns of the card's configs table: evaluation rows (validation + test) with an exact
    duplicate, and with a near-duplicate, in train."""
    total = lambda splits, key: sum(e[key] for e in splits.values())  # noqa: E731
    return {"exact dup. in train": {c: total(s, "exact") for c, s in report["configs"].items()},
            "near-dup. in train": {c: total(s, "near_duplicate") for c, s in report["configs"].items()}}


def sharing_lines(report: dict) -> list[str]:
    """For an ungrouped release, one line per text field that at least ``SHARING_NOTE`` of some
    config's test rows (validation rows where it has no test split) share with train."""
    if report.get("group_field"):
        return []
    lines = []
    for name in report["fields"]:
        rates = []
        for config, splits in report["configs"].items():
            split = "test" if "test" in splits else next(iter(splits))
            if name in splits[split]["rates"]["shared"]:
                rates.append((splits[split]["rates"]["shared"][name], config, split))
        if not rates or max(rates)[0] < SHARING_NOTE:
            continue
        high = max(rates, key=lambda r: r[0])
        low = min(rates, key=lambda r: r[0])
        line = f"{100 * high[0]:.0f}% of `{high[1]}` {high[2]} rows share a `{name}` with train"
        if len(rates) > 1:
            line += f" ({100 * low[0]:.0f}% of `{low[1]}` {low[2]} rows, the fewest of {len(rates)} configs)"
        lines.append(line + f"; `--group-field {name}` prevents this.")
    return lines


def _percent(count: int, rows: int) -> str:
    return f"{count} ({100 * count / rows:.1f}%)" if rows else str(count)


def card_lines(report: dict) -> list[str]:
    """The card's "Leakage audit" section (Markdown lines, heading included)."""
    shared = list(dict.fromkeys(k for splits in report["configs"].values() for e in splits.values() for k in e["shared"]))
    program = report.get("program_field")
    group = report.get("group_field")
    fields = ", ".join(f"`{f}`" for f in report["fields"]) + (f" and the program `{program}`" if program else "")
    lines = ["## Leakage audit", "",
             f"For every evaluation row (validation and test), the audit looks for rows of the same config's train "
             f"split that match it: an **exact** duplicate (the same {fields}, after Unicode NFKC, lower-casing and "
             f"collapsing whitespace), a **near-duplicate** (a Jaccard similarity of at least {report['threshold']:g} "
             f"between the sets of character {report['ngram']}-grams of that text; candidates from MinHash, "
             f"{report['num_perm']} permutations, and LSH, {report['bands']} bands of "
             f"{report['rows_per_band']} rows, each confirmed with the exact Jaccard; exact duplicates count as "
             "near-duplicates too), the same value of each field (**shared**, byte for byte"
             + (f"; `{group}` is the group field the splits keep whole" if group else "") + ")"
             + (f" and the same target program (`{program}`)" if program else "") + ". "
             "Each evaluation row also gets a **tier**: *clean*, *input-contaminated* (its input, the text fields"
             + (" without the program" if program else "") + ", has an exact or near-duplicate in train) or "
             "*input-and-label-contaminated* (and one of those train rows has the same "
             + ("program" if program and not report.get("label_field") else "label") + "), as `resplit audit "
             "FOLDER --against OTHER` gives them against other datasets. "
             "The YAML header records these counts under `resplit.configs.<config>.audit`; `resplit audit FOLDER "
             "--json` recomputes them.", ""]
    header = ["config", "split", "rows", "exact", "near-duplicate", *(f"shared `{f}`" for f in shared)]
    header += ["same program"] if program else []
    header += ["clean", "input-contaminated", "input-and-label"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            n = entry["rows"]
            cells = [f"`{config}`", split, str(n), _percent(entry["exact"], n), _percent(entry["near_duplicate"], n)]
            cells += [_percent(entry["shared"][f], n) if f in entry["shared"] else "-" for f in shared]
            cells += [_percent(entry["program"], n) if "program" in entry else "-"] if program else []
            cells += [_percent(entry["tiers"][t], n) for t in TIERS]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    shown = [(config, split, entry) for config, splits in report["configs"].items() for split, entry in splits.items()
             if any(entry["examples"].values())]
    if shown:
        lines += ["Examples (up to three of each kind per config and split; near-duplicates shown are not exact "
                  "duplicates):", ""]
        for config, split, entry in shown:
            lines += [f"<details><summary><code>{config}</code> {split}</summary>", ""]
            for kind, items in entry["examples"].items():
                for item in items:
                    lines.append("- " + _example_line(kind, item))
            lines += ["", "</details>", ""]
    return lines


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def _example_line(kind: str, item: dict) -> str:
    label = {"exact": "exact", "near_duplicate": f"near-duplicate (Jaccard {item.get('jaccard', 1.0):.2f})",
             "program": "same program"}.get(kind, kind.replace("shared.", "shared "))
    if "text" in item:
        return (f"{label}: `source_id` {item['source_id']} \"{_escape(item['text'])}\" ~ train `source_id` "
                f"{item['train_source_id']} \"{_escape(item['train_text'])}\"")
    return (f"{label}: `source_id` {item['source_id']} and train `source_id` {item['train_source_id']}: "
            f"\"{_escape(item['value'])}\"")


def format_report(report: dict) -> list[str]:
    """The terminal table of ``resplit audit``."""
    shared = list(dict.fromkeys(k for splits in report["configs"].values() for e in splits.values() for k in e["shared"]))
    program = report.get("program_field")
    headers = ["config", "split", "rows", "exact", "near-dup", *(f"shared {f}" for f in shared)]
    headers += [f"program {program}"] if program else []
    headers += ["clean", "input", "input+label"]
    table = []
    for config, splits in report["configs"].items():
        for split, entry in splits.items():
            n = entry["rows"]
            cell = lambda count: f"{count} ({100 * count / n:.1f}%)" if n else str(count)  # noqa: E731
            row = [config, split, str(n), cell(entry["exact"]), cell(entry["near_duplicate"])]
            row += [cell(entry["shared"][f]) if f in entry["shared"] else "-" for f in shared]
            row += [cell(entry["program"]) if "program" in entry else "-"] if program else []
            row += [cell(entry["tiers"][t]) for t in TIERS]
            table.append(row)
    out = [f"fields: {', '.join(report['fields'])}" + (f"; program: {program}" if program else "")
           + (f"; group field: {report['group_field']}" if report.get("group_field") else "")
           + f"; near-duplicate: Jaccard >= {report['threshold']:g} of character {report['ngram']}-grams "
             f"(MinHash {report['num_perm']} permutations, LSH {report['bands']}x{report['rows_per_band']})",
           *aligned(headers, table)]
    return out + sharing_lines(report)


class AuditView(View):
    """The leakage audit (:mod:`split_builders.evidence.audit`), run by every build."""

    name = "audit"
    title = "Leakage audit"
    summary = "leakage audit: evaluation rows with an exact or near-duplicate, a shared field or program in train"
    description = ("Per config and evaluation split (validation, test) of TARGET, the rows that have in train an "
                   "exact duplicate (whitespace and case normalised), a near-duplicate (character 5-gram Jaccard >= "
                   "--threshold, MinHash LSH), the same value of a text field or of the group field, or the same "
                   "target program. TARGET: a release folder of any family, a dataset folder with train / "
                   "validation / test data files, or a Hub dataset id.")
    json_help = "configs.<config>.<split>: exact, near_duplicate, shared.<field>, program, rates, examples"
    settings = (
        Setting("threshold", "--threshold", computed.DEFAULT_THRESHOLD,
                "Jaccard similarity of a near-duplicate, in (0, 1] (default 0.8)", float, computed.check_threshold),
        Setting("fields", "--fields", None, "the text fields to audit, comma-separated (default: the release's text "
                                            "fields, or the string columns less ids, labels and categories)", names),
    )
    covers_duplicates = True
    checks_against = True  # `resplit audit TARGET --against OTHER ...` (:mod:`.contamination`)

    # the protocol's methods are this module's functions
    compute = staticmethod(computed.compute)
    record = staticmethod(yaml_record)
    card_lines = staticmethod(card_lines)
    table_columns = staticmethod(table_columns)
    notes = staticmethod(sharing_lines)
    format_report = staticmethod(format_report)


VIEW = AuditView()
