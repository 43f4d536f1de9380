"""SCAN's phrase-structure grammar (Lake & Baroni 2018) and a parser of its commands.

The grammar, as published with the dataset (18 rules)::

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D[1] opposite D[2] | D[1] around D[2] | D | U
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

``D[1] opposite D[2]`` is the first and second word of a ``D`` around ``opposite`` (``walk
opposite left`` is ``V -> D[1] opposite D[2]`` over ``D -> U left`` over ``U -> walk``).
:func:`parse_scan` returns the derivation of a command as a tree of :class:`Derivation` nodes,
one per rule application; the grammar is unambiguous, so every command has exactly one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from split_builders.errors import UnparseableProgramError

RULES = (
    "C -> S and S", "C -> S after S", "C -> S",
    "S -> V twice", "S -> V thrice", "S -> V",
    "V -> D[1] opposite D[2]", "V -> D[1] around D[2]", "V -> D", "V -> U",
    "D -> U left", "D -> U right", "D -> turn left", "D -> turn right",
    "U -> walk", "U -> look", "U -> run", "U -> jump",
)
PRIMITIVES = ("walk", "look", "run", "jump")
DIRECTIONS = ("left", "right")


@dataclass(frozen=True)
class Derivation:
    """One rule application and the derivations of the non-terminals on its right-hand side, in order."""

    rule: str
    children: tuple = field(default=())

    def __hash__(self) -> int:  # derivations are dictionary keys (memoised sub-derivations): hashed once
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.rule, self.children))
            object.__setattr__(self, "_hash", cached)
        return cached

    def nodes(self) -> list["Derivation"]:
        """Every rule application of the derivation, top-down, left to right."""
        found = [self]
        for child in self.children:
            found += child.nodes()
        return found


def _fail(command: str, what: str):
    raise UnparseableProgramError(f"SCAN command {command!r}: {what}; SCAN's grammar (Lake & Baroni 2018) "
                                  "reads 'ACTION [DIRECTION | opposite|around DIRECTION] [twice|thrice]', "
                                  "two of them joined by 'and' or 'after'")


def _direction(action: str, direction: str, command: str) -> Derivation:
    """``D -> U left | U right | turn left | turn right``."""
    if direction not in DIRECTIONS:
        _fail(command, f"{direction!r} is not a direction (left or right)")
    if action == "turn":
        return Derivation(f"D -> turn {direction}")
    return Derivation(f"D -> U {direction}", (_primitive(action, command),))


def _primitive(word: str, command: str) -> Derivation:
    if word not in PRIMITIVES:
        _fail(command, f"{word!r} is not an action ({', '.join(PRIMITIVES)})")
    return Derivation(f"U -> {word}")


def _verb(words: list[str], command: str) -> Derivation:
    """``V``: ``U``, ``D``, or ``D[1] opposite|around D[2]``."""
    if len(words) == 1:
        if words[0] == "turn":
            _fail(command, "'turn' needs a direction")
        return Derivation("V -> U", (_primitive(words[0], command),))
    if len(words) == 2:
        return Derivation("V -> D", (_direction(words[0], words[1], command),))
    if len(words) == 3 and words[1] in ("opposite", "around"):
        return Derivation(f"V -> D[1] {words[1]} D[2]", (_direction(words[0], words[2], command),))
    _fail(command, f"{' '.join(words)!r} is not a verb phrase" if words else "a phrase is empty")


def _sentence(words: list[str], command: str) -> Derivation:
    """``S -> V twice | V thrice | V``."""
    if words and words[-1] in ("twice", "thrice"):
        return Derivation(f"S -> V {words[-1]}", (_verb(words[:-1], command),))
    return Derivation("S -> V", (_verb(words, command),))


def parse_scan(command: str) -> Derivation:
    """The derivation of one SCAN command by its grammar (top rule ``C``).

    Raises
    ------
    UnparseableProgramError
        One line naming the command and what does not fit the grammar.
    """
    words = command.split()
    if not words:
        raise UnparseableProgramError("empty SCAN command")
    joins = [i for i, word in enumerate(words) if word in ("and", "after")]
    if len(joins) > 1:
        _fail(command, "more than one 'and'/'after'")
    if not joins:
        return Derivation("C -> S", (_sentence(words, command),))
    cut = joins[0]
    return Derivation(f"C -> S {words[cut]} S", (_sentence(words[:cut], command), _sentence(words[cut + 1:], command)))


def scan_actions(tree: Derivation) -> str:
    """The action sequence a SCAN command means (Lake & Baroni 2018's interpretation function), from its
    derivation (:func:`parse_scan`): what the ``OUT:`` of its line must be. ``walk`` is ``I_WALK``; ``turn
    left`` ``I_TURN_LEFT``; ``x left`` turns, then does ``x``; ``x opposite left`` turns twice first; ``x around
    left`` does (turn, ``x``) four times; ``twice`` and ``thrice`` repeat; ``a and b`` is ``a`` then ``b``, ``a
    after b`` is ``b`` then ``a``."""

    def actions(node: Derivation) -> list:
        rule, children = node.rule, node.children
        if rule.startswith("U -> "):
            return [f"I_{rule[5:].upper()}"]
        if rule.startswith("D -> turn "):
            return [f"I_TURN_{rule[10:].upper()}"]
        if rule.startswith("D -> U "):
            return [f"I_TURN_{rule[7:].upper()}", *actions(children[0])]
        if rule in ("V -> D", "V -> U", "S -> V", "C -> S"):
            return actions(children[0])
        if rule.startswith("V -> D[1] "):  # the D is one turn and (for U left/right) its action
            turn, *action = actions(children[0])
            return [turn, turn, *action] if "opposite" in rule else [turn, *action] * 4
        if rule in ("S -> V twice", "S -> V thrice"):
            return actions(children[0]) * (2 if rule.endswith("twice") else 3)
        first, second = actions(children[0]), actions(children[1])
        return first + second if rule == "C -> S and S" else second + first

    return " ".join(actions(tree))
