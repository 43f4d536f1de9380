"""Make the packages named in ``$RESPLIT_DENY_IMPORTS`` (comma-separated) unimportable, in this process and,
through ``PYTHONPATH``, in every Python subprocess: ``check.py --deny-imports`` runs the CPU check as if on the
GPU machine, which lacks them, so an import the wheels do not cover fails here first."""

import os
import sys

DENIED = frozenset(name for name in os.environ.get("RESPLIT_DENY_IMPORTS", "").split(",") if name)


class _Deny:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in DENIED:
            raise ModuleNotFoundError(f"No module named {name!r} (denied: not on the GPU machine)", name=name)
        return None


if DENIED and not any(isinstance(finder, _Deny) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Deny())
