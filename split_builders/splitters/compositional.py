"""Length, template and standard (random) splits of semantic-parsing / compositional datasets.

All three follow Shaw et al.'s (2021) released generators, so published splits reproduce:

* :class:`LongestToTestSplitter`: a stable sort by word count (``len(text.split(" "))``) of the
  input or the target; the shortest ``train_size`` rows train, the rest test.
* :class:`TemplateSplitter`: rows grouped by program template (the target with literals
  anonymised; FunQL targets already are), templates in order of first appearance shuffled with
  Python's ``random.Random(seed)``; whole templates go to train until the next one would exceed
  ``train_size``, everything after goes to test. No template is in both.
* :class:`StandardSplitter`: a seeded random split of the given size (numpy ``default_rng``).

Each ``split(...)`` returns a :class:`~split_builders.api.Split` whose validation is empty.
:func:`compositional_configs` builds every config of a ``resplit tmcd`` release from these, the
TMCD search, the published splits, given scores and wug-word copies (``configs`` and ``rederive``
of :class:`~split_builders.methods.tmcd.TMCDMethod` both call it).
"""

from __future__ import annotations

import copy
import random
import re
import time
from typing import Sequence

import numpy as np

from split_builders.splits import (DEFAULT_SEED, BaseSplitter, ConfigSplit, Split, check_random_state, check_size,
                                   resolve_size)
from split_builders.errors import InvalidParameterError
from split_builders.splitters.base import TailSplitter
from split_builders.splitters.tmcd import DEFAULT_RESTARTS, train_count

_SQL_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d+(\.\d+)?\b")


def program_template(target: str, target_language: str) -> str:
    """The template of a program: literals (SQL strings and numbers) replaced by ``value``."""
    if target_language == "sql":
        return _SQL_LITERAL.sub("value", target)
    return target  # FunQL (entities are m0, m1), SCAN and COGS programs are their own template


class LongestToTestSplitter(TailSplitter):
    """The ``length`` split: longest inputs (or targets) to test.

    As Shaw et al.'s generator: a stable sort by ``len(text.split(" "))`` (ties keep file order,
    as Python's ``sorted``); the shortest ``train_size`` rows train, the rest test.

    Parameters
    ----------
    train_size : int or float
        Train rows (a count in (0, rows) or a fraction in (0, 1), see
        :func:`~split_builders.splitters.tmcd.train_count`).
    by : {"input", "target"}, default="input"
        The text whose length counts ("input" reproduces the published length_1 splits).
    """

    def __init__(self, *, train_size, by: str = "input"):
        if by not in ("input", "target"):
            raise InvalidParameterError(f"by must be 'input' or 'target', got {by!r}")
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.by = by

    @property
    def requires(self) -> tuple:
        return ("inputs",) if self.by == "input" else ("targets",)

    def _order(self, n_rows, *, inputs=None, targets=None, **_):
        texts = inputs if self.by == "input" else targets
        lengths = np.asarray([len(t.split(" ")) for t in texts])
        return np.argsort(lengths, kind="stable")  # ties keep file order, as Python's sorted()

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(train_size=90, by="input"), dict(inputs=data["inputs"], targets=data["targets"]), True)]


class TemplateSplitter(BaseSplitter):
    """The ``template`` split: program templates as groups, none in both train and test.

    As Shaw et al.'s generator: templates in order of first appearance, shuffled with Python's
    ``random.Random(random_state)``; whole templates go to train until the next one would exceed
    ``train_size``, and everything after that goes to test (even templates that would still fit).

    Parameters
    ----------
    train_size : int or float
        Upper bound on train rows (whole templates only, so train may be smaller).
    target_language : str, default="funql"
        How a program becomes its template (:func:`program_template`).
    random_state : int or None, default=42
        Seed of the template shuffle (None: fresh randomness).
    """

    requires = ("targets",)

    def __init__(self, *, train_size, target_language: str = "funql", random_state: int | None = DEFAULT_SEED):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.target_language = target_language
        self.random_state = check_random_state(random_state)

    def _split(self, *, targets: Sequence[str]) -> Split:
        """A :class:`~split_builders.api.Split` with train and test (validation empty)."""
        n = train_count(self.train_size, len(targets))
        groups: dict = {}
        for row, target in enumerate(targets):
            groups.setdefault(program_template(target, self.target_language), []).append(row)
        templates = list(groups)
        random.Random(self.random_state).shuffle(templates)
        train, test, filling = [], [], True
        for template in templates:
            if filling and len(train) + len(groups[template]) > n:
                filling = False  # from here on everything is test, as in the reference
            (train if filling else test).extend(groups[template])
        if not train or not test:
            raise InvalidParameterError(f"train_size {n} leaves {'train' if not train else 'test'} empty: "
                                        f"the first template alone has {len(groups[templates[0]])} rows")
        return Split.of(train, (), test)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(train_size=60, target_language="funql", random_state=3), dict(targets=data["targets"]), True)]


class StandardSplitter(TailSplitter):
    """The ``standard`` split: ``train_size`` random rows train, the rest test.

    Parameters
    ----------
    train_size : int or float
        Train rows (a count in (0, rows) or a fraction in (0, 1)).
    random_state : int or None, default=42
        Seed of the permutation (numpy ``default_rng``; None: fresh randomness).

    Notes
    -----
    It reads no signal, only the number of rows (``split(n_rows)``, or any per-row input).
    """

    def __init__(self, *, train_size, random_state: int | None = DEFAULT_SEED):
        self.train_size = check_size(train_size, "train_size", allow_zero=False)
        self.random_state = check_random_state(random_state)

    def _order(self, n_rows, *, rng, **_):
        return rng.permutation(n_rows)

    @classmethod
    def _examples(cls, data: dict) -> list:
        return [(dict(train_size=70, random_state=3), dict(n_rows=data["n_rows"]), True)]


# ---------------------------------------------------------------------------------------------
# The configs of a compositional release
# ---------------------------------------------------------------------------------------------

BUILT = ("tmcd", "length", "template", "standard")
DESCRIPTIONS = {
    "tmcd": "TMCD: compound divergence maximised under the atom constraint, searched with atom divergence <= {bound}",
    "tmcd_reference": "TMCD, Shaw et al.'s reference search reproduced choice for choice",
    "length": "length: the longest inputs held out for test",
    "template": "template: program templates as groups, none in both train and test",
    "standard": "standard: random train/test split",
}
REFERENCE_ITERATIONS = 1000  # Shaw et al.'s bound on atom balancing and greedy swaps


def compositional_configs(atoms: Sequence, compounds: Sequence, *, inputs: Sequence[str], targets: Sequence[str],
                          target_language: str, names: Sequence[str] = ("tmcd",), train_size=0.5,
                          iterations: int = 50_000, restarts: int = DEFAULT_RESTARTS, max_atom_divergence: float = 0.05,
                          reference: bool = False,
                          validation_size=0, random_state: int = 42, scores=None, published=None,
                          published_from=None, source_ids=None, membership=None, wugs: dict | None = None,
                          progress: bool = False,
                          seconds: dict | None = None, groups=None, group_field: str | None = None) -> list:
    """Every config of a compositional release, as :class:`~split_builders.api.ConfigSplit` (row
    numbers of ``atoms``), each with its ``divergences`` (train against test) in its parameters.

    1. ``names`` (of :data:`BUILT`, in that order) searched over the rows with a parseable program
       (``atoms[row]`` not None) with ``train_size`` of them in train (:func:`train_count`);
       ``validation_size`` (a count, or a fraction of test rounded up) random rows of each test move
       to validation, drawn from one generator seeded ``random_state``, one config after another;
    2. ``published`` (``{name: {split: rows}}``, files in ``published_from``) as released, renamed
       ``published_<name>`` when built under the same name, each split's membership recorded as
       ``membership`` (the release's fingerprint of a split's ``source_ids``, given by the method:
       a splitter does not import the release) of its ``source_ids``;
    3. with ``scores``, Likelihood Splits of the parseable rows under the atom constraint;
    4. a copy of every config but the likelihood ones per fitted
       :class:`~split_builders.signals.programs.lexical.WugReplacer` of ``wugs`` (``{kind: replacer}``)
       over that kind's copy of the rows (rows ``offset * len(atoms)`` onwards, offset 1 for the first).

    ``seconds`` (a dict) receives each built config's search time, for a terminal report only.

    ``groups`` (a group number per row, from the column ``group_field``) keeps groups whole in the
    configs built here: the searches run over groups (a group's atoms are the union of its rows',
    its compounds their sum; ``standard`` draws groups, ``length`` orders them by mean input length,
    ``template`` keeps whole the connected components of groups and templates), validation takes whole
    groups of test, and ``ll_split*`` hold out whole groups. Published splits stay as published.
    """
    parsed = np.asarray([row for row, found in enumerate(atoms) if found is not None], dtype=np.int64)
    n_train = train_count(train_size, parsed.size)
    rng = np.random.default_rng(random_state)
    units = None
    if groups is not None:
        from split_builders.splitters.groups import Groups, group_codes

        if reference:
            raise InvalidParameterError("--reference reproduces Shaw et al.'s per-example search and cannot keep "
                                        "groups whole: leave out --group-field or --reference")
        units = Groups(group_codes(np.asarray(groups)[parsed]))
        if units.n_groups < 2:
            raise InvalidParameterError(f"--group-field {group_field}: the parseable rows form {units.n_groups} "
                                        "group; a split needs at least 2")
    configs = []
    for name in names:
        started = time.perf_counter()
        if units is None:
            split, parameters, what = _search(name, atoms, compounds, parsed, inputs, targets, target_language,
                                              n_train, iterations=iterations, restarts=restarts,
                                              max_atom_divergence=max_atom_divergence,
                                              reference=reference, random_state=random_state, progress=progress)
        else:
            split, parameters, what = _search_groups(name, units, atoms, compounds, parsed, inputs, targets,
                                                     target_language, n_train, iterations=iterations,
                                                     restarts=restarts, max_atom_divergence=max_atom_divergence,
                                                     random_state=random_state, progress=progress)
            parameters["grouped_by"] = group_field
            what += f"; rows sharing a `{group_field}` kept in one split"
        if seconds is not None:
            seconds[name] = time.perf_counter() - started
        if units is None:
            indices = with_validation(parsed[split.train], parsed[split.test], validation_size, rng)
        else:
            indices = _with_validation_groups(split.train, split.test, validation_size, rng, units)
            indices = {k: parsed[v] for k, v in indices.items()}
        configs.append(ConfigSplit(name, indices, method=name,
                                   parameters={**parameters, "target_language": target_language},
                                   description=f"{what}. Built by resplit.",
                                   requested=None if units is None else {"train": n_train}))
    if published:
        configs += _published_configs(published, published_from, source_ids, built=names, membership=membership)
    if scores is not None:
        configs += _likelihood_configs(scores, atoms, parsed, n_train, random_state,
                                       groups=None if units is None else units.codes, group_field=group_field)
    for config in configs:
        config.parameters["divergences"] = _divergences(config, atoms, compounds)
        if config.method == "tmcd" and not reference:
            config.description = tmcd_description(config.parameters, len(config.indices.get("validation", ())))
    return configs + _lexical_configs(configs, wugs or {}, len(atoms))


def validation_count(validation_size, n_test: int) -> int:
    """``validation_size`` (a count, or a fraction rounded up) as the count of the ``n_test`` test
    rows that move to validation; 0 keeps them all in test, otherwise test must keep one."""
    n_validation = resolve_size(validation_size, n_test)
    if n_validation and not n_validation < n_test:
        raise InvalidParameterError(f"validation_size must be in (0, {n_test}) (rows taken from test), "
                                    f"got {n_validation}")
    return n_validation


def with_validation(train, test, validation_size, rng) -> dict:
    """``validation_size`` random rows of test become validation (only when asked: no draw
    otherwise)."""
    n_validation = validation_count(validation_size, len(test))
    if not n_validation:
        return {"train": train, "test": test}
    chosen = rng.permutation(len(test))[:n_validation]
    mask = np.zeros(len(test), dtype=bool)
    mask[chosen] = True
    return {"train": train, "validation": np.sort(test[mask]), "test": np.sort(test[~mask])}


def tmcd_description(parameters: dict, validation_rows: int) -> str:
    """What the card says of a ``tmcd`` config: the bound searched under and the divergences
    measured on the final splits, saying plainly when the atom divergence is above the bound."""
    bound, figures = parameters["max_atom_divergence"], parameters["divergences"]
    text = (f"{DESCRIPTIONS['tmcd'].format(bound=f'{bound:g}')}. Measured on the final train and test splits: "
            f"compound divergence {figures['compound_divergence']:.4f}, atom divergence {figures['atom_divergence']:.4f}")
    if not parameters["search_met_bound"]:
        text += (f". **The search found no split within the bound**: this is its start split (Shaw et al.'s balanced "
                 f"shuffle), atom divergence {parameters['search_atom_divergence']:.4f} > {bound:g}; raise "
                 "--max-atom-divergence or --iterations")
    elif figures["atom_divergence"] > bound + 1e-12:
        text += (f". **Atom divergence above the bound** ({figures['atom_divergence']:.4f} > {bound:g}): the search "
                 f"met it ({parameters['search_atom_divergence']:.4f}), then {validation_rows} test rows moved to "
                 "validation changed it")
    return text + ". Built by resplit."


def _search(name, atoms, compounds, parsed, inputs, targets, target_language, n_train, *, iterations, restarts,
            max_atom_divergence, reference, random_state, progress):
    """One built config over the parseable rows: (Split of positions among them, parameters, description)."""
    from split_builders.splitters.tmcd import TMCDSplitter, published_numbering, reference_tmcd

    if name == "tmcd":
        kept_atoms, kept_compounds = [atoms[r] for r in parsed], [compounds[r] for r in parsed]
        if reference:
            train, test, info = reference_tmcd(kept_atoms, kept_compounds, train_size=n_train,
                                               random_state=random_state, max_iterations=REFERENCE_ITERATIONS)
            # Identical examples are interchangeable: number them as the published files do.
            train, test = published_numbering(train, test, [(inputs[r], targets[r]) for r in parsed])
            parameters = {"train_size": n_train, "random_state": random_state, "max_iterations": REFERENCE_ITERATIONS,
                          "search": "reference first-improvement greedy (Shaw et al. 2021)", **info}
            return Split.of(train, (), test), parameters, DESCRIPTIONS["tmcd_reference"]
        splitter = TMCDSplitter(train_size=n_train, n_iterations=iterations, max_atom_divergence=max_atom_divergence,
                                n_restarts=restarts, random_state=random_state)
        split = splitter.split(atoms=kept_atoms, compounds=kept_compounds, progress=progress)
        parameters = {**splitter.get_params(), "search": "annealed sampled swaps (resplit)", **_search_record(splitter)}
        return split, parameters, DESCRIPTIONS["tmcd"].format(bound=f"{max_atom_divergence:g}")
    if name == "length":
        splitter = LongestToTestSplitter(train_size=n_train)
        split = splitter.split(inputs=[inputs[r] for r in parsed], targets=[targets[r] for r in parsed])
    elif name == "template":
        splitter = TemplateSplitter(train_size=n_train, target_language=target_language, random_state=random_state)
        split = splitter.split(targets=[targets[r] for r in parsed])
    elif name == "standard":
        splitter = StandardSplitter(train_size=n_train, random_state=random_state)
        split = splitter.split(parsed.size)
    else:
        raise InvalidParameterError(f"unknown config {name!r}; known: {', '.join(BUILT)}")
    return split, splitter.get_params(), DESCRIPTIONS[name]


def _search_record(splitter) -> dict:
    """What a TMCD config records of its search besides the parameters: atom swaps, whether it met the bound,
    its atom divergence, each restart's compound divergence and the restart kept."""
    return {"atom_swaps": splitter.atom_swaps_, "search_met_bound": splitter.bound_met_,
            "search_atom_divergence": round(float(splitter.atom_divergence_), 6),
            "restart_compound_divergences": splitter.restart_divergences_, "restart_kept": splitter.restart_}


def _search_groups(name, units, atoms, compounds, parsed, inputs, targets, target_language, n_train, *,
                   iterations, restarts, max_atom_divergence, random_state, progress):
    """One built config over whole groups (``units``, numbered over the parseable rows): (Split of
    positions among the parseable rows, parameters, description)."""
    from collections import Counter

    from split_builders.splitters.groups import Groups, group_codes
    from split_builders.splitters.tmcd import TMCDSplitter

    # The share of groups that train, so that train holds about n_train rows.
    n_units = units.n_groups
    train_units = int(min(max(round(n_train * n_units / parsed.size), 1), n_units - 1))
    if name == "tmcd":
        kept_atoms = [atoms[r] for r in parsed]
        unit_compounds = [Counter() for _ in range(n_units)]
        for position, unit in enumerate(units.codes.tolist()):
            unit_compounds[unit].update(compounds[parsed[position]])
        splitter = TMCDSplitter(train_size=train_units, n_iterations=iterations,
                                max_atom_divergence=max_atom_divergence, n_restarts=restarts, random_state=random_state)
        split = splitter.split(atoms=units.union(kept_atoms), compounds=unit_compounds, progress=progress)
        parameters = {**splitter.get_params(), "search": "annealed sampled swaps of whole groups (resplit)",
                      **_search_record(splitter)}
        what = DESCRIPTIONS["tmcd"].format(bound=f"{max_atom_divergence:g}")
        return Split.of(units.rows(split.train), (), units.rows(split.test)), parameters, what
    if name == "standard":  # groups in a seeded random order
        order = np.random.default_rng(random_state).permutation(n_units)
        parameters = {"train_size": n_train, "random_state": random_state}
    elif name == "length":
        words = np.asarray([len(inputs[r].split(" ")) for r in parsed], dtype=np.float64)
        order = np.argsort(units.mean(words), kind="stable")  # shortest groups train
        parameters = {"train_size": n_train, "by": "input"}
    elif name == "template":
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        from loading_scripts.labels import encode_labels

        templates, _ = encode_labels([program_template(targets[r], target_language) for r in parsed], order="first")
        # Groups and templates as one graph: a component holds every group that shares a template.
        graph = coo_matrix((np.ones(parsed.size), (units.codes, n_units + templates)),
                           shape=(n_units + templates.max() + 1,) * 2)
        _, component = connected_components(graph, directed=False)
        merged = Groups(group_codes(component[units.codes]))
        order = list(range(merged.n_groups))  # components shuffled as the template split shuffles templates
        random.Random(random_state).shuffle(order)
        order = np.asarray(order, dtype=np.int64)
        train = _fill(order, merged, n_train)
        parameters = {"train_size": n_train, "target_language": target_language, "random_state": random_state,
                      "components": merged.n_groups}
        return Split.of(merged.rows(train), (), merged.rows(np.setdiff1d(order, train))), parameters, \
            DESCRIPTIONS[name]
    else:
        raise InvalidParameterError(f"unknown config {name!r}; known: {', '.join(BUILT)}")
    train = _fill(order, units, n_train)
    return Split.of(units.rows(train), (), units.rows(np.setdiff1d(order, train))), parameters, DESCRIPTIONS[name]


def _fill(order, groups, n_train: int) -> np.ndarray:
    """The group ids of ``order`` that train: taken in order until the next would pass ``n_train``
    rows (at least one; at least one group left for test)."""
    cumulative = np.cumsum(groups.sizes[order])
    taken = int(np.searchsorted(cumulative, n_train, side="right"))
    taken = min(max(taken, 1), order.size - 1)
    return order[:taken]


def _with_validation_groups(train, test, validation_size, rng, units) -> dict:
    """``validation_size`` rows (a count, or a fraction of test rounded up) of whole groups of test
    become validation: test's groups in a random order, taken until the count is reached."""
    n_validation = validation_count(validation_size, len(test))
    if not n_validation:
        return {"train": np.asarray(train), "test": np.asarray(test)}
    test_units = np.unique(units.codes[np.asarray(test, dtype=np.int64)])
    shuffled = test_units[rng.permutation(test_units.size)]
    cut = int(np.searchsorted(np.cumsum(units.sizes[shuffled]), n_validation, side="left")) + 1
    cut = min(cut, test_units.size - 1)
    if cut < 1:
        raise InvalidParameterError("test holds a single group: no whole group can move to validation")
    return {"train": np.asarray(train), "validation": units.rows(shuffled[:cut]), "test": units.rows(shuffled[cut:])}


def _published_configs(published: dict, published_from: dict, source_ids, *, built, membership) -> list:
    """The splits published with the dataset, taken as released (not derived): each records the
    ``membership`` fingerprint of every split's ``source_ids``, so verify can tell when they change."""
    source_ids = np.asarray(source_ids, dtype=np.int64)
    configs = []
    for name, split in published.items():
        origin = published_from[name]
        indices = {k: np.asarray(v, dtype=np.int64) for k, v in split.items()}
        members = {k: membership(source_ids[v]) for k, v in indices.items()}
        # SCAN publishes a "length" split too: the published one is renamed, not refused.
        configs.append(ConfigSplit(f"published_{name}" if name in built else name, indices, method="published",
                                   parameters={"file": origin, "source_ids_sha256": members},
                                   description=f"Published split, as released: {origin}."))
    return configs


def _likelihood_configs(scores, atoms, parsed, n_train: int, random_state, *, groups=None,
                        group_field=None) -> list:
    """Likelihood Splits of the parseable rows from the given scores, under the atom constraint
    (whole groups with ``groups``, numbered over the parseable rows)."""
    from split_builders.splitters.likelihood import likelihood_configs

    configs = likelihood_configs(np.asarray(scores)[parsed], setting="given", train_size=n_train,
                                 atoms=[atoms[r] for r in parsed], random_state=random_state, groups=groups,
                                 group_field=group_field)
    for config in configs:
        config.indices = {k: parsed[np.asarray(v, dtype=np.int64)] for k, v in config.indices.items()}
    return configs


def _divergences(config, atoms, compounds) -> dict:
    """Train against test: compound and atom divergence, unseen atoms, novel compounds (rows of a
    lexical copy count as the rows they copy)."""
    from split_builders.signals.programs.divergence import split_divergences

    n_rows = len(atoms)
    rows = {k: [int(r) % n_rows for r in v if atoms[int(r) % n_rows] is not None] for k, v in config.indices.items()}
    figures = split_divergences(rows["train"], rows.get("test", []), atoms, compounds)
    return {k: (round(float(v), 6) if isinstance(v, float) else int(v)) for k, v in figures.items()}


def _lexical_configs(base: list, wugs: dict, n_rows: int) -> list:
    """A copy of every config but the likelihood ones per wug kind, over that kind's copy of the rows."""
    copies = []
    for offset, (kind, replacer) in enumerate(wugs.items(), start=1):
        for config in (c for c in base if c.method != "likelihood"):
            copies.append(ConfigSplit(
                f"{config.name}_{kind}", {k: np.asarray(v) + offset * n_rows for k, v in config.indices.items()},
                method=f"{config.method}+{kind}",
                # a deep copy: a shared nested dict would be written as a YAML anchor
                parameters={**copy.deepcopy(config.parameters), "wug": kind, "wug_seed": replacer.random_state},
                description=f"{config.description} Lexical variant `{kind}`: chosen items replaced by wug "
                            "words in inputs and targets (map below)."))
    return copies
