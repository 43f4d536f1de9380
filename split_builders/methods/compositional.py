"""Build a compositional release: TMCD, length, template, standard, published and lexical-variant
configs of one dataset (plus Likelihood Splits when scores are given), with a card that reports
atom and compound divergence per config. Pure orchestration: splitters choose rows, the release
writer writes files.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np

from loading_scripts.compositional import CompositionalSource, guess_target_language, rows_dataset
from split_builders.signals.programs.atoms import atoms_by_row
from split_builders.signals.programs.compounds import compounds_by_row
from split_builders.signals.programs.divergence import split_divergences
from split_builders.errors import InvalidParameterError, SourceLoadError
from split_builders.release.writer import ConfigSplit, write_release

BUILT = ("tmcd", "length", "template", "standard")
# The side of a row whose structure the atoms and compounds describe.
PROGRAM_SIDE = {"funql": "target", "sql": "target", "scan": "input", "cogs": "target"}


def load_compositional(source: str) -> CompositionalSource:
    """A GeoQuery/Spider/SCAN/COGS folder, an NQG-format TSV file (``input TAB target``), or a Hub
    dataset id (:func:`loading_scripts.compositional.from_hub`)."""
    from loading_scripts import cogs, geoquery, scan, spider
    from loading_scripts.nqg import SOURCE_ID_NOTE, read_pairs

    path = Path(source)
    if path.is_dir():
        for marker, module in (("geoquery_nqg.tsv", geoquery), ("tasks.txt", scan), ("tasks.txt.gz", scan),
                               ("train.tsv", cogs), ("train.tsv.gz", cogs), ("dev.json", spider), ("dev.json.gz", spider)):
            if (path / marker).is_file():
                return module.load(path)
        raise SourceLoadError(f"{source!r}: not a GeoQuery, Spider, SCAN or COGS folder")
    if path.is_file():
        if path.name.startswith("geoquery_nqg"):
            return geoquery.load(path)
        pairs = read_pairs(path)
        targets = [p[1] for p in pairs]
        return CompositionalSource(rows_dataset([p[0] for p in pairs], targets), name=str(path),
                                   target_language=guess_target_language(targets), source_id_note=SOURCE_ID_NOTE)
    if "/" in source and not source.startswith((".", "/", "~")):
        from loading_scripts.compositional import from_hub

        return from_hub(source)
    raise SourceLoadError(f"source {source!r} does not exist (give a file in NQG format, a dataset folder "
                          "or a Hub id org/name)")


def _with_validation(train, test, validation_size: int, rng) -> dict:
    """``validation_size`` random rows of test become validation (only when asked)."""
    if not validation_size:
        return {"train": train, "test": test}
    if not 0 < validation_size < len(test):
        raise InvalidParameterError(f"validation_size must be in (0, {len(test)}) (rows taken from test), got {validation_size}")
    chosen = rng.permutation(len(test))[:validation_size]
    mask = np.zeros(len(test), dtype=bool)
    mask[chosen] = True
    return {"train": train, "validation": np.sort(test[mask]), "test": np.sort(test[~mask])}


def build_compositional(source: str, *, out, target_language: str | None = None, train_size=None,
                        seed: int = 1, configs=("tmcd",), reference: bool = False, n_iterations: int = 50_000,
                        max_atom_divergence: float = 0.05,
                        validation_size: int = 0, lexical: bool = False, published: bool = True,
                        scores: str | None = None, overwrite: bool = False) -> dict:
    """Build the release folder; returns per-config figures (sizes, divergences, seconds)."""
    from split_builders.splitters.compositional import LongestToTestSplitter, StandardSplitter, TemplateSplitter
    from split_builders.splitters.tmcd import TMCDSplitter, check_train_size, published_numbering, reference_tmcd

    src = load_compositional(source)
    language = target_language or src.target_language
    unknown = [c for c in configs if c not in BUILT]
    if unknown:
        raise InvalidParameterError(f"unknown config(s) {unknown}; known: {', '.join(BUILT)}")
    programs = src.inputs if PROGRAM_SIDE.get(language) == "input" else src.targets
    row_atoms = atoms_by_row(programs, language)
    compounds = compounds_by_row(programs, language)
    parsed = np.asarray(row_atoms.parsed_rows, dtype=np.int64)
    if parsed.size < 2:
        raise InvalidParameterError(f"{len(parsed)} parseable program(s) in {src.name}; "
                                    + row_atoms.describe_unparseable(src.source_ids))
    atoms_p = [row_atoms.atoms[r] for r in parsed]
    compounds_p = [compounds[r] for r in parsed]
    n_train = check_train_size(train_size if train_size is not None else 0.5, len(parsed))
    rng = np.random.default_rng(seed)
    back = lambda idx: parsed[np.asarray(idx, dtype=np.int64)]  # positions among parsed -> rows
    built, figures = [], {}

    for name in configs:
        started = time.perf_counter()
        if name == "tmcd" and reference:
            tr, te, info = reference_tmcd(atoms_p, compounds_p, train_size=n_train, random_state=seed)
            pairs = [(src.inputs[r], src.targets[r]) for r in parsed]
            tr, te = published_numbering(tr, te, pairs)
            params = {"train_size": n_train, "random_state": seed, "max_iterations": 1000,
                      "search": "reference first-improvement greedy (Shaw et al. 2021)", **info}
            what = "TMCD, Shaw et al.'s reference search reproduced choice for choice"
        elif name == "tmcd":
            splitter = TMCDSplitter(train_size=n_train, n_iterations=n_iterations,
                                    max_atom_divergence=max_atom_divergence, random_state=seed)
            tr, te = splitter.split(atoms_p, compounds_p)
            params = {**splitter.get_params(), "atom_swaps": splitter.atom_swaps_}
            what = "TMCD: compound divergence maximised under the atom constraint, atom divergence <= 0.05"
        elif name == "length":
            splitter = LongestToTestSplitter(train_size=n_train)
            tr, te = splitter.split([src.inputs[r] for r in parsed], [src.targets[r] for r in parsed])
            params, what = splitter.get_params(), "length: the longest inputs held out for test"
        elif name == "template":
            splitter = TemplateSplitter(train_size=n_train, target_language=language, random_state=seed)
            tr, te = splitter.split([src.targets[r] for r in parsed])
            params, what = splitter.get_params(), "template: program templates as groups, none in both train and test"
        else:
            splitter = StandardSplitter(train_size=n_train, random_state=seed)
            tr, te = splitter.split(len(parsed))
            params, what = splitter.get_params(), "standard: random train/test split"
        seconds = time.perf_counter() - started
        indices = _with_validation(back(tr), back(te), validation_size, rng)
        built.append(ConfigSplit(name, indices, method=name, parameters={**params, "target_language": language},
                                 description=f"{what}. Built by resplit."))
        figures[name] = {"seconds": seconds}

    if published:
        for name, split in src.published.items():
            built.append(ConfigSplit(name, {k: np.asarray(v) for k, v in split.items()}, method="published",
                                     parameters={"file": src.published_from[name]},
                                     description=f"Published split, as released: {src.published_from[name]}."))
    if scores is not None:
        from split_builders.splitters.likelihood import likelihood_configs
        from split_builders.methods.likelihood import _given_scores

        values = _given_scores(scores, src)[parsed]
        for config in likelihood_configs(values, setting="given", train_size=n_train, atoms=atoms_p, random_state=seed):
            config.indices = {k: back(v) for k, v in config.indices.items()}
            built.append(config)

    rows = src.rows.add_column("variant", ["original"] * len(src))
    lexical_maps = {}
    if lexical:
        import datasets

        from split_builders.signals.programs.lexical import KINDS, WugReplacer, shared_items

        items = shared_items(src.inputs, [row_atoms.atoms[r] for r in parsed])
        base_configs = [c for c in built if c.method != "likelihood"]
        variants = [rows]
        for offset, kind in enumerate(KINDS, start=1):
            replacer = WugReplacer(kind=kind).fit(items)
            lexical_maps[kind] = replacer.mapping_
            columns = {c: rows[c] for c in rows.column_names}
            columns.update(input=replacer.transform(src.inputs), target=replacer.transform(src.targets),
                           variant=[kind] * len(src))
            variants.append(datasets.Dataset.from_dict(columns, features=rows.features))
            for config in base_configs:
                built.append(ConfigSplit(
                    f"{config.name}_{kind}", {k: np.asarray(v) + offset * len(src) for k, v in config.indices.items()},
                    method=f"{config.method}+{kind}", parameters={**config.parameters, "wug": kind, "wug_seed": 555},
                    description=f"{config.description} Lexical variant `{kind}`: chosen items replaced by wug "
                                "words in inputs and targets (map below)."))
        rows = datasets.concatenate_datasets(variants)

    n_rows = len(src)
    all_atoms = row_atoms.atoms * (len(rows) // n_rows)
    all_compounds = compounds * (len(rows) // n_rows)
    for config in built:
        train, test = config.indices["train"], config.indices["test"]
        train_p = [int(r) for r in train if all_atoms[r] is not None]
        test_p = [int(r) for r in test if all_atoms[r] is not None]
        figures.setdefault(config.name, {}).update(
            {k: len(v) for k, v in config.indices.items()},
            **split_divergences(train_p, test_p, all_atoms, all_compounds))
    input_lengths = np.asarray([len(t.split()) for t in rows["input"]])

    def render_card(staging: Path, written) -> str:
        return _card(src, language, built, figures, input_lengths, row_atoms, lexical_maps, staging)

    provenance = {"source": src.name, "source_id": src.source_id_note, "target_language": language, "seed": seed,
                  "unparseable_programs_excluded": len(row_atoms.unparseable),
                  "figures": {k: {kk: (round(vv, 6) if isinstance(vv, float) else vv) for kk, vv in v.items()
                                  if kk != "seconds"} for k, v in figures.items()}}
    if scores is not None:
        provenance["scores_sha256"] = hashlib.sha256(Path(scores).read_bytes()).hexdigest()
    write_release(out, rows, built, provenance=provenance, render_card=render_card, license=src.license,
                  pretty_name=f"{Path(src.name).name} compositional splits", overwrite=overwrite)
    return {"configs": [c.name for c in built], "figures": figures, "unparseable": len(row_atoms.unparseable)}


def _histogram(path: Path, train_lengths, test_lengths, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    both = np.concatenate([train_lengths, test_lengths])
    bins = np.arange(both.min(), both.max() + 2) - 0.5
    ax.hist(train_lengths, bins=bins, density=True, histtype="step", color="#4c72b0", label=f"train ({len(train_lengths)})")
    ax.hist(test_lengths, bins=bins, density=True, histtype="step", color="#c44e52", label=f"test ({len(test_lengths)})")
    ax.set_xlabel("input length (words)")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=72, metadata={"Software": None})  # no version string: stable bytes
    plt.close(fig)


def _card(src, language, built, figures, input_lengths, row_atoms, lexical_maps, staging: Path) -> str:
    lines = [f"# Compositional splits of `{Path(src.name).name}`", "",
             f"Target language `{language}`; `source_id` is the {src.source_id_note}.", ""]
    if row_atoms.unparseable:
        lines += [f"**Excluded:** {row_atoms.describe_unparseable(src.source_ids)}. These rows are in no split.", ""]
    lines += ["| config | train | validation | test | compound divergence | atom divergence | test with novel compound | test with unseen atom | source |",
              "|---|---|---|---|---|---|---|---|---|"]
    for c in built:
        f = figures[c.name]
        origin = c.parameters.get("file", "resplit") if c.method == "published" else f"resplit ({c.method})"
        lines.append(f"| `{c.name}` | {f['train']} | {f.get('validation', 0)} | {f['test']} | {f['compound_divergence']:.4f} | "
                     f"{f['atom_divergence']:.4f} | {100 * f['test_share_with_novel_compound']:.1f}% | "
                     f"{f['test_rows_with_unseen_atom']} | {origin} |")
    lines += ["", "Divergences: Chernoff coefficient, alpha 0.1 over compound counts, alpha 0.5 over atoms "
                  "counted once per example (Keysers et al. 2020).", ""]
    for c in built:
        figure = f"figures/{c.name}.png"
        _histogram(staging / figure, input_lengths[np.asarray(c.indices["train"], dtype=np.int64)],
                   input_lengths[np.asarray(c.indices["test"], dtype=np.int64)], c.name)
        lines += [f"### `{c.name}`", "", c.description, "", f"![input lengths, train vs test]({figure})", ""]
    for kind, mapping in lexical_maps.items():
        lines += [f"### Wug-word map `{kind}` (seed 555)", "", "| item | replacement |", "|---|---|"]
        lines += [f"| `{k}` | `{v}` |" for k, v in mapping.items()] + [""]
    return "\n".join(lines)
