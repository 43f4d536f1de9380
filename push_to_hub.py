"""Publish a folder built by resplit as a version of a Hugging Face Hub dataset repository.

    python push_to_hub.py FOLDER org/name --version 1.1.0 [--message ...] [--private] [--dry-run] [--license ID]
    python push_to_hub.py --metric metrics/<name> org/<name> --version 1.0.0

The folder is validated first (every config loads, no row in two splits of one config, row counts
and hashes match the card, the card states a license: ``--license`` gives one where the build wrote
``unknown``), then pushed as one commit and tagged ``vX.Y.Z``; the pushed card gets the version, the
repository in its load snippet, and a CHANGELOG section counting, per config, the rows that moved
between splits since the previous version. ``--metric`` publishes a metric folder as a Space for ``evaluate.load``.
Honours ``HF_TOKEN`` (or the stored login) and ``HF_ENDPOINT``; the token is never printed.
Same as ``resplit push``; the work is done by ``split_builders.publishing.publish``.
"""

from __future__ import annotations

import sys

from split_builders.cli.publish import build_parser, run

if __name__ == "__main__":
    sys.exit(run(build_parser(prog="push_to_hub.py", description=__doc__.split("\n\n")[0]).parse_args()))
