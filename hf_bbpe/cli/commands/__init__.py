"""The subcommands of ``hf-bbpe``, one module each; each exposes ``register(subparsers)``.

``COMMANDS`` lists the modules in the order ``hf-bbpe --help`` shows them. Every ``register``
has the same argparse shape (add_parser, arguments, set_defaults); what several commands share
is defined once in ``cli/arguments.py``, and the rest is each command's own.
"""

COMMANDS = (
    "train",
    "count",
    "encode",
    "encode_corpus",
    "decode",
    "convert",
    "gguf",
    "inspect_tokenizer",
    "view",
    "compare",
    "app",
    "audit",
    "extend",
    "extend_model",
    "push",
)
