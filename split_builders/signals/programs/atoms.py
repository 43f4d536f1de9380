"""Atoms of target programs: the symbols a model must have seen in training.

Atoms are what the atom constraint of the compositional and semantic-parsing splits is about
(Keysers et al. 2020; Shaw et al. 2021): every atom of an evaluation program must occur in
some training program. One function per target language returns the *set* of atoms of one
program and raises :class:`~split_builders.errors.UnparseableProgramError` on a program it
cannot read; :func:`atoms_by_row` applies one to a column and reports the failures by row
instead of dropping them silently.

* ``sql``: the tokens ``sqlparse`` finds in the lowercased query with its trailing ``;``
  removed, whitespace tokens dropped (as Shaw et al.'s NQG code defines SQL atoms).
* ``funql``: the tokens of the space-separated program except ``(``, ``)`` and ``,``; the
  program must parse as a FunQL tree (:func:`parse_funql`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from split_builders.errors import InvalidParameterError, UnparseableProgramError

FUNQL_PUNCTUATION = frozenset({"(", ")", ","})


@dataclass(frozen=True)
class FunqlNode:
    """One function application (or a constant, with no arguments) of a FunQL program."""

    name: str
    arguments: tuple = field(default=())


def parse_funql(program: str) -> FunqlNode:
    """Parse a space-tokenised FunQL program such as ``answer ( city ( loc_2 ( m0 ) ) )``.

    Raises
    ------
    UnparseableProgramError
        With the position of the first token that does not fit the grammar
        ``node := NAME | NAME ( node ( , node )* )``.
    """
    tokens = program.split()
    if not tokens:
        raise UnparseableProgramError("empty FunQL program")

    def fail(position: int, expected: str):
        found = repr(tokens[position]) if position < len(tokens) else "the end"
        raise UnparseableProgramError(
            f"FunQL program {program!r}: expected {expected} at token {position}, found {found}")

    def parse_node(position: int) -> tuple[FunqlNode, int]:
        if position >= len(tokens) or tokens[position] in FUNQL_PUNCTUATION:
            fail(position, "a function or constant name")
        name = tokens[position]
        position += 1
        if position >= len(tokens) or tokens[position] != "(":
            return FunqlNode(name), position
        arguments = []
        position += 1
        while True:
            argument, position = parse_node(position)
            arguments.append(argument)
            if position < len(tokens) and tokens[position] == ",":
                position += 1
                continue
            if position < len(tokens) and tokens[position] == ")":
                return FunqlNode(name, tuple(arguments)), position + 1
            fail(position, "',' or ')'")

    root, end = parse_node(0)
    if end != len(tokens):
        fail(end, "the end of the program")
    return root


def funql_atoms(program: str) -> frozenset[str]:
    """Atoms of a FunQL program: its tokens except brackets and commas."""
    parse_funql(program)  # refuse programs that are not trees
    return frozenset(token for token in program.split() if token not in FUNQL_PUNCTUATION)


def brackets_balance(tokens) -> bool:
    """True when every ``(`` token is closed by a later ``)`` token and no ``)`` comes unopened."""
    depth = 0
    for token in tokens:
        depth += token == "("
        depth -= token == ")"
        if depth < 0:
            return False
    return depth == 0


def sql_tokens(sql: str) -> list[str]:
    """The SQL tokens Shaw et al. use: ``sqlparse`` tokens of the lowercased query, no spaces."""
    import sqlparse  # local: only SQL datasets need it
    from sqlparse import tokens as token_types

    text = sql.lower().rstrip(";")
    statements = sqlparse.parse(text)
    if not statements or not text.strip():
        raise UnparseableProgramError(f"SQL query {sql!r} holds no statement")
    return [token.value for token in statements[0].flatten() if token.ttype != token_types.Whitespace]


def sql_atoms(sql: str) -> frozenset[str]:
    """Atoms of a SQL query: the set of its :func:`sql_tokens`.

    Besides an empty query, a query whose brackets or quotes do not balance is refused:
    ``sqlparse`` accepts any text, so this is the check that catches a truncated program.
    """
    tokens = sql_tokens(sql)
    if not brackets_balance(tokens):
        raise UnparseableProgramError(f"SQL query {sql!r} has unbalanced brackets")
    for quote in ("'", '"'):
        if any(token.startswith(quote) and (len(token) < 2 or not token.endswith(quote)) for token in tokens):
            raise UnparseableProgramError(f"SQL query {sql!r} has an unclosed {quote} string")
    return frozenset(tokens)


ATOM_FUNCTIONS: dict[str, Callable[[str], frozenset[str]]] = {
    "sql": sql_atoms,
    "funql": funql_atoms,
}


def atom_function(target_language: str) -> Callable[[str], frozenset[str]]:
    """The atom function of a target language, with a clear error for an unknown one."""
    try:
        return ATOM_FUNCTIONS[target_language]
    except KeyError:
        raise InvalidParameterError(
            f"unknown target language {target_language!r}; known: {', '.join(sorted(ATOM_FUNCTIONS))}"
        ) from None


@dataclass
class RowAtoms:
    """Atoms of every row of a column, and the rows whose program could not be read.

    ``atoms[i]`` is None exactly for the rows listed in ``unparseable`` (row number, reason).
    """

    atoms: list
    unparseable: list

    @property
    def parsed_rows(self) -> list[int]:
        return [row for row, atoms in enumerate(self.atoms) if atoms is not None]

    def describe_unparseable(self, ids: Sequence | None = None, limit: int = 10) -> str:
        """``"3 unparseable program(s): source_id 4 (reason), ..."`` for messages and cards."""
        ids = ids if ids is not None else range(len(self.atoms))
        shown = "; ".join(f"source_id {ids[row]} ({reason})" for row, reason in self.unparseable[:limit])
        more = f"; and {len(self.unparseable) - limit} more" if len(self.unparseable) > limit else ""
        return f"{len(self.unparseable)} unparseable program(s): {shown}{more}"


def atoms_by_row(programs: Sequence[str], target_language: str) -> RowAtoms:
    """Apply the atom function of ``target_language`` to every program, collecting failures."""
    function = atom_function(target_language)
    atoms, unparseable = [], []
    cache: dict[str, frozenset[str]] = {}  # programs repeat (the same query for many questions)
    for row, program in enumerate(programs):
        if program in cache:
            atoms.append(cache[program])
            continue
        try:
            if program is None:
                raise UnparseableProgramError("missing program")
            found = cache[program] = function(program)
        except UnparseableProgramError as error:
            atoms.append(None)
            unparseable.append((row, str(error)))
        else:
            atoms.append(found)
    return RowAtoms(atoms, unparseable)


# --- SCAN and COGS (compositional-generalisation datasets) ------------------------------------
# SCAN's structure lives in its commands (the action sequences are flat), so its "program" is the
# input command; COGS's is its logical form.

COGS_SYMBOLS = frozenset({"(", ")", ",", ";", ".", "_", "*", "x", "AND", "LAMBDA", "a", "e"})


def scan_atoms(command: str) -> frozenset[str]:
    """Atoms of a SCAN command: its words (``jump``, ``twice``, ``around``, ...)."""
    words = command.split()
    if not words:
        raise UnparseableProgramError("empty SCAN command")
    return frozenset(words)


def cogs_atoms(logical_form: str) -> frozenset[str]:
    """Atoms of a COGS logical form: predicate, role and constant names (no variables, brackets
    or connectives); the brackets must balance."""
    tokens = logical_form.split()
    if not tokens or not brackets_balance(tokens):
        raise UnparseableProgramError(f"COGS logical form {logical_form!r} is empty or has unbalanced brackets")
    return frozenset(t for t in tokens if t not in COGS_SYMBOLS and not t.isdigit())


ATOM_FUNCTIONS["scan"] = scan_atoms
ATOM_FUNCTIONS["cogs"] = cogs_atoms
