"""The ``tokenizers`` pipeline that the training parity tests hand to its trainers (BpeTrainer,
ParityBpeTrainer): an empty BPE model behind the ByteLevel pre-tokenizer people use for a pattern."""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, models, pre_tokenizers

from hf_bbpe.engine.chunking.onig_regex import translate_pattern_for_onig


def byte_level_bpe(pattern: str | None) -> Tokenizer:
    """An untrained BPE ``Tokenizer``: ByteLevel's own GPT-2 regex for ``pattern=None``, else a
    ``Split(pattern, "isolated")`` (in Oniguruma's syntax) before a ByteLevel without regex."""
    if pattern is None:
        pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(translate_pattern_for_onig(pattern)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    return tok
