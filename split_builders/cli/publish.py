"""``resplit push``: publish a built folder (or a metric folder) as a tagged Hub version.

``push_to_hub.py`` at the repository root is the same command; both parse with
:func:`add_arguments` and run :func:`run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from split_builders.errors import ResplitError


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The push options, shared by ``resplit push`` and ``push_to_hub.py``."""
    parser.add_argument("folder", type=Path, help="a built release folder (or, with --metric, metrics/<name>)")
    parser.add_argument("repo_id", help="org/name of the Hub dataset repository (or Space with --metric)")
    parser.add_argument("--version", required=True, help="X.Y.Z, newer than every published version; tagged vX.Y.Z")
    parser.add_argument("--metric", action="store_true", help="FOLDER is a metric module: publish it as a Space")
    parser.add_argument("--message", help="commit message (default: resplit release vX.Y.Z)")
    parser.add_argument("--private", action="store_true", help="create the repository private")
    parser.add_argument("--dry-run", action="store_true", help="validate the folder and send nothing")
    parser.add_argument("--allow-extra", action="store_true",
                        help="also publish files the card does not name (refused otherwise: every file is sent)")
    parser.add_argument("--license", metavar="ID",
                        help="the license the published card states, e.g. cc-by-4.0 (needed when the build could not "
                             "tell it: the card says 'unknown'); the local folder is not changed")
    return parser


def build_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A stand-alone parser (``push_to_hub.py``); errors are printed under ``prog``."""
    parser = add_arguments(argparse.ArgumentParser(prog=prog, description=description))
    parser.set_defaults(prog=prog)
    return parser


def run(args: argparse.Namespace) -> int:
    """Push as the arguments say; a ResplitError becomes one line on stderr and exit code 2."""
    from split_builders.publishing.publish import push_metric, push_release

    extra = {} if args.metric else {"allow_extra": args.allow_extra, "license": args.license}
    push = push_metric if args.metric else push_release
    try:
        push(args.folder, args.repo_id, args.version, message=args.message, private=args.private,
             dry_run=args.dry_run, **extra)
    except ResplitError as error:
        print(f"{getattr(args, 'prog', 'resplit push')}: error: {error}", file=sys.stderr)
        return 2
    return 0


def add_parsers(subparsers) -> None:
    """Register ``resplit push``."""
    parser = subparsers.add_parser("push", help="publish a built folder as a versioned Hub release",
                                   description=__doc__.split("\n\n")[0])
    add_arguments(parser).set_defaults(func=run, prog="resplit push")
