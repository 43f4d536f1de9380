"""``resplit curriculum``: the CURRICULUM phenomena as one Hub-style folder of configs."""

from __future__ import annotations

import sys

from loading_scripts.curriculum import BASE_URL


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "curriculum", help="CURRICULUM's 36 NLI phenomena as loadable configs (+ hypothesis-only variants)",
        description="Read the released <phenomenon>.zip files and write one config per phenomenon "
                    "(train, validation) and a <phenomenon>_hypothesis_only variant. With --pvi, also "
                    "<phenomenon>_simple/_hard/_simple_to_hard/_hard_to_simple configs and I_V in the card.")
    parser.add_argument("--data", required=True,
                        help="folder with the zips (or its parent holding tasks/ and tasks.json), or a URL "
                             "prefix holding <name>.zip files, e.g. " + BASE_URL + " (downloaded once into "
                             "$RESPLIT_CACHE/curriculum)")
    parser.add_argument("--phenomena", help="comma-separated subset (default: every zip)")
    parser.add_argument("--no-hypothesis-only", action="store_true", help="skip the hypothesis-only variants")
    parser.add_argument("--pvi", action="store_true",
                        help="compute cross-fitted PVI per phenomenon (CPU family by default) and add "
                             "difficulty configs")
    parser.add_argument("--folds", type=int, default=5, help="cross-fitting folds with --pvi (default 5)")
    parser.add_argument("--curriculum-compat", action="store_true",
                        help="with --pvi: CURRICULUM's midrange threshold and 60/40 division")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--cache-dir", help="per-fold PVI checkpoints (default: $RESPLIT_CACHE/pvi)")
    parser.add_argument("--out", required=True, help="output folder (must not exist unless --overwrite)")
    parser.add_argument("--overwrite", action="store_true")
    parser.set_defaults(func=run)


def build_curriculum(data, *, out, phenomena=None, hypothesis_only=True, pvi=False, folds=5,
                     curriculum_compat=False, seed=42, cache_dir=None, family=None, overwrite=False, log=None):
    """Write the CURRICULUM release; returns ``(out, phenomena, iv)`` (``iv``: {name: I_V} with ``pvi``)."""
    from loading_scripts.curriculum import card_markdown, curriculum_configs, read_curriculum
    from split_builders.release.writer import write_release

    read = read_curriculum(data, phenomena=phenomena)
    configs = curriculum_configs(read, hypothesis_only=hypothesis_only)
    iv = {}
    if pvi:
        from split_builders.splitters.difficulty import (DifficultySplitter, difficulty_configs, difficulty_indices,
                                               with_pvi_columns)
        from split_builders.signals.pvi.crossfit import CrossFitPVI
        from split_builders.cli.pvi import default_cache_dir
        from split_builders.signals.pvi.families import HashedNgramFamily

        family = family or HashedNgramFamily(random_state=seed)
        scorer = CrossFitPVI(family, n_folds=folds, random_state=seed, cache_dir=cache_dir or default_cache_dir())
        splitter = (DifficultySplitter.curriculum_compat() if curriculum_compat
                    else DifficultySplitter(random_state=seed))
        for p in read:
            labels = p.rows["label"]
            premises = p.rows["premise"]
            # Rows sharing a premise share a fold (see CrossFitPVI.compute's groups).
            result = scorer.compute(list(zip(premises, p.rows["hypothesis"])), labels, len(p.label_set),
                                    groups=premises)
            # I_V on the released validation rows: held out from the official train split as the paper's is.
            iv[p.name] = float(result.pvi[p.split_sizes["train"]:].mean())
            indices = difficulty_indices(splitter.split(result.pvi, labels))
            params = {**splitter.get_params(), "folds": folds, "family": family.fingerprint()}
            configs += difficulty_configs(indices, parameters=params, rows=with_pvi_columns(p.rows, result, indices),
                                          prefix=p.name + "_")
            if log:
                log(f"{p.name}: I_V {iv[p.name]:.3f} bits")
    out = write_release(out, None, configs, provenance={
        "source": "CURRICULUM (Chen & Gao 2022) released zips", "method": "curriculum",
        **({"I_V": iv} if iv else {})}, render_card=lambda staging, written: card_markdown(read, iv=iv),
        license="mit", pretty_name="CURRICULUM", overwrite=overwrite)
    return out, read, iv


def run(args) -> int:
    phenomena = [p.strip() for p in args.phenomena.split(",") if p.strip()] if args.phenomena else None
    out, read, iv = build_curriculum(args.data, out=args.out, phenomena=phenomena,
                                     hypothesis_only=not args.no_hypothesis_only, pvi=args.pvi, folds=args.folds,
                                     curriculum_compat=args.curriculum_compat, seed=args.seed,
                                     cache_dir=args.cache_dir, overwrite=args.overwrite,
                                     log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"{len(read)} phenomena, {sum(len(p.rows) for p in read)} rows")
    print(f"wrote {out}\nload it with: datasets.load_dataset({str(out)!r}, {read[0].name!r})")
    return 0
