"""Split patterns with capturing groups: a chunk is the whole match, as in tiktoken and `tokenizers`.

``regex.findall`` returns a pattern's groups instead of its matches, which would drop text the
match covers (``(\\w+)|\\s|[^\\w\\s]+`` on ``'ab cd, ef'`` would give ``'abcdef'``). Encoding is
checked against tiktoken itself with the same pattern and ranks; training, counting and the
tokenizer.json export against the same pattern without the group.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")

import tiktoken  # noqa: E402

import conversion  # noqa: E402
from hf_bbpe import RegexTokenizer  # noqa: E402
from hf_bbpe.engine.training.counting_reference import count_chunks  # noqa: E402
from hf_bbpe.engine.chunking.patterns import chunk_splitter  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "data" / "text"
DOCS = [d for d in (DATA / "mix-sample.txt").read_text(encoding="utf-8").split("\n\n") if d]

GROUPED = r"(\w+)|\s|[^\w\s]+"
UNGROUPED = r"\w+|\s|[^\w\s]+"
# several groups, one of them optional: findall would give tuples
MANY_GROUPS = r"(\w)(\w*)|(\s)|[^\w\s]+"


@pytest.fixture(scope="module")
def grouped_tok() -> RegexTokenizer:
    tok = RegexTokenizer(GROUPED)
    tok.train(DOCS[:400], 600, num_workers=1)
    return tok


def test_chunks_are_whole_matches():
    text = "ab cd, ef"
    expected = ["ab", " ", "cd", ",", " ", "ef"]
    assert chunk_splitter(GROUPED)(text) == expected
    assert chunk_splitter(MANY_GROUPS)(text) == expected


def test_grouped_pattern_encodes_like_tiktoken(grouped_tok):
    """tiktoken.Encoding with the same pat_str and ranks gives the same ids on every document."""
    ref = tiktoken.Encoding("grouped", pat_str=GROUPED, mergeable_ranks=grouped_tok.mergeable_ranks(),
                            special_tokens={})
    assert grouped_tok.decode(grouped_tok.encode("ab cd, ef")) == "ab cd, ef"
    for doc in DOCS:
        ids = grouped_tok.encode_ordinary(doc)
        assert ids == ref.encode_ordinary(doc), doc[:80]
        assert grouped_tok.decode(ids) == doc


def test_grouped_pattern_trains_like_ungrouped(grouped_tok):
    """Counting and training see whole matches: the merges equal those of the pattern without the
    group, counting in one process and in several."""
    plain = RegexTokenizer(UNGROUPED)
    plain.train(DOCS[:400], 600, num_workers=1)
    assert grouped_tok.merges == plain.merges
    docs = DOCS * 2  # enough batches to go to worker processes
    expected = count_chunks(docs, UNGROUPED, num_workers=1)
    assert count_chunks(docs, GROUPED, num_workers=2) == expected
    assert count_chunks(docs, MANY_GROUPS, num_workers=1) == expected


def test_grouped_pattern_in_tokenizer_json(grouped_tok, tmp_path):
    """The exported tokenizer.json, run by `tokenizers`, gives the engine's ids (Split keeps whole
    matches there too); a pattern in \\p{..} classes, which the Oniguruma translation accepts."""
    from tokenizers import Tokenizer as HFTokenizer

    pattern = r"(\p{L}+)|(\p{N})|\s+|[^\p{L}\p{N}\s]+"
    tok = RegexTokenizer(pattern)
    tok.train(DOCS[:400], 600, num_workers=1)
    conversion.to_tokenizer_json(tok, tmp_path / "tokenizer.json")
    hf = HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for doc in DOCS[:300]:
        assert hf.encode(doc, add_special_tokens=False).ids == tok.encode_ordinary(doc), doc[:80]
    back = conversion.from_tokenizer_json(tmp_path / "tokenizer.json")
    assert back.encode_ordinary(DOCS[0]) == tok.encode_ordinary(DOCS[0])
