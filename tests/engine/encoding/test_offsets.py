"""The engine's token offsets are the fast twin's: character spans in the original text, a token
that holds part of a multi-byte character spanning that character, special tokens spanning
their text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.hf import EOT, mix_docs, mix_text, trained_engine
from tokenizers import Tokenizer as HFTokenizer

from hf_bbpe.engine.encoding.offsets import token_char_spans
from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict


@pytest.fixture(scope="module")
def engine():
    tok = trained_engine()
    tok.register_special_tokens({"<|im_start|>": 1031})
    return tok


@pytest.fixture(scope="module")
def fast(engine):
    return HFTokenizer.from_str(json.dumps(tokenizer_json_dict(engine)))


def test_offsets_equal_the_fast_twin_on_multilingual_text(engine, fast):
    docs = mix_docs() + [mix_text()]
    split_characters = 0
    for doc in docs:
        ids, offsets = engine.encode_with_offsets(doc, allowed_special="none")
        encoding = fast.encode(doc)
        assert ids == encoding.ids == engine.encode_ordinary(doc)
        assert offsets == encoding.offsets
        split_characters += sum(1 for (_, end), (start, _) in zip(offsets, offsets[1:]) if start < end)
    assert split_characters > 100  # the text has tokens that share a character


def test_offsets_with_special_tokens(engine, fast):
    docs = mix_docs()[:50]
    text = f"<|im_start|>{docs[0]}{EOT}{docs[1]}<|im_start|>日本{EOT}"
    ids, offsets = engine.encode_with_offsets(text, allowed_special="all")
    encoding = fast.encode(text)
    assert ids == encoding.ids and offsets == encoding.offsets
    assert text[slice(*offsets[0])] == "<|im_start|>" and text[slice(*offsets[-1])] == EOT
    # with specials encoded as text, the offsets follow the text's tokens
    plain_ids, plain_offsets = engine.encode_with_offsets(text, disallowed_special=())
    assert plain_ids == engine.encode_ordinary(text) and plain_offsets[-1][1] == len(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_offsets_equal_the_fast_twin_on_any_text(engine, fast, text):
    ids, offsets = engine.encode_with_offsets(text, allowed_special="all")
    encoding = fast.encode(text)
    assert ids == encoding.ids
    assert offsets == encoding.offsets


def test_lone_surrogates_map_to_the_characters_they_came_from(engine):
    text = "a\ud83d\ude00b\ud800c"  # a pair (one emoji) and a lone surrogate (U+FFFD)
    ids, offsets = engine.encode_with_offsets(text)
    assert engine.decode(ids) == "a\U0001F600b\ufffdc"
    assert offsets[0] == (0, 1) and offsets[-1] == (5, 6)
    assert {start for start, _ in offsets} <= {0, 1, 3, 4, 5}


def test_byte_lengths_must_cover_the_text():
    assert token_char_spans("aé", [1, 1, 1]) == [(0, 1), (1, 2), (1, 2)]
    with pytest.raises(ValueError, match="hold 4 bytes, but the text has 3"):
        token_char_spans("aé", [1, 2, 1])
    with pytest.raises(ValueError, match="hold 2 bytes"):
        token_char_spans("abc", [1, 1])
