"""Small things of the ``resplit`` command line: every flag's help states its default once, and
``--no-progress`` keeps transformers' weight-loading bar off the terminal."""

import argparse
import re

import pytest

from split_builders.cli import build_parser, main

DEFAULT = re.compile(r"\bdefault\b", re.IGNORECASE)


def subcommands():
    parser = build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return commands.choices


def flag_helps(text):
    """The help of each flag in a rendered ``--help``: the flag's line and its continuation lines."""
    entries, current = [], None
    for line in text.splitlines():
        if re.match(r"^  -", line):
            current = [line.strip()]
            entries.append(current)
        elif current is not None and re.match(r"^ {3,}\S", line):
            current.append(line.strip())
        else:
            current = None
    return [" ".join(entry) for entry in entries]


def test_no_flag_says_its_default_twice(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    commands = subcommands()
    assert {"likelihood", "tmcd", "pvi", "curriculum", "behavioural", "concurrence"} <= set(commands)
    seen = 0
    for name, parser in commands.items():
        for help_text in flag_helps(parser.format_help()):
            assert len(DEFAULT.findall(help_text)) <= 1, f"resplit {name} --help: {help_text}"
            seen += help_text.startswith("--seed SEED")
    assert seen >= 5  # every method's --seed, whose own help says "(default 42)"


def test_a_default_is_still_stated(capsys):
    with pytest.raises(SystemExit):
        main(["tmcd", "--help"])
    helps = {entry.split()[0]: entry for entry in flag_helps(capsys.readouterr().out)}
    assert "(default 42)" in helps["--seed"]
    assert len(DEFAULT.findall(helps["--seed"])) == 1


def test_no_progress_silences_the_weight_loading_bar(tiny_llama, tmp_path, capfd):
    from split_builders.signals.lm.models import load_model, resolve_model

    # The bar that --no-progress must keep quiet exists: a caller with progress on gets it.
    load_model(resolve_model(str(tiny_llama)), progress=True)
    assert "Loading weights" in capfd.readouterr().err
    code = main(["likelihood", "--source", "snli-sample", "--limit", "48", "--lm", str(tiny_llama),
                 "--batch-size", "16", "--validation-size", "6", "--test-size", "6", "--no-progress",
                 "--out", str(tmp_path / "release"), "--cache-dir", str(tmp_path / "cache")])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "Loading weights" not in err and "it/s]" not in err, err
