"""Publish a built release folder, or a metric folder, as a tagged version on the Hugging Face Hub.

One version is one commit (every file of the folder, sent sequentially in a single ``create_commit``,
plus deletions of files the previous version had and this one has not) and one tag ``vX.Y.Z`` on it.
Before anything is sent the folder is checked: every config loads with ``datasets``, no ``source_id``
is in two splits of one config, and row counts and file hashes match the card's
``resplit.configs.<name>.rows/sha256``, and the card states a license (a build that could not tell
wrote ``license: unknown``: push refuses it until ``--license`` gives one). The pushed copy (never the
local folder) gets ``resplit.release_version`` in its card, the repository in its load snippet (and the
``--license`` given), and a CHANGELOG.md section that counts, per config, the rows that moved between
splits since the previous tagged version.

Failures leave the remote unchanged (the commit is atomic and sent with ``parent_commit``, so a
concurrent push gives a 412 instead of a mixed state) or resumable (a commit without its tag is found
again on the next run and only tagged). The token comes from ``HF_TOKEN`` or the stored login and is
never printed.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from split_builders.errors import InvalidParameterError, InvalidReleaseError, PublishError
from split_builders.options import check_license as check_hub_license
from split_builders.options import check_repo_id
from split_builders.release.folder import front_matter, data_files, read_card, row_ids
from split_builders.publishing.diff import count_moves
from split_builders.splits import SPLITS

VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
METRIC_FILES = ("README.md", "app.py", "requirements.txt")
# Every failure ends with this: a commit is atomic, and a commit without its tag is found and tagged on rerun.
RESUME = ("No commit was made unless a commit id was printed above; running the same command again "
          "resumes (it only tags an existing identical commit)")


class VersionError(PublishError, ValueError):
    """The version is malformed, already published, or not newer than the latest one."""


class HubAuthError(PublishError, PermissionError):
    """No token, or the Hub rejected it."""


class HubNetworkError(PublishError, ConnectionError):
    """The Hub could not be reached."""


class HubConflictError(PublishError):
    """The Hub answered 409/412: someone else changed the repository meanwhile."""


@dataclass
class PushResult:
    """What a push did: the commit id, the tag, and the line a user copies to load it."""

    repo_id: str
    commit: str | None
    tag: str
    load_line: str
    changelog: str


# -- versions -------------------------------------------------------------------------------------
def parse_version(text: str) -> tuple[int, int, int]:
    """``"1.2.3"`` or ``"v1.2.3"`` -> ``(1, 2, 3)``; raises VersionError otherwise."""
    match = VERSION.match(text or "")
    if not match:
        raise VersionError(f"version must look like 1.2.3, got {text!r}")
    return tuple(int(part) for part in match.groups())


def latest_version_tag(tags) -> str | None:
    """The highest ``vX.Y.Z`` tag among ``tags`` (other tags are ignored)."""
    versions = [t for t in tags if VERSION.match(t) and t.startswith("v")]
    return max(versions, key=parse_version, default=None)


def check_new_version(version: str, tags) -> str | None:
    """Refuse a version that is published or not newer; returns the previous version's tag."""
    tag = f"v{'.'.join(map(str, parse_version(version)))}"
    if tag in tags:
        raise VersionError(f"{tag} is already published; pick a newer version")
    previous = latest_version_tag(tags)
    if previous and parse_version(version) <= parse_version(previous):
        raise VersionError(f"{tag} is not newer than the latest published version {previous}")
    return previous


def validate_release(folder, *, allow_extra: bool = False) -> dict:
    """Check a built folder before it is published: ``resplit verify``'s level 1 (every file's sha256
    and row count equal the card's, every config loads, no ``source_id`` in two splits of a config, no
    file the card does not name unless ``allow_extra``: every file of the folder is published).

    Returns
    -------
    dict
        config -> split -> list of row ids (what the change report compares).

    Raises
    ------
    InvalidReleaseError
        Naming the first config and split that differ from the card.
    """
    from split_builders.release.folder import Released
    from split_builders.publishing.verify import Report, check_integrity

    folder = Path(folder)
    read_card(folder)  # a folder without a card or configs is refused with its own message
    released = Released(folder)
    report = Report(str(folder))
    check_integrity(released, report, allow_extra=allow_extra)
    differs = [f for f in report.findings if f.status == "differs"]
    if differs:
        first = differs[0]
        if first.config == "(folder)":  # files the card does not name: every file would be published
            raise InvalidReleaseError(f"{folder} holds {first.detail}")
        raise InvalidReleaseError(f"{first.config}/{first.split}: {first.detail}; rebuild the folder")
    return {c: {s: released.source_ids(c, s).tolist() for s in released.files[c]} for c in released.configs}


def check_destination(repo_id, *, space: bool = False) -> str:
    """Where push sends a folder: a Hub id ``ORG/NAME`` (:func:`~split_builders.options.check_repo_id`, the Hub's
    rules); a local path (``./out``, ``/data/x``, a folder here) is refused in one line saying that push needs a
    Hub id, and a name the Hub refuses (``'bad repo id'``) naming its rules, before anything is read or sent."""
    from loading_scripts.files import looks_like_path

    text = str(repo_id)
    local = (f"push needs a Hub id ORG/NAME as the {'Space' if space else 'dataset repository'} to publish to; "
             f"{text!r} is a local path (a built folder already is a release: load it with "
             "datasets.load_dataset(FOLDER, CONFIG), or copy the folder)")
    if looks_like_path(text):
        raise InvalidParameterError(local)
    try:
        return check_repo_id(text, "push's destination")
    except InvalidParameterError:
        if Path(text).expanduser().exists():
            raise InvalidParameterError(local) from None
        raise


def check_license(folder, license: str | None = None) -> str:
    """The license the published card states: ``license`` (``--license``) where given, else the card's;
    refuses a card without one or with ``unknown`` (a build that could not tell the license)."""
    if license is not None:
        if not str(license).strip() or str(license).strip().lower() == "unknown":
            raise InvalidReleaseError(f"--license {license!r} is not a license; give a Hub license id (e.g. cc-by-4.0)")
        try:  # one of the Hub's license ids, as a build's --license (not-a-license would be published as stated)
            return check_hub_license(license, "--license")
        except InvalidParameterError as error:
            raise InvalidReleaseError(str(error)) from None
    stated = (read_card(Path(folder))[0] or {}).get("license")
    if not stated or stated == "unknown" or stated == ["unknown"]:
        raise InvalidReleaseError(f"{folder}: the card's license is unknown; give it with --license ID (e.g. "
                                  "cc-by-4.0), or rebuild with --license")
    return stated


def card_for_repo(metadata: dict, body: str, repo_id: str, license: str | None = None) -> tuple[dict, str]:
    """The card as published to ``repo_id``: the load snippet names the repository (instead of the
    placeholder or another repository), and ``license`` (``--license``) replaces the card's."""
    from split_builders.release.card import REPO_PLACEHOLDER

    body = re.sub(r'(load_dataset\()"[^"]*"', lambda m: f'{m.group(1)}"{repo_id}"', body)
    body = re.sub(rf"`{re.escape(REPO_PLACEHOLDER)}` stands for the Hub repository[^\n]*\n\n", "", body)
    if license is not None:
        metadata = {**metadata, "license": license}
    if isinstance(metadata.get("resplit"), dict):  # what the harness tasks name as their dataset_path
        metadata = {**metadata, "resplit": {**metadata["resplit"], "repo_id": repo_id}}
    return metadata, body


# -- change report --------------------------------------------------------------------------------
def changelog_section(tag: str, previous_tag: str | None, current: dict, moves: dict) -> str:
    """The Markdown CHANGELOG section of one version."""
    lines = [f"## {tag} ({date.today().isoformat()})", ""]
    if previous_tag is None:
        lines.append("First published version.")
    else:
        lines.append(f"Rows that moved between splits since {previous_tag}, per config:")
    lines.append("")
    for config, splits in current.items():
        sizes = "/".join(str(len(splits.get(s, []))) for s in SPLITS)
        move = moves.get(config)
        if previous_tag is None or move is None:
            lines.append(f"- `{config}`: {'new config, ' if previous_tag else ''}{sizes} rows (train/validation/test)")
            continue
        detail = ", ".join(f"{k} {v}" for k, v in move["pairs"].items()) or "none"
        lines.append(f"- `{config}`: {move['moved']} rows moved ({detail}); {move['added']} added, "
                     f"{move['removed']} removed; now {sizes} rows (train/validation/test)")
    return "\n".join(lines) + "\n"


# -- talking to the Hub ---------------------------------------------------------------------------
@contextmanager
def hub_errors(repo_id: str):
    """Turn huggingface_hub / network exceptions into PublishError subclasses with a next step."""
    from huggingface_hub.errors import HfHubHTTPError, LocalTokenNotFoundError, RepositoryNotFoundError

    try:
        yield
    except PublishError:
        raise
    except LocalTokenNotFoundError as error:
        raise HubAuthError("no Hub token: set HF_TOKEN or run `hf auth login`") from error
    except RepositoryNotFoundError as error:
        raise HubAuthError(f"{repo_id} is not visible with this token (missing, private, or token rejected)") from error
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else None
        # These messages carry the URL and the server's words, never request headers (the token).
        message = error.server_message or str(error).splitlines()[0]
        if status in (401, 403):
            raise HubAuthError(f"the Hub rejected the token ({status}): check HF_TOKEN or `hf auth login`. "
                               f"{RESUME}") from error
        if status in (409, 412):
            raise HubConflictError(f"conflict ({status}) on {repo_id}: {message}; someone else pushed meanwhile. "
                                   f"{RESUME}") from error
        raise PublishError(f"the Hub answered {status} for {repo_id}: {message}. {RESUME}") from error
    except _network_errors() as error:
        raise HubNetworkError(f"cannot reach the Hub ({type(error).__name__}): check HF_ENDPOINT and the "
                              f"network. {RESUME}") from error


def _network_errors() -> tuple:
    """Exception types that mean "no answer from the server" (the client's HTTP library varies)."""
    try:  # huggingface_hub 2.x talks through httpx2; older versions through httpx
        from httpx2 import TransportError
    except ImportError:
        from httpx import TransportError
    return (ConnectionError, TransportError)


def hub_api():
    """An ``HfApi`` with the token from HF_TOKEN or the stored login; fails early without one."""
    from huggingface_hub import HfApi, get_token

    if not get_token():
        raise HubAuthError("no Hub token: set HF_TOKEN or run `hf auth login`")
    return HfApi()


def remote_state(api, repo_id: str, repo_type: str) -> tuple[dict, str | None]:
    """Version tags (tag -> commit) and the head of ``main`` (None for an empty repo)."""
    refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    heads = {b.name: b.target_commit for b in refs.branches}
    return {t.name: t.target_commit for t in refs.tags}, heads.get("main")


def fetch_split_ids(api, repo_id: str, revision: str, cache_dir: str) -> tuple[dict, str]:
    """config -> split -> row identities (:func:`~split_builders.publishing.verify.row_ids`) of a published
    version, and its CHANGELOG.md ("" if none)."""
    import pyarrow.parquet as pq

    readme = api.hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision, cache_dir=cache_dir)
    metadata, _ = read_card(Path(readme).parent)
    ids = {}
    for config, splits in data_files(metadata).items():
        ids[config] = {}
        for split, path in splits.items():
            local = api.hf_hub_download(repo_id, path, repo_type="dataset", revision=revision, cache_dir=cache_dir)
            ids[config][split] = row_ids(pq.read_table(local))
    names = {f.path for f in api.list_repo_tree(repo_id, repo_type="dataset", revision=revision)}
    changelog = ""
    if "CHANGELOG.md" in names:
        changelog = Path(api.hf_hub_download(repo_id, "CHANGELOG.md", repo_type="dataset", revision=revision,
                                             cache_dir=cache_dir)).read_text(encoding="utf-8")
    return ids, changelog


def stage_release(folder: Path, staging: Path, version: str, section: str, old_changelog: str, *,
                  repo_id: str | None = None, license: str | None = None) -> Path:
    """Copy ``folder`` to ``staging`` with the card's version and the CHANGELOG updated, the card made for
    ``repo_id`` (:func:`card_for_repo`) and its harness tasks reading ``repo_id`` at this version's tag."""
    # the harness's byte-code of utils.py is not part of a release
    shutil.copytree(folder, staging, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    metadata, body = read_card(staging)
    if repo_id is not None:
        metadata, body = card_for_repo(metadata, body, repo_id, license)
    # Beside the resplit ``version`` that built it, where a reader of the card looks first.
    resplit = {k: v for k, v in metadata["resplit"].items() if k != "release_version"}
    keys = list(resplit)
    at = keys.index("version") + 1 if "version" in keys else 0
    metadata["resplit"] = dict([*list(resplit.items())[:at], ("release_version", version), *list(resplit.items())[at:]])
    # sort_keys=False keeps the card's order; the data-file YAML is unchanged so hashes still match.
    text = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    (staging / "README.md").write_text(f"---\n{text}---\n{body}", encoding="utf-8")
    previous = old_changelog.split("\n", 2)[2] if old_changelog.startswith("# Changelog\n") else old_changelog
    (staging / "CHANGELOG.md").write_text(f"# Changelog\n\n{section}\n{previous.lstrip()}".rstrip() + "\n",
                                          encoding="utf-8")
    if repo_id is not None and metadata.get("resplit"):  # tasks that read this version on the Hub
        from split_builders.publishing.readers import write_readers

        write_readers(staging, repo_id=repo_id, revision=f"v{'.'.join(map(str, parse_version(version)))}")
    return staging


def local_files(folder: Path) -> dict:
    """relative path -> (git blob id, sha256) of every file under ``folder``.

    The Hub lists a plain file by its git blob id and an LFS/Xet file by its content's sha256:
    both are kept so either kind compares.
    """
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        out[path.relative_to(folder).as_posix()] = (blob, hashlib.sha256(data).hexdigest())
    return out


def _same_files(local: dict, remote_entries) -> bool:
    """Whether the remote tree holds exactly the ``local`` files (see :func:`local_files`)."""
    remote = {f.path: (f.lfs.sha256 if f.lfs else f.blob_id) for f in remote_entries if hasattr(f, "blob_id")}
    return remote.keys() == local.keys() and all(remote[p] in local[p] for p in local)


def commit_folder(api, repo_id: str, repo_type: str, folder: Path, head: str | None, message: str) -> str:
    """Make ``main`` hold exactly ``folder`` in one commit; returns the commit id.

    When ``main`` already holds exactly these files (a previous run committed but did not tag),
    nothing is sent and its head is returned: that is what makes a failed push resumable.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    files = local_files(folder)
    remote = list(api.list_repo_tree(repo_id, repo_type=repo_type, revision=head, recursive=True)) if head else []
    if head and _same_files(files, remote):
        return head
    stale = {f.path for f in remote if hasattr(f, "blob_id")} - files.keys()  # old data files go in the same commit
    operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(folder / p)) for p in files]
    operations += [CommitOperationDelete(path_in_repo=p) for p in sorted(stale)]
    # num_threads=1: files are sent one after another, never concurrently (the issue asks for it).
    info = api.create_commit(repo_id, operations, repo_type=repo_type, commit_message=message,
                             parent_commit=head, num_threads=1)
    return info.oid


def _load_line(repo_id: str, tag: str, config: str | None, *, metric: bool) -> str:
    if metric:
        return f'evaluate.load("{repo_id}", revision="{tag}")'
    return f'load_dataset("{repo_id}", "{config}", revision="{tag}")'


def push_release(folder, repo_id: str, version: str, *, message: str | None = None, private: bool = False,
                 dry_run: bool = False, allow_extra: bool = False, license: str | None = None,
                 log=print) -> PushResult:
    """Validate ``folder`` and publish it as version ``version`` of dataset ``repo_id``.

    Parameters
    ----------
    folder : path
        A built release folder (``resplit likelihood --out FOLDER``); it is not modified.
    repo_id : str
        ``org/name`` of the Hub dataset repository (created if missing).
    version : str
        ``X.Y.Z``; must be newer than every published ``vX.Y.Z`` tag.
    message : str, optional
        Commit message (default ``resplit release vX.Y.Z``).
    private : bool
        Create the repository private (an existing repository keeps its visibility).
    dry_run : bool
        Validate the folder and say what would be pushed; nothing is sent (no token needed).
    allow_extra : bool
        Publish files the card does not name too (refused without it: every file of the folder is sent).
    license : str, optional
        The license the published card states (``--license``): needed when the card's is ``unknown``.
    log : callable
        Where progress lines go (``print``); never receives the token.

    Returns
    -------
    PushResult
    """
    repo_id = check_destination(repo_id)
    folder = Path(folder)
    tag = f"v{'.'.join(map(str, parse_version(version)))}"
    current = validate_release(folder, allow_extra=allow_extra)
    stated = check_license(folder, license)
    first_config = next(iter(current))
    if dry_run:
        log(f"{folder} is valid: {len(current)} configs; would push it to {repo_id} and tag {tag}")
        return PushResult(repo_id, None, tag, _load_line(repo_id, tag, first_config, metric=False), "")
    api = hub_api()
    with hub_errors(repo_id), tempfile.TemporaryDirectory(prefix="resplit-push-") as tmp:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        tags, head = remote_state(api, repo_id, "dataset")
        previous_tag = check_new_version(version, tags)
        previous, old_changelog = ({}, "")
        if previous_tag:
            previous, old_changelog = fetch_split_ids(api, repo_id, previous_tag, str(Path(tmp) / "cache"))
        section = changelog_section(tag, previous_tag, current, count_moves(previous, current))
        staged = stage_release(folder, Path(tmp) / "release", version, section, old_changelog, repo_id=repo_id,
                               license=stated if license is not None else None)
        commit = commit_folder(api, repo_id, "dataset", staged, head, message or f"resplit release {tag}")
        log(f"commit {commit}")
        api.create_tag(repo_id, tag=tag, revision=commit, repo_type="dataset", tag_message=f"resplit release {tag}")
    result = PushResult(repo_id, commit, tag, _load_line(repo_id, tag, first_config, metric=False), section)
    log(f"tagged {tag}\nload it with:\n    {result.load_line}")
    return result


def check_metric_folder(folder) -> Path:
    """The module file of a metric folder in Space layout; raises InvalidReleaseError if incomplete."""
    folder = Path(folder)
    module = folder / f"{folder.name}.py"
    missing = [name for name in METRIC_FILES if not (folder / name).is_file()] + ([] if module.is_file() else [module.name])
    if missing:
        raise InvalidReleaseError(f"metric folder {folder} lacks {', '.join(missing)} (Space layout: "
                                  f"<name>.py, README.md, app.py, requirements.txt)")
    space, _ = front_matter(folder / "README.md")
    if space is None or "sdk" not in space:
        raise InvalidReleaseError(f"{folder}/README.md needs Space YAML (sdk: gradio, app_file: app.py)")
    return module


def push_metric(folder, repo_id: str, version: str, *, message: str | None = None, private: bool = False,
                dry_run: bool = False, log=print) -> PushResult:
    """Publish a metric folder as a Hub Space that ``evaluate.load(repo_id)`` reads, tagged ``vX.Y.Z``.

    The module file is renamed after the Space (``evaluate`` downloads ``<space name>.py``).
    Parameters are those of :func:`push_release`.
    """
    repo_id = check_destination(repo_id, space=True)
    folder = Path(folder)
    tag = f"v{'.'.join(map(str, parse_version(version)))}"
    space_name = repo_id.split("/")[-1]
    module = check_metric_folder(folder)
    line = _load_line(repo_id, tag, None, metric=True)
    if dry_run:
        log(f"{folder} is a valid metric Space; would push it to {repo_id} and tag {tag}")
        return PushResult(repo_id, None, tag, line, "")
    api = hub_api()
    with hub_errors(repo_id), tempfile.TemporaryDirectory(prefix="resplit-push-") as tmp:
        staged = Path(tmp) / space_name
        shutil.copytree(folder, staged, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        if module.name != f"{space_name}.py":
            (staged / module.name).rename(staged / f"{space_name}.py")
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        tags, head = remote_state(api, repo_id, "space")
        check_new_version(version, tags)
        commit = commit_folder(api, repo_id, "space", staged, head, message or f"resplit metric {tag}")
        log(f"commit {commit}")
        api.create_tag(repo_id, tag=tag, revision=commit, repo_type="space", tag_message=f"resplit metric {tag}")
    log(f"tagged {tag}\nload it with:\n    {line}")
    return PushResult(repo_id, commit, tag, line, "")
