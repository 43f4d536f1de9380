"""``croissant.json``: a release in Croissant 1.1 (MLCommons) metadata, read from its card's YAML and its data files
alone (no family code): what the Hub's generated file cannot know.

- the dataset: name, description, license, ``url`` and ``version`` where the card records a Hub repository and a
  published version, ``citeAs`` (the method's paper and the card's BibTeX);
- ``distribution``: a ``cr:FileObject`` per data file (its path in the release, its sha256) and a local
  ``cr:FileSet`` per config, which the config's record set reads;
- ``recordSet``: one per config, its fields typed from the config's ``datasets`` features (a ``ClassLabel`` an index
  into an ``sc:Enumeration`` record set of its names, the declared label also ``cr:Label``, lists ``isArray``,
  structs ``subField``) and a ``split`` field that refers to the ``cr:Split`` record set (``cr:TrainingSplit``,
  ``cr:ValidationSplit``, ``cr:TestSplit``);
- ``prov:wasDerivedFrom`` (the source), ``prov:wasGeneratedBy`` (resplit's version, the method, its paper, seed and
  parameters; each record set its config's; ``prov:used``: the signal the rows were split by, its model and
  revision, template, dtype and engine, or its given scores' file and sha256), ``rai:dataLimitations`` (the leakage audit's and contamination's
  numbers) and ``rai:dataManipulationProtocol`` (how the rows were re-split).

The same release gives the same bytes (the card's order, no time stamps), and no local path is named.
:func:`croissant_problems` is what ``verify`` checks of it, :func:`croissant_changes` what ``diff`` reports.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath

FILE = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
PARQUET = "application/x-parquet"
HUB = "https://huggingface.co/datasets/"
# The Croissant 1.1 @context (the spec's Appendix 1, as mlcroissant writes it), with PROV-O.
CONTEXT = {
    "@language": "en", "@vocab": "https://schema.org/", "arrayShape": "cr:arrayShape", "citeAs": "cr:citeAs",
    "column": "cr:column", "conformsTo": "dct:conformsTo", "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty", "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract", "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset", "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5",
    "name": {"@container": "@language"}, "parentField": "cr:parentField", "path": "cr:path",
    "prov": "http://www.w3.org/ns/prov#", "recordSet": "cr:recordSet", "references": "cr:references",
    "regex": "cr:regex", "repeated": "cr:repeated", "replace": "cr:replace", "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/", "separator": "cr:separator", "source": "cr:source", "subField": "cr:subField",
    "transform": "cr:transform",
}
SPLIT_TYPES = {"train": "cr:TrainingSplit", "validation": "cr:ValidationSplit", "test": "cr:TestSplit"}
_TYPES = {"string": "sc:Text", "large_string": "sc:Text", "bool": "sc:Boolean", "binary": "sc:Text",
          "large_binary": "sc:Text", "date32": "sc:Date", "date64": "sc:Date",
          **{f"int{n}": f"cr:Int{n}" for n in (8, 16, 32, 64)}, **{f"uint{n}": f"cr:UInt{n}" for n in (8, 16, 32, 64)},
          **{f"float{n}": f"cr:Float{n}" for n in (16, 32, 64)}, "float": "cr:Float32", "double": "cr:Float64"}


def _public(value):
    """``value`` with every string that is an absolute local path replaced by its last part (a release never
    names the builder's machine: older cards may record a source's absolute location)."""
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_public(v) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~/", "\\\\")) or re.match(r"^[A-Za-z]:[\\/]", value)):
        return re.split(r"[\\/]", value.rstrip("/\\"))[-1]
    return value


def _unique(name: str, taken: set) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


def _first_paragraph(body: str) -> str:
    """The card's first paragraph of text after its title (what the release is)."""
    for block in re.split(r"\n\s*\n", body):
        text = " ".join(block.split())
        if text and not text.startswith(("#", "|", "```", "<", "!", "---")):
            return text
    return ""


def _citation(body: str) -> str | None:
    found = re.search(r"```bibtex\n(.*?)\n```", body, flags=re.S)
    return found.group(1).strip() if found else None


def _cite_as(body: str, paper) -> str | None:
    """``citeAs``: the method's paper (the card's ``resplit.paper``) and the card's BibTeX (the source's; a
    recipe's holds the method's first, and then the paper is not repeated)."""
    bibtex, paper = _citation(body), str(paper or "").strip()
    title = re.search(r"\*(.+?)\*", paper)
    if paper and bibtex and title and _words(title.group(1)) in _words(bibtex):
        paper = ""
    return "\n\n".join(part for part in (paper, bibtex) if part) or None


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _properties(values: dict, prefix: str = "") -> list:
    """``sc:PropertyValue``s of a mapping (parameters), one per key; a value that is not a scalar as JSON."""
    out = []
    for key, value in values.items():
        if value is None:
            continue
        scalar = isinstance(value, (str, int, float, bool))
        out.append({"@type": "sc:PropertyValue", "name": f"{prefix}{key}",
                    "value": value if scalar else json.dumps(value, sort_keys=True, ensure_ascii=False)})
    return out


def _features(metadata: dict, config: str, folder: Path, files: dict):
    """The config's ``datasets`` features: its ``dataset_info`` entry, else its first data file's schema."""
    import datasets

    for entry in metadata.get("dataset_info") or []:
        if isinstance(entry, dict) and entry.get("config_name") == config and entry.get("features"):
            return datasets.Features._from_yaml_list(entry["features"])
    import pyarrow.parquet as pq

    return datasets.Features.from_arrow_schema(pq.read_schema(folder / next(iter(files.values()))))


class _Builder:
    """The document's parts, built config by config (ids unique across the document)."""

    def __init__(self, label: str | None):
        self.label, self.taken, self.enumerations = label, set(), {}

    def enumeration(self, column: str, names: tuple) -> str:
        """The ``sc:Enumeration`` record set of one ``ClassLabel``'s names (shared by the configs that have it)."""
        if names not in self.enumerations.get(column, {}):
            rid = _unique(f"{column}_classes", self.taken)
            self.enumerations.setdefault(column, {})[names] = {
                "@type": "cr:RecordSet", "@id": rid, "name": rid, "dataType": "sc:Enumeration",
                "description": f"The classes of `{column}` in class order: the value of `{column}` is the index.",
                "key": {"@id": f"{rid}/index"},
                "field": [{"@type": "cr:Field", "@id": f"{rid}/index", "name": "index", "dataType": "sc:Integer"},
                          {"@type": "cr:Field", "@id": f"{rid}/name", "name": "name", "dataType": "sc:Text"}],
                "data": [{f"{rid}/index": i, f"{rid}/name": n} for i, n in enumerate(names)]}
        return self.enumerations[column][names]["@id"]

    def field(self, fid: str, name: str, feature, fileset: str, column: str, path: tuple = ()) -> dict:
        import datasets

        depth = 0
        while isinstance(feature, (datasets.List, datasets.LargeList, datasets.Sequence)) or (
                isinstance(feature, list) and len(feature) == 1):
            feature = feature[0] if isinstance(feature, list) else feature.feature
            depth += 1
        source = {"fileSet": {"@id": fileset}, "extract": {"column": column}}
        if path:
            source["transform"] = {"jsonPath": ".".join(path)}
        out = {"@type": "cr:Field", "@id": fid, "name": name}
        if isinstance(feature, dict):  # a struct: one sub-field per key
            out["subField"] = [self.field(f"{fid}/{key}", key, sub, fileset, column, (*path, key))
                               for key, sub in feature.items()]
        else:
            if isinstance(feature, datasets.ClassLabel):
                # The class's index in the sc:Enumeration of its names. Not a `references` (a join): mlcroissant
                # 1.1 joins one reference per record set, the split's, and fails a split filter with a second one.
                out["dataType"] = ["sc:Integer", "cr:Label"] if (column == self.label and not path) else "sc:Integer"
                out["description"] = (f"A class index: its name is `name` of the record of "
                                      f"`{self.enumeration(name, tuple(feature.names))}` with this `index`.")
            else:
                out["dataType"] = _TYPES.get(getattr(feature, "dtype", None), "sc:Text")
            out["source"] = source
        if depth:
            out["isArray"], out["arrayShape"] = True, ",".join(["-1"] * depth)
        return out


def croissant(folder) -> dict:
    """The Croissant 1.1 JSON-LD document of the release ``folder`` (a complete or staged release)."""
    from split_builders.errors import InvalidReleaseError
    from split_builders.release.folder import data_files, read_card
    from split_builders.release.provenance import file_sha256

    folder = Path(folder)
    metadata, body = read_card(folder)
    record = metadata.get("resplit") if isinstance(metadata.get("resplit"), dict) else {}
    recorded = record.get("configs") if isinstance(record.get("configs"), dict) else {}
    files = data_files(metadata)
    fields = record.get("fields") if isinstance(record.get("fields"), dict) else {}
    build = _Builder(fields.get("label"))
    build.taken.update(files)
    splits_id = _unique("splits", build.taken)
    distribution, record_sets, used_splits = [], [], []
    for config, paths in files.items():
        entry = recorded.get(config) if isinstance(recorded.get(config), dict) else {}
        hashes = entry.get("sha256") if isinstance(entry.get("sha256"), dict) else {}
        for split, path in paths.items():
            if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts:
                raise InvalidReleaseError(f"{folder}: the card names {path!r} as a data file, which is not a path "
                                          "inside the release folder; restore README.md or rebuild the release")
            digest = hashes.get(split)
            if not isinstance(digest, str):
                digest = file_sha256(folder / path)
            distribution.append({"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
                                 "encodingFormat": PARQUET, "sha256": digest})
            used_splits += [split] if split not in used_splits else []
        fileset = _unique(f"parquet-files-for-config-{config}", build.taken)
        distribution.append({"@type": "cr:FileSet", "@id": fileset, "name": fileset,
                             "description": f"The data files of config `{config}`, one per split.",
                             "encodingFormat": PARQUET,  # each file's path, as a glob that matches only it
                             "includes": [re.sub(r"([*?\[])", r"[\1]", p) for p in paths.values()]})
        names = "|".join(re.escape(s) for s in paths)
        columns = [build.field(f"{config}/{name}", name, feature, fileset, name)
                   for name, feature in _features(metadata, config, folder, paths).items()]
        split_field = {"@type": "cr:Field", "@id": _unique(f"{config}/split", {c["@id"] for c in columns}),
                       "name": "split", "description": "The split of the row (the data file it is in).",
                       "dataType": "sc:Text",
                       "source": {"fileSet": {"@id": fileset}, "extract": {"fileProperty": "fullpath"},
                                  "transform": {"regex": rf"^(?:{re.escape(config)}/)?({names})(?:-.+\.parquet)?$"}},
                       "references": {"field": {"@id": f"{splits_id}/name"}}}
        rows = entry.get("rows") if isinstance(entry.get("rows"), dict) else {}
        sizes = ", ".join(f"{s} ({rows[s]} rows)" if isinstance(rows.get(s), int) else s for s in paths)
        generated = {"@type": "prov:Activity", "prov:label": f"{entry.get('method') or record.get('method')} config",
                     "additionalProperty": _properties(_public(entry.get("parameters") or {}))}
        record_set = {"@type": "cr:RecordSet", "@id": config, "name": config,
                      "description": f"Config `{config}`: {sizes}.", "field": [split_field, *columns],
                      "prov:wasGeneratedBy": generated}
        if "source_id" in {c["name"] for c in columns}:
            record_set["key"] = {"@id": f"{config}/source_id"}
        record_sets.append(record_set)
    split_names = [s for s in ("train", "validation", "test") if s in used_splits] + [
        s for s in used_splits if s not in SPLIT_TYPES]
    splits = {"@type": "cr:RecordSet", "@id": splits_id, "name": splits_id, "dataType": "cr:Split",
              "description": "The splits of every config and what each is for.", "key": {"@id": f"{splits_id}/name"},
              "field": [{"@type": "cr:Field", "@id": f"{splits_id}/name", "name": "name", "dataType": "sc:Text"},
                        {"@type": "cr:Field", "@id": f"{splits_id}/url", "name": "url", "dataType": "sc:URL"}],
              "data": [{f"{splits_id}/name": s, f"{splits_id}/url": SPLIT_TYPES.get(s, "cr:Split")}
                       for s in split_names]}
    enumerations = [e for by_names in build.enumerations.values() for e in by_names.values()]
    return _document(metadata, body, record, distribution, [splits, *enumerations, *record_sets])


def _document(metadata: dict, body: str, record: dict, distribution: list, record_sets: list) -> dict:
    """The dataset-level properties around ``distribution`` and ``record_sets``."""
    from split_builders.publishing.export import recorded_repo_id, recorded_revision

    source = _public(record.get("source") if isinstance(record.get("source"), dict) else {})
    method, version = record.get("method"), record.get("version")
    name = metadata.get("pretty_name") or f"{source.get('name') or 'a dataset'} re-split by resplit ({method})"
    summary = _first_paragraph(body)
    document = {"@context": CONTEXT, "@type": "sc:Dataset", "conformsTo": CONFORMS_TO, "name": name,
                "description": summary or name, "license": str(metadata.get("license") or "unknown")}
    repo_id, revision = recorded_repo_id(metadata), recorded_revision(metadata)
    if repo_id:
        document["url"] = HUB + repo_id
        document["creator"] = {"@type": "sc:Organization", "name": repo_id.split("/")[0]}
    if revision:
        document["version"] = revision.lstrip("v")
    if cite_as := _cite_as(body, record.get("paper")):
        document["citeAs"] = cite_as
    if metadata.get("tags"):
        document["keywords"] = list(metadata["tags"])
    derived = {"@type": "prov:Entity", "name": str(source.get("name") or source.get("location") or "the source")}
    if source.get("location"):
        derived["prov:atLocation"] = str(source["location"])
    if source.get("revision"):
        derived["version"] = str(source["revision"])
    if source.get("sha256"):
        derived["sha256"] = source["sha256"]  # the source file's bytes
    # content_sha256: of the rows as resplit read them (what `verify --rescore` compares)
    derived["additionalProperty"] = _properties({k: source.get(k) for k in ("content_sha256", "rows", "source_id")})
    parameters = [{"@type": "sc:PropertyValue", "name": k, "value": record[k]} for k in ("method", "seed", "paper")
                  if record.get(k) is not None]
    document["prov:wasDerivedFrom"] = derived
    document["prov:wasGeneratedBy"] = {
        "@type": "prov:Activity", "prov:label": f"resplit {method}",
        "prov:wasAssociatedWith": {"@type": "prov:SoftwareAgent", "name": "resplit", "version": str(version)},
        "additionalProperty": parameters + _properties(_public(record.get("parameters") or {}), "parameters.")}
    if used := _signal(record.get("signal")):
        document["prov:wasGeneratedBy"]["prov:used"] = used
    document["rai:dataLimitations"] = limitations(record)
    protocol = (f"The rows of {derived['name']} were re-split into train/validation/test configs by resplit {version} "
                f"with the `{method}` method" + (f" ({record['paper']})" if record.get("paper") else "")
                + (f", seed {record['seed']}" if record.get("seed") is not None else "") + "."
                + (f" {summary}" if summary else "")
                + " Each config's record set names its method and parameters (prov:wasGeneratedBy); `resplit verify` "
                  "re-derives every config from the released rows.")
    if isinstance(record.get("contamination"), dict):
        protocol += (f" This copy of {record['contamination'].get('cleaned')} has its contaminated evaluation rows "
                     "removed (see rai:dataLimitations).")
    document["rai:dataManipulationProtocol"] = protocol
    document["distribution"], document["recordSet"] = distribution, record_sets
    return _public(document)


SIGNAL_KEYS = ("kind", "model", "model_revision", "template", "dtype", "engine", "engine_version", "quantization",
               "smoothing", "scorer_version")


def _signal(signal) -> dict | None:
    """The signal the configs were split by, as a ``prov:Entity`` the generating activity used: what scored the rows
    (model and revision, prompt template, dtype and engine) and, for given scores, their file and its sha256, as the
    card's ``resplit.signal`` records them; None where it records no signal."""
    if not isinstance(signal, dict) or not signal:
        return None
    given = signal.get("given") if isinstance(signal.get("given"), dict) else {}
    values = {**{key: signal.get(key) for key in SIGNAL_KEYS},
              "scores_file": given.get("file"), "scores_sha256": given.get("sha256")}
    values = {k: v for k, v in _public(values).items() if isinstance(v, (str, int, float, bool))}
    entity = {"@type": "prov:Entity", "name": str(signal.get("kind") or "the signal")}
    if signal.get("model"):
        entity["prov:wasAttributedTo"] = {"@type": "prov:SoftwareAgent", "name": str(signal["model"]),
                                          **({"version": str(signal["model_revision"])}
                                             if signal.get("model_revision") else {})}
    entity["additionalProperty"] = _properties(values)
    return entity


def _counts(values: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def limitations(record: dict) -> list[str]:
    """``rai:dataLimitations``: what the leakage audit found in each config's evaluation splits (duplicates of
    train rows, shared fields, contamination tiers), and what a clean copy removed, from the YAML's records."""
    lines = []
    audit = record.get("audit") if isinstance(record.get("audit"), dict) else {}
    if audit.get("method"):
        lines.append(f"Leakage audit of every config's evaluation splits against its train split: {audit['method']}.")
    for config, entry in (record.get("configs") or {}).items():
        found = entry.get("audit") if isinstance(entry, dict) else None
        if not isinstance(found, dict):
            continue
        parts = []
        for split, numbers in found.items():
            if not isinstance(numbers, dict) or "rows" not in numbers:
                continue
            words = [f"{numbers['rows']} rows", f"{numbers.get('exact', 0)} exact and "
                                                f"{numbers.get('near_duplicate', 0)} near-duplicates of train rows"]
            if isinstance(numbers.get("shared"), dict) and numbers["shared"]:
                words.append("sharing with train " + _counts(numbers["shared"]))
            if isinstance(numbers.get("program"), int):
                words.append(f"{numbers['program']} with a train program")
            if isinstance(numbers.get("tiers"), dict):
                words.append("contamination tiers " + _counts(numbers["tiers"]))
            parts.append(f"{split}: " + ", ".join(words))
        if parts:
            lines.append(f"`{config}`: " + "; ".join(parts) + ".")
    cleaned = record.get("contamination") if isinstance(record.get("contamination"), dict) else None
    if cleaned:
        checked = ", ".join(f"{c.get('dataset')} ({c.get('split')})" for c in cleaned.get("checked") or []
                            if isinstance(c, dict))
        removed = "; ".join(f"`{c}` {_counts(s)}" for c, s in (cleaned.get("removed") or {}).items()
                            if isinstance(s, dict))
        lines.append(f"Evaluation rows with an exact or near-duplicate input in {checked or 'other datasets'} were "
                     f"removed (threshold {cleaned.get('threshold')}): {removed or 'none'}.")
    return lines or ["The card records no leakage audit of this release."]


# The key of the file's own fingerprint (:func:`~split_builders.release.provenance.sealed`): an edited file is the
# user's, never replaced. Outside Croissant's vocabulary, which readers (mlcroissant) leave alone.
FINGERPRINT = "resplit:fingerprint"


def text(folder) -> str:
    """``croissant.json``'s bytes as text: :func:`croissant`, indented, in a fixed order, sealed with its own
    fingerprint (:data:`FINGERPRINT`)."""
    from split_builders.release.provenance import UNSEALED, sealed

    document = {**croissant(folder), FINGERPRINT: UNSEALED}
    return sealed(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def write_croissant(folder) -> list[Path]:
    """Write ``folder/croissant.json`` (beside its place, then renamed: never half written); the paths written."""
    from split_builders.release.places import write_file

    content = text(folder)
    path = write_file(Path(folder) / FILE, lambda partial: Path(partial).write_text(content, encoding="utf-8"),
                      overwrite=True, flag=FILE)
    return [path]


def export_croissant(folder) -> Path:
    """``resplit export croissant FOLDER``: write the release's ``croissant.json`` again; one there that resplit
    did not write, or that was edited since (its fingerprint no longer matches), or a link or a folder, is refused
    in one line, nothing changed."""
    from split_builders.errors import OutputExistsError
    from split_builders.release.places import refuse_link
    from split_builders.release.provenance import EDITED

    path = Path(folder) / FILE
    refuse_link(path, FILE)
    ours = written_before(folder) if path.is_file() else {}  # read and hashed once
    if path.exists() and not ours:
        raise OutputExistsError(f"{str(path)!r} is not a {FILE} resplit wrote; move it elsewhere and export again "
                                "(nothing was changed)")
    if ours.get(FILE) == EDITED:
        raise OutputExistsError(f"{str(path)!r} was edited since resplit wrote it; move it elsewhere (or delete it) "
                                "and export again (nothing was changed)")
    return write_croissant(folder)[0]


def is_ours(document) -> bool:
    """Whether a ``croissant.json`` document is one resplit wrote (its generating agent is resplit)."""
    made = document.get("prov:wasGeneratedBy") if isinstance(document, dict) else None
    agent = made.get("prov:wasAssociatedWith") if isinstance(made, dict) else None
    return isinstance(agent, dict) and agent.get("name") == "resplit"


def written_before(folder) -> dict:
    """``{"croissant.json": digest}`` where the release ``folder`` holds a ``croissant.json`` resplit wrote, else
    ``{}`` (a file of the user's, which is never replaced). ``digest``
    (:func:`~split_builders.release.provenance.sealed_digest`): its sha256 where its fingerprint holds,
    :data:`~split_builders.release.provenance.EDITED` where it was edited since (the user's now), None for a file
    written before files were sealed (any content)."""
    from split_builders.release.provenance import sealed_digest

    document, _ = read_croissant(folder)
    return {FILE: sealed_digest(Path(folder) / FILE)} if is_ours(document) else {}


def read_croissant(folder) -> tuple[dict | None, str | None]:
    """``(document, problem)`` of ``folder/croissant.json``: the document, or None and why (missing, unreadable,
    not JSON)."""
    path = Path(folder) / FILE
    if not path.is_file():
        return None, f"no {FILE}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return None, f"{FILE} cannot be read as JSON ({str(error).splitlines()[0]})"
    return (document, None) if isinstance(document, dict) else (None, f"{FILE} is not a JSON-LD object")


def croissant_problems(document: dict, files: dict, sha256) -> list[tuple[str, str | None, str]]:
    """What ``croissant.json`` says that the release does not: ``(config, split, detail)`` for a data file it
    does not list, lists with another sha256 (``sha256(config, split)``: the file's) or a config without a record
    set; ``("(folder)", None, detail)`` for files it lists that the card does not."""
    listed = {d.get("contentUrl"): d.get("sha256") for d in document.get("distribution") or []
              if isinstance(d, dict) and d.get("@type") == "cr:FileObject"}
    sets = {r.get("@id") for r in document.get("recordSet") or [] if isinstance(r, dict)}
    problems, named = [], set()
    for config, paths in files.items():
        if config not in sets:
            problems.append((config, None, f"{FILE} has no record set of config {config!r}"))
        for split, path in paths.items():
            named.add(path)
            if path not in listed:
                problems.append((config, split, f"{FILE} does not list the data file {path}"))
                continue
            actual = sha256(config, split)
            if actual is not None and listed[path] != actual:
                problems.append((config, split, f"{FILE} gives {path} sha256 {str(listed[path])[:12]}..., not "
                                                f"{actual[:12]}... (the data file's, as the card records it)"))
    stale = sorted(str(p) for p in listed if p not in named)
    if stale:
        problems.append(("(folder)", None, f"{FILE}, which lists {len(stale)} file(s) that the card does not name: "
                                           + ", ".join(stale[:5])))
    return problems


def _record_sets(document: dict | None) -> dict:
    """``{record set: (field names, what generated it)}`` of a document (``{}`` for None)."""
    return {r.get("@id"): ([f.get("name") for f in r.get("field") or [] if isinstance(f, dict)],
                           r.get("prov:wasGeneratedBy"))
            for r in (document or {}).get("recordSet") or [] if isinstance(r, dict)}


def croissant_changes(before: dict | None, after: dict | None) -> list[str]:
    """Short lines saying how two releases' ``croissant.json`` differ (none where they do not): record sets and
    fields added or removed, and what changed in what the release (or a record set) was derived from or generated
    by."""
    if (before is None) != (after is None):
        return [f"{FILE} {'added' if before is None else 'removed'}"]
    a, b = _record_sets(before), _record_sets(after)
    lines = [f"record sets {what}: {', '.join(map(str, names))}" for what, names in (
        ("added", [s for s in b if s not in a]), ("removed", [s for s in a if s not in b])) if names]
    for name in (s for s in b if s in a):
        (fields_a, made_a), (fields_b, made_b) = a[name], b[name]
        parts = [f"fields {what} {', '.join(map(str, found))}" for what, found in (
            ("added", [f for f in fields_b if f not in fields_a]),
            ("removed", [f for f in fields_a if f not in fields_b])) if found]
        parts += [f"generated by: {_changed(made_a, made_b)}"] if made_a != made_b else []
        lines += [f"record set {name}: " + "; ".join(parts)] if parts else []
    for key, what in (("prov:wasDerivedFrom", "derived from"), ("prov:wasGeneratedBy", "generated by")):
        if (before or {}).get(key) != (after or {}).get(key):
            lines.append(f"{what}: {_changed((before or {}).get(key), (after or {}).get(key))}")
    return lines


def _changed(before, after) -> str:
    """The values that differ between two PROV objects, as ``name: a -> b`` (their properties by name)."""
    def flat(value) -> dict:
        if not isinstance(value, dict):
            return {"": value}
        out = {k: v for k, v in value.items() if k != "additionalProperty"}
        out.update({p.get("name"): p.get("value") for p in value.get("additionalProperty") or []
                    if isinstance(p, dict)})
        return out

    x, y = flat(before), flat(after)
    keys = [k for k in dict.fromkeys([*x, *y]) if x.get(k) != y.get(k)]
    shown = [f"{k} {json.dumps(x.get(k))[:40]} -> {json.dumps(y.get(k))[:40]}" for k in keys[:4]]
    return ", ".join(shown) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
