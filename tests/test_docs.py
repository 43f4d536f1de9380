"""The documentation: README.md and the site in docs/.

* The site builds with ``mkdocs build --strict`` (every link and anchor resolves, every ``:::`` API block finds its
  object, the command-line reference is generated from ``resplit``'s own parser).
* Every ```python and ```bash block of README.md and docs/*.md either runs here, as written, or says on the line
  just before it why it cannot: ``<!-- not run: REASON -->`` (the Hub, a GPU, files of the reader's own, minutes of
  scoring). A runnable bash block holds only ``resplit`` commands; each runs in this process through
  ``split_builders.cli.main`` and must exit 0. A page's python blocks run in order in one namespace.
* Blocks run in a scratch folder laid out as a checkout (``releases/`` and ``../shared`` beside it), where
  ``out/snli-sample-likelihood`` and ``demo_out/snli-sample-likelihood`` are a stand-in for the release ``make demo``
  builds: the same command on the bundled sample, scored by a tiny random language model instead of SmolLM2 (the
  same configs, files and card sections, in seconds rather than minutes).
"""

from __future__ import annotations

import gzip
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([\w+-]*)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: (.+?) -->$")
CHECKED = ("python", "bash")
FAMILIES = ("likelihood", "tmcd", "mcd", "pvi", "curriculum", "behavioural")  # each has its page and subcommand


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the reason, where the block is marked

    def __str__(self):
        return f"{self.page.relative_to(REPO)}:{self.line} ({self.lang})"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page (fences at the start of a line), each with its ``not run`` reason."""
    found, lines, i = [], page.read_text(encoding="utf-8").split("\n"), 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        assert end is not None, f"{page.relative_to(REPO)}:{i + 1}: a code block that is never closed"
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = NOT_RUN.match(before)
        found.append(Block(page, i + 1, opening.group(1), "\n".join(lines[i + 1:end]), marker and marker.group(1)))
        i = end + 1
    return found


def commands(code: str) -> list[str]:
    """A bash block's commands: continuation lines joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.split("\n") if line.strip() and not line.strip().startswith("#")]


ALL = [block for page in PAGES for block in blocks(page)]


def test_every_code_block_is_run_or_says_why_not():
    import mktestdocs

    assert len(PAGES) > 10 and (REPO / "docs" / "index.md") in PAGES
    for page in PAGES:  # the fences this file finds are the ones mktestdocs finds
        text = page.read_text(encoding="utf-8")
        for lang in CHECKED:
            assert len(mktestdocs.grab_code_blocks(text, lang=lang)) == sum(
                block.lang == lang for block in ALL if block.page == page), (page, lang)
    problems = []
    for block in ALL:
        if not block.lang:
            problems.append(f"{block}: a fence without a language (use text, python, bash, ...)")
        elif block.lang not in CHECKED and block.not_run:
            problems.append(f"{block}: 'not run' marks a {block.lang} block, which is never run anyway")
        elif block.lang == "bash" and not block.not_run:
            foreign = [line for line in commands(block.code) if shlex.split(line, comments=True)[0] != "resplit"]
            if foreign:
                problems.append(f"{block}: runs {foreign[0]!r}; only resplit commands run here: mark the block "
                                "<!-- not run: REASON --> or move the command to a marked block")
    assert not problems, "\n".join(problems)
    runnable = [block for block in ALL if block.lang in CHECKED and not block.not_run]
    assert len(runnable) >= 8, [str(block) for block in runnable]


def tiny_language_model(folder: Path) -> Path:
    """A random 2-layer Llama over a byte-level BPE tokenizer learnt here (nothing to download or convert): scores
    in seconds, for plumbing only."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokens = Tokenizer(models.BPE())
    tokens.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokens.decoder = decoders.ByteLevel()
    with gzip.open(REPO / "loading_scripts" / "samples" / "snli_1.0_dev_sample.jsonl.gz", "rt") as sample:
        texts = sample.read().splitlines()  # merges learnt from the sample: a few tokens per word, not one per byte
    tokens.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=2000, special_tokens=["<|endoftext|>"],
                                                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                              show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tokens, bos_token="<|endoftext|>",
                                        eos_token="<|endoftext|>")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A scratch checkout: ``releases/``, ``../shared``, and the stand-in for ``make demo``'s release at
    ``out/snli-sample-likelihood`` and ``demo_out/snli-sample-likelihood`` (the demo's own build, scored by a tiny
    random language model)."""
    from split_builders.cli import main

    root = tmp_path_factory.mktemp("docs")
    work = root / "work"
    work.mkdir()
    (work / "releases").symlink_to(REPO / "releases")
    if (REPO.parent / "shared").is_dir():
        (root / "shared").symlink_to(REPO.parent / "shared")
    model = tiny_language_model(root / "tiny-lm")
    release = work / "out" / "snli-sample-likelihood"
    with pytest.MonkeyPatch.context() as patch:  # scored afresh: no score of the user's cache is read or written
        patch.setenv("RESPLIT_CACHE", str(root / "cache"))
        assert main(["likelihood", "--source", "snli-sample", "--lm", str(model), "--out", str(release),
                     "--no-progress"]) == 0
    shutil.copytree(release, work / "demo_out" / "snli-sample-likelihood")
    return work


@pytest.mark.slow
@pytest.mark.parametrize("page", [page for page in PAGES
                                  if any(b.lang in CHECKED and not b.not_run for b in ALL if b.page == page)],
                         ids=lambda page: str(page.relative_to(REPO)))
def test_the_runnable_blocks_run_as_written(page, workspace, monkeypatch, tmp_path, capsys):
    import datasets

    from split_builders.cli import main

    monkeypatch.chdir(workspace)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-datasets-cache"))
    namespace = {"__name__": "__main__"}
    for block in [b for b in ALL if b.page == page and b.lang in CHECKED and not b.not_run]:
        if block.lang == "python":
            exec(compile(block.code, str(block), "exec"), namespace)
            continue
        for line in commands(block.code):
            argv = shlex.split(line, comments=True)
            try:
                status = main(argv[1:])
            except SystemExit as exited:  # --help exits as the shell sees it
                status = exited.code or 0
            printed = capsys.readouterr()
            assert status == 0, f"{block}: {line}\n{printed.out[-2000:]}\n{printed.err[-2000:]}"


def test_the_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                            "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    cli = (site / "cli" / "index.html").read_text(encoding="utf-8")
    for name in (*FAMILIES, "audit", "diagnose", "probe", "report", "verify", "export", "push"):
        assert f'id="resplit-{name}"' in cli, name  # one section per subcommand, from the parser
    assert "--group-field" in cli and "--row-order" in cli
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="split_builders.notebook.split"' in api and 'id="split_builders.builder.build"' in api
    import split_builders.api as extension

    callables = [name for name in extension.__all__ if callable(getattr(extension, name))]
    assert {"MethodInfo", "TailSplitter", "in_row_order", "release_rows", "View", "check_method"} <= set(callables)
    unlisted = [name for name in callables if f'id="split_builders.api.{name}"' not in api]
    assert not unlisted, f"names of split_builders.api the API page does not list: {unlisted}"
    roles = re.findall(r":(?:func|class|meth|mod|data|attr|exc|obj):", api)  # Sphinx roles rendered as raw text
    assert not roles, f"{len(roles)} raw Sphinx roles on the API page"
    guide = (site / "plugins" / "index.html").read_text(encoding="utf-8")
    assert "SplitRows" in guide and "RichestSplitter" in guide and "{%" not in guide  # the fixture package's files
    method = (site / "adding-a-method" / "index.html").read_text(encoding="utf-8")
    assert "BUILTIN" in method  # ARCHITECTURE.md's section, included as it stands
