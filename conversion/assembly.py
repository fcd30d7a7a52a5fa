"""Turn the parts every importer ends with (merges, byte ids, pattern, special tokens) into a
tokenizer, checking the special tokens against the normal ids first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hf_bbpe.patterns import resolve_pattern
from hf_bbpe.tokenizer import Tokenizer

from .errors import FormatError


def check_special_tokens(specials: Mapping[str, int], normal: set[int], source: object) -> None:
    """An id that is also a normal token, or two specials sharing an id, raise FormatError."""
    owners: dict[int, str] = {}
    for token, idx in specials.items():
        if not isinstance(token, str) or not token:
            raise FormatError(f"{source}: special token {token!r} must be a non-empty string")
        if not isinstance(idx, int) or idx < 0:
            raise FormatError(f"{source}: special token {token!r} has id {idx!r}; ids are non-negative ints")
        if idx in normal:
            raise FormatError(f"{source}: special token {token!r} has id {idx}, which is already a normal token")
        if idx in owners:
            raise FormatError(f"{source}: special tokens {owners[idx]!r} and {token!r} share the id {idx}")
        owners[idx] = token


def assemble_tokenizer(
    merges: Mapping[tuple[int, int], int],
    byte_ids: Sequence[int],
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int] | None,
    source: object,
    recovered: bool = False,
    unmerged_tokens: Mapping[int, bytes] | None = None,
    mode: str = "merges",
) -> Tokenizer:
    """A RegexTokenizer (BasicTokenizer if ``pattern`` is empty) with these merges and ids.

    Special tokens are checked here: an id that is also a normal token, or two specials sharing
    an id, raise FormatError naming the token. The merges are checked by ``Tokenizer.from_merges``,
    unless ``recovered`` says they come from merge_recovery.py, which only makes valid ones.
    """
    try:
        pattern = resolve_pattern(pattern) if pattern else None
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    specials = dict(special_tokens or {})
    if specials:
        normal = set(byte_ids)
        normal.update(merges.values())
        normal.update(unmerged_tokens or ())
        check_special_tokens(specials, normal, source)
    try:
        return Tokenizer.from_merges(merges, pattern=pattern, special_tokens=specials, byte_ids=byte_ids,
                                     check=not recovered, unmerged_tokens=unmerged_tokens, mode=mode)
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
