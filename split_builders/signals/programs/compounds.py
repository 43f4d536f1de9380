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
* ``scan`` (our own definition in the spirit of Keysers et al.'s rule-application sub-graphs): the
  command is parsed by SCAN's grammar into conjunction -> phrase (``once``/``twice``/``thrice``) ->
  verb phrase (``bare``, ``direction``, ``opposite``, ``around``) -> action and direction; compounds
  are each verb phrase with its words (``V:around( jump , left )``), each phrase with its verb-phrase
  kind, alone and with its action or its direction (``S:twice( V:around( jump , __ ) )``), each
  conjunct with its position (``after[0]( S:twice )``) and the pair of conjuncts. On the released
  MCD splits this gives compound divergences 0.686 / 0.649 / 0.684 (Keysers et al. report about 0.7
  for theirs), against 0.000 for a random split.
* ``cogs``: ``verb . role`` pairs with the kind of their filler (``help.theme( noun )``,
  ``help.agent( proper )``, ``see.ccomp( event )``) and each (role, noun) filler pair.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from split_builders.signals.programs.atoms import FunqlNode, parse_funql, sql_atoms, sql_tokens
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


SCAN_ACTIONS = frozenset({"walk", "look", "run", "jump", "turn"})
SCAN_DIRECTIONS = frozenset({"left", "right"})
SCAN_CONJUNCTIONS = ("and", "after")
SCAN_REPEATS = frozenset({"twice", "thrice"})


def _scan_phrase(words: list[str], command: str) -> tuple[str, str, str, str]:
    """``(repeat, kind, action, direction)`` of one SCAN phrase ``S``:
    ``S -> V [twice|thrice]``, ``V -> X [opposite|around] D | X D | X``, X an action, D a direction."""
    repeat = words[-1] if words and words[-1] in SCAN_REPEATS else "once"
    verb_phrase = words[:-1] if repeat != "once" else words
    if not verb_phrase or verb_phrase[0] not in SCAN_ACTIONS:
        raise UnparseableProgramError(f"SCAN command {command!r}: a phrase must start with an action")
    action, rest = verb_phrase[0], verb_phrase[1:]
    if len(rest) == 2 and rest[0] in ("opposite", "around") and rest[1] in SCAN_DIRECTIONS:
        return repeat, rest[0], action, rest[1]
    if len(rest) == 1 and rest[0] in SCAN_DIRECTIONS:
        return repeat, "direction", action, rest[0]
    if not rest and action != "turn":
        return repeat, "bare", action, "-"
    raise UnparseableProgramError(f"SCAN command {command!r}: {' '.join(verb_phrase)!r} is not a verb phrase")


def scan_compounds(command: str) -> Counter:
    """Compounds of a SCAN command: the rule applications of its parse by SCAN's grammar
    (``C -> S [and|after S]``) joined with their children, as Keysers et al.'s compounds are
    sub-graphs of the rule-application tree (see the module docstring)."""
    words = command.split()
    if not words:
        raise UnparseableProgramError("empty SCAN command")
    conjunction = next((c for c in SCAN_CONJUNCTIONS if c in words), None)
    if conjunction is None:
        phrases = [words]
    else:
        cut = words.index(conjunction)
        phrases = [words[:cut], words[cut + 1:]]
    counts: Counter = Counter()
    heads = []
    for position, phrase in enumerate(phrases):
        repeat, kind, action, direction = _scan_phrase(phrase, command)
        counts[f"V:{kind}( {action} , {direction} )"] += 1
        counts[f"S:{repeat}( V:{kind} )"] += 1
        counts[f"S:{repeat}( V:{kind}( {action} , __ ) )"] += 1
        counts[f"S:{repeat}( V:{kind}( __ , {direction} ) )"] += 1
        heads.append(f"S:{repeat}( V:{kind} )")
        if conjunction:
            counts[f"{conjunction}[{position}]( S:{repeat} )"] += 1
            counts[f"{conjunction}[{position}]( S:{repeat}( V:{kind} ) )"] += 1
    if conjunction:
        counts[f"{conjunction}( {heads[0]} , {heads[1]} )"] += 1
    return counts


def cogs_compounds(logical_form: str) -> Counter:
    """Compounds of a COGS logical form (see the module docstring)."""
    from split_builders.signals.programs.atoms import cogs_atoms

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
