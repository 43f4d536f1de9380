"""MkDocs hook: the command-line reference page (``cli.md``), generated from ``resplit``'s own parser at build time.

``docs/cli.md`` holds a title, a sentence and the marker below; this hook replaces the marker with the ``--help``
of ``resplit`` and of every subcommand (and their own subcommands, as ``resplit export lm-eval``), read from
:func:`split_builders.cli.build_parser`, so the page cannot go stale: a new method, evidence view or option appears
in it at the next build. The text is argparse's, at a fixed width of 100 columns.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
WIDTH = "100"
REPO = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser's subcommands in the order they were added (``{}`` when it has none)."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _sections(parser: argparse.ArgumentParser, path: tuple[str, ...], level: int) -> list[str]:
    lines = [f"{'#' * level} `{' '.join(path)}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, child in _subcommands(parser).items():
        lines += _sections(child, (*path, name), min(level + 1, 4))
    return lines


def reference() -> str:
    """The reference's Markdown: ``resplit --help``, then one section per subcommand, in the parser's order."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal's width: a fixed one gives the same page anywhere
    try:
        from split_builders.cli import build_parser

        parser = build_parser()
        top = ["## `resplit`", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name, child in _subcommands(parser).items():
            top += _sections(child, ("resplit", name), 2)
        return "\n".join(top)
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != "cli.md":
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"docs/cli.md lost its marker {MARKER}: the generated reference has nowhere to go")
    return markdown.replace(MARKER, reference())
