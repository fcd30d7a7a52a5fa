"""Token ids as users pass them to ``decode``: lists, tuples, ranges, numpy arrays, torch tensors
(1-d, or 0-d for one id), ``array.array``, or one int.

Every id must be an integer in the sense of ``operator.index`` (Python and numpy ints, integer
tensors): ``65.9``, ``65.0`` and ``"65"`` raise :class:`TokenIdTypeError` naming the id and its
position, instead of being truncated to a valid id. Arrays and tensors are read
through their ``tolist()``, so neither numpy nor torch is imported here.

This module is also copied into model folders as remote code: it imports only the standard library.
"""

from __future__ import annotations

import operator
from typing import Any


MAX_TOKEN_ID = 2**32 - 1
"""The largest token id: tiktoken's ranks and ``tokenizers``' ids are u32 (numpy output is uint32)."""


class TokenIdTypeError(TypeError, ValueError):
    """A token id that is not an integer (a TypeError; also a ValueError, as ``decode`` raised before)."""


def token_id_list(ids: Any) -> list[int]:
    """``ids`` as a list of Python ints (``ids`` itself when it already is one: do not modify it).

    A single integer (or a 0-d array or tensor) gives a one-element list.
    """
    if type(ids) is list and set(map(type, ids)) <= {int}:
        return ids
    if hasattr(ids, "tolist"):  # numpy arrays and scalars, torch tensors, array.array
        ids = ids.tolist()
    if isinstance(ids, (int, float, complex, str, bytes)) or not hasattr(ids, "__iter__"):
        return [single_token_id(ids)]
    out = []
    for position, value in enumerate(ids):
        out.append(_index(value, position))
    return out


def single_token_id(value: Any) -> int:
    """One token id as a Python int (a 0-d array or tensor is read through ``tolist()``)."""
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) == 0:
        value = value.tolist()
    return _index(value, None)


def _index(value: Any, position: int | None) -> int:
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        where = "" if position is None else f" at position {position}"
        raise TokenIdTypeError(f"token ids must be integers, got {value!r}{where}") from None
