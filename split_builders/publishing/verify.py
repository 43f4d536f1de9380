"""``resplit verify FOLDER | HUB_ID[@REVISION]``: check that a release is what its card says.

Three levels, each reported per config and split as identical or differs (with the rows that differ):

1. integrity: every data file's sha256 equals the card's, every config loads with ``datasets``, no
   ``source_id`` is in two splits of one config, the row counts equal the card's, and the folder holds
   no file the card does not name (``--allow-extra`` accepts them), and ``croissant.json`` lists every data file with
   its sha256 and has a record set per config (a release built before it existed: a note); and every other file
   resplit wrote (:mod:`~split_builders.publishing.verify_files`): each file the card names (figures) and each
   reader's file its sections declare is there, the tasks are as their export wrote them and read this release,
   ``eval.yaml`` and ``croissant.json`` are the bytes resplit writes for it;
2. rebuild from the release alone: each method re-derives its configs from the per-row signal the
   released rows carry, the parameters and the seed the card records (``SplitMethod.rederive``);
   no source, no model, no GPU;
3. ``--rescore``: when the source (and model) are reachable, the whole release is rebuilt from the
   recorded options into a temporary folder: the signal is recomputed and compared (largest
   difference) and so are the index sets.

Everything checked must be identical for the exit code to be 0.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.registry import get_method
from split_builders.splits import SPLITS
from split_builders.errors import InvalidParameterError, InvalidReleaseError
from split_builders.release.folder import Released, resolve_target
from split_builders.release.provenance import built_by_said
from split_builders.splits import membership_sha256, row_ids

@dataclass
class Finding:
    """One check of one config (and split): ``status`` is identical, differs or not checked."""

    level: int
    config: str
    split: str | None
    status: str
    detail: str = ""

    def line(self) -> str:
        where = self.config + (f"/{self.split}" if self.split else "")
        return f"level {self.level}  {where:<40} {self.status}" + (f": {self.detail}" if self.detail else "")


@dataclass
class Report:
    target: str
    findings: list = field(default_factory=list)
    built_by: str | None = None  # "DIST VERSION" of the code that built it (release.provenance.built_by_said)

    @property
    def ok(self) -> bool:
        return all(f.status != "differs" for f in self.findings)

    @property
    def unchecked(self) -> list:
        """The configs level 2 (what every release can be checked by) did not check: one its method does not
        re-derive, say. Level 1's notes (a file an older release lacks) and level 3's (nothing to recompute: given
        scores) are not among them."""
        return [f for f in self.findings if f.status == "not checked" and f.level == 2]

    def add(self, level, config, split, same: bool, detail: str = "") -> None:
        self.findings.append(Finding(level, config, split, "identical" if same else "differs", detail))

    def skip(self, level, config, detail: str) -> None:
        self.findings.append(Finding(level, config, None, "not checked", detail))


def _ids_detail(expected: np.ndarray, actual: np.ndarray) -> str:
    missing = np.setdiff1d(expected, actual)
    extra = np.setdiff1d(actual, expected)
    show = lambda ids: ", ".join(str(i) for i in ids[:10]) + (" ..." if ids.size > 10 else "")
    parts = []
    if missing.size:
        parts.append(f"{missing.size} row(s) missing (source_id {show(missing)})")
    if extra.size:
        parts.append(f"{extra.size} row(s) that should not be there (source_id {show(extra)})")
    return "; ".join(parts)


def check_integrity(released: Released, report: Report, *, load: bool = True, allow_extra: bool = False) -> None:
    """Level 1: hashes, counts, no row in two splits, (``load``) every config loads, and no file that the
    card does not name (a data file, figure or note left in the folder: ``push`` would publish it),
    unless ``allow_extra``."""
    from split_builders.release.folder import describe_extra

    extra = released.extra_files()
    if extra and allow_extra:
        report.skip(1, "(folder)", f"{describe_extra(extra)} (allowed: --allow-extra)")
    elif extra:
        report.add(1, "(folder)", None, False, f"{describe_extra(extra)}; remove them, or pass --allow-extra to "
                                               "accept them")
    recorded = released.record.get("configs") or {}
    plan = _load_plan(released) if load else None
    with tempfile.TemporaryDirectory(prefix="resplit-verify-") as cache:
        for config, files in released.files.items():
            card = recorded.get(config) or {}
            seen: dict = {}
            for split, relative in files.items():
                problem = released.file_problem(config, split)  # missing, not a file, empty
                if problem and "is missing" in problem:
                    report.add(1, config, split, False, f"{relative}: the card lists data files that do not exist")
                    continue
                if problem:
                    report.add(1, config, split, False, f"{relative} does not load: {_short(problem, relative)}")
                    continue
                digest = released.sha256(config, split)  # streamed, once: the read below does not hash again
                expected = (card.get("sha256") or {}).get(split)
                problems = []
                if digest != expected:
                    problems.append(f"sha256 {digest[:12]}... but the card says {str(expected)[:12]}..., the file was "
                                    "changed after the build")
                try:
                    ids = row_ids(released.table(config, split, check=False))  # the finding says what differs
                except (InvalidReleaseError, InvalidParameterError) as error:  # damaged, or rows without source_id
                    problems.append(f"{relative} does not load: {_short(_reason(error), relative)}")
                    report.add(1, config, split, False, "; ".join(problems))
                    continue
                if (card.get("rows") or {}).get(split) != ids.size:
                    problems.append(f"{ids.size} rows but the card says {(card.get('rows') or {}).get(split)}")
                both = [int(i) for i in ids if int(i) in seen]
                if both:
                    problems.append(f"source_id {both[0]} is in both {seen[both[0]]!r} and {split!r}"
                                    + (f" ({len(both)} rows)" if len(both) > 1 else ""))
                seen.update((int(i), split) for i in ids)
                report.add(1, config, split, not problems, "; ".join(problems))
            if load:
                _check_loads(released.folder, config, cache, report, plan)
    check_croissant(released, report)
    check_task_files(released, report)
    check_generated(released, report)


def check_generated(released: Released, report: Report) -> None:
    """Every other file the release carries (:mod:`split_builders.publishing.verify_files`): each file the card
    names is there, each reader's file its sections declare is there, every task reads this release, and
    ``eval.yaml`` and ``croissant.json`` are what resplit writes for it where no fingerprint of them is stored."""
    from split_builders.publishing import verify_files

    verify_files.check_named_files(released, report)
    verify_files.check_declared(released, report)
    checked = verify_files.check_lm_eval_targets(released, report) + verify_files.check_inspect_targets(released,
                                                                                                       report)
    if checked and not any(f.status == "differs" and "reads another release" in f.detail for f in report.findings):
        report.add(1, "(targets)", None, True, f"{checked} task(s) read this release")
    verify_files.check_eval_yaml(released, report)


def check_task_files(released: Released, report: Report) -> None:
    """The files the readers' exports wrote (``lm_eval/``, ``inspect_tasks.py``, and by their own fingerprints
    ``eval.yaml``, ``croissant.json`` and the harness group file) against the sha256 recorded: a file changed since (a task edited by hand) differs, since ``push`` would publish it as
    the release's own task; a file listed and missing differs too."""
    from split_builders.publishing.croissant import FILE as CROISSANT
    from split_builders.publishing.inspect_export import EVAL_FILE, TASKS_FILE
    from split_builders.release.provenance import file_sha256
    from split_builders.publishing.readers import written_files

    folder = released.folder
    checked = {name: digest for name, digest in written_files(folder).items() if digest is not None}
    if not checked:
        return
    problems = 0
    for name, digest in sorted(checked.items()):
        path = folder / name
        export = {TASKS_FILE: "inspect", EVAL_FILE: "inspect", CROISSANT: "croissant"}.get(name, "lm-eval")
        again = f"`resplit export {export} {folder}`"
        if not path.is_file():
            report.add(1, name, None, False, f"listed by the export but missing; {again} writes it again")
        elif file_sha256(path) != digest:
            report.add(1, name, None, False, "changed since resplit wrote it (a task edited by hand would be "
                       f"published as the release's own); keep your task under another name and run {again}")
        else:
            continue
        problems += 1
    if not problems:
        report.add(1, "(tasks)", None, True, f"{len(checked)} task file(s) as resplit wrote them")


def check_croissant(released: Released, report: Report) -> None:
    """``croissant.json`` against the card and its files: every data file listed with its sha256 (the card's, which
    level 1 checks against the file), every config a record set, nothing else listed. A release without one
    (built before resplit wrote it) is a note, not a difference."""
    from split_builders.publishing.croissant import FILE, croissant_problems, read_croissant

    from split_builders.publishing.verify_files import declared_files, regenerated_problem

    document, problem = read_croissant(released.folder)
    if document is None and not (released.folder / FILE).exists():
        if FILE in declared_files(released):
            return  # the card's sections say the export wrote one: check_generated says it is missing
        report.skip(1, FILE, f"the release has no {FILE} (built before resplit wrote one); `resplit export croissant "
                             f"{released.folder}` writes it")
        return
    if document is None:
        report.add(1, FILE, None, False, f"{problem}; `resplit export croissant {released.folder}` writes it again")
        return

    def sha256(config, split):
        return released.recorded_sha256(config, split) or (
            None if released.file_problem(config, split) else released.sha256(config, split))

    problems = croissant_problems(document, released.files, sha256)
    for config, split, detail in problems:
        report.add(1, config, split or FILE, False, f"{detail}; `resplit export croissant {released.folder}` writes "
                                                    "it again")
    if not problems:  # its listing is right: the rest of it too (the bytes resplit writes from the card)
        changed = regenerated_problem(released, FILE)
        report.add(1, FILE, None, changed is None, changed or "")


def _short(problem: str, relative: str) -> str:
    """A reader's problem with a data file, without the file's name (the finding names it)."""
    head = f"the data file {relative} of "
    if problem.startswith(head):
        rest = problem[len(head):].split(" ", 1)
        return ("it " + rest[1]) if len(rest) == 2 and rest[1].startswith("is ") else problem
    return problem


def _reason(error: Exception) -> str:
    """What the reader says is wrong with a data file, without the folder and the advice around it."""
    return getattr(error, "problem", None) or (str(error).splitlines()[0] if str(error) else type(error).__name__)


def _sizes_detail(error: Exception) -> str:
    """datasets' "split sizes do not match" error (a list of ``SplitInfo`` reprs) in words: per split, the rows
    the card's ``dataset_info`` records and the rows its data file holds."""
    import re

    pairs = re.findall(r"'expected': SplitInfo\(name='([^']*)'.*?num_examples=(\d+).*?'recorded': SplitInfo\("
                       r".*?num_examples=(\d+)", str(error))
    if not pairs:
        return str(error).splitlines()[0]
    return "; ".join(f"split {name!r} holds {held} rows but the card's dataset_info records {recorded} "
                     f"(num_examples={recorded}, loaded num_examples={held})" for name, recorded, held in pairs) + (
        ": the data files or the card changed after the build; restore them or rebuild the release")


def _load_plan(released: Released) -> dict | None:
    """What :func:`_check_loads` needs from the README, read once: the first config (loaded through the
    README), and per config its ``configs:`` entry and its ``dataset_info`` (``datasets``'
    ``DatasetInfosDict``). None when ``datasets`` cannot read the ``dataset_info`` entries (then every
    config is loaded through the README, which reports the problem)."""
    from datasets.info import DatasetInfosDict

    try:
        infos = DatasetInfosDict.from_dataset_card_data(released.metadata)
    except Exception:  # noqa: BLE001  (malformed dataset_info: load_dataset(folder, config) says what)
        return None
    entries = {entry.get("config_name"): entry for entry in released.metadata.get("configs") or []
               if isinstance(entry, dict)}
    return {"first": next(iter(released.files), None), "entries": entries, "infos": infos}


def _check_loads(folder: Path, config: str, cache: str, report: Report, plan: dict | None = None) -> None:
    """``config`` loads with ``datasets``; else one finding: the config and the first line of the error.

    ``datasets.load_dataset(folder, config)`` re-reads the whole README on every call (the YAML of
    every config with pure-Python PyYAML, then a hash of every config: about 80% and 15% of a call), so
    loading each config that way takes time quadratic in the configs (a CURRICULUM release with its
    inoculation configs: minutes). So only the first config of ``plan`` (:func:`_load_plan`) is loaded
    that way (the README path a user takes); every other config is loaded by ``datasets`` as that
    README tells it to: the data files of its ``configs:`` entry resolved against the folder
    (``DataFilesDict.from_patterns``), read by the ``parquet`` builder with the features of its
    ``dataset_info`` entry, and the split sizes that entry records checked (``verify_splits``), which are
    the checks ``load_dataset(folder, config)`` makes. Without a plan, or for a config whose files are
    not all parquet or are given by ``data_dir``, the config is loaded through the README."""
    import datasets
    from datasets.data_files import DataFilesDict, sanitize_patterns
    from datasets.utils.info_utils import verify_splits

    from loading_scripts.tables import quiet_datasets

    entry = (plan or {}).get("entries", {}).get(config) or {}
    direct = plan is not None and config != plan["first"] and entry.get("data_files") and not entry.get("data_dir")
    try:
        with quiet_datasets(logs=True):  # the finding says what failed, in one line
            if not direct:
                datasets.load_dataset(str(folder), config, cache_dir=cache)
                return
            files = DataFilesDict.from_patterns(sanitize_patterns(entry["data_files"]), base_path=str(folder))
            if not all(str(f).endswith(".parquet") for paths in files.values() for f in paths):
                datasets.load_dataset(str(folder), config, cache_dir=cache)
                return
            info = plan["infos"].get(config)
            loaded = datasets.load_dataset("parquet", data_files=files, cache_dir=cache,
                                           features=info.features if info is not None else None)
            if info is not None and info.splits:
                verify_splits(info.splits, next(iter(loaded.values())).info.splits)
    except Exception as error:  # any failure to load is what a user would meet
        from datasets.exceptions import NonMatchingSplitsSizesError

        detail = _sizes_detail(error) if isinstance(error, NonMatchingSplitsSizesError) else (
            str(error).splitlines()[0].split(" with any supported extension", 1)[0] if str(error)
            else type(error).__name__)
        report.add(1, config, "load", False, f"config {config!r} does not load: {detail}")


def check_rederived(released: Released, report: Report) -> None:
    """Level 2: the method re-derives each config from the released rows (not when level 1 found a
    data file missing or unreadable: the rows are not all there)."""
    unreadable = [f for f in report.findings if f.level == 1 and f.status == "differs"
                  and ("do not exist" in f.detail or "does not load:" in f.detail and f.split != "load")]
    if unreadable:
        report.skip(2, "(all)", f"not re-derived: {unreadable[0].config}/{unreadable[0].split} cannot be read "
                                "(level 1)")
        return
    # Configs are re-derived from the union of every config's rows: one changed file would make untouched
    # configs differ. Level 2 checks the rows only when every data file is the one the card records.
    changed = [f for f in report.findings if f.level == 1 and f.status == "differs" and f.split != "load"
               and "the card says" in f.detail and f.detail.startswith("sha256")]
    if changed:
        report.skip(2, "(all)", f"not re-derived: {changed[0].config}/{changed[0].split} is not the file the card "
                                "records (level 1); restore it or rebuild the release, then verify again")
        return
    method = get_method(released.record.get("method"))
    rederived = by_source_id(released, method.rederive(released, released.record))
    recorded = released.record.get("configs") or {}
    for config in released.configs:
        members = ((recorded.get(config) or {}).get("parameters") or {}).get("source_ids_sha256")
        if config not in rederived and members:
            _check_membership(released, config, members, report)
            continue
        if config not in rederived:
            report.skip(2, config, f"{method.name} does not re-derive this config from the rows")
            continue
        for split in released.files[config]:
            actual = released.source_ids(config, split)
            expected = np.sort(np.asarray(rederived[config].get(split, []), dtype=np.int64))
            same = np.array_equal(np.sort(actual), expected)
            report.add(2, config, split, same, "" if same else _ids_detail(expected, actual))
        extra = set(rederived[config]) - set(released.files[config]) - {s for s in SPLITS
                                                                         if not len(rederived[config].get(s, []))}
        for split in sorted(extra):
            report.add(2, config, split, False, "the re-derived config has this split; the release does not")


def by_source_id(released: Released, rederived) -> dict:
    """The one tail of level 2: ``{config: {split: source_ids}}`` of what ``SplitMethod.rederive`` returns.

    A method re-derives by mapping the released rows back to the inputs of its config builder and calling that
    builder again, so it returns the builder's :class:`~split_builders.api.ConfigSplit` list: each config's
    indices count the rows of its ``rows`` (a table with ``source_id``: the rows it was re-derived from), or of
    ``released.all_rows()`` when ``rows`` is None."""
    ids_of: dict = {}  # row identities per table, read once

    def ids(rows):
        if rows is None:
            rows = ids_of.setdefault("all", released.all_rows())
        if id(rows) not in ids_of:
            ids_of[id(rows)] = (rows, row_ids(rows))
        return ids_of[id(rows)][1]

    return {config.name: {split: ids(config.rows)[np.asarray(rows, dtype=np.int64)]
                          for split, rows in config.indices.items()} for config in rederived}


def _check_membership(released: Released, config: str, members: dict, report: Report) -> None:
    """A split taken as released (not derived): its rows against the membership the card records."""
    for split in released.files[config]:
        actual = released.source_ids(config, split)
        digest = membership_sha256(actual)
        same = digest == members.get(split)
        report.add(2, config, split, same, "" if same else (
            f"its {actual.size} rows are not the ones the card recorded for this published split "
            f"(source_ids sha256 {digest[:12]}..., recorded {str(members.get(split))[:12]}...)"))


def check_rescored(released: Released, report: Report, work: Path, *, rebuild, source=None) -> None:
    """Level 3: rebuild from the recorded options (source and model must be reachable) with ``rebuild(method,
    options)`` (the build, which returns the folder it wrote: the release does not import the build) and
    compare: the source's content hash, every config's index sets, and the signal columns row by row."""
    from split_builders.release.provenance import locate_source

    record = released.record
    method = get_method(record.get("method"))
    given = (record.get("signal") or {}).get("given")
    if given:
        report.skip(3, "(all)", f"the signal was given ({given.get('file')}), not computed: there is nothing to "
                                "recompute; levels 1 and 2 check the rest")
        return
    if rebuild is None:
        report.skip(3, "(all)", "no build to rebuild with was given (verify(..., rebuild=split_builders.build); "
                                "`resplit verify --rescore` passes it)")
        return
    recorded_source = record.get("source") or {}
    source = locate_source(recorded_source, released.folder, source)  # --source, this machine's build, beside it
    fields = {f for f in method.Options.__dataclass_fields__}
    values = {k: v for k, v in (record.get("parameters") or {}).items() if k in fields}
    if "row_order" in fields and "row_order" not in values:  # built before the rule was recorded: by position
        values["row_order"] = "position"
    try:
        options = method.Options(source=source, out=str(work / "rescored"), seed=record.get("seed", 42), **values)
        rebuilt = rebuild(method, options)
    except Exception as error:  # the source or the model is not reachable here, or options changed
        report.skip(3, "(all)", f"could not rebuild from the recorded options with source {source!r}: "
                                f"{str(error).splitlines()[0]} (give the source's location with --source)")
        return
    again = Released(rebuilt)
    before, after = recorded_source.get("content_sha256"), (again.record.get("source") or {}).get("content_sha256")
    if before and after:
        report.add(3, "source", None, before == after,
                   f"content sha256 {after[:12]}... but the card records {before[:12]}..." if before != after else "")
    for config in released.configs:
        if config not in again.files:
            report.add(3, config, None, False, "the rebuild has no such config")
            continue
        for split in released.files[config]:
            actual = released.source_ids(config, split)
            expected = again.source_ids(config, split) if split in again.files[config] else np.array([], np.int64)
            same = np.array_equal(np.sort(actual), np.sort(expected))
            report.add(3, config, split, same, "" if same else _ids_detail(np.sort(expected), actual))
    old_rows, new_rows = released.all_rows(), again.all_rows()
    _, left, right = np.intersect1d(row_ids(old_rows), row_ids(new_rows), return_indices=True)
    for column in method.signal_columns:
        if column in old_rows.column_names and column in new_rows.column_names:
            old = np.asarray(old_rows.column(column).to_numpy(), float)[left]
            new = np.asarray(new_rows.column(column).to_numpy(), float)[right]
            gap = float(np.max(np.abs(old - new), initial=0.0))
            report.add(3, f"signal `{column}`", None, gap == 0.0,
                       f"largest difference {gap:.3g} over {left.size} rows")


def verify(target: str, *, rescore: bool = False, load: bool = True, source=None, allow_extra: bool = False,
           rebuild=None) -> Report:
    """Verify a release folder or ``HUB_ID[@REVISION]`` (see the module docstring). ``source``: where
    level 3 reads the source (default: the location the card records); ``allow_extra``: accept files
    the card does not name; ``rebuild(method, options) -> folder``: how level 3 builds again (the CLI passes
    :func:`split_builders.builder.rebuild`)."""
    if rescore and rebuild is None:
        raise InvalidParameterError("verify(rescore=True) builds the release again: pass rebuild=, e.g. "
                                    "split_builders.builder.rebuild")
    report = Report(target)
    with tempfile.TemporaryDirectory(prefix="resplit-verify-") as work:
        folder = resolve_target(target, Path(work))
        released = Released(folder, check=False)  # every file's state is a finding here, not a refusal
        report.built_by = built_by_said(released.record)
        check_integrity(released, report, load=load, allow_extra=allow_extra)
        check_rederived(released, report)
        if rescore:
            check_rescored(released, report, Path(work), rebuild=rebuild, source=source)
    return report
