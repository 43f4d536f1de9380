"""``resplit export lm-eval FOLDER`` and ``resplit export inspect FOLDER``: the lm-evaluation-harness and
inspect-ai tasks of an existing release (:mod:`split_builders.publishing.export`,
:mod:`split_builders.publishing.inspect_export`)."""

from __future__ import annotations

import sys
from pathlib import Path


def run_lm_eval(args) -> int:
    from loading_scripts.files import looks_like_path
    from split_builders.publishing.export import export_lm_eval
    from split_builders.publishing.harness_card import describe
    from split_builders.release.folder import Released

    # the release's one reader: every data file is the one the card records (sha256), or one line naming it
    released = Released(args.folder)
    released.check_files()
    folder = released.folder
    repo_id = dataset_path = None
    if args.dataset_path:
        value = args.dataset_path
        is_hub_id = value.count("/") == 1 and not Path(value).expanduser().exists() and not looks_like_path(value)
        repo_id, dataset_path = (value, None) if is_hub_id else (None, value)
    exported = export_lm_eval(folder, args.out, repo_id=repo_id, dataset_path=dataset_path, revision=args.revision)
    for line in describe(exported):
        print(line)
    return 0


def run_inspect(args) -> int:
    from split_builders.release.folder import Released
    from split_builders.publishing.inspect_export import describe, export_inspect

    released = Released(args.folder)
    released.check_files()
    exported = export_inspect(released.folder, repo_id=args.dataset_path, revision=args.revision)
    for line in describe(exported):
        print(line)
    return 0


def run_croissant(args) -> int:
    from split_builders.publishing.croissant import export_croissant
    from split_builders.release.folder import Released

    released = Released(args.folder)
    released.check_files()  # the sha256 it lists are the card's: every data file must be the one the card records
    print(f"wrote {export_croissant(released.folder)}")
    return 0


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "export", help="write a release's tasks for other tools (lm-eval: lm-evaluation-harness; inspect: inspect-ai)",
        description="Write a release's tasks for evaluation tools.")
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", required=True)
    lm_eval = tools.add_parser(
        "lm-eval", help="lm-evaluation-harness tasks: one group per release, one task per config",
        description="Write lm-evaluation-harness tasks of the release FOLDER: one task per config (multiple choice "
                    "over the label's class names in class order, scored by acc and acc_norm (and mcc where the "
                    "method declares it); generation, few-shot by default, the first line of the answer compared by "
                    "exact match; CheckList test cases with a label, one document per example keeping its test case), "
                    "one group per release named after its dataset and method (configs a method declares apart, as "
                    "CURRICULUM's inoculation configs, in a group of their own: GROUP_inoculation), and utils.py. "
                    "Every task reads the release at a fixed version: the Hub repository at --revision, or the folder "
                    "itself with each data file pinned by its sha256. Run them with `lm_eval --include_path "
                    "FOLDER/lm_eval --tasks GROUP`. Configs that fit no task are listed with the reason. Only files an earlier "
                    "export wrote are replaced; other files in the way are refused, by name.")
    lm_eval.add_argument("folder", metavar="FOLDER", help="a release folder (a build's --out)")
    lm_eval.add_argument("--dataset-path", metavar="ID_OR_PATH",
                         help="the tasks' dataset_path: a Hub id org/name (read at --revision), or a path written "
                              "as given (default: the Hub id and version a published card records, else the release "
                              "folder, found relative to the tasks' folder so that the tasks run from any working "
                              "directory)")
    lm_eval.add_argument("--revision", metavar="REV",
                         help="the version the tasks read (dataset_kwargs revision): a Hub tag or commit, e.g. v1.0.0 "
                              "(needed with a Hub id; default: the version a published card records; for a local "
                              "folder it must be the version the card records, where it records one)")
    lm_eval.add_argument("--out", metavar="DIR", help="folder for the tasks (default: FOLDER/lm_eval; not '', the "
                                                      "root or your home folder); files there that an earlier export "
                                                      "did not write are kept, never replaced")
    lm_eval.set_defaults(func=run_lm_eval)
    inspect = tools.add_parser(
        "inspect", help="inspect-ai tasks: inspect_tasks.py (one @task per config) and eval.yaml (the Hub's form)",
        description="Write the inspect-ai tasks of the release FOLDER at its root: inspect_tasks.py, one @task per "
                    "config with the lm-evaluation-harness tasks' scoring (multiple choice over the class names, the "
                    "first line of a generation by exact match, CheckList test cases one sample per example), run "
                    "with `inspect eval FOLDER/inspect_tasks.py@CONFIG`; and eval.yaml, the Hub's benchmark form "
                    "(`inspect eval hf/ORG/NAME@REV` once pushed), built-in scorers only. Every sample keeps its "
                    "row's source_id, so `resplit report FOLDER LOG` reads the log back. Only files an earlier "
                    "export wrote are replaced; a file of yours in the way is refused, by name.")
    inspect.add_argument("folder", metavar="FOLDER", help="a release folder (a build's --out)")
    inspect.add_argument("--dataset-path", metavar="ORG/NAME",
                         help="read the release from this Hub repository at --revision (default: the Hub id and "
                              "version a published card records, else the folder itself, each data file pinned by "
                              "its sha256)")
    inspect.add_argument("--revision", metavar="REV",
                         help="the version the tasks read: a Hub tag or commit, e.g. v1.0.0 (needed with "
                              "--dataset-path; for a local folder it must be the version the card records)")
    inspect.set_defaults(func=run_inspect)
    croissant = tools.add_parser(
        "croissant", help="croissant.json: the release in Croissant 1.1 (MLCommons) metadata",
        description="Write croissant.json at the root of the release FOLDER (a build writes it; this writes it again, "
                    "e.g. for a release built before resplit wrote one): one record set per config with its splits "
                    "typed (cr:TrainingSplit, cr:ValidationSplit, cr:TestSplit) and its fields' types, every data "
                    "file with its sha256, prov:wasDerivedFrom / prov:wasGeneratedBy from the card's provenance, and "
                    "the leakage audit's numbers as rai:dataLimitations. A croissant.json there that resplit did not "
                    "write is refused.")
    croissant.add_argument("folder", metavar="FOLDER", help="a release folder (a build's --out)")
    croissant.set_defaults(func=run_croissant)


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["export", *sys.argv[1:]]))
