"""The error a subcommand raises for bad input: the CLI prints its message as one line."""


class CommandError(Exception):
    """Bad input to a subcommand (missing file, bad format, bad ids...); the message is for people."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (a KeyError's key unquoted), or its type's name."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and len(exc.args) == 1 else str(exc)
    text = text.strip()
    return text.splitlines()[0] if text else type(exc).__name__
