"""Release recipes: one YAML file per Hub dataset we publish (``releases/<name>.yaml``).

A recipe is a method name plus that method's options, and what a maintainer must not have to
remember: the Hub repository (``{org}/name``: the organisation comes from ``--org`` or
``$RESPLIT_ORG``), the source pinned to a revision (a Hub id and commit, or files by URL and sha256)
(``origin`` says where the files come from), with the places a local copy may be, the model pinned to a revision, the seed, the license and the
BibTeX of the method's paper and of the source dataset. ::

    repo: "{org}/geoquery-compositional"
    method: tmcd
    seed: 1
    options: {train_size: 440, configs: [tmcd, length, template, standard]}
    source:
      files: [{path: geoquery_nqg.tsv, sha256: ...}]   # or {url: ..., sha256: ...}
      local: [../shared/data/geoquery]
    license: gpl-2.0
    language: en                                       # or a list of codes
    pretty_name: GeoQuery compositional splits         # the card's title (default: the method's)
    citation: {method: "@inproceedings{...}", source: "@inproceedings{...}"}
    against:                                           # optional: datasets the evaluation splits are checked
      - ../shared/data/snli/snli_1.0_dev.jsonl.gz      #   against (a file, a folder, or a mapping with
      - {dataset: org/other, revision: abc123, splits: [train]}   #   revision, splits and fields)

The build's card then states the tiers of its evaluation rows against each (:mod:`split_builders.publishing.against`).
Options are validated by the method's options dataclass when the recipe is read: an unknown or
mistyped key is an error that names it and the keys the method takes.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from split_builders.errors import InvalidParameterError

ORG_ENV = "RESPLIT_ORG"
KEYS = {"repo", "method", "seed", "options", "source", "model", "license", "citation", "description", "kind",
        "space", "pretty_name", "language", "against"}
# The type of each top-level key (``options`` are typed by the method's Options dataclass).
KEY_TYPES = {"repo": (str, "text (e.g. \"{org}/name\")"), "method": (str, "a method name (resplit list)"),
             "kind": (str, "'dataset' or 'metric'"), "options": (dict, "a mapping of option: value"),
             "source": (dict, "a mapping (hub, revision, files, local)"),
             "model": (dict, "a mapping (hub, revision)"), "license": (str, "text (a license id)"),
             "citation": (dict, "a mapping (method, source) of BibTeX"), "description": (str, "text"),
             "space": (str, "a folder (e.g. metrics/g_score)"), "pretty_name": (str, "text"),
             "language": ((str, list), "a language code or a list of them (e.g. en)"),
             "against": (list, "a list of datasets (a path, a Hub id, or {dataset, revision, splits, fields})")}
# Keys of ``options`` that a recipe sets elsewhere (or that only make sense on a command line).
RESERVED_OPTIONS = {"source", "out", "overwrite", "seed", "license", "language", "org"}
# Where a recipe sets each reserved option instead.
RESERVED_WHERE = {"seed": "top-level seed", "license": "top-level license", "language": "top-level language",
                  "org": "repo (and --org)"}


@dataclass
class Recipe:
    """A parsed, validated recipe (see the module docstring)."""

    name: str
    path: Path
    repo: str
    kind: str = "dataset"  # or "metric": a metric Space (``space`` is its folder)
    method: str | None = None
    seed: int = 42
    options: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    model: dict | None = None
    license: str | None = None
    citation: dict = field(default_factory=dict)
    space: str | None = None
    pretty_name: str | None = None
    language: tuple | None = None
    against: tuple = ()  # ({dataset, revision, splits, fields}, ...): what the evaluation splits are checked against

    def repo_id(self, org: str | None = None) -> str:
        """The Hub repository, with the organisation filled in (``--org`` or ``$RESPLIT_ORG``), by the Hub's rules."""
        from split_builders.options import check_repo_id

        given, org = org, org or os.environ.get(ORG_ENV)
        if "{org}" in self.repo and not org:
            raise InvalidParameterError(f"recipe {self.name}: repo {self.repo!r} needs an organisation: pass --org "
                                        f"or set ${ORG_ENV}")
        if "{org}" in self.repo:  # a Hub organisation, or one line before its name is printed in the card
            check_repo_id(org, "--org" if org == given else f"${ORG_ENV}", namespace=True)
        return check_repo_id(self.repo.replace("{org}", org or ""), f"recipe {self.name}: repo")

    def known_repo_id(self, org: str | None = None) -> str | None:
        """The Hub repository where it can be told (:meth:`repo_id`), else None (no organisation given):
        what a build's card names in its load snippet; an organisation or repository the Hub would refuse is
        one line."""
        if "{org}" in self.repo and not (org or os.environ.get(ORG_ENV)):
            return None
        return self.repo_id(org)

    def card_overrides(self, org: str | None = None) -> dict:
        """What a build of this recipe passes to :func:`split_builders.builder.build` for its card:
        license, BibTeX (method's, then source's), title, language codes and Hub repository."""
        citation = "\n".join(self.citation.get(k, "").strip() for k in ("method", "source") if self.citation.get(k))
        return {"license": self.license, "citation": citation or None, "pretty_name": self.pretty_name,
                "language": self.language, "repo_id": self.known_repo_id(org)}

    def local_source(self) -> Path | None:
        """The first local copy of the source that exists (paths relative to the recipe's repository
        root, i.e. the folder holding ``releases/``), or None."""
        root = self.path.resolve().parent.parent
        for candidate in self.source.get("local", []) or []:
            path = Path(candidate)
            path = path if path.is_absolute() else root / path
            if path.exists():
                return path.resolve()
        return None

    def against_datasets(self) -> list[dict]:
        """The ``against`` entries with each local dataset's path made absolute (relative to the repository
        root, the folder holding ``releases/``); a Hub id is kept as it is. Checked here, before a build (cheap
        checks, no download): a local file or folder exists, can be read and, a file, is a table the audit reads
        (without a ``revision``, which a local copy has not); anything else is a Hub id ``ORG/NAME[@REVISION]`` by
        the Hub's rules. A bad entry is one line naming it (was: refused after the whole build)."""
        root = self.path.resolve().parent.parent
        return [{**entry, "path": _against_path(self.name, number, entry, root)}
                for number, entry in enumerate(self.against, 1)]

    def pinned(self) -> bool:
        """Whether the source (and the model, if any) is pinned to an exact revision."""
        source_pinned = bool(self.source.get("revision")) or (
            bool(self.source.get("files")) and all(f.get("sha256") for f in self.source["files"]))
        model_pinned = self.model is None or bool(self.model.get("revision")) or self.model.get("bundled", False)
        return source_pinned and model_pinned

    def method_options(self, *, source, out, overwrite: bool = False, settings: dict | None = None, **overrides):
        """The method's options object for a build of this recipe (validated by the dataclass).
        ``settings`` are a trial build's ``--set`` changes to the recipe's options (checked like them)."""
        from split_builders.registry import get_method

        method = get_method(self.method)
        if settings:
            _check_option_keys(self.name, self.method, settings)
            overrides = {**settings, **overrides}
        values = {**self.options, **{k: v for k, v in overrides.items() if v is not None}}
        try:
            return method.Options(source=str(source), out=str(out), overwrite=overwrite, seed=self.seed, **values)
        except InvalidParameterError as error:  # name where the value came from: --set KEY or options.KEY
            key = str(error).split(" ", 1)[0].replace("-", "_")
            where = "--set " if key in (settings or {}) else "options." if key in self.options else ""
            raise InvalidParameterError(f"recipe {self.name}: {where}{error}") from None


def _languages(name: str, value) -> tuple | None:
    """A recipe's ``language``: one code or a list of codes (text), as a tuple."""
    if value is None:
        return None
    codes = [value] if isinstance(value, str) else value
    if not codes or not all(isinstance(code, str) and code.strip() for code in codes):
        raise InvalidParameterError(f"recipe {name}: language must be a language code or a list of them (e.g. en), "
                                    f"got {value!r}")
    return tuple(code.strip() for code in codes)


AGAINST_KEYS = ("dataset", "revision", "splits", "fields")


def _against(name: str, value) -> tuple:
    """A recipe's ``against``: each entry a dataset (a path relative to the repository root, or a Hub id) or a
    mapping of ``dataset`` and optional ``revision``, ``splits`` and ``fields`` (lists of names)."""
    entries = []
    for number, entry in enumerate(value or [], 1):
        entry = {"dataset": entry} if isinstance(entry, str) else entry
        if not isinstance(entry, dict) or not isinstance(entry.get("dataset"), str) or not entry["dataset"].strip():
            raise InvalidParameterError(f"recipe {name}: against entry {number} must be a dataset (a path or a Hub "
                                        f"id) or a mapping with 'dataset', got {entry!r}")
        unknown = sorted(set(entry) - set(AGAINST_KEYS))
        if unknown:
            raise InvalidParameterError(f"recipe {name}: against entry {number} has unknown key(s) "
                                        f"{', '.join(map(str, unknown))}; allowed: {', '.join(AGAINST_KEYS)}")
        for key in ("splits", "fields"):
            names = entry.get(key)
            if names is not None and not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
                raise InvalidParameterError(f"recipe {name}: against entry {number}: {key} must be a list of names, "
                                            f"got {names!r}")
        if entry.get("revision") is not None and not isinstance(entry["revision"], str):
            raise InvalidParameterError(f"recipe {name}: against entry {number}: revision must be text (a branch, "
                                        f"tag or commit), got {entry['revision']!r}")
        entries.append({key: entry.get(key) for key in AGAINST_KEYS})
    return tuple(entries)


def _against_path(name: str, number: int, entry: dict, root: Path) -> str:
    """The local path (absolute) or Hub id of a recipe's ``against`` entry, checked as
    :meth:`Recipe.against_datasets` says."""
    from loading_scripts.files import looks_like_path, table_format
    from split_builders.options import check_repo_id

    text = entry["dataset"]
    where = f"recipe {name}: against entry {number} ({text!r})"
    path = Path(text).expanduser()
    local = path if path.is_absolute() else root / path
    if local.exists():
        kind = "folder" if local.is_dir() else "file"
        if entry.get("revision"):
            raise InvalidParameterError(f"{where} is a {kind} here, which has no revisions: drop its revision, or "
                                        "name the dataset by its Hub id")
        if kind == "file" and not local.is_file():  # a FIFO or a device: reading it would wait, or never end
            raise InvalidParameterError(f"{where}: {local} is not a regular file (a FIFO, a socket or a device); give "
                                        "a table file, a dataset or release folder, or a Hub id ORG/NAME")
        if not os.access(local, os.R_OK | (os.X_OK if kind == "folder" else 0)):
            raise InvalidParameterError(f"{where}: {local} cannot be read (permissions); make it readable")
        if kind == "file" and table_format(local) is None:
            raise InvalidParameterError(f"{where} is not a CSV, TSV, JSONL, JSON or Parquet file; give a table file, "
                                        "a dataset or release folder, or a Hub id ORG/NAME")
        return str(local)
    repo_id, _, at = text.partition("@")
    if looks_like_path(text) or table_format(Path(repo_id)) is not None:
        raise InvalidParameterError(f"{where} does not exist (looked for {local}; a path is relative to {root}, the "
                                    "folder holding releases/); give an existing file or folder, or a Hub id "
                                    "ORG/NAME")
    check_repo_id(repo_id, f"{where} is no file or folder here (under {root}), and")
    if "@" in text and not at.strip():
        raise InvalidParameterError(f"{where}: nothing after '@'; give ORG/NAME@REVISION (a branch, tag or commit)")
    return text


def parse_settings(settings: list[str] | None) -> dict:
    """``--set KEY=VALUE`` arguments as a dict of option overrides; each value is read as YAML, so
    ``train_size=400`` is a number and ``phenomena=[verbnet,boolean]`` a list."""
    values = {}
    for setting in settings or []:
        key, sep, text = setting.partition("=")
        if not sep or not key.strip():
            raise InvalidParameterError(f"--set takes KEY=VALUE (an option of the recipe's method), got {setting!r}")
        try:
            values[key.strip()] = yaml.safe_load(text)
        except yaml.YAMLError:
            raise InvalidParameterError(f"--set {key.strip()}: {text!r} is not a valid value") from None
    return values


def _check_option_keys(name: str, method_name: str, options: dict) -> None:
    from split_builders.registry import get_method

    method = get_method(method_name)
    known = {f.name for f in dataclasses.fields(method.Options)} - RESERVED_OPTIONS
    for key in options:
        if key in RESERVED_OPTIONS:
            raise InvalidParameterError(f"recipe {name}: options.{key} is set by the recipe itself "
                                        f"({RESERVED_WHERE.get(key, 'the source block or the command line')})")
        if key not in known:
            from split_builders.options import suggest_option  # over the names and their aliases (dev_size)

            close = suggest_option(str(key), method.Options, among=known) or next(
                iter(difflib.get_close_matches(str(key), sorted(known), n=1)), None)
            hint = f" (did you mean {close!r}?)" if close else ""
            raise InvalidParameterError(f"recipe {name}: unknown option {key!r} for method {method_name}{hint}; "
                                        f"it takes: {', '.join(sorted(known))}")


def load_recipe(path) -> Recipe:
    """Read and validate a recipe file; every problem is one line naming the recipe and the key."""
    path = Path(path)
    if not path.is_file():
        raise InvalidParameterError(f"recipe {str(path)!r} does not exist")
    name = path.stem
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise InvalidParameterError(f"recipe {name}: not valid YAML ({error})") from None
    if not isinstance(data, dict):
        raise InvalidParameterError(f"recipe {name}: expected a mapping of keys, got {type(data).__name__}")
    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise InvalidParameterError(f"recipe {name}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(KEYS))}")
    for key, (kinds, wanted) in KEY_TYPES.items():
        if data.get(key) is not None and not isinstance(data[key], kinds):
            raise InvalidParameterError(f"recipe {name}: {key} must be {wanted}, got {data[key]!r} "
                                        f"({type(data[key]).__name__})")
    if "repo" not in data:
        raise InvalidParameterError(f"recipe {name}: 'repo' is missing (e.g. \"{{org}}/{name}\")")
    kind = data.get("kind", "dataset")
    recipe = Recipe(name=name, path=path, repo=data["repo"], kind=kind, method=data.get("method"),
                    seed=data.get("seed", 42), options=dict(data.get("options") or {}),
                    source=dict(data.get("source") or {}), model=data.get("model"), license=data.get("license"),
                    citation=dict(data.get("citation") or {}), space=data.get("space"),
                    pretty_name=data.get("pretty_name"), language=_languages(name, data.get("language")),
                    against=_against(name, data.get("against")))
    if kind == "metric":
        if not recipe.space:
            raise InvalidParameterError(f"recipe {name}: a metric recipe needs 'space' (its folder, e.g. metrics/g_score)")
        return recipe
    if kind != "dataset":
        raise InvalidParameterError(f"recipe {name}: kind must be 'dataset' or 'metric', got {kind!r}")
    if not recipe.method:
        raise InvalidParameterError(f"recipe {name}: 'method' is missing")
    _check_option_keys(name, recipe.method, recipe.options)
    if not (recipe.source.get("hub") or recipe.source.get("files") or recipe.source.get("local")):
        raise InvalidParameterError(f"recipe {name}: 'source' needs 'hub' (+ 'revision'), 'files' (url + sha256) "
                                    "or 'local'")
    for entry in recipe.source.get("files", []) or []:
        if not isinstance(entry, dict) or not (entry.get("path") or entry.get("url")) or "sha256" not in entry:
            raise InvalidParameterError(f"recipe {name}: each of source.files needs a path (relative to the source "
                                        "folder) or a url, and its sha256")
    missing = [k for k in ("method", "source") if k not in recipe.citation]
    if missing:
        raise InvalidParameterError(f"recipe {name}: citation needs BibTeX for {' and '.join(missing)}")
    # The options themselves, as the method validates them (types, ranges, choices).
    recipe.method_options(source="(recipe)", out="(recipe)")
    return recipe


def recipes_folder() -> Path:
    """``releases/`` of this checkout (beside the ``split_builders`` package)."""
    return Path(__file__).resolve().parents[2] / "releases"


def list_recipes(folder=None) -> list[Recipe]:
    """Every recipe (``*.yaml``) of ``folder`` (default: :func:`recipes_folder`); a folder that is
    missing, not a folder or without a recipe is an error (not an empty list)."""
    folder = Path(folder).expanduser() if folder else recipes_folder()
    if not folder.exists():
        raise InvalidParameterError(f"recipes folder {str(folder)!r} does not exist; give the folder holding the "
                                    "*.yaml recipes with --recipes-dir")
    if not folder.is_dir():
        raise InvalidParameterError(f"recipes folder {str(folder)!r} is a file; give the folder holding the *.yaml "
                                    "recipes with --recipes-dir")
    paths = sorted(folder.glob("*.yaml"))
    if not paths:
        raise InvalidParameterError(f"recipes folder {str(folder)!r} holds no recipe (*.yaml)")
    return [load_recipe(path) for path in paths]


def file_sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_local_copy(recipe: Recipe, local: Path) -> list[str]:
    """Pinned files of the recipe that a local copy holds with another sha256 (a list of lines; empty
    when everything that can be checked matches). Files are matched by name."""
    problems = []
    for entry in recipe.source.get("files", []) or []:
        expected = entry.get("sha256")
        name = entry.get("path") or entry["url"].rsplit("/", 1)[-1]
        candidate = local / name if local.is_dir() else local
        if expected and candidate.is_file() and candidate.name == Path(name).name:  # a file the copy holds
            actual = file_sha256(candidate)
            if actual != expected:
                problems.append(f"{candidate}: sha256 {actual[:16]}... but the recipe pins {expected[:16]}...")
    return problems
