"""The one exception family of the converters."""

from __future__ import annotations


class FormatError(ValueError):
    """A file (or object) that cannot be converted; the message names the file and line or token.

    ``hf_bbpe``'s own ``ModelFileError`` (a bad ``.model`` file) is turned into this class by
    :func:`conversion.from_minbpe`, so ``except conversion.FormatError`` catches every case.
    ``option`` names the keyword argument that would accept the input anyway (``"strict"``,
    ``"check_hash"``) when the message suggests one, so that the command line can name its flag.
    """

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option
