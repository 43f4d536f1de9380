"""The one progress-bar factory: every bar resplit shows goes to stderr, sized to the terminal,
and is silent when progress is off (``--no-progress``)."""

from __future__ import annotations

import sys


def progress_bar(iterable=None, *, total: int | None = None, description: str, unit: str, enabled: bool = True):
    """A ``tqdm`` bar over ``iterable`` (or counting to ``total``), on stderr; a disabled one that
    still counts when not ``enabled``. Use it as a context manager or iterate it."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=description, unit=unit, disable=not enabled, dynamic_ncols=True,
                file=sys.stderr)
