"""What a ``resplit report`` was made from, recorded in the report itself (issue 54) so a table can be traced back.

:func:`report_provenance` gives the ``provenance`` object of ``--json`` and ``report.json``: each release as it
was given (a folder path, or a Hub id with its revision), its harness group name in its own key, its recorded
revision and the sha256 of its card; each run as it was given, with the harness that wrote it and that harness's
version, and every file read (path as read, sha256); the bootstrap's seed, resamples and confidence level;
resplit's version; and the time the report was made (UTC, ISO 8601). The time is the only thing that differs
between two reports of the same inputs; ``SOURCE_DATE_EPOCH`` (the reproducible-builds convention, seconds since
1970) fixes it, so a report can be made byte for byte again. :func:`provenance_lines` is ``report.md``'s header.
"""

from __future__ import annotations

import datetime as _datetime
import os
from pathlib import Path

from split_builders.errors import InvalidParameterError

TIME_ENV = "SOURCE_DATE_EPOCH"


def created() -> str:
    """The time of the report, UTC ISO 8601 to the second: now, or ``$SOURCE_DATE_EPOCH`` where it is set."""
    fixed = os.environ.get(TIME_ENV)
    if fixed is not None and fixed.strip():
        try:
            moment = _datetime.datetime.fromtimestamp(int(fixed.strip()), _datetime.timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise InvalidParameterError(f"${TIME_ENV} is {fixed!r}, not a whole number of seconds since 1970; set it "
                                        "to one (e.g. $(date +%s)) or unset it") from None
    else:
        moment = _datetime.datetime.now(_datetime.timezone.utc)
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def release_record(target, info) -> dict:
    """One release of the report: ``release`` as given (the folder path, or the Hub id), ``group`` (its harness
    group name, what the tables' ``release`` column holds), ``hub_id``, ``revision`` (the one asked for on the Hub,
    else the card's) and ``card_sha256`` (of its ``README.md`` as read)."""
    from split_builders.release.folder import is_local_target
    from split_builders.release.provenance import file_sha256

    text = str(target)
    local = is_local_target(text)
    hub_id, _, asked = (None, "", "") if local else text.partition("@")
    return {"release": text if local else hub_id, "group": info.name, "hub_id": hub_id or info.repo_id,
            "revision": asked or info.revision, "card_sha256": file_sha256(Path(info.folder) / "README.md")}


def run_record(run, given) -> dict:
    """One run of the report: its model, the argument it was read from (``path``), the harness that wrote it and
    its version, and each file read with its sha256."""
    from split_builders.release.provenance import file_sha256

    files = [{"path": str(file), "sha256": file_sha256(file)} for file in dict.fromkeys(map(Path, run.files))]
    return {"model": run.name, "path": str(given), "harness": run.harness, "harness_version": run.harness_version,
            "files": files}


def report_provenance(targets: list, releases: list, runs: list, given: dict, *, seed: int, n_resamples: int,
                      confidence: float) -> dict:
    """The ``provenance`` object of a report (the module's docstring); ``given``: each run's file -> the argument
    it was read from."""
    from split_builders.release.provenance import resplit_version

    def argument(run):
        first = next(iter(run.files), None)
        return given.get(Path(first).resolve(), run.path) if first is not None else run.path

    return {"created": created(), "resplit_version": resplit_version(), "seed": int(seed),
            "bootstrap_resamples": int(n_resamples), "confidence": float(confidence),
            "releases": [release_record(t, r) for t, r in zip(targets, releases)],
            "runs": [run_record(run, argument(run)) for run in runs]}


def provenance_lines(provenance: dict) -> list[str]:
    """``report.md``'s short header: what the report was made from, by which resplit, when."""
    if not provenance:
        return []
    lines = [f"Made by resplit {provenance['resplit_version']} at {provenance['created']} (seed {provenance['seed']}, "
             f"{provenance['bootstrap_resamples']} bootstrap resamples, confidence {provenance['confidence']:g}) from:",
             ""]
    for item in provenance["releases"]:
        where = f"`{item['release']}`" + (f" @ {item['revision']}" if item.get("revision") else "")
        lines.append(f"- release {where} (group `{item['group']}`; card sha256 `{item['card_sha256'][:12]}`)")
    for item in provenance["runs"]:
        harness = item["harness"] + (f" {item['harness_version']}" if item.get("harness_version") else "")
        digests = ", ".join(f"`{f['sha256'][:12]}`" for f in item["files"][:3])
        more = f" and {len(item['files']) - 3} more" if len(item["files"]) > 3 else ""
        lines.append(f"- run `{item['path']}`: model {item['model']} ({harness}; {len(item['files'])} file(s), sha256 "
                     f"{digests or '-'}{more})")
    return [*lines, "", "report.json records every file and its full sha256.", ""]
