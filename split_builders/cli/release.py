"""``resplit release RECIPE`` (build, verify and optionally publish a recipe), ``resplit verify
FOLDER | HUB_ID[@REV]`` and ``resplit diff A B``."""

from __future__ import annotations

import sys
from pathlib import Path


def _recipe_path(text: str) -> Path:
    """A recipe file, or the name of one in ``releases/``."""
    from split_builders.release.recipe import recipes_folder

    path = Path(text)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return recipes_folder() / f"{text}.yaml"


def run_list(args) -> int:
    from split_builders.release.recipe import list_recipes

    recipes = list_recipes(args.recipes_dir)  # refuses a missing or empty folder (not an empty table)
    print(f"{'recipe':<26}{'method':<13}{'pinned':<8}source here")
    for recipe in recipes:
        if recipe.kind == "metric":
            print(f"{recipe.name:<26}{'(metric)':<13}{'-':<8}{recipe.space}")
            continue
        local = recipe.local_source()
        print(f"{recipe.name:<26}{recipe.method:<13}{'yes' if recipe.pinned() else 'NO':<8}"
              + (str(local) if local else f"no local copy (Hub: {recipe.source.get('hub', '-')})"))
    return 0


def run_release(args) -> int:
    from split_builders.builder import build
    from split_builders.errors import InvalidParameterError
    from split_builders.release.recipe import check_local_copy, load_recipe, parse_settings
    from split_builders.publishing.verify import verify

    if args.list:
        return run_list(args)
    if not args.recipe:
        raise InvalidParameterError("give a recipe (a file or a name in releases/), or --list")
    recipe = load_recipe(_recipe_path(args.recipe))
    settings = parse_settings(args.set)
    if args.push and not args.version:
        raise InvalidParameterError("--push needs --version X.Y.Z")
    if args.push and (settings or args.limit):
        # a published version is the recipe as written: trial changes would make its card lie
        raise InvalidParameterError("--set and --limit make a trial build, which is not published: drop them or "
                                    "change the recipe file")
    if args.push and not recipe.pinned():
        raise InvalidParameterError(f"recipe {recipe.name} is not pinned (source revision or file sha256, model "
                                    "revision): pin it before publishing")
    repo_id = recipe.repo_id(args.org) if args.push else None
    if recipe.kind == "metric":
        return _release_metric(recipe, args, repo_id)
    _declared_overrides(recipe, {"scores": args.scores})  # before the source is read: --scores it takes?
    against = recipe.against_datasets()  # a bad `against:` entry is refused here, not after the whole build

    source = Path(args.source) if args.source else recipe.local_source()
    if source is not None:
        if not source.exists():
            raise InvalidParameterError(f"source {str(source)!r} does not exist")
        problems = check_local_copy(recipe, source)
        if problems:
            raise InvalidParameterError(f"the local copy differs from the recipe's pinned files: {problems[0]}")
    elif recipe.source.get("hub"):
        source = recipe.source["hub"]
    else:
        raise InvalidParameterError(f"recipe {recipe.name}: no local copy of the source here; pass --source PATH")
    overrides = {"limit": args.limit}
    if args.scores:
        overrides.update(scores=args.scores, finetune=False)  # given scores stand for the whole signal
    elif recipe.model and recipe.model.get("hub"):
        overrides.update(lm=recipe.model["hub"], lm_revision=recipe.model.get("revision"))
    overrides = _declared_overrides(recipe, overrides)
    out = Path(args.out or Path("out") / recipe.name)
    options = recipe.method_options(source=source, out=out, overwrite=args.overwrite, settings=settings, **overrides)
    from split_builders.publishing.against import record_against, resolved_against

    # every `against:` dataset opened before the build (reachable, its splits, fields and the release's input
    # columns where the options name them; a Hub id downloaded once)
    with resolved_against(against, options=options) as against:
        result = build(recipe.method, options, progress=not args.no_progress, views=args.enable_views,
                       **recipe.card_overrides(args.org))
        if result.out is None:
            return 0
        if against:  # the recipe's `against:`: the card states what the evaluation splits were checked against
            record_against(result.out, against, progress=not args.no_progress)
    print(f"built {recipe.name}: {len(result.configs)} configs in {result.out}")
    report = verify(str(result.out), load=not args.no_load_check)
    _print_report(report)
    if not report.ok:
        print(f"resplit release: the build of {recipe.name} does not verify; not published", file=sys.stderr)
        return 1
    if args.push:
        from split_builders.publishing.publish import push_release

        push_release(result.out, repo_id, args.version, message=f"resplit release {recipe.name} v{args.version}")
    return 0


def _declared_overrides(recipe, overrides: dict) -> dict:
    """The command line's overrides that the recipe's method declares in its ``Options``: ``--scores`` for a
    method that takes none is refused in one line, and what it implies (no fine-tuning, the recipe's model)
    is passed only where the method has such an option."""
    import dataclasses

    from split_builders.registry import get_method
    from split_builders.errors import InvalidParameterError

    method = get_method(recipe.method)
    declared = {spec.name for spec in dataclasses.fields(method.Options)}
    if overrides.get("scores") is not None and "scores" not in declared:
        raise InvalidParameterError(f"--scores: recipe {recipe.name} builds {method.name}, which takes no scores "
                                    "(its signal is computed from the rows); drop --scores")
    return {key: value for key, value in overrides.items() if key in declared}


def _release_metric(recipe, args, repo_id) -> int:
    from split_builders.publishing.publish import check_metric_folder, push_metric
    from split_builders.release.recipe import recipes_folder

    folder = recipes_folder().parent / recipe.space
    check_metric_folder(folder)
    if args.push:
        push_metric(folder, repo_id, args.version)
    else:
        print(f"{recipe.name}: {folder} is a valid metric Space folder (publish it with --push --version X.Y.Z)")
    return 0


def _print_report(report, *, every: bool = False, complete: bool = False) -> None:
    """Findings that are not identical (every one with ``every``), then a one-line summary (``complete``: a config
    not checked at level 1 or 2 is not OK)."""
    for finding in report.findings:
        if finding.status != "identical" or every:
            print(finding.line())
    counts = {}
    for finding in report.findings:
        counts[finding.status] = counts.get(finding.status, 0) + 1
    levels = sorted({f.level for f in report.findings})
    if report.built_by:
        print(f"{report.target}: built by {report.built_by}")
    print(f"{report.target}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
          + f" (levels {', '.join(map(str, levels))})" + (" -> DIFFERS" if not report.ok else " -> NOT ALL CHECKED" if complete and report.unchecked else " -> OK"))



def run_verify(args) -> int:
    from split_builders.builder import rebuild
    from split_builders.publishing.verify import verify

    report = verify(args.target, rescore=args.rescore, load=not args.no_load_check, source=args.source,
                    allow_extra=args.allow_extra, rebuild=rebuild)
    _print_report(report, every=args.all, complete=True)
    if report.ok and report.unchecked:
        configs = sorted({f.config for f in report.unchecked})
        print(f"{report.target}: {len(configs)} config(s) not checked at level 2 ({', '.join(configs)}): "
              "nothing differs, but not everything was checked -> exit 1")
        return 1
    return 0 if report.ok else 1


def run_diff(args) -> int:
    from split_builders.publishing.diff import diff, format_diff, json_line

    result = diff(args.a, args.b, configs=args.configs)  # --configs: the others are not read
    for line in format_diff(result):
        print(line)
    if args.json:
        print(json_line(result))
    return 0


def add_parsers(subparsers) -> None:
    from split_builders.cli.evidence import add_view_option

    parser = subparsers.add_parser("release", help="build a release from its recipe, verify it, optionally publish",
                                   description="Build RECIPE (releases/<name>.yaml or a path) into --out, verify it "
                                               "(levels 1 and 2) and, with --push, publish it as version X.Y.Z.")
    parser.add_argument("recipe", nargs="?", help="a recipe file or a name in releases/")
    parser.add_argument("--list", action="store_true", help="every recipe and whether its source is available here")
    parser.add_argument("--recipes-dir", help="folder of recipes for --list (default: releases/ of this checkout)")
    parser.add_argument("--out", help="output folder (default: out/<recipe>)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    parser.add_argument("--source", help="a local copy of the source (default: the recipe's local copy, else its Hub id)")
    parser.add_argument("--scores", help=".npy of pre-computed scores (likelihood recipes on a machine without the model)")
    parser.add_argument("--limit", type=int, help="only the first N rows (a quick trial build, not for publishing)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="change one of the recipe's options for a trial build (repeatable; not for publishing), "
                             "e.g. --set train_size=400")
    parser.add_argument("--org", help="the Hub organisation of the recipe's {org} (default: $RESPLIT_ORG)")
    parser.add_argument("--push", action="store_true", help="publish the verified build (needs --version)")
    parser.add_argument("--version", help="X.Y.Z, newer than every published version")
    parser.add_argument("--no-load-check", action="store_true", help="verify without loading every config")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_view_option(parser)
    parser.set_defaults(func=run_release)

    parser = subparsers.add_parser("verify", help="check a release: file hashes, rows, and its configs re-derived",
                                   description="Verify FOLDER or HUB_ID[@REVISION]: level 1 integrity, level 2 "
                                               "re-derive every config from the released rows, level 3 (--rescore) "
                                               "rebuild from the source. Exit 0 when every file and every config is "
                                               "identical at levels 1 and 2 (level 3 may say 'not checked': nothing "
                                               "to recompute, e.g. given scores); exit 1 when anything differs or a "
                                               "config is not checked at level 2.")
    parser.add_argument("target", help="a release folder or HUB_ID[@REVISION]")
    parser.add_argument("--rescore", action="store_true", help="also rebuild from the source and the model")
    parser.add_argument("--source", help="with --rescore: where the source is (default: the location the card records)")
    parser.add_argument("--all", action="store_true", help="print identical checks too")
    parser.add_argument("--no-load-check", action="store_true", help="skip loading every config with datasets")
    parser.add_argument("--allow-extra", action="store_true",
                        help="accept files in the folder that the card does not name (refused otherwise)")
    parser.set_defaults(func=run_verify)

    parser = subparsers.add_parser("diff", help="rows added, removed and moved between two releases, and what changed",
                                   description="Compare A and B (folders or HUB_ID@REVISION) per config and split.")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--configs", type=lambda text: [c.strip() for c in text.split(",") if c.strip()] or None,
                        metavar="A,B", help="only these configs (default: every config); the others are not read")
    parser.set_defaults(func=run_diff)
