"""A stand-in language model for lm-evaluation-harness runs whose per-document outcomes are planted.

``resplit-planted`` (``--model_args p=0.8,name=a``) answers a document right when a hash of ``name`` and the
document's row (``source_id``, and ``example`` for CheckList documents) falls below ``p``, and wrong otherwise:
on a multiple-choice document it gives the gold choice (or, wrong, the next one) the highest log-likelihood; on a
generation document it writes the target (or, wrong, something else). :func:`planted` is the same rule, so a
test knows every row's outcome without reading the harness's output.
"""

from __future__ import annotations

import hashlib


def planted(name: str, p: float, source_id, example=None) -> bool:
    """Whether the model ``name`` with rate ``p`` answers the row right."""
    key = f"{name}:{int(source_id)}:{'' if example is None or int(example) < 0 else int(example)}"
    draw = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") / 2 ** 64
    return draw < p


def _gold_index(doc: dict) -> int | None:
    """The gold choice of a classification document (its class id) or of a CheckList one (its answer)."""
    if "answer" in doc and "expectation" in doc:
        answer = str(doc["answer"])
        return int(answer) if answer.lstrip("-").isdigit() else None
    return int(doc["label"])


def register() -> None:
    import lm_eval.models  # noqa: F401  the harness's own models first: it imports them only into an empty registry
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    class Planted(LM):
        def __init__(self, p=0.8, name="planted", **kwargs):
            super().__init__()
            self.p, self.name = float(p), str(name)

        def _right(self, doc) -> bool:
            return planted(self.name, self.p, doc["source_id"], doc.get("example"))

        def loglikelihood(self, requests, disable_tqdm=False):
            counts = {}
            for r in requests:
                counts[(r.task_name, r.doc_id)] = counts.get((r.task_name, r.doc_id), 0) + 1
            out = []
            for r in requests:
                n = counts[(r.task_name, r.doc_id)]
                gold = _gold_index(r.doc)
                if gold is None:  # a CheckList expectation that rules one prediction out
                    ruled_out = int(r.doc["ruled_out"])
                    chosen = (ruled_out + 1) % n if self._right(r.doc) else ruled_out
                else:
                    chosen = gold if self._right(r.doc) else (gold + 1) % n
                out.append((0.0, True) if r.idx == chosen else (-10.0, False))
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            return [0.0 for _ in requests]

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for r in requests:
                context = r.args[0]
                field = context.rstrip().splitlines()[-1].rstrip(":").strip().lower().replace(" ", "_")
                target = str(r.doc.get(field, r.doc.get("answer", "")))
                out.append(f" {target}\n" if self._right(r.doc) else " a wrong answer\n")
            return out

    try:
        register_model("resplit-planted")(Planted)
    except (AssertionError, ValueError):  # registered by an earlier test in this process
        pass


def run_cli(argv: list) -> None:
    """``lm_eval ARGV`` through the harness's own command line, in this process (so the planted model is
    registered)."""
    import sys

    from lm_eval.__main__ import cli_evaluate

    register()
    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        sys.argv = saved
