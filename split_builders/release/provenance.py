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
               location: a Hub id or bundled sample as given, or a local file's or folder's name,
               sha256: of a local source file}
      signal: {kind, model, model_revision, dtype, ...: what rebuilding the configs needs}
      environment: {python, numpy, torch, datasets, transformers}
      figures: {figures/<name>.png: sha256 of each file the card's drawing wrote}
      configs:
        <config>: {method, parameters, rows: {split: n}, sha256: {split: sha256 of the data file}}

The writer adds ``version``, ``figures`` and ``configs`` (it knows the files); everything else comes from here.
``verify`` compares each figure with its recorded sha256; a release from before ``figures`` was recorded has no
such key (its figures are only checked to be there and to be images).

No local path of the builder's machine is recorded: a local source is named by its file (or folder)
name and a file by its sha256 too. Where a local source was is remembered on the machine that built
the release instead (``$RESPLIT_CACHE/sources/``, :func:`remember_source`), so that ``verify --rescore``
there finds it again without ``--source`` (:func:`locate_source`, which also looks beside the release).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
from importlib import metadata
from pathlib import Path

SCHEMA = 1
PACKAGES = ("numpy", "torch", "datasets", "transformers")
RECORD_KEYS = ("schema", "version", "method", "paper", "seed", "parameters", "source", "signal", "environment",
               "built_by", "figures", "configs")
"""The keys of ``resplit:`` that :func:`provenance` and the writer fill."""
CONFIG_KEYS = ("method", "parameters", "rows", "sha256")
"""The keys of a config's entry under ``resplit.configs`` that the writer fills. An evidence view's record sits
beside both under the view's name, so no view may be named like one of either (the registry refuses it)."""


def environment() -> dict:
    """Versions of Python and the libraries a release's bytes depend on (read from package
    metadata: nothing is imported)."""
    return {"python": platform.python_version(), **{package: _installed(package) for package in PACKAGES}}


RESPLIT = "resplit"
"""The distribution of the built-in methods (setup.cfg's name)."""


def _installed(name: str) -> str | None:
    """The installed version of the distribution ``name`` (None where it is not installed)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=4)
def _distributions(path: tuple) -> dict:
    """``importlib.metadata.packages_distributions()`` for the import path ``path`` (read once per path: it reads
    every installed distribution's file list)."""
    return metadata.packages_distributions()


def built_by(method) -> dict:
    """Which code built a release: the distribution of the method's package and its version (resplit's for a
    built-in; None for a method no installed distribution provides, one defined in a script) and the installed
    versions of the distributions the method declares it requires (``MethodInfo.requires``; None: not installed).
    Read from package metadata: nothing is imported. A build that ran a plug-in's evidence view adds ``views``
    (``{view: distribution_of(view)}``)."""
    return {**distribution_of(method), "requires": {name: _installed(name) for name in method.info.requires}}


def distribution_of(thing) -> dict:
    """``{"distribution", "version"}`` of the installed distribution whose package defines ``thing``'s class
    (resplit's for its own code; None for a class no installed distribution provides). Nothing is imported."""
    top = type(thing).__module__.partition(".")[0]
    if top == "split_builders":
        return {"distribution": RESPLIT, "version": resplit_version()}
    import sys

    distribution = (_distributions(tuple(sys.path)).get(top) or [None])[0]
    return {"distribution": distribution, "version": _installed(distribution) if distribution else None}


def built_by_said(record: dict) -> str | None:
    """Which code built a release, as ``verify`` and ``diff`` say it: ``"DIST VERSION"`` from its provenance's
    ``built_by`` (:func:`built_by`), ``"a method no installed distribution provides"`` for one defined in a script,
    None for a release that does not record it (built before resplit recorded it)."""
    found = record.get("built_by") if isinstance(record, dict) else None
    if not isinstance(found, dict):
        return None
    if not found.get("distribution"):
        return "a method no installed distribution provides"
    return f"{found['distribution']} {found.get('version') or '(version unknown)'}"


def source_record(info) -> dict:
    record = {"name": info.name, "rows": int(info.rows)}
    if info.content_sha256:
        record["content_sha256"] = info.content_sha256
    if info.revision:
        record["revision"] = info.revision
    record["filters"] = {str(k): int(v) if isinstance(v, (int, float)) else v for k, v in (info.filters or {}).items()}
    record["source_id"] = info.source_id
    return record


def resplit_version() -> str:
    """The version of resplit running (what a release's ``resplit.version`` and a report's provenance record)."""
    from split_builders._version import __version__

    return __version__


def file_sha256(path) -> str:
    """The sha256 of a file's bytes (read in blocks)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


# A generated file that lists no other (eval.yaml, croissant.json, a report's list of its files) carries its own
# fingerprint: SEAL followed by the sha256 of the file's text with those 64 characters as zeros (:func:`sealed`).
# A file whose seal no longer matches was edited since resplit wrote it: it is the user's, never replaced.
SEAL = "resplit-sha256:"
UNSEALED = SEAL + "0" * 64
EDITED = "(edited since resplit wrote it)"  # the digest :func:`sealed_digest` gives such a file: matches none


def sealed(text: str) -> str:
    """``text`` (holding :data:`SEAL` followed by 64 zeros once) with those zeros replaced by the sha256 of
    ``text`` as it is: the file's own fingerprint."""
    if text.count(UNSEALED) != 1:
        raise ValueError(f"a sealed text holds {UNSEALED!r} exactly once")
    return text.replace(UNSEALED, SEAL + hashlib.sha256(text.encode("utf-8")).hexdigest())


def sealed_digest(path) -> str | None:
    """What resplit knows of the generated file ``path``, in the terms of its lists of written files
    (``{name: sha256 or None}``): the file's sha256 where its seal (:func:`sealed`) holds, :data:`EDITED` where it
    does not (changed since resplit wrote it), None where it has no seal (written before files were sealed: any
    content) or cannot be read."""
    import re

    try:
        data = Path(path).read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.findall(re.escape(SEAL) + "([0-9a-f]{64})", text)
    if not found:
        return None
    unsealed = text.replace(SEAL + found[0], UNSEALED, 1)
    if len(found) != 1 or hashlib.sha256(unsealed.encode("utf-8")).hexdigest() != found[0]:
        return EDITED
    return hashlib.sha256(data).hexdigest()


def source_location(source) -> tuple[dict, Path | None]:
    """What a release records of where its source is, and the local path (None when not local).

    A Hub id or a bundled sample's name is recorded as given (``{"location": "org/name"}``); a
    local file by its name and sha256 (``{"location": "train.csv", "sha256": ...}``); a local folder by
    its name. Never the path: it is the builder machine's, and cards get published."""
    if source is None:
        return {}, None
    path = Path(str(source)).expanduser()
    if not path.exists():
        return {"location": str(source)}, None
    path = path.resolve()
    return ({"location": path.name, "sha256": file_sha256(path)} if path.is_file() else {"location": path.name}), path


def _index_file(record: dict) -> Path:
    """The file of this machine's source index that remembers where the source of ``record`` (a
    ``resplit.source`` mapping) was read from: one per location, file sha256 and content hash."""
    from loading_scripts.files import cache_root

    key = json.dumps([record.get(k) for k in ("location", "sha256", "content_sha256", "revision")])
    return Path(cache_root()) / "sources" / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def remember_source(record: dict, path: Path) -> None:
    """Remember on this machine that the source of ``record`` is at ``path`` (best effort: a cache that
    cannot be written only means ``verify --rescore`` needs ``--source``)."""
    index = _index_file(record)
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        partial = index.with_name(f".{index.name}.{os.getpid()}")
        partial.write_text(json.dumps({"path": str(path)}), encoding="utf-8")
        os.replace(partial, index)
    except OSError:
        pass


def locate_source(record: dict, folder=None, given=None) -> str | None:
    """Where ``verify --rescore`` reads the source of a release whose ``resplit.source`` is ``record``.

    In order: ``given`` (``--source``); a location recorded as an absolute path (releases built
    before locations were names); where this machine's build read it (:func:`remember_source`); a file
    or folder of the recorded name beside the release ``folder`` or in its parent folder; else the
    location as recorded (a Hub id, a bundled sample, or a name relative to the working folder)."""
    if given is not None:
        return str(given)
    location = record.get("location") or record.get("name")
    if not location or Path(location).is_absolute():
        return location
    try:
        remembered = json.loads(_index_file(record).read_text(encoding="utf-8")).get("path")
    except (OSError, ValueError, AttributeError):
        remembered = None
    if remembered and Path(remembered).exists():
        return remembered
    if folder is not None and "/" not in location:
        for place in (Path(folder), Path(folder).parent):
            if (place / location).exists():
                return str(place / location)
    return location


def provenance(method, options, info, signal) -> dict:
    """The ``resplit:`` mapping of a release, less ``version`` and ``configs`` (the writer's).
    A local source is remembered on this machine (:func:`remember_source`)."""
    if not (info.content_sha256 or info.revision):
        raise ValueError(f"method {method.name!r} gave no content hash or revision for its source")
    where, local = source_location(options.source)
    source = {**source_record(info), **where}
    if local is not None:
        remember_source(source, local)
    return {
        "schema": SCHEMA,
        "method": method.name,
        "paper": method.paper,
        "seed": int(options.seed),
        "parameters": options.recorded(),
        "source": source,
        "signal": signal.provenance,
        "environment": environment(),
        "built_by": built_by(method),
    }
