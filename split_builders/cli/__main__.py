"""``python -m split_builders.cli``: the resplit command line."""

import sys

from split_builders.cli import main

sys.exit(main())
