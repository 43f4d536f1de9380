"""``resplit audit | diagnose | probe | ... TARGET``: one subcommand per registered evidence view
(:mod:`split_builders.evidence`), all of one shape: TARGET (a release folder of any family, a dataset folder
with train / validation / test data files, or ``HUB_ID[@REVISION]``), ``--json``, ``--revision``,
``--no-progress`` and the view's own settings as flags."""

from __future__ import annotations

import json
import sys
import tempfile
from functools import partial
from pathlib import Path

from split_builders.errors import InvalidParameterError

CORPUS_FLAGS = ("executor", "tasks", "workers", "ngram", "text_field", "id_field", "work", "slurm_partition",
                "slurm_time", "slurm_account", "slurm_qos", "ray_address",
                # the verdicts of a corpus
                "ngram_min", "ngram_policy", "ngram_max_matches", "corpus_matches",
                "also")  # with --against-corpus only


def run_view(view, args) -> int:
    """Compute ``view`` on ``args.target`` (its settings checked first; a Hub dataset is downloaded into a
    temporary work folder), then print the report as one JSON object (``--json``, with the target and
    revision first) or as the view's table."""
    from split_builders.evidence.inputs import EvidenceInput

    settings = {s.name: s.value(getattr(args, s.name)) for s in view.settings}
    if getattr(args, "against", None) and getattr(args, "against_corpus", None):
        raise InvalidParameterError("--against and --against-corpus: give one of them (run the command once for "
                                    "each)")
    if getattr(args, "against", None) or getattr(args, "against_corpus", None):
        corpus_only = CORPUS_FLAGS
        given = [f for f in corpus_only if getattr(args, f, None) is not None]
        if getattr(args, "against", None) and given:
            raise InvalidParameterError(f"--{given[0].replace('_', '-')} needs --against-corpus SOURCE (it sets how "
                                        "a corpus is read)")
        for flag in ("against_splits", "against_fields"):
            if getattr(args, "against_corpus", None) and getattr(args, flag, None) is not None:
                raise InvalidParameterError(f"--{flag.replace('_', '-')} needs --against OTHER; a corpus has one "
                                            "text field (--text-field)")
        return run_against(view, args, settings)
    for flag in ("rows", "write_clean", "against_fields", "against_splits", "against_label_field", *CORPUS_FLAGS):
        if getattr(args, flag, None) is not None:  # given, even as ''
            raise InvalidParameterError(f"--{flag.replace('_', '-')} needs --against OTHER or --against-corpus "
                                        "SOURCE (what the evaluation rows are checked against)")
    with tempfile.TemporaryDirectory(prefix=f"resplit-{view.subcommand}-") as work:
        data = EvidenceInput.from_target(args.target, work=work, revision=args.revision,  # --configs: read no other
                                         configs=settings.get("configs") or getattr(args, "configs", None))
        report = view.compute(data, progress=not args.no_progress, **settings)
    report = {"target": args.target, **({"revision": args.revision} if args.revision else {}), **report}
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        for line in view.format_report(report):
            print(line)
    return 0


def add_parsers(subparsers) -> None:
    """The subcommands of the built-in views (a plug-in's view is added after every built-in command:
    :func:`split_builders.cli.build_parser`)."""
    from split_builders.evidence import views
    from split_builders.registry import REGISTRY

    for name, view in views().items():
        if REGISTRY.origin("views", name) == "built-in":
            add_view_parser(subparsers, view)


VIEW_HELP = ("also run the installed third-party evidence view NAME (off unless named here or in $RESPLIT_VIEWS): "
             "in a build, a section of the card and a record in the provenance; its own subcommand exists once named; "
             "repeatable")


def add_view_option(parser) -> None:
    """``--view NAME`` (repeatable, ``args.enable_views``): every command that builds, and every view's subcommand,
    takes it; :func:`views_named` reads it before the parser is built, so that a view's own subcommand exists."""
    parser.add_argument("--view", action="append", default=[], metavar="NAME", dest="enable_views", help=VIEW_HELP)


def views_named(argv) -> list:
    """The names given to ``--view`` anywhere on a command line (``argv``), read before the parser is built (the
    installed views they name are enabled for the command, their subcommands included); [] where the line cannot be
    read, which the parser then says."""
    import argparse

    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    early.add_argument("--view", action="append", default=[])
    try:
        return early.parse_known_args(argv)[0].view
    except (argparse.ArgumentError, SystemExit):
        return []


def add_view_parser(subparsers, view) -> None:
    """The subcommand of one evidence view: its target, ``--json`` and its settings as flags."""
    parser = subparsers.add_parser(view.subcommand, help=view.summary, description=view.description)
    parser.add_argument("target", help="a release or dataset folder, or HUB_ID[@REVISION]")
    parser.add_argument("--json", action="store_true", help=f"print one JSON object ({view.json_help})")
    parser.add_argument("--revision", help="the Hub revision (branch, tag or commit) of a Hub id")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    for setting in view.settings:
        parser.add_argument(setting.flag, dest=setting.name, type=setting.parse, default=setting.default,
                            help=setting.help)
    if "configs" not in {s.name for s in view.settings}:  # every view reads only the configs asked for
        from split_builders.evidence.view import names as _names

        parser.add_argument("--configs", type=_names, metavar="A,B",
                            help="only these configs (default: every config); the others are not read")
    if getattr(view, "checks_against", False):  # a view's declaration (the audit's)
        add_against_arguments(parser)
    add_view_option(parser)
    parser.set_defaults(func=partial(run_view, view))


def add_against_arguments(parser) -> None:
    """The flags of a view that checks a target's evaluation rows against other datasets (``--against``)."""
    from split_builders.evidence.view import names

    parser.add_argument("--against", nargs="+", metavar="OTHER",
                        help="check every evaluation row against these datasets (a release folder, a dataset folder, "
                             "a CSV / TSV / JSONL / Parquet file, or HUB_ID[@REVISION]): its tier, clean, "
                             "input_contaminated or input_label_contaminated, and its match")
    parser.add_argument("--against-splits", type=names, metavar="A,B",
                        help="only these splits of the other datasets (default: all of them)")
    parser.add_argument("--against-fields", type=names, metavar="A,B",
                        help="the other datasets' input columns, in the order of the target's input fields "
                             "(default: the same names)")
    parser.add_argument("--against-label-field", metavar="NAME",
                        help="the other datasets' (or the corpus's) label column (default: the target's label name, "
                             "else label, labels or gold_label)")
    corpus = parser.add_argument_group("a pretraining corpus (datatrove; pip install 'resplit[corpus]')")
    corpus.add_argument("--against-corpus", metavar="SOURCE",
                        help="check every evaluation row against a corpus: a folder or glob of Parquet / JSONL(.gz) "
                             "shards, or hf://datasets/ORG/NAME[@REV]/PATH, streamed by datatrove")
    corpus.add_argument("--executor", choices=("local", "slurm", "ray"),
                        help="datatrove's executor (default: local)")
    corpus.add_argument("--tasks", type=_positive, help="datatrove tasks (each reads whole shards; default: 1)")
    corpus.add_argument("--workers", type=_positive,
                        help="tasks run at once (default: 1; on Slurm: all of them)")
    corpus.add_argument("--ngram", type=_positive,
                        help="the word n-gram of the GPT-3 / lm-evaluation-harness convention (default: 13)")
    corpus.add_argument("--ngram-min", type=_positive,
                        help="inputs shorter than --ngram words are one n-gram of their own length from this many "
                             "words up; shorter inputs are matched as exact or near-duplicates only (default: 8)")
    corpus.add_argument("--ngram-policy", choices=("contaminated", "report"),
                        help="a row whose only evidence is a shared n-gram: contaminated (the GPT-3 / "
                             "lm-evaluation-harness convention; default) or clean with its evidence reported")
    corpus.add_argument("--ngram-max-matches", type=_positive, metavar="N",
                        help="an n-gram found in more than N documents is no evidence (NeMo Curator's "
                             "max_matches; default: every n-gram counts)")
    corpus.add_argument("--corpus-matches", metavar="FILE.parquet",
                        help="write the corpus documents whose evidence counts: shard, row, document, the evaluation "
                             "row (config, split, source_id), evidence, jaccard, ngram_fraction (to filter the corpus)")
    corpus.add_argument("--also", action="append", metavar="RELEASE",
                        help="check this release (or dataset) too, in the same pass over the corpus; repeat it for "
                             "more. Each is read whole with its own input fields (--configs, --fields and --revision "
                             "are TARGET's); one report per release, and --rows and --corpus-matches name each row's "
                             "release")
    corpus.add_argument("--text-field", help="the corpus's text field (default: text)")
    corpus.add_argument("--id-field", help="the corpus's document id field (default: id, else the row in its shard)")
    corpus.add_argument("--work", metavar="DIR",
                        help="the run's work folder: index, datatrove's logs and completions, match records; the "
                             "same command resumes there (default: ./resplit-corpus-HASH)")
    corpus.add_argument("--slurm-partition", help="--executor slurm: the partition")
    corpus.add_argument("--slurm-time", help="--executor slurm: each task's time limit (HH:MM:SS; default 24:00:00)")
    corpus.add_argument("--slurm-account", help="--executor slurm: the account the job is charged to (sbatch --account)")
    corpus.add_argument("--slurm-qos", help="--executor slurm: the quality of service (sbatch --qos; default: the "
                                            "cluster's)")
    corpus.add_argument("--ray-address", metavar="ADDR",
                        help="--executor ray: the cluster to attach to (HOST:PORT, ray://HOST:PORT or auto; default: "
                             "RAY_ADDRESS, else the cluster `ray start` runs on this machine, else a local Ray is "
                             "started for the run)")
    parser.add_argument("--rows", metavar="FILE.parquet",
                        help="write one row per evaluation row (config, split, source_id, tier, match_dataset, "
                             "match_split, match_id, jaccard; against a corpus also evidence: exact, "
                             "near_duplicate or ngram, and ngram_fraction)")
    parser.add_argument("--write-clean", metavar="OUT",
                        help="write a release of the target (a release) whose evaluation splits drop the "
                             "contaminated rows, with its own provenance and harness tasks")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --write-clean OUT (a release resplit wrote, or an empty folder) and --rows FILE "
                             "if they exist; files resplit did not write are never replaced")


def _positive(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is below 1")
    return value


def run_against(view, args, settings) -> int:
    """``resplit audit TARGET --against OTHER ...``: the tier of every evaluation row of TARGET, printed as a
    table per config and split or one JSON object (``against.<config>.<split>``); ``--rows`` and
    ``--write-clean`` written when asked, through the build's output policy
    (:func:`~split_builders.release.places.check_output_place`: checked before any work, never TARGET or OTHER;
    ``--write-clean`` locked, staged and renamed into place, ``--rows`` written beside its place and renamed)."""
    import contextlib

    from split_builders.distributed import sigterm_as_interrupt
    from split_builders.evidence.contamination import contamination, format_against, target_input
    from split_builders.publishing.readers import written_files
    from split_builders.release.places import OutputLock, check_output_place, write_file

    corpus_source = getattr(args, "against_corpus", None)
    others = [corpus_source] if corpus_source else args.against
    also = list(getattr(args, "also", None) or [])
    for k, name in enumerate(also):
        if name in (args.target, *also[:k]):
            raise InvalidParameterError(f"--also {name} is given twice (or is TARGET); give each release once")
    if also and args.write_clean is not None:
        raise InvalidParameterError("--write-clean writes one release; with --also give --rows (each row's release "
                                    "named) or run --write-clean on each release alone")
    inputs = [path for path in (args.target, *also, *others) if _local_path(path)]
    rows_path = clean_out = matches_path = None
    if getattr(args, "corpus_matches", None) is not None:
        matches_path = check_output_place(args.corpus_matches, "--corpus-matches", kind="file",
                                          overwrite=args.overwrite, inputs=inputs)
        if matches_path.suffix.lower() != ".parquet":
            raise InvalidParameterError(f"--corpus-matches {args.corpus_matches}: give a file name ending in .parquet")
    if args.rows is not None:
        rows_path = check_output_place(args.rows, "--rows", kind="file", overwrite=args.overwrite, inputs=inputs)
        if rows_path.suffix.lower() != ".parquet":
            raise InvalidParameterError(f"--rows {args.rows}: give a file name ending in .parquet")

    def check_clean():
        return check_output_place(args.write_clean, "--write-clean", kind="folder", overwrite=args.overwrite,
                                  harness_files=written_files, inputs=inputs)

    if args.write_clean is not None:
        clean_out = check_clean()
        for path, flag in ((rows_path, "--rows"), (matches_path, "--corpus-matches")):
            if path is not None and clean_out.absolute().resolve() in path.absolute().resolve().parents:
                raise InvalidParameterError(f"{flag} {path} is inside --write-clean {args.write_clean}, which is "
                                            f"replaced as a whole; write {flag} elsewhere")
    # --write-clean holds the build's lock on its place (a second run, or a build, into it is refused at once) and
    # recovers what an interrupted run left there; SIGTERM is an interrupt (its staging folder removed, one line)
    locked = OutputLock(clean_out, harness_files=written_files, flag="--write-clean") if clean_out else None
    work_lock = None
    if corpus_source:  # the executor's needs first (nothing written before), then --work locked for this run
        from split_builders.evidence.corpus import default_work
        from split_builders.evidence.corpus_ops import check_executor

        check_executor(args.executor or "local", slurm=_slurm_settings(args))
        corpus_work = Path(args.work or default_work(args.target, corpus_source, also)).expanduser()
        if corpus_work.is_symlink():
            raise InvalidParameterError(f"--work {corpus_work} is a symbolic link; give the folder itself")
        work_lock = OutputLock(corpus_work, flag="--work", holder="corpus run")
    with sigterm_as_interrupt(), locked or contextlib.nullcontext(), work_lock or contextlib.nullcontext():
        for note in work_lock.notes if work_lock else ():
            print(note, file=sys.stderr)
        if locked is not None:
            for note in locked.notes:  # on stderr: --json keeps stdout one JSON object
                print(note, file=sys.stderr)
            clean_out = check_clean()  # again under the lock: a run that finished meanwhile made the folder
        with tempfile.TemporaryDirectory(prefix=f"resplit-{view.subcommand}-against-") as work:
            data = target_input(args.target, work=work, revision=args.revision,
                                configs=settings.get("configs") or getattr(args, "configs", None))
            fields = data.resolve(settings["fields"]) if settings.get("fields") else data.fields
            if clean_out is not None and not data.record:
                raise InvalidParameterError(f"--write-clean needs a resplit release as TARGET; {args.target} is a "
                                            "plain dataset (use --rows to keep the clean rows' ids)")
            if corpus_source:
                from split_builders.evidence.corpus import run_releases
                from split_builders.evidence.corpus_ops import slurm_line
                from split_builders.evidence.corpus_releases import named

                releases = [(args.target, data, fields)]
                for k, name in enumerate(also):  # each whole, with its own input fields, in a folder of its own
                    (Path(work) / f"also-{k}").mkdir()
                    other = target_input(name, work=Path(work) / f"also-{k}")
                    releases.append((name, other, other.fields))
                results, outcome = run_releases(
                    releases, corpus_source, work=corpus_work,
                    threshold=settings["threshold"], executor=args.executor or "local", tasks=args.tasks or 1,
                    workers=args.workers, ngram=args.ngram or 13, text_field=args.text_field or "text",
                    id_field=args.id_field, label_field=args.against_label_field, slurm=_slurm_settings(args),
                    progress=not args.no_progress, ray_address=args.ray_address, ngram_min=args.ngram_min or 8,
                    ngram_policy=args.ngram_policy or "contaminated", ngram_max_matches=args.ngram_max_matches)
                if results is None:  # Slurm: submitted, or still in the queue
                    if args.json:
                        print(json.dumps({"target": args.target, "slurm": outcome}, ensure_ascii=False))
                    else:
                        print(slurm_line(outcome, hint=f"--work {corpus_work}"))
                    return 0
                (_, report, rows, _), names = results[0], [r[0] for r in results]
                if matches_path is not None:
                    import pyarrow.parquet as pq

                    from split_builders.evidence.corpus_verdicts import corpus_matches

                    found = [corpus_matches(r[3], ngram_policy=args.ngram_policy or "contaminated",
                                            ngram_max_matches=args.ngram_max_matches) for r in results]
                    found = found[0] if not also else named(found, names).sort_by(
                        [(c, "ascending") for c in ("shard", "row", "release", "config", "split", "source_id")])
                    write_file(matches_path, lambda staging: pq.write_table(found, staging),
                               overwrite=args.overwrite, flag="--corpus-matches")
                if also:  # one report per release; --rows: every release's rows, each named
                    rows = named([r[2] for r in results], names)
            else:
                report, rows = contamination(data.parts, fields, args.against, work=work,
                                             threshold=settings["threshold"], against_fields=args.against_fields,
                                             against_splits=args.against_splits, where=data.where,
                                             progress=not args.no_progress,
                                             against_label_field=args.against_label_field)
            if rows_path is not None:
                import pyarrow.parquet as pq

                write_file(rows_path, lambda staging: pq.write_table(rows, staging), overwrite=args.overwrite,
                           flag="--rows")
            if clean_out is not None:
                from split_builders.publishing.clean import write_clean

                write_clean(data, report, rows, clean_out, target=args.target, overwrite=args.overwrite,
                            progress=not args.no_progress)
    reports = [{"target": name, **({"revision": args.revision} if args.revision and not k else {}), **one}
               for k, (name, one, _, _) in enumerate(results)] if corpus_source else \
        [{"target": args.target, **({"revision": args.revision} if args.revision else {}), **report}]
    if args.json:  # several releases: {"releases": [one report per release]}
        print(json.dumps(reports[0] if len(reports) == 1 else {"releases": reports}, ensure_ascii=False))
    else:
        for report in reports:
            if len(reports) > 1:
                print(f"release {report['target']}:")
            for line in format_against(report):
                print(line)
            if corpus_source:
                from split_builders.evidence.corpus import format_corpus

                for line in format_corpus(report):
                    print(line)
        if rows_path is not None:
            print(f"wrote {rows.num_rows} rows to {rows_path}")
        if clean_out is not None:
            print(f"wrote the clean release to {clean_out}")
    return 0


def _slurm_settings(args) -> dict:
    return {"partition": args.slurm_partition, "time": args.slurm_time or "24:00:00", "account": args.slurm_account,
            "qos": args.slurm_qos}


def _local_path(name: str) -> bool:
    """Whether ``name`` (a target or a dataset to check against) is a file or folder here, not a Hub id."""
    try:
        return Path(name).expanduser().exists()
    except (OSError, ValueError):  # a name too long to be a path, say
        return False
