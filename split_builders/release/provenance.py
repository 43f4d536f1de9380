"""One provenance schema for every split family (``resplit:`` in a release's README front matter).

::

    resplit:
      schema: 1
      version: <resplit version>
      method: likelihood | tmcd | pvi | curriculum | behavioural | ...
      paper: <the method's paper>
      seed: 42
      parameters: {every recorded option}
      source: {name, rows, content_sha256 and/or revision, filters: {reason: rows}, source_id,
               location: the source as given to the build (a path or Hub id; verify --rescore reads it)}
      signal: {kind, model, model_revision, dtype, ...: what rebuilding the configs needs}
      environment: {python, numpy, torch, datasets, transformers}
      configs:
        <config>: {method, parameters, rows: {split: n}, sha256: {split: sha256 of the data file}}

The writer adds ``version`` and ``configs`` (it knows the files); everything else comes from here.
"""

from __future__ import annotations

import platform
from importlib import metadata

SCHEMA = 1
PACKAGES = ("numpy", "torch", "datasets", "transformers")


def environment() -> dict:
    """Versions of Python and the libraries a release's bytes depend on (read from package
    metadata: nothing is imported)."""
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def source_record(info) -> dict:
    record = {"name": info.name, "rows": int(info.rows)}
    if info.content_sha256:
        record["content_sha256"] = info.content_sha256
    if info.revision:
        record["revision"] = info.revision
    record["filters"] = {str(k): int(v) if isinstance(v, (int, float)) else v for k, v in (info.filters or {}).items()}
    record["source_id"] = info.source_id
    return record


def provenance(method, options, info, signal) -> dict:
    """The ``resplit:`` mapping of a release, less ``version`` and ``configs`` (the writer's)."""
    if not (info.content_sha256 or info.revision):
        raise ValueError(f"method {method.name!r} gave no content hash or revision for its source")
    return {
        "schema": SCHEMA,
        "method": method.name,
        "paper": method.paper,
        "seed": int(options.seed),
        "parameters": options.recorded(),
        "source": {**source_record(info), **({"location": str(options.source)} if options.source is not None else {})},
        "signal": signal.provenance,
        "environment": environment(),
    }
