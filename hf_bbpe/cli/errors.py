"""The error a subcommand raises for bad input: the CLI prints its message as one line."""


class CommandError(Exception):
    """Bad input to a subcommand (missing file, bad format, bad ids...); the message is for people."""
