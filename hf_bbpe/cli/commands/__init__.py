"""The subcommands of ``hf-bbpe``, one module each; each exposes ``register(subparsers)``.

``COMMANDS`` lists the modules in the order ``hf-bbpe --help`` shows them.
"""

COMMANDS = (
    "train",
    "encode",
    "decode",
    "convert",
    "inspect_tokenizer",
    "view",
    "compare",
    "audit",
    "extend",
    "extend_model",
    "push",
)
