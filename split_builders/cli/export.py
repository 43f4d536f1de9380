"""``resplit export lm-eval FOLDER``: the lm-evaluation-harness tasks of an existing release
(:mod:`split_builders.release.export`)."""

from __future__ import annotations

import sys
from pathlib import Path


def run_lm_eval(args) -> int:
    from loading_scripts.files import looks_like_path
    from split_builders.release.export import describe, export_lm_eval
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


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "export", help="write a release's tasks for other tools (lm-eval: lm-evaluation-harness)",
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


if __name__ == "__main__":  # pragma: no cover
    from split_builders.cli import main

    sys.exit(main(["export", *sys.argv[1:]]))
