"""CURRICULUM's evaluation report (Chen & Gao 2022): predictions on a ``resplit curriculum`` release
turned into the paper's zero-shot table, the inoculation curves and the 2x2 generalisation matrices.

**Predictions format.** One row per evaluated example, in a CSV, TSV, JSON lines, JSON (a list of
objects) or Parquet file (optionally ``.gz``; a UTF-8 byte order mark is ignored), with the columns

``config``
    The release config the example comes from: ``<phenomenon>`` (the zero-shot diagnostic),
    ``<phenomenon>_hypothesis_only``, ``<phenomenon>_inoc_<n>``, ``<phenomenon>_simple``, ``_hard``,
    ``_simple_to_hard`` or ``_hard_to_simple``. A ``phenomenon`` column may stand in for it (the
    phenomenon's own config).
``prediction``, ``label``
    The model's prediction and the gold label, both as label names (``entailed``, ``not-entailed``,
    ``entailment``, ``neutral``, ``contradiction``) or both as the release's class ids.
``split`` (optional)
    ``validation`` or ``test``; by default ``test`` for ``_simple_to_hard`` / ``_hard_to_simple`` and
    ``validation`` for every other config (each config's evaluation split).
``model`` (optional)
    A model name, so that one file (or several files) can compare models; by default the file's name.

In Python, :func:`curriculum_report` also takes a ``pandas.DataFrame`` or a list of such rows, or
per-config lists ``{config: {"predictions": [...], "labels": [...]}}`` (``"split"`` optional).

**What is computed** (per model):

* *zero-shot diagnostic*: the Matthews correlation (:func:`sklearn.metrics.matthews_corrcoef`) of the
  predictions on each phenomenon's ``validation`` split (the paper's test set), per phenomenon and per
  category (the mean of its phenomena's correlations, as the paper averages them), with the
  hypothesis-only baseline beside it where ``<phenomenon>_hypothesis_only`` was predicted, and a heatmap
  (:meth:`CurriculumReport.heatmap`);
* *inoculation*: accuracy on the ``validation`` split of ``<phenomenon>_inoc_<n>`` for each n;
* *cross-distribution generalisation*: the paper's Figure 3, a 2x2 matrix of accuracies per phenomenon,
  rows the part trained on and columns the part tested on (:data:`CELLS`): simple -> simple from
  ``<phenomenon>_simple``'s ``validation`` split, simple -> hard from ``<phenomenon>_simple_to_hard``'s
  ``test`` split, hard -> simple from ``<phenomenon>_hard_to_simple``'s ``test`` split and hard -> hard
  from ``<phenomenon>_hard``'s ``validation`` split (the ``validation`` split of ``_simple_to_hard`` /
  ``_hard_to_simple``, the same rows, stands in when the first is absent);
* every (model, config, split) with its row count, accuracy and Matthews correlation.

**Labels.** Label names are read in the phenomenon's label set, inferred from its gold labels (2-way
when any is ``entailed`` / ``not-entailed``): on a 2-way phenomenon, 3-way names are folded as
CURRICULUM's zero-shot script folds an NLI model's predictions (``entailment`` -> ``entailed``,
``neutral`` and ``contradiction`` -> ``not-entailed``). That is also how ``monotonicity_infer`` is
handled: its released train split says ``entailment`` / ``neutral`` and its validation split
``entailed`` / ``not-entailed``; resplit reads it as 2-way, and gold labels or predictions in the train
split's vocabulary are folded into it (the report says how many). Class ids are compared as they are.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from split_builders.errors import InvalidParameterError, SourceLoadError

REQUIRED = ("prediction", "label")
KINDS = {  # config suffix -> kind (longest suffixes first)
    "_hypothesis_only": "hypothesis_only", "_simple_to_hard": "simple_to_hard",
    "_hard_to_simple": "hard_to_simple", "_simple": "simple", "_hard": "hard",
}
_INOCULATION = re.compile(r"^(?P<phenomenon>.+)_inoc_(?P<size>[0-9]+)$")
EVALUATION_SPLITS = {"simple_to_hard": ("test", "validation"), "hard_to_simple": ("test", "validation")}
"""The splits a kind of config is evaluated on, its default first (``validation`` for kinds not listed)."""
CELLS = (  # (trained on, tested on, sources in order of preference: (kind, split))
    ("simple", "simple", (("simple", "validation"), ("simple_to_hard", "validation"))),
    ("simple", "hard", (("simple_to_hard", "test"),)),
    ("hard", "simple", (("hard_to_simple", "test"),)),
    ("hard", "hard", (("hard", "validation"), ("hard_to_simple", "validation"))),
)
"""The 2x2 generalisation matrix (the paper's Figure 3): each cell and the config splits it is read from."""
MONOTONICITY = "monotonicity_infer"


@dataclass
class Score:
    """One (model, config, split): its rows, accuracy and Matthews correlation."""

    model: str
    config: str
    split: str
    phenomenon: str
    kind: str
    size: int | None
    n: int
    accuracy: float
    mcc: float
    classes: int

    def as_dict(self) -> dict:
        return {"model": self.model, "config": self.config, "split": self.split, "phenomenon": self.phenomenon,
                "kind": self.kind, "size": self.size, "n": self.n, "accuracy": self.accuracy, "mcc": self.mcc}


@dataclass
class CurriculumReport:
    """The report of :func:`curriculum_report`; :meth:`lines` prints it, :meth:`as_dict` is its JSON
    and :meth:`heatmap` draws the zero-shot heatmap."""

    models: list
    scores: list
    notes: list = field(default_factory=list)

    # -- the paper's tables ---------------------------------------------------------------------

    def score(self, model: str, config: str, split: str) -> Score | None:
        return next((s for s in self.scores if (s.model, s.config, s.split) == (model, config, split)), None)

    def zero_shot(self) -> list[dict]:
        """Per phenomenon (the paper's order): category, abbreviation, rows, and per model the Matthews
        correlation on its ``validation`` split (``mcc``), the accuracy and the hypothesis-only MCC."""
        from loading_scripts.curriculum import CATALOGUE

        out = []
        for phenomenon in _phenomena_in_order({s.phenomenon for s in self.scores}):
            full = {m: self.score(m, phenomenon, "validation") for m in self.models}
            hyp = {m: self.score(m, phenomenon + "_hypothesis_only", "validation") for m in self.models}
            if not any(full.values()) and not any(hyp.values()):
                continue
            category, abbrev = CATALOGUE[phenomenon]
            out.append({"phenomenon": phenomenon, "category": category, "abbrev": abbrev,
                        "n": next((s.n for s in full.values() if s), None),
                        "mcc": {m: s.mcc for m, s in full.items() if s},
                        "accuracy": {m: s.accuracy for m, s in full.items() if s},
                        "hypothesis_only_mcc": {m: s.mcc for m, s in hyp.items() if s}})
        return out

    def categories(self) -> list[dict]:
        """Per category (and ``all``): the mean of its phenomena's zero-shot Matthews correlations per
        model, and how many phenomena each mean covers."""
        table = [row for row in self.zero_shot() if row["mcc"]]
        groups: dict = {}
        for row in table:
            groups.setdefault(row["category"], []).append(row)
        groups["all"] = table
        out = []
        for category, rows in groups.items():
            if not rows:
                continue
            mcc, counts = {}, {}
            for m in self.models:
                values = [row["mcc"][m] for row in rows if m in row["mcc"]]
                if values:
                    mcc[m], counts[m] = float(np.mean(values)), len(values)
            out.append({"category": category, "phenomena": counts, "mcc": mcc})
        return out

    def generalisation(self) -> list[dict]:
        """Per (model, phenomenon) with any cell: the 2x2 matrix as four cells, each naming the part
        trained on, the part tested on and the config split its accuracy comes from (None: no
        predictions for that cell)."""
        out = []
        for m in self.models:
            for phenomenon in _phenomena_in_order({s.phenomenon for s in self.scores}):
                cells = []
                for train, test, sources in CELLS:
                    found = next((s for kind, split in sources
                                  if (s := self.score(m, f"{phenomenon}_{kind}", split)) is not None), None)
                    cells.append({"train": train, "test": test,
                                  "config": found.config if found else None, "split": found.split if found else None,
                                  "accuracy": found.accuracy if found else None, "n": found.n if found else None})
                if any(c["accuracy"] is not None for c in cells):
                    out.append({"model": m, "phenomenon": phenomenon, "cells": cells})
        return out

    def inoculation(self) -> list[dict]:
        """Per (model, phenomenon): accuracy on the ``validation`` split of each ``_inoc_<n>`` config."""
        out = []
        for m in self.models:
            for phenomenon in _phenomena_in_order({s.phenomenon for s in self.scores}):
                curve = {s.size: s.accuracy for s in self.scores
                         if s.model == m and s.phenomenon == phenomenon and s.kind == "inoculation"
                         and s.split == "validation"}
                if curve:
                    out.append({"model": m, "phenomenon": phenomenon, "accuracy": dict(sorted(curve.items()))})
        return out

    # -- output ---------------------------------------------------------------------------------

    def as_dict(self) -> dict:
        return {"models": list(self.models), "zero_shot": self.zero_shot(), "categories": self.categories(),
                "inoculation": [{**row, "accuracy": {str(k): v for k, v in row["accuracy"].items()}}
                                for row in self.inoculation()],
                "generalisation": self.generalisation(), "scores": [s.as_dict() for s in self.scores],
                "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """The report as text: the zero-shot table, the categories, inoculation, the 2x2 matrices,
        every config split, and the notes."""
        lines: list[str] = []
        zero_shot = self.zero_shot()
        with_hyp = any(row["hypothesis_only_mcc"] for row in zero_shot)
        width = max([18 if with_hyp else 10, *(len(m) + 2 for m in self.models)])
        if zero_shot:
            lines += ["Zero-shot diagnostic: Matthews correlation on each phenomenon's validation split "
                      "(the paper's test set); [hyp] = hypothesis-only",
                      f"{'category':<15}{'phenomenon':<23}{'abbrev':<10}{'n':>7}"
                      + "".join(f"{m:>{width}}" for m in self.models)]
            for row in zero_shot:
                cells = []
                for m in self.models:
                    text = _fmt(row["mcc"].get(m))
                    if m in row["hypothesis_only_mcc"]:
                        text += f" [{_fmt(row['hypothesis_only_mcc'][m])}]"
                    cells.append(f"{text:>{width}}")
                lines.append(f"{row['category']:<15}{row['phenomenon']:<23}{row['abbrev']:<10}"
                             f"{row['n'] if row['n'] is not None else '':>7}" + "".join(cells))
            lines += ["", "Per category: mean Matthews correlation of its phenomena (phenomena averaged)",
                      f"{'category':<15}" + "".join(f"{m:>{width}}" for m in self.models)]
            for row in self.categories():
                cells = [_fmt(row["mcc"].get(m)) + (f" ({row['phenomena'][m]})" if m in row["phenomena"] else "")
                         for m in self.models]
                lines.append(f"{row['category']:<15}" + "".join(f"{cell:>{width}}" for cell in cells))
            lines.append("")
        inoculation = self.inoculation()
        if inoculation:
            sizes = sorted({size for row in inoculation for size in row["accuracy"]})
            lines += ["Inoculation: accuracy on the validation split after fine-tuning on <phenomenon>_inoc_<n> "
                      "(n training rows per label)",
                      f"{'model':<{width}}{'phenomenon':<23}" + "".join(f"{'n=' + str(s):>9}" for s in sizes)]
            for row in inoculation:
                lines.append(f"{row['model']:<{width}}{row['phenomenon']:<23}"
                             + "".join(f"{_fmt(row['accuracy'].get(s)):>9}" for s in sizes))
            lines.append("")
        matrices = self.generalisation()
        if matrices:
            lines.append("Cross-distribution generalisation (the paper's Figure 3): accuracy, rows = the part "
                         "trained on, columns = the part tested on; each cell names the config split it is read from")
            for matrix in matrices:
                cells = {(c["train"], c["test"]): c for c in matrix["cells"]}
                lines += ["", f"{matrix['phenomenon']} ({matrix['model']})",
                          f"{'':<19}{'tested on simple':<44}tested on hard"]
                for train in ("simple", "hard"):
                    row = f"trained on {train:<8}"
                    for test in ("simple", "hard"):
                        cell = cells[(train, test)]
                        where = f"{cell['config']}/{cell['split']}" if cell["config"] else "no predictions"
                        row += f"{_fmt(cell['accuracy']) + ' (' + where + ')':<44}"
                    lines.append(row.rstrip())
            lines.append("")
        lines += ["Every config split", f"{'model':<{width}}{'config':<40}{'split':<12}{'n':>7}{'accuracy':>10}{'MCC':>8}"]
        lines += [f"{s.model:<{width}}{s.config:<40}{s.split:<12}{s.n:>7}{s.accuracy:>10.4f}{s.mcc:>8.4f}"
                  for s in self.scores]
        if self.notes:
            lines += ["", "Notes:"] + [f"- {note}" for note in self.notes]
        return lines

    def heatmap(self, path) -> Path:
        """The zero-shot Matthews correlations as a heatmap PNG at ``path``: one row per model, one
        column per phenomenon (grouped by category, the paper's order), colour from -1 to 1, values
        written in the cells. Stable bytes for the same report (no software version in the file)."""
        zero_shot = [row for row in self.zero_shot() if row["mcc"]]
        if not zero_shot:
            raise InvalidParameterError("no predictions on a phenomenon's own config (<phenomenon>, validation "
                                        "split): there is no zero-shot correlation to draw")
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        values = np.array([[row["mcc"].get(m, np.nan) for row in zero_shot] for m in self.models], dtype=float)
        fig, ax = plt.subplots(figsize=(max(6.0, 2.5 + 0.42 * len(zero_shot)), 2.2 + 0.5 * len(self.models)))
        cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")  # grey: no predictions
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=-1, vmax=1, aspect="auto")
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if abs(value) > 0.6 else "black")
        ax.set_xticks(range(len(zero_shot)))
        ax.set_xticklabels([row["abbrev"] for row in zero_shot], rotation=90, fontsize=7)
        ax.set_yticks(range(len(self.models)))
        ax.set_yticklabels(self.models, fontsize=8)
        starts = [0] + [j for j in range(1, len(zero_shot)) if zero_shot[j]["category"] != zero_shot[j - 1]["category"]]
        for start, end in zip(starts, [*starts[1:], len(zero_shot)]):
            if start:
                ax.axvline(start - 0.5, color="black", linewidth=1)
            ax.text((start + end - 1) / 2, -0.6, zero_shot[start]["category"], ha="center", va="bottom", fontsize=7)
        fig.colorbar(image, ax=ax, fraction=0.02, pad=0.01, label="MCC")
        ax.set_title("CURRICULUM zero-shot diagnostic: Matthews correlation", fontsize=10, pad=20)
        fig.tight_layout()
        from split_builders.release.places import write_file

        path = Path(path)
        kind = path.suffix.lower().removeprefix(".") or None
        try:
            # no version stamp in a PNG (the same bytes on every run); other formats take other metadata keys;
            # written as every file resplit writes (never through a link, beside its place then renamed)
            write_file(path, lambda staging: fig.savefig(staging, dpi=100, format=kind, metadata={"Software": None}
                                                         if kind == "png" else None), overwrite=True, flag="--figure")
        except OSError as error:
            raise InvalidParameterError(f"cannot write the figure {str(path)!r}: {error.strerror or error}") from None
        finally:
            plt.close(fig)
        return path


# ---------------------------------------------------------------------------------------------
# Reading predictions
# ---------------------------------------------------------------------------------------------


def read_predictions(path, *, model: str | None = None):
    """A predictions file (module docstring) as a ``pandas.DataFrame`` with columns ``model``,
    ``config``, ``split``, ``prediction``, ``label`` and ``line`` (the row's line or record number,
    for messages); ``model`` names the rows without a ``model`` column (default: the file's name)."""
    import pyarrow as pa

    from loading_scripts.files import read_table
    from loading_scripts.tables import arrow_table

    path = Path(path)
    if path.is_dir():
        raise SourceLoadError(f"predictions file {str(path)!r} is a folder; give the file of predictions")
    if not path.is_file():
        raise SourceLoadError(f"predictions file {str(path)!r} does not exist")
    try:
        with warnings.catch_warnings():  # a column mixing ids and names is reported below, in one line
            warnings.simplefilter("ignore")
            frame = arrow_table(read_table(path)).to_pandas()
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as error:
        raise InvalidParameterError(f"{path}: cannot read it as one table ({str(error).splitlines()[0]}); every row "
                                    "must give a column values of one type (label names or class ids, not both)") from None
    first_line = 2 if Path(path.name.removesuffix(".gz")).suffix.lower() in (".csv", ".tsv") else 1
    return _frame(frame, where=str(path), model=model or _file_model(path), first_line=first_line)


def _file_model(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".csv", ".tsv", ".jsonl", ".json", ".parquet"):
        name = name.removesuffix(suffix)
    return name or "model"


def _frame(frame, *, where: str, model: str, first_line: int = 1):
    """The predictions as the one internal table (columns checked; line numbers added)."""
    import pandas as pd

    frame = frame.copy()
    columns = list(frame.columns)
    if "config" not in columns and "phenomenon" not in columns:
        raise InvalidParameterError(f"{where} has no 'config' (or 'phenomenon') column; columns: {_names(columns)}; "
                                    "every row needs config, prediction and label (optional: split, model)")
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise InvalidParameterError(f"{where} has no {' or '.join(map(repr, missing))} column; columns: "
                                    f"{_names(columns)}; every row needs config, prediction and label "
                                    "(optional: split, model)")
    if frame.empty:
        raise InvalidParameterError(f"{where} holds no predictions")
    for column in ("config", "phenomenon", "split", "model", *REQUIRED):
        if column in columns:  # plain Python values (Arrow-backed text is slow to walk row by row)
            frame[column] = frame[column].astype(object)
    frame["line"] = np.arange(len(frame)) + first_line
    if "config" not in columns:
        frame["config"] = frame["phenomenon"]
    for column in ("config", *REQUIRED):
        empty = frame[column].isna() | (frame[column].astype(str).str.strip() == "")
        if empty.any():
            raise InvalidParameterError(f"{where} line {int(frame['line'][empty].iloc[0])}: no {column} "
                                        f"({int(empty.sum())} row(s) without one)")
    frame["config"] = _each_distinct(frame["config"], lambda c: str(c).strip())
    if "phenomenon" in columns and "config" in columns:
        parsed = pd.Series(_each_distinct(frame["config"], lambda c: _parse_config(c)[0] if _known(c) else None),
                           index=frame.index, dtype=object)
        wrong = parsed.notna() & (parsed != frame["phenomenon"].astype(str).str.strip())
        if wrong.any():
            row = frame[wrong].iloc[0]
            raise InvalidParameterError(f"{where} line {int(row['line'])}: config {row['config']!r} is not a config "
                                        f"of phenomenon {row['phenomenon']!r}")
    if "split" not in columns:
        frame["split"] = None
    frame["split"] = _each_distinct(frame["split"], lambda s: None if _missing(s) else str(s).strip())
    if "model" not in columns:
        frame["model"] = model
    frame["model"] = _each_distinct(frame["model"], lambda m: model if _missing(m) else str(m).strip())
    frame["where"] = where
    return pd.DataFrame(frame[["model", "config", "split", "prediction", "label", "line", "where"]])


def _each_distinct(values, function) -> list:
    """``function(value)`` for every value of a column, computed once per distinct value."""
    done: dict = {}
    out = []
    for value in (values.to_numpy(dtype=object) if hasattr(values, "to_numpy") else values):  # one C pass
        try:
            key = (type(value), value) if value == value else (type(value), "nan")  # NaN is not equal to itself
            if key not in done:
                done[key] = function(value)
            out.append(done[key])
        except (TypeError, ValueError):  # unhashable (a list in a JSON cell): no cache
            out.append(function(value))
    return out


def _missing(value) -> bool:
    """None, NaN (pandas' missing value) or blank text."""
    return value is None or (isinstance(value, float) and np.isnan(value)) or not str(value).strip()


def _names(columns) -> str:
    return ", ".join(repr(str(c)) for c in columns) or "none"


def _from_lists(mapping: dict, *, model: str):
    """``{config: {"predictions": [...], "labels": [...], "split": ...}}`` as rows."""
    import pandas as pd

    rows = []
    for config, entry in mapping.items():
        if not isinstance(entry, dict) or "predictions" not in entry or "labels" not in entry:
            raise InvalidParameterError(f"config {config!r}: give {{'predictions': [...], 'labels': [...]}} "
                                        "(optional 'split')")
        predictions, labels = list(entry["predictions"]), list(entry["labels"])
        if len(predictions) != len(labels):
            raise InvalidParameterError(f"config {config!r}: {len(predictions)} predictions for {len(labels)} labels")
        rows += [{"config": config, "split": entry.get("split"), "prediction": p, "label": y}
                 for p, y in zip(predictions, labels)]
    return _frame(pd.DataFrame(rows, columns=["config", "split", "prediction", "label"]), where="predictions",
                  model=model)


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


def curriculum_report(predictions, *, model: str | None = None) -> CurriculumReport:
    """The report of predictions on a CURRICULUM release (module docstring).

    Parameters
    ----------
    predictions : path, list of paths, pandas.DataFrame, list of dict or dict
        A predictions file (or several: their rows are pooled, each file's model named by its ``model``
        column or its file name), a table of the same columns, or per-config lists
        ``{config: {"predictions": [...], "labels": [...]}}``.
    model : str, optional
        The name of a model whose rows carry no ``model`` column (default: the file's name, or
        ``"model"``).

    Raises
    ------
    InvalidParameterError
        A missing column, an empty value, an unknown phenomenon or config, a split the config does not
        evaluate on, labels or predictions outside the phenomenon's label set, or names mixed with
        class ids; the message names the file and line.
    """
    import pandas as pd

    frame = _as_frame(predictions, model=model)
    first = frame.drop_duplicates("config")  # each distinct config parsed once, named by its first line
    parsed = {c: _parse_config(c, where=w, line=ln)
              for c, w, ln in zip(first["config"].tolist(), first["where"].tolist(), first["line"].tolist())}
    configs = frame["config"].tolist()
    frame["phenomenon"] = [parsed[c][0] for c in configs]
    frame["kind"] = [parsed[c][1] for c in configs]
    frame["size"] = pd.Series([parsed[c][2] for c in configs], index=frame.index, dtype=object)
    first = frame.drop_duplicates(["config", "split"])
    given = lambda split: None if _missing(split) else split  # noqa: E731 (None, NaN: no split given)
    checked = {(c, given(s)): _check_split(given(s), k, c, w, ln) for c, s, k, w, ln in
               zip(*(first[column].tolist() for column in ("config", "split", "kind", "where", "line")))}
    frame["split"] = [checked[(c, given(s))] for c, s in zip(configs, frame["split"].tolist())]
    notes: list[str] = []
    parts = []
    for phenomenon, rows in frame.groupby("phenomenon", sort=False):
        parts.append(_normalised(rows, phenomenon, notes))
    frame = pd.concat(parts)
    models = list(dict.fromkeys(frame["model"]))
    scores = []
    for (m, config, split), rows in frame.groupby(["model", "config", "split"], sort=False):
        scores.append(_score(m, config, split, rows, notes))
    order = {name: i for i, name in enumerate(_phenomena_in_order(set(frame["phenomenon"])))}
    scores.sort(key=lambda s: (models.index(s.model), order[s.phenomenon], _kind_rank(s.kind, s.size), s.split))
    return CurriculumReport(models=models, scores=scores, notes=notes)


def _as_frame(predictions, *, model: str | None):
    import pandas as pd

    if isinstance(predictions, (str, Path)):
        return read_predictions(predictions, model=model)
    if isinstance(predictions, pd.DataFrame):
        return _frame(predictions, where="predictions", model=model or "model")
    if isinstance(predictions, dict):
        return _from_lists(predictions, model=model or "model")
    if isinstance(predictions, (list, tuple)) and predictions and all(isinstance(p, (str, Path)) for p in predictions):
        names = [_file_model(Path(p)) for p in predictions]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidParameterError(f"several predictions files are named {twice[0]!r}: rename them (a file's "
                                        "name is its model's name unless a model column says otherwise)")
        frames = [read_predictions(p, model=model) for p in predictions]
        return pd.concat(frames, ignore_index=True)
    if isinstance(predictions, (list, tuple)) and all(isinstance(p, dict) for p in predictions):
        return _frame(pd.DataFrame(list(predictions)), where="predictions", model=model or "model")
    raise InvalidParameterError("predictions must be a file, a list of files, a pandas.DataFrame, a list of rows or "
                                f"{{config: {{'predictions': [...], 'labels': [...]}}}}, got {type(predictions).__name__}")


def _known(config: str) -> bool:
    try:
        _parse_config(config)
    except InvalidParameterError:
        return False
    return True


def _parse_config(config: str, *, where: str = "predictions", line: int | None = None) -> tuple:
    """``(phenomenon, kind, size)`` of a config name; kind is ``phenomenon``, ``hypothesis_only``,
    ``inoculation`` (size n), ``simple``, ``hard``, ``simple_to_hard`` or ``hard_to_simple``."""
    from loading_scripts.curriculum import CATALOGUE

    if config in CATALOGUE:
        return config, "phenomenon", None
    match = _INOCULATION.match(config)
    if match and match["phenomenon"] in CATALOGUE:
        return match["phenomenon"], "inoculation", int(match["size"])
    for suffix, kind in KINDS.items():
        if config.endswith(suffix) and config[: -len(suffix)] in CATALOGUE:
            return config[: -len(suffix)], kind, None
    at = f"{where} line {line}: " if line is not None else ""
    base = match["phenomenon"] if match else next((config[: -len(s)] for s in KINDS if config.endswith(s)), config)
    hint = " (the paper's 'atomic' is released as 'defeasible')" if base == "atomic" else ""
    named = f" (config {config!r})" if base != config else ""
    raise InvalidParameterError(f"{at}unknown phenomenon {base!r}{named}{hint}; CURRICULUM's phenomena: "
                                f"{', '.join(CATALOGUE)}; configs are <phenomenon>, <phenomenon>_hypothesis_only, "
                                "<phenomenon>_inoc_<n>, <phenomenon>_simple, _hard, _simple_to_hard, _hard_to_simple")


def _check_split(split, kind: str, config: str, where: str, line: int) -> str:
    allowed = EVALUATION_SPLITS.get(kind, ("validation",))
    if _missing(split):
        return allowed[0]
    if split not in allowed:
        raise InvalidParameterError(f"{where} line {line}: config {config!r} is evaluated on its "
                                    f"{' or '.join(allowed)} split, not {split!r}")
    return split


def _value(value):
    """A label or prediction as a class id (int) or a label name (str)."""
    from split_builders.evaluation.outcomes import whole_number

    if isinstance(value, str):
        number = whole_number(value.strip())
        return number if number is not None else value.strip()
    return whole_number(value)


def _normalised(rows, phenomenon: str, notes: list):
    """One phenomenon's labels and predictions in one vocabulary: class ids as they are; names in the
    phenomenon's label set (3-way names folded on a 2-way phenomenon), counted in ``notes``."""
    import pandas as pd

    from loading_scripts.curriculum import infer_label_set
    from loading_scripts.recast import normalise_label

    rows = rows.copy()
    converted = {}
    for column in ("label", "prediction"):
        values = pd.Series(_each_distinct(rows[column], _value), index=rows.index, dtype=object)
        bad = values.isna()
        if bad.any():
            row = rows[bad].iloc[0]
            shown = row[column].tolist() if hasattr(row[column], "tolist") else row[column]
            raise InvalidParameterError(f"{row['where']} line {int(row['line'])}: {column} {shown!r} is neither a "
                                        "label name nor a class id")
        converted[column] = values
    kinds = {type(v) for column in converted.values() for v in dict.fromkeys(column)}
    if kinds == {int, str}:
        raise InvalidParameterError(f"{rows['where'].iloc[0]}: phenomenon {phenomenon!r} mixes label names and class "
                                    "ids; give labels and predictions both as names or both as ids")
    if kinds == {int}:
        for column, values in converted.items():
            rows[column] = values.astype(np.int64)
        return rows
    gold = sorted(set(converted["label"]))
    try:
        label_set = infer_label_set(gold)
    except InvalidParameterError:
        raise InvalidParameterError(f"{rows['where'].iloc[0]}: the labels of {phenomenon!r} ({', '.join(gold)}) are "
                                    "not NLI label names (entailed / not-entailed or entailment / neutral / "
                                    "contradiction); give names or class ids") from None
    folded = {}
    for column, values in converted.items():
        mapping = {}
        for value in dict.fromkeys(values):
            try:
                mapping[value] = normalise_label(value, label_set)
            except InvalidParameterError:
                row = rows[values == value].iloc[0]
                raise InvalidParameterError(
                    f"{row['where']} line {int(row['line'])}: {column} {value!r} is not a label of {phenomenon!r} "
                    f"({', '.join(label_set)})" + ("; a 3-way phenomenon cannot take 2-way names"
                                                   if len(label_set) == 3 else "")) from None
        rows[column] = values.map(mapping)
        folded[column] = int((rows[column] != values).sum())
    if phenomenon == MONOTONICITY:
        notes.append(f"{MONOTONICITY}: its released train split is labelled entailment/neutral and its validation "
                     "split entailed/not-entailed; resplit reads the phenomenon as 2-way (entailment -> entailed, "
                     "neutral and contradiction -> not-entailed) and so does this report, as CURRICULUM's zero-shot "
                     f"script folds a 3-way model's predictions ({folded['label']} gold label(s) and "
                     f"{folded['prediction']} prediction(s) folded here)")
    elif folded["label"] or folded["prediction"]:
        notes.append(f"{phenomenon}: 3-way names folded into its 2-way labels (entailment -> entailed, neutral and "
                     f"contradiction -> not-entailed): {folded['label']} gold label(s), {folded['prediction']} "
                     "prediction(s)")
    return rows


def _score(model: str, config: str, split: str, rows, notes: list) -> Score:
    from sklearn.metrics import matthews_corrcoef

    labels, predictions = _array(rows["label"]), _array(rows["prediction"])
    classes = len(set(labels.tolist()) | set(predictions.tolist()))
    with warnings.catch_warnings():  # one class only: scikit-learn warns and returns 0
        warnings.simplefilter("ignore")
        mcc = float(matthews_corrcoef(labels, predictions))
    if classes == 1:
        notes.append(f"{model} {config}/{split}: labels and predictions are all one class; the Matthews correlation "
                     "is undefined and reported as 0 (scikit-learn's convention)")
    elif len(set(predictions.tolist())) == 1:
        notes.append(f"{model} {config}/{split}: every prediction is {predictions[0].item()!r}; the Matthews "
                     "correlation is 0")
    first = rows.iloc[0]
    return Score(model=model, config=config, split=split, phenomenon=first["phenomenon"], kind=first["kind"],
                 size=None if first["size"] is None or first["size"] != first["size"] else int(first["size"]),
                 n=len(rows), accuracy=float(np.mean(labels == predictions)), mcc=mcc, classes=classes)


def _array(column) -> np.ndarray:
    """Class ids as int64, label names as str (a column of several phenomena is object-typed, which
    scikit-learn would not read as class labels)."""
    values = column.to_numpy(dtype=object)
    return values.astype(np.int64 if all(isinstance(v, int) for v in values) else str)


def _kind_rank(kind: str, size) -> tuple:
    order = ("phenomenon", "hypothesis_only", "inoculation", "simple", "hard", "simple_to_hard", "hard_to_simple")
    return order.index(kind), size or 0


def _phenomena_in_order(names) -> list[str]:
    from loading_scripts.curriculum import CATALOGUE

    return [p for p in CATALOGUE if p in names]


def _fmt(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
