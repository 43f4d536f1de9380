"""Atoms and weighted compounds as Keysers et al. (2020) define them for MCD splits.

Each example has a derivation: a tree of rule applications (:class:`~.scan_grammar.Derivation`;
SCAN's from its grammar, :func:`~.scan_grammar.parse_scan`; COGS's read from its logical form,
:func:`cogs_derivation`).

* **Atoms** are the rules the derivation applies and the words of the example (for COGS, the
  predicate, role and constant names of its logical form), each counted once per example.
* **Compounds** are the connected sub-graphs of the rule-application tree with at least two rule
  applications (up to ``max_size`` of them). A compound is written as its top rule with the
  compounds of its *included* children in the order of the rule's right-hand side; a child left
  out leaves no trace, so ``C -> S and S`` over one ``S -> V twice`` is the same compound whichever
  side the ``S`` is on.
* **Weights**: a compound that nearly always occurs inside a larger one says little of its own.
  Over all examples, ``P(G' | G)`` is the share of the occurrences of ``G`` that lie inside an
  occurrence of ``G'`` (``G'`` one rule application larger, within ``max_size``); an occurrence's
  weight is ``1 - max over G' of P(G' | G)``, and a compound's weight in an example is the largest
  weight of its occurrences there. Compounds of weight 0 are dropped.

The divergences are those of :mod:`.divergence` (Chernoff coefficient, alpha 0.1 over compound
weights, alpha 0.5 over atoms), with train and test distributions normalised per split.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import product
from typing import Sequence

from split_builders.errors import InvalidParameterError, UnparseableProgramError
from split_builders.signals.programs.scan_grammar import Derivation, parse_scan

LANGUAGES = ("scan", "cogs")
DEFAULT_MAX_SIZE = 12  # rule applications per compound: more than a SCAN derivation has (at most 9)


# ---------------------------------------------------------------------------------------------
# Derivations and atoms of one example
# ---------------------------------------------------------------------------------------------

def scan_example(command: str) -> tuple[frozenset, Derivation]:
    """Atoms (rules applied, words) and derivation of one SCAN command."""
    tree = parse_scan(command)
    return frozenset(node.rule for node in tree.nodes()) | frozenset(command.split()), tree


_COGS_TERM = re.compile(r"^(\*\s+)?([^\s(]+(?:\s+\.\s+[^\s(]+)*)\s+\(\s+(.+?)\s+\)$")
_COGS_VARIABLE = re.compile(r"^(?:x\s+_\s+\d+|[a-z])$")


def _cogs_terms(logical_form: str) -> list[tuple[bool, list[str], list[str]]]:
    """``(definite, dotted name parts, arguments)`` of every term of a COGS logical form."""
    body = logical_form.strip()
    while body.startswith("LAMBDA "):  # primitives: LAMBDA a . LAMBDA e . touch . agent ( e , a )
        parts = body.split(None, 3)
        if len(parts) < 4 or parts[2] != ".":
            raise UnparseableProgramError(f"COGS logical form {logical_form!r}: a LAMBDA needs 'LAMBDA v . body'")
        body = parts[3]
    terms = []
    for chunk in re.split(r"\s+(?:AND|;)\s+|\s+;$", body):
        chunk = chunk.strip()
        if not chunk:
            continue
        match = _COGS_TERM.match(chunk)
        if match is None:
            if " " not in chunk:  # a bare constant (a proper-name primitive)
                terms.append((False, [chunk], []))
                continue
            raise UnparseableProgramError(f"COGS logical form {logical_form!r}: {chunk!r} is not 'name ( args )'")
        definite, name, arguments = match.groups()
        terms.append((bool(definite), name.split(" . "), [a.strip() for a in arguments.split(" , ")]))
    if not terms:
        raise UnparseableProgramError(f"COGS logical form {logical_form!r} is empty")
    return terms


def cogs_example(logical_form: str) -> tuple[frozenset, Derivation]:
    """Atoms and derivation of one COGS logical form.

    The derivation is the logical form's graph read as a tree of rule-like applications: a node per
    variable, labelled by its predicate (``*`` marks a definite noun; an unlabelled lambda variable is
    ``?``; a constant is a leaf), and under it one node per role or ``nmod`` term it heads, labelled by
    the role, over the argument's node (``eat . agent ( x _ 2 , x _ 1 )``: ``agent`` under ``eat``, the
    noun of ``x _ 1`` under ``agent``), so that role frames (``eat ( agent , theme )``) are compounds of
    their own, apart from the words that fill them. A node that is an argument of two terms (control
    verbs) appears under both. The root is the variable no term takes as an argument.
    """
    terms = _cogs_terms(logical_form)
    labels: dict = {}
    edges: dict = {}
    arguments_seen: set = set()
    atoms = set()
    for definite, name, arguments in terms:
        atoms.update(name)
        if not arguments:
            labels.setdefault(name[0], name[0])
            continue
        head = arguments[0]
        if not _COGS_VARIABLE.match(head):
            raise UnparseableProgramError(f"COGS logical form {logical_form!r}: {head!r} is not a variable")
        if len(arguments) == 1:
            labels[head] = ("* " if definite else "") + " . ".join(name)
            continue
        if len(arguments) != 2:
            raise UnparseableProgramError(f"COGS logical form {logical_form!r}: a term takes 1 or 2 arguments")
        labels.setdefault(head, name[0])
        role = " . ".join(name[1:]) or "arg"
        edges.setdefault(head, []).append((role, arguments[1]))
        arguments_seen.add(arguments[1])
        if not _COGS_VARIABLE.match(arguments[1]):
            atoms.add(arguments[1])
    roots = [v for v in labels if v not in arguments_seen] or list(labels)

    def build(variable: str, depth: int) -> Derivation:
        if depth > 64:
            raise UnparseableProgramError(f"COGS logical form {logical_form!r}: its terms form a cycle")
        label = labels.get(variable, variable if not _COGS_VARIABLE.match(variable) else "?")
        roles = sorted(edges.get(variable, ()))
        return Derivation(label, tuple(Derivation(role, (build(argument, depth + 1),)) for role, argument in roles))

    trees = [build(v, 0) for v in sorted(roots)]
    return frozenset(atoms), trees[0] if len(trees) == 1 else Derivation("ROOT", tuple(trees))


EXAMPLE_FUNCTIONS = {"scan": scan_example, "cogs": cogs_example}


# ---------------------------------------------------------------------------------------------
# Compounds and their weights
# ---------------------------------------------------------------------------------------------

class _Rooted:
    """The compounds rooted at one derivation node, memoised over equal sub-derivations: for each, its
    text, its size, and the positions (in the same list) and texts of its one-larger extensions below
    the root. The first entry is the node's rule alone."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self.memo: dict = {}

    def __call__(self, node: Derivation) -> list[tuple[str, int, tuple, frozenset]]:
        found = self.memo.get(node)
        if found is None:
            found = self.memo[node] = self._enumerate(node)
        return found

    def _enumerate(self, node: Derivation) -> list[tuple[str, int, tuple, frozenset]]:
        below = [self(child) for child in node.children]
        keys, texts, sizes = [], [], []
        for chosen in product(*[range(-1, len(entries)) for entries in below]):
            size = 1 + sum(below[i][c][1] for i, c in enumerate(chosen) if c >= 0)
            if size > self.max_size:
                continue
            keys.append(chosen)
            texts.append(compound_text(node.rule, [below[i][c][0] for i, c in enumerate(chosen) if c >= 0]))
            sizes.append(size)
        position = {key: i for i, key in enumerate(keys)}
        out = []
        for key, text, size in zip(keys, texts, sizes):
            extensions = []
            if size < self.max_size:
                for i, c in enumerate(key):
                    for alternative in ((0,) if c < 0 else below[i][c][2]):
                        found = position.get(key[:i] + (alternative,) + key[i + 1:])
                        if found is not None:
                            extensions.append(found)
            out.append((text, size, tuple(extensions)))
        return [(text, size, extensions, frozenset(out[j][0] for j in extensions))
                for text, size, extensions in out]


def compound_text(rule: str, children: Sequence[str]) -> str:
    """A compound's text: the rule, then its included children's compounds in right-hand-side order."""
    return f"{rule} ( {' , '.join(children)} )" if children else rule


def compounds_of(tree: Derivation, *, max_size: int = DEFAULT_MAX_SIZE) -> Counter:
    """The compounds of one derivation (two or more rule applications), each with its number of
    occurrences, unweighted."""
    rooted = _Rooted(max_size)
    return Counter(text for text, _ in _occurrences(tree, rooted, max_size))


def _occurrences(tree: Derivation, rooted: _Rooted, max_size: int):
    """``(compound, extensions)`` of every occurrence of a compound (two or more rule applications) in
    ``tree``; extensions are the compounds one rule application larger that contain it (a child
    below, or the parent above)."""
    stack = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        for text, size, _, below in rooted(node):
            if size < 2:  # a single rule application is an atom, not a compound
                continue
            if parent is not None and size < max_size:
                yield text, below | {compound_text(parent.rule, [text])}
            else:
                yield text, below
        stack.extend((child, node) for child in node.children)


def weighted_compounds(trees: Sequence[Derivation | None], *, max_size: int = DEFAULT_MAX_SIZE) -> list:
    """Per tree (None: an unparseable row, which gets None), ``{compound: weight}`` with weights in
    (0, 1], computed over all the given trees (see the module docstring)."""
    if max_size < 2:
        raise InvalidParameterError(f"max_size must be at least 2 (a compound joins two rule applications), got {max_size}")
    rooted = _Rooted(max_size)
    occurrences: Counter = Counter()
    inside: Counter = Counter()
    per_tree = []
    for tree in trees:
        if tree is None:
            per_tree.append(None)
            continue
        found = list(_occurrences(tree, rooted, max_size))
        for text, extensions in found:
            occurrences[text] += 1
            for extension in extensions:
                inside[(text, extension)] += 1
        per_tree.append(found)
    covered: dict = {}
    for (text, extension), count in inside.items():
        covered[(text, extension)] = count / occurrences[text]
    weights = []
    for found in per_tree:
        if found is None:
            weights.append(None)
            continue
        row: dict = {}
        for text, extensions in found:
            weight = 1.0 - max((covered[(text, e)] for e in extensions), default=0.0)
            if weight > row.get(text, 0.0) + 1e-12:
                row[text] = weight
        weights.append({k: round(v, 12) for k, v in sorted(row.items())})
    return weights


# ---------------------------------------------------------------------------------------------
# A column of examples
# ---------------------------------------------------------------------------------------------

@dataclass
class MCDRows:
    """Atoms (a frozenset, None where unparseable) and weighted compounds (``{compound: weight}``,
    None where unparseable) of every row, and the unparseable rows with their error."""

    atoms: list
    compounds: list
    unparseable: dict = field(default_factory=dict)

    @property
    def parsed_rows(self) -> list[int]:
        return [row for row, found in enumerate(self.atoms) if found is not None]

    def describe_unparseable(self, source_ids=None, shown: int = 3) -> str:
        rows = sorted(self.unparseable)
        named = [f"row {source_ids[r] if source_ids is not None else r}: {self.unparseable[r]}" for r in rows[:shown]]
        return f"{len(rows)} unparseable row(s) ({'; '.join(named)}{'; ...' if len(rows) > shown else ''})"


def mcd_rows(programs: Sequence[str], language: str, *, max_size: int = DEFAULT_MAX_SIZE) -> MCDRows:
    """Atoms and weighted compounds of every program of ``language`` (one of :data:`LANGUAGES`)."""
    if language not in EXAMPLE_FUNCTIONS:
        raise InvalidParameterError(f"MCD atoms and compounds are defined for {', '.join(LANGUAGES)}, not {language!r}")
    read = EXAMPLE_FUNCTIONS[language]
    atoms, trees, unparseable = [], [], {}
    for row, program in enumerate(programs):
        try:
            found, tree = read(program)
        except UnparseableProgramError as error:
            unparseable[row] = str(error)
            found, tree = None, None
        atoms.append(found)
        trees.append(tree)
    return MCDRows(atoms, weighted_compounds(trees, max_size=max_size), unparseable)
