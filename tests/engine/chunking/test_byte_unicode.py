"""The one byte<->unicode table agrees with the tokenizers library's ByteLevel alphabet."""

import pytest
from tokenizers import pre_tokenizers

from hf_bbpe.engine.chunking.byte_unicode import bytes_to_unicode, token_to_unicode, unicode_to_bytes, unicode_to_token

pytestmark = pytest.mark.transformers_compat


def test_table_matches_tokenizers_bytelevel():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    # tokenizers' ByteLevel pre-tokenizer spells bytes with the same table
    spelled = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(" é\n\t")[0][0]
    assert spelled == token_to_unicode(" é\n\t".encode())


def test_known_entries_and_round_trip():
    table = bytes_to_unicode()
    assert table[ord("!")] == "!" and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[0] == "Ā"
    data = bytes(range(256))
    assert unicode_to_token(token_to_unicode(data)) == data
    assert unicode_to_bytes()["Ġ"] == 32


def test_unknown_symbol_is_named():
    with pytest.raises(KeyError, match="U\\+263A"):
        unicode_to_token("ab☺")
