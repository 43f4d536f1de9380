"""The ``resplit`` command line.

Each family of subcommands lives in its own module that exposes
``add_parsers(subparsers)``; every parser it adds sets ``func`` (called with the parsed
arguments, returns an exit code). This module only collects them, so adding a command
never means editing another command's module.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from split_builders._version import __version__
from split_builders.errors import ResplitError

SUBCOMMAND_MODULES = (
    "split_builders.cli.likelihood",
    "split_builders.cli.metrics",
    "split_builders.cli.publish",
    "split_builders.cli.behavioural",
    "split_builders.cli.compositional",
    "split_builders.cli.curriculum",
    "split_builders.cli.pvi",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="resplit",
        description="Re-split NLP benchmarks into splits that test generalisation.",
    )
    parser.add_argument("--version", action="version", version=f"resplit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).add_parsers(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except ResplitError as error:
        # Our own errors already say what is wrong and how to fix it: no traceback.
        print(f"resplit {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
