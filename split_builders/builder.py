"""``build(method, options)``: the one path every split family goes through.

::

    options --validate, output location-->  load (loading_scripts)  --check sizes-->  signal
            --> configs (pure splitters) --> rows --> release writer (provenance + card) --> folder

Everything cheap is checked before anything expensive: the options when they are constructed, the
output location (exists without ``overwrite``, a parent that is a file or not writable) before
the source is read, and the sizes against the rows before the signal is computed. Methods never
write files: the release writer does, once, on the main process.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.contracts import Context, Loaded, Signal, SplitMethod
from split_builders.options import CommonOptions
from split_builders.registry import get_method
from split_builders.distributed import sigterm_as_interrupt
from split_builders.errors import InvalidParameterError
from split_builders.options import check_languages, check_license


@dataclass
class BuildResult:
    """What a build produced. ``out`` is None on processes other than the main one."""

    out: Path | None
    method: SplitMethod
    options: CommonOptions
    loaded: Loaded
    signal: Signal
    configs: list
    sizes: dict = field(default_factory=dict)

    @property
    def config_names(self) -> list[str]:
        return [c.name for c in self.configs]

    @property
    def rows(self) -> int:
        return self.loaded.info.rows


def check_output(out, *, overwrite: bool, inputs=()) -> Path:
    """Refuse an output location that cannot be written, or whose replacement would lose what resplit
    did not make, before any work: the one output policy every writer follows
    (:func:`~split_builders.release.places.check_output_place`, a release folder named by ``--out``).

    ``--out`` must name a folder other than ``/``, the home folder or the working folder, and not a
    dangling symbolic link. An existing folder needs ``overwrite``, and is replaced only when it is empty or
    a resplit release holding nothing but what resplit wrote (the files its card names and its harness
    tasks: :func:`~split_builders.release.places.check_replaceable`, which names the others); an existing
    file is never replaced. ``--out`` may not be, or contain, any of ``inputs`` (the source, a scores file,
    the cache). The nearest existing ancestor must be a writable folder.
    """
    from split_builders.publishing.readers import written_files
    from split_builders.release.places import check_output_place

    return check_output_place(out, "--out", kind="folder", overwrite=overwrite, harness_files=written_files,
                              inputs=inputs, reader="this build")


def is_release(folder: Path) -> bool:
    """Whether ``folder`` is a release resplit wrote: its README.md front matter has ``resplit:``."""
    from split_builders.release.folder import front_matter

    readme = Path(folder) / "README.md"
    try:
        metadata, _ = front_matter(readme) if readme.is_file() else (None, "")
    except Exception:  # unreadable YAML or text: not ours to replace
        return False
    return isinstance(metadata, dict) and isinstance(metadata.get("resplit"), dict)


def input_paths(options) -> list[Path]:
    """Every existing file or folder the options name (the source, a scores file, caches), and the
    resplit cache: what ``--out`` must not hold."""
    import dataclasses

    from split_builders.cache import cache_root

    from loading_scripts.files import path_problem

    paths = [cache_root()]
    for spec in dataclasses.fields(options):
        value = getattr(options, spec.name)
        if spec.name != "out" and isinstance(value, (str, Path)) and str(value).strip():
            special = path_problem(value)  # a FIFO, a symbolic link loop: named as what it is, before any work
            if special is not None:
                raise InvalidParameterError(f"--{spec.name.replace('_', '-')} {str(value)!r} is {special}; give a "
                                            "regular file or folder")
            try:
                if Path(value).expanduser().exists():
                    paths.append(Path(value))
            except OSError:  # a name too long to be a path, say
                continue
    return paths


def build(method, options: CommonOptions | None = None, /, *, progress: bool = True, verbose: bool = False,
          log=print, license: str | None = None, citation: str | None = None, pretty_name: str | None = None,
          language=None, repo_id: str | None = None, views=(), **values) -> BuildResult:
    """Build a release folder with a registered split method.

    Parameters
    ----------
    method : str or SplitMethod
        A registry name (``resplit list``) or a method instance.
    options : CommonOptions, optional
        The method's options; or give them as keyword arguments (``source=..., out=..., seed=...``).
    progress : bool
        Progress bars while computing the signal.
    verbose : bool
        Also the libraries' own reports (Trainer logs, weight-loading reports).
    license, citation : str, optional
        The release's license and the BibTeX its card shows, where a recipe states them (else
        ``--license`` or the source's own; a license nobody states is ``unknown``, which push refuses).
    pretty_name, language, repo_id : optional
        A recipe's title, language codes and Hub repository (else the method's title, ``--language``
        or the source's, and ``--org``/<out folder name>): the card's ``pretty_name``, ``language`` and
        load snippet.
    views : str or iterable of str
        Installed third-party evidence views to run in this build (``--view NAME``; off unless named here or in
        ``$RESPLIT_VIEWS``): each is a section of the card and a record in the provenance, as a built-in view's.

    Returns
    -------
    BuildResult
    """
    method = get_method(method)
    if options is None:
        source = values.get("source")
        if source is not None and not isinstance(source, (str, os.PathLike)):
            # a DataFrame / Dataset / list of dicts: a Parquet file named by its content, in the cache
            values["source"] = str(table_source(method, source, values))
        options = method.options(**values)
    elif values:
        raise InvalidParameterError("give the options either as an Options object or as keyword arguments")
    if not isinstance(options, method.Options):
        raise InvalidParameterError(f"{method.name} takes {method.Options.__name__}, got {type(options).__name__}")
    context = Context(progress=progress, verbose=verbose, log=log)
    # A recipe's license and languages are checked as --license and --language are, before the card states them.
    license = check_license(license, "the recipe's license") if license is not None else None
    language = list(check_languages(language, "the recipe's language")) if language is not None else None
    card_overrides = {"license": license, "citation": citation, "pretty_name": pretty_name, "language": language,
                      "repo_id": repo_id}

    inputs = input_paths(options)
    out = check_output(options.out, overwrite=options.overwrite, inputs=inputs)
    method.check(options)
    from split_builders.registry import REGISTRY  # read when called: the registry a test puts in its place

    with REGISTRY.enabling("views", views):  # on for this build only
        if not context.is_main_process:  # only the main process writes, so only it locks
            return _build(method, options, context, out, card_overrides)
        return _locked_build(method, options, context, out, card_overrides, inputs)


def _locked_build(method, options, context, out, card_overrides, inputs) -> BuildResult:
    """:func:`_build` under the output's lock (the main process's build)."""
    from split_builders.publishing.readers import written_files
    from split_builders.release.places import OutputLock

    with sigterm_as_interrupt(), OutputLock(out, harness_files=written_files) as lock:
        for note in lock.notes:  # what an interrupted build left here, and what became of it
            context.log(note)
        # Again under the lock (which first recovered an interrupted replacement): a build that finished
        # while this one started has created the folder.
        check_output(out, overwrite=options.overwrite, inputs=inputs)
        return _build(method, options, context, out, card_overrides)




# The options that name a table's fields: given any, a table in SNLI's Hub layout is read with them, as it is.
FIELD_OPTIONS = ("prompt_field", "query_field", "label_field", "target_field", "text_fields")


def table_source(method, data, values=None) -> Path:
    """A table held in memory (a pandas ``DataFrame``, a ``datasets.Dataset``, a list of dicts, ...:
    :data:`loading_scripts.frames.ACCEPTED`) as the ``--source`` file ``method`` reads: one Parquet file named by
    its content in ``$RESPLIT_CACHE/tables`` (:func:`loading_scripts.frames.table_file`; SNLI in the Hub's layout
    in the official one, unless ``values`` name fields of their own). A method that reads no table
    (``table_columns`` None: a CURRICULUM folder, a CheckList suite), a table without the columns the method
    reads, and a cache folder that cannot be written are refused in one line naming the user's object."""
    from loading_scripts.frames import describe, is_table, source_table, write_table_file
    from split_builders.cache import cache_root
    from split_builders.errors import cache_unwritable

    if not is_table(data):
        source_table(data)  # refused in one line: what a source may be, and what this is
    what = describe(data)
    if method.table_columns is None:
        raise InvalidParameterError(f"{method.name} does not read a table: its source is {method.source_kind}; give "
                                    f"that path instead of {what}")
    table = source_table(data, layout=not any((values or {}).get(name) for name in FIELD_OPTIONS))
    missing = [column for column in method.table_columns if column not in table.column_names]
    if missing:
        raise InvalidParameterError(
            f"{method.name} reads a table with columns {' and '.join(repr(c) for c in method.table_columns)}, and "
            f"{what} has no {' and no '.join(repr(c) for c in missing)} (it has "
            f"{', '.join(repr(c) for c in table.column_names)}): rename its columns, or give {method.source_kind}")
    folder = cache_root() / "tables"
    try:
        return write_table_file(table, folder)
    except OSError as error:
        raise cache_unwritable(folder, f"{what} as a Parquet file", error) from None


# What every release holds besides its data files (README.md with the card, the figures), in bytes.
RELEASE_FLOOR_BYTES = 1 << 20


def check_free_space(out, options) -> int:
    """Refuse, before the expensive step, a build whose ``--out`` has less free space than the release needs
    at least: the card and its figures (:data:`RELEASE_FLOOR_BYTES`) plus, when ``--source`` is one local file
    read whole (no ``--limit``), half its size (every config holds the source's rows again, in Parquet; a
    source's columns that no config releases make up the other half at most). A lower bound: a build it lets
    through may still fill the disk, which the writer then says in one line. Returns the estimate."""
    needed = RELEASE_FLOOR_BYTES
    source = getattr(options, "source", None)
    try:
        if source and not options.limit and Path(source).expanduser().is_file():
            needed += Path(source).expanduser().stat().st_size // 2
    except (OSError, ValueError):  # a name that is not a path (a Hub id): the floor only
        pass
    where = Path(out).expanduser().absolute().parent
    while not where.exists():
        where = where.parent
    free = shutil.disk_usage(where).free
    if free < needed:
        from split_builders.errors import DiskFullError

        raise DiskFullError(f"not enough free space for the release --out {str(out)!r}: {free / 2**20:.1f} MB free on "
                            f"the device of {str(where)!r}, at least {needed / 2**20:.1f} MB needed (checked before "
                            "the signal is computed: nothing was written); free some space there or choose another "
                            "--out")
    return needed


def _build(method, options, context, out, overrides) -> BuildResult:
    from split_builders.splitters.groups import size_gaps

    loaded, notes = _load(method, options, context)
    if options.dedupe:
        loaded = _drop_duplicates(method, loaded)
    method.check_loaded(loaded, options)
    if options.group_field is not None:
        loaded.groups = method.groups(loaded, options.group_field)
    if context.is_main_process:
        check_free_space(out, options)
    signal = method.signal(loaded, options, context)
    configs = method.configs(loaded, signal, options)
    size_notes = size_gaps(configs)  # whole groups (or the method's own rule) made sizes differ from the requested
    for line in size_notes if context.is_main_process else ():
        context.log(f"note: {sizes_said(options.group_field)}: {line}")
    sizes = {c.name: {s: int(len(c.indices[s])) for s in c.splits} for c in configs}
    if not context.is_main_process:
        _wait_for_everyone()
        return BuildResult(None, method, options, loaded, signal, configs, sizes)

    from split_builders.evidence.build import build_evidence
    from split_builders.release import card as cards
    from split_builders.release.provenance import provenance
    from split_builders.release.writer import write_release
    from split_builders.publishing.readers import write_readers, written_files

    rows = method.rows(loaded, signal, configs)
    spec = method.card(loaded, signal, configs, options)
    spec.duplicates = duplicate_report(method.row_keys(loaded), configs)
    if notes:
        spec.how_built = [*spec.how_built, "Read from the source: " + "; ".join(notes) + "."]
    if size_notes:
        spec.how_built = [*spec.how_built, f"**{sizes_said(options.group_field, card=True)}:** "
                          + "; ".join(size_notes) + "."]
    if getattr(options, "row_order", None) in cards.ROW_ORDER_TEXT:  # which rule drew the configs
        spec.how_built = [*spec.how_built, cards.ROW_ORDER_TEXT[options.row_order]]
    if overrides.get("citation"):
        spec.citation = overrides["citation"]
    loaded.info.license = overrides.get("license") or options.license or loaded.info.license or cards.UNKNOWN_LICENSE
    language = overrides.get("language") or options.language or loaded.info.language
    pretty_name = overrides.get("pretty_name") or method.pretty_name(loaded)
    spec.title = overrides.get("pretty_name") or spec.title
    spec.repo_id = overrides.get("repo_id") or (f"{options.org}/{Path(out).name}" if options.org else None)
    record = provenance(method, options, loaded.info, signal)
    fields = declared_fields(method, loaded, signal, options)
    if fields is not None:
        record["fields"] = fields.record()
    spec.labels = cards.label_view(fields, (rows if rows is not None else configs[0].rows).features)
    hub = cards.hub_metadata(method=method, info=loaded.info, fields=fields, sizes=sizes,
                             license=loaded.info.license, language=[language] if isinstance(language, str) else language,
                             pretty_name=pretty_name)
    if spec.repo_id:
        record["repo_id"] = spec.repo_id  # harness tasks name it as their dataset_path
    # The evidence of what the splits test, each in the card and the YAML (resplit.<name>, resplit.configs.<c>.<name>).
    evidence = build_evidence(rows, configs, record=record, options=options, progress=context.progress)
    spec.evidence = evidence.sections()
    plugins = _plugin_views(evidence.reports)
    if plugins:  # a plug-in's view ran: its distribution too is what built the release
        record["built_by"]["views"] = plugins
    written_out = write_release(
        out, rows, configs, provenance=record, evidence=evidence.records(),
        render_card=lambda staging, written: cards.render(spec, method=method, info=loaded.info,
                                                          configs=configs, written=written, staging=staging),
        license=loaded.info.license, pretty_name=pretty_name, hub=hub, overwrite=options.overwrite,
        progress=context.progress, extras=lambda staging: write_readers(staging, repo_id=record.get("repo_id")),
        harness_files=written_files)
    _wait_for_everyone()
    return BuildResult(written_out, method, options, loaded, signal, configs, sizes)


def sizes_said(group_field: str | None, *, card: bool = False) -> str:
    """How the terminal's notes (and, ``card``, the card's line) on realised sizes begin: with ``--group-field``,
    what its whole groups did; without, the sizes the method reports as realised (never "whole `None` groups")."""
    if group_field is None:
        return "Realised sizes" if card else "realised sizes"
    return f"Sizes with whole `{group_field}` groups" if card else f"whole `{group_field}` groups"


def rebuild(method, options) -> Path:
    """Build again from recorded options, quietly: what ``verify --rescore`` compares a release with."""
    return build(method, options, progress=False).out


def declared_fields(method, loaded, signal, options):
    """The method's :class:`~split_builders.api.Fields`, with the ``--group-field`` column as the group
    where the configs keep groups whole (None where the method declares none)."""
    import dataclasses

    fields = method.fields(loaded, signal, options)
    if fields is None:
        return None
    if fields.group is None and loaded.groups is not None and options.group_field:
        fields = dataclasses.replace(fields, group=options.group_field)
    # What the method class declares, where its fields() did not say otherwise.
    return dataclasses.replace(fields, signals=fields.signals or dict(method.signal_columns),
                               baseline=fields.baseline or method.baseline_config,
                               harness=fields.harness or (method.harness_task if fields.task != "text" else None))


def _load(method, options, context) -> tuple[Loaded, list[str]]:
    """``method.load`` and the notes its readers left (:class:`loading_scripts.errors.SourceNote`:
    labels of mixed types read as text, ...), which the card and the terminal show. ``--strict``
    refuses a source with such a note or with rows dropped for a missing label, instead."""
    import warnings

    from loading_scripts.errors import SourceNote
    from loading_scripts.source import MISSING_LABEL

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SourceNote)
        loaded = method.load(options)
    notes = []
    for warning in caught:
        if issubclass(warning.category, SourceNote):
            notes.append(str(warning.message))
        else:  # not ours: as it would have been shown
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    notes = list(dict.fromkeys(notes))
    missing = int(loaded.info.filters.get(MISSING_LABEL, 0))
    if options.strict and (missing or notes):
        problems = [f"{missing} row(s) have no label"] if missing else []
        raise InvalidParameterError(f"--strict refuses {loaded.info.name}: " + "; ".join(problems + notes)
                                    + "; fix the source, or drop --strict to build with what the card then states")
    for note in notes:
        context.log(f"note: {note}")
    return loaded, notes


def _comparable(keys) -> np.ndarray:
    """Row keys as one array ``np.unique`` can sort: integer keys (``loading_scripts.tables.row_keys``)
    as they are, any other key by its text."""
    keys = np.asarray(keys)
    return keys if keys.dtype.kind in "iu" else np.asarray(keys, dtype=object).astype(str)


def first_occurrences(keys) -> np.ndarray:
    """Sorted positions of the first row of every distinct key."""
    _, first = np.unique(_comparable(keys), return_index=True)
    return np.sort(first).astype(np.int64)


def _drop_duplicates(method, loaded):
    """``--dedupe``: keep the first row (the lowest ``source_id``) of every group of exact duplicates."""
    keys = method.row_keys(loaded)
    if keys is None:
        raise InvalidParameterError(f"{method.name} defines no duplicate rows: --dedupe does not apply")
    keep = first_occurrences(keys)
    if keep.size == len(keys):
        return loaded
    dropped = len(keys) - keep.size
    loaded = method.select_rows(loaded, keep)
    loaded.info.filters = {**loaded.info.filters, "exact duplicate (--dedupe)": dropped}
    loaded.info.rows = int(keep.size)
    return loaded


def duplicate_report(keys, configs) -> dict | None:
    """How many rows repeat an earlier row, and per config how many evaluation rows (validation
    and test) have an exact duplicate in train: a model can score those by memory."""
    if keys is None:
        return None
    codes = np.unique(_comparable(keys), return_inverse=True)[1].reshape(-1)
    per_config = {}
    for config in configs:
        if config.rows is not None or "train" not in config.indices:
            continue
        at = lambda split: codes[np.asarray(config.indices.get(split, []), dtype=np.int64) % codes.size]
        evaluation = np.concatenate([at("validation"), at("test")])
        per_config[config.name] = int(np.isin(evaluation, at("train")).sum())
    return {"duplicate_rows": int(codes.size - np.unique(codes).size), "eval_rows_in_train": per_config}


def _wait_for_everyone() -> None:
    """Hold the processes of a distributed run together (a no-op in a single process)."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # The same process group the signal used (gloo on CPUs): PartialState() alone sets up none there.
        from split_builders.distributed import process_state

        process_state().wait_for_everyone()


def _plugin_views(names) -> dict:
    """``{view: {"distribution", "version"}}`` of the views among ``names`` that are not built in (a plug-in's):
    ``built_by.views`` of a build that ran them."""
    from split_builders.registry import REGISTRY
    from split_builders.release.provenance import distribution_of

    known = REGISTRY.names("views")  # the views that ran are loaded already: only those are read
    return {name: distribution_of(REGISTRY.get("views", name)) for name in names
            if name in known and REGISTRY.origin("views", name) != "built-in"}
