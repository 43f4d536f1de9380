"""``resplit audit | diagnose | probe | ... TARGET``: one subcommand per registered evidence view
(:mod:`split_builders.evidence`), all of one shape: TARGET (a release folder of any family, a dataset folder
with train / validation / test data files, or ``HUB_ID[@REVISION]``), ``--json``, ``--revision``,
``--no-progress`` and the view's own settings as flags."""

from __future__ import annotations

import json
import tempfile
from functools import partial


def run_view(view, args) -> int:
    """Compute ``view`` on ``args.target`` (its settings checked first; a Hub dataset is downloaded into a
    temporary work folder), then print the report as one JSON object (``--json``, with the target and
    revision first) or as the view's table."""
    from split_builders.evidence.inputs import EvidenceInput

    settings = {s.name: s.value(getattr(args, s.name)) for s in view.settings}
    with tempfile.TemporaryDirectory(prefix=f"resplit-{view.subcommand}-") as work:
        data = EvidenceInput.from_target(args.target, work=work, revision=args.revision)
        report = view.compute(data, progress=not args.no_progress, **settings)
    report = {"target": args.target, **({"revision": args.revision} if args.revision else {}), **report}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for line in view.format_report(report):
            print(line)
    return 0


def add_parsers(subparsers) -> None:
    from split_builders.evidence import views

    for view in views().values():
        parser = subparsers.add_parser(view.subcommand, help=view.summary, description=view.description)
        parser.add_argument("target", help="a release or dataset folder, or HUB_ID[@REVISION]")
        parser.add_argument("--json", action="store_true", help=f"print one JSON object ({view.json_help})")
        parser.add_argument("--revision", help="the Hub revision (branch, tag or commit) of a Hub id")
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        for setting in view.settings:
            parser.add_argument(setting.flag, dest=setting.name, type=setting.parse, default=setting.default,
                                help=setting.help)
        parser.set_defaults(func=partial(run_view, view))
