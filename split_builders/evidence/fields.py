"""The one resolver of fields: which released columns are the text, the query, the label, the target
program (and its language), the group and the signals, for any rows evidence reads.

:func:`resolve_fields` returns a :class:`~split_builders.contracts.Fields` for a build, a release, a plain
dataset folder or a Hub dataset alike: the method's declaration where the release records one
(``resplit.fields``), completed with what older declarations lack (the program language, the method's
signal kinds); otherwise one inference from the columns and the provenance, for foreign datasets and
releases older than the declarations:

- **target**: the field the provenance names as the target (likelihood's ``--target-field``; ``target`` where
  the signal is over programs), else a text column of SQL queries (Spider's ``query``);
- **text**: the fields the provenance records (likelihood's prompt and query fields, PVI's text fields), else
  the string columns (and lists of strings) less ``source_id``, the labels, the signals, the target and the
  group, and less categories (few distinct values, or serialised JSON), except that a column named as text
  usually is (``TEXT_NAMES``) always counts; a CheckList release's ``examples``;
- **query**: the recorded query field, else the first text field named like one (``QUERY_NAMES``), else the
  last of several text fields;
- **label**: the recorded label field, else ``label`` / ``labels`` / ``gold_label``;
- **group**: ``parameters.group_field``; **signals**: the recorded method's ``signal_columns`` and their kinds;
- **task**: behavioural (a CheckList release, or test outcomes without a label), semantic parsing (a target),
  classification (a label), else text; **program language**: the recorded one, else guessed from the programs;
  **harness task**: the recorded one, else the task's (:meth:`~split_builders.contracts.HarnessTask.for_task`).

Every view (audit, diagnostics, probe), the harness export and ``resplit show`` read this one answer.
"""

from __future__ import annotations

from split_builders.contracts import SIGNAL_KINDS, Fields, HarnessTask
from split_builders.errors import InvalidParameterError

LABEL_NAMES = ("label", "labels", "gold_label")
QUERY_NAMES = ("hypothesis", "question", "query", "input", "sentence2", "utterance")
PASSED_COLUMNS = ("passed", "pass")
CATEGORICAL_VALUES = 100  # a string column with at most this many distinct values ...
CATEGORICAL_SHARE = 0.10  # ... that are at most this share of its rows is a category, not text
# Columns of these names are text whatever their values (a hypothesis template repeated on every row is still text).
TEXT_NAMES = ("premise", "hypothesis", "question", "passage", "context", "sentence", "sentence1", "sentence2", "text",
              "input", "query", "utterance", "document", "claim", "evidence", "answer_text")
SAMPLE = 400  # rows read to recognise SQL queries or guess a program language


class NoTextError(InvalidParameterError):
    """The rows have no column the evidence can compare as text."""


def is_text_type(kind) -> bool:
    """A string column, or a (nested) list of strings (a CheckList test case's examples)."""
    import pyarrow as pa

    while pa.types.is_list(kind) or pa.types.is_large_list(kind):
        kind = kind.value_type
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def is_numeric_type(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_integer(kind) or pa.types.is_floating(kind)


def recorded_names(record: dict, *paths) -> list:
    """The column names a release's provenance gives at ``paths`` (dotted), in order, without repeats."""
    names = []
    for path in paths:
        value = record
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        values = value if isinstance(value, (list, tuple)) else [value]
        names += [v for v in values if isinstance(v, str) and v]
    return list(dict.fromkeys(names))


def method_signal_columns(record: dict) -> dict:
    """``{column: kind}`` of the signal columns the recorded method declares (empty for a foreign dataset)."""
    if not (record or {}).get("method"):
        return {}
    from split_builders.registry import registry

    method = registry().get(record.get("method"))
    return {c: k for c, k in (getattr(method, "signal_columns", None) or {}).items() if k in SIGNAL_KINDS}


def recorded_language(record: dict) -> str | None:
    """The target program language the provenance records (TMCD's signal, likelihood's parameters)."""
    record = record or {}
    signal, parameters = record.get("signal") or {}, record.get("parameters") or {}
    for value in (signal.get("target_language"), (signal.get("atom_constraint") or {}).get("target_language"),
                  parameters.get("target_language"), parameters.get("atoms")):
        if isinstance(value, str) and value:
            return value
    return None


def categorical(column) -> bool:
    """Whether a string column holds categories rather than text: few distinct values (at most
    ``CATEGORICAL_VALUES``, each on ``1 / CATEGORICAL_SHARE`` rows on average), or serialised JSON
    (every value an object, a list or ``null``: metadata)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return False
    filled = len(column) - column.null_count
    if not filled:
        return True
    values = pc.unique(column).drop_null()
    if len(values) <= CATEGORICAL_VALUES and len(values) <= CATEGORICAL_SHARE * filled:
        return True
    return bool(pc.all(pc.match_substring_regex(values, r"^\s*(\{|\[|null\s*$)")).as_py())


def resolve_fields(table, record: dict | None = None, *, requested=None, where: str = "the release") -> Fields:
    """The :class:`~split_builders.contracts.Fields` of ``table`` (a ``pyarrow.Table`` of the rows), every
    column it names present in ``table``: the declaration ``record`` (a release's ``resplit:`` provenance)
    holds, else one inference (the module's docstring). ``requested`` (``--fields``) names the text fields
    instead, each a text column of ``table``, or refuses in one line."""
    from split_builders.errors import FieldError

    record = record or {}
    columns = [c for c in table.column_names if c != "__rows__"]
    present = lambda names: [n for n in names if n in columns]  # noqa: E731
    first = lambda names: next(iter(present(names)), None)  # noqa: E731
    declared = Fields.from_record(record)
    if declared is not None:
        fields = _declared(declared, table, record, columns, first)
    else:
        fields = _inferred(table, record, columns, first)
    if requested:
        texts = [c for c in columns if is_text_type(table.schema.field(c).type)]
        for name in requested:
            if name not in texts:
                raise FieldError(name, texts, role="text", source=where)
        fields.text = tuple(f for f in dict.fromkeys(requested) if f != fields.target)
    if fields.target is not None and fields.program_language is None:
        fields.program_language = recorded_language(record) or _guess_language(table.column(fields.target))
    if fields.harness is None:  # a release older than the declaration: what its task is scored as
        fields.harness = HarnessTask.for_task(fields.task)
    return fields


def _declared(declared: Fields, table, record, columns, first) -> Fields:
    """A recorded declaration restricted to the columns present; text inferred where none of it is
    present, the program language and signal kinds of the method where an older record lacks them."""
    import dataclasses

    target = declared.target if declared.target in columns else None
    text = tuple(c for c in declared.text if c in columns and c != target)
    if not any(is_text_type(table.schema.field(c).type) for c in text):
        text = _inferred(table, record, columns, first).text
    signals = declared.signals or method_signal_columns(record)
    return dataclasses.replace(
        declared, text=text, target=target,
        query=declared.query if declared.query in columns else None,
        label=declared.label if declared.label in columns else "label" if declared.label and "label" in columns
        else None,  # a declared label is released as `label`
        group=declared.group if declared.group in columns else first(recorded_names(record, "parameters.group_field")),
        signals={c: k for c, k in signals.items() if c in columns})


def _inferred(table, record, columns, first) -> Fields:
    """The inference for rows without a declaration (the module's docstring)."""
    text_type = lambda c: is_text_type(table.schema.field(c).type)  # noqa: E731
    behavioural = record.get("method") == "behavioural"
    target = first(recorded_names(record, "signal.fields.target", "parameters.target_field"))
    if target is None and "target" in columns and (recorded_names(record, "signal.target_language")
                                                   or isinstance((record.get("signal") or {}).get("target_language"), str)):
        target = "target"
    group = first(recorded_names(record, "parameters.group_field"))
    label = first(recorded_names(record, "signal.fields.label", "signal.label_field", "parameters.label_field")) \
        or first(LABEL_NAMES)
    signals = {c: k for c, k in method_signal_columns(record).items() if c in columns}
    if behavioural and "examples" in columns:
        text = ["examples"]
    else:
        text = [f for f in recorded_names(record, "signal.fields.prompt", "signal.fields.query", "signal.text_fields",
                                          "parameters.text_fields", "parameters.prompt_field",
                                          "parameters.query_field")
                if f in columns and f != target and text_type(f)]
    if not text:
        excluded = {"source_id", *LABEL_NAMES, *signals, target, group, label}
        text = [c for c in columns if c not in excluded and text_type(c)
                and (c in TEXT_NAMES or not categorical(table.column(c)))]
    if target is None and not behavioural:
        target = next((t for t in text if _looks_like_sql(table.column(t))), None)
        text = [t for t in text if t != target]
    recorded_query = [c for c in recorded_names(record, "signal.fields.query", "parameters.query_field") if c in text]
    query = next(iter(recorded_query), None) or next((c for c in QUERY_NAMES if c in text), None)
    if query is None and (len(text) > 1 or behavioural):
        query = text[-1] if text else None
    passed = any(c in columns for c in PASSED_COLUMNS)
    task = ("behavioural" if behavioural else "semantic_parsing" if target else "classification" if label
            else "behavioural" if passed else "text")
    return Fields(task, text=tuple(text), query=query, label=label, target=target, group=group, signals=signals)


def _looks_like_sql(column) -> bool:
    """A plain dataset's text column of SQL queries (a target program, not text)."""
    from split_builders.evidence.sql_hardness import looks_like_sql

    return looks_like_sql(column.slice(0, SAMPLE).to_pylist())


def _guess_language(column) -> str | None:
    from loading_scripts.compositional import guess_target_language

    sample = [t for t in column.slice(0, 200).to_pylist() if isinstance(t, str)]
    return guess_target_language(sample) if sample else None
