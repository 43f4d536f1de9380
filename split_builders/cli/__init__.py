"""The ``resplit`` command line.

One subcommand per registered split method, generated from the method's ``Options`` dataclass
(:mod:`split_builders.api`): the common options (``--source``, ``--out``, ``--overwrite``,
``--seed``, ``--limit``) are the same everywhere, with one default each; a method's own options
become flags with the field's help, choices and default. Besides the methods: ``list``, ``show``,
the metrics (``pass-rate``, ``concurrence``), ``evaluate-suite`` and ``push``.
"""

from __future__ import annotations

import sys

from split_builders._version import __version__

# Whether this process is the ``resplit`` program (``main()`` called without arguments, from the console script or
# ``python -m``), not a caller of ``main([...])``; and whether the current command's work is complete.
_PROGRAM = False
_DONE = False

# Subcommands that are not split methods; each module exposes ``add_parsers(subparsers)``.
TOOL_MODULES = (
    "split_builders.cli.tools",
    "split_builders.cli.release",
    "split_builders.cli.metrics",
    "split_builders.cli.publish",
    "split_builders.cli.evaluate",
    "split_builders.cli.evidence",
    "split_builders.cli.curriculum",
    "split_builders.cli.export",
    "split_builders.cli.report",
)
GROUP_TITLES = {"common": "common options", "source": "source", "signal": "signal", "split": "split",
                "method": "method options", "output": "output",
                "evidence": "evidence in the card (diagnostics against random splits, baseline probe)"}


def _field_parser(spec, hints):
    """How the CLI text of a field becomes its value."""
    import typing

    if spec.metadata.get("parse"):
        return spec.metadata["parse"]
    kind = hints.get(spec.name)
    args = [a for a in typing.get_args(kind) if a is not type(None)] or [kind]
    base = args[0]
    if typing.get_origin(base) in (tuple, list):
        return lambda text: tuple(part.strip() for part in text.split(",") if part.strip())
    return base if base in (int, float, str) else str


def _with_default(help_text: str, default) -> str:
    """``help_text`` with "(default: X)" appended, unless it already says its default (in its own words)."""
    import re

    if re.search(r"\bdefault\b", help_text, flags=re.IGNORECASE):
        return help_text
    return f"{help_text} (default: {default})"


def add_options(parser: argparse.ArgumentParser, method) -> list[str]:
    """Flags for every field of ``method.Options``; returns the field names."""
    import argparse
    import dataclasses
    import typing

    hints = typing.get_type_hints(method.Options)
    groups = {}
    names = []
    for spec in dataclasses.fields(method.Options):
        meta = spec.metadata
        group_name = meta.get("group", "method")
        if group_name not in groups:
            groups[group_name] = parser.add_argument_group(GROUP_TITLES.get(group_name, group_name))
        group = groups[group_name]
        flag = "--" + spec.name.replace("_", "-")
        flags = [flag, *meta.get("flags", ())]
        default = spec.default if spec.default is not dataclasses.MISSING else (
            spec.default_factory() if spec.default_factory is not dataclasses.MISSING else None)
        help_text = meta.get("help", "")
        if spec.name == "source":
            flags += list(method.source_aliases)
            default = method.default_source
            help_text = _with_default(help_text, default) if default else help_text + " (required)"
        kwargs = dict(dest=spec.name, default=argparse.SUPPRESS)
        if hints.get(spec.name) is bool or isinstance(default, bool):
            if default:  # a default-on switch is turned off with --no-NAME
                flags = ["--no-" + spec.name.replace("_", "-")]
                kwargs.update(action="store_false")
            else:
                kwargs.update(action="store_true")
        else:
            kwargs.update(type=_field_parser(spec, hints))
            if meta.get("choices") is not None:
                kwargs.update(choices=meta["choices"])
            if meta.get("metavar"):
                kwargs.update(metavar=meta["metavar"])
            if spec.name == "out":
                kwargs.update(required=True)
            elif default not in (None, ()) and spec.name != "source":
                help_text = _with_default(help_text, ", ".join(map(str, default)) if isinstance(default, tuple) else default)
        if spec.name == "group_field" and not method.supports_groups:
            # not offered (its configs do not keep groups whole): kept out of --help, and a value given anyway
            # reaches the method, whose one-line refusal says why
            help_text = argparse.SUPPRESS
        group.add_argument(*flags, help=help_text, **kwargs)
        names.append(spec.name)
    from split_builders.cli.evidence import add_view_option

    add_view_option(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--verbose", action="store_true",
                        help="also print the libraries' own reports (training logs, weight-loading reports)")
    return names


def add_method_parser(subparsers, method) -> None:
    parser = subparsers.add_parser(method.name, help=method.summary, description=f"{method.summary} ({method.paper})")
    names = add_options(parser, method)
    parser.set_defaults(func=lambda args: run_method(method, names, args))


def run_method(method, names, args) -> int:
    from split_builders.builder import build

    options = method.options(**{name: getattr(args, name) for name in names if hasattr(args, name)})
    result = build(method, options, progress=not args.no_progress, verbose=args.verbose, views=args.enable_views)
    work_done()  # the release is in place: the lines below only say so
    if result.out is None:  # not the main process: the main one reports
        return 0
    for line in method.report(result):
        print(line)
    print(f"\n{'config':<28}{'train':>8}{'validation':>12}{'test':>8}")
    for name, sizes in result.sizes.items():
        print(f"{name:<28}{sizes.get('train', 0):>8}{sizes.get('validation', 0):>12}{sizes.get('test', 0):>8}")
    first = result.config_names[0]
    print(f"\nwrote {result.out}\nload it with: datasets.load_dataset({str(result.out)!r}, {first!r})")
    return 0


def work_done() -> None:
    """Say that the command's work is complete (what remains is printing and exiting): from here an interrupt
    changes nothing, so the program ignores Ctrl-C and SIGTERM (one arriving while Python shuts down would
    otherwise end it with 130 and no word), and one already on its way ends in exit 0, not "interrupted"."""
    import signal
    import threading

    global _DONE
    _DONE = True
    if _PROGRAM and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def build_parser() -> argparse.ArgumentParser:
    import argparse
    import importlib
    import warnings
    from functools import partial

    from split_builders.registry import registry
    from split_builders.cli.evidence import add_view_parser
    from split_builders.errors import PluginWarning
    from split_builders.evidence import views
    from split_builders.registry import REGISTRY

    parser = argparse.ArgumentParser(
        prog="resplit",
        description="Re-split NLP benchmarks into splits that test generalisation.",
    )
    parser.add_argument("--version", action="version", version=f"resplit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    later = []  # what is not built in: added after every built-in command, which it cannot take
    for name, method in registry().items():
        if REGISTRY.origin("methods", name) == "built-in":
            add_method_parser(subparsers, method)
        else:
            later.append(("split method", name, REGISTRY.origin("methods", name), method.name,
                          partial(add_method_parser, subparsers, method)))
    for module_name in TOOL_MODULES:
        importlib.import_module(module_name).add_parsers(subparsers)
    for name, view in views().items():
        if REGISTRY.origin("views", name) != "built-in":
            later.append(("evidence view", name, REGISTRY.origin("views", name), view.subcommand,
                          partial(add_view_parser, subparsers, view)))
    for what, name, origin, command, add in later:
        try:
            add()
        except argparse.ArgumentError:
            warnings.warn(f"the {what} {name!r} ({origin}) would take the command {command!r}, which resplit has "
                          "already: it is left out", PluginWarning, stacklevel=2)
    return parser


# The exit status of a command whose reader stopped reading (``resplit show ... | head``): 128 + SIGPIPE, as a
# shell reports a program that SIGPIPE ended.
BROKEN_PIPE_STATUS = 141


def main(argv: list[str] | None = None) -> int:
    """The ``resplit`` command (``argv`` None: ``sys.argv``, as the program). A Ctrl-C from the first line on,
    while the libraries are still being imported, is one line and exit 130."""
    global _PROGRAM, _DONE
    _PROGRAM, _DONE = _PROGRAM or argv is None, False
    try:
        return _plugin_warnings_shown(argv)
    except KeyboardInterrupt:  # before the command was known (the imports of its first second)
        return _interrupted(None)


def _interrupted(command: str | None) -> int:
    """Exit status (and the one line) of an interrupt: 130 and "interrupted", or 0 where the work was done."""
    if _DONE:
        return 0
    print(f"resplit{' ' + command if command else ''}: interrupted", file=sys.stderr)
    return 130


def _plugin_warnings_shown(argv: list[str] | None) -> int:
    import warnings

    from split_builders.errors import PluginWarning  # imports datasets: a second, inside main's interrupt handler

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        """A plug-in left out is one line, as the command's own errors are."""
        if issubclass(category, PluginWarning):
            print(f"resplit: warning: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    from split_builders.cli.evidence import views_named
    from split_builders.errors import ResplitError
    from split_builders.registry import REGISTRY

    try:
        # the installed views named by --view are on for the whole command, their own subcommands included (which
        # must exist before the line is parsed); a name none declares is refused once the command is known
        named = views_named(sys.argv[1:] if argv is None else argv)
        with REGISTRY.enabling("views", [name for name in named if name in REGISTRY.disabled("views")]):
            parser = build_parser()
            args = parser.parse_args(argv)
            if not getattr(args, "func", None):
                parser.print_help()
                return 2
            with REGISTRY.enabling("views", getattr(args, "enable_views", ())):
                status = int(args.func(args) or 0)
        work_done()
        sys.stdout.flush()  # a reader that stopped reading is found here, inside the try (not at exit)
        return status
    except BrokenPipeError:
        # ``| head`` read what it wanted and closed the pipe: not an error of ours to report. What is still
        # buffered goes to devnull, so that Python's own flush at exit raises nothing either (Python's
        # documentation, "Note on SIGPIPE").
        _stdout_to_devnull()
        return BROKEN_PIPE_STATUS
    except ResplitError as error:
        # Our own errors already say what is wrong and how to fix it: no traceback.
        command = getattr(locals().get("args"), "command", None)
        print(f"resplit{' ' + command if command else ''}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what was finished is saved (scoring says where)
        return _interrupted(getattr(locals().get("args"), "command", None))
    except OSError as error:
        # A place the system refused to write (no permission, a read-only file system, a full disk) that a writer
        # did not name itself: one line with the path, never a traceback.
        import os
        from pathlib import Path

        from split_builders.errors import disk_full, is_disk_full, is_unwritable

        if not is_unwritable(error) or not isinstance(error.filename, (str, bytes, os.PathLike)):
            raise
        command = getattr(locals().get("args"), "command", None)
        path = Path(os.fsdecode(error.filename))
        line = disk_full(path.parent, repr(str(path))) if is_disk_full(error) else (
            f"{str(path)!r}: {(error.strerror or type(error).__name__).lower()}; check its permissions (and its "
            "folder's) or choose another place")
        print(f"resplit{' ' + command if command else ''}: error: {line}", file=sys.stderr)
        return 2


def _stdout_to_devnull() -> None:
    """Point standard output's file descriptor at devnull (where it has one: a captured stream in a test has
    none), so that nothing more is written to a closed pipe."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
