"""Spider's SQL hardness categories: ``easy``, ``medium``, ``hard`` and ``extra`` (extra hard).

The rules are those of Spider's official evaluation script (``evaluation.py`` of taoyds/spider:
``count_component1``, ``count_component2``, ``count_others``, ``Evaluator.eval_hardness``), applied to
our own parse of the query: the ``sqlparse`` tokens of :func:`split_builders.signals.programs.atoms.sql_tokens`
(multi-word keywords such as ``group by`` and ``not like`` split into words, as Spider's tokenizer has
them) read by a schema-free recursive-descent parser that builds the same structure as Spider's
``process_sql.get_sql`` (column names instead of schema ids; hardness never looks at columns).

For one query (not recursing into sub-queries, as the script does not):

* **component 1**: one each for a non-empty ``where``, ``group by``, ``order by``, ``limit``; one per
  join (table units of ``from`` less one; a sub-query in ``from`` is a table unit); one per ``or``
  and per ``like`` condition in the ``on``, ``where`` and ``having`` conditions;
* **component 2**: the nested queries: sub-queries that are values of an ``on`` / ``where`` /
  ``having`` condition, plus an ``intersect``, ``union`` or ``except`` part;
* **others**: one each for more than one aggregation, more than one selected column, more than one
  ``where`` condition, more than one ``group by`` column. The script counts as "aggregations" the
  aggregated ``select`` items, the negated (``not``) ``where`` conditions, aggregated ``group by``
  columns, the aggregated columns of ``order by``, and every negated condition and every ``and`` /
  ``or`` of ``having`` (its ``count_agg`` reads the first element of each entry); these quirks are
  kept so that categories equal the script's;
* ``easy``: c1 <= 1, others 0, c2 0; ``medium``: (others <= 2, c1 <= 1, c2 0) or (c1 <= 2,
  others < 2, c2 0); ``hard``: (others > 2, c1 <= 2, c2 0) or (2 < c1 <= 3, others <= 2, c2 0) or
  (c1 <= 1, others 0, c2 <= 1); ``extra``: everything else.

On Spider's dev set this gives the script's 248 easy, 446 medium, 174 hard and 166 extra queries.
"""

from __future__ import annotations

from typing import Sequence

from split_builders.errors import UnparseableProgramError

HARDNESS = ("easy", "medium", "hard", "extra")
CLAUSE_KEYWORDS = ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except")
JOIN_KEYWORDS = ("join", "on", "as")
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
SQL_OPS = ("intersect", "union", "except")
ORDER_OPS = ("desc", "asc")
JOIN_MODIFIERS = ("left", "right", "inner", "outer", "cross", "natural", "full")
_LIKE = WHERE_OPS.index("like")


def tokens(sql: str) -> list[str]:
    """The query's ``sqlparse`` tokens, lower case, multi-word keywords split into words, ``<>`` as ``!=``."""
    from split_builders.signals.programs.atoms import sql_tokens

    out = []
    for token in sql_tokens(sql):
        if token[:1] in ("'", '"', "`"):
            out.append(token)
        elif token == "<>":
            out.append("!=")
        else:
            out.extend(token.split())
    return [t for t in out if not t.startswith("--")]


class _Parser:
    """Spider's ``process_sql`` parser without a schema: the same walk over the tokens, the same
    structure (``select``, ``from`` with ``table_units`` and ``conds``, ``where``, ``groupBy``,
    ``having``, ``orderBy``, ``limit``, ``intersect`` / ``union`` / ``except``)."""

    def __init__(self, toks: list[str], sql: str):
        self.toks = toks
        self.sql = sql

    def fail(self, at: int, expected: str):
        found = self.toks[at] if at < len(self.toks) else "the end"
        raise UnparseableProgramError(f"SQL query {self.sql!r}: expected {expected} at token {at} ({found!r})")

    def at(self, idx: int) -> str | None:
        return self.toks[idx] if idx < len(self.toks) else None

    def expect(self, idx: int, token: str) -> int:
        if self.at(idx) != token:
            self.fail(idx, repr(token))
        return idx + 1

    def column(self, idx: int) -> tuple[int, str]:
        token = self.at(idx)
        if token is None or token in CLAUSE_KEYWORDS or token in ("(", ")", ","):
            self.fail(idx, "a column")
        if self.at(idx + 1) == "." and self.at(idx + 2) is not None:
            return idx + 3, f"{token}.{self.toks[idx + 2]}"
        return idx + 1, token

    def col_unit(self, idx: int):
        block = distinct = False
        if self.at(idx) == "(":
            block, idx = True, idx + 1
        if self.at(idx) in AGG_OPS:
            agg = AGG_OPS.index(self.toks[idx])
            idx = self.expect(idx + 1, "(")
            if self.at(idx) == "distinct":
                distinct, idx = True, idx + 1
            idx, name = self.column(idx)
            idx = self.expect(idx, ")")
            return idx, (agg, name, distinct)
        if self.at(idx) == "distinct":
            distinct, idx = True, idx + 1
        idx, name = self.column(idx)
        if block:
            idx = self.expect(idx, ")")
        return idx, (0, name, distinct)

    def val_unit(self, idx: int):
        block = False
        if self.at(idx) == "(":
            block, idx = True, idx + 1
        idx, first = self.col_unit(idx)
        op, second = 0, None
        if self.at(idx) in UNIT_OPS:
            op = UNIT_OPS.index(self.toks[idx])
            idx, second = self.col_unit(idx + 1)
        if block:
            idx = self.expect(idx, ")")
        return idx, (op, first, second)

    def value(self, idx: int):
        block = False
        if self.at(idx) == "(":
            block, idx = True, idx + 1
        token = self.at(idx)
        if token is None:
            self.fail(idx, "a value")
        if token == "select":
            idx, value = self.query(idx)
        elif token[:1] in ("'", '"', "`"):
            value, idx = token, idx + 1
        else:
            try:
                value, idx = float(token), idx + 1
            except ValueError:  # a column (or an expression): up to the next delimiter
                end = idx
                while end < len(self.toks) and self.toks[end] not in (",", ")", "and") \
                        and self.toks[end] not in CLAUSE_KEYWORDS and self.toks[end] not in JOIN_KEYWORDS:
                    end += 1
                value, idx = " ".join(self.toks[idx:end]), end
        if block:
            idx = self.expect(idx, ")")
        return idx, value

    def condition(self, idx: int) -> tuple[int, list]:
        conds = []
        while idx < len(self.toks):
            idx, unit = self.val_unit(idx)
            negated = False
            if self.at(idx) == "not":
                negated, idx = True, idx + 1
            if self.at(idx) not in WHERE_OPS:
                self.fail(idx, "a comparison operator")
            op = WHERE_OPS.index(self.toks[idx])
            idx += 1
            second = None
            if op == WHERE_OPS.index("between"):
                idx, first = self.value(idx)
                idx = self.expect(idx, "and")
                idx, second = self.value(idx)
            else:
                idx, first = self.value(idx)
            conds.append((negated, op, unit, first, second))
            token = self.at(idx)
            if token is not None and (token in CLAUSE_KEYWORDS or token in (")", ";") or token in JOIN_KEYWORDS):
                break
            if token in ("and", "or"):
                conds.append(token)
                idx += 1
        return idx, conds

    def select(self, idx: int):
        idx = self.expect(idx, "select")
        distinct = False
        if self.at(idx) == "distinct":
            distinct, idx = True, idx + 1
        units = []
        while idx < len(self.toks) and self.toks[idx] not in CLAUSE_KEYWORDS:
            agg = 0
            if self.toks[idx] in AGG_OPS:
                agg, idx = AGG_OPS.index(self.toks[idx]), idx + 1
            idx, unit = self.val_unit(idx)
            units.append((agg, unit))
            if self.at(idx) == ",":
                idx += 1
            elif self.at(idx) not in CLAUSE_KEYWORDS and idx < len(self.toks):
                self.fail(idx, "',' or a clause")
        return idx, (distinct, units)

    def from_(self, start: int):
        if "from" not in self.toks[start:]:
            self.fail(start, "'from'")
        idx = self.toks.index("from", start) + 1
        units, conds = [], []
        while idx < len(self.toks):
            block = False
            if self.toks[idx] == "(":
                block, idx = True, idx + 1
            if self.at(idx) == "select":
                idx, sub = self.query(idx)
                units.append(("sql", sub))
            else:
                while self.at(idx) in JOIN_MODIFIERS:
                    idx += 1
                if self.at(idx) in ("join", ","):
                    idx += 1
                    while self.at(idx) in JOIN_MODIFIERS:  # ", left join" does not occur; harmless
                        idx += 1
                idx, name = self.column(idx)
                if self.at(idx) == "as":
                    idx += 2
                elif self.at(idx) is not None and self.toks[idx] not in CLAUSE_KEYWORDS + JOIN_KEYWORDS \
                        + JOIN_MODIFIERS + (")", ";", ","):
                    idx += 1  # an alias without "as"
                units.append(("table_unit", name))
            if self.at(idx) == "on":
                idx, more = self.condition(idx + 1)
                if conds:
                    conds.append("and")
                conds.extend(more)
            if block:
                idx = self.expect(idx, ")")
            if self.at(idx) in CLAUSE_KEYWORDS or self.at(idx) in (")", ";"):
                break
        if not units:
            self.fail(idx, "a table after 'from'")
        return idx, units, conds

    def query(self, idx: int):
        start = idx
        block = False
        if self.at(idx) == "(":
            block, idx = True, idx + 1
        end, units, conds = self.from_(start)
        sql = {"from": {"table_units": units, "conds": conds}}
        _, sql["select"] = self.select(idx)
        idx = end
        sql["where"], sql["groupBy"], sql["having"], sql["orderBy"], sql["limit"] = [], [], [], [], None
        if self.at(idx) == "where":
            idx, sql["where"] = self.condition(idx + 1)
        if self.at(idx) == "group":
            idx = self.expect(idx + 1, "by")
            while idx < len(self.toks) and not (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")):
                idx, unit = self.col_unit(idx)
                sql["groupBy"].append(unit)
                if self.at(idx) != ",":
                    break
                idx += 1
        if self.at(idx) == "having":
            idx, sql["having"] = self.condition(idx + 1)
        if self.at(idx) == "order":
            idx = self.expect(idx + 1, "by")
            kind, units = "asc", []
            while idx < len(self.toks) and not (self.toks[idx] in CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")):
                idx, unit = self.val_unit(idx)
                units.append(unit)
                if self.at(idx) in ORDER_OPS:
                    kind, idx = self.toks[idx], idx + 1
                if self.at(idx) != ",":
                    break
                idx += 1
            sql["orderBy"] = (kind, units)
        if self.at(idx) == "limit":
            if self.at(idx + 1) is None:
                self.fail(idx + 1, "a limit")
            sql["limit"], idx = self.toks[idx + 1], idx + 2
        while self.at(idx) == ";":
            idx += 1
        if block:
            idx = self.expect(idx, ")")
        while self.at(idx) == ";":
            idx += 1
        for op in SQL_OPS:
            sql[op] = None
        if self.at(idx) in SQL_OPS:
            op = self.toks[idx]
            idx, sql[op] = self.query(idx + 1)
        return idx, sql


def parse(sql: str) -> dict:
    """The structure of ``sql`` as Spider's ``process_sql.get_sql`` builds it (column names in place
    of schema ids). Raises :class:`~split_builders.errors.UnparseableProgramError` on a query the
    parser cannot read; tokens after a complete query are ignored, as the script ignores them
    (``ORDER BY count(*) >= 5`` in Spider's train set)."""
    if not isinstance(sql, str) or not sql.strip():
        raise UnparseableProgramError(f"SQL query {sql!r} is empty")
    toks = tokens(sql)
    parser = _Parser(toks, sql)
    return parser.query(0)[1]


def _has_agg(unit) -> bool:
    return unit[0] != 0  # the script's has_agg: the first element, whatever the entry is


def _count_agg(units) -> int:
    return sum(1 for unit in units if _has_agg(unit))


def _conditions(sql: dict) -> list:
    return sql["from"]["conds"] + sql["where"] + sql["having"]


def count_component1(sql: dict) -> int:
    """Where, group by, order by, limit, joins, ``or`` and ``like`` (Spider's ``count_component1``)."""
    count = int(len(sql["where"]) > 0) + int(len(sql["groupBy"]) > 0) + int(len(sql["orderBy"]) > 0)
    count += int(sql["limit"] is not None)
    if sql["from"]["table_units"]:
        count += len(sql["from"]["table_units"]) - 1
    connectives = sql["from"]["conds"][1::2] + sql["where"][1::2] + sql["having"][1::2]
    count += sum(1 for token in connectives if token == "or")
    units = sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]
    return count + sum(1 for unit in units if unit[1] == _LIKE)


def nested_queries(sql: dict) -> list:
    """Sub-queries that are condition values, and the intersect / except / union part (``get_nestedSQL``)."""
    nested = []
    for unit in sql["from"]["conds"][::2] + sql["where"][::2] + sql["having"][::2]:
        nested += [value for value in (unit[3], unit[4]) if isinstance(value, dict)]
    return nested + [sql[op] for op in ("intersect", "except", "union") if sql[op] is not None]


def count_component2(sql: dict) -> int:
    """The number of nested queries (Spider's ``count_component2``)."""
    return len(nested_queries(sql))


def count_others(sql: dict) -> int:
    """More than one aggregation, selected column, where condition, group by column (``count_others``)."""
    aggregations = _count_agg(sql["select"][1]) + _count_agg(sql["where"][::2]) + _count_agg(sql["groupBy"])
    if len(sql["orderBy"]) > 0:
        order = sql["orderBy"][1]
        aggregations += _count_agg([u[1] for u in order if u[1]] + [u[2] for u in order if u[2]])
    aggregations += _count_agg(sql["having"])
    return (int(aggregations > 1) + int(len(sql["select"][1]) > 1) + int(len(sql["where"]) > 1)
            + int(len(sql["groupBy"]) > 1))


def hardness_of(sql: dict) -> str:
    """The category of a parsed query (Spider's ``Evaluator.eval_hardness``)."""
    c1, c2, others = count_component1(sql), count_component2(sql), count_others(sql)
    if c1 <= 1 and others == 0 and c2 == 0:
        return "easy"
    if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
        return "medium"
    if ((others > 2 and c1 <= 2 and c2 == 0) or (2 < c1 <= 3 and others <= 2 and c2 == 0)
            or (c1 <= 1 and others == 0 and c2 <= 1)):
        return "hard"
    return "extra"


def hardness(sql: str) -> str:
    """Spider's hardness category of one SQL query: ``easy``, ``medium``, ``hard`` or ``extra``."""
    return hardness_of(parse(sql))


def hardness_by_row(programs: Sequence) -> list:
    """The category of every query (None where it does not parse), each distinct query parsed once."""
    cache: dict = {}
    out = []
    for program in programs:
        if program not in cache:
            try:
                cache[program] = hardness(program)
            except (UnparseableProgramError, TypeError):
                cache[program] = None
        out.append(cache[program])
    return out


def looks_like_sql(programs: Sequence, *, sample: int = 200) -> bool:
    """Whether a column holds SQL queries: most of its first ``sample`` non-empty values start with ``select``."""
    values = [p for p in programs[:sample * 2] if isinstance(p, str) and p.strip()][:sample]
    return bool(values) and sum(v.lstrip("( ").lower().startswith("select") for v in values) >= 0.9 * len(values)
