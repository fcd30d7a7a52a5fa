"""Long pieces encoded by parts (``encode_by_parts`` in csrc/encode/) give BPE's ids.

In "merges" mode the C kernel encodes a piece longer than 16 bytes from its words (cut by the
SuperBPE stage-1 scanner), each through its caches, checks each seam's two tokens for
compatibility from the merges alone, and re-encodes a window of tokens around a seam where they
are not. The references: the Python ChunkEncoder (BPE on the whole piece) and the kernel with
the parts turned off; on random merge tables (superwords across spaces, runs of one character,
whose ties go leftmost) and on a SuperBPE tokenizer cut from the paper's.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_bbpe.engine.encoding.encoder import ChunkEncoder
from hf_bbpe.engine.chunking.patterns import SUPERBPE_STAGE1_SPLIT_PATTERN, native_scanner
from hf_bbpe.engine.files.vocab_merges import read_vocab_merges
from tests.support.superbpe import cut_superbpe

PARTS_SCANNER = native_scanner(SUPERBPE_STAGE1_SPLIT_PATTERN)
CHARACTERS = ["a", "b", " ", " ", ".", "0", "\n", "\u00e9", "\u4f60"]
"""Letters of 1, 2 and 3 bytes, spaces (words), punctuation, digits (three to a part), a line break."""


def encoders(merges: dict, byte_ids: list[int]) -> tuple[ChunkEncoder, ChunkEncoder, ChunkEncoder]:
    """(C by parts, C whole, Python) encoders of the same merges."""
    by_parts, whole = ChunkEncoder(merges, byte_ids), ChunkEncoder(merges, byte_ids)
    assert by_parts._kernel.split_long_pieces(PARTS_SCANNER)  # (so that the test exercises it)
    assert not whole._kernel.split_long_pieces(None)
    return by_parts, whole, ChunkEncoder(merges, byte_ids, native=False)


@st.composite
def superword_tables(draw):
    """A merge table over the characters' bytes whose tokens join characters and words at random
    (superwords: "a b", " a.", runs of one character), byte ids permuted or not, and the text each
    token spells."""
    byte_ids = list(range(256))
    if draw(st.booleans()):
        draw(st.randoms(use_true_random=False)).shuffle(byte_ids)
    spelling: dict[int, str] = {}
    for char in CHARACTERS:
        data = char.encode("utf-8")
        ids = [byte_ids[b] for b in data]
        spelling.update({idx: bytes([b]).decode("latin-1") for idx, b in zip(ids, data)})
    merges: dict[tuple[int, int], int] = {}
    whole = {byte_ids[c.encode()[0]]: c for c in CHARACTERS if len(c.encode()) == 1}
    for _ in range(draw(st.integers(0, 80))):
        pair = (draw(st.sampled_from(sorted(spelling))), draw(st.sampled_from(sorted(spelling))))
        if pair not in merges:
            merges[pair] = 256 + len(merges)
            spelling[merges[pair]] = spelling[pair[0]] + spelling[pair[1]]
            if pair[0] in whole and pair[1] in whole:
                whole[merges[pair]] = whole[pair[0]] + whole[pair[1]]
    return merges, byte_ids, sorted(set(whole.values()))


@settings(max_examples=400, deadline=None)
@given(table=superword_tables(), data=st.data())
def test_by_parts_equals_bpe_on_random_merges(table, data):
    merges, byte_ids, pieces = table
    text = "".join(data.draw(st.lists(st.sampled_from(pieces + CHARACTERS), min_size=5, max_size=150)))
    by_parts, whole, python = encoders(merges, byte_ids)
    expected = python.encode_bytes(text.encode("utf-8"))
    assert whole.encode_chunks([text]) == expected
    assert by_parts.encode_chunks([text]) == expected
    assert by_parts.encode_chunks([text, text[::-1], text]) == expected + python.encode_bytes(
        text[::-1].encode("utf-8")) + expected  # (again: through the caches the first call filled)


@settings(max_examples=150, deadline=None)
@given(char=st.sampled_from(["a", "0", " ", "\u00e9"]), counts=st.lists(st.integers(1, 40), min_size=1, max_size=12),
       gap=st.sampled_from([" ", "", ".", " a"]), table=superword_tables())
def test_runs_of_one_character(char, counts, gap, table):
    """Runs of one character: the same merge at overlapping places, taken leftmost first (at a seam,
    "0" then "00" is not what BPE makes of "000")."""
    merges, byte_ids, _ = table
    text = gap.join(char * count for count in counts)
    by_parts, _, python = encoders(merges, byte_ids)
    assert by_parts.encode_chunks([text]) == python.encode_bytes(text.encode("utf-8"))


@functools.cache
def _superbpe(tmp_path_factory_dir) -> tuple[dict, list[int]]:
    folder = cut_superbpe(1000, tmp_path_factory_dir / "t1000")
    parsed = read_vocab_merges(folder / "vocab.json", folder / "merges.txt")
    return parsed.merges, parsed.byte_ids


@pytest.fixture(scope="module")
def superbpe(tmp_path_factory):
    return _superbpe(tmp_path_factory.mktemp("long-pieces"))


WORDS = ["the", "of", "and", "in", "to", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
         "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you",
         "were", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
         "who", "so", "no", "United", "States", "New", "York", "University", "example", "number", "however", ",",
         ".", ":", "'s", "(", ")", "self", "def", "return", "None", "import", "\u00e9t\u00e9", "Stra\u00dfe",
         "\u65e5\u672c\u8a9e", "caf\u00e9s", "don't", "e.g.", "x", "foo_bar"]


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.sampled_from(WORDS), min_size=3, max_size=120),
       separators=st.lists(st.sampled_from([" ", " ", " ", "", "\n", "\t", "  "]), min_size=1, max_size=5))
def test_superbpe_sentences(superbpe, words, separators):
    """Sentences of common words through a SuperBPE tokenizer (superwords: " of the", ", and")."""
    merges, byte_ids = superbpe
    text = "".join(word + separators[k % len(separators)] for k, word in enumerate(words))
    by_parts, whole, python = encoders(merges, byte_ids)
    expected = python.encode_bytes(text.encode("utf-8"))
    assert by_parts.encode_chunks([text]) == expected == whole.encode_chunks([text])


@pytest.mark.parametrize("count", [20, 100, 300, 700])
def test_windows_too_wide_fall_back_to_bpe(count):
    """Tokens that double ("a " "a a " "a a a a " ...: superwords of 2 to 1024 bytes) make the window
    around a seam grow past what encode_by_parts takes (256 bytes): the piece goes to BPE whole."""
    merges = {(ord("a"), ord(" ")): 256}
    for level in range(9):
        merges[(256 + level, 256 + level)] = 257 + level
    text = "a " * count + "a"
    by_parts, whole, python = encoders(merges, list(range(256)))
    expected = python.encode_bytes(text.encode("utf-8"))
    assert max(expected) == 256 + min(9, (2 * count).bit_length() - 2)  # (long tokens made)
    assert by_parts.encode_chunks([text]) == expected == whole.encode_chunks([text])


def test_windows_of_more_tokens_than_they_replace():
    """BPE may make more tokens of two neighbours' bytes than the two: "xa" and " by" are one token
    each, but on "xa by" the merge across them comes first and leaves four; the tokens of the parts
    after them move up to make room."""
    merges = {(ord("a"), ord(" ")): 256, (ord("x"), ord("a")): 257, (ord(" "), ord("b")): 258, (258, ord("y")): 259}
    by_parts, whole, python = encoders(merges, list(range(256)))
    assert python.encode_bytes(b"xa") == [257] and python.encode_bytes(b" by") == [259]
    assert python.encode_bytes(b"xa by") == [ord("x"), 256, ord("b"), ord("y")]
    for text in ["xa by", "xa by xa by xa by xa by", "xa by, xa by. " * 5, "ab xa by xy"]:
        expected = python.encode_bytes(text.encode("utf-8"))
        assert by_parts.encode_chunks([text]) == expected == whole.encode_chunks([text]), text
