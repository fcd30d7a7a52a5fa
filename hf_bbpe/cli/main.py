"""``hf-bbpe``: the command line for every job of the library.

Each subcommand lives in its own module under ``hf_bbpe/cli/commands`` and registers its parser;
this module builds the parser, runs the chosen command and turns bad input into a one-line
error on stderr with a non-zero exit status (set ``HF_BBPE_TRACEBACK=1`` to see tracebacks).

Exit status: 0 success, 1 bad input or a failed job, 2 bad arguments (argparse), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from .commands import COMMANDS
from .errors import CommandError, one_line, with_flag_names

PROG = "hf-bbpe"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``hf-bbpe train: error: ... (see 'hf-bbpe train --help')``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``hf-bbpe`` parser with every subcommand registered."""
    parser = _Parser(
        prog=PROG,
        description="Byte-level BPE tokenizers: train, encode, convert, gguf, inspect, view, compare, audit, "
                    "extend and push. Run 'hf-bbpe COMMAND --help' for each command.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(subparsers)
    return parser


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"{PROG}: warning: {message}\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hf-bbpe`` with ``argv`` (default: the process arguments); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = _one_line_warning
    try:
        status = args.run(args)
        sys.stdout.flush()
        return int(status or 0)
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        hint = getattr(args, "interrupted_hint", None)
        print(f"{PROG}: interrupted{f'; {hint}' if hint else ''}", file=sys.stderr)
        return 130
    except (CommandError, ValueError, KeyError, OSError) as exc:
        if os.environ.get("HF_BBPE_TRACEBACK"):
            raise
        print(f"{PROG} {args.command}: error: {with_flag_names(exc, one_line(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:  # e.g. a network error from the Hub client: still one line, and a way to see more
        if os.environ.get("HF_BBPE_TRACEBACK"):
            raise
        print(f"{PROG} {args.command}: error: {type(exc).__name__}: {one_line(exc)} "
              "(HF_BBPE_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        return 1

