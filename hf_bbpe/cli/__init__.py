"""``hf-bbpe``, the command line: ``main`` parses and dispatches, ``commands/`` holds one module per
subcommand, and the modules beside this one are what several commands share (argument types,
input reading, tokenizer loading, output folders, the error type)."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
