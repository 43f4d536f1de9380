"""Compounds of target programs: how atoms combine (Keysers et al. 2020; Shaw et al. 2021).

A compound function returns a :class:`collections.Counter` (a multiset) for one program and raises
:class:`~split_builders.errors.UnparseableProgramError` on a program it cannot read.

* ``funql`` (Shaw et al., exactly): one entry per (parent function, argument position, child head
  symbol), the other arguments written ``__``: ``most( state , __ , __ )``.
* ``sql`` (our own definition; the reference's CFG is not the paper's either): the query's
  ``sqlparse`` tokens with literals anonymised (strings -> ``value``, numbers -> ``number``) are cut
  into *clauses* at the clause keywords (``select``, ``from``, ``where``, ``group by``,
  ``order by``, ``having``, ``limit``, ``join``, ``on``, set operators), bracket depth kept apart so a
  sub-query's clauses are its own. Compounds are (a) every pair of a clause keyword and one of its
  tokens, ``where( = )``, and (b) every pair of adjacent tokens inside a clause, ``count ( ``;
  (c) the clause sequence of each query level, ``select>from>where``. Together these capture which
  columns, functions and operators are used in which role, and which clause structures co-occur.
* ``scan``: the command's adjacent word pairs (``jump twice``, ``twice after``) and each
  (verb-phrase word, modifier) pair inside one conjunct: what SCAN's MCD splits vary.
* ``cogs``: ``verb . role`` pairs with the kind of their filler (``help.theme( noun )``,
  ``help.agent( proper )``, ``see.ccomp( event )``) and each (role, noun) filler pair.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from split_builders.atoms import FunqlNode, parse_funql, sql_atoms, sql_tokens
from split_builders.errors import InvalidParameterError, UnparseableProgramError


def _funql_walk(node: FunqlNode, counts: Counter) -> None:
    width = len(node.arguments)
    for position, child in enumerate(node.arguments):
        slots = ["__"] * width
        slots[position] = child.name
        counts[f"{node.name}( {' , '.join(slots)} )"] += 1
        _funql_walk(child, counts)


def funql_compounds(program: str) -> Counter:
    """Compounds of a FunQL program (see the module docstring)."""
    counts: Counter = Counter()
    _funql_walk(parse_funql(program), counts)
    return counts


SQL_CLAUSE_KEYWORDS = frozenset({
    "select", "from", "where", "group by", "order by", "having", "limit", "join", "on",
    "intersect", "union", "except", "left join", "inner join",
})


def _sql_normalised_tokens(sql: str) -> list[str]:
    sql_atoms(sql)  # refuse empty or unbalanced queries the same way the atoms do
    tokens = []
    for token in sql_tokens(sql):
        if token[:1] in ("'", '"'):
            tokens.append("value")
        elif token.replace(".", "", 1).isdigit():
            tokens.append("number")
        else:
            tokens.append(token)
    return tokens


def sql_compounds(sql: str) -> Counter:
    """Compounds of a SQL query (see the module docstring)."""
    counts: Counter = Counter()
    # One stack entry per bracket level: [current clause keyword, previous token, clause sequence].
    stack = [["<start>", None, []]]
    for token in _sql_normalised_tokens(sql):
        level = stack[-1]
        if token == "(":
            if level[1] is not None:
                counts[f"{level[1]} ("] += 1
            # A bracket level inherits its clause (``count ( * )`` is in the select clause) until
            # a clause keyword opens a sub-query of its own.
            stack.append([level[0], "(", []])
            continue
        if token == ")" and len(stack) > 1:
            closed = stack.pop()
            if closed[2]:
                counts[">".join(closed[2])] += 1
            stack[-1][1] = ")"
            continue
        if token in SQL_CLAUSE_KEYWORDS:
            level[0], level[1] = token, None
            level[2].append(token)
            continue
        counts[f"{level[0]}( {token} )"] += 1
        if level[1] is not None:
            counts[f"{level[1]} {token}"] += 1
        level[1] = token
    if stack[0][2]:
        counts[">".join(stack[0][2])] += 1
    return counts


SCAN_MODIFIERS = frozenset({"twice", "thrice", "left", "right", "around", "opposite"})
SCAN_CONJUNCTIONS = frozenset({"and", "after"})


def scan_compounds(command: str) -> Counter:
    """Compounds of a SCAN command (see the module docstring)."""
    words = command.split()
    if not words:
        raise UnparseableProgramError("empty SCAN command")
    counts: Counter = Counter(f"{a} {b}" for a, b in zip(words, words[1:]))
    conjunct: list[str] = []
    for word in [*words, "and"]:
        if word in SCAN_CONJUNCTIONS:
            verbs = [w for w in conjunct if w not in SCAN_MODIFIERS]
            for verb in verbs:
                for modifier in conjunct:
                    if modifier in SCAN_MODIFIERS:
                        counts[f"{verb}( {modifier} )"] += 1
            conjunct = []
        else:
            conjunct.append(word)
    return counts


def cogs_compounds(logical_form: str) -> Counter:
    """Compounds of a COGS logical form (see the module docstring)."""
    from split_builders.atoms import cogs_atoms

    cogs_atoms(logical_form)  # brackets balance
    body = logical_form.split(";")[-1]
    terms = [t.strip() for t in body.replace("LAMBDA", "").split(" AND ")]
    nouns, relations = {}, []
    for term in terms:
        if "(" not in term:
            continue
        head, _, rest = term.partition("(")
        arguments = [a.strip().replace(" ", "") for a in rest.rsplit(")", 1)[0].split(",")]
        head = head.replace(" ", "")
        if "." in head and len(arguments) == 2:
            relations.append((head, arguments[1]))
        elif len(arguments) == 1:
            nouns[arguments[0]] = head
    event_variables = {term.partition("(")[2].split(",")[0].replace(" ", "") for term in terms if "." in term.partition("(")[0]}
    counts: Counter = Counter()
    for head, filler in relations:
        if filler in nouns:
            kind = "noun"
            counts[f"{head.split('.', 1)[1]}( {nouns[filler]} )"] += 1
        elif filler in event_variables:
            kind = "event"
        elif filler.startswith("x_"):
            kind = "variable"
        else:
            kind = "proper"
            counts[f"{head.split('.', 1)[1]}( {filler} )"] += 1
        counts[f"{head}( {kind} )"] += 1
    return counts


COMPOUND_FUNCTIONS: dict[str, Callable[[str], Counter]] = {
    "funql": funql_compounds,
    "sql": sql_compounds,
    "scan": scan_compounds,
    "cogs": cogs_compounds,
}


def compound_function(target_language: str) -> Callable[[str], Counter]:
    try:
        return COMPOUND_FUNCTIONS[target_language]
    except KeyError:
        raise InvalidParameterError(
            f"unknown target language {target_language!r}; known: {', '.join(sorted(COMPOUND_FUNCTIONS))}") from None


def compounds_by_row(programs: Sequence[str], target_language: str) -> list:
    """Compounds of every program (None where the program cannot be read)."""
    function = compound_function(target_language)
    result, cache = [], {}
    for program in programs:
        if program not in cache:
            try:
                cache[program] = function(program)
            except UnparseableProgramError:
                cache[program] = None
        result.append(cache[program])
    return result
