"""The one exception family of the converters."""

from __future__ import annotations


class FormatError(ValueError):
    """A file (or object) that cannot be converted; the message names the file and line or token.

    ``hf_bbpe``'s own ``ModelFileError`` (a bad ``.model`` file) is turned into this class by
    :func:`conversion.from_minbpe`, so ``except conversion.FormatError`` catches every case.
    """
