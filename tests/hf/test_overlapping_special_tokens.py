"""Special tokens that overlap (``"<|a|>"``, ``"<|a|>b"``, ``"<|a|>bc"``): the longest one that
matches at the leftmost position wins, on every path: the engine's ``encode``, ``BBPETokenizer``,
the tokenizer.json fast twin in ``tokenizers`` and the folder loaded by ``AutoTokenizer``.

That is the Rust ``tokenizers`` library's rule, which the fast twin of every saved folder
follows. tiktoken differs (documented in docs/encoding.md): it tries special tokens in the fixed but
arbitrary order of its hash map, so it may take a shorter one. Runs on 5.x and 4.57.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tiktoken
from tests.support.hf import mix_docs, trained_engine
from tokenizers import Tokenizer as HFTokenizer
from transformers import AddedToken, AutoTokenizer

from hf_bbpe.hf.tokenization_bbpe import BBPETokenizer
from hf_bbpe.hf.tokenizer_json_writer import tokenizer_json_dict

pytestmark = pytest.mark.transformers_compat

SPECIALS = {"<|a|>": 1100, "<|a|>b": 1101, "<|a|>bc": 1102, "b<|a|>": 1103}
TEXTS = ["x<|a|>bc<|a|>b", "<|a|>b<|a|>", "b<|a|>bcd", "<|a|><|a|>bb", "<|a|", "a|>b"]


@pytest.fixture(scope="module")
def engine():
    tok = trained_engine(eot_id=None)
    tok.register_special_tokens(SPECIALS)
    return tok


def longest_first(engine, text: str, allowed=SPECIALS) -> list[int]:
    """The reference: scan left to right; at each position take the longest allowed special."""
    ids, plain, i = [], "", 0
    while i < len(text):
        found = max((s for s in allowed if text.startswith(s, i)), key=len, default=None)
        if found is None:
            plain += text[i]
            i += 1
            continue
        ids += engine.encode_ordinary(plain) + [SPECIALS[found]]
        plain, i = "", i + len(found)
    return ids + engine.encode_ordinary(plain)


def test_the_engine_takes_the_longest_special_at_the_leftmost_position(engine):
    for text in TEXTS:
        assert engine.encode(text, allowed_special="all") == longest_first(engine, text), text
    assert engine.encode("x<|a|>bc", allowed_special={"<|a|>"}, disallowed_special=()) == \
        engine.encode_ordinary("x") + [1100] + engine.encode_ordinary("bc")


def test_every_path_agrees(engine, tmp_path):
    hf = BBPETokenizer.from_engine(engine)
    folder = tmp_path / "folder"
    hf.save_pretrained(folder)
    fast_twin = HFTokenizer.from_str(json.dumps(tokenizer_json_dict(engine)))
    auto = AutoTokenizer.from_pretrained(folder)
    loaded = BBPETokenizer.from_pretrained(folder)
    texts = TEXTS + [f"{doc[:40]}<|a|>bc{doc[40:80]}b<|a|>b" for doc in mix_docs()[:30]]
    for text in texts:
        expected = longest_first(engine, text)
        assert engine.encode(text, allowed_special="all") == expected
        assert hf(text)["input_ids"] == loaded(text)["input_ids"] == expected, text
        assert hf.convert_tokens_to_ids(hf.tokenize(text)) == expected
        assert fast_twin.encode(text).ids == auto(text)["input_ids"] == expected, text


def test_special_added_tokens_are_matched_before_normal_ones(engine, tmp_path):
    """As in tokenizers: a special token wins over a longer normal added token that overlaps it."""
    hf = BBPETokenizer.from_engine(trained_engine(eot_id=None), additional_special_tokens=["<|s|>"])
    hf.add_tokens([AddedToken("<|s|>x", special=False)])
    hf.save_pretrained(tmp_path)
    fast = AutoTokenizer.from_pretrained(tmp_path)
    special, normal = hf.convert_tokens_to_ids(["<|s|>", "<|s|>x"])
    assert hf("a<|s|>x")["input_ids"] == fast("a<|s|>x")["input_ids"] == \
        hf.engine.encode_ordinary("a") + [special] + hf.engine.encode_ordinary("x")
    assert hf("<|s|x")["input_ids"] == fast("<|s|x")["input_ids"]
    assert normal not in hf("a<|s|>x")["input_ids"]


def test_tiktoken_agrees_without_overlap_and_may_take_a_shorter_special(engine):
    ranks = engine.mergeable_ranks()
    apart = {"<|a|>": 1100, "<|z|>": 1104}
    enc = tiktoken.Encoding("apart", pat_str=engine.pattern, mergeable_ranks=ranks, special_tokens=apart)
    separate = trained_engine(eot_id=None)
    separate.register_special_tokens(apart)
    for doc in mix_docs()[:30]:
        text = f"{doc[:30]}<|a|>{doc[30:60]}<|z|>"
        assert enc.encode(text, allowed_special="all") == separate.encode(text, allowed_special="all")
    enc = tiktoken.Encoding("overlap", pat_str=engine.pattern, mergeable_ranks=ranks, special_tokens=SPECIALS)
    differs = 0
    for text in TEXTS:
        ours = engine.encode(text, allowed_special="all")
        theirs = enc.encode(text, allowed_special="all")
        assert enc.decode(theirs) == engine.decode(ours) == text  # both are parses of the text
        differs += theirs != ours
    assert differs, "tiktoken took the longest special everywhere: update the note in docs/encoding.md"


def test_the_docs_state_the_rule_and_the_difference():
    readme = (Path(__file__).resolve().parents[2] / "docs" / "encoding.md").read_text(encoding="utf-8")
    bullet = next(part for part in readme.split("\n\n") if part.startswith("Overlapping special tokens"))
    assert "longest one at the leftmost" in bullet and "tiktoken differs" in bullet
