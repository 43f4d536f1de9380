"""``resplit audit FOLDER | HUB_ID[@REVISION]``: the leakage audit of a release of any family, or of
any dataset with train / validation / test splits (:mod:`split_builders.release.audit`)."""

from __future__ import annotations

import json
import sys
import tempfile


def report_on_target(args, name: str, compute, format_report) -> int:
    """What ``resplit audit``, ``diagnose`` and ``probe`` share: ``compute(work)`` of ``args.target`` with a
    temporary work folder (where a Hub dataset is downloaded), then the report printed as one JSON object
    (``--json``, with the target and revision first) or as the command's table (``format_report``)."""
    with tempfile.TemporaryDirectory(prefix=f"resplit-{name}-") as work:
        report = compute(work)
    report = {"target": args.target, **({"revision": args.revision} if args.revision else {}), **report}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for line in format_report(report):
            print(line)
    return 0


def names(text: str | None) -> tuple | None:
    """A comma-separated option (``--fields a,b``, ``--configs a,b``) as a tuple of names; None when not given."""
    return tuple(part.strip() for part in text.split(",") if part.strip()) if text else None


def add_target_arguments(parser, *, json_help: str) -> None:
    """The arguments ``resplit audit``, ``diagnose`` and ``probe`` share: the target, ``--json`` (what its
    object holds: ``json_help``), ``--revision`` and ``--no-progress``."""
    parser.add_argument("target", help="a release or dataset folder, or HUB_ID[@REVISION]")
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({json_help})")
    parser.add_argument("--revision", help="the Hub revision (branch, tag or commit) of a Hub id")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def run_audit(args) -> int:
    from split_builders.release.audit import audit_target, check_threshold, format_report

    threshold, fields = check_threshold(args.threshold), names(args.fields)
    return report_on_target(args, "audit", lambda work: audit_target(
        args.target, work=work, revision=args.revision, fields=fields, threshold=threshold,
        progress=not args.no_progress), format_report)


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit", help="leakage audit: evaluation rows with an exact or near-duplicate, a shared field or program in train",
        description="Per config and evaluation split (validation, test) of TARGET, the rows that have in train an "
                    "exact duplicate (whitespace and case normalised), a near-duplicate (character 5-gram Jaccard >= "
                    "--threshold, MinHash LSH), the same value of a text field or of the group field, or the same "
                    "target program. TARGET: a release folder of any family, a dataset folder with train / "
                    "validation / test data files, or a Hub dataset id.")
    add_target_arguments(parser, json_help="configs.<config>.<split>: exact, near_duplicate, shared.<field>, "
                                           "program, rates, examples")
    parser.add_argument("--threshold", type=float, default=0.8,
                        help="Jaccard similarity of a near-duplicate, in (0, 1] (default 0.8)")
    parser.add_argument("--fields", help="the text fields to audit, comma-separated (default: the release's text "
                                         "fields, or the string columns less ids, labels and categories)")
    parser.set_defaults(func=run_audit)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["audit", *sys.argv[1:]]))
