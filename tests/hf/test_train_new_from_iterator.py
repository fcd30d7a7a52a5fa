"""``BBPETokenizer.train_new_from_iterator``: transformers' way to retrain a tokenizer on new text.

* the new tokenizer keeps the split pattern, the normalizer, the special tokens (renamed by
  ``special_tokens_map``, plus ``new_special_tokens``) and settings such as ``model_max_length``;
* ``vocab_size`` counts the special tokens, as transformers' own ``PreTrainedTokenizerFast`` does
  (checked against it on the same folder and text);
* its merges are the engine's on the same texts, given as texts or as batches;
* the saved folder loads as a fast tokenizer with the same ids.
"""

from __future__ import annotations

import pytest
from transformers import PreTrainedTokenizerFast

from hf_bbpe import BBPETokenizer, RegexTokenizer
from tests.support.hf import EOT, mix_docs, mix_text, trained_engine

pytestmark = pytest.mark.transformers_compat


@pytest.fixture(scope="module")
def tok() -> BBPETokenizer:
    return BBPETokenizer.from_engine(trained_engine(400), eos_token=EOT, pad_token="<|pad|>", model_max_length=77)


def test_merges_are_the_engines_and_vocab_size_counts_specials(tok):
    docs = mix_docs()
    new = tok.train_new_from_iterator(docs, 700)
    engine = RegexTokenizer("gpt4")
    engine.train(docs, 700 - 2, num_workers=1)
    assert new.engine.merges == engine.merges and new.engine.merges != tok.engine.merges
    assert len(new) == len(new.get_vocab()) == 700
    assert new.engine.special_tokens == {EOT: 698, "<|pad|>": 699}
    assert new.pattern == tok.pattern and new.eos_token == EOT and new.pad_token == "<|pad|>"
    assert new.model_max_length == 77
    text = mix_text()[:3000]
    assert new(text)["input_ids"] == engine.encode_ordinary(text)


def test_vocab_size_means_what_it_means_in_transformers(tmp_path):
    tok = BBPETokenizer.from_engine(trained_engine(400, eot_id=400), eos_token=EOT, pad_token="<|pad|>")
    tok.save_pretrained(tmp_path)
    fast = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    assert len(fast.train_new_from_iterator([mix_docs()], 600)) == len(tok.train_new_from_iterator([mix_docs()], 600)) == 600


def test_reserved_tokens_of_unused_ids_do_not_carry_over(tok):
    """The fixture's <|endoftext|> sits at 1030, above 630 unused ids (400..1029) that reserved
    special tokens fill; they hold ids of the old vocabulary, so a retrained one drops them."""
    assert tok.convert_ids_to_tokens([400, 1029]) == ["<|reserved_special_token_0|>", "<|reserved_special_token_629|>"]
    new = tok.train_new_from_iterator(mix_docs(), 600)
    assert len(new) == len(new.get_vocab()) == 600
    assert new.engine.special_tokens == {EOT: 598, "<|pad|>": 599}


def test_batches_and_texts_train_alike(tok):
    docs = mix_docs()
    batches = [docs[i : i + 64] for i in range(0, len(docs), 64)]
    assert tok.train_new_from_iterator(iter(batches), 500).engine.merges == \
        tok.train_new_from_iterator(docs, 500, length=len(docs)).engine.merges


def test_renamed_and_new_special_tokens(tok):
    new = tok.train_new_from_iterator(mix_docs(), 600, new_special_tokens=["<|im_start|>"],
                                      special_tokens_map={EOT: "</s>"})
    assert new.eos_token == "</s>" and new.eos_token_id == 597
    assert new.engine.special_tokens == {"</s>": 597, "<|pad|>": 598, "<|im_start|>": 599}
    assert new("a <|im_start|> b")["input_ids"].count(599) == 1
    assert EOT not in new.get_vocab()


def test_the_normalizer_carries_over(tmp_path):
    engine = RegexTokenizer("gpt4", normalizer="NFKC")
    engine.train(mix_docs(), 300, num_workers=1)
    old = BBPETokenizer.from_engine(engine, eos_token=EOT)
    new = old.train_new_from_iterator(mix_docs(), 500)
    assert new.engine.normalizer == engine.normalizer
    assert new("ﬁne ①")["input_ids"] == new("fine 1")["input_ids"]
    new.save_pretrained(tmp_path)
    fast = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    text = mix_text()[:5000] + " ﬁne ①"
    assert fast(text)["input_ids"] == new(text)["input_ids"]


def test_a_saved_retrained_tokenizer_loads_as_a_fast_one(tok, tmp_path):
    new = tok.train_new_from_iterator(mix_docs(), 800)
    new.save_pretrained(tmp_path)
    fast = PreTrainedTokenizerFast.from_pretrained(tmp_path)
    text = mix_text()
    assert fast(text)["input_ids"] == new(text)["input_ids"] == new.engine.encode_ordinary(text)
    assert BBPETokenizer.from_pretrained(tmp_path).engine.merges == new.engine.merges


def test_bad_arguments(tok):
    with pytest.raises(ValueError, match="256 byte tokens beside 2 special"):
        tok.train_new_from_iterator(mix_docs(), 257)
    with pytest.raises(TypeError, match="limit_alphabet"):
        tok.train_new_from_iterator(mix_docs(), 500, limit_alphabet=100)
    with pytest.raises(TypeError, match="int"):
        tok.train_new_from_iterator([["text", 5]], 500)
