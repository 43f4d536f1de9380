"""The public conformance check of a split method, as scikit-learn's ``check_estimator`` is of an estimator:

>>> from split_builders.testing import check_method
>>> check_method(MyMethod, data="../shared")            # doctest: +SKIP
['declarations', 'example', 'source_ids', ...]

:func:`check_method` builds a small real release of the method from its own ``example_arguments`` (through the
``resplit`` command, in-process) and runs every check of :data:`CHECKS` on it: the contract (what every release
records and holds, its card, ``verify`` levels 1 and 2), the labels and the card's Hub metadata, refused bad input
(one line, nothing written), ``--group-field`` (groups kept whole, or refused in one line where the method does
not implement ``groups``; with its ``group_example``, the one policy for missing and too coarse group values) and
the evidence views (diagnostics against random splits, the probe's declared baseline). A check raises an
``AssertionError`` that names it and what failed. The project's own tests run each check on every registered
method (``tests/test_registered_methods.py``), so no test lists methods.

Each check is a function ``check(case)`` of a :class:`Case`: the method, the data folder its examples read, a
scratch folder and (built on first use, or given) its example release.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from split_builders.contracts import REQUIRED_HOOKS, SplitMethod
from split_builders.testing_hooks import HOOK_CHECKS

SEED = 7  # what the example release is built with
NULL_SPLITS = 50  # random splits behind its diagnostics


@dataclass
class Case:
    """One method under check: ``data`` (a folder laid out as the project's shared data), ``work`` (scratch),
    ``release`` (its example release, built with ``--seed 7 --null-splits 50`` on first use where not given; or a
    function that returns one, called when a check first needs it) and
    ``arguments`` (its example arguments, read from the method where not given)."""

    method: SplitMethod
    data: Path
    work: Path
    release: Path | None = None
    arguments: list | None = None
    seed: int = SEED
    null_splits: int = NULL_SPLITS
    runs: dict = field(default_factory=dict)
    _scratch: int = field(default=0, repr=False)
    _records: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        from split_builders.registry import instantiate

        self.method = instantiate(self.method)
        self.data, self.work = Path(self.data), Path(self.work)
        if self.arguments is None:
            inputs = self.scratch("example-inputs")
            found = self.method.example_arguments(self.data, inputs)
            self.arguments = None if found is None else [str(a) for a in found]

    @property
    def name(self) -> str:
        return self.method.info.name

    def scratch(self, stem: str) -> Path:
        """A new, empty folder under ``work``."""
        self._scratch += 1
        folder = self.work / f"{stem}-{self._scratch}"
        folder.mkdir(parents=True)
        return folder

    def standing(self):
        """A ``with`` block in which the registry's entry of its name is this method (never a namesake that is
        installed or registered): what the CLI and ``verify`` run in a check is the object under check."""
        from split_builders.registry import REGISTRY

        return REGISTRY.standing_in("methods", self.name, self.method)

    def run(self, *arguments) -> tuple[int, str, str]:
        """``resplit ARGUMENTS`` in-process, with this method under its name: ``(exit code, stdout, stderr)``."""
        import contextlib
        import io

        from split_builders.cli import main

        out, err = io.StringIO(), io.StringIO()
        with self.standing(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in arguments])
        return code, out.getvalue(), err.getvalue()

    def hooks(self, variant: str = "first", *, source=None):
        """The hooks run in-process on the example's options with its seed (:func:`~split_builders.testing_hooks.
        run_hooks`), once per ``variant`` (``"again"``: a second run; ``source``: the example's arguments with
        another source), kept in ``runs`` (a dict several cases may share)."""
        from split_builders.testing_hooks import options_of, run_hooks

        if variant not in self.runs:
            assert self.arguments, f"example_arguments(): {self.name} declares none; expected arguments with --source"
            arguments = self.arguments if source is None else ["--source", str(source), *self.without_source()]
            options = options_of(self.method, arguments, self.work / f"hooks-{variant}-out", self.seed)
            self.runs[variant] = run_hooks(self.method, options)
        return self.runs[variant]

    def built(self) -> Path:
        """The example release (built once; ``release`` may be a function that returns it, called on first use)."""
        if callable(self.release):
            self.release = self.release()
        if self.release is None:
            assert self.arguments, f"{self.name} declares no example_arguments"
            out = self.scratch("release") / "out"
            code, printed, err = self.run(self.name, *self.arguments, "--seed", self.seed, "--null-splits",
                                          self.null_splits, "--out", out, "--no-progress")
            if code != 0:
                raise BuildFailed(f"the example build (resplit {self.name} ... --seed {self.seed}) exited {code}: "
                                  f"{err.strip()[-2000:]}")
            self.release = out
        return Path(self.release)

    def record(self, folder: Path | None = None) -> dict:
        """The ``resplit:`` provenance of a release (the example's by default), read once per folder."""
        folder = Path(folder or self.built())
        if folder not in self._records:
            self._records[folder] = front_matter(folder)["resplit"]
        return self._records[folder]

    def source(self) -> Path:
        return Path(self.arguments[self.arguments.index("--source") + 1])

    def without_source(self) -> list:
        at = self.arguments.index("--source")
        return [*self.arguments[:at], *self.arguments[at + 2:]]


class BuildFailed(AssertionError):
    """The example release could not be built: said as the build's failure, not as the check that first read it."""


def front_matter(folder: Path) -> dict:
    import yaml

    return yaml.safe_load((Path(folder) / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _refused_in_one_line(code: int, err: str, out: Path | None, *expected) -> None:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert code != 0, "bad input was accepted"
    assert "Traceback" not in err and len(lines) == 1, err
    for text in expected:
        assert text in err, (text, err)
    assert out is None or not out.exists(), "something was written at --out"


# -- the declarations ----------------------------------------------------------------------------------------


def check_declarations(case: Case) -> None:
    """The registry accepts it: its required hooks are implemented, its :class:`MethodInfo` is one shared code reads,
    it has a paper, a summary and configs."""
    from split_builders.options import CommonOptions
    from split_builders.registry import check_declarations as registry_check

    registry_check(case.method)
    info = case.method.info
    assert info.paper and info.summary and info.config_names, f"{case.name}: paper, summary and config_names"
    assert issubclass(info.options, CommonOptions)
    assert not getattr(type(case.method), "__abstractmethods__", ()), REQUIRED_HOOKS


def check_example(case: Case) -> None:
    """It declares example arguments (with ``--source``, without ``--out``), and a grouping method a group example."""
    assert case.arguments, f"no example arguments for {case.name}"
    assert "--source" in case.arguments and "--out" not in case.arguments, case.arguments
    if case.method.supports_groups:
        found = case.method.group_example(case.data, case.scratch("group-example"), [0, 1] * 10)
        assert found is not None, f"{case.name} implements groups(): declare group_example(data, work, values)"
        arguments, column = found
        assert "--group-field" in arguments and column, found


# -- the contract ---------------------------------------------------------------------------------------------


def check_source_ids(case: Case) -> None:
    """Every released row carries its ``source_id``."""
    import pyarrow.parquet as pq

    files = sorted(case.built().rglob("*.parquet"))
    assert files, "the example release has no data file"
    for path in files:
        assert "source_id" in pq.read_schema(path).names, f"rows(): {path.name} has no source_id column"


def check_provenance(case: Case) -> None:
    """The provenance schema, and every data file's recorded rows and sha256."""
    meta = case.record()
    for key in ("schema", "version", "method", "paper", "seed", "parameters", "source", "signal", "environment",
                "built_by", "configs"):
        assert key in meta, f"the provenance has no {key!r}"
    assert meta["method"] == case.name and meta["seed"] == case.seed and meta["schema"] == 1
    assert meta["source"]["rows"] > 0
    assert meta["source"].get("content_sha256") or meta["source"].get("revision")
    assert set(meta["environment"]) >= {"python", "numpy", "torch", "datasets", "transformers"}
    from split_builders.release.provenance import built_by

    recorded = {k: v for k, v in meta["built_by"].items() if k != "views"}  # views: the plug-in views a build ran
    assert recorded == built_by(case.method), (f"the provenance's built_by {meta['built_by']}; expected the "
                                               f"method's distribution and its requires: {built_by(case.method)}")
    assert set(meta["built_by"]["requires"]) == set(case.method.info.requires), meta["built_by"]
    for config, entry in meta["configs"].items():
        assert set(entry["rows"]) == set(entry["sha256"]) and "train" in entry["rows"]
        for split, digest in entry["sha256"].items():
            files = list((case.built() / config).glob(f"{split}-00000-of-00001-*.parquet"))
            assert len(files) == 1, (config, split)
            assert hashlib.sha256(files[0].read_bytes()).hexdigest() == digest


def check_configs_load(case: Case) -> None:
    """``datasets.load_dataset(release, config)`` gives each config's recorded rows (a fresh cache)."""
    import datasets

    cache = str(case.scratch("hf-datasets-cache"))
    for config, entry in list(case.record()["configs"].items())[:3]:
        loaded = datasets.load_dataset(str(case.built()), config, cache_dir=cache)
        assert {s: len(loaded[s]) for s in loaded} == entry["rows"]


def check_card(case: Case) -> None:
    """The card has the skeleton's sections, and every figure is shown in it."""
    folder = case.built()
    card = (folder / "README.md").read_text(encoding="utf-8")
    for heading in ("## How to load it", "## Configs", "## How the splits were built", "## How the splits differ",
                    "## Source and citation"):
        assert heading in card, heading
    figures = list((folder / "figures").glob("*.png"))
    assert figures and all(f"]({f.relative_to(folder).as_posix()})" in card for f in figures)


def check_verify(case: Case) -> None:
    """``verify`` passes on the untouched release: level 1 every file identical, level 2 every config checked."""
    from split_builders.publishing.verify import verify

    folder = case.built()
    with case.standing():
        report = verify(str(folder), load=False)
    said = lambda findings: "; ".join(f"level {f.level} {f.config}: {f.status} {f.detail}".strip()  # noqa: E731
                                      for f in findings[:5])
    wrong = [f for f in report.findings if f.status not in ("identical", "not checked")]
    assert report.ok and not wrong, f"verify of the untouched release: expected every finding identical, got {said(wrong)}"
    files = [f for f in report.findings if f.level == 1]
    assert files and all(f.status == "identical" for f in files), f"level 1 (the files): {said(files)}"
    # Level 2 checks every config: re-derived from the rows, or (a published split) its recorded rows.
    configs = set(case.record()["configs"])
    checked = {f.config for f in report.findings if f.level == 2 and f.status == "identical"}
    unchecked = [f for f in report.findings if f.status == "not checked"]
    assert checked == configs and not unchecked, (
        f"rederive(): expected every config {sorted(configs)} re-derived from the released rows, got "
        f"{sorted(checked)} identical" + (f" and not checked: {said(unchecked)}" if unchecked else ""))
    # idempotent: called again (the same method object), rederive() gives the same configs as the release records
    from split_builders.publishing.verify import Report, check_rederived
    from split_builders.release.folder import Released

    again = Report(str(folder))
    with case.standing():
        check_rederived(Released(folder, check=False), again)
    differs = [f for f in again.findings if f.status != "identical"]
    assert not differs, (f"rederive(): called a second time on the same release, it gave other configs: "
                         f"{said(differs)}; expected the same configs on every call (no state kept between calls, "
                         "every draw from the recorded seed)")


def check_fields(case: Case) -> None:
    """``resplit.fields`` names columns the released rows have: the query, label and target in every config, each
    text field in some config, and the label's names in its ``ClassLabel`` order where it is one."""
    import datasets
    import pyarrow.parquet as pq

    from split_builders.contracts import Fields

    meta = case.record()
    fields = Fields.from_record(meta)
    assert fields is not None, "fields(): the release records no fields; expected a Fields (text, query, label)"
    assert fields.text and fields.query in fields.text, (f"fields(): expected text fields with the query among "
                                                         f"them, got text {fields.text}, query {fields.query!r}")
    seen = set()
    for config in meta["configs"]:
        path = sorted((case.built() / config).glob("train-*.parquet"))[0]
        names = set(pq.read_schema(path).names)
        seen |= names
        named = {c for c in (fields.query, fields.label, fields.target) if c}
        assert named <= names, (f"fields(): names column(s) {sorted(named - names)} that the rows of {config!r} do "
                                f"not have (columns: {sorted(names)})")
        features = datasets.Features.from_arrow_schema(pq.read_schema(path))
        label = features.get(fields.label) if fields.label else None
        if isinstance(label, datasets.ClassLabel):
            assert list(fields.label_names) == label.names, config
    assert set(fields.text) <= seen, f"fields(): text field(s) {sorted(set(fields.text) - seen)} in no config"


def check_labels(case: Case) -> None:
    """No ``large_string`` column; a label declared with class names is the int64 ``ClassLabel`` ``label`` with
    those names; no ``ClassLabel`` where no class names are declared."""
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    from split_builders.contracts import Fields

    declared = Fields.from_record(case.record())
    assert declared is not None, f"{case.name} records no fields"
    for path in sorted(case.built().rglob("*.parquet")):
        schema = pq.read_schema(path)
        assert not [f.name for f in schema if pa.types.is_large_string(f.type)], path
        features = datasets.Features.from_arrow_schema(schema)
        if declared.label_names is None:
            assert not any(isinstance(f, datasets.ClassLabel) for f in features.values()), path
            continue
        assert declared.label == "label" and isinstance(features["label"], datasets.ClassLabel), path
        assert features["label"].names == list(declared.label_names), path
        assert schema.field("label").type == pa.int64()


CATEGORY = {"classification": "text-classification", "behavioural": "text-classification",
            "semantic_parsing": "text-generation"}


def check_metadata(case: Case) -> None:
    """The card's Hub metadata round-trips through ``huggingface_hub``'s ``DatasetCardData``, names the task category
    of its declared task, and the source is named by its file name (and sha256), no local path anywhere."""
    import yaml
    from huggingface_hub import DatasetCard, DatasetCardData

    folder = case.built()
    metadata = yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)[1])
    card = DatasetCard.load(folder / "README.md")
    assert card.data.to_dict() == metadata
    assert yaml.safe_load(DatasetCardData(**metadata).to_yaml()) == metadata
    task = metadata["resplit"]["fields"]["task"]
    assert metadata["task_categories"] == [CATEGORY[task]], (task, metadata["task_categories"])
    assert isinstance(metadata["task_ids"], list) and all(isinstance(i, str) for i in metadata["task_ids"])
    assert isinstance(metadata["license"], str) and metadata["license"]
    language = metadata.get("language")
    assert language is None or (language and all(isinstance(code, str) and len(code) == 2 for code in language))
    assert metadata["tags"][:2] == ["resplit", case.name]
    source, given = metadata["resplit"]["source"], case.source()
    assert source["location"] == given.name and given.name in source["name"] and "/" not in source["name"]
    if given.is_file():
        assert source["sha256"] == hashlib.sha256(given.read_bytes()).hexdigest()
    needles = {str(given.parent), str(Path.home()), str(case.data), str(case.data.resolve()), str(case.work),
               str(folder.parent), str(Path(__file__).resolve().parents[1])}
    for path in (p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for needle in needles:
            assert needle.encode() not in data, (path.relative_to(folder), needle)


# -- refused input --------------------------------------------------------------------------------------------


def check_existing_out(case: Case) -> None:
    """An existing ``--out`` (and one whose parent is a file) is refused before the source is read."""
    cls = type(case.method)
    original = cls.__dict__["load"] if "load" in cls.__dict__ else None

    def never(*args, **kwargs):
        raise AssertionError("the source was read before the output location was checked")

    folder = case.scratch("existing-out")
    cls.load = never
    try:
        (folder / "exists").mkdir()
        code, _, err = case.run(case.name, *case.arguments, "--out", folder / "exists")
        assert code == 2 and "--overwrite" in err, err
        (folder / "file").write_text("x")
        code, _, err = case.run(case.name, *case.arguments, "--out", folder / "file" / "out")
        assert code == 2 and "is a file" in err, err
    finally:
        if original is None:
            del cls.load
        else:
            cls.load = original


def check_bad_input(case: Case) -> None:
    """A missing source and bad common options (``--seed -1``, ``--seed 2**32``, ``--limit 0``) are refused in one
    line with nothing written; where the example source is one file, an empty one ("empty") and one with a byte that
    is not UTF-8 (its line named) too."""
    folder = case.scratch("bad-input")
    out = folder / "out"
    code, _, err = case.run(case.name, "--source", folder / "no-such-source.csv", *case.without_source(), "--out", out,
                            "--no-progress")
    _refused_in_one_line(code, err, out, "no-such-source")
    for flag, value, expected in (("--seed", "-1", "seed"), ("--seed", str(2**32), "seed"), ("--limit", "0", "limit")):
        code, _, err = case.run(case.name, *case.arguments, flag, value, "--out", out, "--no-progress")
        _refused_in_one_line(code, err, out, expected)
    if not case.source().is_file():
        return
    data, suffix = _plain_source(case.source())
    empty = folder / f"empty{suffix}"
    empty.write_bytes(b"")
    code, _, err = case.run(case.name, "--source", empty, *case.without_source(), "--out", out, "--no-progress")
    _refused_in_one_line(code, err, out, "empty")
    newline = data.find(b"\n", len(data) // 2)  # a byte that is not UTF-8 on a line in the middle
    cut = newline + 1 if newline >= 0 else data.index(b" ", len(data) // 2) + 1
    latin = folder / f"latin1{suffix}"
    latin.write_bytes(data[:cut] + b"caf\xe9 " + data[cut:])
    code, _, err = case.run(case.name, "--source", latin, *case.without_source(), "--out", out, "--no-progress")
    line = data[:cut].count(b"\n") + 1
    _refused_in_one_line(code, err, out, "not UTF-8", f"line {line}")


def _plain_source(source: Path) -> tuple:
    """The bytes and suffix of a source file as text (a ``.gz`` file decompressed)."""
    import gzip

    if source.suffix == ".gz":
        return gzip.decompress(source.read_bytes()), Path(source.stem).suffix
    return source.read_bytes(), source.suffix


# -- groups ---------------------------------------------------------------------------------------------------


def _group_build(case: Case, values, stem: str) -> tuple[list, str, Path]:
    work = case.scratch(stem)
    arguments, column = case.method.group_example(case.data, work, list(values))
    return [str(a) for a in arguments], column, work / "out"


def check_groups(case: Case) -> None:
    """A grouped build has no group in two splits of any config, and verify re-derives it; a method that does not
    implement ``groups`` refuses ``--group-field`` in one line; a missing field is named."""
    import datasets

    if not case.method.supports_groups:  # refused before any work: by the method in one line, or not offered
        out = case.scratch("groups") / "out"
        code, _, err = case.run(case.name, *case.arguments, "--group-field", "premise", "--out", out, "--no-progress")
        assert code == 2 and "--group-field" in err.strip().splitlines()[-1], err
        assert "Traceback" not in err and not out.exists()
        return
    arguments, column, out = _group_build(case, [i // 3 for i in range(300)], "groups")
    code, _, err = case.run(case.name, *arguments, "--out", out, "--no-progress", "--null-splits", "0")
    assert code == 0, err
    record = case.record(out)
    grouped = [name for name, entry in record["configs"].items() if entry["parameters"].get("grouped_by") == column]
    assert grouped, "no config records grouped_by"
    cache = str(case.scratch("hf-datasets-cache"))
    for name in grouped:
        config = datasets.load_dataset(str(out), name, cache_dir=cache)
        values = {split: set(config[split][column]) for split in config}
        for a in values:
            for b in values:
                assert a >= b or not values[a] & values[b], (name, a, b)
    code, printed, _ = case.run("verify", out)
    assert code == 0, printed
    at = arguments.index("--group-field")
    wrong = [*arguments[:at + 1], "no_such_field", *arguments[at + 2:]]
    code, _, err = case.run(case.name, *wrong, "--out", case.scratch("groups") / "x", "--no-progress")
    assert code == 2 and "'no_such_field' not found" in err and f"'{column}'" in err, err
    assert len(err.strip().splitlines()) == 1, err


GROUP_ROWS = 300  # rows of the group policy's sources


def check_group_policy(case: Case) -> None:
    """The one policy for ``--group-field`` (where the method implements ``groups``): a field with no value in any
    row is refused in one line; a row without a value is a group of its own, said on the terminal and in the card,
    recorded as ``missing_group_values`` and never counted as shared by the audit; the group column keeps its type;
    a field too coarse for the sizes is said on the terminal and in the card (or refused in one line)."""
    import re

    from split_builders.release.folder import front_matter as card_front

    if not case.method.supports_groups:
        return
    for missing in (None, float("nan")):
        arguments, column, out = _group_build(case, [missing] * GROUP_ROWS, "no-values")
        code, _, err = case.run(case.name, *arguments, "--out", out, "--no-progress", "--null-splits", "0")
        _refused_in_one_line(code, err, out, "has no value in any of the", column)
    values = [None if i % 7 == 0 else i // 3 for i in range(GROUP_ROWS)]
    arguments, column, out = _group_build(case, values, "missing-values")
    code, printed, err = case.run(case.name, *arguments, "--out", out, "--no-progress", "--null-splits", "0")
    assert code == 0, err
    n_missing = sum(v is None for v in values)
    assert f"{n_missing} row(s) have no `{column}` value" in printed, printed
    metadata, body = card_front(out / "README.md")
    grouped = {c: e for c, e in metadata["resplit"]["configs"].items()
               if (e.get("parameters") or {}).get("grouped_by") == column}
    assert grouped and all(e["parameters"]["missing_group_values"] == n_missing for e in grouped.values())
    assert f"{n_missing} row(s) have no value (null or empty): each is a group of its own" in body
    for config in grouped:  # the card's own audit agrees with "no group straddles"
        for split, entry in metadata["resplit"]["configs"][config]["audit"].items():
            assert entry["shared"][column] == 0, (config, split, entry["shared"])
    import pyarrow.parquet as pq

    files = sorted(out.glob("*/train-*.parquet"))
    assert files, f"no data files in {out}"
    released = pq.read_table(files[0]).column(column)
    # numbers stay numbers (no '12.0'): int64 with nulls, or text where the group example writes text values
    assert str(released.type) in ("int64", "string"), released.type
    if str(released.type) == "int64":
        assert released.null_count > 0
    else:
        assert not [v for v in released.to_pylist() if v is not None and re.fullmatch(r"\d+\.0", v)]
    built = False
    for n_values in (3, 6):  # three groups: a part of one group may be refused; six: sizes far from the requested
        arguments, column, out = _group_build(case, [i % n_values for i in range(GROUP_ROWS)], f"coarse{n_values}")
        code, printed, err = case.run(case.name, *arguments, "--out", out, "--no-progress", "--null-splits", "0")
        if code != 0:  # refused: in one line, nothing written
            _refused_in_one_line(code, err, out)
            continue
        notes = [line for line in printed.splitlines() if line.startswith(f"note: whole `{column}` groups:")]
        assert any("requested" in line for line in notes), printed
        metadata, body = card_front(out / "README.md")
        for line in notes:
            assert line.split("groups: ", 1)[1] in body, line
        for info in metadata["dataset_info"]:  # no config without train rows
            train = [s["num_examples"] for s in info["splits"] if s["name"] == "train"]
            assert train and train[0] > 0, info["config_name"]
        for names in same_evaluation_rows(out):  # configs that test the same thing are said to
            assert any(all(f"`{n}`" in line for n in names) and "hold the same" in line for line in notes), (names,
                                                                                                          notes)
        built = True
        break
    assert built, "neither coarse field built a release to say its sizes in"


def same_evaluation_rows(out: Path) -> list:
    """Names of the configs (two or more) of a release whose validation and test splits hold the same
    ``source_id``s, read from the data files."""
    import pyarrow.parquet as pq

    held = {}
    for config in sorted(p for p in out.iterdir() if p.is_dir() and any(p.glob("train-*.parquet"))):
        parts = tuple(tuple(sorted(pq.read_table(f, columns=["source_id"]).column(0).to_pylist()))
                      for split in ("validation", "test") for f in sorted(config.glob(f"{split}-*.parquet")))
        held.setdefault(parts, []).append(config.name)
    return [names for names in held.values() if len(names) > 1]


# -- evidence -------------------------------------------------------------------------------------------------


def check_diagnostics(case: Case) -> None:
    """The card carries the diagnostics against random splits and its YAML their numbers for every config with an
    evaluation split (behavioural test cases: what each config holds out)."""
    from split_builders.contracts import Fields

    card = (case.built() / "README.md").read_text(encoding="utf-8")
    assert "## Diagnostics against random splits" in card
    meta = case.record()
    behavioural = Fields.from_record(meta).task == "behavioural"
    assert meta["diagnostics"]["null_splits"] == case.null_splits
    for config, entry in meta["configs"].items():
        evaluated = [s for s in ("validation", "test") if entry["rows"].get(s)]
        if not evaluated:
            continue
        numbers = entry["diagnostics"]
        if behavioural:
            assert "held_out" in numbers, config
            continue
        for split in evaluated:
            for statistic in numbers[split].values():
                assert 0 <= statistic["percentile"] <= 100 if statistic["percentile"] is not None else True
    if not behavioural:
        named = {name for e in meta["configs"].values() for split, stats in e.get("diagnostics", {}).items()
                 for name in stats}
        assert {"length", "rare_word_fraction", "unseen_word_rate", "fk_grade"} <= named, named


def check_probe(case: Case) -> None:
    """``resplit probe --json`` compares with the declared baseline config (where it declares one and the release
    built it), not with a config that happens to be called ``random``."""
    import json

    baseline = case.method.info.baseline_config
    if baseline is None or baseline not in case.record()["configs"]:
        return
    code, printed, err = case.run("probe", case.built(), "--json", "--no-progress")
    assert code == 0, err
    assert json.loads(printed)["reference"] == baseline


def _checks() -> dict:
    return {"declarations": check_declarations, "example": check_example, **HOOK_CHECKS,
            "source_ids": check_source_ids, "provenance": check_provenance, "configs_load": check_configs_load,
            "card": check_card, "verify": check_verify, "fields": check_fields, "labels": check_labels,
            "metadata": check_metadata, "existing_out": check_existing_out, "bad_input": check_bad_input,
            "groups": check_groups, "group_policy": check_group_policy, "diagnostics": check_diagnostics,
            "probe": check_probe}


CHECKS = _checks()
"""Every conformance check, by name, in the order :func:`check_method` runs them: those that call the hooks
in-process (:data:`split_builders.testing_hooks.HOOK_CHECKS`) before those that read the example release."""

CHECK_HOOKS = {"declarations": "info", "example": "example_arguments()", "hooks": "fields(), rederive()",
               "configs": "configs()", "sizes": "configs()", "signal_columns": "rows(), fields()",
               "determinism": "signal(), configs()", "row_order": "configs()", "source_ids": "load(), rows()",
               "provenance": "load(), signal()", "configs_load": "configs(), rows()", "card": "card()",
               "verify": "rederive()", "fields": "fields()", "labels": "rows(), fields()",
               "metadata": "load(), fields()", "existing_out": "check(), load()", "bad_input": "check(), load()",
               "groups": "groups(), group_example()", "group_policy": "groups(), configs()",
               "diagnostics": "rows(), fields()", "probe": "info.baseline_config"}
"""The hooks (or declarations) each check exercises, named in its failure."""


def default_data() -> Path:
    """The project's shared data beside the checkout (``../shared``), where the built-in examples read."""
    return Path(os.environ.get("RESPLIT_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def check_method(method, *, data=None, work=None, release=None, arguments=None, checks=None,
                 expected_failures=None) -> list:
    """Run the conformance checks (:data:`CHECKS`, or the names in ``checks``) on one split method (a class or an
    instance; it need not be registered, and it is what every check runs, through the CLI too, even where a
    method of its name is installed): its hooks are run in-process on its ``example_arguments``, and its example
    release is built from them into ``work`` (a temporary folder by default), or ``release`` (a folder built with
    ``--seed 7 --null-splits 50``) is read. Returns the names of the checks that passed; the first that fails
    raises an ``AssertionError`` naming it, the hooks it exercises, what was expected and what came back.
    ``expected_failures``: ``{check: reason}``, checks known to fail (as scikit-learn's ``expected_failed_checks``):
    each still runs, its failure is not raised, and one that passes is (remove it from the dict)."""
    import tempfile

    names = list(CHECKS) if checks is None else list(checks)
    expected = expected_failures_checked(expected_failures)
    unknown = [name for name in names if name not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {', '.join(CHECKS)}")
    passed = []
    with tempfile.TemporaryDirectory(prefix="resplit-check-") as scratch:
        case = Case(method, Path(data) if data is not None else default_data(), Path(work or scratch),
                    release=release, arguments=arguments)
        with case.standing():
            for name in names:
                try:
                    CHECKS[name](case)
                except BuildFailed as error:
                    if name in expected:
                        continue
                    raise AssertionError(f"{case.name}: {error} (found by the check {name!r})") from error
                except AssertionError as error:
                    if name in expected:
                        continue
                    raise AssertionError(f"{case.name}: check {name!r} ({CHECK_HOOKS[name]}) failed: "
                                         f"{_said(error)}") from error
                if name in expected:
                    raise AssertionError(f"{case.name}: check {name!r} passed, but expected_failures says it fails "
                                         f"({expected[name]}); remove it from expected_failures")
                passed.append(name)
    return passed


def expected_failures_checked(expected) -> dict:
    """``expected_failures`` checked: ``{check name: the reason it fails}``, each a check of :data:`CHECKS` and each
    reason a non-empty string."""
    if expected is None:
        return {}
    if not isinstance(expected, dict) or not all(isinstance(r, str) and r.strip() for r in expected.values()):
        raise ValueError(f"expected_failures is {{check name: reason}}, each reason a non-empty string; got "
                         f"{expected!r}")
    unknown = [name for name in expected if name not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown} in expected_failures; known: {', '.join(CHECKS)}")
    return dict(expected)


def _said(error: AssertionError) -> str:
    """An assertion's message, or, where it has none, the line of the check that failed."""
    import traceback

    message = " ".join(str(error).split())
    if message:
        return message
    frames = traceback.extract_tb(error.__traceback__)
    return f"expected {frames[-1].line}" if frames else type(error).__name__
