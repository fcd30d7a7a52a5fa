"""The error a subcommand raises for bad input: the CLI prints its message as one line."""


class CommandError(Exception):
    """Bad input to a subcommand (missing file, bad format, bad ids...); the message is for people."""


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (a KeyError's key unquoted, an OSError's without
    its ``[Errno N]``), or its type's name."""
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror
    else:
        text = str(exc)
    text = text.strip()
    return text.splitlines()[0] if text else type(exc).__name__


IMPORT_FLAGS = {
    "strict": ("strict=False", "--no-strict"),
    "check_hash": ("check_hash=False", "--no-check-hash"),
    "pattern": ("pattern=", "--pattern"),
}
"""The keyword of the conversion API that accepts an input anyway -> the flag that does it here."""


def with_flag_names(exc: BaseException, text: str) -> str:
    """``text`` (an error's message) with the keyword it suggests spelled as this CLI's flag: a
    conversion error carries the keyword in ``exc.option``."""
    keyword, flag = IMPORT_FLAGS.get(getattr(exc, "option", None) or "", (None, None))
    return text.replace(keyword, flag) if keyword else text
