"""Turn the parts every importer ends with (merges, byte ids, pattern, special tokens) into a
tokenizer, with every check the engine makes reported as a FormatError naming the source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hf_bbpe.engine.chunking.normalizers import Normalizer
from hf_bbpe.engine.chunking.pre_tokenizers import PreTokenizer
from hf_bbpe.engine.tokenizer import Tokenizer

from .errors import FormatError


def assemble_tokenizer(
    merges: Mapping[tuple[int, int], int],
    byte_ids: Sequence[int],
    *,
    pattern: str | None,
    special_tokens: Mapping[str, int] | None,
    source: object,
    recovered: bool = False,
    pre_tokenizer: PreTokenizer | None = None,
    normalizer: Normalizer | None = None,
    unmerged_tokens: Mapping[int, bytes] | None = None,
    mode: str = "merges",
) -> Tokenizer:
    """A RegexTokenizer (BasicTokenizer if ``pattern`` is empty) with these merges and ids;
    ``pre_tokenizer`` (a pipeline, instead of ``pattern``) and ``normalizer`` as the engine takes them.

    ``Tokenizer.from_merges`` checks the pattern, the special tokens (an id that is negative,
    not an int, already a normal token, shared by two specials or far beyond the vocabulary;
    see hf_bbpe/engine/encoding/special_tokens.py) and the merges, unless ``recovered`` says they come from
    merge_recovery.py, which only makes valid ones. Any failure is a FormatError naming ``source``.
    """
    try:
        return Tokenizer.from_merges(merges, pattern=pattern or None, special_tokens=special_tokens,
                                     byte_ids=byte_ids, check=not recovered, pre_tokenizer=pre_tokenizer,
                                     normalizer=normalizer, unmerged_tokens=unmerged_tokens, mode=mode)
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
