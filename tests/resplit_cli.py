"""``resplit`` as a user's own script runs it after registering their method: the real command, with the
methods the tests register (:data:`conftest.TEST_METHODS`) added first. Used by tests that run the command
as a process for every registered family (:func:`conftest.cli_command`)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_method_contract import ClusterMethod  # noqa: E402

from split_builders.api import register, registry  # noqa: E402
from split_builders.cli import main  # noqa: E402

if __name__ == "__main__":
    for method in (ClusterMethod,):
        if type(registry().get(method.name)) is not method:  # a plug-in of its name is refused, not used
            register(method)
    sys.exit(main())
